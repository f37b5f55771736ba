// A convolution's image laid out so that its im2col matrix needs no packing: zero-padded, split
// by stride phase, and read with output rows as wide as the padded rows (docs/design.md §35).
#ifndef KILN_SRC_KERNELS_CPU_PHASE_PLANES_H_
#define KILN_SRC_KERNELS_CPU_PHASE_PLANES_H_

#include <cstdint>
#include <vector>

#include "window.h"

namespace kiln {
namespace kernels {
namespace cpu {

/// A 2-D window's image as the in-place paths read it: zero-padded, and split by stride phase,
/// plane (c, ry, rx) holding the padded image's rows ry, ry + sy, ... and columns rx, rx + sx,
/// ... (one plane per channel at stride 1). With output rows as wide as the planes' rows,
/// column q = oy * width + ox of the im2col matrix's depth row (c, ky, kx) is the element
/// Offset(c, ky, kx) + q: every depth row is one contiguous run. Columns ox >= the output's
/// width are computed from neighbouring pixels and dropped.
class PhasePlanes {
 public:
  /// The planes of `channels` channels for an output of oh x ow.
  PhasePlanes(const Window2D& win, int64_t oh, int64_t ow, int64_t channels);

  int64_t height() const { return height_; }
  int64_t width() const { return width_; }
  /// Floats the planes take, and what the last wide row reads past them.
  int64_t floats() const { return floats_; }

  /// Where depth row (c, ky, kx) starts.
  int64_t Offset(int64_t c, int64_t ky, int64_t kx) const;
  /// The offsets of depth rows (c, ky, kx) of every channel, in the weights' order.
  std::vector<int64_t> RowOffsets() const;

  /// Writes the planes of `image` (`channels` planes of h x w) to `to` (floats() long, zero;
  /// for another image of the same shape the same positions are written, so the zeros stay).
  void Fill(const float* image, int64_t h, int64_t w, float* to) const;

 private:
  Window2D win_;
  int64_t channels_;
  int64_t height_, width_;
  int64_t plane_stride_;  ///< floats from one plane to the next
  int64_t floats_;
};

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_PHASE_PLANES_H_
