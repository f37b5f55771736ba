// MergeCompilerRegions: the IR side of region merging. The annotated regions of a function
// become the nodes of a labeled DAG (region_merge.h), and each pair compiler_end ->
// compiler_begin between two regions the DAG merged is removed from the reader's side, which
// joins the two regions into one connected region.
#include <kiln/transform/byoc.h>

#include <map>
#include <string>
#include <vector>

#include "compiler_regions.h"
#include "region_merge.h"

namespace kiln {
namespace transform {
namespace {

using byoc::CompilerRegions;

byoc::LabeledDag ToLabeledDag(const CompilerRegions& regions) {
  std::map<std::string, int> label_of;
  byoc::LabeledDag dag;
  for (const std::string& compiler : regions.unit_compiler) {
    if (compiler.empty()) {
      dag.labels.push_back(byoc::kHostLabel);
    } else {
      dag.labels.push_back(
          label_of.emplace(compiler, static_cast<int>(label_of.size())).first->second);
    }
  }
  dag.inputs = regions.unit_inputs;
  return dag;
}

/// The body with the end -> begin pairs inside merged regions dropped: a computing node reading
/// begin(end(x)) reads x directly when x's region merged into its own.
ir::Expr RemoveInnerBoundaries(const CompilerRegions& regions, const std::vector<int>& merged) {
  const std::vector<ir::Expr>& nodes = regions.nodes;
  std::vector<ir::Expr> rewritten(nodes.size());
  auto rewritten_of = [&](const ir::Expr& expr) {
    auto it = regions.index.find(expr.get());
    return it == regions.index.end() ? expr : rewritten[it->second];
  };
  for (size_t node = 0; node < nodes.size(); ++node) {
    const int unit = regions.unit_of[node];
    Array<ir::Expr> operands;
    bool changed = false;
    for (const ir::Expr& operand : byoc::Operands(nodes[node])) {
      ir::Expr value = rewritten_of(operand);
      const ir::CallObj* begin = byoc::AsCompilerBegin(operand);
      const ir::CallObj* end = begin ? byoc::AsCompilerEnd(begin->args()[0]) : nullptr;
      if (unit >= 0 && end != nullptr) {
        const int producer = regions.index.at(end->args()[0].get());
        if (merged[regions.unit_of[producer]] == merged[unit]) value = rewritten[producer];
      }
      changed = changed || !value.same_as(operand);
      operands.push_back(value);
    }
    rewritten[node] = changed ? byoc::WithOperands(nodes[node], operands) : nodes[node];
  }
  return rewritten.back();  // the body: the last node in post-order
}

ir::Function MergeFunctionRegions(const ir::Function& func) {
  if (byoc::IsOpaqueFunction(func)) return func;
  const CompilerRegions regions = byoc::FindCompilerRegions(func->body());
  if (regions.nodes.empty()) return func;
  const std::vector<int> merged = byoc::MergeRegions(ToLabeledDag(regions));
  const ir::Expr body = RemoveInnerBoundaries(regions, merged);
  if (body.same_as(func->body())) return func;
  return ir::Function(func->params(), body, func->ret_type(), func->attrs());
}

}  // namespace

Pass MergeCompilerRegions() {
  return CreateFunctionPass([](const ir::Function& func, const ir::IRModule& /*mod*/,
                               const PassContext& /*ctx*/) { return MergeFunctionRegions(func); },
                            PassInfo{"transform.MergeCompilerRegions", 0, false});
}

KILN_REGISTER_PASS(MergeCompilerRegions);

}  // namespace transform
}  // namespace kiln
