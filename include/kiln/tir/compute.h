/// Compute rules: how one element of an op's result is computed from its inputs' elements, the
/// tensor-expression layer between the graph IR and the loop IR (docs/design.md §24).
///
/// An op's rule is the global function `tir.compute.<op>`:
///
///   (inputs: Array<Node>, output: Node, indices: Array<SizeExpr>, attrs: Map<String, Any>)
///       -> Node
///
/// `inputs` holds one buffer per tensor argument and `output` a buffer of the result's shape and
/// dtype; `indices` are the output element's indices, one per output axis. The rule returns that
/// element's value: loads of the input buffers, arithmetic, and `reduce` nodes over axes of its
/// own (named `r...`, so they never clash with the indices it is given) for reductions. A rule
/// that cannot compute a case (a dtype it does not support) throws NotImplementedError saying
/// why; the group then runs the hand-written kernels. Like the CPU kernels (`kernel.cpu.<op>`),
/// rules are looked up by name when a group is lowered, so a plugin (KILN_REGISTER_GLOBAL or
/// RegisterComputeRule from its library) or Python (`@kiln.tir.compute_rule("op")`) adds or
/// overrides one without a core rebuild.
///
///   RegisterComputeRule("nn.relu", [](const ComputeContext& ctx) {
///     return Binary("max", ctx.Input(0), FloatImm(0.0, ctx.dtype()));
///   });
#ifndef KILN_TIR_COMPUTE_H_
#define KILN_TIR_COMPUTE_H_

#include <kiln/ffi/function.h>
#include <kiln/ffi/map.h>
#include <kiln/tir/builtin_nodes.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace tir {

/// The prefix of the global functions holding compute rules.
constexpr const char* kComputeRulePrefix = "tir.compute.";

/// What a rule written in C++ sees: the arguments of `tir.compute.<op>`, with helpers.
class ComputeContext {
 public:
  ComputeContext(std::vector<Node> inputs, Node output, std::vector<arith::SizeExpr> indices,
                 Map<String, Any> attrs)
      : inputs_(std::move(inputs)),
        output_(std::move(output)),
        indices_(std::move(indices)),
        attrs_(std::move(attrs)) {}

  const std::vector<Node>& inputs() const { return inputs_; }
  const Node& output() const { return output_; }
  const std::vector<arith::SizeExpr>& indices() const { return indices_; }
  /// The output's dtype.
  DLDataType dtype() const { return output_.field_as<DLDataType>("dtype"); }
  /// Input `i`'s dtype.
  DLDataType input_dtype(size_t i) const { return inputs_.at(i).field_as<DLDataType>("dtype"); }
  /// Input `i` at the output's indices, broadcast as numpy does (BroadcastLoad).
  KILN_API Node Input(size_t i) const;
  /// Attribute `name`; a KeyError naming it when the op's call has none.
  KILN_API Any Attr(const std::string& name) const;
  /// An immediate of the output's dtype (float or integer as the dtype is).
  KILN_API Node Constant(double value) const;

 private:
  std::vector<Node> inputs_;
  Node output_;
  std::vector<arith::SizeExpr> indices_;
  Map<String, Any> attrs_;
};

using ComputeFn = std::function<Node(const ComputeContext&)>;

/// Registers `fn` as the global `tir.compute.<op>` (replacing one registered before).
KILN_API void RegisterComputeRule(const std::string& op, ComputeFn fn);

/// The rule of `op`, or nullopt when none is registered.
KILN_API std::optional<Function> FindComputeRule(const std::string& op);

/// The value of `output[indices]` by `op`'s rule. NotImplementedError when `op` has no rule or
/// its rule declines; TypeError when the rule returns something other than a value of the
/// output's dtype.
KILN_API Node ApplyComputeRule(const std::string& op, const std::vector<Node>& inputs,
                               const Node& output, const std::vector<arith::SizeExpr>& indices,
                               const Map<String, Any>& attrs);

/// `buffer` read at the element numpy broadcasting maps `indices` (of a result of rank at least
/// the buffer's) to: the trailing axes align, and an axis of extent 1 reads index 0.
KILN_API Node BroadcastLoad(const Node& buffer, const std::vector<arith::SizeExpr>& indices);

/// The combiners a `reduce` node takes.
enum class Combiner { kSum, kProd, kMax, kMin };
/// The name of `combiner` in the text format ("sum", ...) and back; ValueError for others.
KILN_API const char* CombinerName(Combiner combiner);
KILN_API Combiner ParseCombiner(const std::string& name);
/// `reduce(combiner, axes, extents, source)`: the combination of `source` over every value of
/// `axes` (size variables), each in [0, extent).
KILN_API Node Reduce(Combiner combiner, const std::vector<std::string>& axes,
                     const std::vector<arith::SizeExpr>& extents, const Node& source);
/// The identity of `combiner` in `dtype` (0, 1, the lowest or highest value).
KILN_API Node ReduceIdentity(Combiner combiner, DLDataType dtype);
/// `accumulated` combined with `value`.
KILN_API Node Combine(Combiner combiner, const Node& accumulated, const Node& value);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_TIR_COMPUTE_H_
