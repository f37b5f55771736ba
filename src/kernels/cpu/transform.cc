// Data movement: reshape, squeeze, unsqueeze (a copy), transpose, expand and strided_slice (a
// strided read), concatenate, split, take and nn.pad. Elements are moved as unsigned integers
// of their width, so every dtype of 1-8 bytes works without a type switch per op.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include <kiln/runtime/kernel_program.h>
#include <kiln/runtime/thread_pool.h>

#include "kernel_util.h"
#include "slice_bounds.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// The element layout does not change: the output is the input's bytes.
void CopyBytes(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  KILN_CHECK(in.NumBytes() == out.NumBytes(), ValueError)
      << call.Prefix() << "output has " << out.NumBytes() << " bytes, input " << in.NumBytes();
  if (in.data() != out.data() && in.NumBytes() > 0) {
    std::memcpy(out.data(), in.data(), in.NumBytes());
  }
}

KILN_CPU_KERNEL("reshape", CopyBytes);
KILN_CPU_KERNEL("squeeze", CopyBytes);
KILN_CPU_KERNEL("unsqueeze", CopyBytes);

/// Columns and rows of the blocks TransposedCopy moves at once: 8 x 8 elements of 4 bytes.
constexpr int64_t kBlock = 8;
using Lanes8 = uint32_t __attribute__((vector_size(kBlock * sizeof(uint32_t))));

/// The transpose of the 8 x 8 block whose row i is `rows[i]`, in place: three rounds of
/// shuffles, pairs of lanes, then pairs of pairs, then halves.
__attribute__((always_inline)) inline void Transpose8x8(Lanes8 (&rows)[kBlock]) {
  Lanes8 pairs[kBlock];
  for (int i = 0; i < kBlock; i += 2) {
    pairs[i] = __builtin_shufflevector(rows[i], rows[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    pairs[i + 1] = __builtin_shufflevector(rows[i], rows[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  Lanes8 quads[kBlock];
  for (int half = 0; half < kBlock; half += 4) {
    for (int k = 0; k < 2; ++k) {
      const Lanes8& a = pairs[half + k];
      const Lanes8& b = pairs[half + k + 2];
      quads[half + 2 * k] = __builtin_shufflevector(a, b, 0, 1, 8, 9, 4, 5, 12, 13);
      quads[half + 2 * k + 1] = __builtin_shufflevector(a, b, 2, 3, 10, 11, 6, 7, 14, 15);
    }
  }
  for (int k = 0; k < 4; ++k) {
    rows[k] = __builtin_shufflevector(quads[k], quads[k + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    rows[k + 4] = __builtin_shufflevector(quads[k], quads[k + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

/// Output rows [r0, r0 + rows) of one matrix of a transposed copy: out[r][c] = in[r + c *
/// column_stride] for c < cols, 8 x 8 blocks at a time (8 loads of 8 input elements that are
/// contiguous, 8 stores), the edges element by element.
KILN_CPU_CLONES void TransposeRows(const uint32_t* in, int64_t column_stride, int64_t r0,
                                   int64_t rows, int64_t cols, uint32_t* out) {
  const int64_t whole_cols = cols / kBlock * kBlock;
  int64_t r = r0;
  for (; r + kBlock <= r0 + rows; r += kBlock) {
    for (int64_t c = 0; c < whole_cols; c += kBlock) {
      Lanes8 block[kBlock];
      for (int64_t k = 0; k < kBlock; ++k) {
        std::memcpy(&block[k], in + r + (c + k) * column_stride, sizeof(Lanes8));
      }
      Transpose8x8(block);
      for (int64_t k = 0; k < kBlock; ++k) {
        std::memcpy(out + (r + k) * cols + c, &block[k], sizeof(Lanes8));
      }
    }
    for (int64_t k = 0; k < kBlock; ++k) {
      for (int64_t c = whole_cols; c < cols; ++c)
        out[(r + k) * cols + c] = in[r + k + c * column_stride];
    }
  }
  for (; r < r0 + rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = in[r + c * column_stride];
  }
}

/// Whether a strided read is a batch of matrix transposes: the output's last dim strided in
/// the input and the one before it contiguous there, elements of 4 bytes.
bool IsTransposedCopy(const BroadcastPlan& plan, size_t element_bytes) {
  const size_t rank = plan.shape.size();
  return element_bytes == sizeof(uint32_t) && rank >= 2 && plan.strides[0][rank - 2] == 1 &&
         plan.strides[0][rank - 1] != 1;
}

/// dst (compact) = src read through `plan` when IsTransposedCopy: each output matrix (the last
/// two dims) by blocks, bands of output rows split over the thread pool. Element by element,
/// such a copy reads each input line once per output row (NCHW to NHWC of 96 x 56 x 56 took
/// 0.1 ms, a fifth of ConvNeXt's non-GEMM time).
void TransposedCopy(const BroadcastPlan& plan, const uint32_t* src, uint32_t* dst) {
  const size_t rank = plan.shape.size();
  const int64_t rows = plan.shape[rank - 2];
  const int64_t cols = plan.shape[rank - 1];
  if (rows == 0 || cols == 0) return;  // an empty output
  const int64_t column_stride = plan.strides[0][rank - 1];
  const int64_t bands = CeilDiv(rows, kBlock);
  const int64_t matrices = plan.rows() / rows;
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(kBlock * cols, 1));
  runtime::ParallelFor(0, matrices * bands, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t matrix = task / bands;
      const int64_t r0 = task % bands * kBlock;
      // The matrix's element (0, 0) in the input; its rows are contiguous there.
      const uint32_t* in = src + plan.RowOffset(0, matrix * rows);
      TransposeRows(in, column_stride, r0, std::min(kBlock, rows - r0), cols,
                    dst + matrix * rows * cols);
    }
  });
}

/// out = in read with `strides` (per output dim) from element `offset`.
void StridedRead(const KernelCall& call, int64_t offset, const std::vector<int64_t>& strides) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const BroadcastPlan plan = PlanStrided(ShapeOf(out), {strides});
  if (IsTransposedCopy(plan, ElementBytes(in.dtype())) && in.dtype().lanes == 1) {
    TransposedCopy(plan, Data<const uint32_t>(in) + offset, Data<uint32_t>(out));
    return;
  }
  DispatchElementBytes(call, in.dtype(), [&](auto tag) {
    using U = decltype(tag);
    CopyStrided(plan, Data<const U>(in) + offset, Data<U>(out));
  });
}

void Transpose(const KernelCall& call) {
  const Tensor in = call.input(0);
  const int64_t rank = in.ndim();
  std::vector<int64_t> axes(rank);
  for (int64_t d = 0; d < rank; ++d) axes[d] = rank - 1 - d;
  if (std::optional<std::vector<int64_t>> given = call.OptionalInts("axes")) axes = *given;
  const std::vector<int64_t> in_strides = CompactStrides(ShapeOf(in));
  std::vector<int64_t> strides;
  strides.reserve(axes.size());
  for (int64_t axis : axes) strides.push_back(in_strides[call.NormalizeAxis(axis, rank)]);
  StridedRead(call, 0, strides);
}
KILN_CPU_KERNEL("transpose", Transpose);

void Expand(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const BroadcastPlan plan = PlanBroadcast(ShapeOf(out), {ShapeOf(in)});
  DispatchElementBytes(call, in.dtype(), [&](auto tag) {
    using U = decltype(tag);
    CopyStrided(plan, Data<const U>(in), Data<U>(out));
  });
}
KILN_CPU_KERNEL("expand", Expand);

/// Reads the slice of input 0 from `begin` along `axes` with `steps`; the output's shape says how
/// many elements along each axis.
void SliceFrom(const KernelCall& call, const std::vector<int64_t>& begin,
               const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  const Tensor in = call.input(0);
  const int64_t rank = in.ndim();
  const std::vector<int64_t> shape = ShapeOf(in);
  KILN_CHECK(axes.size() == begin.size() && steps.size() == begin.size(), ValueError)
      << call.Prefix() << "begin, axes and strides differ in length";
  std::vector<int64_t> strides = CompactStrides(shape);
  int64_t offset = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = call.NormalizeAxis(axes[i], rank);
    KILN_CHECK(steps[i] != 0, ValueError) << call.Prefix() << "a slice step cannot be 0";
    if (shape[axis] == 0) continue;
    offset += SliceStart(begin[i], shape[axis], steps[i]) * strides[axis];
    strides[axis] *= steps[i];
  }
  StridedRead(call, offset, strides);
}

void StridedSlice(const KernelCall& call) {
  const std::vector<int64_t> begin = call.Ints("begin");
  std::vector<int64_t> axes(begin.size());
  for (size_t i = 0; i < axes.size(); ++i) axes[i] = static_cast<int64_t>(i);
  if (std::optional<std::vector<int64_t>> given = call.OptionalInts("axes")) axes = *given;
  std::vector<int64_t> steps(begin.size(), 1);
  if (std::optional<std::vector<int64_t>> given = call.OptionalInts("strides")) steps = *given;
  SliceFrom(call, begin, axes, steps);
}
KILN_CPU_KERNEL("strided_slice", StridedSlice);

/// dynamic_slice(data, starts, axes, steps): ONNX Slice with its bounds read at run time; the
/// output was sized by slice_sizes.
void DynamicSlice(const KernelCall& call) {
  SliceFrom(call, Int64Values(call.input(1)), Int64Values(call.input(2)),
            Int64Values(call.input(3)));
}
KILN_CPU_KERNEL("dynamic_slice", DynamicSlice);

/// concatenate (inputs are the tuple's fields) and split (outputs are the pieces) both move
/// [outer, extent_i * inner] blocks between one whole tensor and its pieces along `axis`.
template <bool kConcat>
void MoveBlocks(const KernelCall& call) {
  const Tensor whole = kConcat ? call.output(0) : call.input(0);
  const size_t pieces = kConcat ? call.num_inputs() : call.num_outputs();
  const int64_t axis = call.NormalizeAxis(call.Int("axis"), whole.ndim());
  const AxisSplit split = SplitAtAxis(ShapeOf(whole), axis);
  const int64_t bytes = ElementBytes(whole.dtype());
  const int64_t whole_row = split.extent * split.inner * bytes;
  int64_t start = 0;  // bytes into a row of `whole`
  for (size_t p = 0; p < pieces; ++p) {
    const Tensor piece = kConcat ? call.input(p) : call.output(p);
    const int64_t piece_row = piece.shape(static_cast<int32_t>(axis)) * split.inner * bytes;
    auto* whole_bytes = static_cast<char*>(whole.data());
    auto* piece_bytes = static_cast<char*>(piece.data());
    runtime::ParallelFor(0, split.outer, 1, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        char* w = whole_bytes + o * whole_row + start;
        char* q = piece_bytes + o * piece_row;
        if (piece_row == 0) continue;
        if constexpr (kConcat) {
          std::memcpy(w, q, piece_row);
        } else {
          std::memcpy(q, w, piece_row);
        }
      }
    });
    start += piece_row;
  }
}
/// out[j] = clamp(in[j] * scale + bias, low, high) for j in [0, count).
KILN_CPU_CLONES void AffinePlane(const float* __restrict__ in, int64_t count, float scale,
                                 float bias, float low, float high, float* __restrict__ out) {
  for (int64_t j = 0; j < count; ++j) out[j] = Clamped(in[j] * scale + bias, low, high);
}

/// A channel concatenation of (N, C_i, H, W) float32 pieces that its kernel program merged with
/// the scale, bias and clamp after it (kiln/runtime/kernel_program.h): each plane of a piece is
/// written through them as it is copied, one pass over memory where there were up to four.
/// The pieces are the inputs before the merged ones.
void ConcatenateChannelsAffine(const KernelCall& call, int64_t scale_index, int64_t bias_index,
                               const ClampBounds& clamp) {
  const Tensor whole = call.output(0);
  constexpr DLDataType kFloat32{kDLFloat, 32, 1};
  KILN_CHECK(whole.ndim() == 4 && DataTypeEqual(whole.dtype(), kFloat32), ValueError)
      << call.Prefix() << "a scale, bias or clamp is merged only into a float32 (N, C, H, W) "
      << "output";
  // Input `index`'s one float per channel, or null when there is no such input.
  const auto per_channel = [&](int64_t index) -> const float* {
    if (index < 0) return nullptr;
    const Tensor values = call.input(static_cast<size_t>(index));
    KILN_CHECK(DataTypeEqual(values.dtype(), kFloat32) && values.NumElements() == whole.shape(1),
               ValueError)
        << call.Prefix() << "input " << index << " must hold one float32 per channel ("
        << whole.shape(1) << "), not " << values.NumElements() << " "
        << DataTypeToString(values.dtype());
    return Data<const float>(values);
  };
  const float* scale = per_channel(scale_index);
  const float* bias = per_channel(bias_index);
  size_t pieces = call.num_inputs();
  for (int64_t index : {scale_index, bias_index}) {
    if (index >= 0) pieces = std::min(pieces, static_cast<size_t>(index));
  }
  const int64_t batch = whole.shape(0);
  const int64_t channels = whole.shape(1);
  const int64_t plane = whole.shape(2) * whole.shape(3);
  // Each channel of the output: its piece's data at image 0 and that piece's channel count.
  std::vector<std::pair<const float*, int64_t>> sources;
  for (size_t p = 0; p < pieces; ++p) {
    const Tensor piece = call.input(p);
    KILN_CHECK(piece.ndim() == 4 && DataTypeEqual(piece.dtype(), kFloat32) &&
                   piece.shape(0) == batch && piece.shape(2) * piece.shape(3) == plane,
               ValueError)
        << call.Prefix() << "a scale, bias or clamp is merged only into float32 (N, C, H, W) "
        << "pieces of the output's N, H and W; piece " << p << " is "
        << DataTypeToString(piece.dtype()) << " of rank " << piece.ndim();
    for (int64_t c = 0; c < piece.shape(1); ++c) {
      sources.emplace_back(Data<const float>(piece) + c * plane, piece.shape(1));
    }
  }
  KILN_CHECK(static_cast<int64_t>(sources.size()) == channels, ValueError)
      << call.Prefix() << "the pieces have " << sources.size() << " channels, the output "
      << channels;
  float* out = Data<float>(whole);
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(plane, 1));
  runtime::ParallelFor(0, batch * channels, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / channels;
      const int64_t c = i % channels;
      const auto [first, piece_channels] = sources[static_cast<size_t>(c)];
      AffinePlane(first + n * piece_channels * plane, plane, scale != nullptr ? scale[c] : 1.F,
                  bias != nullptr ? bias[c] : 0.F, clamp.low, clamp.high, out + i * plane);
    }
  });
}

void Concatenate(const KernelCall& call) {
  const int64_t scale = call.IntOr(runtime::kEpilogueScaleAttr, -1);
  const int64_t bias = call.IntOr(runtime::kEpilogueBiasAttr, -1);
  const ClampBounds clamp = ReadMergedClamp(call);
  if (scale >= 0 || bias >= 0 || clamp.clamps()) {
    ConcatenateChannelsAffine(call, scale, bias, clamp);
  } else {
    MoveBlocks<true>(call);
  }
}
KILN_CPU_KERNEL("concatenate", Concatenate);
KILN_CPU_KERNEL("split", MoveBlocks<false>);

/// take (ONNX Gather): out[o, j, i] = data[o, indices[j], i]; negative indices count from the
/// end, others out of range are a ValueError.
void Take(const KernelCall& call) {
  const Tensor data = call.input(0);
  const Tensor indices = call.input(1);
  const Tensor out = call.output(0);
  const AxisSplit split =
      SplitAtAxis(ShapeOf(data), call.NormalizeAxis(call.Int("axis"), data.ndim()));
  const int64_t count = indices.NumElements();
  const int64_t row_bytes = split.inner * ElementBytes(data.dtype());
  DispatchDType<kI32 | kI64>(call, indices.dtype(), [&](auto tag) {
    using Index = decltype(tag);
    const Index* index = Data<const Index>(indices);
    const auto* src = static_cast<const char*>(data.data());
    auto* dst = static_cast<char*>(out.data());
    runtime::ParallelFor(0, split.outer * count, 64, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k) {
        const int64_t o = k / count;
        int64_t j = index[k % count];
        if (j < 0) j += split.extent;
        KILN_CHECK(j >= 0 && j < split.extent, ValueError)
            << call.Prefix() << "index " << index[k % count] << " is out of range for extent "
            << split.extent;
        if (row_bytes == 0) continue;
        std::memcpy(dst + k * row_bytes, src + (o * split.extent + j) * row_bytes, row_bytes);
      }
    });
  });
}
KILN_CPU_KERNEL("take", Take);

/// For each output index along one dim of nn.pad, the input index it copies, or -1 for the
/// constant.
std::vector<int64_t> PadIndexMap(int64_t extent, int64_t before, int64_t out_extent,
                                 const std::string& mode) {
  std::vector<int64_t> map(out_extent);
  for (int64_t k = 0; k < out_extent; ++k) {
    int64_t s = k - before;
    if (s < 0 || s >= extent) {
      if (mode == "edge") {
        s = std::min(std::max<int64_t>(s, 0), extent - 1);
      } else if (mode == "reflect") {
        s = s < 0 ? -s : 2 * (extent - 1) - s;
      } else {
        s = -1;
      }
    }
    map[k] = s;
  }
  return map;
}

/// Pads input 0 into output 0 by `pads` (ONNX order: begins, then ends; output 0 is sized by
/// them) in `mode`, constant padding holding `pad_value`. Pads the mode cannot fill (reflect
/// wider than extent - 1, edge of an empty dimension) are a ValueError: pads read at run time
/// were not checked by the type relation.
void PadWith(const KernelCall& call, const std::vector<int64_t>& pads, const std::string& mode,
             double pad_value) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const std::vector<int64_t> in_shape = ShapeOf(in);
  const std::vector<int64_t> out_shape = ShapeOf(out);
  const size_t rank = in_shape.size();
  KILN_CHECK(pads.size() == 2 * rank, ValueError)
      << call.Prefix() << "pads needs " << 2 * rank << " values, got " << pads.size();
  std::vector<std::vector<int64_t>> maps;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t widest = std::max(pads[d], pads[d + rank]);
    KILN_CHECK(mode != "reflect" || widest < in_shape[d] || widest <= 0, ValueError)
        << call.Prefix() << "mode 'reflect' pads dimension " << d << " of extent " << in_shape[d]
        << " by " << widest << ", more than its extent - 1";
    KILN_CHECK(mode != "edge" || in_shape[d] > 0 || widest <= 0, ValueError)
        << call.Prefix() << "mode 'edge' cannot pad the empty dimension " << d;
    KILN_CHECK(out_shape[d] == in_shape[d] + pads[d] + pads[d + rank], ValueError)
        << call.Prefix() << "the output's extent " << out_shape[d] << " along dimension " << d
        << " is not the padded " << in_shape[d] + pads[d] + pads[d + rank];
    maps.push_back(PadIndexMap(in_shape[d], pads[d], out_shape[d], mode));
  }
  const std::vector<int64_t> in_strides = CompactStrides(in_shape);
  const int64_t inner = rank == 0 ? 1 : out_shape.back();
  const int64_t rows = inner == 0 ? 0 : out.NumElements() / inner;
  DispatchDType<kAllTypes>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T value = static_cast<T>(pad_value);
    const T* x = Data<const T>(in);
    T* y = Data<T>(out);
    runtime::ParallelFor(0, rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        // Input offset of this row, or -1 when an outer index lies in constant padding.
        int64_t offset = 0;
        for (int64_t d = static_cast<int64_t>(rank) - 2, r = row; d >= 0 && offset >= 0; --d) {
          const int64_t s = maps[d][r % out_shape[d]];
          r /= out_shape[d];
          offset = s < 0 ? -1 : offset + s * in_strides[d];
        }
        T* to = y + row * inner;
        if (offset < 0) {
          std::fill_n(to, inner, value);
          continue;
        }
        if (rank == 0) {
          *to = *x;
          continue;
        }
        const std::vector<int64_t>& last = maps.back();
        for (int64_t j = 0; j < inner; ++j) to[j] = last[j] < 0 ? value : x[offset + last[j]];
      }
    });
  });
}
void Pad(const KernelCall& call) {
  PadWith(call, call.Ints("pads"), call.Str("mode"), call.Float("pad_value"));
}
KILN_CPU_KERNEL("nn.pad", Pad);

/// dynamic_pad(data, pads, value): nn.pad with the pads (int64) and the padding value (a scalar
/// of data's dtype) read at run time; the output was sized by pad_sizes.
void DynamicPad(const KernelCall& call) {
  double value = 0;
  DispatchDType<kAllTypes>(call, call.input(2).dtype(), [&](auto tag) {
    using T = decltype(tag);
    value = static_cast<double>(*Data<const T>(call.input(2)));
  });
  PadWith(call, Int64Values(call.input(1)), call.Str("mode"), value);
}
KILN_CPU_KERNEL("dynamic_pad", DynamicPad);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
