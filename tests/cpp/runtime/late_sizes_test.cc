// Sizes that tensor values decide (docs/design.md §22), at the graph executor's level: a node
// counts the positive elements of its input, the graph JSON defines the size `n` as that count,
// and the next node's output of shape (n,) is allocated once `n` is read. The kernels are plain
// C++ in a test-only module, so only the executor's mechanism is under test.
#include <kiln/ffi/map.h>
#include <kiln/runtime/graph_executor.h>
#include <kiln/runtime/memory.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/expect_error.h"

namespace kiln {
namespace runtime {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kFloat32{kDLFloat, 32, 1};

float* Floats(DLTensor* tensor) {
  return reinterpret_cast<float*>(static_cast<char*>(tensor->data) + tensor->byte_offset);
}

int64_t Count(const DLTensor* tensor) {
  int64_t n = 1;
  for (int32_t i = 0; i < tensor->ndim; ++i) n *= tensor->shape[i];
  return n;
}

/// count(x, out): out[0] = the number of positive x, plus `offset` (a test knob for bad counts).
/// positives(x, out): out = the positive x in order, out's extent being that count.
/// double(x, out): out = 2 * x.
class KernelsObj : public ModuleObj {
 public:
  explicit KernelsObj(int64_t offset) : offset_(offset) {}
  std::string kind() const override { return "testing_late_sizes"; }
  std::optional<Function> GetFunction(const std::string& name) override {
    const int64_t offset = offset_;
    if (name == "count") {
      return Function::FromTyped(
          [offset](DLTensor* x, DLTensor* out) {
            int64_t n = 0;
            for (int64_t i = 0; i < Count(x); ++i) n += Floats(x)[i] > 0;
            *reinterpret_cast<int64_t*>(static_cast<char*>(out->data) + out->byte_offset) =
                n + offset;
          },
          name);
    }
    if (name == "positives") {
      return Function::FromTyped(
          [](DLTensor* x, DLTensor* out) {
            int64_t j = 0;
            for (int64_t i = 0; i < Count(x); ++i) {
              if (Floats(x)[i] > 0 && j < Count(out)) Floats(out)[j++] = Floats(x)[i];
            }
          },
          name);
    }
    if (name == "positives_returned") {  // positives, allocating its output
      return Function::FromPacked([](const AnyView* args, int32_t, Any* result) {
        const auto* x = args[0].cast<DLTensor*>();
        std::vector<float> kept;
        for (int64_t i = 0; i < Count(x); ++i) {
          if (Floats(const_cast<DLTensor*>(x))[i] > 0)
            kept.push_back(Floats(const_cast<DLTensor*>(x))[i]);
        }
        Tensor out = Empty({static_cast<int64_t>(kept.size())}, kFloat32, kCpu);
        std::copy(kept.begin(), kept.end(), static_cast<float*>(out.data()));
        *result = Array<Tensor>{out};
      });
    }
    if (name == "double") {
      return Function::FromTyped(
          [](DLTensor* x, DLTensor* out) {
            for (int64_t i = 0; i < Count(out); ++i) Floats(out)[i] = 2 * Floats(x)[i];
          },
          name);
    }
    return std::nullopt;
  }
  std::vector<std::string> ListFunctions() const override {
    return {"count", "positives", "positives_returned", "double"};
  }

 private:
  int64_t offset_;
};

/// x (batch,) -> count -> c (1,) defining n; x -> positives -> p (n,); p -> double -> y (n,).
const char* kGraph = R"({
  "version": 1,
  "entries": [
    {"shape": ["batch"], "dtype": "float32"},
    {"shape": [1], "dtype": "int64"},
    {"shape": ["n"], "dtype": "float32"},
    {"shape": ["n"], "dtype": "float32"}
  ],
  "inputs": [{"name": "x", "entry": 0}],
  "nodes": [
    {"name": "count", "func": "count", "inputs": [0], "outputs": [1]},
    {"name": "positives", "func": "positives", "inputs": [0], "outputs": [2]},
    {"name": "double", "func": "double", "inputs": [2], "outputs": [3]}
  ],
  "outputs": [3],
  "size_definitions": [{"entry": 1, "sizes": ["n"]}],
  "checks": [{"lhs": "batch", "relation": ">=", "rhs": "n", "message": "more positives than x"}]
})";

Module Executor(int64_t offset = 0, const std::string& graph = kGraph) {
  return GraphExecutorCreate(graph, Module(make_object<KernelsObj>(offset)), kCpu);
}

std::vector<float> Invoke(const Module& executor, std::vector<float> x) {
  Tensor input =
      Tensor::FromMemory(x.data(), {static_cast<int64_t>(x.size())}, kFloat32, kCpu, nullptr);
  const auto outputs =
      executor.GetFunctionRequired("invoke")(Array<Tensor>{input}, nullptr).cast<Array<Tensor>>();
  const Tensor y = outputs[0];
  const auto* data = static_cast<const float*>(y.data());
  return std::vector<float>(data, data + y.NumElements());
}

TEST(LateSizesTest, OutputIsSizedByTheValuesANodeComputed) {
  const Module executor = Executor();
  EXPECT_EQ(Invoke(executor, {1, -2, 3, -4}), (std::vector<float>{2, 6}));
  EXPECT_EQ(Invoke(executor, {-1, 5, 0.5f, 2, 7}), (std::vector<float>{10, 1, 4, 14}));
  // Every run reads its own size: the same signature with another count.
  EXPECT_EQ(Invoke(executor, {1, 1, 1, 1}), (std::vector<float>{2, 2, 2, 2}));
}

TEST(LateSizesTest, ASizeOfZeroGivesAnEmptyOutput) {
  EXPECT_TRUE(Invoke(Executor(), {-1, -2, 0}).empty());
}

TEST(LateSizesTest, StatefulRunKeepsTheLateOutputForGetOutput) {
  const Module executor = Executor();
  std::vector<float> x{3, -1, 4};
  executor.GetFunctionRequired("set_input")(
      "x", Tensor::FromMemory(x.data(), {3}, kFloat32, kCpu, nullptr));
  executor.GetFunctionRequired("run")();
  const Tensor y = executor.GetFunctionRequired("get_output")(0).cast<Tensor>();
  ASSERT_EQ(y.shape(), Shape({2}));
  EXPECT_EQ(static_cast<const float*>(y.data())[1], 8.0f);
}

TEST(LateSizesTest, SymbolicOutputInfoNamesTheLateSize) {
  const auto info = Executor().GetFunctionRequired("get_output_info")().cast<Map<String, Any>>();
  EXPECT_EQ(info.at("symbolic_shapes").cast<Array<String>>()[0].str(), "(n,)");
}

TEST(LateSizesTest, NegativeComputedSizeIsAValueErrorNamingTheSize) {
  test_util::ExpectError(
      [&] {
        Invoke(Executor(/*offset=*/-5), {1, 2});
      },
      "ValueError", {"'n' = -3", "cannot be negative", "entry 1"});
}

TEST(LateSizesTest, ChecksOnLateSizesRunOnceTheSizeIsRead) {
  test_util::ExpectError(
      [&] {
        Invoke(Executor(/*offset=*/5), {1, 2});
      },
      "ValueError", {"more positives than x", "batch >= n", "n = 7"});
}

/// kGraph with `from` replaced by `to`.
std::string Replaced(const std::string& from, const std::string& to) {
  std::string text = kGraph;
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(LateSizesTest, AbsurdComputedSizeIsAnErrorNotACrash) {
  const std::string graph = Replaced(
      R"(,
  "checks": [{"lhs": "batch", "relation": ">=", "rhs": "n", "message": "more positives than x"}])",
      "");
  test_util::ExpectError([&] { Invoke(Executor(/*offset=*/int64_t{1} << 61, graph), {1}); },
                         "OverflowError", {"entry 2", "(n,)", "2^63 bytes"});
}

TEST(LateSizesTest, GraphValidationNamesBadDefinitions) {
  auto replaced = Replaced;
  test_util::ExpectError(
      [&] { Executor(0, replaced(R"("sizes": ["n"])", R"("sizes": ["n", "m"])")); }, "ValueError",
      {"defines 2 sizes", "int64 (2,)"});
  test_util::ExpectError(
      [&] { Executor(0, replaced(R"("sizes": ["n"])", R"("sizes": ["batch"])")); }, "ValueError",
      {"'batch'", "already defined"});
  const std::string count_node =
      R"({"name": "count", "func": "count", "inputs": [0], "outputs": [1]},
    )";
  const std::string double_node = R"({"name": "double")";
  std::string late_first = Replaced(count_node, "");
  late_first.replace(late_first.find(double_node), 0, count_node);  // count runs after positives
  test_util::ExpectError([&] { Executor(0, late_first); }, "ValueError",
                         {"entries[2]", "before its sizes are defined"});
  test_util::ExpectError(
      [&] { Executor(0, replaced(R"("size_definitions": [{"entry": 1, "sizes": ["n"]}],)", "")); },
      "ValueError", {"the size 'n'", "no argument gives"});
}

TEST(LateSizesTest, SavedGraphKeepsItsDefinitions) {
  const Module executor = Executor();
  const std::string saved(executor->SaveToBytes()->view());
  EXPECT_NE(saved.find(R"("size_definitions":[{"entry":1,"sizes":["n"]}])"), std::string::npos)
      << saved;
  EXPECT_EQ(Invoke(Executor(0, saved), {2, -1}), (std::vector<float>{4}));
}

/// x (batch,) -> positives_returned -> p (n,), allocated and returned by the node, whose shape
/// defines n; p -> double -> y (n,), allocated once n is read.
const char* kReturnedGraph = R"({
  "version": 1,
  "entries": [
    {"shape": ["batch"], "dtype": "float32"},
    {"shape": ["n"], "dtype": "float32"},
    {"shape": ["n"], "dtype": "float32"}
  ],
  "inputs": [{"name": "x", "entry": 0}],
  "nodes": [
    {"name": "positives", "func": "positives_returned", "inputs": [0], "outputs": [1],
     "returns": 1},
    {"name": "double", "func": "double", "inputs": [1], "outputs": [2]}
  ],
  "outputs": [2, 1],
  "size_definitions": [{"entry": 1, "sizes": ["n"], "axes": [0]}]
})";

TEST(LateSizesTest, ANodeMayReturnAnOutputWhoseShapeDefinesItsSizes) {
  const Module executor = Executor(0, kReturnedGraph);
  EXPECT_EQ(Invoke(executor, {1, -2, 3, -4}), (std::vector<float>{2, 6}));
  EXPECT_EQ(Invoke(executor, {-1, -1}), (std::vector<float>{}));
  EXPECT_EQ(Invoke(executor, {5, 1, 2}), (std::vector<float>{10, 2, 4}));
  // Saved and read back, the graph keeps what the node returns and how n is read.
  const std::string saved(executor->SaveToBytes()->view());
  EXPECT_NE(saved.find(R"("returns":1)"), std::string::npos) << saved;
  EXPECT_NE(saved.find(R"("axes":[0])"), std::string::npos) << saved;
  EXPECT_EQ(Invoke(Executor(0, saved), {7}), (std::vector<float>{14}));
}

TEST(LateSizesTest, GraphValidationNamesBadReturnedOutputs) {
  auto replaced = [](const std::string& from, const std::string& to) {
    std::string text = kReturnedGraph;
    return text.replace(text.find(from), from.size(), to);
  };
  test_util::ExpectError([&] { Executor(0, replaced(R"("returns": 1)", R"("returns": 2)")); },
                         "ValueError", {"returns", "is 2", "1 outputs"});
  test_util::ExpectError(
      [&] {
        Executor(0, replaced(R"(,
     "returns": 1)",
                             ""));
      },
      "ValueError", {"reads sizes from the entry's shape", "must return it"});
  test_util::ExpectError([&] { Executor(0, replaced(R"("axes": [0])", R"("axes": [1])")); },
                         "ValueError", {"axis 1", "not that size"});
}

TEST(LateSizesTest, AReturnedOutputMustAgreeWithTheExtentsTheGraphKnows) {
  // The returned output is (batch,): positives_returned agrees only when every x is positive.
  std::string graph = kReturnedGraph;
  for (const std::string& from : {std::string(R"(["n"])"), std::string(R"(["n"])")}) {
    graph.replace(graph.find(from), from.size(), R"(["batch"])");
  }
  const std::string definitions = R"(,
  "size_definitions": [{"entry": 1, "sizes": ["n"], "axes": [0]}])";
  graph.replace(graph.find(definitions), definitions.size(), "");
  const Module executor = Executor(0, graph);
  EXPECT_EQ(Invoke(executor, {1, 2}), (std::vector<float>{2, 4}));
  test_util::ExpectError(
      [&] {
        Invoke(executor, {1, -2, 3});
      },
      "ValueError", {"returned tensor 0 has shape (2,)", "(batch,) = (3,)"});
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
