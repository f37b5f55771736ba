// Sliding windows (convolution and pooling): the strides/padding/dilation attributes and the
// output extent they give.
#ifndef KILN_SRC_OP_WINDOW_H_
#define KILN_SRC_OP_WINDOW_H_

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

/// Output extents of `window` slid over `input` spatial extents; TypeError when the window
/// does not fit. With ceil_mode a partial last window counts, as in ONNX and PyTorch, only when
/// it starts inside the input or its left padding (never in the right padding alone).
std::vector<int64_t> WindowOutputShape(const TypeRelationContext& ctx, const Window& window,
                                       const std::vector<int64_t>& input);

}  // namespace op
}  // namespace kiln

#endif  // KILN_SRC_OP_WINDOW_H_
