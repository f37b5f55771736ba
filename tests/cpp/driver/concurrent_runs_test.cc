// One Executable, many threads: every run of every thread gives what the same run gives alone,
// on Kiln's CPU path and through each BYOC plugin that was built. CI also runs this binary
// under ThreadSanitizer (scripts/test.sh, stage tsan), which turns a shared buffer or an
// unguarded cache into a report even when the numbers happen to come out right.
#include <kiln/driver/build.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/plugin.h>
#include <kiln/ir/text_format.h>
#include <kiln/runtime/memory.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace kiln {
namespace {

constexpr int kThreads = 4;
constexpr int kRunsPerThread = 5;

// Convolutions, an elementwise chain, a residual and dense layers: parallel regions and
// temporaries that runs sharing buffers would clobber. The dnnl and blas plugins each take part
// of it (convolutions and dense layers, or the dense layers and the matmul).
constexpr const char* kModel = R"(
def @main(%x: Tensor[(2, 8, 12, 12), float32], %bias: Tensor[(2, 32), float32],
          %w0: Tensor[(8, 8, 3, 3), float32], %w1: Tensor[(32, 1152), float32],
          %w2: Tensor[(32, 16), float32]) {
  %0 = nn.conv2d(%x, %w0, padding=[1, 1, 1, 1]);
  %1 = nn.relu(%0);
  %2 = add(%1, %x);
  %3 = reshape(%2, newshape=[2, 1152]);
  %4 = nn.dense(%3, %w1);
  %5 = add(%4, %bias);
  %6 = nn.relu(%5);
  matmul(%6, %w2)
})";

Tensor RandomTensor(const std::vector<int64_t>& shape, unsigned seed) {
  Tensor tensor = runtime::Empty(shape, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  auto* data = static_cast<float*>(tensor.data());
  for (int64_t i = 0; i < tensor.NumElements(); ++i) data[i] = normal(engine);
  return tensor;
}

std::vector<float> Values(const Tensor& tensor) {
  const auto* data = static_cast<const float*>(tensor.data());
  return std::vector<float>(data, data + tensor.NumElements());
}

/// Kinds of `module` and of every module it imports.
void CollectKinds(const runtime::Module& module, std::vector<std::string>& kinds) {
  kinds.push_back(module->kind());
  for (const runtime::Module& child : module.imports()) CollectKinds(child, kinds);
}

/// The model built with the compiler whose plugin is at `plugin` ("" for Kiln's own path).
Executable BuildModel(const std::string& compiler, const std::string& plugin) {
  BuildOptions options;
  options.params = {{"w0", RandomTensor({8, 8, 3, 3}, 100)},
                    {"w1", RandomTensor({32, 1152}, 101)},
                    {"w2", RandomTensor({32, 16}, 102)}};
  if (!plugin.empty()) {
    LoadPlugin(plugin);
    options.compilers = {compiler};
  }
  return Build(ir::ParseModule(kModel), options);
}

std::vector<Tensor> Inputs(unsigned seed) {
  return {RandomTensor({2, 8, 12, 12}, seed), RandomTensor({2, 32}, seed + 1000)};
}

/// Runs kThreads threads of kRunsPerThread invokes, each thread on inputs of its own; returns
/// how many outputs differ from the same inputs' run alone.
int CountWrongConcurrentRuns(const Executable& model) {
  std::vector<std::vector<Tensor>> inputs;
  std::vector<std::vector<float>> alone;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(Inputs(static_cast<unsigned>(t)));
    alone.push_back(Values(model.invoke(inputs.back())[0]));
  }
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int run = 0; run < kRunsPerThread; ++run) {
        if (Values(model.invoke(inputs[t])[0]) != alone[t]) ++wrong;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  return wrong.load();
}

/// A compiler and its plugin's path, both empty for Kiln's own path.
struct Compiler {
  std::string name;
  std::string plugin;
};

/// How test names and failures show a Compiler.
void PrintTo(const Compiler& compiler, std::ostream* os) {
  *os << (compiler.name.empty() ? "kiln" : compiler.name);
}

class ConcurrentRunsTest : public ::testing::TestWithParam<Compiler> {
 protected:
  Executable Model() {
    const std::string& compiler = GetParam().name;
    Executable model = BuildModel(compiler, GetParam().plugin);
    if (!compiler.empty()) {
      std::vector<std::string> kinds;
      CollectKinds(model.module(), kinds);
      EXPECT_NE(std::find(kinds.begin(), kinds.end(), compiler + "_json"), kinds.end())
          << "no " << compiler << " region in the built model";
    }
    return model;
  }
};

TEST_P(ConcurrentRunsTest, EveryRunOfEveryThreadMatchesTheSameRunAlone) {
  EXPECT_EQ(CountWrongConcurrentRuns(Model()), 0);
}

TEST_P(ConcurrentRunsTest, OneContextServesEveryThreadWhenRunsAreCappedAtOne) {
  Executable model = Model();
  model.set_limits(/*max_concurrent_runs=*/1, /*memory_limit=*/0);
  EXPECT_EQ(CountWrongConcurrentRuns(model), 0);
  const auto limits = model.module().GetFunctionRequired("get_limits")().cast<Map<String, Any>>();
  EXPECT_EQ(limits.at("contexts").cast<int64_t>(), 1);
}

// A loop carrying a tensor through three iterations, then a branch on the data: each call runs
// bodies compiled as Executables of their own (docs/design.md §32), and threads whose inputs
// differ take different branches at the same time.
constexpr const char* kControlFlowModel = R"(
def @main(%x: Tensor[(2, 8, 12, 12), float32], %bias: Tensor[(2, 32), float32]) {
  %0 = fn (%i: Tensor[(), int64], %c: Tensor[(), bool], %h: Tensor[(2, 8, 12, 12), float32]) {
    %1 = nn.relu(%h);
    %2 = add(%1, %x);
    (%c, %2)
  };
  %3 = loop(const(int64, (), [3]), const(bool, (), [true]), %x, %0, iterations=3);
  %4 = %3.0;
  %5 = sum(%bias, keepdims=false);
  %6 = greater(%5, const(float32, (), [0]));
  %7 = fn () { multiply(%4, const(float32, (), [2])) };
  %8 = fn () { subtract(%4, const(float32, (), [1])) };
  if(%6, %7, %8)
})";

TEST(ConcurrentControlFlowTest, EveryRunOfEveryThreadMatchesTheSameRunAlone) {
  int then_branches = 0;  // the threads' inputs take both branches
  for (int t = 0; t < kThreads; ++t) {
    const std::vector<float> bias = Values(Inputs(static_cast<unsigned>(t))[1]);
    then_branches += std::accumulate(bias.begin(), bias.end(), 0.0f) > 0;
  }
  ASSERT_GT(then_branches, 0);
  ASSERT_LT(then_branches, kThreads);
  EXPECT_EQ(CountWrongConcurrentRuns(Build(ir::ParseModule(kControlFlowModel))), 0);
}

/// Kiln's own path, and each plugin built in this tree (tests/cpp/CMakeLists.txt).
std::vector<Compiler> Compilers() {
  std::vector<Compiler> compilers = {{"", ""}};
#ifdef KILN_DNNL_PLUGIN
  compilers.push_back({"dnnl", KILN_DNNL_PLUGIN});
#endif
#ifdef KILN_BLAS_PLUGIN
  compilers.push_back({"blas", KILN_BLAS_PLUGIN});
#endif
  return compilers;
}

INSTANTIATE_TEST_SUITE_P(Paths, ConcurrentRunsTest, ::testing::ValuesIn(Compilers()),
                         [](const ::testing::TestParamInfo<Compiler>& info) {
                           return info.param.name.empty() ? std::string("kiln") : info.param.name;
                         });

}  // namespace
}  // namespace kiln
