#include <kiln/ir/expr_functor.h>
#include <kiln/ir/structural_equal.h>
#include <gtest/gtest.h>

#include <set>

#include "ir_test_util.h"

namespace kiln {
namespace ir {
namespace {

using testing::F32;
using testing::HostTensor;

KILN_REGISTER_OP("test.equal.add");
KILN_REGISTER_OP("test.equal.sub");

Call Add(const Expr& a, const Expr& b, Map<String, Any> attrs = {}) {
  return Call(Op::Get("test.equal.add"), {a, b}, attrs);
}

/// fn(%a, %b) { add(%a, const) + %b } with fresh variables each time.
Function Sample(const std::string& a_name = "a") {
  const Var a(a_name, F32({2}));
  const Var b("b", F32({2}));
  return Function({a, b}, Add(Add(a, Constant(HostTensor({1, 2}, {2}))), b), F32({2}),
                  {{attr::kCompiler, String("dnnl")}});
}

TEST(StructuralEqualTest, AlphaEquivalentFunctionsAreEqualAndHashEqual) {
  const Function f = Sample("a");
  const Function g = Sample("renamed");
  EXPECT_FALSE(f.same_as(g));
  EXPECT_TRUE(StructuralEqual(f, g));
  EXPECT_EQ(StructuralHash(f), StructuralHash(g));
}

TEST(StructuralEqualTest, FreeVariablesCompareByIdentityUnlessMapped) {
  const Var x("x", F32({1}));
  const Var y("x", F32({1}));
  EXPECT_TRUE(StructuralEqual(Add(x, x), Add(x, x)));
  EXPECT_FALSE(StructuralEqual(Add(x, x), Add(y, y)));
  EXPECT_TRUE(StructuralEqual(Add(x, x), Add(y, y), /*map_free_vars=*/true));
  EXPECT_EQ(StructuralHash(Add(x, x), true), StructuralHash(Add(y, y), true));
  // Mapping is one-to-one: x+x is not y+z.
  EXPECT_FALSE(StructuralEqual(Add(x, x), Add(y, Var("z", F32({1}))), true));
}

TEST(StructuralEqualTest, ParametersMatchByPosition) {
  const Var a("a");
  const Var b("b");
  const Function first({a, b}, Add(a, b));
  const Var c("c");
  const Var d("d");
  EXPECT_TRUE(StructuralEqual(first, Function({c, d}, Add(c, d))));
  EXPECT_FALSE(StructuralEqual(first, Function({c, d}, Add(d, c))));
}

TEST(StructuralEqualTest, SharingIsNotCompared) {
  const Var x("x");
  const Call shared = Add(x, x);
  EXPECT_TRUE(StructuralEqual(Tuple({shared, shared}), Tuple({Add(x, x), Add(x, x)})));
  EXPECT_EQ(StructuralHash(Tuple({shared, shared})), StructuralHash(Tuple({Add(x, x), Add(x, x)})));
}

TEST(StructuralEqualTest, AttributeMapsCompareAsSetsOfEntries) {
  const Var x("x");
  Map<String, Any> ab{{"a", 1}, {"b", Array<Any>{String("s"), 2.5}}};
  Map<String, Any> ba{{"b", Array<Any>{String("s"), 2.5}}, {"a", 1}};
  EXPECT_TRUE(StructuralEqual(Add(x, x, ab), Add(x, x, ba)));
  EXPECT_EQ(StructuralHash(Add(x, x, ab)), StructuralHash(Add(x, x, ba)));
}

TEST(StructuralEqualTest, ConstantsCompareByContent) {
  EXPECT_TRUE(
      StructuralEqual(Constant(HostTensor({1, 2}, {2})), Constant(HostTensor({1, 2}, {2}))));
  EXPECT_FALSE(
      StructuralEqual(Constant(HostTensor({1, 2}, {2})), Constant(HostTensor({1, 3}, {2}))));
  EXPECT_FALSE(
      StructuralEqual(Constant(HostTensor({1, 2}, {2})), Constant(HostTensor({1, 2}, {1, 2}))));
}

/// Variants of Sample() that each differ in one respect.
std::vector<Function> UnequalVariants() {
  std::vector<Function> variants{Sample()};
  auto make = [](Type a_type, const std::vector<float>& constant, Map<String, Any> call_attrs,
                 const char* op, Map<String, Any> function_attrs, Type ret, bool swap) {
    const Var a("a", a_type);
    const Var b("b", F32({2}));
    const Call inner(Op::Get(op), {a, Constant(HostTensor(constant, {2}))}, call_attrs);
    const Call body = swap ? Add(b, inner) : Add(inner, b);
    return Function({a, b}, body, ret, function_attrs);
  };
  const Map<String, Any> dnnl{{attr::kCompiler, String("dnnl")}};
  const Type f2 = F32({2});
  variants.push_back(make(F32({3}), {1, 2}, {}, "test.equal.add", dnnl, f2, false));
  variants.push_back(make(TensorType::Static({2}, DLDataType{kDLInt, 32, 1}), {1, 2}, {},
                          "test.equal.add", dnnl, f2, false));
  variants.push_back(make(f2, {1, 5}, {}, "test.equal.add", dnnl, f2, false));
  variants.push_back(make(f2, {1, 2}, {{"axis", 1}}, "test.equal.add", dnnl, f2, false));
  variants.push_back(make(f2, {1, 2}, {}, "test.equal.sub", dnnl, f2, false));
  variants.push_back(
      make(f2, {1, 2}, {}, "test.equal.add", {{attr::kCompiler, String("cuda")}}, f2, false));
  variants.push_back(make(f2, {1, 2}, {}, "test.equal.add", {}, f2, false));
  variants.push_back(make(f2, {1, 2}, {}, "test.equal.add", dnnl, F32({2, 1}), false));
  variants.push_back(make(f2, {1, 2}, {}, "test.equal.add", dnnl, Type(), false));
  variants.push_back(make(f2, {1, 2}, {}, "test.equal.add", dnnl, f2, true));
  return variants;
}

TEST(StructuralEqualTest, EachVariantIsUnequalToTheOthersAndHashesDifferently) {
  const std::vector<Function> variants = UnequalVariants();
  std::set<uint64_t> hashes;
  for (size_t i = 0; i < variants.size(); ++i) {
    hashes.insert(StructuralHash(variants[i]));
    for (size_t j = 0; j < variants.size(); ++j) {
      EXPECT_EQ(StructuralEqual(variants[i], variants[j]), i == j) << i << " vs " << j;
    }
  }
  EXPECT_EQ(hashes.size(), variants.size());
}

TEST(StructuralEqualTest, TypesCompareStructurally) {
  EXPECT_TRUE(StructuralEqual(TupleType({F32({1}), F32({2})}), TupleType({F32({1}), F32({2})})));
  EXPECT_FALSE(StructuralEqual(FuncType({F32({1})}, F32({1})), FuncType({F32({1})}, F32({2}))));
}

TEST(StructuralEqualTest, SymbolicDimensionsCompareTheirExpressionsWithVariablesByName) {
  auto type = [](const arith::SizeExpr& rows) {
    return TensorType(Array<Dim>{SymDim(rows), IntDim(3)}, DLDataType{kDLFloat, 32, 1});
  };
  const arith::SizeVar n("n");
  const TensorType a = type(n * 2);
  const TensorType b = type(arith::SizeVar("n") * 2);
  EXPECT_TRUE(StructuralEqual(a, b));
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
  EXPECT_FALSE(StructuralEqual(a, type(arith::SizeVar("m") * 2)));
  EXPECT_FALSE(StructuralEqual(a, type(2 * n)));  // structure, not algebra
  EXPECT_FALSE(StructuralEqual(a, TensorType::Static({2, 3}, DLDataType{kDLFloat, 32, 1})));
  // Size expressions anywhere (here in an attribute map) compare the same way.
  const Map<String, Any> attrs{{"rows", n + 1}};
  EXPECT_TRUE(StructuralEqual(attrs, Map<String, Any>{{"rows", arith::SizeVar("n") + 1}}));
  EXPECT_EQ(StructuralHash(attrs), StructuralHash(Map<String, Any>{{"rows", n + 1}}));
}

TEST(StructuralEqualTest, HundredThousandChainedNodesCompareAndHashIteratively) {
  auto chain = [](const Var& x, float last) {
    Expr e = x;
    for (int i = 0; i < 100000; ++i) e = Add(e, x);
    return Function({x}, Add(e, Constant(HostTensor({last}, {1}))));
  };
  const Function f = chain(Var("x"), 1);
  const Function g = chain(Var("y"), 1);
  EXPECT_TRUE(StructuralEqual(f, g));
  EXPECT_EQ(StructuralHash(f), StructuralHash(g));
  EXPECT_FALSE(StructuralEqual(f, chain(Var("z"), 2)));
}

}  // namespace
}  // namespace ir
}  // namespace kiln
