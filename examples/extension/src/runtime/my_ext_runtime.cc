// The runtime side of the my_ext codegen: the module kind "my_ext_json", a JSON graph runtime
// (kiln/runtime/json_runtime.h) that runs each op node of a region as one plain loop. The base
// class parses the graph, checks every call's tensors, serializes the module into an exported
// model and loads it back; a plugin writes only what its ops compute.
//
// It lives in libkiln_runtime_my_ext.so with the swish kernel, next to libkiln_runtime.so once
// installed, so a deployed model needs no compiler.
#include <kiln/runtime/json_runtime.h>
#include <kiln/runtime/memory.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace my_ext {
namespace {

using kiln::Array;
using kiln::Tensor;
using kiln::runtime::JsonEntry;
using kiln::runtime::JsonGraph;
using kiln::runtime::JsonNode;

enum class Kind { kAdd, kMultiply, kRelu, kAddRelu };

/// One op node: out = kind(a[, b]) over `size` elements.
struct Step {
  Kind kind;
  uint32_t node;
  JsonEntry a, b;
  int64_t size;
};

/// The op a node runs. The compiler side's predicates took only these ops, on float32 operands
/// of one shape; anything else is refused when the module is made or loaded, not mid-run.
Kind KindOf(const JsonGraph& graph, const JsonNode& node) {
  if (node.composite && node.name == "my_ext.add_relu") return Kind::kAddRelu;
  if (!node.composite && node.name == "add") return Kind::kAdd;
  if (!node.composite && node.name == "multiply") return Kind::kMultiply;
  if (!node.composite && node.name == "nn.relu") return Kind::kRelu;
  KILN_THROW(NotImplementedError) << "my_ext: '" << graph.symbol << "' has op '" << node.name
                                  << "', which my_ext does not run";
}

Step Plan(const JsonGraph& graph, uint32_t index) {
  const JsonNode& node = graph.nodes[index];
  const std::vector<int64_t>& shape = node.outputs[0].shape;
  for (const JsonEntry& input : node.inputs) {
    const kiln::runtime::JsonTensorSpec& spec = graph.spec(input);
    KILN_CHECK(spec.shape == shape && kiln::DataTypeEqual(spec.dtype, DLDataType{kDLFloat, 32, 1}),
               NotImplementedError)
        << "my_ext: op '" << node.name << "' of '" << graph.symbol
        << "' reads a broadcast or non-float32 operand; my_ext runs float32 operands of one shape";
  }
  int64_t size = 1;
  for (int64_t extent : shape) size *= extent;
  return Step{KindOf(graph, node), index, node.inputs[0], node.inputs.back(), size};
}

class MyExtRuntime : public kiln::runtime::JsonRuntimeBase {
 public:
  static constexpr const char* kPlugin = "my_ext";
  /// Bumped when this runtime reads graphs differently: older exports then fail to load clearly.
  static constexpr int64_t kVersion = 1;

  MyExtRuntime(std::string graph_json, Array<Tensor> constants)
      : JsonRuntimeBase(kPlugin, kVersion, std::move(graph_json), std::move(constants)) {
    for (uint32_t i = 0; i < graph().nodes.size(); ++i) {
      if (graph().nodes[i].kind == JsonNode::Kind::kOp) steps_.push_back(Plan(graph(), i));
    }
  }

 protected:
  /// Points the const nodes at their tensors and gives every op node a buffer of its own.
  void Init(const Array<Tensor>& constants) override {
    values_.assign(graph().nodes.size(), {});
    buffers_.clear();  // Init runs again after a failed attempt
    for (size_t i = 0; i < graph().const_nodes.size(); ++i) {
      values_[graph().const_nodes[i]] = {
          static_cast<float*>(constants[static_cast<int64_t>(i)].data())};
    }
    for (const Step& step : steps_) {
      buffers_.push_back(kiln::runtime::Empty(graph().nodes[step.node].outputs[0].shape,
                                              DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0}));
      values_[step.node] = {static_cast<float*>(buffers_.back().data())};
    }
  }

  void Run(const std::vector<DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) override {
    size_t next_input = 0;
    for (uint32_t index : graph().input_nodes) {
      values_[index].clear();
      for (size_t k = 0; k < graph().nodes[index].outputs.size(); ++k) {
        values_[index].push_back(Data(inputs[next_input++]));
      }
    }
    for (const Step& step : steps_) Compute(step);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const JsonEntry head = graph().heads[i];
      std::memcpy(Data(outputs[i]), values_[head.node][head.index],
                  static_cast<size_t>(kiln::CompactBytes(*outputs[i])));
    }
  }

 private:
  static float* Data(DLTensor* tensor) {
    return reinterpret_cast<float*>(static_cast<char*>(tensor->data) + tensor->byte_offset);
  }

  void Compute(const Step& step) {
    const float* a = values_[step.a.node][step.a.index];
    const float* b = values_[step.b.node][step.b.index];
    float* out = values_[step.node][0];
    switch (step.kind) {
      case Kind::kAdd:
        for (int64_t i = 0; i < step.size; ++i) out[i] = a[i] + b[i];
        break;
      case Kind::kMultiply:
        for (int64_t i = 0; i < step.size; ++i) out[i] = a[i] * b[i];
        break;
      case Kind::kRelu:
        for (int64_t i = 0; i < step.size; ++i) out[i] = std::max(a[i], 0.0F);
        break;
      case Kind::kAddRelu:
        for (int64_t i = 0; i < step.size; ++i) out[i] = std::max(a[i] + b[i], 0.0F);
        break;
    }
  }

  std::vector<Step> steps_;
  std::vector<Tensor> buffers_;
  std::vector<std::vector<float*>> values_;  ///< per node, per output: where it is this run
};

// The loader ("runtime.module.load_bytes.my_ext_json") and the creator the codegen calls.
KILN_REGISTER_JSON_RUNTIME(MyExtRuntime, "my_ext");

}  // namespace
}  // namespace my_ext
