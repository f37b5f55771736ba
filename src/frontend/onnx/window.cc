#include "window.h"

#include <kiln/ffi/error.h>

#include <algorithm>

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

constexpr size_t kSpatialRank = 2;

/// ONNX's SAME padding: the output has ceil(in / stride) elements, and the odd pixel of the
/// total padding goes at the end (SAME_UPPER) or the beginning (SAME_LOWER).
std::vector<int64_t> SamePads(const std::vector<int64_t>& spatial, const Window& window,
                              bool upper) {
  std::vector<int64_t> pads(2 * kSpatialRank);
  for (size_t i = 0; i < kSpatialRank; ++i) {
    const int64_t stride = window.strides[i];
    const int64_t out = (spatial[i] + stride - 1) / stride;
    const int64_t extent = (window.kernel[i] - 1) * window.dilations[i] + 1;
    const int64_t total = std::max<int64_t>((out - 1) * stride + extent - spatial[i], 0);
    pads[i] = upper ? total / 2 : total - total / 2;
    pads[i + kSpatialRank] = total - pads[i];
  }
  return pads;
}

}  // namespace

std::vector<int64_t> WindowInts(const NodeContext& node, const std::string& name, int64_t fill,
                                size_t size) {
  std::vector<int64_t> values = node.Ints(name).value_or(std::vector<int64_t>(size, fill));
  KILN_CHECK(values.size() == size, ValueError)
      << node.Describe() << ": attribute '" << name << "' needs " << size << " values, not "
      << values.size();
  return values;
}

std::vector<int64_t> SpatialShape(const NodeContext& node) {
  std::vector<int64_t> shape = node.InputShape(0);
  KILN_CHECK(shape.size() == kSpatialRank + 2, NotImplementedError)
      << node.Describe() << ": only 2-D windows (4-D inputs) are supported, the input has rank "
      << shape.size();
  return {shape[2], shape[3]};
}

Window ForwardWindow(const NodeContext& node, const std::vector<int64_t>& spatial,
                     std::vector<int64_t> kernel) {
  Window window;
  window.kernel = std::move(kernel);
  KILN_CHECK(window.kernel.size() == kSpatialRank, ValueError)
      << node.Describe() << ": the kernel needs " << kSpatialRank << " extents";
  window.strides = WindowInts(node, "strides", 1, kSpatialRank);
  window.dilations = WindowInts(node, "dilations", 1, kSpatialRank);
  const std::string auto_pad = node.Str("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    window.pads = WindowInts(node, "pads", 0, 2 * kSpatialRank);
  } else if (auto_pad == "VALID") {
    window.pads.assign(2 * kSpatialRank, 0);
  } else {
    KILN_CHECK(auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER", ValueError)
        << node.Describe() << ": unknown auto_pad '" << auto_pad
        << "' (NOTSET, VALID, SAME_UPPER, SAME_LOWER)";
    window.pads = SamePads(spatial, window, auto_pad == "SAME_UPPER");
  }
  return window;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
