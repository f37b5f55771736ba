// JsonRuntimeBase through a tiny subclass that adds its one constant to its input: Init runs
// once however many threads call, the saved form round-trips, and loading and calling fail
// with errors that name what is wrong.
#include <kiln/runtime/json_runtime.h>
#include <kiln/runtime/memory.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "testing/expect_error.h"

namespace kiln {
namespace {

using test_util::ExpectError;

constexpr const char* kGraph = R"({
  "version": 1, "symbol": "kiln_test_0",
  "nodes": [
    {"kind": "input", "name": "x", "outputs": [{"shape": [2, 3], "dtype": "float32"}]},
    {"kind": "const", "name": "kiln_test_0_const_0",
     "outputs": [{"shape": [2, 3], "dtype": "float32"}]},
    {"kind": "op", "op": "add", "attrs": {"alpha": {"float": "-inf"}, "axes": {"ints": [1]}},
     "inputs": [[0, 0], [1, 0]], "outputs": [{"shape": [2, 3], "dtype": "float32"}]}
  ],
  "heads": [[2, 0]]
})";

std::atomic<int> init_calls{0};

/// out = x + constant 0. Init is slow on purpose, so that concurrent first calls overlap it.
template <int64_t Version>
class AddConstantRuntime : public runtime::JsonRuntimeBase {
 public:
  static constexpr const char* kPlugin = "adder";
  static constexpr int64_t kVersion = Version;
  AddConstantRuntime(std::string graph_json, Array<Tensor> constants)
      : JsonRuntimeBase(kPlugin, kVersion, std::move(graph_json), std::move(constants)) {}

 protected:
  void Init(const Array<Tensor>& constants) override {
    ++init_calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    addend_ = static_cast<const float*>(constants[0].data());
  }
  void Run(const std::vector<DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) override {
    const auto* x = static_cast<const float*>(inputs[0]->data);
    auto* out = static_cast<float*>(outputs[0]->data);
    for (int64_t i = 0; i < NumElements(*inputs[0]); ++i) out[i] = x[i] + addend_[i];
  }

 private:
  const float* addend_ = nullptr;
};
using AdderV1 = AddConstantRuntime<1>;
using AdderV2 = AddConstantRuntime<2>;

Tensor Floats(const std::vector<int64_t>& shape, float start) {
  Tensor tensor = runtime::Empty(shape, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    static_cast<float*>(tensor.data())[i] = start + static_cast<float>(i);
  }
  return tensor;
}

std::vector<float> Values(const Tensor& tensor) {
  const auto* data = static_cast<const float*>(tensor.data());
  return std::vector<float>(data, data + tensor.NumElements());
}

runtime::Module MakeAdder() {
  return runtime::CreateJsonRuntime<AdderV1>(String(kGraph), Array<Tensor>{Floats({2, 3}, 10)});
}

TEST(JsonRuntimeTest, ParsesNodesEntriesAndTaggedAttributes) {
  const runtime::JsonGraph graph = runtime::ParseJsonGraph(kGraph);
  EXPECT_EQ(graph.symbol, "kiln_test_0");
  EXPECT_EQ(graph.input_nodes, std::vector<uint32_t>{0});
  EXPECT_EQ(graph.const_nodes, std::vector<uint32_t>{1});
  const runtime::JsonNode& add = graph.nodes[2];
  EXPECT_EQ(add.name, "add");
  ASSERT_EQ(add.inputs.size(), 2U);
  EXPECT_EQ(add.inputs[1].node, 1U);
  EXPECT_EQ(add.attrs.at("alpha").cast<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(add.attrs.at("axes").cast<Array<Any>>()[0].cast<int64_t>(), 1);
  EXPECT_EQ(graph.spec(graph.heads[0]).shape, (std::vector<int64_t>{2, 3}));
}

TEST(JsonRuntimeTest, ModuleHasOneFunctionNamedBySymbolAndPluginNames) {
  runtime::Module module = MakeAdder();
  EXPECT_EQ(module->kind(), "adder_json");
  EXPECT_EQ(module->compatibility(), "json/adder/1");
  EXPECT_EQ(module->runtime_library(), "libkiln_runtime_adder.so");
  EXPECT_EQ(module->ListFunctions(), std::vector<std::string>{"kiln_test_0"});
  EXPECT_FALSE(module.GetFunction("kiln_test_1").has_value());
}

TEST(JsonRuntimeTest, InitRunsOnceAcrossConcurrentCallers) {
  init_calls = 0;
  runtime::Module module = MakeAdder();
  Function run = module.GetFunctionRequired("kiln_test_0");
  constexpr int kThreads = 8;
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  std::atomic<int> wrong{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&run, &wrong, t] {
      for (int i = 0; i < 25; ++i) {
        Tensor x = Floats({2, 3}, static_cast<float>(t * 100 + i));
        Tensor out = Floats({2, 3}, 0);
        run(x, out);
        for (int64_t j = 0; j < 6; ++j) {
          const float expected = static_cast<float>(t * 100 + i + j) + 10.0F + j;
          if (Values(out)[j] != expected) ++wrong;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(init_calls.load(), 1);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(JsonRuntimeTest, SavedModuleLoadsBackWithItsGraphAndConstants) {
  runtime::Module module = MakeAdder();
  const Bytes saved = *module->SaveToBytes();
  runtime::Module loaded = runtime::LoadJsonRuntime<AdderV1>(saved);
  const auto* base = dynamic_cast<const runtime::JsonRuntimeBase*>(loaded.get());
  ASSERT_NE(base, nullptr);
  EXPECT_EQ(base->graph_json(), kGraph);
  EXPECT_EQ(Values(base->constants()[0]), Values(Floats({2, 3}, 10)));
  Tensor out = Floats({2, 3}, 0);
  loaded.GetFunctionRequired("kiln_test_0")(Floats({2, 3}, 1), out);
  EXPECT_EQ(Values(out), (std::vector<float>{11, 13, 15, 17, 19, 21}));
  EXPECT_EQ(std::string(loaded->SaveToBytes()->view()), std::string(saved.view()));
}

TEST(JsonRuntimeTest, LoadingForAnotherVersionNamesBothAndTheLibrary) {
  const Bytes saved = *MakeAdder()->SaveToBytes();
  ExpectError([&] { runtime::LoadJsonRuntime<AdderV2>(saved); }, "RuntimeError",
              {"made for 'json/adder/1'", "libkiln_runtime_adder.so reads 'json/adder/2'"});
}

TEST(JsonRuntimeTest, TruncatedOrCorruptSavedModuleIsAValueError) {
  const std::string saved(MakeAdder()->SaveToBytes()->view());
  for (size_t size : {size_t{0}, size_t{20}, saved.size() - 1}) {
    ExpectError([&] { runtime::LoadJsonRuntime<AdderV1>(Bytes(saved.substr(0, size))); },
                "ValueError", {"the saved JSON graph module is truncated"});
  }
  ExpectError([&] { runtime::LoadJsonRuntime<AdderV1>(Bytes(saved + "x")); }, "ValueError",
              {"1 unexpected bytes"});
}

TEST(JsonRuntimeTest, WrongInputIsNamedWithTheSymbol) {
  Function run = MakeAdder().GetFunctionRequired("kiln_test_0");
  ExpectError(
      [&] {
        run(Floats({2, 4}, 0), Floats({2, 3}, 0));
      },
      "ValueError",
      {"'kiln_test_0': input 'x' expects a compact (2, 3) float32, got (2, 4) float32"});
  ExpectError(
      [&] {
        run(Floats({2, 3}, 0), Floats({3, 2}, 0));
      },
      "ValueError", {"'kiln_test_0': output 0 expects"});
  ExpectError(
      [&] {
        run(Floats({2, 3}, 0));
      },
      "TypeError", {"'kiln_test_0' takes 1 inputs and 1 outputs, got 1 arguments"});
  ExpectError(
      [&] {
        run(1, Floats({2, 3}, 0));
      },
      "TypeError", {"input 'x' must be a tensor, got int"});
}

TEST(JsonRuntimeTest, ConstantsMustMatchTheirNodes) {
  ExpectError([] { runtime::CreateJsonRuntime<AdderV1>(String(kGraph), Array<Tensor>{}); },
              "ValueError", {"has 1 constants, but 0 tensors were given"});
  ExpectError(
      [] {
        runtime::CreateJsonRuntime<AdderV1>(String(kGraph), Array<Tensor>{Floats({3, 2}, 0)});
      },
      "ValueError", {"constant 'kiln_test_0_const_0' must be a compact CPU tensor of (2, 3)"});
}

TEST(JsonRuntimeTest, MalformedGraphsAreValueErrors) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "malformed"},
      {R"({"version": 2, "symbol": "s", "nodes": [], "heads": []})", "format version 2"},
      {R"({"version": 1, "symbol": "s", "nodes": [], "heads": [[0, 0]]})",
       "does not name an output of an earlier node"},
      {R"({"version": 1, "symbol": "s", "nodes": [{"kind": "op", "op": "f", "inputs": [[0, 0]],
          "outputs": []}], "heads": []})",
       "does not name an output of an earlier node"},
      {R"({"version": 1, "symbol": "s", "nodes": [{"kind": "input", "name": "x",
          "outputs": [{"shape": [2], "dtype": "real32"}]}], "heads": []})",
       "unknown dtype 'real32'"},
      {R"({"version": 1, "symbol": "s", "nodes": [{"kind": "param", "name": "x",
          "outputs": []}], "heads": []})",
       "node kind 'param'"},
      {R"({"version": 1, "symbol": "s", "nodes": [{"kind": "op", "op": "f", "inputs": [],
          "attrs": {"a": {"complex": 1}}, "outputs": []}], "heads": []})",
       "unknown attribute tag 'complex'"},
  };
  for (const auto& test_case : cases) {
    SCOPED_TRACE(test_case.first);
    ExpectError([&test_case] { runtime::ParseJsonGraph(test_case.first); }, "ValueError",
                {"JSON graph: ", test_case.second});
  }
}

}  // namespace
}  // namespace kiln
