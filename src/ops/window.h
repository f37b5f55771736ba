// Sliding windows (convolution and pooling): the strides/padding/dilation attributes and the
// output extent they give.
#ifndef KILN_SRC_OP_WINDOW_H_
#define KILN_SRC_OP_WINDOW_H_

#include <string>
#include <vector>

#include "op_common.h"

namespace kiln {
namespace op {

/// A 2-D window; padding is (top, left, bottom, right) as in ONNX's pads.
struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> padding;
  std::vector<int64_t> dilation;
  bool ceil_mode = false;
};

/// The window of `kernel` with the call's "strides", "padding", "dilation" (and "ceil_mode"
/// when the op has it); TypeError naming the attribute when one has the wrong length or a
/// non-positive value.
Window ReadWindow(const TypeRelationContext& ctx, std::vector<int64_t> kernel);

/// The "groups" attribute of a convolution, required to be positive and to divide `channels`,
/// which are the `what` ("output channels of 'weight'"); TypeError otherwise.
int64_t ReadGroups(const TypeRelationContext& ctx, const arith::SizeExpr& channels,
                   const std::string& what);

/// Output extents of `window` slid over `input` spatial extents (static or symbolic, each
/// floordiv(in + pad_before + pad_after - dilation * (kernel - 1) - 1, stride) + 1, simplified);
/// TypeError when the window does not fit, or cannot be proven to. With ceil_mode a partial last
/// window counts, as in ONNX and PyTorch, only when it starts inside the input or its left
/// padding (never in the right padding alone); a TypeError when that cannot be decided.
std::vector<arith::SizeExpr> WindowOutputShape(const TypeRelationContext& ctx, const Window& window,
                                               const std::vector<arith::SizeExpr>& input);

}  // namespace op
}  // namespace kiln

#endif  // KILN_SRC_OP_WINDOW_H_
