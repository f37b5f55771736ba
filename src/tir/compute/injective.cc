// Compute rules (kiln/tir/compute.h) of the injective ops that move elements without changing
// them: reshape, squeeze, unsqueeze (each reads the element of the same row-major position),
// transpose and expand. The output buffer carries the result's shape, so the rules need not
// interpret `newshape` or `axes` beyond what the shapes say.
#include <kiln/tir/compute.h>

#include <vector>

namespace kiln {
namespace tir {
namespace {

std::vector<arith::SizeExpr> ShapeOf(const Node& buffer) {
  std::vector<arith::SizeExpr> shape;
  for (const Any& extent : buffer.field_as<Array<Any>>("shape")) {
    shape.push_back(extent.cast<arith::SizeExpr>());
  }
  return shape;
}

/// The input element at the row-major position of the output element: the output's indices
/// flattened over its shape, unflattened over the input's.
Node SamePosition(const ComputeContext& ctx) {
  const std::vector<arith::SizeExpr> out_shape = ShapeOf(ctx.output());
  arith::SizeExpr position = arith::IntImm(0);
  for (size_t d = 0; d < out_shape.size(); ++d) {
    position = position * out_shape[d] + ctx.indices()[d];
  }
  const Node data = ctx.inputs().at(0);
  const std::vector<arith::SizeExpr> in_shape = ShapeOf(data);
  std::vector<arith::SizeExpr> read(in_shape.size());
  for (size_t d = in_shape.size(); d-- > 0;) {
    read[d] = d == 0 ? position : arith::FloorMod(position, in_shape[d]);
    position = arith::FloorDiv(position, in_shape[d]);
  }
  return Load(data, read);
}

void RegisterInjective() {
  for (const char* op : {"reshape", "squeeze", "unsqueeze"}) {
    RegisterComputeRule(op, SamePosition);
  }
  RegisterComputeRule("expand", [](const ComputeContext& ctx) { return ctx.Input(0); });
  RegisterComputeRule("transpose", [](const ComputeContext& ctx) {
    const Node data = ctx.inputs().at(0);
    const auto rank = static_cast<int64_t>(ShapeOf(data).size());
    std::vector<int64_t> axes;
    const Any given = ctx.Attr("axes");
    if (given.is_none()) {
      for (int64_t d = rank - 1; d >= 0; --d) axes.push_back(d);
    } else {
      for (const Any& axis : given.cast<Array<Any>>()) axes.push_back(axis.cast<int64_t>());
    }
    // Output axis d is input axis axes[d].
    std::vector<arith::SizeExpr> read(static_cast<size_t>(rank));
    for (size_t d = 0; d < axes.size(); ++d) {
      const int64_t axis = axes[d] < 0 ? axes[d] + rank : axes[d];
      read.at(static_cast<size_t>(axis)) = ctx.indices().at(d);
    }
    return Load(data, read);
  });
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterInjective();
  return true;
}();

}  // namespace
}  // namespace tir
}  // namespace kiln
