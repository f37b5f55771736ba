// libFuzzer target for the JSON graph runtime's loader (libkiln_json_runtime: the saved form of
// every external-codegen module in an artifact): any byte string must load or raise a
// kiln::Error; never crash, hang or read out of bounds (run under ASan/UBSan). What loads must
// save back to the same bytes, and is called once on zero-filled tensors of its graph's specs,
// which exercises the argument checks and the once-only Init.
#include <kiln/ffi/error.h>
#include <kiln/runtime/json_runtime.h>
#include <kiln/runtime/memory.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

/// A runtime that computes nothing: the base class is what is fuzzed.
class NullJsonRuntime : public kiln::runtime::JsonRuntimeBase {
 public:
  static constexpr const char* kPlugin = "fuzz";
  static constexpr int64_t kVersion = 1;
  NullJsonRuntime(std::string graph_json, kiln::Array<kiln::Tensor> constants)
      : JsonRuntimeBase(kPlugin, kVersion, std::move(graph_json), std::move(constants)) {}

 protected:
  void Init(const kiln::Array<kiln::Tensor>& /*constants*/) override {}
  void Run(const std::vector<DLTensor*>& /*inputs*/,
           const std::vector<DLTensor*>& /*outputs*/) override {}
};

/// Bytes a call would allocate are capped so that a graph claiming huge tensors is not run.
constexpr int64_t kMaxCallBytes = int64_t{1} << 20;

void CallOnZeros(const kiln::runtime::Module& module) {
  const auto* base = dynamic_cast<const kiln::runtime::JsonRuntimeBase*>(module.get());
  const kiln::runtime::JsonGraph& graph = base->graph();
  std::vector<kiln::runtime::JsonTensorSpec> specs;
  for (uint32_t index : graph.input_nodes) {
    for (const auto& spec : graph.nodes[index].outputs) specs.push_back(spec);
  }
  for (const kiln::runtime::JsonEntry& head : graph.heads) specs.push_back(graph.spec(head));
  int64_t total = 0;
  std::vector<kiln::AnyView> args;
  std::vector<kiln::Tensor> tensors;
  for (const auto& spec : specs) {
    int64_t bytes = kiln::ElementBytes(spec.dtype);
    for (int64_t extent : spec.shape) bytes *= extent;  // the parser bounded the product
    total += bytes;
    if (total > kMaxCallBytes) return;
    tensors.push_back(kiln::runtime::Empty(spec.shape, spec.dtype, DLDevice{kDLCPU, 0}));
    std::memset(tensors.back().data(), 0, static_cast<size_t>(bytes));
  }
  for (const kiln::Tensor& tensor : tensors) args.emplace_back(tensor);
  module.GetFunctionRequired(graph.symbol)
      .CallPacked(args.data(), static_cast<int32_t>(args.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    const kiln::runtime::Module module =
        kiln::runtime::LoadJsonRuntime<NullJsonRuntime>(kiln::Bytes(input));
    // The saved form has no slack: what loads is exactly what saving writes.
    if (std::string(module->SaveToBytes()->view()) != input) std::abort();
    CallOnZeros(module);
  } catch (const kiln::Error&) {  // NOLINT(bugprone-empty-catch): rejecting input is expected
  }
  return 0;
}
