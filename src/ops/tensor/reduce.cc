// Reductions: sum, mean, max, min, prod over a set of axes (ONNX Reduce*, axes as an attribute,
// None meaning every axis), and argmax/argmin over one axis with int64 indices (ONNX ArgMax/
// ArgMin). keepdims defaults to true as in ONNX.
#include <kiln/ir/op.h>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// `data` with `axes` reduced: kept as 1 with keepdims, removed otherwise.
std::vector<arith::SizeExpr> ReducedShape(const std::vector<arith::SizeExpr>& data,
                                          const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<bool> reduced(data.size(), false);
  for (int64_t axis : axes) reduced[axis] = true;
  std::vector<arith::SizeExpr> out;
  for (size_t i = 0; i < data.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(data[i]);
    } else if (keepdims) {
      out.push_back(arith::IntImm(1));
    }
  }
  return out;
}

Type ReduceRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const auto rank = static_cast<int64_t>(data.size());
  std::vector<int64_t> axes;
  if (ctx.HasAttr("axis")) {
    axes = NormalizeAxes(ctx, ctx.IntsAttr("axis"), rank, "axis");
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  return TypeRelationContext::TensorResult(ReducedShape(data, axes, ctx.Attr<bool>("keepdims")),
                                           ctx.DType(0));
}

Type ArgReduceRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const int64_t axis =
      ctx.NormalizeAxis(ctx.Attr<int64_t>("axis"), static_cast<int64_t>(data.size()), "axis");
  return TypeRelationContext::TensorResult(ReducedShape(data, {axis}, ctx.Attr<bool>("keepdims")),
                                           kInt64);
}

#define KILN_REGISTER_REDUCE_OP(Name)                  \
  KILN_REGISTER_OP(Name)                               \
      .add_input("data")                               \
      .add_attr("axis", AttrKind::kInts, Any(nullptr)) \
      .add_attr("keepdims", AttrKind::kBool, true)     \
      .set_pattern(OpPattern::kCommReduce)             \
      .set_type_relation(ReduceRelation)

KILN_REGISTER_REDUCE_OP("sum");
KILN_REGISTER_REDUCE_OP("mean");
KILN_REGISTER_REDUCE_OP("max");
KILN_REGISTER_REDUCE_OP("min");
KILN_REGISTER_REDUCE_OP("prod");

#undef KILN_REGISTER_REDUCE_OP

#define KILN_REGISTER_ARG_REDUCE_OP(Name)           \
  KILN_REGISTER_OP(Name)                            \
      .add_input("data")                            \
      .add_attr("axis", AttrKind::kInt, int64_t{0}) \
      .add_attr("keepdims", AttrKind::kBool, true)  \
      .set_pattern(OpPattern::kCommReduce)          \
      .set_type_relation(ArgReduceRelation)

KILN_REGISTER_ARG_REDUCE_OP("argmax");
KILN_REGISTER_ARG_REDUCE_OP("argmin");

/// sum_to: the sum of 'data' down to `shape`, of its rank, each extent 'data''s or 1 (the axes
/// summed over): ReduceSum with axes read at run time (reduce_sizes gives `shape`).
Type SumToRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> data = ctx.Shape(0);
  const std::vector<arith::SizeExpr> shape = ctx.SizesAttr("shape");
  KILN_CHECK(shape.size() == data.size(), TypeError)
      << ctx.Describe("attribute 'shape' " + ir::ShapeToText(shape) + " must have the rank of " +
                      "'data' " + ir::ShapeToText(data));
  for (size_t i = 0; i < shape.size(); ++i) {
    const std::optional<int64_t> extent = shape[i].as_int();
    KILN_CHECK(!extent.has_value() || *extent == 1 || data[i].as_int() == extent, TypeError)
        << ctx.Describe("attribute 'shape' " + ir::ShapeToText(shape) + " must keep or sum " +
                        "each extent of 'data' " + ir::ShapeToText(data));
  }
  return TypeRelationContext::TensorResult(shape, ctx.DType(0));
}

KILN_REGISTER_OP("sum_to")
    .add_input("data")
    .add_attr("shape", AttrKind::kSizes)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(SumToRelation);

#undef KILN_REGISTER_ARG_REDUCE_OP

}  // namespace
}  // namespace op
}  // namespace kiln
