// Compile once, run at any size: kiln::Build on programs whose shapes are symbolic, run at
// several sizes and checked against values computed here, the executor's per-signature plans,
// the artifact round trip, and the errors a call whose shapes break the signature gets.
#include <unistd.h>
#include <kiln/driver/build.h>
#include <kiln/ir/text_format.h>
#include <kiln/runtime/memory.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "../testing/expect_error.h"

namespace kiln {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kFloat32{kDLFloat, 32, 1};

// y = relu(x @ W^T + b), W = [[1, -1], [2, 0], [0, 3]], b = [0.5, -1, 0]: a fused dense with
// its epilogue, over a batch the caller picks.
constexpr const char* kDenseReluOverBatch = R"(
def @main(%x: Tensor[(batch, 2), float32]) {
  %0 = nn.dense(%x, const(float32, (3, 2), [1, -1, 2, 0, 0, 3]));
  %1 = add(%0, const(float32, (3), [0.5, -1, 0]));
  %2 = nn.relu(%1);
  %2
})";

/// What kDenseReluOverBatch computes, row by row.
std::vector<float> DenseReluReference(const std::vector<float>& x) {
  const float weights[3][2] = {{1, -1}, {2, 0}, {0, 3}};
  const float bias[3] = {0.5F, -1, 0};
  std::vector<float> y;
  for (size_t row = 0; row < x.size() / 2; ++row) {
    for (int j = 0; j < 3; ++j) {
      const float value = x[2 * row] * weights[j][0] + x[2 * row + 1] * weights[j][1] + bias[j];
      y.push_back(std::max(value, 0.0F));
    }
  }
  return y;
}

Tensor Filled(const std::vector<int64_t>& shape, float start) {
  Tensor tensor = runtime::Empty(shape, kFloat32, kCpu);
  auto* data = static_cast<float*>(tensor.data());
  for (int64_t i = 0; i < NumElements(tensor.dl_tensor()); ++i) {
    data[i] = start + 0.25F * static_cast<float>(i % 13) - static_cast<float>(i % 3);
  }
  return tensor;
}

std::vector<float> Values(const Tensor& tensor) {
  const auto* data = static_cast<const float*>(tensor.data());
  return std::vector<float>(data, data + NumElements(tensor.dl_tensor()));
}

void ExpectRunsAtBatch(const Executable& model, int64_t batch) {
  SCOPED_TRACE("batch " + std::to_string(batch));
  const Tensor x = Filled({batch, 2}, -1.5F);
  const std::vector<Tensor> outputs = model.invoke({x});
  ASSERT_EQ(outputs.size(), 1U);
  EXPECT_EQ(outputs[0].shape(), Shape({batch, 3}));
  EXPECT_EQ(Values(outputs[0]), DenseReluReference(Values(x)));
}

TEST(SymbolicBuildTest, OneCompiledModelRunsAtEveryBatchSize) {
  const Executable model = Build(ir::ParseModule(kDenseReluOverBatch));
  for (int64_t batch : {1, 3, 8, 3}) ExpectRunsAtBatch(model, batch);
  test_util::ExpectError(
      [&] {
        model.invoke({Filled({0, 2}, 0)});
      },
      "ValueError",
      {"input 'x' has extent 0 at axis 0, the size 'batch', which must be at "
       "least 1"});
}

TEST(SymbolicBuildTest, TheStatefulApiTakesAnyShapeOfTheSignature) {
  Executable model = Build(ir::ParseModule(kDenseReluOverBatch));
  for (int64_t batch : {2, 5}) {
    const Tensor x = Filled({batch, 2}, 0.5F);
    model.set_input("x", x);
    model.run();
    EXPECT_EQ(model.get_output(0).shape(), Shape({batch, 3}));
    EXPECT_EQ(Values(model.get_output(0)), DenseReluReference(Values(x)));
  }
}

TEST(SymbolicBuildTest, TheGraphIsPlannedOncePerSignature) {
  const Executable model = Build(ir::ParseModule(kDenseReluOverBatch));
  for (int64_t batch : {3, 3, 5, 3, 5}) model.invoke({Filled({batch, 2}, 0)});
  const Map<String, Any> plan = model.memory_plan();
  EXPECT_TRUE(plan.at("planned_at_run_time").cast<bool>());
  EXPECT_EQ(plan.at("plans_made").cast<int64_t>(), 2);
  const auto variables = plan.at("size_variables").cast<Array<String>>();
  ASSERT_EQ(variables.size(), 1);
  EXPECT_EQ(variables[0], "batch");
  const auto info = model.input_info().at("symbolic_shapes").cast<Array<String>>();
  EXPECT_EQ(info[0], "(batch, 2)");
  EXPECT_EQ(model.output_info().at("symbolic_shapes").cast<Array<String>>()[0], "(batch, 3)");
}

/// Allocator requests of three more runs of `model` on `x` into `out`, after a first run.
int64_t RequestsOfRepeatedRuns(const Executable& model, const Tensor& x, const Tensor& out) {
  model.invoke({x}, {out});  // the first call at this shape plans and allocates
  const int64_t before = runtime::GetAllocatorStats(kCpu).allocations;
  for (int i = 0; i < 3; ++i) model.invoke({x}, {out});
  return runtime::GetAllocatorStats(kCpu).allocations - before;
}

TEST(SymbolicBuildTest, ARepeatedShapeTakesNoNewMemory) {
  const Tensor x = Filled({6, 2}, 1);
  const Tensor out = runtime::Empty({6, 3}, kFloat32, kCpu);
  // The same model at the static shape: its executor never allocates, so its requests are the
  // kernels' own scratch. The symbolic executor must add none (a context that re-allocated its
  // storages per call would, even when the allocator's cache served them).
  std::string static_text = kDenseReluOverBatch;
  static_text.replace(static_text.find("batch"), 5, "6");
  const int64_t kernels_own = RequestsOfRepeatedRuns(Build(ir::ParseModule(static_text)), x, out);
  EXPECT_EQ(RequestsOfRepeatedRuns(Build(ir::ParseModule(kDenseReluOverBatch)), x, out),
            kernels_own);
  EXPECT_EQ(Values(out), DenseReluReference(Values(x)));
}

int64_t BytesPerContext(const Executable& model) {
  return model.module()
      .GetFunctionRequired("get_limits")()
      .cast<Map<String, Any>>()
      .at("bytes_per_context")
      .cast<int64_t>();
}

TEST(SymbolicBuildTest, UpperBoundsPlanOnceForEveryShapeBelowThem) {
  const Executable unbounded = Build(ir::ParseModule(kDenseReluOverBatch));
  ExpectRunsAtBatch(unbounded, 16);
  const int64_t bytes_at_16 = BytesPerContext(unbounded);
  const Executable small = Build(ir::ParseModule(kDenseReluOverBatch));
  ExpectRunsAtBatch(small, 1);
  ASSERT_LT(BytesPerContext(small), bytes_at_16);

  // With the bound, the first call, at batch 1, already lays its entries out in storages
  // planned at 16, and every later batch up to 16 fits them.
  const Executable model = Build(ir::ParseModule(kDenseReluOverBatch));
  model.set_upper_bounds({{"batch", 16}});
  ExpectRunsAtBatch(model, 1);
  EXPECT_EQ(BytesPerContext(model), bytes_at_16);
  for (int64_t batch : {16, 9, 4}) ExpectRunsAtBatch(model, batch);
  EXPECT_EQ(BytesPerContext(model), bytes_at_16);
  test_util::ExpectError(
      [&] {
        model.invoke({Filled({17, 2}, 0)});
      },
      "ValueError", {"the size 'batch' is 17, over its upper bound 16"});
  test_util::ExpectError(
      [&] {
        model.set_upper_bounds({{"seq", 4}});
      },
      "ValueError", {"the model has no size 'seq' (its sizes: batch)"});
}

TEST(SymbolicBuildTest, TheArtifactKeepsTheSignature) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("kiln_symbolic_build_test_" + std::to_string(::getpid()) + ".so");
  Build(ir::ParseModule(kDenseReluOverBatch)).export_library(path.string());
  const Executable loaded = Executable::Load(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(loaded.input_info().at("symbolic_shapes").cast<Array<String>>()[0], "(batch, 2)");
  for (int64_t batch : {2, 7}) ExpectRunsAtBatch(loaded, batch);
}

TEST(SymbolicBuildTest, SizesSharedByInputsAndDerivedSizesRun) {
  // Both inputs are (n, 4), one size read from the first and checked on the second; the
  // reduction leaves (n).
  const Executable model = Build(ir::ParseModule(R"(
def @main(%a: Tensor[(n, 4), float32], %b: Tensor[(n, 4), float32]) {
  %0 = add(%a, %b);
  %1 = multiply(%0, %a);
  sum(%1, axis=[1], keepdims=false)
})"));
  for (int64_t n : {1, 4}) {
    const Tensor a = Filled({n, 4}, 1);
    const Tensor b = Filled({n, 4}, -2);
    const std::vector<Tensor> outputs = model.invoke({a, b});
    ASSERT_EQ(outputs[0].shape(), Shape({n}));
    const std::vector<float> av = Values(a);
    const std::vector<float> bv = Values(b);
    for (int64_t row = 0; row < n; ++row) {
      float expected = 0;
      for (int64_t k = 0; k < 4; ++k)
        expected += (av[row * 4 + k] + bv[row * 4 + k]) * av[row * 4 + k];
      EXPECT_FLOAT_EQ(Values(outputs[0])[row], expected);
    }
  }
}

TEST(SymbolicBuildTest, SymbolicAttributesAreEvaluatedForEachCall) {
  // y[b, i, j] = x[b, 3 i + j] + b: a reshape to a symbolic shape and an arange of a symbolic
  // size, as an exporter's shape arithmetic folds to.
  const Executable model = Build(ir::ParseModule(R"(
def @main(%x: Tensor[(batch, 6), float32]) {
  %0 = reshape(%x, newshape=[batch, 2, 3]);
  %1 = arange(size=batch, dtype="float32");
  %2 = reshape(%1, newshape=[batch, 1, 1]);
  add(%0, %2)
})"));
  for (int64_t batch : {2, 5}) {
    const Tensor x = Filled({batch, 6}, 0.5F);
    const std::vector<Tensor> outputs = model.invoke({x});
    ASSERT_EQ(outputs[0].shape(), Shape({batch, 2, 3}));
    std::vector<float> expected = Values(x);
    for (int64_t row = 0; row < batch; ++row) {
      for (int64_t k = 0; k < 6; ++k) expected[row * 6 + k] += static_cast<float>(row);
    }
    EXPECT_EQ(Values(outputs[0]), expected);
  }
}

TEST(SymbolicBuildTest, ConstraintsOnlyARunCanDecideAreCheckedOncePerShape) {
  // n against m and matmul's k against j cannot be proven: the model compiles, and each new
  // signature is checked before anything runs.
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("kiln_symbolic_checks_test_" + std::to_string(::getpid()) + ".so");
  Build(ir::ParseModule(R"(
def @main(%a: Tensor[(n, 2), float32], %b: Tensor[(m, 2), float32], %w: Tensor[(j, 3), float32]) {
  %0 = add(%a, %b);
  matmul(%0, %w)
})"))
      .export_library(path.string());
  const Executable model = Executable::Load(path.string());  // the checks survive the artifact
  std::filesystem::remove(path);
  const Tensor w = Filled({2, 3}, 1);
  const std::vector<Tensor> outputs = model.invoke({Filled({3, 2}, 0), Filled({3, 2}, 1), w});
  EXPECT_EQ(outputs[0].shape(), Shape({3, 3}));
  test_util::ExpectError(
      [&] {
        model.invoke({Filled({3, 2}, 0), Filled({2, 2}, 0), w});
      },
      "ValueError",
      {"add: extent m of 'rhs' (argument 1) does not broadcast against n",
       "a run-time size check: n == m fails, with n = 3 and m = 2"});
  test_util::ExpectError(
      [&] {
        model.invoke({Filled({3, 2}, 0), Filled({3, 2}, 0), Filled({4, 3}, 0)});
      },
      "ValueError",
      {"matmul: the contracted dimension 2 of 'lhs' does not match j of 'rhs'", "2 == j fails"});
}

TEST(SymbolicBuildTest, ShapesThatBreakTheSignatureAreNamed) {
  const Executable model = Build(ir::ParseModule(R"(
def @main(%a: Tensor[(n, 4), float32], %b: Tensor[(n, 4), float32]) {
  add(%a, %b)
})"));
  test_util::ExpectError(
      [&] {
        model.invoke({Filled({3, 4}, 0), Filled({2, 4}, 0)});
      },
      "ValueError",
      {"invoke: input 'b' has extent 2 at axis 0", "needs n = 3",
       "n = 3 (from input 'a', axis 0)"});
  test_util::ExpectError(
      [&] {
        model.invoke({Filled({3, 5}, 0), Filled({3, 5}, 0)});
      },
      "ValueError", {"input 'a'", "extent 5 at axis 1", "needs 4"});
  test_util::ExpectError(
      [&] {
        model.invoke({Filled({3}, 0), Filled({3, 4}, 0)});
      },
      "ValueError", {"input 'a' has rank 1, expected rank 2 (n, 4)"});
}

}  // namespace
}  // namespace kiln
