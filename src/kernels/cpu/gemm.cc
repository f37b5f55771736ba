// Blocked GEMM in the Goto/BLIS scheme: A is packed once per call into MR-tall strips, each
// task packs the depth blocks of its column block of B into NR-wide strips (a panel that stays
// in L2 while every row of the task multiplies it), and a register-tiled MR x NR micro-kernel,
// written as plain loops the compiler vectorizes, walks the packed strips. Packing makes every
// inner loop contiguous whatever the operands' strides (transposes are free) and pads edges
// with zeros; a strip's last rows run on a tile of exactly that height, so only columns (vector
// lanes) are ever wasted. GemmTransposedOutput is the same product with A packed per task and
// the result transposed into C, for products whose columns would waste lanes and whose rows
// would not (docs/design.md §31).
#include "gemm.h"

#include <kiln/runtime/fast_math.h>

#include <kiln/runtime/kernel_program.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

constexpr int64_t kKC = 256;  // depth block: an MR strip of A and NR strip of B stay in L1
constexpr int64_t kMC = 144;  // rows of C per micro-kernel sweep (a multiple of every MR below)
constexpr int64_t kNC = 256;  // most columns of C per task (a multiple of every NR below)

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// A vector of W floats (GCC/Clang vector extensions). Spelled per width: the attribute takes
/// no template-dependent size.
template <int64_t W>
struct FloatVector;
template <>
struct FloatVector<4> {
  typedef float Type __attribute__((vector_size(16)));  // NOLINT(modernize-use-using)
};
template <>
struct FloatVector<8> {
  typedef float Type __attribute__((vector_size(32)));  // NOLINT(modernize-use-using)
};
template <>
struct FloatVector<16> {
  typedef float Type __attribute__((vector_size(64)));  // NOLINT(modernize-use-using)
};

/// Writes the transpose of the 4 x 4 block whose row r starts at rows[r] (contiguous) to
/// `out`, its row q at out + q * out_stride, or adds it to what `out` holds (`adds`).
inline void Transpose4x4(const float* const rows[4], float* out, int64_t out_stride,
                         bool adds = false) {
  using Float4 = FloatVector<4>::Type;
  Float4 r[4];
  for (int i = 0; i < 4; ++i) std::memcpy(&r[i], rows[i], sizeof(Float4));
  const Float4 low01 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5);
  const Float4 high01 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
  const Float4 low23 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5);
  const Float4 high23 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
  const Float4 columns[4] = {__builtin_shufflevector(low01, low23, 0, 1, 4, 5),
                             __builtin_shufflevector(low01, low23, 2, 3, 6, 7),
                             __builtin_shufflevector(high01, high23, 0, 1, 4, 5),
                             __builtin_shufflevector(high01, high23, 2, 3, 6, 7)};
  for (int q = 0; q < 4; ++q) {
    Float4 column = columns[q];
    if (adds) {
      Float4 held;
      std::memcpy(&held, out + q * out_stride, sizeof(Float4));
      column += held;
    }
    std::memcpy(out + q * out_stride, &column, sizeof(Float4));
  }
}

/// panel[p * kWidth + j] = src[p * depth_stride + j] for p < depth, j < kWidth.
template <int64_t kWidth>
KILN_CPU_CLONES void CopyLines(const float* src, int64_t depth_stride, int64_t depth,
                               float* __restrict__ panel) {
  for (int64_t p = 0; p < depth; ++p) {
    std::memcpy(panel + p * kWidth, src + p * depth_stride, kWidth * sizeof(float));
  }
}

/// Packs a depth x `width` panel, depth-major ([depth][width]): element (p, j) of the operand
/// is src[p * depth_stride + j * index_stride], for j < count; columns [count, width) are zero.
/// A strip of A takes rows as j, a strip of B columns. Contiguous j (the common B, and A
/// transposed) copies whole lines; contiguous depth (the common A, and B transposed) is
/// transposed 4 x 4 blocks at a time; otherwise each j is read along its depth.
void PackPanel(const float* src, int64_t depth_stride, int64_t index_stride, int64_t depth,
               int64_t count, int64_t width, float* __restrict__ panel) {
  if (index_stride == 1 && count == width) {
    switch (width) {  // the tile widths: each line a few vector moves, not a library call
      case 8: return CopyLines<8>(src, depth_stride, depth, panel);
      case 16: return CopyLines<16>(src, depth_stride, depth, panel);
      case 32: return CopyLines<32>(src, depth_stride, depth, panel);
      default: break;
    }
  }
  if (index_stride == 1) {
    for (int64_t p = 0; p < depth; ++p) {
      std::memcpy(panel + p * width, src + p * depth_stride, count * sizeof(float));
      std::fill(panel + p * width + count, panel + (p + 1) * width, 0.F);
    }
    return;
  }
  int64_t j = 0;
  if (depth_stride == 1) {
    for (; j + 4 <= count; j += 4) {
      const float* lines[4] = {src + j * index_stride, src + (j + 1) * index_stride,
                               src + (j + 2) * index_stride, src + (j + 3) * index_stride};
      int64_t p = 0;
      for (; p + 4 <= depth; p += 4) {
        const float* block[4] = {lines[0] + p, lines[1] + p, lines[2] + p, lines[3] + p};
        Transpose4x4(block, panel + p * width + j, width);
      }
      for (; p < depth; ++p) {
        for (int i = 0; i < 4; ++i) panel[p * width + j + i] = lines[i][p];
      }
    }
  }
  for (; j < count; ++j) {
    const float* line = src + j * index_stride;
    for (int64_t p = 0; p < depth; ++p) panel[p * width + j] = line[p * depth_stride];
  }
  for (int64_t p = 0; count < width && p < depth; ++p) {
    std::fill(panel + p * width + count, panel + (p + 1) * width, 0.F);
  }
}

/// Where a micro-kernel reads element (p, col) of its B strip: a packed strip, rows NR floats
/// apart...
template <int64_t NR>
struct PackedStrip {
  const float* b;
  const float* At(int64_t p, int64_t col) const { return b + p * NR + col; }
};
/// ... two packed strips side by side, as one twice as wide (`col` is a constant once the
/// micro-kernel's loops are unrolled, so the choice costs nothing)...
template <int64_t NR>
struct PackedStripPair {
  const float* left;
  const float* right;
  const float* At(int64_t p, int64_t col) const {
    return col < NR ? left + p * NR + col : right + p * NR + col - NR;
  }
};
/// ... or rows of an operand read in place (GatheredRows), from the strip's first column; its
/// rows are contiguous, so a strip of any width.
struct GatheredStrip {
  const float* base;
  const int64_t* row_offsets;
  const float* At(int64_t p, int64_t col) const { return base + row_offsets[p] + col; }
};

/// Asks for the cache lines of `count` floats from `first`, to be written. A store that misses
/// waits for its line; writing a large output, whose lines are often in no cache (last written a
/// run ago), over many rows at once, misses that often. Asked for ahead, the misses overlap
/// with the work before the stores (design §37).
__attribute__((always_inline)) inline void PrefetchForWrite(const float* first, int64_t count) {
  constexpr int64_t kFloatsPerLine = 64 / sizeof(float);
  if (count <= 0) return;
  for (int64_t j = 0; j < count; j += kFloatsPerLine) __builtin_prefetch(first + j, /*rw=*/1);
  __builtin_prefetch(first + count - 1, /*rw=*/1);  // a last line that the steps above skip
}

/// Clamped, lane by lane (in place: a vector returned by value from a function compiled for
/// the baseline ISA would change the ABI).
template <typename Vec>
__attribute__((always_inline)) inline void ClampLanes(Vec& value, float low, float high) {
  const Vec lows = low - Vec{};
  const Vec highs = high - Vec{};
  value = lows < value ? value : lows;    // std::max(low, value)
  value = value < highs ? value : highs;  // std::min(high, value)
}
/// x * clamp(x / 6 + 1 / 2, 0, 1).
inline float HardSwish(float value) {
  return value * std::min(1.F, std::max(0.F, value / 6.F + 0.5F));
}

/// The parts of a GemmEpilogue that a micro-kernel applies to its tile as it stores the last
/// depth block's sums: the rows' biases, the clamp and hardswish, which read nothing but the tile.
/// C is then written once, where GemmEpilogue::Apply would read it back and write it again: a
/// convolution over few channels writes a large output for little arithmetic (design §36: 1x1
/// convolutions from 16 to 112 channels took 0.48-0.78 of their time).
struct TileStore {
  const float* row_bias;  ///< the block's, from its first row; or null
  bool clamps;
  float low, high;
  bool hardswish;
};

/// The rows of A a GEMM block multiplies: packed (PackGemmA's strips, `row_stride` 0), or read
/// in place from a row-major matrix, rows `row_stride` floats apart, from the block's first row
/// and depth. Packing A is a pass over it that a product with few columns of B to share each
/// strip among does not repay.
struct BlockA {
  const float* data;
  int64_t row_stride;
};

/// Where a micro-kernel reads element (p, i) of its A strip: packed, MR rows side by side at each
/// depth...
template <int64_t MR>
struct PackedStripA {
  const float* a;
  float At(int64_t p, int64_t i) const { return a[p * MR + i]; }
  /// The strip's MR rows at depth p, contiguous.
  const float* Column(int64_t p) const { return a + p * MR; }
};
/// ... or rows of a row-major matrix.
struct RowMajorStripA {
  const float* a;
  int64_t row_stride;
  float At(int64_t p, int64_t i) const { return a[i * row_stride + p]; }
};
/// The strips of a block's A, by first row.
template <int64_t MR>
struct PackedRowsOfA {
  const float* a;
  int64_t kc;
  PackedStripA<MR> Strip(int64_t i) const { return {a + i * kc}; }
};
struct RowMajorA {
  const float* a;
  int64_t row_stride;
  RowMajorStripA Strip(int64_t i) const { return {a + i * row_stride, row_stride}; }
};

/// Stores the first `nr` columns of a tile (kRows x kVecs vectors) to C, rows `ldc` apart: = or
/// += `acc`, then `store`'s parts (GemmEpilogue::Apply's order), vector by vector. Written
/// element by element, the same stores compiled to `rep movs`, whose start-up took a quarter of
/// a shallow product's time (3136 x 64 by 64 x 256, `perf annotate`).
template <int64_t kRows, int64_t kVecs, typename Vec, int64_t kSlots>
__attribute__((always_inline)) inline void StoreTile(const Vec (&acc)[kRows][kSlots],
                                                     float* __restrict__ c, int64_t ldc, int64_t nr,
                                                     bool accumulate, const TileStore* store,
                                                     int64_t row) {
  static_assert(kVecs <= kSlots, "a tile's vectors are in its accumulators");
  constexpr int64_t W = sizeof(Vec) / sizeof(float);
  for (int64_t i = 0; i < kRows; ++i) {
    const float row_bias =
        store != nullptr && store->row_bias != nullptr ? store->row_bias[row + i] : 0.F;
    for (int64_t v = 0; v < kVecs && v * W < nr; ++v) {
      float* out = c + i * ldc + v * W;
      const int64_t lanes = std::min(W, nr - v * W);
      Vec value = acc[i][v];
      if (accumulate) {
        Vec old;
        if (lanes == W) {
          std::memcpy(&old, out, sizeof(Vec));
        } else {
          LoadFirstLanes(old, out, lanes);
        }
        value = old + value;
      }
      if (store != nullptr) {
        value += row_bias;
        if (store->clamps) ClampLanes(value, store->low, store->high);
        if (store->hardswish) {
          Vec gate = value / 6.F + 0.5F;
          ClampLanes(gate, 0.F, 1.F);
          value *= gate;
        }
      }
      if (lanes == W) {
        std::memcpy(out, &value, sizeof(Vec));
      } else {
        StoreFirstLanes(out, value, lanes);
      }
    }
  }
}

/// C tile (mr x nr valid of kRows x NR) = or += A strip x B strip, with
/// accumulators in vectors of W floats (GCC/Clang vector extensions: one register each on the
/// ISA the caller is compiled for, so the tile is sized per ISA below). A strip's last rows are
/// computed by a tile of kRows < MR rows, so that they cost what they hold rather than a whole
/// strip of zeros. Element (i, j) of the tile lands at c[i * ldc + j].
template <int64_t kRows, int64_t NR, int64_t W, typename StripA, typename Strip>
__attribute__((always_inline)) inline void MicroKernel(int64_t kc, const StripA& a, const Strip& b,
                                                       float* __restrict__ c, int64_t ldc,
                                                       int64_t nr, bool accumulate,
                                                       const TileStore* store, int64_t row) {
  using Vec = typename FloatVector<W>::Type;
  static_assert(sizeof(Vec) == W * sizeof(float) && NR % W == 0, "a tile row is whole vectors");
  constexpr int64_t kVecs = NR / W;
  Vec acc[kRows][kVecs] = {};
  // The first depth block writes the tile whole; its lines arrive during the multiply-adds.
  if (!accumulate) {
    for (int64_t i = 0; i < kRows; ++i) PrefetchForWrite(c + i * ldc, nr);
  }
  for (int64_t p = 0; p < kc; ++p) {
    Vec row[kVecs];
    for (int64_t v = 0; v < kVecs; ++v) std::memcpy(&row[v], b.At(p, v * W), sizeof(Vec));
    for (int64_t i = 0; i < kRows; ++i) {
      const Vec ai = a.At(p, i) - Vec{};  // a broadcast: x - (+0) is x, unlike x + 0
      for (int64_t v = 0; v < kVecs; ++v) acc[i][v] += ai * row[v];
    }
  }
  StoreTile<kRows, kVecs>(acc, c, ldc, nr, accumulate, store, row);
}

/// Stores one element of C as StoreTile does: = or += `value`, then `store`'s parts.
inline void StoreElement(float value, float* out, bool accumulate, const TileStore* store,
                         float row_bias) {
  if (accumulate) value += *out;
  if (store != nullptr) {
    value += row_bias;
    if (store->clamps) value = std::min(store->high, std::max(store->low, value));
    if (store->hardswish) value = HardSwish(value);
  }
  *out = value;
}

/// One depth of TailedMicroKernel: `rows` holds A's strip at depth p.
template <int64_t kRows, int64_t kVecs, int64_t kTail, int64_t W, typename Strip, typename Vec,
          int64_t kSlots>
__attribute__((always_inline)) inline void TailedDepth(int64_t p, const Vec& rows,
                                                       const PackedStripA<kRows>& a, const Strip& b,
                                                       Vec (&acc)[kRows][kSlots],
                                                       Vec (&tail)[kTail]) {
  Vec line[kSlots];
  for (int64_t v = 0; v < kVecs; ++v) std::memcpy(&line[v], b.At(p, v * W), sizeof(Vec));
  for (int64_t i = 0; i < kRows; ++i) {
    const Vec ai = a.At(p, i) - Vec{};
    for (int64_t v = 0; v < kVecs; ++v) acc[i][v] += ai * line[v];
  }
  for (int64_t t = 0; t < kTail; ++t) tail[t] += rows * (*b.At(p, kVecs * W + t) - Vec{});
}

/// A tile of a whole packed strip of A (kRows = MR rows) whose B strip has kVecs whole vectors
/// of columns and then kTail more (kTail < MR). MicroKernel would give the tail columns a
/// vector per row, MR multiply-adds per depth for kTail useful lanes; here each tail column is
/// one vector along the rows (A's strip, packed MR to a depth, times B's element broadcast),
/// kTail multiply-adds per depth. Output planes of 7 x 7, 14 x 14 or 55 x 55 pixels leave such
/// tails (1, 4 and 17 columns past whole strips); on 1x1 convolutions onto them the GEMM took
/// 0.84-0.91 of its time (design §47).
template <int64_t kRows, int64_t kVecs, int64_t kTail, int64_t W, typename Strip>
__attribute__((always_inline)) inline void TailedMicroKernel(int64_t kc,
                                                             const PackedStripA<kRows>& a,
                                                             const Strip& b, float* __restrict__ c,
                                                             int64_t ldc, bool accumulate,
                                                             const TileStore* store, int64_t row) {
  using Vec = typename FloatVector<W>::Type;
  static_assert(kRows <= W && kTail > 0 && kTail < kRows, "the tail's rows fill one vector");
  constexpr int64_t kWidth = kVecs * W + kTail;
  Vec acc[kRows][kVecs > 0 ? kVecs : 1] = {};
  Vec tail[kTail] = {};
  if (!accumulate) {
    for (int64_t i = 0; i < kRows; ++i) PrefetchForWrite(c + i * ldc, kWidth);
  }
  // A whole vector from a depth's rows reads W - kRows floats of the next depth (lanes whose
  // products are never stored); the last depth reads only its own.
  Vec rows;
  for (int64_t p = 0; p + 1 < kc; ++p) {
    std::memcpy(&rows, a.Column(p), sizeof(Vec));
    TailedDepth<kRows, kVecs, kTail, W>(p, rows, a, b, acc, tail);
  }
  rows = Vec{};
  std::memcpy(&rows, a.Column(kc - 1), kRows * sizeof(float));
  TailedDepth<kRows, kVecs, kTail, W>(kc - 1, rows, a, b, acc, tail);
  StoreTile<kRows, kVecs>(acc, c, ldc, kWidth, accumulate, store, row);
  for (int64_t t = 0; t < kTail; ++t) {
    float lanes[W];
    std::memcpy(lanes, &tail[t], sizeof(Vec));
    for (int64_t i = 0; i < kRows; ++i) {
      const float row_bias =
          store != nullptr && store->row_bias != nullptr ? store->row_bias[row + i] : 0.F;
      StoreElement(lanes[i], c + i * ldc + kVecs * W + t, accumulate, store, row_bias);
    }
  }
}

/// The tile of a whole packed strip of A and a B strip of kVecs whole vectors and then
/// `tail` columns, by TailedMicroKernel; false if `tail` is none of the kTails + 1.
template <int64_t MR, int64_t kVecs, int64_t W, typename Strip, int64_t... kTails>
__attribute__((always_inline)) inline bool TailedTile(std::integer_sequence<int64_t, kTails...>,
                                                      int64_t tail, int64_t kc,
                                                      const PackedStripA<MR>& a, const Strip& b,
                                                      float* c, int64_t ldc, bool accumulate,
                                                      const TileStore* store, int64_t row) {
  return ((tail == kTails + 1 &&
           (TailedMicroKernel<MR, kVecs, kTails + 1, W>(kc, a, b, c, ldc, accumulate, store, row),
            true)) ||
          ...);
}

/// The tile of a whole strip of A and a B strip of `nr` < NR columns: TailedMicroKernel when A
/// is packed and the columns past whole vectors are at most MR / 2 (more, and their
/// broadcasts and element stores cost what the lanes save: Winograd's 3x3 over 13 x 13 planes,
/// 8 past a vector, took 1.05 of the time); else a tile of the vectors the strip needs.
template <int64_t MR, int64_t NR, int64_t W, typename StripA, typename Strip>
__attribute__((always_inline)) inline void NarrowStripTile(int64_t kc, const StripA& a,
                                                           const Strip& b, float* c, int64_t ldc,
                                                           int64_t nr, bool accumulate,
                                                           const TileStore* store, int64_t row) {
  static_assert(NR == 2 * W, "a B strip of two vectors: a tail after none or one");
  if constexpr (std::is_same_v<StripA, PackedStripA<MR>> && MR <= W) {
    const auto tails = std::make_integer_sequence<int64_t, MR / 2>();
    if (nr < W ? TailedTile<MR, 0, W>(tails, nr, kc, a, b, c, ldc, accumulate, store, row)
               : TailedTile<MR, 1, W>(tails, nr - W, kc, a, b, c, ldc, accumulate, store, row)) {
      return;
    }
  }
  if (nr <= W) {
    MicroKernel<MR, W, W>(kc, a, b, c, ldc, nr, accumulate, store, row);
  } else {
    MicroKernel<MR, NR, W>(kc, a, b, c, ldc, nr, accumulate, store, row);
  }
}

/// The strip of A's last `rows` rows (fewer than MR), with a tile of exactly that many rows.
template <int64_t NR, int64_t W, typename StripA, typename Strip, int64_t... kRows>
__attribute__((always_inline)) inline void PartialStrip(
    std::integer_sequence<int64_t, kRows...> /*tile heights*/, int64_t rows, int64_t kc,
    const StripA& a, const Strip& b, float* c, int64_t ldc, int64_t nr, bool accumulate,
    const TileStore* store, int64_t row) {
  (void)((rows == kRows + 1 &&
          (MicroKernel<kRows + 1, NR, W>(kc, a, b, c, ldc, nr, accumulate, store, row), true)) ||
         ...);
}

/// Strip j (its first column) of a block's B: a packed panel's, or rows read in place.
template <int64_t NR>
PackedStrip<NR> StripOf(const float* panel, int64_t j, int64_t kc) {
  return {panel + j * kc};
}
template <int64_t NR>
GatheredStrip StripOf(const GatheredRows& rows, int64_t j, int64_t /*kc*/) {
  return {rows.base + j, rows.row_offsets};
}
/// Strips j and j + NR as one.
template <int64_t NR>
PackedStripPair<NR> StripPairOf(const float* panel, int64_t j, int64_t kc) {
  return {panel + j * kc, panel + (j + NR) * kc};
}
template <int64_t NR>
GatheredStrip StripPairOf(const GatheredRows& rows, int64_t j, int64_t kc) {
  return StripOf<NR>(rows, j, kc);
}

/// C block (rows x cols) = or += packed A block x B (a packed panel of the block's columns, or
/// GatheredRows from the block's first column), with the MR x NR tile of one ISA; `c` points at
/// the block's (0, 0). `store`, if any, is applied to every tile as it is stored (the caller
/// passes it with the last depth block only).
///
/// A strip's last rows, when there are at most kPairRows of them, take two strips of B at once
/// (tiles of rows x 2 NR): a tile of few rows has too few accumulators to hide the multiply-adds'
/// latency, and reads a B vector for every few of them. A recurrent layer's steps and a decoder's
/// tokens are such products (design §36: 0.73-0.92 of the time on AVX-512). kPairRows is 0 where
/// the registers would not hold twice the accumulators.
template <int64_t MR, int64_t NR, int64_t W, int64_t kPairRows, typename B, typename RowsOfA>
__attribute__((always_inline)) inline void MultiplyBlockOf(const RowsOfA& a, B panel, int64_t rows,
                                                           int64_t cols, int64_t kc, float* c,
                                                           int64_t ldc, bool accumulate,
                                                           const TileStore* store) {
  const int64_t full_rows = rows / MR * MR;
  const int64_t last_rows = rows - full_rows;
  // Columns whose last rows go by strip pairs; an odd last strip goes alone.
  int64_t paired_cols = 0;
  if constexpr (kPairRows > 0) {
    if (last_rows > 0 && last_rows <= kPairRows) {
      paired_cols = std::min(cols, (cols + NR - 1) / NR / 2 * 2 * NR);
    }
  }
  const auto tile_at = [&](int64_t i, int64_t j) { return c + i * ldc + j; };
  for (int64_t j = 0; j < cols; j += NR) {
    const int64_t nr = std::min(NR, cols - j);
    const auto b = StripOf<NR>(panel, j, kc);
    for (int64_t i = 0; i < full_rows; i += MR) {
      if (nr < NR) {
        NarrowStripTile<MR, NR, W>(kc, a.Strip(i), b, tile_at(i, j), ldc, nr, accumulate, store, i);
      } else {
        MicroKernel<MR, NR, W>(kc, a.Strip(i), b, tile_at(i, j), ldc, nr, accumulate, store, i);
      }
    }
    if (last_rows == 0 || j < paired_cols) continue;  // none, or in a pair below
    PartialStrip<NR, W>(std::make_integer_sequence<int64_t, MR - 1>(), last_rows, kc,
                        a.Strip(full_rows), b, tile_at(full_rows, j), ldc, nr, accumulate, store,
                        full_rows);
  }
  if constexpr (kPairRows > 0) {
    for (int64_t j = 0; j < paired_cols; j += 2 * NR) {
      const int64_t nr = std::min(2 * NR, cols - j);
      PartialStrip<2 * NR, W>(std::make_integer_sequence<int64_t, kPairRows>(), last_rows, kc,
                              a.Strip(full_rows), StripPairOf<NR>(panel, j, kc),
                              tile_at(full_rows, j), ldc, nr, accumulate, store, full_rows);
    }
  }
}

template <int64_t MR, int64_t NR, int64_t W, int64_t kPairRows, typename B>
__attribute__((always_inline)) inline void MultiplyBlock(BlockA a, B panel, int64_t rows,
                                                         int64_t cols, int64_t kc, float* c,
                                                         int64_t ldc, bool accumulate,
                                                         const TileStore* store) {
  if (a.row_stride == 0) {
    MultiplyBlockOf<MR, NR, W, kPairRows>(PackedRowsOfA<MR>{a.data, kc}, panel, rows, cols, kc, c,
                                          ldc, accumulate, store);
  } else {
    MultiplyBlockOf<MR, NR, W, kPairRows>(RowMajorA{a.data, a.row_stride}, panel, rows, cols, kc, c,
                                          ldc, accumulate, store);
  }
}

using BlockFn = void (*)(BlockA, const float*, int64_t, int64_t, int64_t, float*, int64_t, bool,
                         const TileStore*);
using GatheredBlockFn = void (*)(BlockA, GatheredRows, int64_t, int64_t, int64_t, float*, int64_t,
                                 bool, const TileStore*);

/// One ISA's tile and its block loops (B packed, and read in place), compiled for that ISA.
struct GemmKernel {
  int64_t mr;
  int64_t nr;
  BlockFn multiply_block;
  GatheredBlockFn multiply_block_gathered;
};

// Tiles fill the vector registers without spilling: the baseline's 16 SSE registers hold 6x8
// accumulators (12) plus a B row and a broadcast; AVX2's 16 hold 6x16 (12 ymm); AVX-512's 32
// hold 12x32 (24 zmm). The kernel library builds for the x86-64 baseline (design §15), so the
// wider ones are compiled with target attributes and picked at run time from the CPU's
// features. Clang (the sanitizer build) gets the baseline only.
template <typename B>
void MultiplyBlockBaseline(BlockA a, B b, int64_t rows, int64_t cols, int64_t kc, float* c,
                           int64_t ldc, bool accumulate, const TileStore* store) {
  MultiplyBlock<6, 8, 4, 0>(a, b, rows, cols, kc, c, ldc, accumulate, store);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define KILN_GEMM_WIDE_KERNELS 1
template <typename B>
__attribute__((target("arch=x86-64-v3"))) void MultiplyBlockAvx2(BlockA a, B b, int64_t rows,
                                                                 int64_t cols, int64_t kc, float* c,
                                                                 int64_t ldc, bool accumulate,
                                                                 const TileStore* store) {
  MultiplyBlock<6, 16, 8, 0>(a, b, rows, cols, kc, c, ldc, accumulate, store);
}

template <typename B>
__attribute__((target("arch=x86-64-v4"))) void MultiplyBlockAvx512(BlockA a, B b, int64_t rows,
                                                                   int64_t cols, int64_t kc,
                                                                   float* c, int64_t ldc,
                                                                   bool accumulate,
                                                                   const TileStore* store) {
  MultiplyBlock<12, 32, 16, 6>(a, b, rows, cols, kc, c, ldc, accumulate, store);
}
#endif

/// The two block loops of one ISA's MultiplyBlock function template.
#define KILN_GEMM_KERNEL(mr, nr, fn) \
  GemmKernel { mr, nr, fn<const float*>, fn<GatheredRows> }

const GemmKernel& SelectKernel() {
  static const GemmKernel kernel = [] {
#ifdef KILN_GEMM_WIDE_KERNELS
    if (CpuHasX86_64V4()) return KILN_GEMM_KERNEL(12, 32, MultiplyBlockAvx512);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      return KILN_GEMM_KERNEL(6, 16, MultiplyBlockAvx2);
    }
#endif
    return KILN_GEMM_KERNEL(6, 8, MultiplyBlockBaseline);
  }();
  return kernel;
}

/// How C is cut into tasks: blocks along the axis whose operand each task packs itself (B's
/// columns in Gemm, A's rows in GemmTransposedOutput), at most `limit` long and a multiple of
/// that axis's tile extent; split further along the other axis only when there are fewer
/// blocks than threads.
struct TaskGrid {
  int64_t block;   ///< extent of a block (a multiple of `unit`)
  int64_t blocks;  ///< ceil(extent / block)
  int64_t group;   ///< extent of a group along the other axis (a multiple of `other_unit`)
  int64_t groups;  ///< ceil(other / group)

  TaskGrid(int64_t extent, int64_t limit, int64_t unit, int64_t other, int64_t other_unit) {
    const int64_t threads = runtime::NumThreads();
    blocks = CeilDiv(extent, limit);
    // A multiple of the thread count when there are several blocks, so no thread idles at
    // the end; equal blocks.
    if (blocks > 1) blocks = RoundUp(blocks, threads);
    block = RoundUp(CeilDiv(extent, blocks), unit);
    blocks = CeilDiv(extent, block);
    const int64_t strips = CeilDiv(other, other_unit);
    groups = std::min(strips, blocks >= threads ? 1 : CeilDiv(threads, blocks));
    group = CeilDiv(strips, groups) * other_unit;
    groups = CeilDiv(other, group);
  }
};

/// Scratch for packed operands, which packing overwrites whole: a zero-filled vector would
/// write every float twice.
std::unique_ptr<float[]> UninitializedFloats(int64_t count) {
  return std::unique_ptr<float[]>(new float[static_cast<size_t>(count)]);
}

/// Packs every depth block of an operand into `width`-wide strips of `count` indices (rows of
/// A, columns of B): depth block d starts at d * kKC * RoundUp(count, width), its strip s at
/// s * width * kc. Element (p, j) is src[p * depth_stride + j * index_stride].
void PackOperand(const float* src, int64_t depth_stride, int64_t index_stride, int64_t count,
                 int64_t depth, int64_t width, float* packed) {
  const int64_t strips = CeilDiv(count, width);
  runtime::ParallelFor(0, CeilDiv(depth, kKC) * strips, 4, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t p0 = task / strips * kKC;
      const int64_t j0 = task % strips * width;
      const int64_t kc = std::min(kKC, depth - p0);
      PackPanel(src + p0 * depth_stride + j0 * index_stride, depth_stride, index_stride, kc,
                std::min(width, count - j0), width, packed + p0 * strips * width + j0 * kc);
    }
  });
}

}  // namespace

int64_t PackedGemmASize(int64_t m, int64_t k) { return RoundUp(m, SelectKernel().mr) * k; }

int64_t PackedGemmBSize(int64_t k, int64_t n) { return RoundUp(n, SelectKernel().nr) * k; }

void PackGemmA(int64_t m, int64_t k, const MatrixView& a, float* packed) {
  PackOperand(a.data, a.col_stride, a.row_stride, m, k, SelectKernel().mr, packed);
}

void PackGemmB(int64_t k, int64_t n, const MatrixView& b, float* packed) {
  PackOperand(b.data, b.row_stride, b.col_stride, n, k, SelectKernel().nr, packed);
}

Tensor NewPackedTensor(int64_t size) {
  return runtime::Empty({size}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
}

bool GemmEpilogue::active() const {
  return row_bias != nullptr || col_bias != nullptr || residual != nullptr || clamp.clamps() ||
         gelu || silu || hardswish || tile != nullptr;
}

namespace {

/// One line of C through the epilogue; `col_bias` and `residual` start at the line's first
/// column (or are null). Each part is its own loop so that each vectorizes.
KILN_CPU_CLONES void ApplyToLine(const GemmEpilogue& epilogue, float* __restrict__ line,
                                 int64_t cols, float row_bias, const float* __restrict__ col_bias,
                                 const float* __restrict__ residual) {
  if (row_bias != 0.F) {
    for (int64_t j = 0; j < cols; ++j) line[j] += row_bias;
  }
  if (col_bias != nullptr) {
    for (int64_t j = 0; j < cols; ++j) line[j] += col_bias[j];
  }
  if (residual != nullptr) {
    for (int64_t j = 0; j < cols; ++j) line[j] += residual[j];
  }
  if (epilogue.clamp.clamps()) {
    const float low = epilogue.clamp.low;
    const float high = epilogue.clamp.high;
    for (int64_t j = 0; j < cols; ++j) line[j] = Clamped(line[j], low, high);
  }
  if (epilogue.gelu) {
    for (int64_t j = 0; j < cols; ++j) {
      line[j] = 0.5F * line[j] * (1.F + kiln_fast_erff(line[j] * static_cast<float>(M_SQRT1_2)));
    }
  }
  if (epilogue.silu) {
    for (int64_t j = 0; j < cols; ++j) line[j] = line[j] / (1.F + kiln_fast_expf(-line[j]));
  }
  if (epilogue.hardswish) {
    for (int64_t j = 0; j < cols; ++j) line[j] = HardSwish(line[j]);
  }
}

}  // namespace

void GemmEpilogue::Apply(int64_t row0, int64_t rows, int64_t col0, int64_t cols, float* c,
                         int64_t ldc) const {
  // C already holds the product there: adding it as the residual would double it.
  KILN_CHECK(residual == nullptr || residual + row0 * residual_ld + col0 != c, InternalError)
      << "a GEMM epilogue's residual is its output: the path must add its product into the "
         "output (Gemm) or read a copy of the residual (ResidualOutsideC)";
  for (int64_t i = 0; i < rows; ++i) {
    ApplyToLine(*this, c + i * ldc, cols, row_bias != nullptr ? row_bias[row0 + i] : 0.F,
                col_bias != nullptr ? col_bias + col0 : nullptr,
                residual != nullptr ? residual + (row0 + i) * residual_ld + col0 : nullptr);
  }
  if (tile != nullptr) {
    const int64_t bounds[5] = {tile_image, row0 + tile_row_offset, rows, col0, cols};
    const int64_t* first = tile_image >= 0 ? bounds : bounds + 1;
    if (tile->fn(first, tile->closure) != 0) detail::ThrowRaised();
  }
}

ResidualOutsideC::ResidualOutsideC(const GemmEpilogue& epilogue, const float* c, int64_t rows,
                                   int64_t cols, int64_t ldc)
    : epilogue_(epilogue) {
  if (epilogue.residual != c || rows == 0 || cols == 0) return;
  const int64_t floats = (rows - 1) * ldc + cols;
  copy_ = NewPackedTensor(floats);
  std::copy_n(c, floats, Data<float>(copy_));
  epilogue_.residual = Data<const float>(copy_);
}

bool TakeResidualInC(GemmEpilogue& epilogue, const float* c, int64_t ldc) {
  if (epilogue.residual != c) return false;
  KILN_CHECK(epilogue.residual_ld == ldc, InternalError)
      << "a GEMM's residual at C's address with rows " << epilogue.residual_ld << " apart, C's "
      << ldc;
  epilogue.residual = nullptr;
  return true;
}

GemmEpilogue ReadMergedEpilogue(const KernelCall& call, bool bias_per_row, int64_t residual_ld) {
  GemmEpilogue epilogue;
  const int64_t bias = call.IntOr(runtime::kEpilogueBiasAttr, -1);
  if (bias >= 0) {
    (bias_per_row ? epilogue.row_bias : epilogue.col_bias) = Data<const float>(call.input(bias));
  }
  const int64_t residual = call.IntOr(runtime::kEpilogueResidualAttr, -1);
  if (residual >= 0) {
    epilogue.residual = Data<const float>(call.input(residual));
    epilogue.residual_ld = residual_ld;
  }
  epilogue.clamp = ReadMergedClamp(call);
  epilogue.gelu = call.BoolOr(runtime::kEpilogueGeluAttr, false);
  epilogue.silu = call.BoolOr(runtime::kEpilogueSiluAttr, false);
  epilogue.hardswish = call.BoolOr(runtime::kEpilogueHardSwishAttr, false);
  return epilogue;
}

namespace {

/// Packs columns [first, first + count) (count <= width) of depth rows [0, kc) of gathered
/// rows into one `width`-wide strip, the columns past `count` zero.
void PackGatheredStrip(const GatheredRows& rows, int64_t kc, int64_t first, int64_t count,
                       int64_t width, float* strip) {
  for (int64_t p = 0; p < kc; ++p) {
    std::copy_n(rows.base + rows.row_offsets[p] + first, count, strip + p * width);
    std::fill(strip + p * width + count, strip + (p + 1) * width, 0.F);
  }
}

/// A product of depth 0, `rows` x `cols` as stored (rows `ldc` apart): zeros, then `epilogue`.
void StoreEmptyProduct(int64_t rows, int64_t cols, float* c, int64_t ldc,
                       const GemmEpilogue& epilogue) {
  const ResidualOutsideC outside(epilogue, c, rows, cols, ldc);
  for (int64_t i = 0; i < rows; ++i) std::fill_n(c + i * ldc, cols, 0.F);
  if (epilogue.active()) outside.epilogue().Apply(0, rows, 0, cols, c, ldc);
}

/// Copies the kept columns of a block of a product whose columns are wide rows
/// (GemmEpilogue::narrow_width) into C, or adds them to it (`adds`): `block` holds rows x cols
/// of the product's columns [col0, col0 + cols), rows `cols` apart; `c` is C's first row of the
/// block. Returns C's first column written and the count (they are contiguous).
std::pair<int64_t, int64_t> NarrowBlock(const float* block, int64_t rows, int64_t col0,
                                        int64_t cols, const GemmEpilogue& epilogue, bool adds,
                                        float* c, int64_t ldc) {
  const int64_t width = epilogue.narrow_width;
  const int64_t valid = epilogue.narrow_valid;
  const auto kept = [&](int64_t column) {  // C's columns before product column `column`
    return column / width * valid + std::min(column % width, valid);
  };
  for (int64_t j = col0; j < col0 + cols; j = (j / width + 1) * width) {
    const int64_t end = std::min(col0 + cols, j / width * width + valid);
    for (int64_t i = 0; j < end && i < rows; ++i) {
      if (i + 1 < rows) PrefetchForWrite(c + (i + 1) * ldc + kept(j), end - j);  // the next row's
      const float* from = block + i * cols + j - col0;
      float* to = c + i * ldc + kept(j);
      if (adds) {
        for (int64_t q = 0; q < end - j; ++q) to[q] += from[q];
      } else {
        std::copy(from, from + end - j, to);
      }
    }
  }
  return {kept(col0), kept(col0 + cols) - kept(col0)};
}

}  // namespace

void Gemm(int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b, float* c,
          int64_t ldc, const GemmEpilogue& merged) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    StoreEmptyProduct(m, n, c, ldc, merged);
    return;
  }
  // A residual that is C is added from the first depth block on (narrowed blocks as they are
  // narrowed into C).
  GemmEpilogue epilogue = merged;
  const bool adds_to_c = TakeResidualInC(epilogue, c, ldc);
  const bool has_epilogue = epilogue.active();
  const GemmKernel& kernel = SelectKernel();
  const int64_t nr = kernel.nr;
  const int64_t m_pad = RoundUp(m, kernel.mr);
  const int64_t n_pad = RoundUp(n, nr);
  const TaskGrid plan(n, kNC, nr, m, kernel.mr);  // column blocks, row groups
  // Packing A is a pass over it that pays when each strip of A then meets many strips of B.
  // With at most two, a row-major A is read in place (BlockA; design §39: products of 64 columns
  // took 0.72-0.96 of the time); any other is packed once for all the tasks.
  std::unique_ptr<float[]> own_a;
  const float* packed_a = a.packed;
  // (A row stride of 0, one row broadcast to all, would read as packed.)
  const bool a_in_place =
      packed_a == nullptr && a.view.col_stride == 1 && a.view.row_stride > 0 && n <= 2 * nr;
  if (packed_a == nullptr && !a_in_place) {
    own_a = UninitializedFloats(PackedGemmASize(m, k));
    PackGemmA(m, k, a.view, own_a.get());
    packed_a = own_a.get();
  }
  const auto block_a = [&](int64_t p0, int64_t kc, int64_t row0) {
    return a_in_place ? BlockA{a.view.data + row0 * a.view.row_stride + p0, a.view.row_stride}
                      : BlockA{packed_a + p0 * m_pad + row0 * kc, 0};
  };
  const bool narrows = epilogue.narrow_width > 0;
  // An epilogue of nothing but row biases, a clamp and hardswish is applied by the micro-kernel
  // as it stores the last depth block (TileStore); in product columns when narrowing, as none
  // of them depends on the column.
  // Not when a narrowed product is added into C: the sum must come before the clamp.
  const bool stores_epilogue = has_epilogue && epilogue.col_bias == nullptr &&
                               epilogue.residual == nullptr && !epilogue.gelu && !epilogue.silu &&
                               epilogue.tile == nullptr && !(narrows && adds_to_c);
  // Tasks are column-block-major: a chunk holding several row groups of one column block
  // packs its panel of B once.
  runtime::ParallelFor(0, plan.blocks * plan.groups, 1, [&](int64_t begin, int64_t end) {
    const int64_t panel_columns = b.packed != nullptr          ? 0
                                  : b.gathered.base != nullptr ? nr
                                                               : plan.block;
    const std::unique_ptr<float[]> own_panel =
        UninitializedFloats(panel_columns * std::min(k, kKC));
    // A narrowed product's block, stored whole and narrowed into C after its last depth block.
    const std::unique_ptr<float[]> product =
        UninitializedFloats(narrows ? std::min(m, (end - begin) * plan.group) * plan.block : 0);
    for (int64_t first = begin; first < end;) {
      const int64_t block = first / plan.groups;
      const int64_t last = std::min(end, (block + 1) * plan.groups);
      const int64_t col0 = block * plan.block;
      const int64_t cols = std::min(plan.block, n - col0);
      const int64_t row_begin = first % plan.groups * plan.group;
      const int64_t row_end = std::min(m, (last - block * plan.groups) * plan.group);
      const int64_t block_ld = narrows ? cols : ldc;
      for (int64_t p0 = 0; p0 < k; p0 += kKC) {
        const int64_t kc = std::min(kKC, k - p0);
        const bool last_depth = p0 + kc == k;
        const bool accumulate = p0 > 0 || (adds_to_c && !narrows);
        // Multiplies the task's rows by this depth block of B, through
        // `multiply(a, rows, c, store)`.
        const auto multiply_rows = [&](const auto& multiply) {
          for (int64_t row0 = row_begin; row0 < row_end; row0 += kMC) {
            const int64_t rows = std::min(kMC, row_end - row0);
            float* c_block =
                narrows ? product.get() + (row0 - row_begin) * cols : c + row0 * ldc + col0;
            const TileStore store{epilogue.row_bias != nullptr ? epilogue.row_bias + row0 : nullptr,
                                  epilogue.clamp.clamps(), epilogue.clamp.low, epilogue.clamp.high,
                                  epilogue.hardswish};
            multiply(block_a(p0, kc, row0), rows, c_block,
                     stores_epilogue && last_depth ? &store : nullptr);
            if (has_epilogue && !stores_epilogue && !narrows && last_depth) {
              epilogue.Apply(row0, rows, col0, cols, c_block, ldc);
            }
          }
        };
        if (b.gathered.base != nullptr) {
          // Whole strips read in place; a last partial strip packed, so no load reads past it.
          const GatheredRows block_b{b.gathered.base + col0, b.gathered.row_offsets + p0};
          const int64_t in_place = cols / nr * nr;
          if (in_place < cols) {
            PackGatheredStrip(block_b, kc, in_place, cols - in_place, nr, own_panel.get());
          }
          multiply_rows([&](BlockA rows_a, int64_t rows, float* c_block, const TileStore* store) {
            kernel.multiply_block_gathered(rows_a, block_b, rows, in_place, kc, c_block, block_ld,
                                           accumulate, store);
            kernel.multiply_block(rows_a, own_panel.get(), rows, cols - in_place, kc,
                                  c_block + in_place, block_ld, accumulate, store);
          });
          continue;
        }
        const float* panel = own_panel.get();
        if (b.packed != nullptr) {
          panel = b.packed + p0 * n_pad + col0 * kc;
        } else if (b.packer != nullptr) {
          (*b.packer)(p0, kc, col0, cols, nr, own_panel.get());
        } else {
          for (int64_t j = 0; j < cols; j += nr) {
            PackPanel(b.view.data + p0 * b.view.row_stride + (col0 + j) * b.view.col_stride,
                      b.view.row_stride, b.view.col_stride, kc, std::min(nr, cols - j), nr,
                      &own_panel[j * kc]);
          }
        }
        multiply_rows([&](BlockA rows_a, int64_t rows, float* c_block, const TileStore* store) {
          kernel.multiply_block(rows_a, panel, rows, cols, kc, c_block, block_ld, accumulate,
                                store);
        });
      }
      if (narrows) {  // while the block is in cache
        const int64_t rows = row_end - row_begin;
        const auto [kept_col0, kept_cols] = NarrowBlock(product.get(), rows, col0, cols, epilogue,
                                                        adds_to_c, c + row_begin * ldc, ldc);
        if (has_epilogue && !stores_epilogue && kept_cols > 0) {
          epilogue.Apply(row_begin, rows, kept_col0, kept_cols, c + row_begin * ldc + kept_col0,
                         ldc);
        }
      }
      first = last;
    }
  });
}

namespace {

/// Packs rows [row0, row0 + rows) x depth [p0, p0 + kc) of A into `mr`-wide strips.
void PackRowsOfA(const GemmOperand& a, int64_t p0, int64_t kc, int64_t row0, int64_t rows,
                 int64_t mr, float* panel) {
  if (a.packer != nullptr) {
    (*a.packer)(p0, kc, row0, rows, mr, panel);
    return;
  }
  const MatrixView& view = a.view;
  for (int64_t i = 0; i < rows; i += mr) {
    PackPanel(view.data + (row0 + i) * view.row_stride + p0 * view.col_stride, view.col_stride,
              view.row_stride, kc, std::min(mr, rows - i), mr, panel + i * kc);
  }
}

/// out[j * ldo + i] = in[i * ldi + j] for i < rows, j < cols, or += when `adds`: 4 x 4 blocks
/// through registers, the edges one element at a time.
void TransposeInto(const float* in, int64_t rows, int64_t cols, int64_t ldi, float* out,
                   int64_t ldo, bool adds) {
  const auto put = [adds](float& to, float value) { to = adds ? to + value : value; };
  int64_t i = 0;
  for (; i + 4 <= rows; i += 4) {
    int64_t j = 0;
    for (; j + 4 <= cols; j += 4) {
      const float* block[4] = {in + i * ldi + j, in + (i + 1) * ldi + j, in + (i + 2) * ldi + j,
                               in + (i + 3) * ldi + j};
      Transpose4x4(block, out + j * ldo + i, ldo, adds);
    }
    for (; j < cols; ++j) {
      for (int64_t r = i; r < i + 4; ++r) put(out[j * ldo + r], in[r * ldi + j]);
    }
  }
  for (; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) put(out[j * ldo + i], in[i * ldi + j]);
  }
}

}  // namespace

void GemmTransposedOutput(int64_t m, int64_t n, int64_t k, const GemmOperand& a,
                          const GemmOperand& b, float* c, int64_t ldc, const GemmEpilogue& merged) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    StoreEmptyProduct(n, m, c, ldc, merged);  // C as stored: n x m
    return;
  }
  GemmEpilogue epilogue = merged;
  const bool adds_to_c = TakeResidualInC(epilogue, c, ldc);  // added as C is transposed there
  const bool has_epilogue = epilogue.active();
  const GemmKernel& kernel = SelectKernel();
  const int64_t n_pad = RoundUp(n, kernel.nr);
  std::unique_ptr<float[]> own_b;
  const float* packed_b = b.packed;
  if (packed_b == nullptr) {
    own_b = UninitializedFloats(PackedGemmBSize(k, n));
    PackGemmB(k, n, b.view, own_b.get());
    packed_b = own_b.get();
  }
  const TaskGrid plan(m, kMC, kernel.mr, n, kernel.nr);  // row blocks, column groups
  // One row block split into column groups (a 7 x 7 plane's pixels): its A is packed once, by
  // depth blocks in parallel, rather than by every group.
  const int64_t m_pad = RoundUp(m, kernel.mr);
  std::unique_ptr<float[]> shared_a;
  if (plan.blocks == 1 && plan.groups > 1) {
    shared_a = UninitializedFloats(m_pad * k);
    runtime::ParallelFor(0, CeilDiv(k, kKC), 1, [&](int64_t begin, int64_t end) {
      for (int64_t p0 = begin * kKC; p0 < std::min(k, end * kKC); p0 += kKC) {
        PackRowsOfA(a, p0, std::min(kKC, k - p0), 0, m, kernel.mr, shared_a.get() + p0 * m_pad);
      }
    });
  }
  runtime::ParallelFor(0, plan.blocks * plan.groups, 1, [&](int64_t begin, int64_t end) {
    const std::unique_ptr<float[]> panel =
        UninitializedFloats(shared_a ? 0 : plan.block * std::min(k, kKC));
    // The block's product, stored as is (the tiles' stores are whole vectors) and transposed
    // into C once, after the last depth block.
    const std::unique_ptr<float[]> product = UninitializedFloats(plan.block * plan.group);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t row0 = task / plan.groups * plan.block;
      const int64_t rows = std::min(plan.block, m - row0);
      const int64_t col0 = task % plan.groups * plan.group;
      const int64_t cols = std::min(plan.group, n - col0);
      for (int64_t p0 = 0; p0 < k; p0 += kKC) {
        const int64_t kc = std::min(kKC, k - p0);
        const float* packed_a = panel.get();
        if (shared_a) {
          packed_a = shared_a.get() + p0 * m_pad;
        } else {
          PackRowsOfA(a, p0, kc, row0, rows, kernel.mr, panel.get());
        }
        kernel.multiply_block(BlockA{packed_a, 0}, packed_b + p0 * n_pad + col0 * kc, rows, cols,
                              kc, product.get(), plan.group, p0 > 0, nullptr);
      }
      float* block = c + col0 * ldc + row0;
      TransposeInto(product.get(), rows, cols, plan.group, block, ldc, adds_to_c);
      if (has_epilogue) epilogue.Apply(col0, cols, row0, rows, block, ldc);
    }
  });
}

bool PrefersTransposedOutput(int64_t m, int64_t n, int64_t k) {
  // Lanes per useful one either way; rows need no padding (a strip's last rows are computed by
  // a shorter tile). Transposed, the multiply-adds per element of C fall from k times the
  // first to k times the second, but each element is also transposed and passed over again by
  // the epilogue, which cost about kOverhead multiply-adds' time (on 1x1 convolutions over
  // 7 x 7 and 14 x 14 planes, design §37: at 7 x 7, 160 channels in ran faster untransposed,
  // 320 alike, 576 faster transposed).
  constexpr double kOverhead = 100;
  const int64_t nr = SelectKernel().nr;
  if (m <= 0 || n <= 0) return false;
  const double lanes_per_column = static_cast<double>(RoundUp(n, nr)) / static_cast<double>(n);
  const double lanes_per_row = static_cast<double>(RoundUp(m, nr)) / static_cast<double>(m);
  return (lanes_per_column - lanes_per_row) * static_cast<double>(k) > kOverhead;
}

void Gemm(int64_t m, int64_t n, int64_t k, const MatrixView& a, const MatrixView& b, float* c,
          int64_t ldc) {
  Gemm(m, n, k, GemmOperand{a}, GemmOperand{b}, c, ldc);
}

void ForEachMatrix(int64_t count, const std::function<void(int64_t)>& body) {
  if (count >= runtime::NumThreads()) {
    runtime::ParallelFor(0, count, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) body(i);
    });
    return;
  }
  for (int64_t i = 0; i < count; ++i) body(i);
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
