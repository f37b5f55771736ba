// Blocked GEMM in the Goto/BLIS scheme: A is packed once per call into MR-tall strips, each
// task packs the depth blocks of its column block of B into NR-wide strips (a panel that stays
// in L2 while every row of the task multiplies it), and a register-tiled MR x NR micro-kernel,
// written as plain loops the compiler vectorizes, walks the packed strips. Packing makes every
// inner loop contiguous whatever the operands' strides (transposes are free) and pads edges
// with zeros, so the micro-kernel never branches on tile size.
#include "gemm.h"

#include <kiln/runtime/fast_math.h>

#include <kiln/runtime/kernel_program.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

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

int64_t CeilDiv(int64_t value, int64_t divisor) { return (value + divisor - 1) / divisor; }

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
/// `out`, its row q at out + q * out_stride.
inline void Transpose4x4(const float* const rows[4], float* out, int64_t out_stride) {
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
  for (int q = 0; q < 4; ++q) std::memcpy(out + q * out_stride, &columns[q], sizeof(Float4));
}

/// Packs a depth x `width` panel, depth-major ([depth][width]): element (p, j) of the operand
/// is src[p * depth_stride + j * index_stride], for j < count; columns [count, width) are zero.
/// A strip of A takes rows as j, a strip of B columns. Contiguous j (the common B, and A
/// transposed) copies whole lines; contiguous depth (the common A, and B transposed) is
/// transposed 4 x 4 blocks at a time; otherwise each j is read along its depth.
void PackPanel(const float* src, int64_t depth_stride, int64_t index_stride, int64_t depth,
               int64_t count, int64_t width, float* __restrict__ panel) {
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

/// C tile (mr x nr valid of MR x NR) = or += packed A strip x packed B strip, with
/// accumulators in vectors of W floats (GCC/Clang vector extensions: one register each on the
/// ISA the caller is compiled for, so the tile is sized per ISA below).
template <int64_t MR, int64_t NR, int64_t W>
__attribute__((always_inline)) inline void MicroKernel(int64_t kc, const float* __restrict__ a,
                                                       const float* __restrict__ b,
                                                       float* __restrict__ c, int64_t ldc,
                                                       int64_t mr, int64_t nr, bool accumulate) {
  using Vec = typename FloatVector<W>::Type;
  static_assert(sizeof(Vec) == W * sizeof(float) && NR % W == 0, "a tile row is whole vectors");
  constexpr int64_t kVecs = NR / W;
  Vec acc[MR][kVecs] = {};
  for (int64_t p = 0; p < kc; ++p) {
    Vec row[kVecs];
    for (int64_t v = 0; v < kVecs; ++v) std::memcpy(&row[v], b + p * NR + v * W, sizeof(Vec));
    for (int64_t i = 0; i < MR; ++i) {
      const Vec ai = a[p * MR + i] - Vec{};  // a broadcast: x - (+0) is x, unlike x + 0
      for (int64_t v = 0; v < kVecs; ++v) acc[i][v] += ai * row[v];
    }
  }
  float tile[MR][NR];
  std::memcpy(tile, acc, sizeof(tile));
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t j = 0; j < nr; ++j) {
      c[i * ldc + j] = accumulate ? c[i * ldc + j] + tile[i][j] : tile[i][j];
    }
  }
}

/// C block (rows x cols) = or += packed A block x packed B panel (strips of the block's
/// columns), with the MR x NR tile of one ISA.
template <int64_t MR, int64_t NR, int64_t W>
__attribute__((always_inline)) inline void MultiplyBlock(const float* packed_a,
                                                         const float* packed_b, int64_t rows,
                                                         int64_t cols, int64_t kc, float* c,
                                                         int64_t ldc, bool accumulate) {
  for (int64_t j = 0; j < cols; j += NR) {
    for (int64_t i = 0; i < rows; i += MR) {
      MicroKernel<MR, NR, W>(kc, packed_a + i * kc, packed_b + j * kc, c + i * ldc + j, ldc,
                             std::min(MR, rows - i), std::min(NR, cols - j), accumulate);
    }
  }
}

using BlockFn = void (*)(const float*, const float*, int64_t, int64_t, int64_t, float*, int64_t,
                         bool);

/// One ISA's tile and its block loop, compiled for that ISA.
struct GemmKernel {
  int64_t mr;
  int64_t nr;
  BlockFn multiply_block;
};

// Tiles fill the vector registers without spilling: the baseline's 16 SSE registers hold 6x8
// accumulators (12) plus a B row and a broadcast; AVX2's 16 hold 6x16 (12 ymm); AVX-512's 32
// hold 12x32 (24 zmm). The kernel library builds for the x86-64 baseline (design §15), so the
// wider ones are compiled with target attributes and picked at run time from the CPU's
// features. Clang (the sanitizer build) gets the baseline only.
void MultiplyBlockBaseline(const float* a, const float* b, int64_t rows, int64_t cols, int64_t kc,
                           float* c, int64_t ldc, bool accumulate) {
  MultiplyBlock<6, 8, 4>(a, b, rows, cols, kc, c, ldc, accumulate);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define KILN_GEMM_WIDE_KERNELS 1
__attribute__((target("arch=x86-64-v3"))) void MultiplyBlockAvx2(const float* a, const float* b,
                                                                 int64_t rows, int64_t cols,
                                                                 int64_t kc, float* c, int64_t ldc,
                                                                 bool accumulate) {
  MultiplyBlock<6, 16, 8>(a, b, rows, cols, kc, c, ldc, accumulate);
}

__attribute__((target("arch=x86-64-v4"))) void MultiplyBlockAvx512(const float* a, const float* b,
                                                                   int64_t rows, int64_t cols,
                                                                   int64_t kc, float* c,
                                                                   int64_t ldc, bool accumulate) {
  MultiplyBlock<12, 32, 16>(a, b, rows, cols, kc, c, ldc, accumulate);
}
#endif

const GemmKernel& SelectKernel() {
  static const GemmKernel kernel = [] {
#ifdef KILN_GEMM_WIDE_KERNELS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
      return GemmKernel{12, 32, MultiplyBlockAvx512};
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      return GemmKernel{6, 16, MultiplyBlockAvx2};
    }
#endif
    return GemmKernel{6, 8, MultiplyBlockBaseline};
  }();
  return kernel;
}

/// How C is cut into tasks: column blocks (each task packs its own panel of B), split further
/// into row groups only when there are fewer column blocks than threads.
struct GemmPlan {
  int64_t nc;          ///< columns per block (a multiple of NR)
  int64_t col_blocks;  ///< ceil(n / nc)
  int64_t rows;        ///< rows per group (a multiple of MR)
  int64_t row_groups;  ///< ceil(m / rows)

  GemmPlan(int64_t m, int64_t n, const GemmKernel& kernel) {
    const int64_t threads = runtime::NumThreads();
    col_blocks = CeilDiv(n, kNC);
    // A multiple of the thread count when there are several blocks, so no thread idles at
    // the end; equal blocks.
    if (col_blocks > 1) col_blocks = RoundUp(col_blocks, threads);
    nc = RoundUp(CeilDiv(n, col_blocks), kernel.nr);
    col_blocks = CeilDiv(n, nc);
    const int64_t strips = CeilDiv(m, kernel.mr);
    row_groups = std::min(strips, col_blocks >= threads ? 1 : CeilDiv(threads, col_blocks));
    rows = CeilDiv(strips, row_groups) * kernel.mr;
    row_groups = CeilDiv(m, rows);
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

bool GemmEpilogue::clamps() const {
  return min_value != -std::numeric_limits<float>::infinity() ||
         max_value != std::numeric_limits<float>::infinity();
}

bool GemmEpilogue::active() const {
  return row_bias != nullptr || col_bias != nullptr || residual != nullptr || clamps() || gelu ||
         tile != nullptr;
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
  if (epilogue.clamps()) {
    // As clip and relu: NaN becomes min_value.
    const float low = epilogue.min_value;
    const float high = epilogue.max_value;
    for (int64_t j = 0; j < cols; ++j) line[j] = std::min(high, std::max(low, line[j]));
  }
  if (epilogue.gelu) {
    for (int64_t j = 0; j < cols; ++j) {
      line[j] = 0.5F * line[j] * (1.F + kiln_fast_erff(line[j] * static_cast<float>(M_SQRT1_2)));
    }
  }
}

}  // namespace

void GemmEpilogue::Apply(int64_t row0, int64_t rows, int64_t col0, int64_t cols, float* c,
                         int64_t ldc) const {
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
  constexpr double kInf = std::numeric_limits<double>::infinity();
  epilogue.min_value = static_cast<float>(call.FloatOr(runtime::kEpilogueMinAttr, -kInf));
  epilogue.max_value = static_cast<float>(call.FloatOr(runtime::kEpilogueMaxAttr, kInf));
  epilogue.gelu = call.BoolOr(runtime::kEpilogueGeluAttr, false);
  return epilogue;
}

void Gemm(int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b, float* c,
          int64_t ldc, const GemmEpilogue& epilogue) {
  if (m == 0 || n == 0) return;
  const bool has_epilogue = epilogue.active();
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.F);
    if (has_epilogue) epilogue.Apply(0, m, 0, n, c, ldc);
    return;
  }
  const GemmKernel& kernel = SelectKernel();
  const int64_t nr = kernel.nr;
  const int64_t m_pad = RoundUp(m, kernel.mr);
  const int64_t n_pad = RoundUp(n, nr);
  std::unique_ptr<float[]> own_a;
  const float* packed_a = a.packed;
  if (packed_a == nullptr) {
    own_a = UninitializedFloats(PackedGemmASize(m, k));
    PackGemmA(m, k, a.view, own_a.get());
    packed_a = own_a.get();
  }
  const GemmPlan plan(m, n, kernel);
  // Tasks are column-block-major: a chunk holding several row groups of one column block
  // packs its panel of B once.
  runtime::ParallelFor(0, plan.col_blocks * plan.row_groups, 1, [&](int64_t begin, int64_t end) {
    const std::unique_ptr<float[]> own_panel =
        UninitializedFloats(b.packed == nullptr ? plan.nc * std::min(k, kKC) : 0);
    for (int64_t first = begin; first < end;) {
      const int64_t block = first / plan.row_groups;
      const int64_t last = std::min(end, (block + 1) * plan.row_groups);
      const int64_t col0 = block * plan.nc;
      const int64_t cols = std::min(plan.nc, n - col0);
      const int64_t row_begin = first % plan.row_groups * plan.rows;
      const int64_t row_end = std::min(m, (last - block * plan.row_groups) * plan.rows);
      for (int64_t p0 = 0; p0 < k; p0 += kKC) {
        const int64_t kc = std::min(kKC, k - p0);
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
        for (int64_t row0 = row_begin; row0 < row_end; row0 += kMC) {
          const int64_t rows = std::min(kMC, row_end - row0);
          float* c_block = c + row0 * ldc + col0;
          kernel.multiply_block(packed_a + p0 * m_pad + row0 * kc, panel, rows, cols, kc, c_block,
                                ldc, p0 > 0);
          if (has_epilogue && p0 + kc == k) epilogue.Apply(row0, rows, col0, cols, c_block, ldc);
        }
      }
      first = last;
    }
  });
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
