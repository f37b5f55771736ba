// nn.conv2d, nn.conv2d_transpose (NCHW) and nn.conv3d (NCDHW), float32. All go through the
// shared GEMM: conv2d and conv3d multiply the weights by each image group's im2col matrix,
// which is never stored. conv2d reads it in place from the padded image (split into stride
// phases when strided), with output rows as wide as the padded ones (design §35); a 1x1 conv2d
// and conv3d gather it panel by panel in the GEMM's packing, a 1x1 on small planes with the
// pixels along the tiles' rows (design §31). conv2d_transpose multiplies the transposed weights
// by the input and scatters (col2im) the products into the output. Depthwise conv2d (one input
// channel per group) has no reduction worth a GEMM and runs directly.

#include <kiln/ffi/registry.h>
#include <kiln/runtime/kernel_program.h>
#include <kiln/runtime/memory.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "gemm.h"
#include "kernel_util.h"
#include "phase_planes.h"
#include "window.h"
#include "winograd.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// col2im: adds the matrix `col` of a col_h x col_w grid into `image` (channels planes of
/// image_h x image_w), row (c, kh, kw) and column (y, x) of `col` to image position
/// (y * stride - pad + kh * dilation, ...), skipping those outside the image. conv2d_transpose
/// scatters its products this way.
void ScatterColumns(const float* col, float* image, int64_t channels, int64_t image_h,
                    int64_t image_w, int64_t col_h, int64_t col_w, const Window2D& window) {
  const int64_t row_stride = col_h * col_w;
  for (int64_t c = 0; c < channels; ++c) {
    float* plane = image + c * image_h * image_w;
    for (int64_t kh = 0; kh < window.kernel[0]; ++kh) {
      for (int64_t kw = 0; kw < window.kernel[1]; ++kw) {
        const float* col_row =
            col + ((c * window.kernel[0] + kh) * window.kernel[1] + kw) * row_stride;
        const int64_t offset_h = window.InputPos(0, 0, kh);
        const int64_t offset_w = window.InputPos(1, 0, kw);
        const Range rows = ValidOutputs(col_h, window.stride[0], offset_h, image_h);
        const Range cols = ValidOutputs(col_w, window.stride[1], offset_w, image_w);
        for (int64_t y = rows.begin; y < rows.end; ++y) {
          const float* col_line = col_row + y * col_w;
          float* line = plane + (y * window.stride[0] + offset_h) * image_w + offset_w;
          for (int64_t x = cols.begin; x < cols.end; ++x) {
            line[x * window.stride[1]] += col_line[x];
          }
        }
      }
    }
  }
}

/// Shapes of a convolution call: data (N, C, H, W), weight (W0, W1, KH, KW), output
/// (N, O, OH, OW).
struct ConvShapes {
  int64_t n, c, h, w, o, oh, ow, groups;
  Window2D window;

  ConvShapes(const KernelCall& call, const Tensor& data, const Tensor& weight, const Tensor& out)
      : n(data.shape(0)),
        c(data.shape(1)),
        h(data.shape(2)),
        w(data.shape(3)),
        o(out.shape(1)),
        oh(out.shape(2)),
        ow(out.shape(3)),
        groups(call.Int("groups")),
        window(ReadWindow(call, weight.shape(2), weight.shape(3))) {}
  ConvShapes(const std::array<int64_t, 8>& extents, const Window2D& window)
      : n(extents[0]),
        c(extents[1]),
        h(extents[2]),
        w(extents[3]),
        o(extents[4]),
        oh(extents[5]),
        ow(extents[6]),
        groups(extents[7]),
        window(window) {}
};

/// Packs a convolution GEMM's im2col operand straight from one group's image (implicit im2col),
/// the matrix itself never written: row (c, k_0, ..., k_last) and column (o_0, ..., o_last) of
/// the im2col matrix over kRank spatial axes (conv2d: 2, conv3d: 3), B's panels in Gemm and
/// A's in GemmTransposedOutput (the same layout). Each depth row is gathered whole into a line
/// in L1, in runs as long as the image's rows, and then split into strips.
template <int kRank>
class ImagePanelPacker {
 public:
  /// `in` and `out`: the spatial extents of the image and of the output.
  ImagePanelPacker(const Window<kRank>& window, const std::array<int64_t, kRank>& in,
                   const std::array<int64_t, kRank>& out, const float* group_data)
      : win_(window), in_(in), out_(out), data_(group_data) {
    for (int a = 0; a < kRank; ++a) {
      taps_ *= window.kernel[a];
      plane_ *= in[a];
    }
    for (int64_t k = 0; k < window.kernel[kLast]; ++k) {
      x_valid_.push_back(
          ValidOutputs(out[kLast], window.stride[kLast], window.InputPos(kLast, 0, k), in[kLast]));
    }
  }

  void operator()(int64_t p0, int64_t kc, int64_t first, int64_t count, int64_t width,
                  float* panel) const {
    const std::vector<Run> runs = RunsOf(first, count);
    // Whole strips, the last one's columns past `count` zero, so every strip row is one copy.
    std::vector<float> line((count + width - 1) / width * width, 0.F);
    for (int64_t p = 0; p < kc; ++p) {
      GatherRow(p0 + p, runs, line.data());
      switch (width) {  // the tile widths of gemm.cc, so that each copy is a few vector moves
        case 6: SplitIntoStrips<6>(line, kc, p, panel); break;
        case 8: SplitIntoStrips<8>(line, kc, p, panel); break;
        case 12: SplitIntoStrips<12>(line, kc, p, panel); break;
        case 16: SplitIntoStrips<16>(line, kc, p, panel); break;
        case 32: SplitIntoStrips<32>(line, kc, p, panel); break;
        default:
          for (size_t j = 0; j < line.size(); j += width) {
            std::copy_n(line.data() + j, width, panel + j * kc + p * width);
          }
      }
    }
  }

 private:
  static constexpr int kLast = kRank - 1;

  /// Output positions x_begin <= x < x_end along the last axis at `outer` along the others,
  /// at line[to + x - x_begin].
  struct Run {
    std::array<int64_t, kLast> outer;
    int64_t x_begin, x_end, to;
  };

  /// Columns [first, first + count) of the im2col matrix cut at output row ends: the same for
  /// every depth row, so found once per panel rather than by divisions per row and run.
  std::vector<Run> RunsOf(int64_t first, int64_t count) const {
    std::vector<Run> runs;
    for (int64_t col = first; col < first + count;) {
      Run run{};
      run.x_begin = col % out_[kLast];
      run.x_end = std::min(out_[kLast], run.x_begin + first + count - col);
      run.to = col - first;
      int64_t rest = col / out_[kLast];
      for (int a = kLast - 1; a >= 0; --a) {
        run.outer[a] = rest % out_[a];
        rest /= out_[a];
      }
      runs.push_back(run);
      col += run.x_end - run.x_begin;
    }
    return runs;
  }

  /// Row p of every kWidth-wide strip of the panel from the line.
  template <int64_t kWidth>
  static void SplitIntoStrips(const std::vector<float>& line, int64_t kc, int64_t p, float* panel) {
    for (size_t j = 0; j < line.size(); j += kWidth) {
      std::memcpy(panel + j * kc + p * kWidth, line.data() + j, kWidth * sizeof(float));
    }
  }

  /// The line of im2col row `row` = (c, k_0, ..., k_last) over the runs' columns.
  void GatherRow(int64_t row, const std::vector<Run>& runs, float* line) const {
    std::array<int64_t, kRank> tap{};
    for (int64_t t = row % taps_, a = kLast; a >= 0; --a) {
      tap[a] = t % win_.kernel[a];
      t /= win_.kernel[a];
    }
    const float* plane = data_ + row / taps_ * plane_;
    const Range& valid = x_valid_[tap[kLast]];
    const int64_t offset_x = win_.InputPos(kLast, 0, tap[kLast]);
    const int64_t stride_x = win_.stride[kLast];
    for (const Run& run : runs) {
      float* out = line + run.to - run.x_begin;  // out[x] is column (outer..., x)
      Range copied{std::max(run.x_begin, valid.begin), std::min(run.x_end, valid.end)};
      int64_t offset = 0;  // of the input row the run reads
      for (int a = 0; a < kLast; ++a) {
        const int64_t i = win_.InputPos(a, run.outer[a], tap[a]);
        if (i < 0 || i >= in_[a]) copied = {run.x_end, run.x_end};
        offset = offset * in_[a] + i;
      }
      if (copied.begin >= copied.end) copied = {run.x_end, run.x_end};
      // The edges are a pixel or two: loops, not library calls.
      for (int64_t x = run.x_begin; x < copied.begin; ++x) out[x] = 0.F;
      const float* in = plane + offset * in_[kLast] + offset_x;
      if (stride_x == 1) {
        std::copy(in + copied.begin, in + copied.end, out + copied.begin);
      } else {
        for (int64_t x = copied.begin; x < copied.end; ++x) out[x] = in[x * stride_x];
      }
      for (int64_t x = copied.end; x < run.x_end; ++x) out[x] = 0.F;
    }
  }

  Window<kRank> win_;
  std::array<int64_t, kRank> in_;
  std::array<int64_t, kRank> out_;
  const float* data_;
  int64_t taps_ = 1;   ///< window positions
  int64_t plane_ = 1;  ///< floats per input channel
  std::vector<Range> x_valid_;
};

/// Where the taps of one window row read in a padded plane: tap kw of output ox reads
/// in_row[ox * stride + offsets[kw]], for every output column (the padding is written out).
struct WindowRowPlan {
  std::vector<int64_t> offsets;
  int64_t width;  ///< output columns
  bool dense;     ///< no dilation: offsets[kw] is kw

  explicit WindowRowPlan(const ConvShapes& s) : width(s.ow), dense(s.window.dilation[1] == 1) {
    for (int64_t kw = 0; kw < s.window.kernel[1]; ++kw) {
      offsets.push_back(kw * s.window.dilation[1]);
    }
  }
};

/// out_line[ox] += the taps of one window row times their inputs, over the whole output row:
/// one pass over it per window row, taps added in order. kKW (window width) and kStride are
/// compile-time for the common windows so that the taps unroll and the outputs vectorize; 0
/// means the runtime values.
template <int64_t kKW, int64_t kStride>
__attribute__((always_inline)) inline void AddWindowRow(float* __restrict__ out_line,
                                                        const float* __restrict__ in_row,
                                                        const float* taps,
                                                        const WindowRowPlan& plan, int64_t stride) {
  const auto width = static_cast<int64_t>(kKW == 0 ? plan.offsets.size() : kKW);
  const int64_t step = kStride == 0 ? stride : kStride;
  const int64_t* offsets = plan.offsets.data();
  if (kKW != 0 && plan.dense) {  // offsets 0, 1, 2, ...: constants, so the loads are direct
    for (int64_t ox = 0; ox < plan.width; ++ox) {
      float sum = out_line[ox];
      for (int64_t kw = 0; kw < width; ++kw) sum += taps[kw] * in_row[ox * step + kw];
      out_line[ox] = sum;
    }
    return;
  }
  for (int64_t ox = 0; ox < plan.width; ++ox) {
    float sum = out_line[ox];
    for (int64_t kw = 0; kw < width; ++kw) sum += taps[kw] * in_row[ox * step + offsets[kw]];
    out_line[ox] = sum;
  }
}

/// AddWindowRow with the window width `width` made compile-time where it is 3, 5 or 7
/// (MobileNet's, ConvNeXt's): a runtime width leaves a short inner loop per output that
/// neither unrolls nor vectorizes.
template <int64_t kStride>
__attribute__((always_inline)) inline void AddWindowRowOfStride(
    int64_t width, float* __restrict__ out_line, const float* __restrict__ in_row,
    const float* taps, const WindowRowPlan& plan, int64_t stride) {
  switch (width) {
    case 3: AddWindowRow<3, kStride>(out_line, in_row, taps, plan, stride); break;
    case 5: AddWindowRow<5, kStride>(out_line, in_row, taps, plan, stride); break;
    case 7: AddWindowRow<7, kStride>(out_line, in_row, taps, plan, stride); break;
    default: AddWindowRow<0, kStride>(out_line, in_row, taps, plan, stride);
  }
}

/// The part of an input plane a window reads, and where it goes in the padded plane
/// (PaddedExtent rows and columns) whose elements are `lanes` floats apart.
struct PaddedPlaneCopy {
  int64_t pw;         ///< the padded plane's width
  int64_t top, left;  ///< where input (0, 0) goes
  int64_t lanes;
  int64_t rows, cols;  ///< the input's rows and columns copied

  PaddedPlaneCopy(const ConvShapes& s, int64_t lanes)
      : pw(PaddedExtent(s.window, 1, s.ow)),
        top(s.window.pad_begin[0]),
        left(s.window.pad_begin[1]),
        lanes(lanes),
        rows(std::min(s.h, PaddedExtent(s.window, 0, s.oh) - top)),
        cols(std::min(s.w, pw - left)) {}
  /// Where input element (iy, ix) goes.
  float* At(float* padded, int64_t iy, int64_t ix) const {
    return padded + ((iy + top) * pw + ix + left) * lanes;
  }
};

/// to[0, count) = from[0, count), 16 floats at a time: a row of a small plane is too short for
/// memmove's call and start-up to pay (a 3x3 depthwise conv over 56 x 56 planes took 0.96 of
/// its time without them).
__attribute__((always_inline)) inline void CopyRow(const float* __restrict__ from, int64_t count,
                                                   float* __restrict__ to) {
  constexpr int64_t kLanes = 16;
  int64_t done = 0;
  for (; done + kLanes <= count; done += kLanes) {
    std::memcpy(to + done, from + done, kLanes * sizeof(float));
  }
  CopyFirstLanes<kLanes>(to + done, from + done, count - done);
}

/// Copies the part of `plane` a window reads into `padded` (PaddedPlaneCopy), each element
/// `lanes` floats after the previous. It writes the same positions for every plane of a conv,
/// so the rest of `padded`, where the window reads padding, stays as zero as the buffer was
/// made.
KILN_CPU_CLONES void PadPlane(const ConvShapes& s, const float* plane, int64_t lanes,
                              float* padded) {
  const PaddedPlaneCopy copy(s, lanes);
  for (int64_t iy = 0; iy < copy.rows; ++iy) {
    float* to = copy.At(padded, iy, 0);
    if (lanes == 1) {
      CopyRow(plane + iy * s.w, copy.cols, to);
      continue;
    }
    for (int64_t ix = 0; ix < copy.cols; ++ix) to[ix * lanes] = plane[iy * s.w + ix];
  }
}

/// Channels a depthwise block of small planes computes together, and output columns the
/// direct rows below compute together: one AVX-512 vector.
constexpr int64_t kDepthwiseLanes = 16;

/// Output rows the direct path computes together, sharing their loads of the input rows they
/// read and of the taps (measured on a 7x7 window over 56 x 56 planes: 2 rows at a time were
/// 1.5x slower, bound by the loads).
constexpr int64_t kDepthwiseDirectRows = 4;

/// Floats a padded plane needs past its end for the direct path, whose last vector of a row and
/// last group of rows may read (and not write) that far: at stride 2, the input rows of three
/// more output rows and two vectors.
int64_t DirectPathSlack(int64_t padded_width) {
  constexpr int64_t kMaxStride = 2;
  return (kDepthwiseDirectRows - 1) * kMaxStride * padded_width + kMaxStride * kDepthwiseLanes;
}

/// Output rows [oy, oy + rows) (rows <= kRows) of a depthwise plane with a kK x kK window at
/// stride kStride and no dilation, from its padded plane: every tap is summed in registers,
/// kDepthwiseLanes columns at a time, so each output is written once rather than once per
/// window row, and the kRows rows share the loads of the input rows they both read. Each
/// output sums its even and its odd window columns apart and adds the two at the end: a single
/// sum was one chain of dependent multiply-adds per row, four chains for two multiply-add units
/// to overlap (design §47: split in two, 7x7 windows took 0.90-0.92 of the time, 5x5 0.94-0.96,
/// 3x3 0.97-0.99; in four, the sums spilled). The lanes of a row's last vector past its end are
/// computed from the slack and not written.
template <int64_t kK, int64_t kStride, int64_t kRows>
__attribute__((always_inline)) inline void DepthwiseDirectRows(const float* __restrict__ padded,
                                                               int64_t pw, const float* taps,
                                                               int64_t oy, int64_t rows, int64_t ow,
                                                               float* __restrict__ out) {
  constexpr int64_t kL = kDepthwiseLanes;
  constexpr int64_t kInputRows = (kRows - 1) * kStride + kK;
  // GCC's vector extension, so that the sums stay in registers whatever the loop nest's shape.
  using Vec = float __attribute__((vector_size(kL * sizeof(float))));
  static_assert(kL == 16, "the stride-2 shuffle below picks 16 lanes");
  for (int64_t ox = 0; ox < ow; ox += kL) {
    Vec even[kRows] = {};  // the sums of the even window columns' taps
    Vec odd[kRows] = {};   // and of the odd ones
#pragma GCC unroll 16
    for (int64_t r = 0; r < kInputRows; ++r) {
      const float* in = padded + (oy * kStride + r) * pw + ox * kStride;
#pragma GCC unroll 8
      for (int64_t kw = 0; kw < kK; ++kw) {
        Vec x;
        if constexpr (kStride == 1) {
          std::memcpy(&x, in + kw, sizeof(x));
        } else {  // the even elements of two vectors
          Vec low;
          Vec high;
          std::memcpy(&low, in + kw, sizeof(low));
          std::memcpy(&high, in + kw + kL, sizeof(high));
          x = __builtin_shufflevector(low, high, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                      28, 30);
        }
#pragma GCC unroll 4
        for (int64_t rr = 0; rr < kRows; ++rr) {
          const int64_t kh = r - rr * kStride;
          if (kh < 0 || kh >= kK) continue;
          (kw % 2 == 0 ? even : odd)[rr] += taps[kh * kK + kw] * x;
        }
      }
    }
    Vec acc[kRows];
    for (int64_t rr = 0; rr < kRows; ++rr) acc[rr] = even[rr] + odd[rr];
    const int64_t cols = std::min(kL, ow - ox);
    for (int64_t rr = 0; rr < rows; ++rr) {
      float* to = out + (oy + rr) * ow + ox;
      if (cols == kL) {
        std::memcpy(to, &acc[rr], sizeof(Vec));  // one store; a copy of `cols` floats is a call
      } else {
        StoreFirstLanes(to, acc[rr], cols);
      }
    }
  }
}

template <int64_t kK, int64_t kStride>
__attribute__((always_inline)) inline void DepthwiseDirectPlane(const ConvShapes& s,
                                                                const float* padded,
                                                                const float* taps, float* out) {
  const int64_t pw = PaddedExtent(s.window, 1, s.ow);
  for (int64_t oy = 0; oy < s.oh; oy += kDepthwiseDirectRows) {
    DepthwiseDirectRows<kK, kStride, kDepthwiseDirectRows>(
        padded, pw, taps, oy, std::min(kDepthwiseDirectRows, s.oh - oy), s.ow, out);
  }
}

/// Whether DepthwisePlane takes the direct path: square 3x3, 5x5 or 7x7 windows (MobileNet's,
/// EfficientNet's, ConvNeXt's) at stride 1 or 2 both ways, undilated.
bool TakesDirectRows(const Window2D& win) {
  const int64_t k = win.kernel[0];
  return k == win.kernel[1] && (k == 3 || k == 5 || k == 7) && win.stride[0] == win.stride[1] &&
         (win.stride[0] == 1 || win.stride[0] == 2) && win.dilation[0] == 1 && win.dilation[1] == 1;
}

/// One output plane of a depthwise conv2d from the input plane padded once (so no tap needs an
/// edge of its own), by the direct path above where it applies; otherwise row by row, each
/// window row one pass over the output row, which stays in L1. `padded` starts zero (with
/// DirectPathSlack floats after the plane) and is passed from plane to plane (PadPlane).
KILN_CPU_CLONES void DepthwisePlane(const ConvShapes& s, const WindowRowPlan& plan,
                                    const float* plane, const float* taps, float* padded,
                                    float* out) {
  const Window2D& win = s.window;
  const int64_t pw = PaddedExtent(win, 1, s.ow);
  const int64_t stride = win.stride[1];
  PadPlane(s, plane, 1, padded);
  if (TakesDirectRows(win)) {
    // Called directly, not through a pointer, so that each inlines into this function's
    // AVX-512 clone.
    const bool one = stride == 1;
    switch (win.kernel[0]) {
      case 3:
        one ? DepthwiseDirectPlane<3, 1>(s, padded, taps, out)
            : DepthwiseDirectPlane<3, 2>(s, padded, taps, out);
        return;
      case 5:
        one ? DepthwiseDirectPlane<5, 1>(s, padded, taps, out)
            : DepthwiseDirectPlane<5, 2>(s, padded, taps, out);
        return;
      default:
        one ? DepthwiseDirectPlane<7, 1>(s, padded, taps, out)
            : DepthwiseDirectPlane<7, 2>(s, padded, taps, out);
        return;
    }
  }
  std::fill_n(out, s.oh * s.ow, 0.F);
  for (int64_t oy = 0; oy < s.oh; ++oy) {
    float* out_line = out + oy * s.ow;
    for (int64_t kh = 0; kh < win.kernel[0]; ++kh) {
      const float* in_row = padded + (oy * win.stride[0] + kh * win.dilation[0]) * pw;
      const float* row_taps = taps + kh * win.kernel[1];
      // Called directly, not through a pointer, so that each inlines into this function's
      // AVX-512 clone.
      if (stride == 1) {
        AddWindowRowOfStride<1>(win.kernel[1], out_line, in_row, row_taps, plan, stride);
      } else if (stride == 2) {
        AddWindowRowOfStride<2>(win.kernel[1], out_line, in_row, row_taps, plan, stride);
      } else {
        AddWindowRowOfStride<0>(win.kernel[1], out_line, in_row, row_taps, plan, stride);
      }
    }
  }
}

/// Output columns a depthwise block computes together, sharing each tap's load.
constexpr int64_t kDepthwiseColumns = 4;

/// The kL-lane sums of kColumns outputs of a depthwise block's row from `row`, the padded input
/// row of its first window row, into row_sums[ox...] ([x][lane]).
template <int64_t kColumns>
__attribute__((always_inline)) inline void DepthwiseBlockOutputs(const Window2D& win, int64_t pw,
                                                                 const float* tap_lanes,
                                                                 const float* row, int64_t ox,
                                                                 float* row_sums) {
  constexpr int64_t kL = kDepthwiseLanes;
  float acc[kColumns][kL] = {};
  for (int64_t kh = 0; kh < win.kernel[0]; ++kh) {
    for (int64_t kw = 0; kw < win.kernel[1]; ++kw) {
      const float* tap = tap_lanes + (kh * win.kernel[1] + kw) * kL;
      const float* in =
          row + (kh * win.dilation[0] * pw + ox * win.stride[1] + kw * win.dilation[1]) * kL;
      for (int64_t c = 0; c < kColumns; ++c) {
        for (int64_t l = 0; l < kL; ++l) acc[c][l] += tap[l] * in[c * win.stride[1] * kL + l];
      }
    }
  }
  std::copy_n(&acc[0][0], kColumns * kL, row_sums + ox * kL);
}

/// A depthwise block's lanes, one AVX-512 vector (GCC's vector extension).
using Lanes16 = float __attribute__((vector_size(kDepthwiseLanes * sizeof(float))));
static_assert(kDepthwiseLanes == 16, "Transpose16 transposes 16 x 16 floats");

/// One round of Transpose16 on rows `first` and `second`, kBlock rows apart: the runs of kBlock
/// lanes of `first` at odd run indices trade places with those of `second` at even ones.
template <int64_t kBlock, size_t... kJ>
__attribute__((always_inline)) inline void SwapBlocks(Lanes16& first, Lanes16& second,
                                                      std::index_sequence<kJ...> /*lanes*/) {
  const Lanes16 low =
      __builtin_shufflevector(first, second, ((kJ & kBlock) != 0 ? 16 + kJ - kBlock : kJ)...);
  const Lanes16 high =
      __builtin_shufflevector(first, second, ((kJ & kBlock) != 0 ? 16 + kJ : kJ + kBlock)...);
  first = low;
  second = high;
}

template <int64_t kBlock>
__attribute__((always_inline)) inline void TransposeRound(Lanes16 (&rows)[16]) {
  for (int64_t i = 0; i < 16; ++i) {
    if ((i & kBlock) == 0) {
      SwapBlocks<kBlock>(rows[i], rows[i + kBlock], std::make_index_sequence<16>());
    }
  }
}

/// rows[i][j] becomes rows[j][i], in registers: four rounds, each swapping the off-diagonal
/// blocks of the 2k x 2k blocks (k = 8, 4, 2, 1), one two-vector shuffle per row and round:
/// 64 shuffles where the element-by-element copy took 256 loads and stores.
__attribute__((always_inline)) inline void Transpose16(Lanes16 (&rows)[16]) {
  TransposeRound<8>(rows);
  TransposeRound<4>(rows);
  TransposeRound<2>(rows);
  TransposeRound<1>(rows);
}

/// PadPlane of 16 consecutive planes (`first`, each s.h x s.w) into one interleaved `padded`,
/// 16 pixels at a time through Transpose16; the last pixels, fewer than 16, one at a time.
__attribute__((always_inline)) inline void PadSixteenPlanes(const ConvShapes& s, const float* first,
                                                            float* padded) {
  const PaddedPlaneCopy copy(s, 16);
  const int64_t plane = s.h * s.w;
  const auto to = [&](int64_t pixel) -> float* {  // where the pixel's 16 channels go, or null
    const int64_t y = pixel / s.w;
    const int64_t x = pixel % s.w;
    return y < copy.rows && x < copy.cols ? copy.At(padded, y, x) : nullptr;
  };
  int64_t q = 0;
  for (; q + 16 <= plane; q += 16) {
    Lanes16 pixels[16];
    for (int64_t l = 0; l < 16; ++l)
      std::memcpy(&pixels[l], first + l * plane + q, sizeof(Lanes16));
    Transpose16(pixels);
    for (int64_t k = 0; k < 16; ++k) {
      if (float* at = to(q + k)) std::memcpy(at, &pixels[k], sizeof(Lanes16));
    }
  }
  for (; q < plane; ++q) {
    if (float* at = to(q)) {
      for (int64_t l = 0; l < 16; ++l) at[l] = first[l * plane + q];
    }
  }
}

/// Output channels [o0, o0 + lanes) of one image of a depthwise conv2d with small planes,
/// kDepthwiseLanes channels side by side: their input planes are interleaved into `padded`
/// ([y][x][lane], zero where the window reads padding), so each output position is one
/// vector multiply-add per tap with no edges to handle, and the sums are written back plane
/// by plane; `padded` starts zero and is passed from block to block (PadPlane). A row-by-row
/// pass (DepthwisePlane) over planes a few vectors wide spends its time
/// on loop edges: bench/kernels/run.py's 7x7 row (960 channels) took 264 us that way and 77 us
/// in blocks, at 1 thread.
KILN_CPU_CLONES void DepthwiseBlock(const ConvShapes& s, const float* image, const float* weight,
                                    int64_t o0, int64_t lanes, float* __restrict__ padded,
                                    float* __restrict__ sums, float* out) {
  constexpr int64_t kL = kDepthwiseLanes;
  const Window2D& win = s.window;
  const int64_t pw = PaddedExtent(win, 1, s.ow);
  const int64_t taps = win.kernel[0] * win.kernel[1];
  const int64_t multiplier = s.o / s.c;
  float tap_lanes[kL * 49] = {};  // taps x lanes; windows up to 7x7 take this path
  // A whole block of one output channel per input channel reads 16 consecutive planes.
  const bool whole = lanes == kL && multiplier == 1;
  if (whole) PadSixteenPlanes(s, image + o0 * s.h * s.w, padded);
  for (int64_t l = 0; l < lanes; ++l) {
    if (!whole) PadPlane(s, image + (o0 + l) / multiplier * s.h * s.w, kL, padded + l);
    for (int64_t t = 0; t < taps; ++t) tap_lanes[t * kL + l] = weight[(o0 + l) * taps + t];
  }
  for (int64_t oy = 0; oy < s.oh; ++oy) {
    const float* row = padded + oy * win.stride[0] * pw * kL;
    float* row_sums = sums + oy * s.ow * kL;
    int64_t ox = 0;
    // Four outputs at a time share each tap's load.
    for (; ox + kDepthwiseColumns <= s.ow; ox += kDepthwiseColumns) {
      DepthwiseBlockOutputs<kDepthwiseColumns>(win, pw, tap_lanes, row, ox, row_sums);
    }
    for (; ox < s.ow; ++ox) DepthwiseBlockOutputs<1>(win, pw, tap_lanes, row, ox, row_sums);
  }
  const int64_t spatial = s.oh * s.ow;
  int64_t q = 0;
  if (lanes == kL) {  // 16 pixels of 16 planes at a time
    for (; q + kL <= spatial; q += kL) {
      Lanes16 planes[kL];
      std::memcpy(planes, sums + q * kL, sizeof(planes));
      Transpose16(planes);
      for (int64_t l = 0; l < kL; ++l) {
        std::memcpy(out + (o0 + l) * spatial + q, &planes[l], sizeof(Lanes16));
      }
    }
  }
  for (int64_t l = 0; l < lanes; ++l) {
    float* plane_out = out + (o0 + l) * spatial;
    for (int64_t i = q; i < spatial; ++i) plane_out[i] = sums[i * kL + l];
  }
}

/// Whether DepthwiseBlock takes this conv: windows up to 7x7 whose output rows are too short
/// for the other paths, at most half a vector where the direct path applies (which otherwise
/// wastes most of its lanes), else at most 32 (where the row-by-row pass is slow). Measured at
/// 1 thread (bench/ops/run.py): a 3x3 over 28 x 28 planes and a 5x5 at stride 2 to 14 x 14 took
/// half the time in the direct path, a 3x3 over 7 x 7 planes half the time in blocks.
bool TakesDepthwiseBlocks(const ConvShapes& s) {
  const int64_t widest = TakesDirectRows(s.window) ? kDepthwiseLanes / 2 : 32;
  return s.ow <= widest && s.window.kernel[0] * s.window.kernel[1] <= 49;
}

/// Outputs the flat depthwise path sums together in registers: four AVX-512 vectors.
constexpr int64_t kFlatOutputs = 64;

/// One output plane of a depthwise conv2d over a small plane, from its phase planes (one
/// channel's PhasePlanes, read at `offsets`): with output rows as wide as the planes' rows and
/// flattened, every tap adds one shifted run of the planes to every output, so kFlatOutputs
/// outputs at a time are summed over all taps in registers with no edge of their own, and the
/// wide rows are then narrowed into `out`. `wide` holds the wide rows rounded up to
/// kFlatOutputs; `phases` is readable that far past its last wide row's reads.
KILN_CPU_CLONES void DepthwiseFlatPlane(const ConvShapes& s, int64_t width,
                                        const std::vector<int64_t>& offsets, const float* phases,
                                        const float* taps, float* __restrict__ wide,
                                        float* __restrict__ out) {
  typedef float Vec __attribute__((vector_size(64)));  // NOLINT(modernize-use-using)
  constexpr int64_t kLanes = 16;
  constexpr int64_t kVecs = kFlatOutputs / kLanes;
  const int64_t count = s.oh * width;
  for (int64_t q = 0; q < count; q += kFlatOutputs) {
    Vec acc[kVecs] = {};
    for (size_t t = 0; t < offsets.size(); ++t) {
      const float* in = phases + offsets[t] + q;
      const Vec tap = taps[t] - Vec{};  // a broadcast: x - (+0) is x
      for (int64_t v = 0; v < kVecs; ++v) {
        Vec x;
        std::memcpy(&x, in + v * kLanes, sizeof(Vec));
        acc[v] += tap * x;
      }
    }
    std::memcpy(wide + q, acc, sizeof(acc));
  }
  // Each row but the last as one whole vector (rows are at most kLanes wide): its lanes past the
  // row land at the start of the next row, which is written after it. A call to copy each row
  // took 8% of a 3x3 over 14 x 14 planes.
  int64_t oy = 0;
  for (; oy + 1 < s.oh; ++oy) std::memcpy(out + oy * s.ow, wide + oy * width, sizeof(Vec));
  std::copy_n(wide + oy * width, s.ow, out + oy * s.ow);
}

/// Whether a depthwise conv2d takes DepthwiseFlatPlane: stride 1, windows up to 25 taps, output
/// rows of 9 to 16, which the direct path computes in 16-lane vectors and the blocks of
/// channels with strided interleaving. Measured at 1 thread against those paths (one process,
/// alternating): 0.74 of the time for a 3x3 over 14 x 14 planes, 0.84 for a 5x5; a 7x7 window
/// there, stride 2 and planes of 7 or of 28 and more were no faster or slower.
bool TakesDepthwiseFlat(const ConvShapes& s) {
  const Window2D& win = s.window;
  return win.stride[0] == 1 && win.stride[1] == 1 && win.kernel[0] * win.kernel[1] <= 25 &&
         s.ow > 8 && s.ow <= 16;
}

/// One input channel per group: each output plane is a weighted sum of shifted input rows.
void DepthwiseConv2D(const ConvShapes& s, const float* x, const float* weight,
                     const GemmEpilogue& epilogue, float* y) {
  const Window2D& win = s.window;
  const int64_t multiplier = s.o / s.c;
  const int64_t spatial = s.oh * s.ow;
  // The epilogue of output planes [p, p + planes) (image-major), all of one image.
  auto finish = [&](int64_t p, int64_t planes) {
    if (!epilogue.active()) return;
    GemmEpilogue image_epilogue = epilogue;  // its residual starts at this plane's image
    if (epilogue.residual != nullptr) image_epilogue.residual += p / s.o * s.o * spatial;
    if (epilogue.tile != nullptr) image_epilogue.tile_image = p / s.o;
    image_epilogue.Apply(p % s.o, planes, 0, spatial, y + p * spatial, spatial);
  };
  if (TakesDepthwiseFlat(s)) {
    const PhasePlanes planes(win, s.oh, s.ow, 1);
    const std::vector<int64_t> offsets = planes.RowOffsets();
    const int64_t taps = win.kernel[0] * win.kernel[1];
    const int64_t wide = (s.oh * planes.width() + kFlatOutputs - 1) / kFlatOutputs * kFlatOutputs;
    runtime::ParallelFor(0, s.n * s.o, 1, [&](int64_t begin, int64_t end) {
      // Zero where the windows read padding, for good (Fill writes the same positions).
      std::vector<float> phases(planes.floats() + kFlatOutputs);
      std::vector<float> wide_rows(wide);
      for (int64_t p = begin; p < end; ++p) {
        planes.Fill(x + (p / s.o * s.c + p % s.o / multiplier) * s.h * s.w, s.h, s.w,
                    phases.data());
        DepthwiseFlatPlane(s, planes.width(), offsets, phases.data(), weight + p % s.o * taps,
                           wide_rows.data(), y + p * spatial);
        finish(p, 1);
      }
    });
    return;
  }
  if (TakesDepthwiseBlocks(s)) {
    const int64_t blocks = (s.o + kDepthwiseLanes - 1) / kDepthwiseLanes;
    const int64_t padded_size =
        PaddedExtent(win, 0, s.oh) * PaddedExtent(win, 1, s.ow) * kDepthwiseLanes;
    runtime::ParallelFor(0, s.n * blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> padded(padded_size);  // zero where windows read padding, for good
      std::vector<float> sums(spatial * kDepthwiseLanes);
      for (int64_t b = begin; b < end; ++b) {
        const int64_t image = b / blocks;
        const int64_t o0 = b % blocks * kDepthwiseLanes;
        const int64_t lanes = std::min(kDepthwiseLanes, s.o - o0);
        DepthwiseBlock(s, x + image * s.c * s.h * s.w, weight, o0, lanes, padded.data(),
                       sums.data(), y + image * s.o * spatial);
        finish(image * s.o + o0, lanes);
      }
    });
    return;
  }
  const WindowRowPlan plan(s);
  runtime::ParallelFor(0, s.n * s.o, 1, [&](int64_t begin, int64_t end) {
    const int64_t pw = PaddedExtent(win, 1, s.ow);
    std::vector<float> padded(PaddedExtent(win, 0, s.oh) * pw + DirectPathSlack(pw));  // zeros
    for (int64_t p = begin; p < end; ++p) {
      DepthwisePlane(s, plan, x + (p / s.o * s.c + p % s.o / multiplier) * s.h * s.w,
                     weight + p % s.o * win.kernel[0] * win.kernel[1], padded.data(),
                     y + p * spatial);
      finish(p, 1);
    }
  });
}

/// Whether a (non-depthwise) conv2d reads its padded image in place, with output rows as wide
/// as the padded rows (PaddedRowsConv below): every window but an unpadded 1x1. A 1x1 at
/// stride 1 reads the image as it is; at stride 2 it reads a quarter of it, where splitting
/// the image into its four phases was 1.5-1.9x slower than gathering that quarter.
bool TakesPaddedRows(const Window2D& win) {
  const bool unit_window = win.kernel[0] == 1 && win.kernel[1] == 1 && win.pad_begin[0] == 0 &&
                           win.pad_begin[1] == 0 && win.pad_end[0] == 0 && win.pad_end[1] == 0;
  return !unit_window;
}

/// A conv2d's GEMM per group: weights (group_out x depth) times the im2col matrix, or, when
/// `transposed`, the same product with output pixels along the tiles' rows and channels along
/// their vectors (GemmTransposedOutput): then a deep 1x1 conv's 7 x 7 output planes, whose
/// pixels do not fill whole vectors, waste no lanes.
struct ConvGemm {
  int64_t groups, group_out, depth;
  bool transposed;

  /// `out_channels` over `groups`, each output channel reading `depth` = C/groups * KH * KW.
  ConvGemm(int64_t out_channels, int64_t depth, int64_t groups, bool transposed)
      : groups(groups), group_out(out_channels / groups), depth(depth), transposed(transposed) {}

  /// Whether output planes of `spatial` pixels (-1: not known), each the sum of `depth`
  /// products, are better computed transposed.
  /// A padded window's usual GEMM reads the image in place, where the transposed one gathers
  /// the pixels for each task (ImagePanelPacker): that pass pays only over many output channels
  /// (3x3s onto 7 x 7 planes, design §44: 0.82-0.91 of the time at 256 and 512 channels, 0.94-1.07
  /// at 128, 1.12-1.69 at 32).
  static bool Transposes(int64_t group_out, int64_t spatial, int64_t depth, const Window2D& win) {
    constexpr int64_t kMinPaddedOut = 256;
    return spatial > 0 && (!TakesPaddedRows(win) || group_out >= kMinPaddedOut) &&
           PrefersTransposedOutput(group_out, spatial, depth);
  }
  /// Depthwise convolutions (one input channel per group) run directly, without a GEMM.
  bool depthwise(int64_t group_in) const { return groups > 1 && group_in == 1; }
  int64_t PackedGroupSize() const {
    return transposed ? PackedGemmBSize(depth, group_out) : PackedGemmASize(group_out, depth);
  }
  /// The weights of `group` as the GEMM reads them: A (group_out x depth), or B transposed.
  MatrixView Weights(const float* w, int64_t group) const {
    const float* first = w + group * group_out * depth;
    return transposed ? MatrixView{first, 1, depth} : MatrixView{first, depth, 1};
  }
};

/// Whether a conv2d runs as Winograd's F(2x2, 3x3) (winograd.h): a 3x3 window at unit stride
/// and dilation, one group, of the extents PrefersWinograd takes.
bool TakesWinograd(const Window2D& win, int64_t groups, int64_t in_channels, int64_t out_channels,
                   int64_t oh, int64_t ow) {
  return groups == 1 && win.kernel[0] == 3 && win.kernel[1] == 3 && win.stride[0] == 1 &&
         win.stride[1] == 1 && win.dilation[0] == 1 && win.dilation[1] == 1 &&
         PrefersWinograd(in_channels, out_channels, oh, ow);
}

/// A conv2d weight as PrepackConv2D packed it, and for which algorithm, which the output's
/// extents decided when the program loaded: the packed tensor is 3-D, (1, 1, floats), for
/// Winograd (PackWinogradWeights); 2-D, (groups, floats per group), for the transposed GEMM;
/// 1-D for the GEMM.
struct PackedConvWeight {
  const float* data = nullptr;
  bool transposed = false;
  bool winograd = false;

  PackedConvWeight() = default;
  explicit PackedConvWeight(const std::optional<Tensor>& packed)
      : data(packed.has_value() ? static_cast<const float*>(packed->data()) : nullptr),
        transposed(packed.has_value() && packed->ndim() == 2),
        winograd(packed.has_value() && packed->ndim() == 3) {}
};

/// Packs a constant conv2d weight for Winograd or for its GEMMs, group after group, in the
/// orientation its output's pixel count asks for (the normal one when the program leaves it
/// symbolic).
std::optional<Tensor> PrepackConv2D(size_t index, const Tensor& weight, const KernelCall& call) {
  const int64_t groups = call.Int("groups");
  const int64_t depth = weight.shape(1) * weight.shape(2) * weight.shape(3);
  const std::vector<int64_t> out_shape =
      call.OptionalInts(runtime::kPrepackOutputShapeAttr).value_or(std::vector<int64_t>{});
  const int64_t spatial = out_shape.size() == 4 && out_shape[2] >= 0 && out_shape[3] >= 0
                              ? out_shape[2] * out_shape[3]
                              : -1;
  const Window2D window = ReadWindow(call, weight.shape(2), weight.shape(3));
  const ConvGemm gemm(weight.shape(0), depth, groups,
                      ConvGemm::Transposes(weight.shape(0) / groups, spatial, depth, window));
  if (index != 1 || weight.dtype().code != kDLFloat || weight.dtype().bits != 32 ||
      gemm.depthwise(weight.shape(1))) {
    return std::nullopt;
  }
  if (spatial > 0 &&
      TakesWinograd(window, groups, weight.shape(1), weight.shape(0), out_shape[2], out_shape[3])) {
    Tensor packed = runtime::Empty({1, 1, WinogradWeightFloats(weight.shape(0), weight.shape(1))},
                                   DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
    PackWinogradWeights(Data<const float>(weight), weight.shape(0), weight.shape(1),
                        Data<float>(packed));
    return packed;
  }
  Tensor packed =
      runtime::Empty(gemm.transposed ? std::vector<int64_t>{gemm.groups, gemm.PackedGroupSize()}
                                     : std::vector<int64_t>{gemm.groups * gemm.PackedGroupSize()},
                     DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  const float* w = Data<const float>(weight);
  for (int64_t group = 0; group < gemm.groups; ++group) {
    float* group_packed = Data<float>(packed) + group * gemm.PackedGroupSize();
    if (gemm.transposed) {
      PackGemmB(gemm.depth, gemm.group_out, gemm.Weights(w, group), group_packed);
    } else {
      PackGemmA(gemm.group_out, gemm.depth, gemm.Weights(w, group), group_packed);
    }
  }
  return packed;
}
KILN_CPU_PREPACK("nn.conv2d", PrepackConv2D);

/// One image group of a conv2d (TakesPaddedRows) as a GEMM that reads its phase planes in
/// place (PhasePlanes), with output rows as wide as the planes' rows, which the GEMM narrows
/// into `y` (the group's output planes) before `epilogue`. The extra columns a wide row
/// computes ((KW - 1) * dilation_w / stride_w: 2 of 58 on resnet's 3x3 over 56 x 56) cost less
/// than gathering the im2col matrix panel by panel (design §35).
void PaddedRowsConv(const ConvShapes& s, const float* group_data, const GemmOperand& weights,
                    const ConvGemm& gemm, const GemmEpilogue& epilogue, float* y) {
  const PhasePlanes planes(s.window, s.oh, s.ow, s.c / s.groups);
  // Scratch from the caching allocator: fresh pages for every call would fault each one in.
  const Tensor image = NewPackedTensor(planes.floats());
  float* phases = Data<float>(image);
  std::fill_n(phases, planes.floats(), 0.F);
  planes.Fill(group_data, s.h, s.w, phases);
  const std::vector<int64_t> offsets = planes.RowOffsets();
  GemmEpilogue narrowing = epilogue;
  narrowing.narrow_width = planes.width();
  narrowing.narrow_valid = s.ow;
  Gemm(gemm.group_out, s.oh * planes.width(), gemm.depth, weights,
       GemmOperand(GatheredRows{phases, offsets.data()}), y, s.oh * s.ow, narrowing);
}

/// y = conv2d(x, w) (NCHW, OIHW), then `epilogue`; `prepacked` is the weight packed by
/// PrepackConv2D, or null.
void Conv2DInto(const ConvShapes& s, const float* x, const float* w,
                const PackedConvWeight& prepacked, const GemmEpilogue& epilogue, float* y) {
  const int64_t group_in = s.c / s.groups;
  const int64_t spatial = s.oh * s.ow;
  const int64_t depth = group_in * s.window.kernel[0] * s.window.kernel[1];
  const ConvGemm gemm(s.o, depth, s.groups,
                      prepacked.data != nullptr
                          ? prepacked.transposed
                          : ConvGemm::Transposes(s.o / s.groups, spatial, depth, s.window));
  const Window2D& win = s.window;
  if (prepacked.winograd ||
      (prepacked.data == nullptr && TakesWinograd(win, s.groups, s.c, s.o, s.oh, s.ow))) {
    WinogradConv2D({s.n, s.c, s.h, s.w, s.o, s.oh, s.ow, win.pad_begin[0], win.pad_begin[1]}, x, w,
                   prepacked.winograd ? prepacked.data : nullptr, epilogue, y);
    return;
  }
  if (gemm.depthwise(group_in)) {
    const ResidualOutsideC outside(epilogue, y, 1, s.n * s.o * spatial, 0);
    DepthwiseConv2D(s, x, w, outside.epilogue(), y);
    return;
  }
  // A 1x1 window with unit strides and no padding reads the image as its own im2col matrix.
  const bool pointwise = win.kernel[0] == 1 && win.kernel[1] == 1 && win.stride[0] == 1 &&
                         win.stride[1] == 1 && win.pad_begin[0] == 0 && win.pad_begin[1] == 0 &&
                         win.pad_end[0] == 0 && win.pad_end[1] == 0;
  const int64_t group_out = gemm.group_out;
  ForEachMatrix(s.n * s.groups, [&](int64_t i) {
    const int64_t image = i / s.groups;
    const int64_t group = i % s.groups;
    const float* group_data = x + (image * s.c + group * group_in) * s.h * s.w;
    GemmOperand weights(gemm.Weights(w, group));
    if (prepacked.data != nullptr) {
      weights.packed = prepacked.data + group * gemm.PackedGroupSize();
    }
    GemmEpilogue group_epilogue = epilogue;
    if (epilogue.row_bias != nullptr) group_epilogue.row_bias += group * group_out;
    if (epilogue.residual != nullptr) {
      group_epilogue.residual += (image * s.o + group * group_out) * spatial;
    }
    group_epilogue.tile_image = image;
    group_epilogue.tile_row_offset = group * group_out;
    float* group_y = y + (image * s.o + group * group_out) * spatial;
    if (TakesPaddedRows(win) && !gemm.transposed) {
      PaddedRowsConv(s, group_data, weights, gemm, group_epilogue, group_y);
      return;
    }
    // A 1x1 window, strided or not, or a transposed one's pixels gathered per task.
    const PanelPacker image_packer = ImagePanelPacker<2>(win, {s.h, s.w}, {s.oh, s.ow}, group_data);
    if (gemm.transposed) {
      const GemmOperand pixels =
          pointwise ? GemmOperand({group_data, 1, spatial}) : GemmOperand(&image_packer);
      GemmTransposedOutput(spatial, group_out, depth, pixels, weights, group_y, spatial,
                           group_epilogue);
      return;
    }
    Gemm(group_out, spatial, depth, weights,
         pointwise ? GemmOperand({group_data, spatial, 1}) : GemmOperand(&image_packer), group_y,
         spatial, group_epilogue);
  });
}

void Conv2D(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor data = call.input(0);
  const Tensor weight = call.input(1);
  const Tensor out = call.output(0);
  Conv2DInto(ConvShapes(call, data, weight, out), Data<const float>(data),
             Data<const float>(weight), PackedConvWeight(call.PrepackedTensor(1)),
             ReadMergedEpilogue(call, /*bias_per_row=*/true, out.shape(2) * out.shape(3)),
             Data<float>(out));
}
KILN_CPU_KERNEL("nn.conv2d", Conv2D);

// The convolution as a micro-kernel generated code calls (docs/design.md §29): (x, w, y, n, c,
// h, w, o, oh, ow, kh, kw, stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right,
// dilation_h, dilation_w, groups[, epilogue]), the epilogue a KilnTileCallback called with
// (image, channel0, channels, spatial0, count) of each finished tile of y.
KILN_REGISTER_GLOBAL("tir.micro_kernel.conv2d")
    .set_body_packed([](const AnyView* args, int32_t num_args, Any*) {
      KILN_CHECK(num_args == 21 || num_args == 22, TypeError)
          << "tir.micro_kernel.conv2d takes 21 or 22 arguments, got " << num_args;
      std::array<int64_t, 18> ints{};
      for (size_t i = 0; i < ints.size(); ++i) ints[i] = args[i + 3].cast<int64_t>();
      const Window2D window{{ints[7], ints[8]},
                            {ints[9], ints[10]},
                            {ints[11], ints[12]},
                            {ints[13], ints[14]},
                            {ints[15], ints[16]}};
      const ConvShapes shapes(
          {ints[0], ints[1], ints[2], ints[3], ints[4], ints[5], ints[6], ints[17]}, window);
      KILN_CHECK(
          shapes.groups > 0 && shapes.c % shapes.groups == 0 && shapes.o % shapes.groups == 0,
          ValueError)
          << "tir.micro_kernel.conv2d: " << shapes.groups << " groups do not divide " << shapes.c
          << " input and " << shapes.o << " output channels";
      GemmEpilogue epilogue;
      if (num_args == 22) {
        epilogue.tile = static_cast<const KilnTileCallback*>(args[21].cast<void*>());
      }
      Conv2DInto(shapes, static_cast<const float*>(args[0].cast<void*>()),
                 static_cast<const float*>(args[1].cast<void*>()), PackedConvWeight(), epilogue,
                 static_cast<float*>(args[2].cast<void*>()));
    });

/// weight (C, O/groups, KH, KW): per image and group, col = weight_g^T x data_g, then col2im.
void Conv2DTranspose(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor data = call.input(0);
  const Tensor weight = call.input(1);
  const Tensor out = call.output(0);
  const ConvShapes s(call, data, weight, out);
  const float* x = Data<const float>(data);
  const float* w = Data<const float>(weight);
  float* y = Data<float>(out);
  const Window2D& win = s.window;
  const int64_t group_in = s.c / s.groups;
  const int64_t group_out = s.o / s.groups;
  const int64_t rows = group_out * win.kernel[0] * win.kernel[1];
  const int64_t spatial = s.h * s.w;
  ForEachMatrix(s.n * s.groups, [&](int64_t i) {
    const int64_t image = i / s.groups;
    const int64_t group = i % s.groups;
    std::vector<float> col(rows * spatial);
    Gemm(rows, spatial, group_in, {w + group * group_in * rows, 1, rows},
         {x + (image * s.c + group * group_in) * spatial, spatial, 1}, col.data(), spatial);
    float* group_out_data = y + (image * s.o + group * group_out) * s.oh * s.ow;
    std::fill_n(group_out_data, group_out * s.oh * s.ow, 0.F);
    ScatterColumns(col.data(), group_out_data, group_out, s.oh, s.ow, s.h, s.w, win);
  });
}
KILN_CPU_KERNEL("nn.conv2d_transpose", Conv2DTranspose);

void Conv3D(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor data = call.input(0);
  const Tensor weight = call.input(1);
  const Tensor output = call.output(0);
  const int64_t n = data.shape(0);
  const int64_t c = data.shape(1);
  const int64_t o = output.shape(1);
  const int64_t groups = call.Int("groups");
  const std::array<int64_t, 3> in = {data.shape(2), data.shape(3), data.shape(4)};
  const std::array<int64_t, 3> out = {output.shape(2), output.shape(3), output.shape(4)};
  const Window3D win = ReadWindow<3>(call, {weight.shape(2), weight.shape(3), weight.shape(4)});
  const int64_t group_in = c / groups;
  const int64_t group_out = o / groups;
  // The weights' own layout (O, I, KD, KH, KW) is the im2col rows' order: no reorder.
  const int64_t depth = group_in * win.kernel[0] * win.kernel[1] * win.kernel[2];
  const int64_t spatial = out[0] * out[1] * out[2];
  const float* w = Data<const float>(weight);
  const float* x = Data<const float>(data);
  float* y = Data<float>(output);
  ForEachMatrix(n * groups, [&](int64_t i) {
    const int64_t image = i / groups;
    const int64_t group = i % groups;
    const PanelPacker volume_packer = ImagePanelPacker<3>(
        win, in, out, x + (image * c + group * group_in) * in[0] * in[1] * in[2]);
    Gemm(group_out, spatial, depth, GemmOperand({w + group * group_out * depth, depth, 1}),
         GemmOperand(&volume_packer), y + (image * o + group * group_out) * spatial, spatial);
  });
}
KILN_CPU_KERNEL("nn.conv3d", Conv3D);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
