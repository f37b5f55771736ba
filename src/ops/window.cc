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

int64_t ReadGroups(const TypeRelationContext& ctx, const arith::SizeExpr& channels,
                   const std::string& what) {
  const auto groups = ctx.Attr<int64_t>("groups");
  const auto message = [&](const std::string& undecided) {
    return ctx.Describe("groups = " + std::to_string(groups) + " must be positive and divide the " +
                        channels.ToString() + " " + what + undecided);
  };
  KILN_CHECK(groups >= 1, TypeError) << message("");
  const SizeFact divides = ProveDivisible(ctx, channels, arith::IntImm(groups));
  KILN_CHECK(divides.holds(), TypeError) << message(divides.Undecided());
  return groups;
}

namespace {

/// The number of window positions after the first along spatial dimension `i`, of extent
/// `input`, where the first window leaves `span` of the padded extent.
arith::SizeExpr ExtraSteps(const TypeRelationContext& ctx, const Window& window, size_t i,
                           const arith::SizeExpr& input, const arith::SizeExpr& span) {
  const int64_t stride = window.strides[i];
  if (!window.ceil_mode) return arith::FloorDiv(span, stride);
  const arith::SizeExpr steps = arith::FloorDiv(span + (stride - 1), stride);
  // The partial last window is dropped when it would start in the right padding.
  const SizeFact in_padding = ProveGE(ctx, ctx.analyzer().Simplify(steps * stride),
                                      ctx.analyzer().Simplify(input + window.padding[i]));
  KILN_CHECK(!in_padding.undecided(), TypeError) << ctx.Describe(
      "with ceil_mode, whether the last window of spatial dimension " + std::to_string(i) +
      " starts in the right padding cannot be decided" + in_padding.Undecided());
  return in_padding.holds() ? steps - 1 : steps;
}

}  // namespace

std::vector<arith::SizeExpr> WindowOutputShape(const TypeRelationContext& ctx, const Window& window,
                                               const std::vector<arith::SizeExpr>& input) {
  const arith::Analyzer& analyzer = ctx.analyzer();
  const size_t rank = input.size();
  std::vector<arith::SizeExpr> output;
  for (size_t i = 0; i < rank; ++i) {
    // With the window bounded by kMaxWindowValue, this keeps every product of static sizes
    // below 2^62 (symbolic sizes are the analyzer's, whose arithmetic does not overflow).
    constexpr int64_t kMaxSpatialExtent = int64_t{1} << 40;
    KILN_CHECK(analyzer.Bound(input[i]).min <= kMaxSpatialExtent, TypeError)
        << ctx.Describe("spatial dimension " + std::to_string(i) + " of extent " +
                        input[i].ToString() + " is too large");
    const arith::SizeExpr padded =
        analyzer.Simplify(input[i] + window.padding[i] + window.padding[i + rank]);
    const int64_t extent = window.dilation[i] * (window.kernel[i] - 1) + 1;
    const SizeFact fits = ProveGE(ctx, padded, arith::IntImm(extent));
    KILN_CHECK(fits.holds(), TypeError) << ctx.Describe(
        "the window of extent " + std::to_string(extent) + " (kernel " +
        std::to_string(window.kernel[i]) + ", dilation " + std::to_string(window.dilation[i]) +
        ") does not fit spatial dimension " + std::to_string(i) + " of extent " +
        padded.ToString() + " after padding" + fits.Undecided());
    const arith::SizeExpr steps = ExtraSteps(ctx, window, i, input[i], padded - extent);
    output.push_back(analyzer.Simplify(steps + 1));
  }
  return output;
}

}  // namespace op
}  // namespace kiln
