// kiln::Build with an external compiler: a test codegen `kiln.ext.test_negate` stands in for a
// plugin, so these tests pin down what Build promises every plugin (its functions reach the
// codegen, its modules are imported and called by the graph, the symbols are checked) without
// depending on any real plugin or on the partitioning passes (the modules are partitioned by
// hand, as PartitionGraph would).
#include <kiln/codegen/external_codegen.h>
#include <kiln/driver/build.h>
#include <kiln/driver/placement.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/function.h>
#include <kiln/ir/op.h>
#include <kiln/ir/text_format.h>
#include <kiln/runtime/memory.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "../testing/expect_error.h"

namespace kiln {
namespace {

/// A module whose functions each negate a float32 tensor, one per symbol it was made for.
class NegateModuleObj : public runtime::ModuleObj {
 public:
  explicit NegateModuleObj(std::vector<std::string> symbols) : symbols_(std::move(symbols)) {}
  std::string kind() const override { return "test_negate"; }
  std::vector<std::string> ListFunctions() const override { return symbols_; }
  std::optional<Function> GetFunction(const std::string& name) override {
    if (std::find(symbols_.begin(), symbols_.end(), name) == symbols_.end()) return std::nullopt;
    return Function::FromTyped([](DLTensor* input, DLTensor* output) {
      const auto* in = static_cast<const float*>(input->data);
      auto* out = static_cast<float*>(output->data);
      for (int64_t i = 0; i < NumElements(*input); ++i) out[i] = -in[i];
    });
  }

 private:
  std::vector<std::string> symbols_;
};

/// What the test codegen saw last, and whether it should "forget" a symbol.
std::vector<std::string> seen_symbols;
bool drop_symbols = false;

KILN_REGISTER_GLOBAL("kiln.ext.test_negate")
    .set_body_typed([](const Array<ir::Function>& functions, const Map<String, Any>& /*opts*/) {
      seen_symbols.clear();
      for (const ir::Function& func : functions) {
        seen_symbols.push_back(func.GetAttr<String>(ir::attr::kGlobalSymbol)->str());
      }
      const std::vector<std::string> provided =
          drop_symbols ? std::vector<std::string>{"something_else"} : seen_symbols;
      return Array<runtime::Module>{runtime::Module(make_object<NegateModuleObj>(provided))};
    });

// @main: y = negate_ext(x) + 1, then negate_ext(y): two calls of two external functions around
// a host add.
constexpr const char* kPartitioned = R"(
def @main(%x: Tensor[(2, 2), float32]) {
  %0 = @kiln_test_negate_0(%x);
  %1 = add(%0, const(float32, (), [1]));
  %2 = @kiln_test_negate_1(%1);
  %2
}

def @kiln_test_negate_0(%a: Tensor[(2, 2), float32]) attrs={Compiler="test_negate", Primitive=1, global_symbol="kiln_test_negate_0"} {
  %0 = negative(%a);
  %0
}

def @kiln_test_negate_1(%b: Tensor[(2, 2), float32]) attrs={Compiler="test_negate", Primitive=1, global_symbol="kiln_test_negate_1"} {
  %0 = negative(%b);
  %0
})";

Tensor Input() {
  Tensor tensor = runtime::Empty({2, 2}, DLDataType{kDLFloat, 32, 1}, DLDevice{kDLCPU, 0});
  const std::vector<float> values = {1, -2, 3.5F, 0};
  std::copy(values.begin(), values.end(), static_cast<float*>(tensor.data()));
  return tensor;
}

std::vector<float> RunOnInput(Executable& model) {
  model.set_input("x", Input());
  model.run();
  const Tensor out = model.get_output(0);
  const auto* data = static_cast<const float*>(out.data());
  return std::vector<float>(data, data + 4);
}

BuildOptions HandPartitioned() {
  BuildOptions options;
  options.pipeline = "InferType";  // already partitioned: no BYOC passes needed
  drop_symbols = false;
  return options;
}

TEST(ExternalCodegenTest, ExternalFunctionsRunAsGraphNodesAroundHostOps) {
  Executable model = Build(ir::ParseModule(kPartitioned), HandPartitioned());
  // -(-x + 1) = x - 1
  EXPECT_EQ(RunOnInput(model), (std::vector<float>{0, -3, 2.5F, -1}));
  EXPECT_EQ(seen_symbols, (std::vector<std::string>{"kiln_test_negate_0", "kiln_test_negate_1"}));
}

TEST(ExternalCodegenTest, MissingSymbolNamesTheCompilerAndTheSymbol) {
  BuildOptions options = HandPartitioned();
  drop_symbols = true;
  test_util::ExpectError([&] { Build(ir::ParseModule(kPartitioned), options); }, "ValueError",
                         {"compiler 'test_negate'", "kiln_test_negate_0", "something_else"});
  drop_symbols = false;
}

TEST(ExternalCodegenTest, CompilerWithoutCodegenNamesThePluginToInstall) {
  std::string text = kPartitioned;
  for (size_t at = text.find("\"test_negate\""); at != std::string::npos;
       at = text.find("\"test_negate\"", at)) {
    text.replace(at, 13, "\"no_such_zz\"");
  }
  test_util::ExpectError([&] { Build(ir::ParseModule(text), HandPartitioned()); },
                         "FileNotFoundError", {"libkiln_no_such_zz.so", "KILN_PLUGIN_PATH"});
}

/// test_negate takes `negative` and declines `add` with a reason.
void RegisterNegatePredicates() {
  static std::once_flag once;
  std::call_once(once, [] {
    ir::OpRegisterer::Extend("negative")
        .set_attr("target.test_negate",
                  Function::FromTyped([](const ir::Call& /*call*/) { return true; }));
    ir::OpRegisterer::Extend("add").set_attr("target.test_negate",
                                             Function::FromTyped([](const ir::Call& /*call*/) {
                                               return String("test_negate only negates");
                                             }));
  });
}

constexpr const char* kUnpartitioned = R"(
def @main(%x: Tensor[(2, 2), float32]) {
  %0 = negative(%x);
  %1 = add(%0, const(float32, (), [1]));
  %2 = negative(%1);
  %2
})";

TEST(ExternalCodegenTest, DefaultPipelinePartitionsAndReportsWhy) {
  RegisterNegatePredicates();
  BuildOptions options;
  options.compilers = {"test_negate"};
  const ir::IRModule optimized = Optimize(ir::ParseModule(kUnpartitioned), options);
  // The host add sits between the two negations, so they stay two regions.
  EXPECT_TRUE(optimized.Contains("kiln_test_negate_0"));
  EXPECT_TRUE(optimized.Contains("kiln_test_negate_1"));
  Executable model = BuildOptimized(optimized, options);
  EXPECT_EQ(RunOnInput(model), (std::vector<float>{0, -3, 2.5F, -1}));

  const PlacementReport report = ReportPlacement(optimized, options.compilers);
  ASSERT_EQ(report.ops.size(), 3U);
  int64_t on_negate = 0;
  for (const OpPlacement& placement : report.ops) {
    if (placement.op == "negative") {
      EXPECT_EQ(placement.target, "test_negate");
      ++on_negate;
    } else {
      EXPECT_EQ(placement.op, "add");
      EXPECT_EQ(placement.target, "host");
      ASSERT_EQ(placement.answers.size(), 1U);
      EXPECT_EQ(placement.answers[0].reason, "test_negate only negates");
    }
  }
  EXPECT_EQ(on_negate, 2);
  const std::string text = report.ToText();
  EXPECT_NE(text.find("test_negate only negates"), std::string::npos) << text;
  EXPECT_NE(text.find("2 op calls in 2 function(s)"), std::string::npos) << text;

  const std::string dot = PlacementDot(optimized);
  EXPECT_NE(dot.find("kiln_test_negate_0"), std::string::npos) << dot;
  EXPECT_NE(dot.find("input_0 -> n0"), std::string::npos) << dot;
}

TEST(ExternalCodegenTest, NoFallbackListsTheHostOps) {
  BuildOptions options = HandPartitioned();
  options.fallback = false;
  options.compilers = {"test_negate"};
  test_util::ExpectError([&] { Build(ir::ParseModule(kPartitioned), options); }, "ValueError",
                         {"fallback is disabled", "test_negate", "add"});
}

}  // namespace
}  // namespace kiln
