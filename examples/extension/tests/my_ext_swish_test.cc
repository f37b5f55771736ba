// my_ext.swish and my_ext.transform.FuseSwish from C++: the op's schema, shape rule and pattern
// kind, and the pass on both operand orders, in a pipeline string.
#include <kiln/ffi/plugin.h>
#include <kiln/ir/op.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/ir/text_format.h>
#include <kiln/transform/pass.h>
#include <kiln/transform/passes.h>

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace {

namespace ir = kiln::ir;
namespace transform = kiln::transform;

class MyExtSwishTest : public ::testing::Test {
 protected:
  // The parser resolves op names, so the plugin's ops must be registered before parsing.
  void SetUp() override { kiln::LoadPlugin(MY_EXT_PLUGIN); }

  static ir::IRModule Typed(const char* text) {
    return transform::InferType()(ir::ParseModule(text));
  }

  static kiln::Error ErrorOf(const std::function<void()>& action) {
    try {
      action();
    } catch (const kiln::Error& error) {
      return error;
    }
    ADD_FAILURE() << "expected a kiln::Error";
    return kiln::Error("None", "", "");
  }
};

TEST_F(MyExtSwishTest, ResultHasTheInputsType) {
  const ir::IRModule mod = Typed(R"(
def @main(%x: Tensor[(2, 3), float32]) {
  my_ext.swish(%x, beta=0.5)
}
)");
  EXPECT_EQ(ir::AsText(mod.Lookup("main")->body()->checked_type()), "Tensor[(2, 3), float32]\n");
}

TEST_F(MyExtSwishTest, BetaDefaultsToOne) {
  const ir::Call call(ir::Op::Get("my_ext.swish"), {ir::Var("x")});
  EXPECT_EQ(call->attrs().at("beta").cast<double>(), 1.0);
}

TEST_F(MyExtSwishTest, IsElementwiseSoFuseOpsFusesIt) {
  EXPECT_EQ(ir::Op::Get("my_ext.swish").pattern(), ir::OpPattern::kElemWise);
}

TEST_F(MyExtSwishTest, NonFloat32InputIsATypeErrorNamingTheOp) {
  const kiln::Error error =
      ErrorOf([] { Typed("def @main(%x: Tensor[(4), float64]) { my_ext.swish(%x) }"); });
  EXPECT_EQ(error.kind(), "TypeError");
  EXPECT_NE(error.message().find("my_ext.swish"), std::string::npos) << error.message();
  EXPECT_NE(error.message().find("float64"), std::string::npos) << error.message();
}

TEST_F(MyExtSwishTest, TupleInputIsATypeErrorNamingTheOp) {
  const kiln::Error error =
      ErrorOf([] { Typed("def @main(%x: Tensor[(4), float32]) { my_ext.swish((%x, %x)) }"); });
  EXPECT_EQ(error.kind(), "TypeError");
  EXPECT_NE(error.message().find("my_ext.swish"), std::string::npos) << error.message();
}

TEST_F(MyExtSwishTest, UnknownAttributeIsRejectedByTheSchema) {
  const kiln::Error error = ErrorOf([] {
    ir::Call(ir::Op::Get("my_ext.swish"), {ir::Var("x")}, {{"alpha", 1.0}});
  });
  EXPECT_NE(error.message().find("alpha"), std::string::npos) << error.message();
}

// Both operand orders become swish; a sigmoid of another value, or a float64 product, does not.
constexpr const char* kSwishes = R"(
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32], %d: Tensor[(4), float64]) {
  %0 = multiply(%x, sigmoid(%x));
  %1 = multiply(sigmoid(%y), %y);
  %2 = multiply(%x, sigmoid(%y));
  %3 = multiply(%d, sigmoid(%d));
  (%0, %1, %2, %3)
}
)";

constexpr const char* kFused = R"(
def @main(%x: Tensor[(4), float32], %y: Tensor[(4), float32], %d: Tensor[(4), float64]) {
  %0 = my_ext.swish(%x);
  %1 = my_ext.swish(%y);
  %2 = multiply(%x, sigmoid(%y));
  %3 = multiply(%d, sigmoid(%d));
  (%0, %1, %2, %3)
}
)";

TEST_F(MyExtSwishTest, FuseSwishRewritesBothOrdersInAPipelineString) {
  const transform::Pass pipeline = transform::ParsePipeline("InferType,my_ext.transform.FuseSwish");
  const ir::IRModule out = pipeline(ir::ParseModule(kSwishes));
  const ir::IRModule expected = Typed(kFused);
  EXPECT_TRUE(ir::StructuralEqual(out.Lookup("main"), expected.Lookup("main"))) << ir::AsText(out);
}

TEST_F(MyExtSwishTest, FuseSwishWithoutTypesSaysToRunInferType) {
  const kiln::Error error = ErrorOf(
      [] { transform::ParsePipeline("my_ext.transform.FuseSwish")(ir::ParseModule(kSwishes)); });
  EXPECT_NE(error.message().find("run InferType"), std::string::npos) << error.message();
}

}  // namespace
