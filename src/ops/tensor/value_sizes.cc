// Ops that compute sizes from tensor values, for define_sizes (docs/design.md §22). Each
// returns an int64 vector, one element per size it computes; its kernel is in
// src/kernels/cpu/value_sizes.cc.
#include <kiln/ir/op.h>

#include <algorithm>
#include <string>
#include <utility>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

/// The length of 'shape' (argument `index`), an int64 vector of static length.
int64_t StaticLength(const TypeRelationContext& ctx, int64_t index, const std::string& name) {
  const std::vector<arith::SizeExpr> shape = ctx.Shape(index);
  const bool ok = shape.size() == 1 && shape[0].as_int().has_value() &&
                  DataTypeEqual(ctx.DType(index), DLDataType{kDLInt, 64, 1});
  KILN_CHECK(ok, TypeError) << ctx.Describe("'" + name +
                                            "' must be an int64 vector of static length");
  return *shape[0].as_int();
}

Type SizesResult(int64_t count) {
  return TypeRelationContext::TensorResult(std::vector<int64_t>{count}, DLDataType{kDLInt, 64, 1});
}

/// reshape_sizes(data, shape): ONNX Reshape's target extents, with 0 (the input's extent there,
/// unless allowzero) and -1 (inferred) resolved against 'data''s shape.
Type ReshapeSizesRelation(const TypeRelationContext& ctx) {
  ctx.Tensor(0);
  return SizesResult(StaticLength(ctx, 1, "shape"));
}

KILN_REGISTER_OP("reshape_sizes")
    .add_input("data")
    .add_input("shape")
    .add_attr("allowzero", AttrKind::kBool, false)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(ReshapeSizesRelation);

/// How many axes argument 1 ('axes') names, at most the rank of 'data' (it names each once); a
/// TypeError saying what `verb` cannot do otherwise.
int64_t AxesCount(const TypeRelationContext& ctx, const std::string& verb) {
  const auto rank = static_cast<int64_t>(ctx.Shape(0).size());
  const int64_t axes = StaticLength(ctx, 1, "axes");
  KILN_CHECK(axes <= rank, TypeError)
      << ctx.Describe("cannot " + verb + " " + std::to_string(axes) + " axes of a rank-" +
                      std::to_string(rank) + " tensor");
  return axes;
}

/// squeeze_sizes(data, axes): 'data''s extents without those at 'axes' (each must be 1).
Type SqueezeSizesRelation(const TypeRelationContext& ctx) {
  const int64_t axes = AxesCount(ctx, "squeeze");
  return SizesResult(static_cast<int64_t>(ctx.Shape(0).size()) - axes);
}

KILN_REGISTER_OP("squeeze_sizes")
    .add_input("data")
    .add_input("axes")
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(SqueezeSizesRelation);

/// unsqueeze_sizes(data, axes): 'data''s extents with a 1 inserted at each of 'axes' (of the
/// result).
Type UnsqueezeSizesRelation(const TypeRelationContext& ctx) {
  return SizesResult(static_cast<int64_t>(ctx.Shape(0).size()) + StaticLength(ctx, 1, "axes"));
}

KILN_REGISTER_OP("unsqueeze_sizes")
    .add_input("data")
    .add_input("axes")
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(UnsqueezeSizesRelation);

/// expand_sizes(data, shape): the broadcast of 'data''s shape and the values of 'shape' (ONNX
/// Expand).
Type ExpandSizesRelation(const TypeRelationContext& ctx) {
  const auto rank = static_cast<int64_t>(ctx.Shape(0).size());
  return SizesResult(std::max(rank, StaticLength(ctx, 1, "shape")));
}

KILN_REGISTER_OP("expand_sizes")
    .add_input("data")
    .add_input("shape")
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(ExpandSizesRelation);

/// nonzero_count(data): how many elements of 'data' are not zero (ONNX NonZero's count).
Type NonzeroCountRelation(const TypeRelationContext& ctx) {
  ctx.Tensor(0);
  return SizesResult(1);
}

KILN_REGISTER_OP("nonzero_count")
    .add_input("data")
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(NonzeroCountRelation);

/// slice_sizes(data, starts, ends, axes, steps): the extent of each axis of ONNX Slice's result,
/// the bounds clamped as ONNX says (dynamic_slice reads the same bounds).
Type SliceSizesRelation(const TypeRelationContext& ctx) {
  const int64_t count = StaticLength(ctx, 1, "starts");
  for (const auto& [index, name] :
       {std::pair<int64_t, const char*>{2, "ends"}, {3, "axes"}, {4, "steps"}}) {
    KILN_CHECK(StaticLength(ctx, index, name) == count, TypeError)
        << ctx.Describe(std::string("'") + name + "' must have as many elements as 'starts'");
  }
  return SizesResult(static_cast<int64_t>(ctx.Shape(0).size()));
}

KILN_REGISTER_OP("slice_sizes")
    .add_input("data")
    .add_input("starts")
    .add_input("ends")
    .add_input("axes")
    .add_input("steps")
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(SliceSizesRelation);

/// as_sizes(values): the elements of a numeric scalar or vector of static length as int64
/// sizes (ConstantOfShape's shape, OneHot's depth, TopK's k, Tile's repeats, a window's
/// length), truncated toward zero.
Type AsSizesRelation(const TypeRelationContext& ctx) {
  const std::vector<arith::SizeExpr> shape = ctx.Shape(0);
  KILN_CHECK(shape.size() <= 1 && (shape.empty() || shape[0].as_int().has_value()), TypeError)
      << ctx.Describe("'values' must be a scalar or a vector of static length");
  return SizesResult(shape.empty() ? 1 : *shape[0].as_int());
}

KILN_REGISTER_OP("as_sizes")
    .add_input("values")
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(AsSizesRelation);

/// range_sizes(start, limit, delta): the length of ONNX Range's result, max(ceil((limit -
/// start) / delta), 0), from scalars of one numeric dtype.
Type RangeSizesRelation(const TypeRelationContext& ctx) {
  for (int64_t i = 0; i < 3; ++i) {
    KILN_CHECK(ctx.Shape(i).empty(), TypeError)
        << ctx.Describe(ctx.ArgName(i) + " must be a scalar");
  }
  return SizesResult(1);
}

KILN_REGISTER_OP("range_sizes")
    .add_input("start")
    .add_input("limit")
    .add_input("delta")
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(RangeSizesRelation);

/// pad_sizes(data, pads): the shape of ONNX Pad's result for pads (int64, begins then ends) read
/// at run time.
Type PadSizesRelation(const TypeRelationContext& ctx) {
  const auto rank = static_cast<int64_t>(ctx.Shape(0).size());
  KILN_CHECK(StaticLength(ctx, 1, "pads") == 2 * rank, TypeError)
      << ctx.Describe("'pads' must have 2 x " + std::to_string(rank) + " elements");
  return SizesResult(rank);
}

KILN_REGISTER_OP("pad_sizes")
    .add_input("data")
    .add_input("pads")
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(PadSizesRelation);

/// reduce_sizes(data, axes; keepdims, noop_with_empty_axes): the shape of ONNX ReduceSum's result
/// for axes read at run time (no axes: all of them, or none with noop_with_empty_axes).
Type ReduceSizesRelation(const TypeRelationContext& ctx) {
  const auto rank = static_cast<int64_t>(ctx.Shape(0).size());
  const int64_t axes = AxesCount(ctx, "reduce");
  if (ctx.Attr<bool>("keepdims")) return SizesResult(rank);
  if (axes == 0) return SizesResult(ctx.Attr<bool>("noop_with_empty_axes") ? rank : 0);
  return SizesResult(rank - axes);
}

KILN_REGISTER_OP("reduce_sizes")
    .add_input("data")
    .add_input("axes")
    .add_attr("keepdims", AttrKind::kBool, true)
    .add_attr("noop_with_empty_axes", AttrKind::kBool, false)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(ReduceSizesRelation);

/// resize_sizes(data, values; from): the (H, W) of ONNX Resize's result for a 4-D 'data', from
/// its scales (float32 (4,): floor(extent * scale)) or its sizes (int64 (4,)); batch and
/// channels must keep their extents.
Type ResizeSizesRelation(const TypeRelationContext& ctx) {
  KILN_CHECK(ctx.Shape(0).size() == 4, TypeError) << ctx.Describe("'data' must be 4-D");
  StringChoiceAttr(ctx, "from", {"scales", "sizes"});
  const bool scales = ctx.Attr<String>("from").str() == "scales";
  const DLDataType dtype = scales ? DLDataType{kDLFloat, 32, 1} : kInt64;
  const std::vector<arith::SizeExpr> values = ctx.Shape(1);
  KILN_CHECK(values.size() == 1 && values[0].as_int() == 4 && DataTypeEqual(ctx.DType(1), dtype),
             TypeError)
      << ctx.Describe("'values' must be " + DataTypeToString(dtype) + " of shape (4,)");
  return SizesResult(2);
}

KILN_REGISTER_OP("resize_sizes")
    .add_input("data")
    .add_input("values")
    .add_attr("from", AttrKind::kString)
    .set_pattern(OpPattern::kOpaque)
    .set_type_relation(ResizeSizesRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
