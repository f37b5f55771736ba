// Private to the loop-level passes: finding and rewriting the loads and stores of one buffer.
// Buffers are matched by name, which is unique in a function (the parser and the lowering
// declare each name once).
#ifndef KILN_SRC_TIR_PASSES_BUFFER_ACCESS_H_
#define KILN_SRC_TIR_PASSES_BUFFER_ACCESS_H_

#include <kiln/tir/node.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln {
namespace tir {

/// The name of the buffer a load or store accesses, or "" for other nodes.
std::string AccessedBuffer(const Node& node);
/// Whether a load under `node` reads buffer `name`.
bool ReadsBuffer(const Node& node, const std::string& name);
/// Whether a load or store under `node` accesses buffer `name`.
bool AccessesBuffer(const Node& node, const std::string& name);

/// `node` with every load and store of buffer `name` made to access `replacement` at
/// `indices(old indices)`.
using IndexMap = std::function<std::vector<arith::SizeExpr>(const Array<Any>&)>;
Node RetargetAccesses(const Node& node, const std::string& name, const Node& replacement,
                      const IndexMap& indices);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_SRC_TIR_PASSES_BUFFER_ACCESS_H_
