// Compute rules (kiln/tir/compute.h) of the reductions of src/ops/tensor/reduce.cc: sum, mean,
// max, min and prod over `axis` (all axes when None), keeping reduced axes as extent 1 when
// `keepdims`.
#include <kiln/tir/compute.h>

#include <set>
#include <string>
#include <vector>

namespace kiln {
namespace tir {
namespace {

/// The reduced axes of `ctx`'s input, normalized and sorted.
std::set<int64_t> ReducedAxes(const ComputeContext& ctx, int64_t rank) {
  std::set<int64_t> axes;
  const Any axis = ctx.Attr("axis");
  if (axis.is_none()) {
    for (int64_t d = 0; d < rank; ++d) axes.insert(d);
    return axes;
  }
  for (const Any& item : axis.cast<Array<Any>>()) {
    const int64_t d = item.cast<int64_t>();
    axes.insert(d < 0 ? d + rank : d);
  }
  return axes;
}

/// The reduction of input 0 over its reduced axes, with `combiner`; `count` is set to the
/// number of elements combined.
Node ReduceInput(const ComputeContext& ctx, Combiner combiner, arith::SizeExpr* count) {
  const Node data = ctx.inputs().at(0);
  const auto shape = data.field_as<Array<Any>>("shape");
  const int64_t rank = shape.size();
  const std::set<int64_t> reduced = ReducedAxes(ctx, rank);
  const bool keepdims = ctx.Attr("keepdims").cast<bool>();
  std::vector<arith::SizeExpr> read;
  std::vector<std::string> axes;
  std::vector<arith::SizeExpr> extents;
  *count = arith::IntImm(1);
  size_t out = 0;
  for (int64_t d = 0; d < rank; ++d) {
    const auto extent = shape[d].cast<arith::SizeExpr>();
    if (reduced.count(d) == 0) {
      read.push_back(ctx.indices().at(out++));
      continue;
    }
    if (keepdims) ++out;
    axes.push_back("r" + std::to_string(d));
    extents.push_back(extent);
    read.push_back(arith::SizeVar(String(axes.back())));
    *count = *count * extent;
  }
  return Reduce(combiner, axes, extents, Load(data, read));
}

void RegisterReductions() {
  for (Combiner combiner : {Combiner::kSum, Combiner::kProd, Combiner::kMax, Combiner::kMin}) {
    RegisterComputeRule(CombinerName(combiner), [combiner](const ComputeContext& ctx) {
      arith::SizeExpr count;
      return ReduceInput(ctx, combiner, &count);
    });
  }
  RegisterComputeRule("mean", [](const ComputeContext& ctx) {
    KILN_CHECK(ctx.dtype().code == kDLFloat, NotImplementedError)
        << "mean: no compute rule for " << DataTypeToString(ctx.dtype());
    arith::SizeExpr count;
    const Node sum = ReduceInput(ctx, Combiner::kSum, &count);
    return Binary("div", sum, Cast(IndexValue(count, DLDataType{kDLInt, 64, 1}), ctx.dtype()));
  });
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterReductions();
  return true;
}();

}  // namespace
}  // namespace tir
}  // namespace kiln
