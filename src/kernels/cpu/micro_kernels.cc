// The hand-written kernels that generated code calls (docs/design.md §28): a loop nest that
// tensorize replaced becomes a call_packed of one of these globals, with the addresses of its
// buffers' regions and their row strides.
#include <kiln/ffi/registry.h>

#include <cstdint>

#include "gemm.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// C (m x n, rows `ldc` apart) = A (m x k, rows `lda` apart) * B, where element (r, j) of B is
/// b[r * b_row + j * b_col].
void MicroGemm(void* a, void* b, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
               int64_t b_row, int64_t b_col, int64_t ldc) {
  KILN_CHECK(m >= 0 && n >= 0 && k >= 0, ValueError)
      << "tir.micro_kernel: negative extents (m=" << m << ", n=" << n << ", k=" << k << ")";
  Gemm(m, n, k, MatrixView{static_cast<const float*>(a), lda, 1},
       MatrixView{static_cast<const float*>(b), b_row, b_col}, static_cast<float*>(c), ldc);
}

}  // namespace

// C = A * B, B (k x n) with rows `ldb` apart.
KILN_REGISTER_GLOBAL("tir.micro_kernel.sgemm")
    .set_body_typed([](void* a, void* b, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
                       int64_t ldb,
                       int64_t ldc) { MicroGemm(a, b, c, m, n, k, lda, ldb, 1, ldc); });

// C = A * B^T, B (n x k) with rows `ldb` apart: the layout of a dense layer's weight.
KILN_REGISTER_GLOBAL("tir.micro_kernel.sgemm_bt")
    .set_body_typed([](void* a, void* b, void* c, int64_t m, int64_t n, int64_t k, int64_t lda,
                       int64_t ldb,
                       int64_t ldc) { MicroGemm(a, b, c, m, n, k, lda, 1, ldb, ldc); });

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
