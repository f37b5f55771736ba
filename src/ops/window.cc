// Sliding windows shared by convolution and pooling.
#include "window.h"

namespace kiln {
namespace op {

Window ReadWindow(const TypeRelationContext& ctx, std::vector<int64_t> kernel) {
  for (int64_t extent : kernel) {
    KILN_CHECK(extent >= 1 && extent <= kMaxWindowValue, TypeError)
        << ctx.Describe("the window " + ir::ShapeToText(kernel) + " must have extents in [1, " +
                        std::to_string(kMaxWindowValue) + "]");
  }
  Window window;
  const size_t rank = kernel.size();
  window.kernel = std::move(kernel);
  window.strides = ReadBoundedInts(ctx, "strides", rank, 1);
  window.padding = ReadBoundedInts(ctx, "padding", 2 * rank, 0);
  window.dilation = ReadBoundedInts(ctx, "dilation", rank, 1);
  const std::shared_ptr<const ir::OpSchema> schema = ctx.op().schema();
  if (schema != nullptr && schema->FindAttr("ceil_mode") != nullptr) {
    window.ceil_mode = ctx.Attr<bool>("ceil_mode");
  }
  return window;
}

std::vector<int64_t> WindowOutputShape(const TypeRelationContext& ctx, const Window& window,
                                       const std::vector<int64_t>& input) {
  const size_t rank = input.size();
  std::vector<int64_t> output(rank);
  for (size_t i = 0; i < rank; ++i) {
    // With the window bounded by kMaxWindowValue, this keeps every product below 2^62.
    constexpr int64_t kMaxSpatialExtent = int64_t{1} << 40;
    KILN_CHECK(input[i] <= kMaxSpatialExtent, TypeError)
        << ctx.Describe("spatial dimension " + std::to_string(i) + " of extent " +
                        std::to_string(input[i]) + " is too large");
    const int64_t padded = input[i] + window.padding[i] + window.padding[i + rank];
    const int64_t extent = window.dilation[i] * (window.kernel[i] - 1) + 1;
    KILN_CHECK(padded >= extent, TypeError) << ctx.Describe(
        "the window of extent " + std::to_string(extent) + " (kernel " +
        std::to_string(window.kernel[i]) + ", dilation " + std::to_string(window.dilation[i]) +
        ") does not fit spatial dimension " + std::to_string(i) + " of extent " +
        std::to_string(padded) + " after padding");
    const int64_t span = padded - extent;
    const int64_t stride = window.strides[i];
    int64_t steps = window.ceil_mode ? (span + stride - 1) / stride : span / stride;
    if (window.ceil_mode && steps * stride >= input[i] + window.padding[i]) --steps;
    output[i] = steps + 1;
  }
  return output;
}

}  // namespace op
}  // namespace kiln
