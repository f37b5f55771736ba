// Compute rules (kiln/tir/compute.h) of the elementwise and broadcasting ops of
// src/ops/tensor/elemwise.cc, with the semantics of their CPU kernels
// (src/kernels/cpu/elementwise.cc). Integer division and modulo have none: a zero divisor must
// be an error, which a generated loop cannot raise; their groups keep the kernels.
#include <kiln/tir/compute.h>

#include <cmath>
#include <string>

namespace kiln {
namespace tir {
namespace {

constexpr DLDataType kBool{kDLUInt, 1, 1};

bool IsFloat(DLDataType dtype) { return dtype.code == kDLFloat; }

void RequireFloat(const ComputeContext& ctx, const std::string& op) {
  KILN_CHECK(IsFloat(ctx.input_dtype(0)), NotImplementedError)
      << op << ": no compute rule for " << DataTypeToString(ctx.input_dtype(0));
}

Node Zero(const Node& like) {
  return IsFloat(like->dtype()) ? FloatImm(0.0, like->dtype()) : IntImm(0, like->dtype());
}

/// A C math function of one float argument: exp, log, ...
void RegisterMath(const std::string& op, const std::string& function) {
  RegisterComputeRule(op, [op, function](const ComputeContext& ctx) {
    RequireFloat(ctx, op);
    return Call(function, {ctx.Input(0)}, ctx.dtype());
  });
}

/// An op whose value is `fn` of its first input, for floats only.
template <typename Fn>
void RegisterFloatUnary(const std::string& op, Fn fn) {
  RegisterComputeRule(op, [op, fn](const ComputeContext& ctx) {
    RequireFloat(ctx, op);
    return fn(ctx, ctx.Input(0));
  });
}

void RegisterUnary() {
  for (const char* name :
       {"exp", "log", "sqrt", "erf", "floor", "ceil", "sin", "cos", "tan", "asin", "acos", "atan",
        "sinh", "cosh", "asinh", "acosh", "atanh", "tanh"}) {
    RegisterMath(name, name);
  }
  RegisterMath("round", "nearbyint");  // halves to even, as ONNX Round
  RegisterComputeRule("negative", [](const ComputeContext& ctx) {
    const Node x = ctx.Input(0);
    // x * -1 keeps the sign of zeros, which 0 - x would not.
    return IsFloat(ctx.dtype()) ? Binary("mul", x, ctx.Constant(-1.0)) : Binary("sub", Zero(x), x);
  });
  RegisterComputeRule("abs", [](const ComputeContext& ctx) {
    Node x = ctx.Input(0);
    if (IsFloat(ctx.dtype())) return Call("fabs", {x}, ctx.dtype());
    if (ctx.dtype().code == kDLUInt) return x;
    return Select(Binary("lt", x, Zero(x)), Binary("sub", Zero(x), x), x);
  });
  RegisterComputeRule("sign", [](const ComputeContext& ctx) {
    const Node x = ctx.Input(0);
    return Select(Binary("gt", x, Zero(x)), ctx.Constant(1.0),
                  Select(Binary("lt", x, Zero(x)), ctx.Constant(-1.0), x));
  });
  RegisterFloatUnary("reciprocal", [](const ComputeContext& ctx, const Node& x) {
    return Binary("div", ctx.Constant(1.0), x);
  });
  RegisterFloatUnary("sigmoid", [](const ComputeContext& ctx, const Node& x) {
    const Node exp = Call("exp", {Binary("mul", x, ctx.Constant(-1.0))}, ctx.dtype());
    return Binary("div", ctx.Constant(1.0), Binary("add", ctx.Constant(1.0), exp));
  });
  RegisterFloatUnary("nn.gelu", [](const ComputeContext& ctx, const Node& x) {
    const Node erf = Call("erf", {Binary("mul", x, ctx.Constant(M_SQRT1_2))}, ctx.dtype());
    return Binary("mul", Binary("mul", ctx.Constant(0.5), x),
                  Binary("add", ctx.Constant(1.0), erf));
  });
  RegisterFloatUnary("nn.silu", [](const ComputeContext& ctx, const Node& x) {
    const Node exp = Call("exp", {Binary("mul", x, ctx.Constant(-1.0))}, ctx.dtype());
    return Binary("div", x, Binary("add", ctx.Constant(1.0), exp));
  });
  RegisterFloatUnary("nn.hardswish", [](const ComputeContext& ctx, const Node& x) {
    const Node gate = Binary("add", Binary("div", x, ctx.Constant(6.0)), ctx.Constant(0.5));
    return Binary("mul", x,
                  Binary("min", ctx.Constant(1.0), Binary("max", ctx.Constant(0.0), gate)));
  });
  RegisterFloatUnary("nn.softplus", [](const ComputeContext& ctx, const Node& x) {
    // log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|).
    const Node minus_abs = Binary("mul", Call("fabs", {x}, ctx.dtype()), ctx.Constant(-1.0));
    return Binary("add", Binary("max", x, ctx.Constant(0.0)),
                  Call("log1p", {Call("exp", {minus_abs}, ctx.dtype())}, ctx.dtype()));
  });
  RegisterComputeRule("nn.relu", [](const ComputeContext& ctx) {
    return Binary("max", ctx.Input(0), ctx.Constant(0.0));
  });
  RegisterFloatUnary("nn.leaky_relu", [](const ComputeContext& ctx, const Node& x) {
    const Node alpha = ctx.Constant(ctx.Attr("alpha").cast<double>());
    return Select(Binary("ge", x, ctx.Constant(0.0)), x, Binary("mul", alpha, x));
  });
  RegisterFloatUnary("nn.elu", [](const ComputeContext& ctx, const Node& x) {
    const Node alpha = ctx.Constant(ctx.Attr("alpha").cast<double>());
    return Select(Binary("ge", x, ctx.Constant(0.0)), x,
                  Binary("mul", alpha, Call("expm1", {x}, ctx.dtype())));
  });
  RegisterFloatUnary("nn.hard_sigmoid", [](const ComputeContext& ctx, const Node& x) {
    const Node y = Binary("add", Binary("mul", ctx.Constant(ctx.Attr("alpha").cast<double>()), x),
                          ctx.Constant(ctx.Attr("beta").cast<double>()));
    return Binary("min", ctx.Constant(1.0), Binary("max", ctx.Constant(0.0), y));
  });
  RegisterComputeRule("clip", [](const ComputeContext& ctx) {
    Node value = ctx.Input(0);
    const double low = ctx.Attr("a_min").cast<double>();
    const double high = ctx.Attr("a_max").cast<double>();
    // Infinite bounds clip nothing (and no integer holds them).
    if (!std::isinf(low)) value = Binary("max", value, ctx.Constant(low));
    if (!std::isinf(high)) value = Binary("min", value, ctx.Constant(high));
    return value;
  });
  RegisterComputeRule("logical_not", [](const ComputeContext& ctx) { return Not(ctx.Input(0)); });
  RegisterComputeRule("cast", [](const ComputeContext& ctx) {
    const Node x = ctx.Input(0);
    // To bool is a test against zero; C's conversion would truncate 0.5 to 0.
    if (DataTypeEqual(ctx.dtype(), kBool)) return Binary("ne", x, Zero(x));
    return Cast(x, ctx.dtype());
  });
}

/// An op whose value is the tir binary `kind` of its two inputs.
void RegisterBinary(const std::string& op, const std::string& kind, bool float_only = false) {
  RegisterComputeRule(op, [op, kind, float_only](const ComputeContext& ctx) {
    if (float_only) RequireFloat(ctx, op);
    return Binary(kind, ctx.Input(0), ctx.Input(1));
  });
}

void RegisterBinaries() {
  RegisterBinary("add", "add");
  RegisterBinary("subtract", "sub");
  RegisterBinary("multiply", "mul");
  RegisterBinary("divide", "div", /*float_only=*/true);
  RegisterBinary("maximum", "max");
  RegisterBinary("minimum", "min");
  RegisterBinary("logical_and", "and");
  RegisterBinary("logical_or", "or");
  RegisterBinary("logical_xor", "ne");
  RegisterBinary("equal", "eq");
  RegisterBinary("not_equal", "ne");
  RegisterBinary("less", "lt");
  RegisterBinary("less_equal", "le");
  RegisterBinary("greater", "gt");
  RegisterBinary("greater_equal", "ge");
  RegisterComputeRule("power", [](const ComputeContext& ctx) {
    RequireFloat(ctx, "power");
    return Call("pow", {ctx.Input(0), ctx.Input(1)}, ctx.dtype());
  });
  RegisterComputeRule("mod", [](const ComputeContext& ctx) {
    RequireFloat(ctx, "mod");
    const Node a = ctx.Input(0);
    const Node b = ctx.Input(1);
    Node r = Call("fmod", {a, b}, ctx.dtype());
    if (ctx.Attr("fmod").cast<bool>()) return r;
    // numpy's mod: the result takes the divisor's sign.
    const Node zero = ctx.Constant(0.0);
    const Node signs_differ = Binary("and", Binary("ne", r, zero),
                                     Binary("ne", Binary("lt", r, zero), Binary("lt", b, zero)));
    return Select(signs_differ, Binary("add", r, b), r);
  });
  RegisterComputeRule("where", [](const ComputeContext& ctx) {
    return Select(ctx.Input(0), ctx.Input(1), ctx.Input(2));
  });
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterUnary();
  RegisterBinaries();
  return true;
}();

}  // namespace
}  // namespace tir
}  // namespace kiln
