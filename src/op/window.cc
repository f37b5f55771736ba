// Sliding windows shared by convolution and pooling.
#include "window.h"

namespace kiln {
namespace op {
namespace {

std::vector<int64_t> ReadPositiveInts(const TypeRelationContext& ctx, const char* name,
                                      size_t length, int64_t minimum) {
  std::vector<int64_t> values = ctx.IntsAttr(name);
  bool ok = values.size() == length;
  for (int64_t value : values) ok = ok && value >= minimum;
  KILN_CHECK(ok, TypeError) << ctx.Describe(
      std::string("attribute '") + name + "' must be " + std::to_string(length) +
      " integers >= " + std::to_string(minimum) + ", got " + ir::ShapeToText(values));
  return values;
}

}  // namespace

Window ReadWindow(const TypeRelationContext& ctx, std::vector<int64_t> kernel) {
  Window window;
  const size_t rank = kernel.size();
  window.kernel = std::move(kernel);
  window.strides = ReadPositiveInts(ctx, "strides", rank, 1);
  window.padding = ReadPositiveInts(ctx, "padding", 2 * rank, 0);
  window.dilation = ReadPositiveInts(ctx, "dilation", rank, 1);
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
    const int64_t padded = input[i] + window.padding[i] + window.padding[i + rank];
    const int64_t extent = window.dilation[i] * (window.kernel[i] - 1) + 1;
    KILN_CHECK(padded >= extent, TypeError) << ctx.Describe(
        "the window of extent " + std::to_string(extent) + " (kernel " +
        std::to_string(window.kernel[i]) + ", dilation " + std::to_string(window.dilation[i]) +
        ") does not fit spatial dimension " + std::to_string(i) + " of extent " +
        std::to_string(padded) + " after padding");
    const int64_t span = padded - extent;
    const int64_t steps = window.ceil_mode ? (span + window.strides[i] - 1) / window.strides[i]
                                           : span / window.strides[i];
    output[i] = steps + 1;
  }
  return output;
}

}  // namespace op
}  // namespace kiln
