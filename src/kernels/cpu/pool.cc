// nn.max_pool2d/3d, nn.avg_pool2d/3d (NCHW, NCDHW) and the global 2-D forms, float32, one
// (n, c) plane per task. Windows clip to the input; the output extents (ceil_mode included)
// come from the allocated output, which the type relation sized.
#include <algorithm>
#include <limits>
#include <vector>

#include "kernel_util.h"
#include "window.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// Runs `body(in_plane, out_plane)` for every (n, c) plane of the input and output, of
/// element type T (the caller has checked the dtype).
template <typename T = float, typename Body>
void ForEachPlane(const KernelCall& call, const Body& body) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const int64_t planes = in.shape(0) * in.shape(1);
  int64_t in_size = 1;
  int64_t out_size = 1;
  for (int64_t axis = 2; axis < in.ndim(); ++axis) {
    in_size *= in.shape(axis);
    out_size *= out.shape(axis);
  }
  const T* x = Data<const T>(in);
  T* y = Data<T>(out);
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, in_size));
  runtime::ParallelFor(0, planes, grain, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) body(x + p * in_size, y + p * out_size);
  });
}

/// How many taps of a window along one axis count for average pooling at output position
/// `out`: those inside the input, or with count_include_pad those inside the padded input
/// (window parts past the end padding, which ceil_mode adds, never count).
template <int kRank>
int64_t CountedTaps(const Window<kRank>& win, int axis, int64_t out, int64_t in_extent,
                    bool include_pad) {
  int64_t count = 0;
  for (int64_t tap = 0; tap < win.kernel[axis]; ++tap) {
    const int64_t pos = win.InputPos(axis, out, tap);
    count += include_pad ? pos < in_extent + win.pad_end[axis] : pos >= 0 && pos < in_extent;
  }
  return count;
}

/// The value pooling starts from: below every value for max (integers: the lowest one; a window
/// always holds one), zero for a sum.
template <bool kMax, typename T>
constexpr T Initial() {
  if constexpr (!kMax) {
    return T{0};
  } else if constexpr (std::numeric_limits<T>::has_infinity) {
    return -std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

/// The last two axes of a pooling window: the plane a 3-D window slides over at each depth.
template <int kRank>
Window2D PlaneWindow(const Window<kRank>& win) {
  constexpr int kH = kRank - 2;
  return {{win.kernel[kH], win.kernel[kH + 1]},
          {win.stride[kH], win.stride[kH + 1]},
          {win.pad_begin[kH], win.pad_begin[kH + 1]},
          {win.pad_end[kH], win.pad_end[kH + 1]},
          {win.dilation[kH], win.dilation[kH + 1]}};
}

/// Where a 2-D window's columns read, the same for every output row: tap kw reads
/// in_row[ox * stride + offset[kw]] for ox in cols[kw], the output columns whose tap lies inside
/// the input (window.h's ValidOutputs), so the inner loops have no bounds checks.
struct ColumnTaps {
  std::vector<int64_t> offset;
  std::vector<Range> cols;
  Range inside{0, 0};  ///< the output columns every tap reads inside the input

  ColumnTaps(const Window2D& win, int64_t w, int64_t ow) : inside{0, ow} {
    for (int64_t kw = 0; kw < win.kernel[1]; ++kw) {
      offset.push_back(win.InputPos(1, 0, kw));
      cols.push_back(ValidOutputs(ow, win.stride[1], offset.back(), w));
      inside = {std::max(inside.begin, cols.back().begin), std::min(inside.end, cols.back().end)};
    }
  }
};

template <bool kMax, typename T>
__attribute__((always_inline)) inline T Fold(T a, T b) {
  return kMax ? std::max(a, b) : a + b;
}

/// out_row[ox] = max or sum of itself and in_row[ox * kStride] over `cols` (kStride 0: `stride`,
/// known at run time); strides 1 and 2 are spelled out so that the loop vectorizes.
template <bool kMax, int64_t kStride, typename T>
__attribute__((always_inline)) inline void FoldRow(T* __restrict__ out_row,
                                                   const T* __restrict__ in_row, const Range& cols,
                                                   int64_t stride) {
  const int64_t step = kStride == 0 ? stride : kStride;
  for (int64_t ox = cols.begin; ox < cols.end; ++ox) {
    out_row[ox] = Fold<kMax>(out_row[ox], in_row[ox * step]);
  }
}

/// rows[x] = max or sum of first[x], first[step + x], ..., first[(count - 1) * step + x] for x
/// in [0, w): one pass that reads each input row once (kCount > 0 spells the count out, so that
/// the loop vectorizes).
template <bool kMax, int kCount, typename T>
__attribute__((always_inline)) inline void FoldRows(const T* __restrict__ first, int64_t step,
                                                    int64_t count, int64_t w,
                                                    T* __restrict__ rows) {
  const int64_t n = kCount > 0 ? kCount : count;
  for (int64_t x = 0; x < w; ++x) {
    T acc = first[x];
    for (int64_t r = 1; r < n; ++r) acc = Fold<kMax>(acc, first[r * step + x]);
    rows[x] = acc;
  }
}

/// out_row[ox] = max or sum of itself and rows[ox * kStride + offset[kw]] over all kTaps taps,
/// for ox in [begin, end), where every tap lies inside the input: one pass over the output row
/// instead of one per tap.
template <bool kMax, int kTaps, int64_t kStride, typename T>
__attribute__((always_inline)) inline void FoldColumns(T* __restrict__ out_row,
                                                       const T* __restrict__ rows,
                                                       const int64_t* offset, int64_t begin,
                                                       int64_t end) {
  for (int64_t ox = begin; ox < end; ++ox) {
    T acc = out_row[ox];
    for (int kw = 0; kw < kTaps; ++kw) acc = Fold<kMax>(acc, rows[ox * kStride + offset[kw]]);
    out_row[ox] = acc;
  }
}

/// FoldColumns over [begin, end) for windows of 3 columns at stride 1 or 2 (ResNet's, SqueezeNet's
/// and Inception's pools); false for any other, which fold tap by tap (2 x 2 at stride 2 was no
/// faster at once: bench/ops' max_pool3d, 1.28x ONNX Runtime's time against 1.25x, design §45).
template <bool kMax, typename T>
__attribute__((always_inline)) inline bool FoldColumnsAtOnce(const Window2D& win, T* out_row,
                                                             const T* rows, const int64_t* offset,
                                                             int64_t begin, int64_t end) {
  const int64_t taps = win.kernel[1];
  const int64_t stride = win.stride[1];
  if (taps == 3 && stride == 1) {
    FoldColumns<kMax, 3, 1>(out_row, rows, offset, begin, end);
  } else if (taps == 3 && stride == 2) {
    FoldColumns<kMax, 3, 2>(out_row, rows, offset, begin, end);
  } else {
    return false;
  }
  return true;
}

/// Folds the 2-D window over input plane `x` (h x w) into output plane `y` (oh x ow), row by
/// row and separably (max and sum both are): the window's input rows are first folded into one
/// row of the input's width (`rows`, w elements) in one pass, and that row's window columns then
/// into the output row: in one pass where every tap lies inside the input (FoldColumnsAtOnce),
/// tap by tap at the edges. `y` holds the values folded so far (Initial, or earlier depth taps').
template <bool kMax, typename T>
__attribute__((always_inline)) inline void FoldPlaneOf(const Window2D& win, const ColumnTaps& taps,
                                                       const T* x, int64_t h, int64_t w, T* y,
                                                       int64_t oh, int64_t ow, T* rows) {
  const int64_t stride = win.stride[1];
  const Range& inside = taps.inside;
  const int64_t row_step = win.dilation[0] * w;
  for (int64_t oy = 0; oy < oh; ++oy) {
    // The window's rows inside the input: taps [first, first + count).
    int64_t first = 0;
    while (first < win.kernel[0] && win.InputPos(0, oy, first) < 0) ++first;
    int64_t count = 0;
    while (first + count < win.kernel[0] && win.InputPos(0, oy, first + count) < h) ++count;
    if (count == 0) continue;  // the window lies in the padding: nothing to fold
    const T* top = x + win.InputPos(0, oy, first) * w;
    switch (count) {
      case 1: FoldRows<kMax, 1>(top, row_step, count, w, rows); break;
      case 2: FoldRows<kMax, 2>(top, row_step, count, w, rows); break;
      case 3: FoldRows<kMax, 3>(top, row_step, count, w, rows); break;
      default: FoldRows<kMax, 0>(top, row_step, count, w, rows);
    }
    T* out_row = y + oy * ow;
    const bool at_once =
        inside.begin < inside.end &&
        FoldColumnsAtOnce<kMax>(win, out_row, rows, taps.offset.data(), inside.begin, inside.end);
    for (int64_t kw = 0; kw < win.kernel[1]; ++kw) {
      const T* in_row = rows + taps.offset[kw];
      const Range& cols = taps.cols[kw];
      // What FoldColumnsAtOnce left: the columns before and after `inside`, or all of them.
      const Range parts[2] = {{cols.begin, at_once ? std::min(cols.end, inside.begin) : cols.end},
                              {at_once ? std::max(cols.begin, inside.end) : cols.end, cols.end}};
      for (const Range& part : parts) {
        if (stride == 1) {
          FoldRow<kMax, 1>(out_row, in_row, part, stride);
        } else if (stride == 2) {
          FoldRow<kMax, 2>(out_row, in_row, part, stride);
        } else {
          FoldRow<kMax, 0>(out_row, in_row, part, stride);
        }
      }
    }
  }
}

/// FoldPlaneOf, with an AVX-512 clone for float32 (the kernel library builds for the x86-64
/// baseline, whose vectors hold 4 floats).
template <bool kMax, typename T>
void FoldPlane(const Window2D& win, const ColumnTaps& taps, const T* x, int64_t h, int64_t w, T* y,
               int64_t oh, int64_t ow, T* rows) {
  FoldPlaneOf<kMax>(win, taps, x, h, w, y, oh, ow, rows);
}
KILN_CPU_CLONES void MaxFoldPlane(const Window2D& win, const ColumnTaps& taps, const float* x,
                                  int64_t h, int64_t w, float* y, int64_t oh, int64_t ow,
                                  float* rows) {
  FoldPlaneOf<true>(win, taps, x, h, w, y, oh, ow, rows);
}
KILN_CPU_CLONES void SumFoldPlane(const Window2D& win, const ColumnTaps& taps, const float* x,
                                  int64_t h, int64_t w, float* y, int64_t oh, int64_t ow,
                                  float* rows) {
  FoldPlaneOf<false>(win, taps, x, h, w, y, oh, ow, rows);
}
template <>
void FoldPlane<true, float>(const Window2D& win, const ColumnTaps& taps, const float* x, int64_t h,
                            int64_t w, float* y, int64_t oh, int64_t ow, float* rows) {
  MaxFoldPlane(win, taps, x, h, w, y, oh, ow, rows);
}
template <>
void FoldPlane<false, float>(const Window2D& win, const ColumnTaps& taps, const float* x, int64_t h,
                             int64_t w, float* y, int64_t oh, int64_t ow, float* rows) {
  SumFoldPlane(win, taps, x, h, w, y, oh, ow, rows);
}

/// 2-D and 3-D pooling, (n, c) volume by volume: each output plane starts at Initial and folds
/// in the input planes its depth taps read (a 2-D window reads one), then an average divides
/// by the taps counted along each axis.
template <int kRank, bool kMax, typename T>
void PoolOf(const KernelCall& call) {
  const Window<kRank> win = ReadWindow<kRank>(call, call.Ints("pool_size"));
  const bool include_pad = !kMax && call.Bool("count_include_pad");
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const int64_t h = in.shape(kRank), w = in.shape(kRank + 1);
  const int64_t oh = out.shape(kRank), ow = out.shape(kRank + 1);
  const int64_t depth = kRank == 3 ? in.shape(2) : 1;
  const int64_t out_depth = kRank == 3 ? out.shape(2) : 1;
  const Window2D plane_window = PlaneWindow(win);
  const ColumnTaps column_taps(plane_window, w, ow);
  // Averages: 1 / the taps counted in the plane, per output position (a multiply per output
  // where a division took as long as the folding).
  std::vector<T> inverse_hw;
  for (int64_t oy = 0; oy < oh && !kMax; ++oy) {
    for (int64_t ox = 0; ox < ow; ++ox) {
      const int64_t counted = CountedTaps(plane_window, 0, oy, h, include_pad) *
                              CountedTaps(plane_window, 1, ox, w, include_pad);
      inverse_hw.push_back(T{1} / static_cast<T>(std::max<int64_t>(1, counted)));
    }
  }
  ForEachPlane<T>(call, [&](const T* x, T* y) {
    std::vector<T> rows(static_cast<size_t>(w));  // FoldPlane's folded window rows
    for (int64_t od = 0; od < out_depth; ++od) {
      T* plane = y + od * oh * ow;
      std::fill_n(plane, oh * ow, Initial<kMax, T>());
      int64_t counted_d = 1;
      if constexpr (kRank == 3) {
        for (int64_t kd = 0; kd < win.kernel[0]; ++kd) {
          const int64_t id = win.InputPos(0, od, kd);
          if (id >= 0 && id < depth)
            FoldPlane<kMax>(plane_window, column_taps, x + id * h * w, h, w, plane, oh, ow,
                            rows.data());
        }
        counted_d = CountedTaps(win, 0, od, depth, include_pad);
      } else {
        FoldPlane<kMax>(plane_window, column_taps, x, h, w, plane, oh, ow, rows.data());
      }
      if constexpr (!kMax) {
        const T inverse_d = T{1} / static_cast<T>(std::max<int64_t>(1, counted_d));
        for (int64_t i = 0; i < oh * ow; ++i) plane[i] *= inverse_d * inverse_hw[i];
      }
    }
  });
}

/// Max pooling also takes 8-bit integers (ONNX MaxPool, opset 12); average pooling is float32.
template <int kRank, bool kMax>
void Pool(const KernelCall& call) {
  if constexpr (kMax) {
    DispatchDType<kF32 | kU8 | kI8>(call, call.input(0).dtype(),
                                    [&](auto tag) { PoolOf<kRank, true, decltype(tag)>(call); });
  } else {
    RequireFloat32Inputs(call);
    PoolOf<kRank, false, float>(call);
  }
}

KILN_CPU_KERNEL("nn.max_pool2d", (Pool<2, true>));
KILN_CPU_KERNEL("nn.avg_pool2d", (Pool<2, false>));
KILN_CPU_KERNEL("nn.max_pool3d", (Pool<3, true>));
KILN_CPU_KERNEL("nn.avg_pool3d", (Pool<3, false>));

/// The mean of a plane: a sum in double lanes, which vectorizes (one running sum waited on each
/// addition: EfficientNet's squeeze-and-excitation pools took 8% of the model).
KILN_CPU_CLONES float PlaneMean(const float* __restrict__ x, int64_t size) {
  const double sum = LaneSum(x, size, [](double v) { return v; });
  return static_cast<float>(sum / static_cast<double>(std::max<int64_t>(size, 1)));
}

template <bool kMax>
void GlobalPool2D(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor in = call.input(0);
  const int64_t size = in.shape(2) * in.shape(3);
  ForEachPlane(call, [&](const float* x, float* y) {
    if (kMax) {
      *y = size == 0 ? -std::numeric_limits<float>::infinity() : *std::max_element(x, x + size);
      return;
    }
    *y = PlaneMean(x, size);
  });
}
KILN_CPU_KERNEL("nn.global_max_pool2d", GlobalPool2D<true>);
KILN_CPU_KERNEL("nn.global_avg_pool2d", GlobalPool2D<false>);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
