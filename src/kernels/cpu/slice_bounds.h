// ONNX Slice's bounds along one axis, shared by the strided_slice and dynamic_slice kernels (which
// read from the first index with a step) and slice_sizes (which counts the indices read).
#ifndef KILN_SRC_KERNELS_CPU_SLICE_BOUNDS_H_
#define KILN_SRC_KERNELS_CPU_SLICE_BOUNDS_H_

#include <algorithm>
#include <cstdint>

namespace kiln {
namespace kernels {
namespace cpu {

/// First index ONNX Slice reads along an axis of `extent` (negative counts from the end,
/// clamped into range for the step's direction).
inline int64_t SliceStart(int64_t begin, int64_t extent, int64_t step) {
  if (begin < 0) begin = std::max<int64_t>(begin, -extent) + extent;
  return step > 0 ? std::min(begin, extent) : std::min(begin, extent - 1);
}

/// How many indices ONNX Slice reads along an axis of `extent` from `begin` to `end` (exclusive)
/// with `step` (not 0).
inline int64_t SliceCount(int64_t begin, int64_t end, int64_t extent, int64_t step) {
  const int64_t start = SliceStart(begin, extent, step);
  if (end < 0)
    end = std::max<int64_t>(end, -extent - 1) + extent;  // -1 past the start for step < 0
  end = step > 0 ? std::min(end, extent) : std::min(end, extent - 1);
  const int64_t span = step > 0 ? end - start : start - end;
  const int64_t stride = step > 0 ? step : -step;
  return span <= 0 ? 0 : (span + stride - 1) / stride;
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_SLICE_BOUNDS_H_
