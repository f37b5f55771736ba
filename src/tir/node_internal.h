// Private to the tensor-level IR: what its traversals, printer and parser share.
#ifndef KILN_SRC_TIR_NODE_INTERNAL_H_
#define KILN_SRC_TIR_NODE_INTERNAL_H_

#include <kiln/tir/node.h>

#include <vector>

namespace kiln {
namespace tir {
namespace internal {

/// A node of `node`'s kind with `fields` (checked as MakeNode checks them).
Node Rebuild(const Node& node, std::vector<Any> fields);

/// Whether fields of `kind` hold child nodes (one or a list): values, statements and the
/// buffers declared there, not buffer references.
inline bool HoldsChildren(FieldKind kind) {
  return kind == FieldKind::kValue || kind == FieldKind::kValues || kind == FieldKind::kStmt ||
         kind == FieldKind::kStmts || kind == FieldKind::kBuffer || kind == FieldKind::kBuffers;
}

/// Whether fields of `kind` hold a list.
inline bool IsList(FieldKind kind) {
  return kind == FieldKind::kIndices || kind == FieldKind::kValues || kind == FieldKind::kStmts ||
         kind == FieldKind::kBuffers;
}

/// The deepest nesting the printer, parser and traversals accept, so that a malformed or
/// hostile input is an error, not a stack overflow: they recurse, and under ASan a level takes
/// about 5 KiB of stack (1,500 levels were seen to fit in 8 MiB, 2,000 not), so a quarter of
/// that. Longer chains of values are written with `let`.
constexpr int kMaxDepth = 400;

}  // namespace internal
}  // namespace tir
}  // namespace kiln

#endif  // KILN_SRC_TIR_NODE_INTERNAL_H_
