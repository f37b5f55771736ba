// Kernel windows of ONNX's Conv, ConvTranspose and pooling ops: strides, dilations and the
// explicit pads that auto_pad stands for.
#ifndef KILN_SRC_FRONTEND_ONNX_WINDOW_H_
#define KILN_SRC_FRONTEND_ONNX_WINDOW_H_

#include <string>
#include <vector>

#include "converter.h"
#include "node_context.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

/// Per spatial axis ([H, W], or [D, H, W]); pads are all begins then all ends, ONNX's and
/// Kiln's order ([top, left, bottom, right] in 2-D).
struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;
};

/// Integer attribute `name` holding `size` values; `size` copies of `fill` when absent.
std::vector<int64_t> WindowInts(const NodeContext& node, const std::string& name, int64_t fill,
                                size_t size);

/// Checks that input 0 has 2 to `max_rank` spatial axes (4-D to (max_rank + 2)-D; 1-D windows
/// are lifted before, LiftWindow1D) and returns how many.
size_t SpatialRank(const NodeContext& node, size_t max_rank);

/// The static extents of input 0's spatial axes (all but the first two), for what depends on
/// them (SAME padding, ConvTranspose's output size); the batch may stay symbolic.
std::vector<int64_t> SpatialShape(const NodeContext& node);

/// The window of a forward op (Conv, pooling) with `rank` spatial axes and kernel
/// `kernel`, auto_pad SAME_UPPER / SAME_LOWER / VALID resolved into explicit pads (SAME reads
/// the spatial extents, so only it needs them static).
Window ForwardWindow(const NodeContext& node, size_t rank, std::vector<int64_t> kernel);

/// `convert_2d` made to take 1-D windows too: a node whose input 0 is 3-D (N, C, W) is converted
/// as the 2-D node over (N, C, 1, W), its window attributes given a leading extent-1 axis (and
/// the weight, input 1, when `lift_weight`), and the result squeezed back. PyTorch's Conv1d and
/// pooling export this way; Kiln's kernels stay 2-D.
Converter LiftWindow1D(Converter convert_2d, bool lift_weight);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_WINDOW_H_
