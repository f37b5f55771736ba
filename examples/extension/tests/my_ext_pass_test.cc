// The plugin's pass running next to Kiln's built-in passes: in a C++ Sequential and in a
// pipeline string, after the plugin is loaded the way any Kiln host loads it.
#include <kiln/ffi/plugin.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/ir/text_format.h>
#include <kiln/transform/pass.h>
#include <kiln/transform/passes.h>

#include <gtest/gtest.h>

#include <string>

namespace {

namespace ir = kiln::ir;
namespace transform = kiln::transform;

// Two identity calls in @main, and @unused, which no entry function reaches.
constexpr const char* kInput = R"(
def @main(%x: Tensor[(4), float32]) {
  %0 = my_ext.identity(%x);
  %1 = (%0, %x);
  %2 = my_ext.identity(%1);
  %2
}

def @unused(%y: Tensor[(4), float32]) {
  %y
}
)";

constexpr const char* kExpected = R"(
def @main(%x: Tensor[(4), float32]) {
  %0 = (%x, %x);
  %0
}
)";

class MyExtPassTest : public ::testing::Test {
 protected:
  // The text parser resolves op names, so my_ext.identity must be registered before parsing.
  void SetUp() override { kiln::LoadPlugin(MY_EXT_PLUGIN); }

  static transform::Pass RemoveIdentity() {
    return kiln::Function::GetGlobalRequired("my_ext.transform.RemoveIdentity")()
        .cast<transform::Pass>();
  }

  // StructuralEqual compares GlobalVars, and so modules, by identity, and each parse makes new
  // ones: compare the functions, matched by name.
  static void ExpectCleanedUp(const ir::IRModule& out) {
    const ir::IRModule expected = ir::ParseModule(kExpected);
    ASSERT_EQ(out->functions().size(), expected->functions().size()) << ir::AsText(out);
    for (const auto& [gvar, func] : expected->functions()) {
      const std::string name = gvar->name_hint().str();
      ASSERT_TRUE(out.Contains(name)) << ir::AsText(out);
      EXPECT_TRUE(ir::StructuralEqual(out.Lookup(name), func)) << ir::AsText(out);
    }
  }
};

TEST_F(MyExtPassTest, RunsInASequentialWithBuiltInPasses) {
  const ir::IRModule mod = ir::ParseModule(kInput);
  const transform::Pass seq =
      transform::Sequential({RemoveIdentity(), transform::DeadCodeElimination()});
  ExpectCleanedUp(seq(mod));
  EXPECT_TRUE(mod.Contains("unused"));  // the input is unchanged
}

TEST_F(MyExtPassTest, RunsFromAPipelineString) {
  const transform::Pass pipeline =
      transform::ParsePipeline("my_ext.transform.RemoveIdentity,DeadCodeElimination");
  EXPECT_EQ(pipeline.PipelineString(),
            "my_ext.transform.RemoveIdentity,transform.DeadCodeElimination");
  ExpectCleanedUp(pipeline(ir::ParseModule(kInput)));
}

TEST_F(MyExtPassTest, IsSkippedBelowItsOptLevel) {
  const ir::IRModule mod = ir::ParseModule(kInput);
  EXPECT_TRUE(RemoveIdentity()(mod, transform::PassContext::Create().SetOptLevel(0)).same_as(mod));
}

}  // namespace
