// The hand-written kernels that generated code calls (docs/design.md §28, §29): a loop nest that
// tensorize replaced, or a matrix product the lowering kept, becomes a call_packed of one of
// these globals with the addresses of its buffers' regions and their row strides, and
// optionally a KilnTileCallback, the generated epilogue run on each finished tile of C.
#include <kiln/ffi/registry.h>
#include <kiln/runtime/tile_callback.h>

#include <cstdint>

#include "gemm.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// (a, b, c, m, n, k, lda, ldb, ldc[, epilogue]): C (m x n, rows `ldc` apart) = A (m x k, rows
/// `lda` apart) * B, B's element (r, j) at b[r * ldb + j] (or, `transposed_b`, b[j * ldb + r]).
void MicroGemm(const AnyView* args, int32_t num_args, bool transposed_b) {
  KILN_CHECK(num_args == 9 || num_args == 10, TypeError)
      << "tir.micro_kernel.sgemm takes 9 or 10 arguments (a, b, c, m, n, k, lda, ldb, ldc[, "
         "epilogue]), got "
      << num_args;
  const auto m = args[3].cast<int64_t>();
  const auto n = args[4].cast<int64_t>();
  const auto k = args[5].cast<int64_t>();
  KILN_CHECK(m >= 0 && n >= 0 && k >= 0, ValueError)
      << "tir.micro_kernel.sgemm: negative extents (m=" << m << ", n=" << n << ", k=" << k << ")";
  const auto ldb = args[7].cast<int64_t>();
  GemmEpilogue epilogue;
  if (num_args == 10) epilogue.tile = static_cast<const KilnTileCallback*>(args[9].cast<void*>());
  Gemm(m, n, k,
       GemmOperand(MatrixView{static_cast<const float*>(args[0].cast<void*>()),
                              args[6].cast<int64_t>(), 1}),
       GemmOperand(MatrixView{static_cast<const float*>(args[1].cast<void*>()),
                              transposed_b ? 1 : ldb, transposed_b ? ldb : 1}),
       static_cast<float*>(args[2].cast<void*>()), args[8].cast<int64_t>(), epilogue);
}

}  // namespace

// C = A * B, B (k x n).
KILN_REGISTER_GLOBAL("tir.micro_kernel.sgemm")
    .set_body_packed([](const AnyView* args, int32_t num_args, Any*) {
      MicroGemm(args, num_args, /*transposed_b=*/false);
    });

// C = A * B^T, B (n x k): the layout of a dense layer's weight.
KILN_REGISTER_GLOBAL("tir.micro_kernel.sgemm_bt")
    .set_body_packed([](const AnyView* args, int32_t num_args, Any*) {
      MicroGemm(args, num_args, /*transposed_b=*/true);
    });

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
