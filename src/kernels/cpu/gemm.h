// The blocked float32 GEMM shared by dense, matmul, batch_matmul, conv2d and conv2d_transpose.
#ifndef KILN_SRC_KERNELS_CPU_GEMM_H_
#define KILN_SRC_KERNELS_CPU_GEMM_H_

#include <kiln/ffi/tensor.h>
#include <kiln/runtime/tile_callback.h>

#include "kernel_util.h"

#include <cstdint>
#include <functional>

namespace kiln {
namespace kernels {
namespace cpu {

/// A read-only matrix: element (i, j) is data[i * row_stride + j * col_stride], so a
/// transposed operand is only a swap of strides.
struct MatrixView {
  const float* data;
  int64_t row_stride;
  int64_t col_stride;
};

/// A GEMM operand: a view packed at each call, or `packed` by PackGemmA / PackGemmB ahead of
/// time (a constant weight, packed once when its program loads).
/// Writes an operand's packed panel for depth rows [p0, p0 + kc) and indices [first,
/// first + count) (columns of B; rows of A in GemmTransposedOutput): `width`-wide strips one
/// after another, each [kc][width], indices past `count` zero. Lets a caller pack an operand
/// from a source no MatrixView describes (a convolution's image, without im2col).
using PanelPacker = std::function<void(int64_t p0, int64_t kc, int64_t first, int64_t count,
                                       int64_t width, float* panel)>;

/// B of Gemm read in place rather than packed: element (p, j) is base[row_offsets[p] + j], so
/// each row is contiguous (only a last strip narrower than the tile is packed). A
/// convolution's image is this, and its im2col matrix over a padded image (conv.cc). Rows whose
/// starts fall on few cache sets (4 KB apart) would evict each other; the caller avoids them.
struct GatheredRows {
  const float* base;
  const int64_t* row_offsets;  ///< k entries
};

struct GemmOperand {
  explicit GemmOperand(const MatrixView& view, const float* packed = nullptr)
      : view(view), packed(packed) {}
  /// Packed by `packer` (not owned; it must outlive the call): B of Gemm, A of
  /// GemmTransposedOutput.
  explicit GemmOperand(const PanelPacker* packer) : view{nullptr, 0, 0}, packer(packer) {}
  /// B of Gemm only.
  explicit GemmOperand(const GatheredRows& rows) : view{nullptr, 0, 0}, gathered(rows) {}

  MatrixView view;
  const float* packed = nullptr;
  const PanelPacker* packer = nullptr;
  GatheredRows gathered{nullptr, nullptr};
};

/// What a fused function does to a product after it, while C is in cache: per element,
///   c = act(c + row_bias[row] + col_bias[col] + residual[row, col]),
/// act clamping to [clamp.low, clamp.high] and then, if `gelu`, GELU (erf form), if `silu`,
/// x * sigmoid(x), if `hardswish`, x * clamp(x / 6 + 1 / 2, 0, 1); then `tile`.
/// Absent parts are skipped.
///
/// The residual may be C itself (`residual` == c, rows ldc apart): a graph node's output placed
/// in its residual's storage (design §41). Gemm then adds its product into C; the other paths
/// read a copy (ResidualOutsideC), since they write C before their epilogue reads it.
struct GemmEpilogue {
  const float* row_bias = nullptr;  ///< one per row of C, or none
  const float* col_bias = nullptr;  ///< one per column of C, or none
  const float* residual = nullptr;  ///< a matrix shaped as C, rows `residual_ld` apart, or none
  int64_t residual_ld = 0;
  ClampBounds clamp;
  bool gelu = false;
  bool silu = false;
  bool hardswish = false;
  /// Generated code's epilogue, called with (row0 + tile_row_offset, rows, col0, cols) of each
  /// finished tile after the parts above, preceded by `tile_image` when that is not negative (a
  /// convolution's GEMMs run per image and group); it reads and writes C itself. Or none.
  const KilnTileCallback* tile = nullptr;
  int64_t tile_image = -1;
  int64_t tile_row_offset = 0;
  /// When `narrow_width` > 0 (Gemm only), the product's columns are rows `narrow_width` wide of
  /// which C keeps the first `narrow_valid`: product column j lands in C's column
  /// j / narrow_width * narrow_valid + j % narrow_width, or nowhere. Everything above then runs
  /// in C's columns. A convolution whose output rows were computed wider than they are is
  /// this (conv.cc's PaddedRowsConv).
  int64_t narrow_width = 0;
  int64_t narrow_valid = 0;

  bool active() const;
  /// Applies the epilogue to rows [row0, row0 + rows) x columns [col0, col0 + cols) of C;
  /// `c` points at (row0, col0).
  void Apply(int64_t row0, int64_t rows, int64_t col0, int64_t cols, float* c, int64_t ldc) const;
};

/// For a path that writes C before its epilogue reads the residual (GemmTransposedOutput, the
/// depthwise convolutions): when the residual is C itself, a copy of it, which `epilogue()`
/// reads instead; otherwise the epilogue as given.
class ResidualOutsideC {
 public:
  /// C: `rows` rows of `cols`, `ldc` apart.
  ResidualOutsideC(const GemmEpilogue& epilogue, const float* c, int64_t rows, int64_t cols,
                   int64_t ldc);
  const GemmEpilogue& epilogue() const { return epilogue_; }

 private:
  Tensor copy_;
  GemmEpilogue epilogue_;
};

/// Whether `epilogue`'s residual is C itself (rows `ldc` apart); then it is dropped from the
/// epilogue, and the caller adds its product into C instead.
bool TakeResidualInC(GemmEpilogue& epilogue, const float* c, int64_t ldc);

/// The epilogue a kernel program merged into a step (kiln/runtime/kernel_program.h): its bias
/// input as row_bias (`bias_per_row`) or col_bias, its residual input with rows `residual_ld`
/// apart, the clamp and GELU attributes.
GemmEpilogue ReadMergedEpilogue(const KernelCall& call, bool bias_per_row, int64_t residual_ld);

/// C (m x n, rows `ldc` apart) = A (m x k) * B (k x n), then `epilogue`. Blocks of C run on
/// the thread pool (serially when called from inside a parallel region).
void Gemm(int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b, float* c,
          int64_t ldc, const GemmEpilogue& epilogue = GemmEpilogue{});
void Gemm(int64_t m, int64_t n, int64_t k, const MatrixView& a, const MatrixView& b, float* c,
          int64_t ldc);

/// C = A (m x k) * B (k x n) stored transposed: element (i, j) at c[j * ldc + i]; then
/// `epilogue`, applied to the stored n x m matrix (its row_bias is per column of C). The tiles'
/// rows run along A's rows and their vectors along B's columns, so a product whose A rows do
/// not fill whole vectors and whose B columns do (a convolution's output pixels and channels)
/// wastes no lanes this way. A is packed per task, by its `packer` or from its view; B is
/// `packed` by PackGemmB or packed once per call.
void GemmTransposedOutput(int64_t m, int64_t n, int64_t k, const GemmOperand& a,
                          const GemmOperand& b, float* c, int64_t ldc,
                          const GemmEpilogue& epilogue = GemmEpilogue{});

/// Whether C = A (m x k) * B (k x n) is better computed by GemmTransposedOutput than by Gemm:
/// when B's columns leave enough of the tiles' vector lanes empty (7 x 7 = 49 pixels fill 64)
/// that A's rows in their place save more multiply-adds over the depth k than transposing C
/// and passing over it again cost.
bool PrefersTransposedOutput(int64_t m, int64_t n, int64_t k);

/// Floats the packed form of an m x k A, or a k x n B, takes (this CPU's tile sizes).
int64_t PackedGemmASize(int64_t m, int64_t k);
int64_t PackedGemmBSize(int64_t k, int64_t n);
/// Writes the packed form of A (m x k), or of B (k x n), to `packed` (its size above).
void PackGemmA(int64_t m, int64_t k, const MatrixView& a, float* packed);
void PackGemmB(int64_t k, int64_t n, const MatrixView& b, float* packed);

/// A float32 CPU tensor of `size` elements for packed operands (prepack hooks return one).
Tensor NewPackedTensor(int64_t size);

/// Runs body(i) for i in [0, count): over the thread pool when there are at least as many
/// items as threads (each then runs its GEMMs serially), else one after another so each GEMM
/// gets every thread.
void ForEachMatrix(int64_t count, const std::function<void(int64_t)>& body);

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_GEMM_H_
