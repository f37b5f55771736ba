// libkiln_runtime_blas.so, the runtime side of the blas plugin: the "blas_json" module kind, a
// JSON graph runtime whose op nodes (nn.dense, matmul, nn.batch_matmul) each run as a loop of
// cblas_sgemm calls. A result is written in place; other values get buffers at Init.
#include <cblas.h>

#include <kiln/runtime/json_runtime.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/thread_pool.h>

#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace blas {
namespace {

using runtime::JsonEntry;

/// C[b] = op(A[b]) op(B[b]) for b < batch, row-major; a batch stride of 0 broadcasts.
struct Gemm {
  JsonEntry a, b;
  uint32_t node = 0;
  int64_t head = -1;  ///< the first output this node is, written in place; -1 for none
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, m = 0, n = 0, k = 0, stride_a = 0, stride_b = 0;
};

int64_t Product(std::vector<int64_t>::const_iterator begin,
                std::vector<int64_t>::const_iterator end) {
  int64_t product = 1;
  for (; begin != end; ++begin) product *= *begin;
  return product;
}

/// Shapes were checked by type inference when the region was built; only the op is checked.
Gemm Plan(const runtime::JsonGraph& graph, uint32_t index) {
  const runtime::JsonNode& node = graph.nodes[index];
  const bool known =
      node.name == "nn.dense" || node.name == "matmul" || node.name == "nn.batch_matmul";
  KILN_CHECK(known && !node.composite && node.inputs.size() == 2, NotImplementedError)
      << "blas: '" << graph.symbol << "' has op '" << node.name << "', which blas does not run";
  const std::vector<int64_t>& a = graph.spec(node.inputs[0]).shape;
  const std::vector<int64_t>& b = graph.spec(node.inputs[1]).shape;
  const std::vector<int64_t>& c = node.outputs[0].shape;
  Gemm gemm{node.inputs[0], node.inputs[1], index, -1};
  for (size_t i = 0; i < graph.heads.size() && gemm.head < 0; ++i) {
    if (graph.heads[i].node == index) gemm.head = static_cast<int64_t>(i);
  }
  gemm.n = c.back();
  if (node.name == "nn.dense" || (node.name == "matmul" && b.size() == 2)) {
    gemm.trans_b = node.name == "nn.dense";
    gemm.k = a.back();
    gemm.m = Product(a.begin(), a.end() - 1);
  } else {  // matmul over batches, nn.batch_matmul
    gemm.trans_a = node.name != "matmul" && node.attrs.at("transpose_a").cast<bool>();
    gemm.trans_b = node.name != "matmul" && node.attrs.at("transpose_b").cast<bool>();
    gemm.m = c[c.size() - 2];
    gemm.k = gemm.trans_a ? a[a.size() - 2] : a.back();
    gemm.batch = Product(c.begin(), c.end() - 2);
    gemm.stride_a = Product(a.begin(), a.end() - 2) == 1 ? 0 : gemm.m * gemm.k;
    gemm.stride_b = Product(b.begin(), b.end() - 2) == 1 ? 0 : gemm.k * gemm.n;
  }
  return gemm;
}

class BlasRuntime : public runtime::JsonRuntimeBase {
 public:
  static constexpr const char* kPlugin = "blas";
  static constexpr int64_t kVersion = 1;

  BlasRuntime(std::string graph_json, Array<Tensor> constants)
      : JsonRuntimeBase(kPlugin, kVersion, std::move(graph_json), std::move(constants)) {
    for (uint32_t i = 0; i < graph().nodes.size(); ++i) {
      for (const runtime::JsonTensorSpec& spec : graph().nodes[i].outputs) {
        KILN_CHECK(DataTypeEqual(spec.dtype, DLDataType{kDLFloat, 32, 1}), NotImplementedError)
            << "blas: '" << graph().symbol << "' has a " << DataTypeToString(spec.dtype)
            << " value; blas runs float32 only";
      }
      if (graph().nodes[i].kind == runtime::JsonNode::Kind::kOp) gemms_.push_back(Plan(graph(), i));
    }
  }

 protected:
  void Init(const Array<Tensor>& constants) override {
    // OpenBLAS runs its own threads; give it as many as Kiln's pool (KILN_NUM_THREADS, the
    // affinity mask, the cgroup quota). Kiln's workers sleep while a region runs.
    static std::once_flag threads_set;
    std::call_once(threads_set, [] { openblas_set_num_threads(runtime::NumThreads()); });
    values_.assign(graph().nodes.size(), {});
    for (int64_t i = 0; i < constants.size(); ++i) {
      values_[graph().const_nodes[static_cast<size_t>(i)]] = {
          static_cast<float*>(constants[i].data())};
    }
    for (const Gemm& gemm : gemms_) {
      scratch_.push_back(gemm.head >= 0
                             ? Tensor()
                             : runtime::Empty(graph().nodes[gemm.node].outputs[0].shape,
                                              DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0}));
    }
  }

  void Run(const std::vector<DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) override {
    size_t next_input = 0;
    for (uint32_t index : graph().input_nodes) {
      std::vector<float*>& value = values_[index];
      value.clear();
      for (size_t i = 0; i < graph().nodes[index].outputs.size(); ++i) {
        value.push_back(Data(inputs[next_input++]));
      }
    }
    for (size_t i = 0; i < gemms_.size(); ++i) {
      const Gemm& g = gemms_[i];
      float* c = g.head >= 0 ? Data(outputs[g.head]) : static_cast<float*>(scratch_[i].data());
      const float* a = values_[g.a.node][g.a.index];
      const float* b = values_[g.b.node][g.b.index];
      for (int64_t batch = 0; batch < g.batch; ++batch) {
        cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
                    g.trans_b ? CblasTrans : CblasNoTrans, g.m, g.n, g.k, 1.0F,
                    a + batch * g.stride_a, g.trans_a ? g.m : g.k, b + batch * g.stride_b,
                    g.trans_b ? g.k : g.n, 0.0F, c + batch * g.m * g.n, g.n);
      }
      values_[g.node] = {c};
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      const JsonEntry head = graph().heads[i];
      const float* value = values_[head.node][head.index];
      if (value != Data(outputs[i])) {
        std::memcpy(Data(outputs[i]), value, static_cast<size_t>(CompactBytes(*outputs[i])));
      }
    }
  }

 private:
  static float* Data(DLTensor* tensor) {
    return reinterpret_cast<float*>(static_cast<char*>(tensor->data) + tensor->byte_offset);
  }

  std::vector<Gemm> gemms_;
  std::vector<Tensor> scratch_;
  std::vector<std::vector<float*>> values_;  ///< per node, per output: where it is this run
};

KILN_REGISTER_JSON_RUNTIME(BlasRuntime, "blas");

}  // namespace
}  // namespace blas
}  // namespace kiln
