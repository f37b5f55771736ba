// Op schemas (src/ir/op_schema.cc): the checks every Call of an op with a schema goes through,
// defaults, and the kind and pattern names other languages register with.
#include <kiln/ir/expr.h>
#include <kiln/ir/op.h>
#include <kiln/ir/structural_equal.h>
#include <gtest/gtest.h>

#include "ir_test_util.h"
#include "testing/expect_error.h"

namespace kiln {
namespace ir {
namespace {

using test_util::ExpectError;
using testing::F32;

KILN_REGISTER_OP("test.schema.scale")
    .add_input("data")
    .add_attr("factors", AttrKind::kFloats, Array<Any>{1, 2.5})
    .add_attr("bias", AttrKind::kFloat, 0);

/// Attribute `name` of `call` (present: Calls get their defaults filled in).
Any CallAttr(const Call& call, const char* name) { return *call->attrs().Get(String(name)); }

class OpSchemaTest : public ::testing::Test {
 protected:
  Var x_{"x", F32({1, 3, 8, 8})};
  Var w_{"w", F32({8, 3, 3, 3})};
  Op conv_ = Op::Get("nn.conv2d");
};

TEST_F(OpSchemaTest, UnknownAttributeSuggestsTheClosestName) {
  ExpectError(
      [&] {
        Call(conv_, {x_, w_}, {{"stride", Array<int64_t>{2, 2}}});
      },
      "ValueError",
      {"op 'nn.conv2d' has no attribute 'stride'", "did you mean 'strides'?",
       "strides, padding, dilation, groups"});
}

TEST_F(OpSchemaTest, WrongKindNamesTheAttribute) {
  ExpectError(
      [&] {
        Call(conv_, {x_, w_}, {{"groups", 1.5}});
      },
      "TypeError", {"op 'nn.conv2d': attribute 'groups' must be int, got a float"});
  ExpectError(
      [&] {
        Call(conv_, {x_, w_}, {{"strides", 2}});
      },
      "TypeError", {"attribute 'strides' must be ints"});
  ExpectError(
      [&] {
        Call(Op::Get("transpose"), {x_}, {{"axes", String("all")}});
      },
      "TypeError", {"attribute 'axes' must be ints or None, got a kiln.String"});
  ExpectError(
      [&] {
        Call(Op::Get("cast"), {x_}, {{"dtype", String("floaty")}});
      },
      "TypeError", {"attribute 'dtype' must be dtype"});
}

TEST_F(OpSchemaTest, MissingRequiredAttribute) {
  ExpectError([&] { Call(Op::Get("reshape"), {x_}); }, "ValueError",
              {"op 'reshape' needs attribute 'newshape' (sizes)"});
}

TEST_F(OpSchemaTest, WrongArgumentCount) {
  ExpectError([&] { Call(conv_, {x_}); }, "ValueError",
              {"op 'nn.conv2d' takes 2 arguments (data, weight), got 1"});
}

TEST_F(OpSchemaTest, IntsGivenForFloatsAreStoredAsFloats) {
  const Call call(Op::Get("test.schema.scale"), {x_},
                  {{"factors", Array<Any>{3, 0.5}}, {"bias", 2}});
  EXPECT_EQ(CallAttr(call, "bias").type_index(), kKilnTypeFloat);
  const auto factors = CallAttr(call, "factors").cast<Array<Any>>();
  EXPECT_EQ(factors[0].type_index(), kKilnTypeFloat);
  EXPECT_EQ(factors[0].cast<double>(), 3.0);
  // Defaults are stored the same way.
  const Call defaults(Op::Get("test.schema.scale"), {x_});
  EXPECT_EQ(CallAttr(defaults, "bias").type_index(), kKilnTypeFloat);
  EXPECT_EQ(CallAttr(defaults, "factors").cast<Array<Any>>()[0].type_index(), kKilnTypeFloat);
}

TEST_F(OpSchemaTest, DefaultsAreFilledIn) {
  const Call implicit(conv_, {x_, w_});
  const Call explicit_defaults(conv_, {x_, w_},
                               {{"strides", Array<int64_t>{1, 1}},
                                {"padding", Array<int64_t>{0, 0, 0, 0}},
                                {"dilation", Array<int64_t>{1, 1}},
                                {"groups", 1}});
  EXPECT_TRUE(StructuralEqual(implicit, explicit_defaults));
  EXPECT_FALSE(StructuralEqual(implicit, Call(conv_, {x_, w_}, {{"groups", 3}})));
  EXPECT_TRUE(CallAttr(Call(Op::Get("transpose"), {x_}), "axes").is_none());
}

TEST_F(OpSchemaTest, KindAndPatternNamesRoundTrip) {
  for (AttrKind kind : {AttrKind::kInt, AttrKind::kFloat, AttrKind::kBool, AttrKind::kString,
                        AttrKind::kDType, AttrKind::kInts, AttrKind::kFloats}) {
    EXPECT_EQ(ParseAttrKind(AttrKindName(kind)), kind);
  }
  EXPECT_EQ(ParseOpPattern("injective"), OpPattern::kInjective);
  EXPECT_EQ(ParseOpPattern(OpPatternName(OpPattern::kOutEWiseFusable)),
            OpPattern::kOutEWiseFusable);
  ExpectError([] { ParseAttrKind("tensor"); }, "ValueError",
              {"unknown attribute kind 'tensor'", "int, float, bool, str, dtype, ints, floats"});
  ExpectError([] { ParseOpPattern("fusable"); }, "ValueError",
              {"unknown op pattern 'fusable'", "elemwise, broadcast"});
}

TEST_F(OpSchemaTest, BadDefaultsAreRejectedAtRegistration) {
  detail::RegisterOp("test.schema.bad_default");
  ExpectError(
      [] {
        detail::AddOpAttrField("test.schema.bad_default",
                               AttrField{"axis", AttrKind::kInt, Any(String("zero"))});
      },
      "TypeError", {"op 'test.schema.bad_default': attribute 'axis' must be int"});
}

}  // namespace
}  // namespace ir
}  // namespace kiln
