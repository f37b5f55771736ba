// SimplifyExpr: removes operations that do nothing or undo each other, and raises to a small
// constant power by multiplying. Each rule keeps the result's type exactly (a rule that would
// change it, e.g. x + 0 broadcasting x to a larger shape, does not fire).
#include <kiln/ir/structural_equal.h>
#include <kiln/transform/passes.h>

#include <optional>
#include <vector>

#include "constant_util.h"
#include "expr_util.h"
#include "typed_mutator.h"

namespace kiln {
namespace transform {
namespace {

using ir::Call;
using ir::Expr;

/// `call` when it is a Call of the op named `name`, else nullptr.
bool SameType(const Expr& a, const Expr& b) {
  return ir::StructuralEqual(a->checked_type(), b->checked_type());
}

/// The permutation `transpose` applies (its axes, or the reversal when it has none).
std::vector<int64_t> Permutation(const ir::CallObj& transpose) {
  std::vector<int64_t> axes;
  std::optional<Any> given = transpose.attrs().Get(String("axes"));
  if (given.has_value() && !given->is_none()) {
    for (const Any& axis : given->cast<Array<Any>>()) axes.push_back(axis.cast<int64_t>());
  }
  const int64_t rank = RankOf(transpose.args()[0]);
  if (axes.empty()) {
    for (int64_t i = rank - 1; i >= 0; --i) axes.push_back(i);
  }
  for (int64_t& axis : axes) axis = axis < 0 ? axis + rank : axis;
  return axes;
}

/// Whether `permutation` keeps the axes of `data` that may have more than one element in their
/// order (so it moves only axes of extent 1 and leaves memory as it is). A symbolic extent is
/// never the constant 1, so it counts as a moved axis.
bool MovesOnlyUnitAxes(const ir::Expr& data, const std::vector<int64_t>& permutation) {
  const Array<ir::Dim>& shape = data->checked_type().as<ir::TensorTypeObj>()->shape();
  int64_t last = -1;
  for (int64_t axis : permutation) {
    if (shape[axis].as_static() == 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

bool IsIdentity(const std::vector<int64_t>& permutation) {
  for (size_t i = 0; i < permutation.size(); ++i) {
    if (permutation[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

/// The operand that `x op c` (or `c op x` when `commutative`) leaves unchanged when the
/// constant c holds `identity` everywhere, or nullopt.
std::optional<Expr> IdentityOperand(const Call& call, double identity, bool commutative) {
  const Expr& lhs = call->args()[0];
  const Expr& rhs = call->args()[1];
  auto is_identity = [identity](const Expr& expr) {
    const auto* constant = expr.as<ir::ConstantObj>();
    return constant != nullptr && UniformValue(Downcast<ir::Constant>(expr)) == identity;
  };
  if (is_identity(rhs) && SameType(lhs, call)) return lhs;
  if (commutative && is_identity(lhs) && SameType(rhs, call)) return rhs;
  return std::nullopt;
}

/// The attributes of a reshape to the shape of `expr`'s type: its extents as they are, static
/// or symbolic (newshape is a sizes attribute).
Map<String, Any> NewShapeAttrs(const Expr& expr) {
  Array<Any> newshape;
  for (const ir::Dim& dim : expr->checked_type().as<ir::TensorTypeObj>()->shape()) {
    const std::optional<int64_t> extent = dim.as_static();
    newshape.push_back(extent.has_value() ? Any(*extent) : Any(dim.AsSizeExpr()));
  }
  Map<String, Any> attrs;
  attrs.Set(String("newshape"), newshape);
  return attrs;
}

class Simplifier : public TypedMutator {
 public:
  using TypedMutator::TypedMutator;

 protected:
  Expr RewriteCall(const Call& /*pre*/, const Call& call) override {
    const auto* op = call->op().as<ir::OpObj>();
    if (op == nullptr) return call;
    const std::string& name = op->name().str();
    const Expr& data = call->args().empty() ? Expr() : call->args()[0];
    if (name == "reshape" || name == "cast") {
      // A reshape to the same shape, a cast to the same dtype.
      if (SameType(data, call)) return data;
      if (const ir::CallObj* inner = AsReshaping(data); inner && name == "reshape") {
        const Expr& input = inner->args()[0];
        if (SameType(input, call)) return input;
        // One reshape to the result's shape.
        return Typed(Call(call->op(), {input}, NewShapeAttrs(call)));
      }
      return call;
    }
    if (name == "transpose") return SimplifyTranspose(call);
    if (name == "add") return IdentityOperand(call, 0, true).value_or(call);
    if (name == "subtract") return IdentityOperand(call, 0, false).value_or(call);
    if (name == "multiply") return IdentityOperand(call, 1, true).value_or(call);
    if (name == "divide") return IdentityOperand(call, 1, false).value_or(call);
    if (name == "power") return SimplifyPower(call);
    if (name == "take") return SimplifyTake(call);
    if (name == "concatenate") {  // of one tensor
      const auto* tuple = data.as<ir::TupleObj>();
      if (tuple != nullptr && tuple->fields().size() == 1 && SameType(tuple->fields()[0], call)) {
        return tuple->fields()[0];
      }
      return call;
    }
    if (name == "nn.pad")
      return AllZero(call->attrs(), "pads") && SameType(data, call) ? data : call;
    if (name == "image.resize2d") return IsIdentityResize(call) ? data : call;
    return call;
  }

 private:
  /// `expr` when it is a call that only reshapes its operand (reshape, squeeze, unsqueeze).
  static const ir::CallObj* AsReshaping(const Expr& expr) {
    for (const char* name : {"reshape", "squeeze", "unsqueeze"}) {
      if (const ir::CallObj* call = AsCallOf(expr, name)) return call;
    }
    return nullptr;
  }

  static bool AllZero(const Map<String, Any>& attrs, const char* name) {
    const std::optional<Any> values = attrs.Get(String(name));
    if (!values.has_value()) return false;
    for (const Any& value : values->cast<Array<Any>>()) {
      if (value.cast<int64_t>() != 0) return false;
    }
    return true;
  }

  /// A resize to the size it was given, at scale 1: each output pixel is the input pixel at the
  /// same position, for nearest and linear interpolation in every coordinate mode but
  /// tf_half_pixel_for_nn, which shifts by half a pixel (torchvision's detectors resize a
  /// 320 x 320 image to 320 x 320 before anything else).
  static bool IsIdentityResize(const Call& call) {
    if (!SameType(call->args()[0], call)) return false;
    const Map<String, Any>& attrs = call->attrs();
    const std::string method = attrs.at("method").cast<String>().str();
    if ((method != "nearest" && method != "linear") ||
        attrs.at("coordinate_transformation_mode").cast<String>().str() == "tf_half_pixel_for_nn") {
      return false;
    }
    const std::optional<Any> scales = attrs.Get(String("scales"));
    if (!scales.has_value() || scales->is_none()) return true;
    for (const Any& scale : scales->cast<Array<Any>>()) {
      if (scale.cast<double>() != 1.0) return false;
    }
    return true;
  }

  /// take of index 0 (or -1) along an axis of extent 1: a reshape.
  Expr SimplifyTake(const Call& call) {
    const Expr& data = call->args()[0];
    const Expr& index = call->args()[1];
    if (index.as<ir::ConstantObj>() == nullptr || RankOf(index) != 0) return call;
    const std::optional<double> value = UniformValue(Downcast<ir::Constant>(index));
    const int64_t rank = RankOf(data);
    int64_t axis = call->attrs().at("axis").cast<int64_t>();
    axis = axis < 0 ? axis + rank : axis;
    const Array<ir::Dim>& shape = data->checked_type().as<ir::TensorTypeObj>()->shape();
    if ((value != 0.0 && value != -1.0) || axis < 0 || axis >= rank ||
        shape[axis].as_static() != 1) {
      return call;
    }
    return ReshapeLike(data, call);
  }

  /// `data` reshaped to `like`'s shape, folded into a reshape before it (or gone) where it can.
  Expr ReshapeLike(const Expr& data, const Call& like) {
    const Call reshape(ir::Op::Get("reshape"), {data}, NewShapeAttrs(like));
    return RewriteCall(reshape, Downcast<Call>(Typed(reshape)));
  }

  /// x ** 1 as x, and x ** 2 and x ** 3 as products: a pow per element is a libm call that
  /// does not vectorize (GPT-2's tanh GELU cubes its input; it took a seventh of the model's
  /// time). A product rounds once or twice where pow rounds once.
  Expr SimplifyPower(const Call& call) {
    const Expr& base = call->args()[0];
    const auto* exponent = call->args()[1].as<ir::ConstantObj>();
    if (exponent == nullptr || !SameType(base, call)) return call;
    const std::optional<double> value = UniformValue(Downcast<ir::Constant>(call->args()[1]));
    if (value == 1.0) return base;
    if (value != 2.0 && value != 3.0) return call;
    const ir::Op multiply = ir::Op::Get("multiply");
    Expr product = Typed(Call(multiply, {base, base}));
    return value == 2.0 ? product : Typed(Call(multiply, {product, base}));
  }

  Expr SimplifyTranspose(const Call& call) {
    std::vector<int64_t> permutation = Permutation(*call.get());
    Expr data = call->args()[0];
    if (const ir::CallObj* inner = AsCallOf(data, "transpose")) {
      // out[i] = mid[p_outer[i]] = in[p_inner[p_outer[i]]]
      const std::vector<int64_t> first = Permutation(*inner);
      for (int64_t& axis : permutation) axis = first[axis];
      data = inner->args()[0];
    }
    if (IsIdentity(permutation)) return data;
    // The same elements in the same order: a reshape.
    if (MovesOnlyUnitAxes(data, permutation)) return ReshapeLike(data, call);
    if (data.same_as(call->args()[0])) return call;
    Map<String, Any> attrs;
    attrs.Set(String("axes"), Array<int64_t>(permutation.begin(), permutation.end()));
    return Typed(Call(call->op(), {data}, attrs));
  }
};

}  // namespace

Pass SimplifyExpr() {
  return CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& mod, const PassContext& /*ctx*/) {
        return Simplifier(mod).RewriteFunction(func);
      },
      PassInfo{"transform.SimplifyExpr", 2, false});
}

KILN_REGISTER_PASS(SimplifyExpr);

}  // namespace transform
}  // namespace kiln
