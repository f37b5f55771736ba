// kiln::Build end to end on small programs written in the text format: the lowered graph's
// shape (what becomes a node, what stays a constant), numerics computed by hand, the artifact
// round trip, and the errors a user sees.
#include <kiln/codegen/graph_lowering.h>
#include <kiln/driver/build.h>
#include <kiln/ir/text_format.h>
#include <kiln/runtime/memory.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace kiln {
namespace {

Tensor FloatTensor(const std::vector<int64_t>& shape, const std::vector<float>& values) {
  Tensor tensor = runtime::Empty(shape, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  std::copy(values.begin(), values.end(), static_cast<float*>(tensor.data()));
  return tensor;
}

std::vector<float> Values(const Tensor& tensor) {
  const auto* data = static_cast<const float*>(tensor.data());
  return std::vector<float>(data, data + NumElements(tensor.dl_tensor()));
}

constexpr const char* kDenseRelu = R"(
def @main(%x: Tensor[(1, 2), float32]) {
  %0 = nn.dense(%x, const(float32, (2, 2), [1, -1, 2, 0]));
  %1 = add(%0, const(float32, (2), [0.5, -10]));
  %2 = nn.relu(%1);
  %2
})";

TEST(BuildTest, FusedChainRunsAndMatchesHandComputedValues) {
  Executable model = Build(ir::ParseModule(kDenseRelu));
  model.set_input("x", FloatTensor({1, 2}, {3, 4}));
  model.run();
  // dense: [3*1 + 4*-1, 3*2 + 4*0] = [-1, 6]; + [0.5, -10] = [-0.5, -4]; relu -> [0, 0].
  EXPECT_EQ(Values(model.get_output(0)), (std::vector<float>{0, 0}));
  model.set_input("x", FloatTensor({1, 2}, {5, 1}));
  model.run();
  // dense: [5 - 1, 10] = [4, 10]; + [0.5, -10] = [4.5, 0]; relu -> [4.5, 0].
  EXPECT_EQ(Values(model.get_output(0)), (std::vector<float>{4.5F, 0}));
}

TEST(BuildTest, ConstantsStayInTheProgramAndOneNodeRunsTheFusedGroup) {
  BuildOptions options;
  ir::IRModule mod = DefaultPipeline()(ir::ParseModule(kDenseRelu), options.pass_context);
  const codegen::LoweredGraph lowered = codegen::LowerToGraph(mod);
  const auto graph = nlohmann::json::parse(lowered.graph_json);
  ASSERT_EQ(graph["nodes"].size(), 1U);  // dense + add + relu fused into one function
  EXPECT_EQ(graph["inputs"].size(), 1U);
  EXPECT_EQ(graph["entries"].size(), 2U);  // x and the result: the weights are not entries
  EXPECT_EQ(lowered.constant_bytes, 4 * 4 + 2 * 4);
  EXPECT_EQ(lowered.program->ListFunctions().size(), 1U);
}

// a = dense(x, W), b = dense(a, W); c = relu(dense(b, W) + bias + a), the residual a dying
// there; then y = dense(c, W). W maps [p, q] to [p - q, 2p].
constexpr const char* kResidual = R"(
def @main(%x: Tensor[(1, 2), float32]) {
  %0 = nn.dense(%x, const(float32, (2, 2), [1, -1, 2, 0]));
  %1 = nn.dense(%0, const(float32, (2, 2), [1, -1, 2, 0]));
  %2 = nn.dense(%1, const(float32, (2, 2), [1, -1, 2, 0]));
  %3 = add(%2, const(float32, (2), [0.5, -10]));
  %4 = add(%3, %0);
  %5 = nn.relu(%4);
  nn.dense(%5, const(float32, (2, 2), [1, -1, 2, 0]))
})";

TEST(BuildTest, AResidualGroupWritesItsOutputOverItsResidual) {
  BuildOptions options;
  ir::IRModule mod = DefaultPipeline()(ir::ParseModule(kResidual), options.pass_context);
  const auto graph = nlohmann::json::parse(codegen::LowerToGraph(mod).graph_json);
  const nlohmann::json* residual_node = nullptr;
  for (const nlohmann::json& node : graph["nodes"]) {
    if (node.contains("in_place")) residual_node = &node;
  }
  ASSERT_NE(residual_node, nullptr) << graph.dump();
  const nlohmann::json& pair = (*residual_node)["in_place"][0];
  const nlohmann::json& output =
      graph["entries"][(*residual_node)["outputs"][pair["output"].get<size_t>()].get<size_t>()];
  const nlohmann::json& input =
      graph["entries"][(*residual_node)["inputs"][pair["input"].get<size_t>()].get<size_t>()];
  EXPECT_EQ(output["storage"], input["storage"]);
  EXPECT_EQ(output["offset"], input["offset"]);

  Executable model = Build(ir::ParseModule(kResidual));
  model.set_input("x", FloatTensor({1, 2}, {3, 1}));
  model.run();
  // a = [2, 6], b = [-4, 4], dense(b) = [-8, -8]; + bias = [-7.5, -18]; + a = [-5.5, -12];
  // relu: [0, 0]; y = [0, 0]. With x = [-1, 2]: a = [-3, -2], b = [-1, -6], dense(b) = [5, -2];
  // + bias = [5.5, -12]; + a = [2.5, -14]; relu: [2.5, 0]; y = [2.5, 5].
  EXPECT_EQ(Values(model.get_output(0)), (std::vector<float>{0, 0}));
  model.set_input("x", FloatTensor({1, 2}, {-1, 2}));
  model.run();
  EXPECT_EQ(Values(model.get_output(0)), (std::vector<float>{2.5F, 5}));
}

TEST(BuildTest, UnfusedOpsAreLoweredOneKernelEach) {
  BuildOptions options;
  options.pipeline = "InferType";
  Executable model = Build(ir::ParseModule(kDenseRelu), options);
  model.set_input("x", FloatTensor({1, 2}, {5, 1}));
  model.run();
  EXPECT_EQ(Values(model.get_output(0)), (std::vector<float>{4.5F, 0}));
}

TEST(BuildTest, TupleResultsInputsAndConstantsBecomeOutputs) {
  // Outputs that no node computes: a parameter, a constant, and one value listed twice.
  Executable model = Build(ir::ParseModule(R"(
def @main(%x: Tensor[(2), float32]) {
  %0 = negative(%x);
  (%0, %x, const(float32, (2), [7, 8]), %0)
})"));
  ASSERT_EQ(model.num_outputs(), 4);
  model.set_input("x", FloatTensor({2}, {1, -2}));
  model.run();
  EXPECT_EQ(Values(model.get_output(0)), (std::vector<float>{-1, 2}));
  EXPECT_EQ(Values(model.get_output(1)), (std::vector<float>{1, -2}));
  EXPECT_EQ(Values(model.get_output(2)), (std::vector<float>{7, 8}));
  EXPECT_EQ(Values(model.get_output(3)), (std::vector<float>{-1, 2}));
}

TEST(BuildTest, SplitPiecesFeedLaterNodes) {
  Executable model = Build(ir::ParseModule(R"(
def @main(%x: Tensor[(4), float32]) {
  %0 = split(%x, sections=[1, 3]);
  %1 = sum(%0.1, axis=[0]);
  (%0.0, %1)
})"));
  model.set_input("x", FloatTensor({4}, {1, 2, 3, 4}));
  model.run();
  EXPECT_EQ(Values(model.get_output(0)), (std::vector<float>{1}));
  EXPECT_EQ(Values(model.get_output(1)), (std::vector<float>{9}));
}

TEST(BuildTest, ParamsBecomeConstants) {
  BuildOptions options;
  options.params.Set(String("w"), FloatTensor({2}, {10, 20}));
  Executable model = Build(ir::ParseModule(R"(
def @main(%x: Tensor[(2), float32], %w: Tensor[(2), float32]) {
  multiply(%x, %w)
})"),
                           options);
  ASSERT_EQ(model.num_inputs(), 1);
  model.set_input("x", FloatTensor({2}, {2, 3}));
  model.run();
  EXPECT_EQ(Values(model.get_output(0)), (std::vector<float>{20, 60}));
}

TEST(BuildTest, ExportedArtifactLoadsAndRunsTheSame) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("kiln_build_test_" + std::to_string(::getpid()) + ".so");
  Build(ir::ParseModule(kDenseRelu)).export_library(path.string());
  Executable loaded = Executable::Load(path.string());
  loaded.set_input("x", FloatTensor({1, 2}, {5, 1}));
  loaded.run();
  EXPECT_EQ(Values(loaded.get_output(0)), (std::vector<float>{4.5F, 0}));
  std::filesystem::remove(path);
}

/// "<kind>: <message>" of the error Build raises.
std::string BuildError(const std::string& text, const BuildOptions& options) {
  try {
    Build(ir::ParseModule(text), options);
  } catch (const Error& error) {
    return error.kind() + ": " + error.message();
  }
  ADD_FAILURE() << "Build did not fail";
  return "";
}

TEST(BuildTest, ErrorsNameWhatIsWrong) {
  BuildOptions tpu;
  tpu.target = "tpu";
  EXPECT_NE(BuildError(kDenseRelu, tpu).find("ValueError: unknown build target 'tpu'"),
            std::string::npos);
  BuildOptions bad_param;
  bad_param.params.Set(String("weights"), FloatTensor({1}, {1}));
  const std::string message = BuildError(kDenseRelu, bad_param);
  EXPECT_NE(message.find("ValueError: params: @main has no parameter 'weights'"),
            std::string::npos);
  EXPECT_NE(message.find("its parameters: x"), std::string::npos);
}

}  // namespace
}  // namespace kiln
