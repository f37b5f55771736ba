// Image sampling: Resize and Upsample as image.resize2d (constant scales or sizes become the
// output size), GridSample as image.grid_sample.
#include <kiln/ffi/error.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "converter.h"

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

/// `scales` are the model's (H, W) scales when it gave scales rather than sizes.
ir::Expr Resize(const NodeContext& node, const std::vector<int64_t>& size,
                const std::string& coordinate_mode, const std::string& rounding,
                const std::optional<std::vector<double>>& scales = std::nullopt) {
  return MakeCall("image.resize2d", {node.Input(0)},
                  {{"scales", scales.has_value() ? Any(Array<double>(*scales)) : Any(nullptr)},
                   {"size", ToArray(size)},
                   {"method", String(node.Str("mode", "nearest"))},
                   {"coordinate_transformation_mode", String(coordinate_mode)},
                   {"rounding_method", String(rounding)},
                   {"cubic_alpha", node.Float("cubic_coeff_a", -0.75)},
                   {"cubic_exclude", node.Int("exclude_outside", 0) != 0}});
}

bool HasElements(const NodeContext& node, size_t index) {
  return node.HasInput(index) && node.ConstantInput(index).NumElements() > 0;
}

// Upsample (and Resize-10, which copied it) maps output pixels to input pixels as
// x_in = x_out / scale and takes the nearest pixel below.
ir::Expr ConvertUpsampleLike(const NodeContext& node) {
  const bool scales_attr = node.proto().op_type() == "Upsample" && node.opset() < 9;
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

}  // namespace

void AddResizeConverters(std::vector<ConverterEntry>& table) {
  table.push_back({"Upsample", kMinOpset, 9, ConvertUpsampleLike});
  table.push_back({"Resize", 10, 10, ConvertUpsampleLike});
  table.push_back({"Resize", 11, kMaxOpset, ConvertResize});
  AddConverter(table, "GridSample", 16, kMaxOpset, ConvertGridSample);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
