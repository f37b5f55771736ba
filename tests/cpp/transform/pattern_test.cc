#include <kiln/ir/function.h>
#include <kiln/ir/text_format.h>
#include <kiln/transform/infer_type.h>
#include <kiln/transform/pattern.h>
#include <gtest/gtest.h>

#include <string>

namespace kiln {
namespace transform {
namespace {

/// `text` parsed and typed (free variables carry their annotations).
ir::Expr Typed(const std::string& text) {
  const ir::Expr expr = ir::ParseExpr(text);
  InferExprType(expr);
  return expr;
}

const ir::CallObj* AsCall(const ir::Expr& expr) { return expr.as<ir::CallObj>(); }

template <typename Body>
void ExpectError(const char* kind, const std::string& needle, Body body) {
  try {
    body();
    FAIL() << "expected a " << kind;
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), kind) << error.what();
    EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
  }
}

constexpr const char* kConv =
    "%0 = nn.conv2d(%x: Tensor[(1, 1, 2, 2), float32], const(float32, (2, 1, 1, 1), [1, 2]));"
    "%0";

TEST(PatternTest, OpCallMatchesCallsOfThatOpWithMatchingArguments) {
  const Pattern conv = IsOp("nn.conv2d")({Wildcard(), IsConstant()});
  EXPECT_TRUE(Match(conv, Typed(kConv)));
  // A weight that is not a constant, another op, another argument count.
  EXPECT_FALSE(Match(conv, Typed("%0 = nn.conv2d(%x: Tensor[(1, 1, 2, 2), float32], "
                                 "%w: Tensor[(2, 1, 1, 1), float32]); %0")));
  EXPECT_FALSE(Match(conv, Typed("%0 = nn.relu(%x: Tensor[(2), float32]); %0")));
  EXPECT_FALSE(Match(IsOp("nn.conv2d")({Wildcard()}), Typed(kConv)));
  // An op pattern alone matches the op, not a call of it.
  EXPECT_FALSE(Match(IsOp("nn.conv2d"), Typed(kConv)));
  EXPECT_TRUE(Match(IsOp("nn.conv2d"), ir::Op::Get("nn.conv2d")));
}

TEST(PatternTest, LeafPatternsMatchTheirKindOnly) {
  const ir::Expr var = Typed("%x: Tensor[(2), float32]");
  const ir::Expr constant = Typed("const(float32, (2), [1, 2])");
  const ir::Expr call = Typed("%0 = nn.relu(%x: Tensor[(2), float32]); %0");
  for (const ir::Expr& expr : {var, constant, call}) EXPECT_TRUE(Match(Wildcard(), expr));
  EXPECT_TRUE(Match(IsVar(), var));
  EXPECT_FALSE(Match(IsVar(), constant));
  EXPECT_FALSE(Match(IsVar(), call));
  EXPECT_TRUE(Match(IsConstant(), constant));
  EXPECT_FALSE(Match(IsConstant(), var));
  EXPECT_FALSE(Match(IsConstant(), call));
}

TEST(PatternTest, TupleAndTupleGetItemPatterns) {
  const ir::Expr tuple = Typed("%0 = (%x: Tensor[(2), float32], const(float32, (2), [1, 2])); %0");
  EXPECT_TRUE(Match(IsTuple({IsVar(), IsConstant()}), tuple));
  EXPECT_FALSE(Match(IsTuple({IsConstant(), IsVar()}), tuple));
  EXPECT_FALSE(Match(IsTuple({IsVar()}), tuple));
  const ir::Expr item =
      Typed("%0 = (%x: Tensor[(2), float32], const(float32, (2), [1, 2])); %1 = %0.1; %1");
  EXPECT_TRUE(Match(IsTupleGetItem(IsTuple({Wildcard(), Wildcard()}), 1), item));
  EXPECT_TRUE(Match(IsTupleGetItem(Wildcard()), item));
  EXPECT_FALSE(Match(IsTupleGetItem(Wildcard(), 0), item));
  EXPECT_FALSE(Match(IsTupleGetItem(Wildcard()), tuple));
}

TEST(PatternTest, OnePatternNodeMatchesOneExpression) {
  const Pattern x = Wildcard();
  const Pattern twice = IsOp("add")({x, x});
  EXPECT_TRUE(Match(twice, Typed("%0 = add(%a: Tensor[(2), float32], %a); %0")));
  EXPECT_FALSE(Match(twice, Typed("%0 = add(%a: Tensor[(2), float32], "
                                  "%b: Tensor[(2), float32]); %0")));
  EXPECT_TRUE(Match(IsOp("add")({Wildcard(), Wildcard()}),
                    Typed("%0 = add(%a: Tensor[(2), float32], %b: Tensor[(2), float32]); %0")));
}

TEST(PatternTest, AlternativesTryTheLeftFirstAndBacktrack) {
  const ir::Expr relu = Typed("%0 = nn.relu(%x: Tensor[(2), float32]); %0");
  const ir::Expr tanh = Typed("%0 = tanh(%x: Tensor[(2), float32]); %0");
  const ir::Expr sigmoid = Typed("%0 = sigmoid(%x: Tensor[(2), float32]); %0");
  const Pattern left = IsOp("nn.relu")({Wildcard()});
  const Pattern right = IsOp("tanh")({Wildcard()});
  const Pattern either = left | right;
  EXPECT_TRUE(Match(either, relu));
  EXPECT_TRUE(Match(either, tanh));
  EXPECT_FALSE(Match(either, sigmoid));
  EXPECT_TRUE(MatchPattern(either, relu)->count(left));
  EXPECT_FALSE(MatchPattern(either, relu)->count(right));
  EXPECT_TRUE(MatchPattern(either, tanh)->count(right));

  // relu(%p) fits the left side of the alternative, but then `a` (bound to %p) cannot match
  // %q: only the right side leads to a match, which backtracking finds.
  const Pattern a = Wildcard();
  const Pattern anything = Wildcard();
  const Pattern pattern = IsOp("add")({IsOp("nn.relu")({a}) | anything, a});
  const ir::Expr expr =
      Typed("%0 = nn.relu(%p: Tensor[(2), float32]); %1 = add(%0, %q: Tensor[(2), float32]); %1");
  std::optional<PatternBinding> binding = MatchPattern(pattern, expr);
  ASSERT_TRUE(binding.has_value());
  EXPECT_TRUE(binding->at(a).same_as(AsCall(expr)->args()[1]));
  EXPECT_TRUE(binding->at(anything).same_as(AsCall(expr)->args()[0]));
}

TEST(PatternTest, BindingNamesWhatEachSubPatternMatched) {
  const Pattern data = Wildcard();
  const Pattern weight = IsConstant();
  const Pattern conv = IsOp("nn.conv2d")({data, weight});
  const ir::Expr expr = Typed(kConv);
  std::optional<PatternBinding> binding = MatchPattern(conv, expr);
  ASSERT_TRUE(binding.has_value());
  EXPECT_TRUE(binding->at(conv).same_as(expr));
  EXPECT_TRUE(binding->at(data).same_as(AsCall(expr)->args()[0]));
  EXPECT_TRUE(binding->at(weight).same_as(AsCall(expr)->args()[1]));
  EXPECT_FALSE(MatchPattern(conv, AsCall(expr)->args()[0]).has_value());
}

TEST(PatternTest, OptionalPrefersTheWrappedFormAndAcceptsTheBareOne) {
  const Pattern conv = IsOp("nn.conv2d")({Wildcard(), IsConstant()});
  const Pattern relu = IsOp("nn.relu")({conv});
  const Pattern pattern = conv.Optional([&relu](const Pattern&) { return relu; });
  const ir::Expr with_relu = Typed(
      "%0 = nn.conv2d(%x: Tensor[(1, 1, 2, 2), float32], const(float32, (2, 1, 1, 1), [1, 2]));"
      "%1 = nn.relu(%0); %1");
  std::optional<PatternBinding> binding = MatchPattern(pattern, with_relu);
  ASSERT_TRUE(binding.has_value());
  EXPECT_TRUE(binding->at(relu).same_as(with_relu));
  EXPECT_TRUE(binding->at(conv).same_as(AsCall(with_relu)->args()[0]));
  binding = MatchPattern(pattern, Typed(kConv));
  ASSERT_TRUE(binding.has_value());
  EXPECT_FALSE(binding->count(relu));
  EXPECT_FALSE(Match(pattern, Typed("%0 = nn.relu(%x: Tensor[(2), float32]); %0")));
}

TEST(PatternTest, HasAttrComparesCallAttributes) {
  const Pattern conv = IsOp("nn.conv2d")({Wildcard(), Wildcard()});
  const ir::Expr grouped = Typed(
      "%0 = nn.conv2d(%x: Tensor[(1, 2, 2, 2), float32], %w: Tensor[(2, 1, 1, 1), float32], "
      "groups=2); %0");
  EXPECT_TRUE(Match(conv.HasAttr({{"groups", int64_t{2}}}), grouped));
  EXPECT_FALSE(Match(conv.HasAttr({{"groups", int64_t{1}}}), grouped));
  // Defaults are part of the call (the op's schema fills them in).
  EXPECT_TRUE(Match(conv.HasAttr({{"groups", int64_t{1}}}), Typed(kConv)));
  EXPECT_TRUE(Match(conv.HasAttr({{"strides", Array<int64_t>{1, 1}}}), Typed(kConv)));
  EXPECT_FALSE(Match(conv.HasAttr({{"strides", Array<int64_t>{2, 2}}}), Typed(kConv)));
  EXPECT_FALSE(Match(conv.HasAttr({{"no_such_attr", int64_t{1}}}), Typed(kConv)));
  EXPECT_FALSE(
      Match(Wildcard().HasAttr({{"groups", int64_t{1}}}), Typed("%x: Tensor[(2), float32]")));
}

TEST(PatternTest, DTypeShapeAndRankPredicatesReadTheCheckedType) {
  const ir::Expr expr = Typed(kConv);  // Tensor[(1, 2, 2, 2), float32]
  EXPECT_TRUE(Match(Wildcard().HasDType("float32"), expr));
  EXPECT_FALSE(Match(Wildcard().HasDType("int32"), expr));
  EXPECT_TRUE(Match(Wildcard().HasShape({1, 2, 2, 2}), expr));
  EXPECT_TRUE(Match(Wildcard().HasShape({1, -1, 2, -1}), expr));
  EXPECT_FALSE(Match(Wildcard().HasShape({1, 3, -1, -1}), expr));
  EXPECT_FALSE(Match(Wildcard().HasShape({1, 2, 2}), expr));
  EXPECT_TRUE(Match(Wildcard().HasRank(4), expr));
  EXPECT_FALSE(Match(Wildcard().HasRank(3), expr));
  // A tuple has no dtype or shape.
  const ir::Expr tuple = Typed("%0 = (%x: Tensor[(2), float32],); %0");
  EXPECT_FALSE(Match(Wildcard().HasDType("float32"), tuple));
  EXPECT_FALSE(Match(Wildcard().HasRank(1), tuple));
}

TEST(PatternTest, TypePredicateOnAnUntypedExpressionIsAValueError) {
  const ir::Expr untyped = ir::ParseExpr("%0 = nn.relu(%x: Tensor[(2), float32]); %0");
  ExpectError("ValueError", "run InferType",
              [&] { Match(IsOp("nn.relu")({Wildcard()}).HasDType("float32"), untyped); });
  // Without a type predicate, untyped expressions match.
  EXPECT_TRUE(Match(IsOp("nn.relu")({Wildcard()}), untyped));
}

TEST(PatternTest, BuildersRejectBadInputsNamingThem) {
  ExpectError("KeyError", "nn.conv2dd", [] { IsOp("nn.conv2dd"); });
  ExpectError("ValueError", "floaty32", [] { Wildcard().HasDType("floaty32"); });
  ExpectError("ValueError", "-2", [] { Wildcard().HasShape({1, -2}); });
  ExpectError("ValueError", "null", [] { IsOp("add")({Wildcard(), Pattern()}); });
  ExpectError("ValueError", "null", [] { PatternEntry("x.y", Pattern()); });
}

TEST(PatternTest, ToStringSpellsThePattern) {
  const Pattern conv =
      IsOp("nn.conv2d")({Wildcard(), IsConstant()}).HasAttr({{"groups", int64_t{1}}});
  const Pattern pattern = conv.Optional([](const Pattern& p) { return IsOp("nn.relu")({p}); });
  EXPECT_EQ(pattern.ToString(),
            "(nn.relu(nn.conv2d(*, const).has_attr({groups=1})) | "
            "nn.conv2d(*, const).has_attr({groups=1}))");
  EXPECT_EQ(IsTupleGetItem(IsTuple({IsVar()}), 0).HasRank(2).HasDType("int8").ToString(),
            "tuple(var).0.has_shape((-1, -1)).has_dtype(int8)");
}

// ---- pattern tables and MergeComposite ----

Array<PatternEntry> ReluTable() {
  return {PatternEntry("test_pattern.relu", IsOp("nn.relu")({Wildcard()}))};
}
KILN_REGISTER_GLOBAL("kiln.ext.test_pattern.pattern_table").set_body_typed(ReluTable);
KILN_REGISTER_GLOBAL("kiln.ext.test_pattern_misnamed.pattern_table").set_body_typed(ReluTable);
KILN_REGISTER_GLOBAL("kiln.ext.test_pattern_not_entries.pattern_table").set_body_typed([] {
  return Array<Any>{String("relu")};
});

TEST(PatternTableTest, IsReadFromTheCompilersGlobalFunction) {
  const Array<PatternEntry> table = GetPatternTable("test_pattern");
  ASSERT_EQ(table.size(), 1);
  EXPECT_EQ(table[0]->name(), "test_pattern.relu");
  EXPECT_TRUE(GetPatternTable("no_such_compiler").empty());
}

TEST(PatternTableTest, BadTablesAreErrorsNamingTheTable) {
  ExpectError("ValueError", "test_pattern_misnamed.<pattern>",
              [] { GetPatternTable("test_pattern_misnamed"); });
  ExpectError("TypeError", "kiln.ext.test_pattern_not_entries.pattern_table",
              [] { GetPatternTable("test_pattern_not_entries"); });
}

ir::IRModule ReluModule() {
  return ir::ParseModule("def @main(%x: Tensor[(2), float32]) { %0 = nn.relu(%x); %0 }");
}

bool MainCallsAComposite(const ir::IRModule& mod) {
  const auto* call = mod.Lookup("main")->body().as<ir::CallObj>();
  const auto* callee = call->op().as<ir::FunctionObj>();
  return callee != nullptr && callee->attrs().count(String(ir::attr::kComposite));
}

TEST(MergeCompositeTest, CheckCallbackDecliningLeavesTheMatch) {
  int calls = 0;
  const kiln::Function decline = kiln::Function::FromTyped([&calls](const ir::Expr& root) {
    ++calls;
    EXPECT_TRUE(root->checked_type().defined());  // checks see typed expressions
    return false;
  });
  const Pattern relu = IsOp("nn.relu")({Wildcard()});
  const ir::IRModule mod = ReluModule();
  const ir::IRModule declined =
      MergeComposite(Array<PatternEntry>{PatternEntry("t.relu", relu, decline)})(mod);
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(MainCallsAComposite(declined));
  EXPECT_TRUE(
      MainCallsAComposite(MergeComposite(Array<PatternEntry>{PatternEntry("t.relu", relu)})(mod)));
}

TEST(MergeCompositeTest, CheckReturningANonBoolIsATypeErrorNamingThePattern) {
  const kiln::Function bad = kiln::Function::FromTyped([](const ir::Expr&) { return int64_t{1}; });
  const Pattern relu = IsOp("nn.relu")({Wildcard()});
  ExpectError("TypeError", "t.relu", [&] {
    MergeComposite(Array<PatternEntry>{PatternEntry("t.relu", relu, bad)})(ReluModule());
  });
}

TEST(MergeCompositeTest, PipelineNameRoundTripsAndNoCompilerDoesNothing) {
  const Pass pass = ParsePipeline("MergeComposite( test_pattern , other )");
  EXPECT_EQ(pass.PipelineString(), "transform.MergeComposite(test_pattern, other)");
  EXPECT_EQ(ParsePipeline(pass.PipelineString()).PipelineString(), pass.PipelineString());
  EXPECT_TRUE(MainCallsAComposite(pass(ReluModule())));

  const ir::IRModule mod = ReluModule();
  for (const char* pipeline : {"MergeComposite", "MergeComposite()"}) {
    const Pass nothing = ParsePipeline(pipeline);
    EXPECT_EQ(nothing.PipelineString(), "transform.MergeComposite");
    EXPECT_FALSE(MainCallsAComposite(nothing(mod))) << pipeline;
  }
}

ir::IRModule MergeWith(const Pattern& pattern, const std::string& text) {
  return MergeComposite(Array<PatternEntry>{PatternEntry("t.p", pattern)})(ir::ParseModule(text));
}

TEST(MergeCompositeTest, RepeatedLeafBecomesOneParameter) {
  const Pattern x = Wildcard();
  const ir::IRModule out = MergeWith(
      IsOp("add")({x, x}), "def @main(%a: Tensor[(2), float32]) { %0 = add(%a, %a); %0 }");
  const auto* call = out.Lookup("main")->body().as<ir::CallObj>();
  ASSERT_NE(call, nullptr);
  ASSERT_EQ(call->args().size(), 1);
  EXPECT_TRUE(call->args()[0].same_as(out.Lookup("main")->params()[0]));
  const auto* composite = call->op().as<ir::FunctionObj>();
  ASSERT_NE(composite, nullptr);
  EXPECT_EQ(composite->params().size(), 1);
}

TEST(MergeCompositeTest, TupleRootedMatchReturnsTheTuple) {
  const ir::IRModule out =
      MergeWith(IsTuple({IsOp("nn.relu")({Wildcard()}), Wildcard()}),
                "def @main(%a: Tensor[(2), float32]) { %0 = nn.relu(%a); %1 = (%0, %a); %1 }");
  const auto* call = out.Lookup("main")->body().as<ir::CallObj>();
  ASSERT_NE(call, nullptr);
  const auto* composite = call->op().as<ir::FunctionObj>();
  ASSERT_NE(composite, nullptr);
  EXPECT_NE(composite->body().as<ir::TupleObj>(), nullptr);
  EXPECT_NE(composite->ret_type().as<ir::TupleTypeObj>(), nullptr);
  EXPECT_EQ(call->args().size(), 1);  // %a, read twice inside
}

}  // namespace
}  // namespace transform
}  // namespace kiln
