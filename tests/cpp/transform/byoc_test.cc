// AnnotateTarget, MergeCompilerRegions and PartitionGraph beyond the golden files: the answers
// of AskCompilers, predicates that fail, graph-level partition functions, pass names, invalid
// annotations, and graphs too long to walk recursively.
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/ir/text_format.h>
#include <kiln/transform/byoc.h>
#include <kiln/transform/passes.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "golden_ops.h"

namespace kiln {
namespace transform {
namespace {

using Kind = PredicateAnswer::Kind;

ir::IRModule Typed(const std::string& text) {
  testing::RegisterGoldenOps();
  return InferType()(ir::ParseModule(text));
}

/// The calls of @main's body, post-order.
std::vector<ir::Call> CallsOf(const ir::IRModule& mod) {
  std::vector<ir::Call> calls;
  ir::PostOrderVisit(mod.Lookup("main")->body(), [&calls](const ir::Expr& expr) {
    if (expr.as<ir::CallObj>() != nullptr) calls.push_back(Downcast<ir::Call>(expr));
  });
  return calls;
}

std::string ErrorOf(const Pass& pass, const ir::IRModule& mod) {
  try {
    pass(mod);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

constexpr const char* kThreeOps = R"(
def @main(%x: Tensor[(2), float32]) {
  %0 = add(%x, %x);
  %1 = exp(%0);
  %2 = subtract(%1, %x);
  %2
})";

TEST(AskCompilersTest, GivesEachCompilersAnswerInOrder) {
  const std::vector<ir::Call> calls = CallsOf(Typed(kThreeOps));
  ASSERT_EQ(calls.size(), 3U);
  const std::vector<PredicateAnswer> add = AskCompilers(calls[0], {"test_b", "test_a"});
  ASSERT_EQ(add.size(), 2U);
  EXPECT_EQ(add[0].compiler, "test_b");
  EXPECT_EQ(add[0].kind, Kind::kNoPredicate);
  EXPECT_EQ(add[1].compiler, "test_a");
  EXPECT_EQ(add[1].kind, Kind::kTaken);
  const std::vector<PredicateAnswer> exp = AskCompilers(calls[1], {"test_a", "test_b"});
  EXPECT_EQ(exp[0].kind, Kind::kDeclined);
  EXPECT_EQ(exp[0].reason, "test_a has no exp");
  EXPECT_EQ(exp[1].kind, Kind::kTaken);
  EXPECT_EQ(AskCompilers(calls[2], {"test_a"})[0].kind, Kind::kNoPredicate);
}

TEST(AskCompilersTest, ACompositeBelongsToTheCompilerItsPatternNames) {
  const std::vector<ir::Call> calls = CallsOf(Typed(R"(
def @main(%x: Tensor[(2), float32]) {
  %0 = fn (%p: Tensor[(2), float32]) attrs={Composite="test_b.double"} {
    %1 = add(%p, %p);
    %1
  };
  %2 = %0(%x);
  %2
})"));
  const std::vector<PredicateAnswer> answers = AskCompilers(calls.back(), {"test_a", "test_b"});
  EXPECT_EQ(answers[0].kind, Kind::kDeclined);
  EXPECT_EQ(answers[0].reason, "composite function of compiler 'test_b'");
  EXPECT_EQ(answers[1].kind, Kind::kTaken);
}

TEST(AskCompilersTest, APredicateMustReturnABoolOrAReason) {
  const std::vector<ir::Call> calls = CallsOf(Typed(kThreeOps));
  ir::OpRegisterer::Extend("subtract")
      .set_attr("target.test_bad", Function::FromTyped([](const ir::Call&) { return 1.5; }))
      .set_attr("target.test_throws", Function::FromTyped([](const ir::Call&) -> bool {
                  KILN_THROW(RuntimeError) << "predicate exploded";
                }));
  try {
    AskCompilers(calls[2], {"test_bad"});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "TypeError");
    EXPECT_NE(error.message().find("target.test_bad of subtract must return a bool or a string"),
              std::string::npos)
        << error.what();
  }
  try {
    AskCompilers(calls[2], {"test_throws"});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "RuntimeError");
    EXPECT_NE(std::string(error.what()).find("while asking target.test_throws of subtract about"),
              std::string::npos)
        << error.what();
  }
}

TEST(AnnotateTargetTest, PassNameRoundTripsThroughAPipelineString) {
  const Pass pass = AnnotateTarget({"test_a", "test_b"});
  EXPECT_EQ(pass.PipelineString(), "transform.AnnotateTarget(test_a, test_b)");
  EXPECT_EQ(ParsePipeline(pass.PipelineString()).PipelineString(), pass.PipelineString());
  EXPECT_EQ(ParsePipeline("AnnotateTarget(test_a,test_b)").PipelineString(), pass.PipelineString());
}

TEST(AnnotateTargetTest, RejectsMalformedOrRepeatedCompilerNames) {
  for (const std::vector<std::string>& names :
       std::vector<std::vector<std::string>>{{""}, {"dnnl", "dnnl"}, {"has space"}, {"a.b"}}) {
    try {
      AnnotateTarget(names);
      FAIL() << "no error for " << names.back();
    } catch (const Error& error) {
      EXPECT_EQ(error.kind(), "ValueError");
      EXPECT_NE(error.message().find("'" + names.back() + "'"), std::string::npos) << error.what();
    }
  }
}

/// A graph-level partition function registered for the test's duration.
class GraphLevelPartition {
 public:
  explicit GraphLevelPartition(Function partition) {
    Function::SetGlobal(kName, partition, /*allow_override=*/true);
  }
  ~GraphLevelPartition() { Function::RemoveGlobal(kName); }
  static constexpr const char* kName = "kiln.ext.test_graph.partition";
};

TEST(AnnotateTargetTest, AGraphLevelPartitionChoosesForItsCompiler) {
  // test_graph takes every exp and nothing else; test_a still takes add.
  const GraphLevelPartition partition(Function::FromTyped([](const ir::Function& func) {
    Array<ir::Call> exps;
    ir::PostOrderVisit(func->body(), [&exps](const ir::Expr& expr) {
      const auto* call = expr.as<ir::CallObj>();
      const auto* op = call ? call->op().as<ir::OpObj>() : nullptr;
      if (op != nullptr && op->name() == "exp") exps.push_back(Downcast<ir::Call>(expr));
    });
    return Array<Array<ir::Call>>{exps};
  }));
  const ir::IRModule mod = Typed(kThreeOps);
  EXPECT_EQ(AskCompilers(CallsOf(mod)[1], {"test_graph"})[0].kind, Kind::kGraphLevel);
  const ir::IRModule out =
      ParsePipeline("AnnotateTarget(test_graph, test_a),MergeCompilerRegions,PartitionGraph")(mod);
  EXPECT_TRUE(out.Contains("kiln_test_graph_0"));
  EXPECT_TRUE(out.Contains("kiln_test_a_0"));
  EXPECT_EQ(ir::AsText(out.Lookup("kiln_test_graph_0")->body()).find("exp("), 5U)
      << ir::AsText(out);
}

TEST(AnnotateTargetTest, AGraphLevelPartitionMayOnlyReturnCallsOfTheFunction) {
  const GraphLevelPartition partition(Function::FromTyped([](const ir::Function& /*func*/) {
    const ir::Var y("y");
    return Array<Array<ir::Call>>{{ir::Call(ir::Op::Get("exp"), {y})}};
  }));
  const std::string error = ErrorOf(AnnotateTarget({"test_graph"}), Typed(kThreeOps));
  EXPECT_NE(error.find("kiln.ext.test_graph.partition returned '%0 = exp(%y)', which is not a "
                       "call of the function it was given"),
            std::string::npos)
      << error;
}

TEST(CompilerRegionsTest, InvalidAnnotationsAreValueErrorsNamingTheNode) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // A region's value read by another region's begin without compiler_end; an empty region;
      // a begin of a begin; an end of a variable; an input without begin.
      {R"(def @main(%x: Tensor[(2), float32]) {
            %0 = annotation.compiler_begin(%x, compiler="a");
            %1 = nn.relu(%0);
            %2 = annotation.compiler_end(%1, compiler="a");
            %3 = annotation.compiler_begin(%1, compiler="b");
            %4 = exp(%3);
            %5 = annotation.compiler_end(%4, compiler="b");
            (%2, %5)
          })",
       "'%2 = annotation.compiler_begin(%1, compiler=\"b\")' reads '%1 = nn.relu(%0)' of a region "
       "of compiler 'a' without compiler_end"},
      {R"(def @main(%x: Tensor[(2), float32]) {
            %0 = annotation.compiler_begin(%x, compiler="a");
            %1 = annotation.compiler_end(%0, compiler="a");
            %1
          })",
       "'%0 = annotation.compiler_begin(%x: Tensor[(2), float32], compiler=\"a\")' is read by "
       "'%1 = annotation.compiler_end(%0, compiler=\"a\")' instead of an op of its region"},
      {R"(def @main(%x: Tensor[(2), float32]) {
            %0 = annotation.compiler_begin(%x, compiler="a");
            %1 = annotation.compiler_begin(%0, compiler="a");
            %2 = nn.relu(%1);
            %3 = annotation.compiler_end(%2, compiler="a");
            %3
          })",
       "is read by '%1 = annotation.compiler_begin(%0, compiler=\"a\")' instead of an op of its "
       "region"},
      {R"(def @main(%x: Tensor[(2), float32]) {
            %0 = annotation.compiler_end(%x, compiler="a");
            %0
          })",
       "'%0 = annotation.compiler_end(%x: Tensor[(2), float32], compiler=\"a\")' has no "
       "matching compiler_begin: it closes '%x: Tensor[(2), float32]', which no region computes"},
      {R"(def @main(%x: Tensor[(2), float32]) {
            %0 = annotation.compiler_begin(%x, compiler="a");
            %1 = nn.relu(%0);
            %2 = annotation.compiler_end(%1, compiler="a");
            %3 = add(%1, %x);
            %4 = annotation.compiler_end(%3, compiler="a");
            %4
          })",
       "'%2 = add(%1, %x)' in a region of compiler 'a' reads "
       "'%x: Tensor[(2), float32]' without compiler_begin"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string error = ErrorOf(PartitionGraph(), Typed(text));
    EXPECT_NE(error.find("ValueError: "), std::string::npos) << error;
    EXPECT_NE(error.find(expected), std::string::npos) << error;
  }
}

TEST(MergeCompilerRegionsTest, IsIdempotentAndLeavesUnannotatedModulesAlone) {
  const ir::IRModule mod = Typed(R"(
def @main(%x: Tensor[(2), float32]) {
  %0 = nn.relu(%x);
  %1 = exp(%0);
  %2 = add(%0, %1);
  %3 = multiply(%2, %2);
  %4 = subtract(%3, %0);
  %4
})");
  const ir::IRModule once =
      ParsePipeline("AnnotateTarget(test_a, test_b),MergeCompilerRegions")(mod);
  const ir::IRModule twice = MergeCompilerRegions()(once);
  EXPECT_TRUE(ir::StructuralEqual(once, twice)) << ir::AsText(once) << ir::AsText(twice);
  EXPECT_TRUE(MergeCompilerRegions()(mod).same_as(mod));
  EXPECT_TRUE(PartitionGraph()(mod).same_as(mod));
}

/// @main(x) = a chain of `length` unary ops, the i-th named by `op(i)`.
ir::IRModule Chain(int length, const char* (*op)(int)) {
  testing::RegisterGoldenOps();
  const ir::Var x("x", ir::ParseType("Tensor[(2), float32]"));
  ir::Expr value = x;
  for (int i = 0; i < length; ++i) value = ir::Call(ir::Op::Get(op(i)), {value});
  ir::IRModule mod = ir::IRModule::Create();
  mod.Add(ir::GlobalVar("main"), ir::Function({x}, value));
  return mod;
}

TEST(PartitionGraphTest, LongChainsNeitherRecurseNorMergeQuadratically) {
  const Pass pipeline =
      ParsePipeline("InferType,AnnotateTarget(test_a, test_b),MergeCompilerRegions,PartitionGraph");
  // relu (test_a's first) and exp (test_b's) alternate: one region per op.
  const ir::IRModule alternating =
      pipeline(Chain(20000, [](int i) { return i % 2 ? "exp" : "nn.relu"; }));
  EXPECT_EQ(alternating->functions().size(), 20001);
  EXPECT_TRUE(alternating.Contains("kiln_test_a_9999"));
  EXPECT_TRUE(alternating.Contains("kiln_test_b_9999"));
  // All test_a's: one region.
  const ir::IRModule merged = pipeline(Chain(20000, [](int) { return "nn.relu"; }));
  EXPECT_EQ(merged->functions().size(), 2);
  EXPECT_TRUE(merged.Contains("kiln_test_a_0"));
}

}  // namespace
}  // namespace transform
}  // namespace kiln
