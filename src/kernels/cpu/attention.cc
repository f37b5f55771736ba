// nn.attention: per (batch, head) and block of query rows, S = Q K^T with the shared GEMM
// reading Q and K in place through their strides (the heads are column ranges of the rows, so
// no transpose is ever materialized), then scale, mask and a row softmax on S while it is in
// cache, then O = P V written straight into the output's rows. The scores of a block live in
// scratch that each chunk of tasks allocates, never in the graph: the separate matmul, softmax
// and matmul wrote and read them as tensors of batch x heads x seq_q x seq_k floats.
#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "gemm.h"
#include "kernel_util.h"
#include "softmax.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// Query rows below which a block is not split further: each block packs its head's K and V
/// again, which fewer rows would not repay.
constexpr int64_t kMinRowsPerBlock = 16;

/// Element strides of a rank-3 operand (q, k, v or the output) between batches and between
/// sequence positions; its heads lie side by side along the last axis.
struct OperandStrides {
  int64_t batch;
  int64_t seq;
};

/// Everything a block needs: extents, the scale, data pointers and strides.
struct AttentionProblem {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t seq_q = 0;
  int64_t seq_k = 0;
  int64_t head_dim = 0;
  int64_t value_dim = 0;
  float scale = 1.F;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* mask = nullptr;
  float* out = nullptr;
  OperandStrides q_strides{};
  OperandStrides k_strides{};
  OperandStrides v_strides{};
  OperandStrides out_strides{};
  /// The mask's element strides over (batch, heads, seq_q, seq_k): 0 where it broadcasts.
  std::array<int64_t, 4> mask_strides{};
};

/// (B, S, E) in layout BSNH, (S, B, E) in SBNH.
OperandStrides StridesOf(const Tensor& tensor, bool batch_first) {
  const int64_t row = tensor.shape(2);
  const int64_t middle = tensor.shape(1) * row;
  return batch_first ? OperandStrides{middle, row} : OperandStrides{row, middle};
}

/// Strides of the compact `mask` broadcast to `scores` (batch, heads, seq_q, seq_k); ValueError
/// naming the kernel when it does not broadcast.
std::array<int64_t, 4> MaskStrides(const KernelCall& call, const Tensor& mask,
                                   const std::array<int64_t, 4>& scores) {
  const std::vector<int64_t> shape = ShapeOf(mask);
  KILN_CHECK(shape.size() <= 4, ValueError)
      << call.Prefix() << "'mask' has rank " << shape.size() << ", more than the scores' 4";
  std::array<int64_t, 4> strides{};
  int64_t stride = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t extent = shape[shape.size() - 1 - i];
    const size_t dim = 3 - i;
    KILN_CHECK(extent == 1 || extent == scores[dim], ValueError)
        << call.Prefix() << "'mask' " << mask.shape()
        << " does not broadcast to the scores (batch, heads, seq_q, seq_k) = "
        << Shape(std::vector<int64_t>(scores.begin(), scores.end()));
    strides[dim] = extent == 1 ? 0 : stride;
    stride *= extent;
  }
  return strides;
}

/// Requires `tensor` (input `name`) to be 3-D with a last dimension of `heads` equal parts;
/// returns the size of one.
int64_t PerHead(const KernelCall& call, const Tensor& tensor, const char* name, int64_t heads) {
  KILN_CHECK(tensor.ndim() == 3, ValueError)
      << call.Prefix() << "'" << name << "' must be 3-D, got shape " << tensor.shape();
  KILN_CHECK(tensor.shape(2) % heads == 0, ValueError)
      << call.Prefix() << "the last dimension of '" << name << "' " << tensor.shape()
      << " does not split into num_heads = " << heads << " heads";
  return tensor.shape(2) / heads;
}

/// The extents of q (batch, seq_q, heads x head_dim), k and v (batch, seq_k, ...) in `layout`
/// (BSNH; SBNH swaps batch and seq), checked against each other and the output.
void ReadExtents(const KernelCall& call, const std::string& layout, AttentionProblem& p) {
  const Tensor q = call.input(0);
  const Tensor k = call.input(1);
  const Tensor v = call.input(2);
  p.heads = call.Int("num_heads");
  KILN_CHECK(p.heads > 0, ValueError) << call.Prefix() << "num_heads must be positive";
  p.head_dim = PerHead(call, q, "q", p.heads);
  p.value_dim = PerHead(call, v, "v", p.heads);
  KILN_CHECK(PerHead(call, k, "k", p.heads) == p.head_dim, ValueError)
      << call.Prefix() << "'q' " << q.shape() << " and 'k' " << k.shape()
      << " differ in their last dimension";
  const int batch_axis = layout == "BSNH" ? 0 : 1;
  const int seq_axis = 1 - batch_axis;
  p.batch = q.shape(batch_axis);
  p.seq_q = q.shape(seq_axis);
  p.seq_k = k.shape(seq_axis);
  KILN_CHECK(k.shape(batch_axis) == p.batch && v.shape(batch_axis) == p.batch &&
                 v.shape(seq_axis) == p.seq_k,
             ValueError)
      << call.Prefix() << "'q' " << q.shape() << ", 'k' " << k.shape() << " and 'v' " << v.shape()
      << " do not agree in batch and sequence (layout " << layout << ")";
  std::vector<int64_t> out = ShapeOf(q);
  out[2] = v.shape(2);
  KILN_CHECK(ShapeOf(call.output(0)) == out, ValueError)
      << call.Prefix() << "the output has shape " << call.output(0).shape() << ", not "
      << Shape(out);
}

AttentionProblem ReadProblem(const KernelCall& call) {
  RequireFloat32Inputs(call);
  const std::string layout = call.Str("layout");
  KILN_CHECK(layout == "BSNH" || layout == "SBNH", ValueError)
      << call.Prefix() << "layout '" << layout << "' is not 'BSNH' or 'SBNH'";
  AttentionProblem p;
  ReadExtents(call, layout, p);
  p.scale = static_cast<float>(call.Float("scale"));
  const bool batch_first = layout == "BSNH";
  p.q = Data<const float>(call.input(0));
  p.k = Data<const float>(call.input(1));
  p.v = Data<const float>(call.input(2));
  p.mask = Data<const float>(call.input(3));
  p.out = Data<float>(call.output(0));
  p.q_strides = StridesOf(call.input(0), batch_first);
  p.k_strides = StridesOf(call.input(1), batch_first);
  p.v_strides = StridesOf(call.input(2), batch_first);
  p.out_strides = StridesOf(call.output(0), batch_first);
  p.mask_strides = MaskStrides(call, call.input(3), {p.batch, p.heads, p.seq_q, p.seq_k});
  return p;
}

/// row = row * scale + mask, the mask read with stride 1 or broadcast (stride 0).
KILN_CPU_CLONES void ScaleAndMask(float* __restrict__ row, int64_t n, float scale,
                                  const float* __restrict__ mask, int64_t mask_stride) {
  if (mask_stride == 0) {
    const float value = *mask;
    for (int64_t j = 0; j < n; ++j) row[j] = row[j] * scale + value;
    return;
  }
  for (int64_t j = 0; j < n; ++j) row[j] = row[j] * scale + mask[j];
}

/// Rows [row0, row0 + rows) of head `head` of batch `b`; `scores` and `probs` hold rows x seq_k
/// floats each.
void RunBlock(const AttentionProblem& p, int64_t b, int64_t head, int64_t row0, int64_t rows,
              float* scores, float* probs) {
  const float* q = p.q + b * p.q_strides.batch + row0 * p.q_strides.seq + head * p.head_dim;
  const float* k = p.k + b * p.k_strides.batch + head * p.head_dim;
  const float* v = p.v + b * p.v_strides.batch + head * p.value_dim;
  float* out = p.out + b * p.out_strides.batch + row0 * p.out_strides.seq + head * p.value_dim;
  // K^T as the GEMM's B (head_dim x seq_k): element (d, j) is k[j * seq stride + d].
  Gemm(rows, p.seq_k, p.head_dim, MatrixView{q, p.q_strides.seq, 1},
       MatrixView{k, 1, p.k_strides.seq}, scores, p.seq_k);
  const float* mask = p.mask + b * p.mask_strides[0] + head * p.mask_strides[1];
  for (int64_t i = 0; i < rows; ++i) {
    float* row = scores + i * p.seq_k;
    ScaleAndMask(row, p.seq_k, p.scale, mask + (row0 + i) * p.mask_strides[2], p.mask_strides[3]);
    SoftmaxRow(row, probs + i * p.seq_k, p.seq_k);
  }
  Gemm(rows, p.value_dim, p.seq_k, MatrixView{probs, p.seq_k, 1}, MatrixView{v, p.v_strides.seq, 1},
       out, p.out_strides.seq);
}

/// Query rows per task: whole sequences when batch x heads gives every thread work, else
/// blocks of them, so that seq 128 x 4 heads still spreads over 16 threads.
int64_t RowsPerTask(const AttentionProblem& p) {
  const int64_t pairs = p.batch * p.heads;
  const int64_t threads = runtime::NumThreads();
  if (pairs >= threads || p.seq_q <= kMinRowsPerBlock) return std::max<int64_t>(p.seq_q, 1);
  return std::max(kMinRowsPerBlock, CeilDiv(p.seq_q, CeilDiv(threads, pairs)));
}

void Attention(const KernelCall& call) {
  const AttentionProblem p = ReadProblem(call);
  const int64_t rows_per_task = RowsPerTask(p);
  const int64_t blocks = CeilDiv(p.seq_q, rows_per_task);
  // A chunk of tasks allocates its own scratch: runs of several executors may call this kernel
  // at once, so nothing may be shared between calls.
  runtime::ParallelFor(0, p.batch * p.heads * blocks, 1, [&](int64_t begin, int64_t end) {
    const size_t scratch = static_cast<size_t>(rows_per_task * p.seq_k);
    const std::unique_ptr<float[]> scores(new float[scratch]);
    const std::unique_ptr<float[]> probs(new float[scratch]);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t pair = task / blocks;
      const int64_t row0 = task % blocks * rows_per_task;
      RunBlock(p, pair / p.heads, pair % p.heads, row0, std::min(rows_per_task, p.seq_q - row0),
               scores.get(), probs.get());
    }
  });
}
KILN_CPU_KERNEL("nn.attention", Attention);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
