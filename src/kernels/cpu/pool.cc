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

/// Splits `index` into coordinates over `extents` (row-major).
template <int kRank>
void Unflatten(int64_t index, const int64_t* extents, int64_t* coords) {
  for (int axis = kRank - 1; axis >= 0; --axis) {
    coords[axis] = index % extents[axis];
    index /= extents[axis];
  }
}

/// How many taps of a window along one axis count for average pooling at output position
/// `out`: those inside the input, or with count_include_pad those inside the padded input
/// (window parts past the end padding, which ceil_mode adds, never count).
int64_t CountedTaps(const Window2D& win, int axis, int64_t out, int64_t in_extent,
                    bool include_pad) {
  int64_t count = 0;
  for (int64_t tap = 0; tap < win.kernel[axis]; ++tap) {
    const int64_t pos = win.InputPos(axis, out, tap);
    count += include_pad ? pos < in_extent + win.pad_end[axis] : pos >= 0 && pos < in_extent;
  }
  return count;
}

/// 2-D pooling row by row: each output row starts as the first tap's values and takes the
/// others one window row and column at a time, over the output columns that tap reads inside
/// the input (window.h's ValidOutputs), so the inner loop has no bounds checks.
template <bool kMax, typename T>
void Pool2DRows(const KernelCall& call, const Window2D& win, bool include_pad) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const int64_t h = in.shape(2), w = in.shape(3), oh = out.shape(2), ow = out.shape(3);
  std::vector<int64_t> counted_w(static_cast<size_t>(ow));
  for (int64_t ox = 0; ox < ow; ++ox) counted_w[ox] = CountedTaps(win, 1, ox, w, include_pad);
  const T initial =
      kMax ? (std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                   : std::numeric_limits<T>::lowest())
           : T{0};
  ForEachPlane<T>(call, [&](const T* x, T* y) {
    for (int64_t oy = 0; oy < oh; ++oy) {
      T* __restrict__ out_row = y + oy * ow;
      std::fill_n(out_row, ow, initial);
      for (int64_t kh = 0; kh < win.kernel[0]; ++kh) {
        const int64_t iy = win.InputPos(0, oy, kh);
        if (iy < 0 || iy >= h) continue;
        for (int64_t kw = 0; kw < win.kernel[1]; ++kw) {
          const int64_t offset = win.InputPos(1, 0, kw);
          const Range cols = ValidOutputs(ow, win.stride[1], offset, w);
          const T* __restrict__ in_row = x + iy * w + offset;
          for (int64_t ox = cols.begin; ox < cols.end; ++ox) {
            const T value = in_row[ox * win.stride[1]];
            out_row[ox] = kMax ? std::max(out_row[ox], value) : out_row[ox] + value;
          }
        }
      }
      if constexpr (!kMax) {
        const auto rows = static_cast<T>(CountedTaps(win, 0, oy, h, include_pad));
        for (int64_t ox = 0; ox < ow; ++ox) {
          out_row[ox] /= std::max(T{1}, rows * static_cast<T>(counted_w[ox]));
        }
      }
    }
  });
}

template <int kRank, bool kMax, typename T>
void PoolOf(const KernelCall& call) {
  const Window<kRank> win = ReadWindow<kRank>(call, call.Ints("pool_size"));
  const bool include_pad = !kMax && call.Bool("count_include_pad");
  if constexpr (kRank == 2) {
    Pool2DRows<kMax, T>(call, win, include_pad);
    return;
  }
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  int64_t in_dims[kRank];
  int64_t out_dims[kRank];
  int64_t out_size = 1;
  int64_t taps = 1;
  for (int axis = 0; axis < kRank; ++axis) {
    in_dims[axis] = in.shape(2 + axis);
    out_dims[axis] = out.shape(2 + axis);
    out_size *= out_dims[axis];
    taps *= win.kernel[axis];
  }
  // Each tap's displacement per axis, computed once: the loop below only adds and compares.
  std::vector<int64_t> tap_shift(static_cast<size_t>(taps * kRank));
  for (int64_t t = 0; t < taps; ++t) {
    int64_t tap[kRank];
    Unflatten<kRank>(t, win.kernel, tap);
    for (int axis = 0; axis < kRank; ++axis) {
      tap_shift[t * kRank + axis] = tap[axis] * win.dilation[axis];
    }
  }
  ForEachPlane<T>(call, [&](const T* x, T* y) {
    int64_t position[kRank];
    int64_t origin[kRank];
    for (int64_t o = 0; o < out_size; ++o) {
      Unflatten<kRank>(o, out_dims, position);
      for (int axis = 0; axis < kRank; ++axis) origin[axis] = win.InputPos(axis, position[axis], 0);
      // Max starts below every value (integers: the lowest one; a window always holds one).
      T acc = kMax ? (std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                           : std::numeric_limits<T>::lowest())
                   : T{0};
      int64_t count = 0;
      for (int64_t t = 0; t < taps; ++t) {
        bool inside = true;
        // count_include_pad counts padding, but not window parts past it (ceil_mode).
        bool in_padded = true;
        int64_t offset = 0;
        for (int axis = 0; axis < kRank; ++axis) {
          const int64_t pos = origin[axis] + tap_shift[t * kRank + axis];
          inside = inside && pos >= 0 && pos < in_dims[axis];
          in_padded = in_padded && pos < in_dims[axis] + win.pad_end[axis];
          offset = offset * in_dims[axis] + pos;
        }
        count += (include_pad ? in_padded : inside) ? 1 : 0;
        if (!inside) continue;
        acc = kMax ? std::max(acc, x[offset]) : acc + x[offset];
      }
      y[o] = kMax ? acc : acc / static_cast<T>(std::max<int64_t>(count, 1));
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
    double sum = 0;
    for (int64_t i = 0; i < size; ++i) sum += x[i];
    *y = static_cast<float>(sum / static_cast<double>(std::max<int64_t>(size, 1)));
  });
}
KILN_CPU_KERNEL("nn.global_max_pool2d", GlobalPool2D<true>);
KILN_CPU_KERNEL("nn.global_avg_pool2d", GlobalPool2D<false>);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
