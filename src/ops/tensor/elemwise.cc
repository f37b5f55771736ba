// Elementwise and broadcasting ops, ONNX semantics: unary math and activations, binary
// arithmetic and comparisons (numpy broadcasting), where, clip and cast.
#include <kiln/ir/op.h>

#include <limits>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

// One input, same type out, fusable anywhere.
#define KILN_REGISTER_UNARY_OP(Name)     \
  KILN_REGISTER_OP(Name)                 \
      .add_input("data")                 \
      .set_pattern(OpPattern::kElemWise) \
      .set_type_relation(SameAsInputRelation)

KILN_REGISTER_UNARY_OP("negative");
KILN_REGISTER_UNARY_OP("abs");
KILN_REGISTER_UNARY_OP("exp");
KILN_REGISTER_UNARY_OP("log");
KILN_REGISTER_UNARY_OP("sqrt");
KILN_REGISTER_UNARY_OP("reciprocal");
KILN_REGISTER_UNARY_OP("erf");
KILN_REGISTER_UNARY_OP("floor");
KILN_REGISTER_UNARY_OP("ceil");
KILN_REGISTER_UNARY_OP("round");
KILN_REGISTER_UNARY_OP("sign");
KILN_REGISTER_UNARY_OP("sin");
KILN_REGISTER_UNARY_OP("cos");
KILN_REGISTER_UNARY_OP("tan");
KILN_REGISTER_UNARY_OP("asin");
KILN_REGISTER_UNARY_OP("acos");
KILN_REGISTER_UNARY_OP("atan");
KILN_REGISTER_UNARY_OP("sinh");
KILN_REGISTER_UNARY_OP("cosh");
KILN_REGISTER_UNARY_OP("asinh");
KILN_REGISTER_UNARY_OP("acosh");
KILN_REGISTER_UNARY_OP("atanh");
KILN_REGISTER_UNARY_OP("sigmoid");
KILN_REGISTER_UNARY_OP("tanh");
KILN_REGISTER_UNARY_OP("logical_not");
KILN_REGISTER_UNARY_OP("nn.relu");
KILN_REGISTER_UNARY_OP("nn.gelu");
KILN_REGISTER_UNARY_OP("nn.silu");       // x * sigmoid(x), also called swish
KILN_REGISTER_UNARY_OP("nn.hardswish");  // x * clamp(x / 6 + 1 / 2, 0, 1) (MobileNetV3)
KILN_REGISTER_UNARY_OP("nn.softplus");
KILN_REGISTER_UNARY_OP("nn.leaky_relu").add_attr("alpha", AttrKind::kFloat, 0.01);
KILN_REGISTER_UNARY_OP("nn.elu").add_attr("alpha", AttrKind::kFloat, 1.0);
KILN_REGISTER_UNARY_OP("nn.hard_sigmoid")
    .add_attr("alpha", AttrKind::kFloat, 0.2)
    .add_attr("beta", AttrKind::kFloat, 0.5);
// ONNX Clip: bounds default to the whole range of the type.
KILN_REGISTER_UNARY_OP("clip")
    .add_attr("a_min", AttrKind::kFloat, -std::numeric_limits<double>::infinity())
    .add_attr("a_max", AttrKind::kFloat, std::numeric_limits<double>::infinity());

#undef KILN_REGISTER_UNARY_OP

// Two inputs broadcast together.
#define KILN_REGISTER_BINARY_OP(Name, Relation) \
  KILN_REGISTER_OP(Name)                        \
      .add_input("lhs")                         \
      .add_input("rhs")                         \
      .set_pattern(OpPattern::kBroadcast)       \
      .set_type_relation(Relation)

KILN_REGISTER_BINARY_OP("add", BroadcastRelation);
KILN_REGISTER_BINARY_OP("subtract", BroadcastRelation);
KILN_REGISTER_BINARY_OP("multiply", BroadcastRelation);
KILN_REGISTER_BINARY_OP("divide", BroadcastRelation);
KILN_REGISTER_BINARY_OP("power", BroadcastRelation);
KILN_REGISTER_BINARY_OP("maximum", BroadcastRelation);
KILN_REGISTER_BINARY_OP("minimum", BroadcastRelation);
// fmod = true: the remainder takes the dividend's sign (C fmod), as ONNX Mod with fmod=1.
KILN_REGISTER_BINARY_OP("mod", BroadcastRelation).add_attr("fmod", AttrKind::kBool, false);
// Integer shifts (ONNX BitShift); a shift by the bit width or more gives 0.
KILN_REGISTER_BINARY_OP("left_shift", BroadcastRelation);
KILN_REGISTER_BINARY_OP("right_shift", BroadcastRelation);
KILN_REGISTER_BINARY_OP("logical_and", BroadcastRelation);
KILN_REGISTER_BINARY_OP("logical_or", BroadcastRelation);
KILN_REGISTER_BINARY_OP("logical_xor", BroadcastRelation);
KILN_REGISTER_BINARY_OP("equal", CompareRelation);
KILN_REGISTER_BINARY_OP("not_equal", CompareRelation);
KILN_REGISTER_BINARY_OP("less", CompareRelation);
KILN_REGISTER_BINARY_OP("less_equal", CompareRelation);
KILN_REGISTER_BINARY_OP("greater", CompareRelation);
KILN_REGISTER_BINARY_OP("greater_equal", CompareRelation);

#undef KILN_REGISTER_BINARY_OP

Type WhereRelation(const TypeRelationContext& ctx) {
  KILN_CHECK(DataTypeEqual(ctx.DType(0), kBool), TypeError)
      << ctx.Describe(ctx.ArgName(0) + " must be bool, got " + DataTypeToString(ctx.DType(0)));
  ctx.CheckSameDType(1, 2);
  return TypeRelationContext::TensorResult(BroadcastArgShapes(ctx, 0), ctx.DType(1));
}

KILN_REGISTER_OP("where")
    .add_input("condition")
    .add_input("x")
    .add_input("y")
    .set_pattern(OpPattern::kBroadcast)
    .set_type_relation(WhereRelation);

Type CastRelation(const TypeRelationContext& ctx) {
  return TypeRelationContext::TensorResult(ctx.Shape(0), DTypeAttr(ctx, "dtype"));
}

KILN_REGISTER_OP("cast")
    .add_input("data")
    .add_attr("dtype", AttrKind::kDType)
    .set_pattern(OpPattern::kElemWise)
    .set_type_relation(CastRelation);

}  // namespace
}  // namespace op
}  // namespace kiln
