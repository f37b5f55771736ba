// Blocked GEMM in the Goto/BLIS scheme: B is packed once per depth block into NR-wide strips,
// each task packs its rows of A into MR-tall strips, and a register-tiled MR x NR
// micro-kernel, written as plain loops the compiler vectorizes, walks the packed strips.
// Packing makes every inner loop contiguous whatever the operands' strides (transposes are
// free) and pads edges with zeros, so the micro-kernel never branches on tile size.
#include "gemm.h"

#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

constexpr int64_t kKC = 256;  // depth block: an MR strip of A and NR strip of B stay in L1
constexpr int64_t kMC = 72;   // rows of C per task (a multiple of every MR below)
constexpr int64_t kNC = 256;  // columns of C per task (a multiple of every NR below)

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// Packs rows [row0, row0 + rows) x depth [p0, p0 + kc) of A into `mr`-tall strips, each
/// stored depth-major ([kc][mr]); rows past the end are zero.
void PackA(const MatrixView& a, int64_t row0, int64_t rows, int64_t p0, int64_t kc, int64_t mr,
           float* packed) {
  for (int64_t s = 0; s < rows; s += mr) {
    float* strip = packed + s * kc;
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t i = 0; i < mr; ++i) {
        strip[p * mr + i] =
            s + i < rows ? a.data[(row0 + s + i) * a.row_stride + (p0 + p) * a.col_stride] : 0.F;
      }
    }
  }
}

/// Packs `nr`-wide strip `s` of depth [p0, p0 + kc) of B ([kc][nr]); columns past n are zero.
void PackBStrip(const MatrixView& b, int64_t n, int64_t s, int64_t p0, int64_t kc, int64_t nr,
                float* strip) {
  const int64_t col0 = s * nr;
  for (int64_t p = 0; p < kc; ++p) {
    for (int64_t j = 0; j < nr; ++j) {
      strip[p * nr + j] =
          col0 + j < n ? b.data[(p0 + p) * b.row_stride + (col0 + j) * b.col_stride] : 0.F;
    }
  }
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
    std::memcpy(row, b + p * NR, sizeof(row));
    for (int64_t i = 0; i < MR; ++i) {
      const Vec ai = Vec{} + a[p * MR + i];
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

}  // namespace

void Gemm(int64_t m, int64_t n, int64_t k, const MatrixView& a, const MatrixView& b, float* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.F);
    return;
  }
  const GemmKernel& kernel = SelectKernel();
  const int64_t strips = RoundUp(n, kernel.nr) / kernel.nr;
  const int64_t row_blocks = RoundUp(m, kMC) / kMC;
  const int64_t col_blocks = RoundUp(n, kNC) / kNC;
  std::vector<float> packed_b(strips * kernel.nr * std::min(k, kKC));
  for (int64_t p0 = 0; p0 < k; p0 += kKC) {
    const int64_t kc = std::min(kKC, k - p0);
    runtime::ParallelFor(0, strips, 16, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) {
        PackBStrip(b, n, s, p0, kc, kernel.nr, &packed_b[s * kernel.nr * kc]);
      }
    });
    runtime::ParallelFor(0, row_blocks * col_blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> packed_a(RoundUp(kMC, kernel.mr) * kc);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t row0 = task / col_blocks * kMC;
        const int64_t col0 = task % col_blocks * kNC;
        const int64_t rows = std::min(kMC, m - row0);
        const int64_t cols = std::min(kNC, n - col0);
        PackA(a, row0, rows, p0, kc, kernel.mr, packed_a.data());
        kernel.multiply_block(packed_a.data(), &packed_b[col0 * kc], rows, cols, kc,
                              c + row0 * ldc + col0, ldc, p0 > 0);
      }
    });
  }
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
