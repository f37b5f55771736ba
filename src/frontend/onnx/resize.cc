// Image sampling: Resize and Upsample as image.resize2d (constant scales or sizes become the
// output size; ones fed at run time are read then, through resize_sizes), GridSample as
// image.grid_sample, RoiAlign (constant boxes) as a batch_matmul with constant sampling weights.
#include <kiln/ffi/error.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// floor(extent * scale), checked before the conversion: a NaN, infinite or huge scale (as in a
/// corrupt file) would make the cast undefined behaviour.
int64_t ScaledExtent(const NodeContext& node, int64_t extent, double scale) {
  constexpr double kMaxExtent = 1e12;
  const double scaled = std::floor(static_cast<double>(extent) * scale);
  KILN_CHECK(std::isfinite(scale) && scale > 0 && scaled <= kMaxExtent, ValueError)
      << node.Describe() << ": scale " << scale << " of a dimension of extent " << extent
      << " is not usable: a scale must be positive and finite and give an extent below 1e12";
  return static_cast<int64_t>(scaled);
}

/// The output (H, W) of scaling the 4-D input by `scales` (one per dimension); batch and
/// channels must keep their extents.
std::vector<int64_t> ScaledSize(const NodeContext& node, const std::vector<double>& scales) {
  const std::vector<int64_t> shape = node.InputShape(0);
  KILN_CHECK(shape.size() == 4 && scales.size() == 4, NotImplementedError)
      << node.Describe() << ": only 4-D inputs resized over (H, W) are supported";
  KILN_CHECK(scales[0] == 1.0 && scales[1] == 1.0, NotImplementedError)
      << node.Describe() << ": resizing the batch or channel dimension is not supported";
  return {ScaledExtent(node, shape[2], scales[2]), ScaledExtent(node, shape[3], scales[3])};
}

/// The attributes of image.resize2d(_scaled) for output extents `size`.
Map<String, Any> ResizeAttrs(const NodeContext& node, const std::vector<arith::SizeExpr>& size,
                             const std::string& coordinate_mode, const std::string& rounding) {
  return {{"size", SizesAttr(size)},
          {"method", String(node.Str("mode", "nearest"))},
          {"coordinate_transformation_mode", String(coordinate_mode)},
          {"rounding_method", String(rounding)},
          {"cubic_alpha", node.Float("cubic_coeff_a", -0.75)},
          {"cubic_exclude", node.Int("exclude_outside", 0) != 0}};
}

/// `scales` are the model's (H, W) scales when it gave scales rather than sizes.
ir::Expr Resize(const NodeContext& node, const std::vector<int64_t>& size,
                const std::string& coordinate_mode, const std::string& rounding,
                const std::optional<std::vector<double>>& scales = std::nullopt) {
  Map<String, Any> attrs = ResizeAttrs(node, {arith::IntImm(size[0]), arith::IntImm(size[1])},
                                       coordinate_mode, rounding);
  attrs.Set("scales", scales.has_value() ? Any(Array<double>(*scales)) : Any(nullptr));
  return MakeCall("image.resize2d", {node.Input(0)}, attrs);
}

/// A resize whose scales (input `scales_input`) or sizes (input 3) are fed at run time:
/// resize_sizes computes the output (H, W) then, and scales are read by the kernel too.
ir::Expr RunTimeResize(const NodeContext& node, size_t scales_input,
                       const std::string& coordinate_mode, const std::string& rounding) {
  KILN_CHECK(node.InputRank(0) == 4, NotImplementedError)
      << node.Describe() << ": only 4-D inputs resized over (H, W) are supported";
  const bool by_sizes = node.IsRunTimeValue(3);
  const size_t input = by_sizes ? 3 : scales_input;
  const std::vector<arith::SizeExpr> size = node.NewSizes(2);
  const ir::Expr values = MakeCall("resize_sizes", {node.Input(0), node.Input(input)},
                                   {{"from", String(by_sizes ? "sizes" : "scales")}});
  const ir::Expr data = DefineSizes(node.Input(0), values, size);
  const Map<String, Any> attrs = ResizeAttrs(node, size, coordinate_mode, rounding);
  if (by_sizes) return MakeCall("image.resize2d", {data}, attrs);
  return MakeCall("image.resize2d_scaled", {data, node.Input(input)}, attrs);
}

bool HasElements(const NodeContext& node, size_t index) {
  return node.HasInput(index) && node.ConstantInput(index).NumElements() > 0;
}

// Upsample (and Resize-10, which copied it) maps output pixels to input pixels as
// x_in = x_out / scale and takes the nearest pixel below.
ir::Expr ConvertUpsampleLike(const NodeContext& node) {
  const bool scales_attr = node.proto().op_type() == "Upsample" && node.opset() < 9;
  if (!scales_attr && node.IsRunTimeValue(1)) return RunTimeResize(node, 1, "asymmetric", "floor");
  std::vector<double> scales;
  if (scales_attr) {
    scales = node.Floats("scales").value_or(std::vector<double>{});
  } else {
    scales = node.ConstantFloats(1);
  }
  const std::vector<int64_t> size = ScaledSize(node, scales);
  return Resize(node, size, "asymmetric", "floor", std::vector<double>{scales[2], scales[3]});
}

/// The output (H, W) that Resize's `sizes` input asks for.
std::vector<int64_t> RequestedSize(const NodeContext& node) {
  const std::vector<int64_t> sizes = node.ConstantInts(3);
  KILN_CHECK(sizes.size() == 4, NotImplementedError)
      << node.Describe() << ": sizes must give the 4 extents of the input";
  return {sizes[2], sizes[3]};
}

// Given scales, ONNX divides output coordinates by the scale itself, not by the ratio of the
// floored output size to the input's; the two differ when downsampling by a non-divisor.
ir::Expr ConvertResize(const NodeContext& node) {
  const std::string mode = node.Str("coordinate_transformation_mode", "half_pixel");
  const std::string rounding = node.Str("nearest_mode", "round_prefer_floor");
  if (node.IsRunTimeValue(3) || (node.IsRunTimeValue(2) && !HasElements(node, 3))) {
    return RunTimeResize(node, 2, mode, rounding);
  }
  if (HasElements(node, 3)) return Resize(node, RequestedSize(node), mode, rounding);
  const std::vector<double> scales = node.ConstantFloats(2);
  const std::vector<int64_t> size = ScaledSize(node, scales);
  return Resize(node, size, mode, rounding, std::vector<double>{scales[2], scales[3]});
}

ir::Expr ConvertGridSample(const NodeContext& node) {
  return MakeCall("image.grid_sample", {node.Input(0), node.Input(1)},
                  {{"method", String(node.Str("mode", "bilinear"))},
                   {"padding_mode", String(node.Str("padding_mode", "zeros"))},
                   {"align_corners", node.Int("align_corners", 0) != 0}});
}

/// Adds `weight` times each of the (up to four) bilinear taps of position (y, x) of an (h, w)
/// plane to `row` (h * w weights), as RoiAlign samples: nothing beyond one pixel outside,
/// coordinates clamped to the plane.
void AddBilinearTaps(double y, double x, int64_t h, int64_t w, double weight, double* row) {
  if (y < -1.0 || y > static_cast<double>(h) || x < -1.0 || x > static_cast<double>(w)) return;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto low_high = [](double& v, int64_t extent) {
    auto low = static_cast<int64_t>(std::floor(v));
    if (low >= extent - 1) {
      low = extent - 1;
      v = static_cast<double>(low);
      return std::pair<int64_t, int64_t>{low, low};
    }
    return std::pair<int64_t, int64_t>{low, low + 1};
  };
  const auto [y_low, y_high] = low_high(y, h);
  const auto [x_low, x_high] = low_high(x, w);
  const double ly = y - static_cast<double>(y_low);
  const double lx = x - static_cast<double>(x_low);
  row[y_low * w + x_low] += weight * (1 - ly) * (1 - lx);
  row[y_low * w + x_high] += weight * (1 - ly) * lx;
  row[y_high * w + x_low] += weight * ly * (1 - lx);
  row[y_high * w + x_high] += weight * ly * lx;
}

// RoiAlign (avg) with constant boxes: every output bin averages bilinear samples of its box, a
// fixed linear combination of the input plane, so the op is the box's batch plane times a
// constant (bins x pixels) weight matrix, per box.
ir::Expr ConvertRoiAlign(const NodeContext& node) {
  const std::vector<int64_t> shape = node.InputShape(0);
  KILN_CHECK(shape.size() == 4, ValueError) << node.Describe() << ": X must be 4-D";
  KILN_CHECK(node.Str("mode", "avg") == "avg", NotImplementedError)
      << node.Describe() << ": only mode=avg is supported";
  const std::vector<double> rois = node.ConstantFloats(1);
  const std::vector<int64_t> batch = node.ConstantInts(2);
  const auto boxes = static_cast<int64_t>(batch.size());
  KILN_CHECK(static_cast<int64_t>(rois.size()) == 4 * boxes, ValueError)
      << node.Describe() << ": rois must be (" << boxes << ", 4)";
  const int64_t out_h = node.Int("output_height", 1);
  const int64_t out_w = node.Int("output_width", 1);
  const int64_t h = shape[2];
  const int64_t w = shape[3];
  constexpr double kMaxWeights = 1 << 24;
  KILN_CHECK(out_h > 0 && out_w > 0 &&
                 static_cast<double>(boxes) * static_cast<double>(out_h * out_w) *
                         static_cast<double>(h * w) <=
                     kMaxWeights,
             NotImplementedError)
      << node.Describe() << ": too many boxes, bins or pixels for a constant weight matrix";
  // Opset 16's half_pixel shifts boxes by half a pixel; output_half_pixel (opset 10's only
  // behaviour) does not, and makes every box at least one pixel wide.
  const bool half_pixel = node.opset() >= 16 &&
                          node.Str("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const double scale = node.Float("spatial_scale", 1.0);
  const int64_t ratio = node.Int("sampling_ratio", 0);
  std::vector<double> weights(static_cast<size_t>(boxes * out_h * out_w * h * w), 0.0);
  for (int64_t r = 0; r < boxes; ++r) {
    KILN_CHECK(batch[r] >= 0 && batch[r] < shape[0], ValueError)
        << node.Describe() << ": batch index " << batch[r] << " is out of range";
    const double offset = half_pixel ? 0.5 : 0.0;
    const double x1 = rois[4 * r] * scale - offset;
    const double y1 = rois[4 * r + 1] * scale - offset;
    double box_w = rois[4 * r + 2] * scale - offset - x1;
    double box_h = rois[4 * r + 3] * scale - offset - y1;
    if (!half_pixel) {
      box_w = std::max(box_w, 1.0);
      box_h = std::max(box_h, 1.0);
    }
    const double bin_h = box_h / static_cast<double>(out_h);
    const double bin_w = box_w / static_cast<double>(out_w);
    const int64_t grid_h = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(bin_h));
    const int64_t grid_w = ratio > 0 ? ratio : static_cast<int64_t>(std::ceil(bin_w));
    const double sample = 1.0 / static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t ph = 0; ph < out_h; ++ph) {
      for (int64_t pw = 0; pw < out_w; ++pw) {
        double* row = weights.data() + ((r * out_h + ph) * out_w + pw) * h * w;
        for (int64_t iy = 0; iy < grid_h; ++iy) {
          const double y = y1 + (static_cast<double>(ph) +
                                 (static_cast<double>(iy) + 0.5) / static_cast<double>(grid_h)) *
                                    bin_h;
          for (int64_t ix = 0; ix < grid_w; ++ix) {
            const double x = x1 + (static_cast<double>(pw) +
                                   (static_cast<double>(ix) + 0.5) / static_cast<double>(grid_w)) *
                                      bin_w;
            AddBilinearTaps(y, x, h, w, sample, row);
          }
        }
      }
    }
  }
  const DLDataType dtype = node.InputDType(0);
  ir::Expr planes = MakeCall("take", {node.Input(0), ir::Constant(Int64Tensor(batch))});
  planes = MakeCall("reshape", {planes}, {{"newshape", Array<int64_t>{boxes, shape[1], h * w}}});
  ir::Expr matrix = ir::Constant(TensorFromDoubles(weights, {boxes, out_h * out_w, h * w}, dtype));
  ir::Expr bins = MakeCall("nn.batch_matmul", {planes, matrix}, {{"transpose_b", true}});
  return MakeCall("reshape", {bins}, {{"newshape", Array<int64_t>{boxes, shape[1], out_h, out_w}}});
}

}  // namespace

void AddResizeConverters(std::vector<ConverterEntry>& table) {
  table.push_back({"Upsample", kMinOpset, 9, ConvertUpsampleLike});
  table.push_back({"Resize", 10, 10, ConvertUpsampleLike});
  table.push_back({"Resize", 11, kMaxOpset, ConvertResize});
  AddConverter(table, "GridSample", 16, kMaxOpset, ConvertGridSample);
  AddConverter(table, "RoiAlign", 10, kMaxOpset, ConvertRoiAlign);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
