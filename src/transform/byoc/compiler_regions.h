// The regions that annotation.compiler_begin / compiler_end delimit in a function body, found
// and validated once for MergeCompilerRegions and PartitionGraph (design §17), whether the
// annotations came from AnnotateTarget or were written by hand.
#ifndef KILN_SRC_TRANSFORM_BYOC_COMPILER_REGIONS_H_
#define KILN_SRC_TRANSFORM_BYOC_COMPILER_REGIONS_H_

#include <kiln/ir/expr.h>
#include <kiln/ir/function.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace kiln {
namespace transform {
namespace byoc {

constexpr const char* kCompilerBegin = "annotation.compiler_begin";
constexpr const char* kCompilerEnd = "annotation.compiler_end";

/// `expr` as a compiler_begin (or compiler_end) call, or nullptr.
const ir::CallObj* AsCompilerBegin(const ir::Expr& expr);
const ir::CallObj* AsCompilerEnd(const ir::Expr& expr);
/// The compiler attribute of an annotation call.
std::string AnnotationCompiler(const ir::CallObj* annotation);
/// `data` wrapped in compiler_begin (or compiler_end) for `compiler`.
ir::Expr CompilerBegin(const ir::Expr& data, const std::string& compiler);
ir::Expr CompilerEnd(const ir::Expr& data, const std::string& compiler);

/// The values a dataflow node reads: a Call's arguments (not its callee), a Tuple's fields, a
/// TupleGetItem's tuple; nothing for leaves (Var, Constant, GlobalVar, Op, Function).
std::vector<ir::Expr> Operands(const ir::Expr& expr);

/// `node` (a Call, Tuple or TupleGetItem) with its operands replaced by `operands`.
ir::Expr WithOperands(const ir::Expr& node, const Array<ir::Expr>& operands);

/// One line of IR text naming `node` in errors: its binding as the text printer writes it
/// (`%2 = annotation.compiler_end(%1, compiler="a")`), numbered within the node's own graph.
std::string NodeText(const ir::Expr& node);

/// The dataflow nodes of a function body in post-order (nested functions are not entered: a
/// call of a composite function is one node), split into annotations and computing nodes
/// (calls other than annotations, tuples, tuple fields), the latter grouped into units: a
/// region (computing nodes connected without an annotation between them, opened by
/// compiler_begins and closed by compiler_ends of one compiler) or a single host node.
struct CompilerRegions {
  /// Every dataflow node, post-order, and its position.
  std::vector<ir::Expr> nodes;
  std::unordered_map<const Object*, int> index;
  /// The unit of each node; -1 for annotations.
  std::vector<int> unit_of;
  /// Per unit: its compiler, empty for a host node; its nodes in post-order.
  std::vector<std::string> unit_compiler;
  std::vector<std::vector<int>> unit_nodes;
  /// Per unit, the units it reads, looking through annotations; units are numbered in a
  /// topological order, so every input is below its unit.
  std::vector<std::vector<int>> unit_inputs;

  /// The node `expr` stands for once annotations are looked through, or -1 for a leaf.
  int Producer(const ir::Expr& expr) const;
};

/// Finds and validates the regions of `body`. ValueError naming the offending node when the
/// annotations do not delimit regions: a region mixes compilers, reads a value (other than a
/// constant) that no compiler_begin brings in, passes a value out without compiler_end, has no
/// compiler_end or no compiler_begin, an annotation wraps an annotation, or a region depends on
/// its own output through nodes outside it (a cycle once the region is one call).
CompilerRegions FindCompilerRegions(const ir::Expr& body);

/// Whether `func` is a body external codegen or fusion owns (Primitive, Compiler or Composite
/// attribute): the BYOC passes leave it alone.
bool IsOpaqueFunction(const ir::Function& func);

}  // namespace byoc
}  // namespace transform
}  // namespace kiln

#endif  // KILN_SRC_TRANSFORM_BYOC_COMPILER_REGIONS_H_
