// Compute rules (kiln/tir/compute.h) of the injective ops that move elements without changing
// them: reshape, squeeze, unsqueeze (each reads the element of the same row-major position),
// transpose, expand, strided_slice and nn.pad (constant mode). The output buffer carries the
// result's shape, so the rules need not interpret `newshape` or `axes` beyond what the shapes
// say. strided_slice and nn.pad take static extents only; with symbolic ones the group keeps
// the kernels.
#include <kiln/tir/compute.h>

#include <optional>
#include <vector>

// ONNX Slice's first index, shared with the strided_slice kernel (header only).
#include "../../kernels/cpu/slice_bounds.h"

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

std::vector<int64_t> Ints(const Any& value) {
  std::vector<int64_t> ints;
  for (const Any& item : value.cast<Array<Any>>()) ints.push_back(item.cast<int64_t>());
  return ints;
}

/// The static extents of `buffer`; NotImplementedError for a symbolic one.
std::vector<int64_t> StaticShape(const Node& buffer, const char* op) {
  std::vector<int64_t> extents;
  for (const arith::SizeExpr& extent : ShapeOf(buffer)) {
    const std::optional<int64_t> value = extent.as_int();
    KILN_CHECK(value.has_value(), NotImplementedError)
        << op << ": no compute rule for the symbolic extent " << extent.ToString();
    extents.push_back(*value);
  }
  return extents;
}

/// Output element o of axis d reads start_d + o * step_d (ONNX Slice's start, clamped).
Node StridedSlice(const ComputeContext& ctx) {
  const Node data = ctx.inputs().at(0);
  const std::vector<int64_t> shape = StaticShape(data, "strided_slice");
  const auto rank = static_cast<int64_t>(shape.size());
  const std::vector<int64_t> begin = Ints(ctx.Attr("begin"));
  std::vector<int64_t> axes;
  if (ctx.Attr("axes").is_none()) {
    for (size_t i = 0; i < begin.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  } else {
    axes = Ints(ctx.Attr("axes"));
  }
  std::vector<int64_t> steps(begin.size(), 1);
  if (!ctx.Attr("strides").is_none()) steps = Ints(ctx.Attr("strides"));
  std::vector<arith::SizeExpr> read = ctx.indices();
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    const int64_t start = kernels::cpu::SliceStart(begin[k], shape[axis], steps[k]);
    read[axis] = arith::IntImm(start) + ctx.indices()[axis] * arith::IntImm(steps[k]);
  }
  return Load(data, read);
}

/// Output element o of axis d is input element o - before_d where that lies inside the input,
/// else the pad value; the load's index is clamped into the input, so that it is in bounds
/// whichever value the select keeps.
Node ConstantPad(const ComputeContext& ctx) {
  KILN_CHECK(ctx.Attr("mode").cast<String>().str() == "constant", NotImplementedError)
      << "nn.pad: no compute rule for mode '" << ctx.Attr("mode").cast<String>().str() << "'";
  const Node data = ctx.inputs().at(0);
  const std::vector<int64_t> shape = StaticShape(data, "nn.pad");
  const std::vector<int64_t> pads = Ints(ctx.Attr("pads"));
  const DLDataType index_type{kDLInt, 64, 1};
  std::vector<arith::SizeExpr> read;
  Node inside;
  for (size_t d = 0; d < shape.size(); ++d) {
    const arith::SizeExpr source = ctx.indices()[d] - arith::IntImm(pads[d]);
    read.push_back(arith::Max(arith::Min(source, arith::IntImm(shape[d] - 1)), arith::IntImm(0)));
    const Node in_axis =
        Binary("and", Binary("ge", IndexValue(source, index_type), IntImm(0, index_type)),
               Binary("lt", IndexValue(source, index_type), IntImm(shape[d], index_type)));
    inside = inside.defined() ? Binary("and", inside, in_axis) : in_axis;
  }
  Node value = Load(data, read);
  if (!inside.defined()) return value;
  return Select(inside, value, ctx.Constant(ctx.Attr("pad_value").cast<double>()));
}

void RegisterInjective() {
  for (const char* op : {"reshape", "squeeze", "unsqueeze"}) {
    RegisterComputeRule(op, SamePosition);
  }
  RegisterComputeRule("expand", [](const ComputeContext& ctx) { return ctx.Input(0); });
  RegisterComputeRule("strided_slice", StridedSlice);
  RegisterComputeRule("nn.pad", ConstantPad);
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
