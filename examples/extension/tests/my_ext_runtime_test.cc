// The runtime side alone (libkiln_runtime_my_ext.so, linking no compiler): the "my_ext_json"
// module made from a hand-written JSON graph, its numbers, its save/load round trip, and the
// op it refuses. This is how a plugin's runtime is tested without compiling a model.
#include <kiln/ffi/plugin.h>
#include <kiln/ffi/tensor.h>
#include <kiln/runtime/module.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using kiln::Array;
using kiln::Function;
using kiln::String;
using kiln::Tensor;
using kiln::runtime::Module;

// x * c, then relu(that + y) as the composite my_ext.add_relu; both are results.
constexpr const char* kGraph = R"({
  "version": 1, "symbol": "kiln_my_ext_0",
  "nodes": [
    {"kind": "input", "name": "x", "outputs": [{"shape": [4], "dtype": "float32"}]},
    {"kind": "input", "name": "y", "outputs": [{"shape": [4], "dtype": "float32"}]},
    {"kind": "const", "name": "kiln_my_ext_0_const_0",
     "outputs": [{"shape": [4], "dtype": "float32"}]},
    {"kind": "op", "op": "multiply", "attrs": {}, "inputs": [[0, 0], [2, 0]],
     "outputs": [{"shape": [4], "dtype": "float32"}]},
    {"kind": "op", "op": "my_ext.add_relu", "composite": true,
     "attrs": {"add": {}, "nn.relu": {}}, "inputs": [[3, 0], [1, 0]],
     "outputs": [{"shape": [4], "dtype": "float32"}]}
  ],
  "heads": [[4, 0], [3, 0]]
})";

Tensor Vector(std::vector<float>* values) {
  return Tensor::FromMemory(values->data(), {static_cast<int64_t>(values->size())},
                            DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0}, nullptr);
}

class MyExtRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override { kiln::LoadPlugin(MY_EXT_RUNTIME); }

  Module Create(const std::string& graph) {
    return Function::GetGlobalRequired("runtime.module.create.my_ext_json")(
               String(graph), Array<Tensor>{Vector(&scale_)})
        .cast<Module>();
  }

  /// Runs kiln_my_ext_0 and checks both results against values worked out by hand.
  void ExpectComputes(const Module& module) {
    std::vector<float> x = {1, -2, 3, -4};
    std::vector<float> y = {0.5F, 1, 1, 1};
    std::vector<float> add_relu(4, -1);
    std::vector<float> product(4, -1);
    module.GetFunctionRequired("kiln_my_ext_0")(Vector(&x), Vector(&y), Vector(&add_relu),
                                                Vector(&product));
    EXPECT_EQ(product, (std::vector<float>{2, -4, -3, -2}));
    EXPECT_EQ(add_relu, (std::vector<float>{2.5F, 0, 0, 0}));
  }

  std::vector<float> scale_ = {2, 2, -1, 0.5F};
};

TEST_F(MyExtRuntimeTest, RunsEachOpNodeAsALoop) {
  const Module module = Create(kGraph);
  EXPECT_EQ(module->kind(), "my_ext_json");
  ExpectComputes(module);
}

TEST_F(MyExtRuntimeTest, SavedModuleLoadsBackAndComputesTheSame) {
  const std::optional<kiln::Bytes> bytes = Create(kGraph)->SaveToBytes();
  ASSERT_TRUE(bytes.has_value());
  ExpectComputes(
      Function::GetGlobalRequired("runtime.module.load_bytes.my_ext_json")(*bytes).cast<Module>());
}

TEST_F(MyExtRuntimeTest, AnOpItDoesNotRunIsRefusedWhenTheModuleIsMade) {
  std::string graph = kGraph;
  graph.replace(graph.find("\"multiply\""), std::string("\"multiply\"").size(), "\"exp\"");
  try {
    Create(graph);
    FAIL() << "expected a NotImplementedError";
  } catch (const kiln::Error& error) {
    EXPECT_EQ(error.kind(), "NotImplementedError");
    EXPECT_NE(error.message().find("'kiln_my_ext_0' has op 'exp'"), std::string::npos)
        << error.message();
  }
}

}  // namespace
