// Blocked GEMM in the Goto/BLIS scheme: B is packed once per depth block into NR-wide strips,
// each task packs its rows of A into MR-tall strips, and a register-tiled MR x NR
// micro-kernel, written as plain loops the compiler vectorizes, walks the packed strips.
// Packing makes every inner loop contiguous whatever the operands' strides (transposes are
// free) and pads edges with zeros, so the micro-kernel never branches on tile size.
#include "gemm.h"

#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <vector>

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

// MR x NR accumulators (12 SSE registers of 4 floats) plus a strip of B and a broadcast of A
// fit the 16 vector registers of x86-64's baseline ISA.
constexpr int64_t kMR = 6;
constexpr int64_t kNR = 8;
constexpr int64_t kKC = 256;  // depth block: an MR strip of A and NR strip of B stay in L1
constexpr int64_t kMC = 72;   // rows of C per task (a multiple of kMR)
constexpr int64_t kNC = 256;  // columns of C per task (a multiple of kNR)

int64_t RoundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// Packs rows [row0, row0 + rows) x depth [p0, p0 + kc) of A into MR-tall strips, each stored
/// depth-major ([kc][MR]); rows past the end are zero.
void PackA(const MatrixView& a, int64_t row0, int64_t rows, int64_t p0, int64_t kc, float* packed) {
  for (int64_t s = 0; s < rows; s += kMR) {
    float* strip = packed + s * kc;
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t i = 0; i < kMR; ++i) {
        strip[p * kMR + i] =
            s + i < rows ? a.data[(row0 + s + i) * a.row_stride + (p0 + p) * a.col_stride] : 0.F;
      }
    }
  }
}

/// Packs NR-wide strip `s` of depth [p0, p0 + kc) of B ([kc][NR]); columns past n are zero.
void PackBStrip(const MatrixView& b, int64_t n, int64_t s, int64_t p0, int64_t kc, float* strip) {
  const int64_t col0 = s * kNR;
  for (int64_t p = 0; p < kc; ++p) {
    for (int64_t j = 0; j < kNR; ++j) {
      strip[p * kNR + j] =
          col0 + j < n ? b.data[(p0 + p) * b.row_stride + (col0 + j) * b.col_stride] : 0.F;
    }
  }
}

/// C tile (mr x nr valid of MR x NR) = or += packed A strip x packed B strip.
void MicroKernel(int64_t kc, const float* __restrict__ a, const float* __restrict__ b,
                 float* __restrict__ c, int64_t ldc, int64_t mr, int64_t nr, bool accumulate) {
  float acc[kMR][kNR] = {};
  for (int64_t p = 0; p < kc; ++p) {
    for (int64_t i = 0; i < kMR; ++i) {
      const float ai = a[p * kMR + i];
      for (int64_t j = 0; j < kNR; ++j) acc[i][j] += ai * b[p * kNR + j];
    }
  }
  for (int64_t i = 0; i < mr; ++i) {
    for (int64_t j = 0; j < nr; ++j) {
      c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
    }
  }
}

// The block loop is compiled twice, for the baseline and for x86-64-v3 (AVX2, FMA), and the
// dynamic loader picks the clone the CPU runs (an ifunc), so one binary uses AVX2 where there
// is one and still runs everywhere. The micro-kernel inlines into each clone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define KILN_GEMM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define KILN_GEMM_CLONES
#endif

/// C block (rows x cols) = or += packed A block x packed B panel (strips of the block's
/// columns).
KILN_GEMM_CLONES void MultiplyBlock(const float* packed_a, const float* packed_b, int64_t rows,
                                    int64_t cols, int64_t kc, float* c, int64_t ldc,
                                    bool accumulate) {
  for (int64_t j = 0; j < cols; j += kNR) {
    for (int64_t i = 0; i < rows; i += kMR) {
      MicroKernel(kc, packed_a + i * kc, packed_b + j * kc, c + i * ldc + j, ldc,
                  std::min(kMR, rows - i), std::min(kNR, cols - j), accumulate);
    }
  }
}

}  // namespace

void Gemm(int64_t m, int64_t n, int64_t k, const MatrixView& a, const MatrixView& b, float* c,
          int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill_n(c + i * ldc, n, 0.F);
    return;
  }
  const int64_t strips = RoundUp(n, kNR) / kNR;
  const int64_t row_blocks = RoundUp(m, kMC) / kMC;
  const int64_t col_blocks = RoundUp(n, kNC) / kNC;
  std::vector<float> packed_b(strips * kNR * std::min(k, kKC));
  for (int64_t p0 = 0; p0 < k; p0 += kKC) {
    const int64_t kc = std::min(kKC, k - p0);
    runtime::ParallelFor(0, strips, 16, [&](int64_t begin, int64_t end) {
      for (int64_t s = begin; s < end; ++s) PackBStrip(b, n, s, p0, kc, &packed_b[s * kNR * kc]);
    });
    runtime::ParallelFor(0, row_blocks * col_blocks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> packed_a(kMC * kc);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t row0 = task / col_blocks * kMC;
        const int64_t col0 = task % col_blocks * kNC;
        const int64_t rows = std::min(kMC, m - row0);
        const int64_t cols = std::min(kNC, n - col0);
        PackA(a, row0, rows, p0, kc, packed_a.data());
        MultiplyBlock(packed_a.data(), &packed_b[col0 * kc], rows, cols, kc, c + row0 * ldc + col0,
                      ldc, p0 > 0);
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
