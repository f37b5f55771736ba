// nn.dense, matmul and nn.batch_matmul: each maps its operands onto MatrixViews (transposes
// and broadcast batches are strides and offsets) and runs the shared GEMM per batch.
#include <optional>

#include "gemm.h"
#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// data (..., K) x weight (N, K)^T -> (..., N).
void Dense(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor data = call.input(0);
  const Tensor weight = call.input(1);
  const int64_t n = weight.shape(0);
  const int64_t k = weight.shape(1);
  int64_t m = 1;
  for (int32_t d = 0; d + 1 < data.ndim(); ++d) m *= data.shape(d);
  Gemm(m, n, k, GemmOperand({Data<const float>(data), k, 1}),
       GemmOperand({Data<const float>(weight), 1, k}, call.Prepacked(1)),
       Data<float>(call.output(0)), n, ReadMergedEpilogue(call, /*bias_per_row=*/false, n));
}
KILN_CPU_KERNEL("nn.dense", Dense);

/// Packs a constant dense weight (N, K), the GEMM's B transposed.
std::optional<Tensor> PrepackDense(size_t index, const Tensor& weight, const KernelCall&) {
  if (index != 1 || weight.dtype().code != kDLFloat || weight.dtype().bits != 32 ||
      weight.ndim() != 2) {
    return std::nullopt;
  }
  const int64_t n = weight.shape(0);
  const int64_t k = weight.shape(1);
  Tensor packed = NewPackedTensor(PackedGemmBSize(k, n));
  PackGemmB(k, n, {Data<const float>(weight), 1, k}, Data<float>(packed));
  return packed;
}
KILN_CPU_PREPACK("nn.dense", PrepackDense);

int64_t Product(const std::vector<int64_t>& extents) {
  int64_t product = 1;
  for (int64_t extent : extents) product *= extent;
  return product;
}

/// The batch shape that `a_batch` and `b_batch` broadcast to (numpy).
std::vector<int64_t> BroadcastBatch(const std::vector<int64_t>& a_batch,
                                    const std::vector<int64_t>& b_batch) {
  std::vector<int64_t> batch(std::max(a_batch.size(), b_batch.size()), 1);
  for (const std::vector<int64_t>* shape : {&a_batch, &b_batch}) {
    for (size_t d = 0; d < shape->size(); ++d) {
      int64_t& extent = batch[batch.size() - shape->size() + d];
      extent = std::max(extent, (*shape)[d]);
    }
  }
  return batch;
}

/// A batch of GEMMs C[b] = A[b] x B[b]: `a_shape` and `b_shape` are the operands' batch
/// shapes, broadcast together (numpy) into the output's batch.
struct BatchedGemm {
  int64_t m, n, k;
  std::vector<int64_t> a_batch, b_batch;
  bool transpose_a = false;
  bool transpose_b = false;
  const float* packed_b = nullptr;  ///< B prepacked, when it has no batch
  GemmEpilogue epilogue;            ///< its residual, if any, shaped as the whole output

  void Run(const Tensor& a, const Tensor& b, const Tensor& c) const {
    const std::vector<int64_t> batch = BroadcastBatch(a_batch, b_batch);
    const BroadcastPlan plan = PlanBroadcast(batch, {a_batch, b_batch});
    const int64_t count = Product(batch);
    const MatrixView a_view = transpose_a ? MatrixView{Data<const float>(a), 1, m}
                                          : MatrixView{Data<const float>(a), k, 1};
    const MatrixView b_view = transpose_b ? MatrixView{Data<const float>(b), 1, k}
                                          : MatrixView{Data<const float>(b), n, 1};
    float* c_data = Data<float>(c);
    if (!transpose_a && Product(b_batch) == 1 && Product(a_batch) == count) {
      // Every A[i] times the one B: the A's are consecutive rows of one (count * m, k) matrix,
      // so one GEMM packs B once instead of once per batch ((128, 1, K) x (K, N) in attention
      // projections would otherwise be 128 GEMMs of one row each).
      Gemm(count * m, n, k, GemmOperand{a_view}, GemmOperand{b_view, packed_b}, c_data, n,
           epilogue);
      return;
    }
    ForEachMatrix(count, [&](int64_t i) {
      const int64_t row = i / plan.inner();
      const int64_t col = i % plan.inner();
      const int64_t a_index = plan.RowOffset(0, row) + col * plan.InnerStride(0);
      const int64_t b_index = plan.RowOffset(1, row) + col * plan.InnerStride(1);
      MatrixView a_i = a_view;
      MatrixView b_i = b_view;
      a_i.data += a_index * m * k;
      b_i.data += b_index * k * n;
      GemmEpilogue epilogue_i = epilogue;
      if (epilogue.residual != nullptr) epilogue_i.residual += i * m * n;
      Gemm(m, n, k, GemmOperand{a_i}, GemmOperand{b_i, b_index == 0 ? packed_b : nullptr},
           c_data + i * m * n, n, epilogue_i);
    });
  }
};

/// An integer matmul (MatMulInteger, QLinearMatMul, MatMul of ints): exact, accumulated in int64
/// and wrapped to the element type as ONNX's integer arithmetic does. A plain loop: quantized
/// models that need speed go through a backend (dnnl) rather than this reference path.
template <typename T>
void IntegerMatmul(const Tensor& lhs, const Tensor& rhs, const Tensor& out,
                   const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const int64_t m = a[a.size() - 2];
  const int64_t k = a.back();
  const int64_t n = b.back();
  const std::vector<int64_t> a_batch(a.begin(), a.end() - 2);
  const std::vector<int64_t> b_batch(b.begin(), b.end() - 2);
  const std::vector<int64_t> batch = BroadcastBatch(a_batch, b_batch);
  const BroadcastPlan plan = PlanBroadcast(batch, {a_batch, b_batch});
  const T* x = Data<const T>(lhs);
  const T* y = Data<const T>(rhs);
  T* z = Data<T>(out);
  runtime::ParallelFor(0, Product(batch) * m, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t i = r / m;
      const int64_t row = i / plan.inner();
      const int64_t col = i % plan.inner();
      const T* a_row = x + ((plan.RowOffset(0, row) + col * plan.InnerStride(0)) * m + r % m) * k;
      const T* b_mat = y + (plan.RowOffset(1, row) + col * plan.InnerStride(1)) * k * n;
      for (int64_t j = 0; j < n; ++j) {
        uint64_t sum = 0;  // unsigned: wraps as the element type does, without overflow UB
        for (int64_t p = 0; p < k; ++p) {
          sum += static_cast<uint64_t>(static_cast<int64_t>(a_row[p]) *
                                       static_cast<int64_t>(b_mat[p * n + j]));
        }
        z[r * n + j] = static_cast<T>(sum);
      }
    }
  });
}

/// numpy matmul: a 1-D lhs is a row (1, K), a 1-D rhs a column (K, 1); the dims added are
/// absent from the output, which does not change its memory layout.
void Matmul(const KernelCall& call) {
  const Tensor lhs = call.input(0);
  const Tensor rhs = call.input(1);
  std::vector<int64_t> a = ShapeOf(lhs);
  std::vector<int64_t> b = ShapeOf(rhs);
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  if (lhs.dtype().code == kDLInt) {
    DispatchDType<kI32 | kI64>(call, lhs.dtype(), [&](auto tag) {
      IntegerMatmul<decltype(tag)>(lhs, rhs, call.output(0), a, b);
    });
    return;
  }
  RequireFloat32Inputs(call);
  BatchedGemm gemm;
  gemm.m = a[a.size() - 2];
  gemm.k = a.back();
  gemm.n = b.back();
  gemm.a_batch.assign(a.begin(), a.end() - 2);
  gemm.b_batch.assign(b.begin(), b.end() - 2);
  gemm.packed_b = call.Prepacked(1);
  gemm.epilogue = ReadMergedEpilogue(call, /*bias_per_row=*/false, gemm.n);
  gemm.Run(lhs, rhs, call.output(0));
}
KILN_CPU_KERNEL("matmul", Matmul);

/// Packs a constant 2-D rhs (K, N): the GEMM's B for every batch of the lhs.
std::optional<Tensor> PrepackMatmul(size_t index, const Tensor& rhs, const KernelCall&) {
  if (index != 1 || rhs.dtype().code != kDLFloat || rhs.dtype().bits != 32 || rhs.ndim() != 2) {
    return std::nullopt;
  }
  const int64_t k = rhs.shape(0);
  const int64_t n = rhs.shape(1);
  Tensor packed = NewPackedTensor(PackedGemmBSize(k, n));
  PackGemmB(k, n, {Data<const float>(rhs), n, 1}, Data<float>(packed));
  return packed;
}
KILN_CPU_PREPACK("matmul", PrepackMatmul);

/// (B, M, K) x (B, K, N) after the optional transposes; a batch of 1 broadcasts.
void BatchMatmul(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const Tensor lhs = call.input(0);
  const Tensor rhs = call.input(1);
  BatchedGemm gemm;
  gemm.transpose_a = call.Bool("transpose_a");
  gemm.transpose_b = call.Bool("transpose_b");
  gemm.m = lhs.shape(gemm.transpose_a ? 2 : 1);
  gemm.k = lhs.shape(gemm.transpose_a ? 1 : 2);
  gemm.n = rhs.shape(gemm.transpose_b ? 1 : 2);
  gemm.a_batch = {lhs.shape(0)};
  gemm.b_batch = {rhs.shape(0)};
  gemm.Run(lhs, rhs, call.output(0));
}
KILN_CPU_KERNEL("nn.batch_matmul", BatchMatmul);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
