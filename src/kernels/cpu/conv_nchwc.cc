// nn.conv2d_nchwc: convolution within the channel-blocked layout (docs/design.md §48). Every
// load of data, weights and output is a vector of one pixel's 16 channels, so no lane is
// wasted whatever the plane's width, and no operand is packed per call: the weights are
// reordered into blocks once, when the program loads.
#include <kiln/ir/channel_blocks.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

#include "gemm.h"
#include "kernel_util.h"
#include "window.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

using ir::ChannelBlocks;
constexpr int64_t kB = ir::kChannelBlock;

/// One pixel's block of channels (GCC's vector extension: one AVX-512 register). Functions
/// passing it by value are all inlined, so the baseline ABI's way of passing it never applies.
#pragma GCC diagnostic ignored "-Wpsabi"
using Lanes = float __attribute__((vector_size(kB * sizeof(float))));

__attribute__((always_inline)) inline Lanes LoadLanes(const float* from) {
  Lanes lanes;
  std::memcpy(&lanes, from, sizeof(Lanes));
  return lanes;
}

__attribute__((always_inline)) inline void StoreLanes(float* to, const Lanes& lanes) {
  std::memcpy(to, &lanes, sizeof(Lanes));
}

/// One image's geometry: data (in_blocks, h, w, 16), output (out_blocks, oh, ow, 16).
struct BlockedConv {
  int64_t in_blocks, h, w, out_blocks, oh, ow;
  Window2D win;

  int64_t in_image() const { return in_blocks * h * w * kB; }
  int64_t out_plane() const { return oh * ow * kB; }
  /// Floats of the packed weights per output block (dense: all input blocks and taps).
  int64_t weight_block() const { return in_blocks * win.kernel[0] * win.kernel[1] * kB * kB; }
  /// [begin, end) of the output columns whose every tap reads inside the row.
  Range InteriorColumns() const {
    const int64_t last_tap = (win.kernel[1] - 1) * win.dilation[1];
    const Range first = ValidOutputs(ow, win.stride[1], -win.pad_begin[1], w);
    const Range last = ValidOutputs(ow, win.stride[1], last_tap - win.pad_begin[1], w);
    return {first.begin, std::max(first.begin, last.end)};
  }
};

/// What a stored vector gets, in registers: the bias its accumulators started from, then the
/// residual and the clamp; then, over each stored tile, GELU, SiLU or hard-swish.
struct BlockEpilogue {
  const float* bias;
  const float* residual;  ///< the image's, in the output's layout, or null
  Lanes low;
  Lanes high;
  bool clamps;
  GemmEpilogue activation;  ///< only its activation flags
  bool activates;

  explicit BlockEpilogue(const GemmEpilogue& epilogue)
      : bias(epilogue.row_bias),
        residual(epilogue.residual),
        low(Lanes{} + epilogue.clamp.low),
        high(Lanes{} + epilogue.clamp.high),
        clamps(epilogue.clamp.clamps()),
        activates(epilogue.gelu || epilogue.silu || epilogue.hardswish) {
    activation.gelu = epilogue.gelu;
    activation.silu = epilogue.silu;
    activation.hardswish = epilogue.hardswish;
  }

  __attribute__((always_inline)) Lanes Start(int64_t block) const {
    return bias != nullptr ? LoadLanes(bias + block * kB) : Lanes{};
  }

  /// Stores `sum` at out[offset], the output's offset within the image.
  __attribute__((always_inline)) void Store(Lanes sum, int64_t offset, float* out) const {
    if (residual != nullptr) sum += LoadLanes(residual + offset);
    if (clamps) {
      sum = sum < low ? low : sum;
      sum = sum > high ? high : sum;
    }
    StoreLanes(out + offset, sum);
  }

  /// The activation over `pixels` stored pixels from out[offset].
  void Finish(float* out, int64_t offset, int64_t pixels) const {
    if (activates) activation.Apply(0, 1, 0, pixels * kB, out + offset, pixels * kB);
  }
};

/// Output pixels per dense tile with kOB output blocks: kPix x kOB accumulators, 24 of
/// AVX-512's 32 registers, the rest for the weights and a broadcast input.
template <int kOB>
constexpr int kDensePixels = kOB == 4   ? 6
                             : kOB == 3 ? 8
                             : kOB == 2 ? 12
                                        : 24;
constexpr int kMaxOutBlocks = 4;

/// A dense tile: output pixels [ox, ox + kPix) of row oy times output blocks
/// [ob, ob + kOB). `w` is the packed weights ([out block][in block][kh][kw][16 in][16 out]).
/// The pixels of an inner tile are kStride input pixels apart from a base; an edge tile (or
/// one of another stride) reads each pixel through its own pointer, a vector of zeros where the
/// tap falls in the padding.
template <int kPix, int kOB, int kStride>
__attribute__((always_inline)) inline void DenseTile(const BlockedConv& g, const float* in,
                                                     const float* w, const BlockEpilogue& ep,
                                                     int64_t oy, int64_t ox, int64_t ob, bool edge,
                                                     float* out) {
  static const float kZeros[kB] = {};
  const Window2D& win = g.win;
  const int64_t taps_w = win.kernel[1];
  const int64_t ob_stride = g.weight_block();
  Lanes acc[kPix][kOB];
  for (int j = 0; j < kOB; ++j) {
    const Lanes start = ep.Start(ob + j);
    for (int p = 0; p < kPix; ++p) acc[p][j] = start;
  }
  for (int64_t ib = 0; ib < g.in_blocks; ++ib) {
    for (int64_t kh = 0; kh < win.kernel[0]; ++kh) {
      const int64_t iy = win.InputPos(0, oy, kh);
      if (iy < 0 || iy >= g.h) continue;
      const float* row = in + (ib * g.h + iy) * g.w * kB;
      for (int64_t kw = 0; kw < taps_w; ++kw) {
        const float* wk = w + ob * ob_stride + ((ib * win.kernel[0] + kh) * taps_w + kw) * kB * kB;
        if (edge) {
          const float* pixel[kPix];
          for (int p = 0; p < kPix; ++p) {
            const int64_t ix = win.InputPos(1, ox + p, kw);
            pixel[p] = ix >= 0 && ix < g.w ? row + ix * kB : kZeros;
          }
          for (int64_t l = 0; l < kB; ++l) {
            Lanes wv[kOB];
            for (int j = 0; j < kOB; ++j) wv[j] = LoadLanes(wk + j * ob_stride + l * kB);
            for (int p = 0; p < kPix; ++p) {
              const Lanes x = pixel[p][l] - Lanes{};  // a broadcast: x - (+0) is x
              for (int j = 0; j < kOB; ++j) acc[p][j] += x * wv[j];
            }
          }
          continue;
        }
        const float* base = row + win.InputPos(1, ox, kw) * kB;
#pragma GCC unroll 4
        for (int64_t l = 0; l < kB; ++l) {
          Lanes wv[kOB];
          for (int j = 0; j < kOB; ++j) wv[j] = LoadLanes(wk + j * ob_stride + l * kB);
          for (int p = 0; p < kPix; ++p) {
            const Lanes x = base[int64_t{p} * kStride * kB + l] - Lanes{};
            for (int j = 0; j < kOB; ++j) acc[p][j] += x * wv[j];
          }
        }
      }
    }
  }
  const int64_t first = (oy * g.ow + ox) * kB;
  for (int j = 0; j < kOB; ++j) {
    for (int p = 0; p < kPix; ++p)
      ep.Store(acc[p][j], (ob + j) * g.out_plane() + first + p * kB, out);
    ep.Finish(out, (ob + j) * g.out_plane() + first, kPix);
  }
}

/// DenseTile of `pixels` (1..kMax) pixels.
template <int kOB, int kStride, int... kN>
__attribute__((always_inline)) inline void DenseTileOf(int64_t pixels, bool edge,
                                                       const BlockedConv& g, const float* in,
                                                       const float* w, const BlockEpilogue& ep,
                                                       int64_t oy, int64_t ox, int64_t ob,
                                                       float* out,
                                                       std::integer_sequence<int, kN...> /*n*/) {
  ((pixels == kN + 1 ? DenseTile<kN + 1, kOB, kStride>(g, in, w, ep, oy, ox, ob, edge, out)
                     : void()),
   ...);
}

/// Output columns [x0, x1) of row oy for output blocks [ob, ob + kOB).
template <int kOB, int kStride>
__attribute__((always_inline)) inline void DenseColumns(const BlockedConv& g, const float* in,
                                                        const float* w, const BlockEpilogue& ep,
                                                        int64_t oy, int64_t x0, int64_t x1,
                                                        int64_t ob, float* out) {
  constexpr int kPix = kDensePixels<kOB>;
  const Range inside = g.InteriorColumns();
  const bool any_stride = g.win.stride[1] != kStride;
  for (int64_t ox = x0; ox < x1; ox += kPix) {
    const int64_t pixels = std::min<int64_t>(kPix, x1 - ox);
    const bool edge = any_stride || ox < inside.begin || ox + pixels > inside.end;
    if (pixels == kPix && !edge) {
      DenseTile<kPix, kOB, kStride>(g, in, w, ep, oy, ox, ob, false, out);
    } else {
      DenseTileOf<kOB, kStride>(pixels, edge, g, in, w, ep, oy, ox, ob, out,
                                std::make_integer_sequence<int, kPix>());
    }
  }
}

/// A dense task: output columns [x0, x1) of row oy, output blocks [ob, ob + blocks).
__attribute__((always_inline)) inline void DenseTask(const BlockedConv& g, const float* in,
                                                     const float* w, const BlockEpilogue& ep,
                                                     int64_t oy, int64_t x0, int64_t x1, int64_t ob,
                                                     int64_t blocks, float* out) {
  const bool stride2 = g.win.stride[1] == 2;
  switch (blocks * 2 + (stride2 ? 1 : 0)) {
    case 8: DenseColumns<4, 1>(g, in, w, ep, oy, x0, x1, ob, out); break;
    case 9: DenseColumns<4, 2>(g, in, w, ep, oy, x0, x1, ob, out); break;
    case 6: DenseColumns<3, 1>(g, in, w, ep, oy, x0, x1, ob, out); break;
    case 7: DenseColumns<3, 2>(g, in, w, ep, oy, x0, x1, ob, out); break;
    case 4: DenseColumns<2, 1>(g, in, w, ep, oy, x0, x1, ob, out); break;
    case 5: DenseColumns<2, 2>(g, in, w, ep, oy, x0, x1, ob, out); break;
    case 3: DenseColumns<1, 2>(g, in, w, ep, oy, x0, x1, ob, out); break;
    default: DenseColumns<1, 1>(g, in, w, ep, oy, x0, x1, ob, out); break;
  }
}

/// Output pixels per depthwise tile: each tap's weight vector loaded once for them.
constexpr int kDepthwisePixels = 8;

/// A depthwise tile: output pixels [ox, ox + kPix) of row oy of one block; `in` and `w` are
/// the block's plane and taps ([kh][kw][16]). kK and kS, when not 0, are the window's extent
/// and stride (dilation 1), fixed so that neighbouring taps share their loads; an edge tile
/// skips taps in the padding.
template <int kK, int kS, int kPix>
__attribute__((always_inline)) inline void DepthwiseTile(const BlockedConv& g, const float* in,
                                                         const float* w, const BlockEpilogue& ep,
                                                         int64_t block, int64_t oy, int64_t ox,
                                                         bool edge, float* out) {
  const Window2D& win = g.win;
  const int64_t taps_h = kK != 0 ? kK : win.kernel[0];
  const int64_t taps_w = kK != 0 ? kK : win.kernel[1];
  Lanes acc[kPix];
  const Lanes start = ep.Start(block);
  for (int p = 0; p < kPix; ++p) acc[p] = start;
  for (int64_t kh = 0; kh < taps_h; ++kh) {
    const int64_t iy = win.InputPos(0, oy, kh);
    if (iy < 0 || iy >= g.h) continue;
    const float* row = in + iy * g.w * kB;
    for (int64_t kw = 0; kw < taps_w; ++kw) {
      const Lanes tap = LoadLanes(w + (kh * taps_w + kw) * kB);
      for (int p = 0; p < kPix; ++p) {
        const int64_t ix =
            kK != 0 ? (ox + p) * kS - win.pad_begin[1] + kw : win.InputPos(1, ox + p, kw);
        if (edge && (ix < 0 || ix >= g.w)) continue;
        acc[p] += LoadLanes(row + ix * kB) * tap;
      }
    }
  }
  const int64_t first = block * g.out_plane() + (oy * g.ow + ox) * kB;
  for (int p = 0; p < kPix; ++p) ep.Store(acc[p], first + p * kB, out);
  ep.Finish(out, first, kPix);
}

template <int kK, int kS, int... kN>
__attribute__((always_inline)) inline void DepthwiseTileOf(int64_t pixels, const BlockedConv& g,
                                                           const float* in, const float* w,
                                                           const BlockEpilogue& ep, int64_t block,
                                                           int64_t oy, int64_t ox, float* out,
                                                           std::integer_sequence<int, kN...>) {
  ((pixels == kN + 1 ? DepthwiseTile<kK, kS, kN + 1>(g, in, w, ep, block, oy, ox, false, out)
                     : void()),
   ...);
}

/// Row oy of one block: edge pixels one at a time, the inside in tiles.
template <int kK, int kS>
__attribute__((always_inline)) inline void DepthwiseRow(const BlockedConv& g, const float* in,
                                                        const float* w, const BlockEpilogue& ep,
                                                        int64_t block, int64_t oy, float* out) {
  const Range inside = kK != 0 ? g.InteriorColumns() : Range{0, 0};
  int64_t ox = 0;
  for (; ox < inside.begin; ++ox) DepthwiseTile<kK, kS, 1>(g, in, w, ep, block, oy, ox, true, out);
  for (; ox + kDepthwisePixels <= inside.end; ox += kDepthwisePixels) {
    DepthwiseTile<kK, kS, kDepthwisePixels>(g, in, w, ep, block, oy, ox, false, out);
  }
  if (ox < inside.end) {
    DepthwiseTileOf<kK, kS>(inside.end - ox, g, in, w, ep, block, oy, ox, out,
                            std::make_integer_sequence<int, kDepthwisePixels - 1>());
    ox = inside.end;
  }
  for (; ox < g.ow; ++ox) DepthwiseTile<kK, kS, 1>(g, in, w, ep, block, oy, ox, true, out);
}

/// A depthwise task: row oy of one block (`in` and `w` that block's).
__attribute__((always_inline)) inline void DepthwiseTask(const BlockedConv& g, const float* in,
                                                         const float* w, const BlockEpilogue& ep,
                                                         int64_t block, int64_t oy, float* out) {
  const Window2D& win = g.win;
  const bool square = win.kernel[0] == win.kernel[1] && win.stride[0] == win.stride[1] &&
                      win.dilation[0] == 1 && win.dilation[1] == 1;
  const int64_t key = square ? win.kernel[0] * 10 + win.stride[0] : 0;
  switch (key) {
    case 31: DepthwiseRow<3, 1>(g, in, w, ep, block, oy, out); break;
    case 32: DepthwiseRow<3, 2>(g, in, w, ep, block, oy, out); break;
    case 51: DepthwiseRow<5, 1>(g, in, w, ep, block, oy, out); break;
    case 52: DepthwiseRow<5, 2>(g, in, w, ep, block, oy, out); break;
    case 71: DepthwiseRow<7, 1>(g, in, w, ep, block, oy, out); break;
    default: DepthwiseRow<0, 0>(g, in, w, ep, block, oy, out); break;
  }
}

/// The tasks compiled for AVX-512 and for the x86-64 baseline, chosen once per process. (GCC's
/// target_clones expanded each broadcast of the tiles into 16 masked ones.)
struct BlockedTasks {
  void (*dense)(const BlockedConv&, const float*, const float*, const BlockEpilogue&, int64_t,
                int64_t, int64_t, int64_t, int64_t, float*);
  void (*depthwise)(const BlockedConv&, const float*, const float*, const BlockEpilogue&, int64_t,
                    int64_t, float*);
};

#define KILN_BLOCKED_TASKS(Attributes, Suffix)                                                   \
  Attributes void DenseTask##Suffix(const BlockedConv& g, const float* in, const float* w,       \
                                    const BlockEpilogue& ep, int64_t oy, int64_t x0, int64_t x1, \
                                    int64_t ob, int64_t blocks, float* out) {                    \
    DenseTask(g, in, w, ep, oy, x0, x1, ob, blocks, out);                                        \
  }                                                                                              \
  Attributes void DepthwiseTask##Suffix(const BlockedConv& g, const float* in, const float* w,   \
                                        const BlockEpilogue& ep, int64_t block, int64_t oy,      \
                                        float* out) {                                            \
    DepthwiseTask(g, in, w, ep, block, oy, out);                                                 \
  }

KILN_BLOCKED_TASKS(, Baseline)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define KILN_BLOCKED_AVX512 1
KILN_BLOCKED_TASKS(__attribute__((target("arch=x86-64-v4"))), Avx512)
#endif
#undef KILN_BLOCKED_TASKS

const BlockedTasks& SelectTasks() {
  static const BlockedTasks tasks = [] {
#ifdef KILN_BLOCKED_AVX512
    if (CpuHasX86_64V4()) return BlockedTasks{DenseTaskAvx512, DepthwiseTaskAvx512};
#endif
    return BlockedTasks{DenseTaskBaseline, DepthwiseTaskBaseline};
  }();
  return tasks;
}

/// Output blocks per dense task: groups of kMaxOutBlocks, the remainder spread so that no
/// group is much narrower than the others (6 blocks: 3 + 3, not 4 + 2).
int64_t OutBlocksPerTask(int64_t out_blocks) {
  const int64_t groups = CeilDiv(out_blocks, kMaxOutBlocks);
  return CeilDiv(out_blocks, groups);
}

void DenseConv(const BlockedConv& image, int64_t images, const float* x, const float* w,
               const GemmEpilogue& epilogue, float* y) {
  // A 1x1 window at stride 1 without padding reads its plane as one long row.
  const Window2D& win = image.win;
  const bool pointwise = win.kernel[0] == 1 && win.kernel[1] == 1 && win.stride[0] == 1 &&
                         win.stride[1] == 1 && win.pad_begin[0] == 0 && win.pad_begin[1] == 0 &&
                         win.pad_end[0] == 0 && win.pad_end[1] == 0;
  BlockedConv g = image;
  if (pointwise) {
    g.w = g.h * g.w;
    g.h = 1;
    g.ow = g.oh * g.ow;
    g.oh = 1;
  }
  const int64_t per_task = OutBlocksPerTask(g.out_blocks);
  const int64_t groups = CeilDiv(g.out_blocks, per_task);
  // Columns per task: a row, or in a flattened plane runs of four tiles.
  const int64_t run =
      pointwise ? int64_t{4} * kDensePixels<kMaxOutBlocks> : std::max<int64_t>(1, g.ow);
  const int64_t runs = CeilDiv(g.ow, run);
  const int64_t out_image = g.out_blocks * g.out_plane();
  runtime::ParallelFor(0, images * groups * g.oh * runs, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t x0 = t % runs * run;
      const int64_t oy = t / runs % g.oh;
      const int64_t group = t / runs / g.oh % groups;
      const int64_t n = t / runs / g.oh / groups;
      GemmEpilogue shifted = epilogue;
      if (shifted.residual != nullptr) shifted.residual += n * out_image;
      const int64_t ob = group * per_task;
      SelectTasks().dense(g, x + n * g.in_image(), w, BlockEpilogue(shifted), oy, x0,
                          std::min(x0 + run, g.ow), ob, std::min(per_task, g.out_blocks - ob),
                          y + n * out_image);
    }
  });
}

void DepthwiseConv(const BlockedConv& g, int64_t images, const float* x, const float* w,
                   const GemmEpilogue& epilogue, float* y) {
  const int64_t taps = g.win.kernel[0] * g.win.kernel[1];
  const int64_t plane = g.h * g.w * kB;
  const int64_t out_image = g.out_blocks * g.out_plane();
  runtime::ParallelFor(0, images * g.out_blocks * g.oh, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t oy = t % g.oh;
      const int64_t block = t / g.oh % g.out_blocks;
      const int64_t n = t / g.oh / g.out_blocks;
      GemmEpilogue shifted = epilogue;
      if (shifted.residual != nullptr) shifted.residual += n * out_image;
      SelectTasks().depthwise(g, x + n * g.in_image() + block * plane, w + block * taps * kB,
                              BlockEpilogue(shifted), block, oy, y + n * out_image);
    }
  });
}

bool IsDepthwise(const Tensor& weight, int64_t groups) {
  return groups > 1 && weight.shape(1) == 1 && groups == weight.shape(0);
}

/// Floats of an OIHW weight in blocks.
int64_t PackedWeightFloats(const Tensor& weight, int64_t groups) {
  const int64_t taps = weight.shape(2) * weight.shape(3);
  const int64_t out_blocks = ChannelBlocks(weight.shape(0));
  if (IsDepthwise(weight, groups)) return out_blocks * taps * kB;
  return out_blocks * ChannelBlocks(weight.shape(1)) * taps * kB * kB;
}

/// An OIHW weight in blocks, zero past the channels: depthwise [block][kh][kw][16], dense
/// [out block][in block][kh][kw][16 in][16 out].
void PackWeight(const Tensor& weight, int64_t groups, float* packed) {
  const auto* from = Data<const float>(weight);
  const int64_t out_channels = weight.shape(0);
  const int64_t in_channels = weight.shape(1);
  const int64_t taps = weight.shape(2) * weight.shape(3);
  std::fill_n(packed, PackedWeightFloats(weight, groups), 0.F);
  if (IsDepthwise(weight, groups)) {
    for (int64_t o = 0; o < out_channels; ++o) {
      for (int64_t t = 0; t < taps; ++t) {
        packed[(o / kB * taps + t) * kB + o % kB] = from[o * taps + t];
      }
    }
    return;
  }
  const int64_t in_blocks = ChannelBlocks(in_channels);
  for (int64_t o = 0; o < out_channels; ++o) {
    for (int64_t i = 0; i < in_channels; ++i) {
      for (int64_t t = 0; t < taps; ++t) {
        packed[((o / kB * in_blocks + i / kB) * taps + t) * kB * kB + i % kB * kB + o % kB] =
            from[(o * in_channels + i) * taps + t];
      }
    }
  }
}

std::optional<Tensor> PrepackConv2DNchwc(size_t index, const Tensor& weight,
                                         const KernelCall& call) {
  if (index != 1 || weight.dtype().code != kDLFloat || weight.dtype().bits != 32) {
    return std::nullopt;
  }
  const int64_t groups = call.Int("groups");
  Tensor packed = NewPackedTensor(PackedWeightFloats(weight, groups));
  PackWeight(weight, groups, Data<float>(packed));
  return packed;
}
KILN_CPU_PREPACK("nn.conv2d_nchwc", PrepackConv2DNchwc);

void Conv2DNchwc(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor data = call.input(0);
  const Tensor weight = call.input(1);
  const Tensor out = call.output(0);
  const int64_t groups = call.Int("groups");
  const BlockedConv g{data.shape(1),
                      data.shape(2),
                      data.shape(3),
                      out.shape(1),
                      out.shape(2),
                      out.shape(3),
                      ReadWindow(call, weight.shape(2), weight.shape(3))};
  std::optional<Tensor> packed = call.PrepackedTensor(1);
  if (!packed.has_value()) {
    packed = NewPackedTensor(PackedWeightFloats(weight, groups));
    PackWeight(weight, groups, Data<float>(*packed));
  }
  const GemmEpilogue epilogue = ReadMergedEpilogue(call, /*bias_per_row=*/true, 0);
  const auto* x = Data<const float>(data);
  const auto* w = Data<const float>(*packed);
  auto* y = Data<float>(out);
  if (IsDepthwise(weight, groups)) {
    DepthwiseConv(g, data.shape(0), x, w, epilogue, y);
  } else {
    DenseConv(g, data.shape(0), x, w, epilogue, y);
  }
}
KILN_CPU_KERNEL("nn.conv2d_nchwc", Conv2DNchwc);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
