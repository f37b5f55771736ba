// InferType: checked types for every node, one post-order walk per function body.
#include <kiln/ir/control_flow.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/ir/text_format.h>
#include <kiln/ir/type_relation.h>
#include <kiln/transform/infer_type.h>
#include <kiln/transform/passes.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln {
namespace transform {
namespace {

using ir::Expr;
using ir::Type;

constexpr DLDataType kBool{kDLUInt, 1, 1};
constexpr DLDataType kInt64{kDLInt, 64, 1};

std::string TypeText(const Type& type) {
  std::string text = ir::AsText(type);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

/// The type of an If whose branches give `a` and `b`: theirs, with the next of `sizes` (when
/// given) where they disagree in an extent; `used` counts those extents. TypeError when the
/// branches disagree in anything else.
Type UnifyBranches(const Type& a, const Type& b, const Array<arith::SizeExpr>* sizes,
                   size_t* used) {
  const auto disagree = [&] {
    return Error("TypeError", "the branches of an If disagree: the then branch gives " +
                                  TypeText(a) + ", the else branch " + TypeText(b));
  };
  if (const auto* x = a.as<ir::TupleTypeObj>()) {
    const auto* y = b.as<ir::TupleTypeObj>();
    if (y == nullptr || y->fields().size() != x->fields().size()) throw disagree();
    Array<Type> fields;
    for (int64_t i = 0; i < x->fields().size(); ++i) {
      fields.push_back(UnifyBranches(x->fields()[i], y->fields()[i], sizes, used));
    }
    return ir::TupleType(fields);
  }
  const auto* x = a.as<ir::TensorTypeObj>();
  const auto* y = b.as<ir::TensorTypeObj>();
  if (x == nullptr || y == nullptr) {
    if (!ir::StructuralEqual(a, b)) throw disagree();
    return a;
  }
  if (!DataTypeEqual(x->dtype(), y->dtype()) || x->shape().size() != y->shape().size()) {
    throw disagree();
  }
  Array<ir::Dim> shape;
  for (int64_t i = 0; i < x->shape().size(); ++i) {
    if (ir::StructuralEqual(x->shape()[i], y->shape()[i])) {
      shape.push_back(x->shape()[i]);
      continue;
    }
    const size_t index = (*used)++;
    if (sizes == nullptr || index >= static_cast<size_t>(sizes->size())) continue;
    shape.push_back(ir::Dim::FromSizeExpr((*sizes)[static_cast<int64_t>(index)]));
  }
  return shape.size() == x->shape().size() ? Type(ir::TensorType(shape, x->dtype())) : a;
}

class TypeInferencer {
 public:
  /// With `reuse_checked_types`, an operand that already has a checked type is taken as typed
  /// and not walked: a pass types one new node in O(operands).
  explicit TypeInferencer(ir::IRModule mod, bool reuse_checked_types = false)
      : mod_(std::move(mod)), reuse_checked_types_(reuse_checked_types) {}

  /// The type of `expr`; every node below it gets its checked_type.
  Type Infer(const Expr& root) {
    struct Frame {
      Expr expr;
      bool expanded;
    };
    std::vector<Frame> stack{{root, false}};
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (types_.count(frame.expr.get())) {
        stack.pop_back();
        continue;
      }
      if (!frame.expanded) {
        frame.expanded = true;
        const std::vector<Expr> operands = Operands(frame.expr);
        for (auto it = operands.rbegin(); it != operands.rend(); ++it) {
          if (types_.count(it->get())) continue;
          if (reuse_checked_types_ && (*it)->checked_type().defined()) {
            types_.emplace(it->get(), (*it)->checked_type());
            continue;
          }
          stack.push_back({*it, false});
        }
        continue;
      }
      const Expr expr = frame.expr;
      stack.pop_back();
      const Type type = TypeOf(expr);
      expr->set_checked_type(type);
      types_.emplace(expr.get(), type);
    }
    return types_.at(root.get());
  }

  /// The type of global function `gvar`: from its annotations when complete (which is what
  /// lets functions call each other recursively), else by inferring its body.
  ir::FuncType GlobalType(const ir::GlobalVar& gvar) {
    const std::string name = gvar->name_hint().str();
    const ir::Function func = mod_.Lookup(name);
    if (std::optional<ir::FuncType> annotated = AnnotatedType(func)) return *annotated;
    KILN_CHECK(in_progress_.insert(name).second, TypeError)
        << "@" << name << " calls itself: annotate its parameters and result type";
    ir::FuncType type = InferFunction(func, {});
    in_progress_.erase(name);
    return type;
  }

 private:
  /// Operands whose types a node's type needs. A Function is typed on its own (InferFunction),
  /// and the callee Function of a call is typed at the call, once its arguments are.
  static std::vector<Expr> Operands(const Expr& expr) {
    if (const auto* call = expr.as<ir::CallObj>()) {
      std::vector<Expr> operands(call->args().begin(), call->args().end());
      if (call->op().as<ir::FunctionObj>() == nullptr && call->op().as<ir::OpObj>() == nullptr) {
        operands.push_back(call->op());
      }
      return operands;
    }
    if (const auto* tuple = expr.as<ir::TupleObj>()) {
      return std::vector<Expr>(tuple->fields().begin(), tuple->fields().end());
    }
    if (const auto* item = expr.as<ir::TupleGetItemObj>()) return {item->tuple()};
    // Bodies are typed with their parameters bound, at the node (IfType, LoopType).
    return ir::OuterOperands(expr);
  }

  Type TypeOf(const Expr& expr) {
    if (const auto* var = expr.as<ir::VarObj>()) return VarType(Downcast<ir::Var>(expr), *var);
    if (const auto* constant = expr.as<ir::ConstantObj>()) {
      const DLTensor& data = constant->data().dl_tensor();
      return ir::TensorType::Static(std::vector<int64_t>(data.shape, data.shape + data.ndim),
                                    data.dtype);
    }
    if (expr.as<ir::GlobalVarObj>() != nullptr) return GlobalType(Downcast<ir::GlobalVar>(expr));
    if (const auto* tuple = expr.as<ir::TupleObj>()) {
      Array<Type> fields;
      for (const Expr& field : tuple->fields()) fields.push_back(types_.at(field.get()));
      return ir::TupleType(fields);
    }
    if (const auto* item = expr.as<ir::TupleGetItemObj>()) return ItemType(*item);
    if (expr.as<ir::FunctionObj>() != nullptr) {
      return InferFunction(Downcast<ir::Function>(expr), {});
    }
    if (const auto* call = expr.as<ir::CallObj>()) return CallType(*call);
    if (const auto* branch = expr.as<ir::IfObj>()) return IfType(*branch);
    if (const auto* loop = expr.as<ir::LoopObj>()) return LoopType(*loop);
    KILN_THROW(TypeError) << "an op (" << expr->GetTypeKey() << ") is not a value: call it instead";
  }

  Type VarType(const ir::Var& var, const ir::VarObj& node) {
    auto bound = bound_params_.find(var.get());
    if (bound != bound_params_.end()) return bound->second;
    KILN_CHECK(node.type_annotation().defined(), TypeError)
        << "cannot infer the type of %" << node.name_hint().str()
        << ": a parameter of a global function (or a free variable) needs a type annotation";
    return node.type_annotation();
  }

  Type ItemType(const ir::TupleGetItemObj& item) {
    const Type& tuple_type = types_.at(item.tuple().get());
    const auto* tuple = tuple_type.as<ir::TupleTypeObj>();
    KILN_CHECK(tuple != nullptr, TypeError) << "field " << item.index() << " is taken of a "
                                            << TypeText(tuple_type) << ", which is not a tuple";
    KILN_CHECK(item.index() < tuple->fields().size(), TypeError)
        << "field " << item.index() << " is taken of " << TypeText(tuple_type) << ", which has "
        << tuple->fields().size() << " fields";
    return tuple->fields()[item.index()];
  }

  std::vector<Type> ArgTypes(const ir::CallObj& call) const {
    std::vector<Type> types;
    for (const Expr& arg : call.args()) types.push_back(types_.at(arg.get()));
    return types;
  }

  Type CallType(const ir::CallObj& call) {
    const std::vector<Type> args = ArgTypes(call);
    if (call.op().as<ir::OpObj>() != nullptr) {
      return ir::InferCallType(Downcast<ir::Op>(call.op()), Array<Type>(args.begin(), args.end()),
                               call.attrs());
    }
    if (call.op().as<ir::FunctionObj>() != nullptr) {
      const ir::FuncType type = InferFunction(Downcast<ir::Function>(call.op()), args);
      call.op()->set_checked_type(type);
      return type->ret();
    }
    const Type& callee = types_.at(call.op().get());
    const auto* func_type = callee.as<ir::FuncTypeObj>();
    KILN_CHECK(func_type != nullptr, TypeError)
        << "calling a value of type " << TypeText(callee) << ", which is not a function";
    CheckArguments(CalleeName(call.op()), func_type->params(), args);
    return func_type->ret();
  }

  /// `type` is a tensor of `dtype` holding one element: a condition or a trip count.
  static bool IsScalarOf(const Type& type, DLDataType dtype) {
    const auto* tensor = type.as<ir::TensorTypeObj>();
    if (tensor == nullptr || !DataTypeEqual(tensor->dtype(), dtype)) return false;
    return std::all_of(tensor->shape().begin(), tensor->shape().end(),
                       [](const ir::Dim& dim) { return dim.as_static() == 1; });
  }

  void CheckScalar(const Expr& value, DLDataType dtype, const char* what) const {
    const Type& type = types_.at(value.get());
    KILN_CHECK(IsScalarOf(type, dtype), TypeError)
        << what << " must be a " << DataTypeToString(dtype) << " tensor of one element, got "
        << TypeText(type);
  }

  /// Whether `a` and `b` can be one type at run time: equal but for extents that are not both
  /// static (a body's data-dependent size that the run checks against the entering extent).
  static bool MayBeEqual(const Type& a, const Type& b) {
    const auto* x = a.as<ir::TensorTypeObj>();
    const auto* y = b.as<ir::TensorTypeObj>();
    if (x == nullptr || y == nullptr) return ir::StructuralEqual(a, b);
    if (!DataTypeEqual(x->dtype(), y->dtype()) || x->shape().size() != y->shape().size()) {
      return false;
    }
    for (int64_t i = 0; i < x->shape().size(); ++i) {
      const std::optional<int64_t> p = x->shape()[i].as_static();
      const std::optional<int64_t> q = y->shape()[i].as_static();
      if (p.has_value() && q.has_value() && *p != *q) return false;
    }
    return true;
  }

  Type IfType(const ir::IfObj& node) {
    CheckScalar(node.cond(), kBool, "the condition of an If");
    ir::SizeCheckCollector body_checks;  // each body's own: its module's build finds them
    const Type then_type = InferFunction(node.then_branch(), {})->ret();
    const Type else_type = InferFunction(node.else_branch(), {})->ret();
    size_t used = 0;
    Type type = UnifyBranches(then_type, else_type, &node.sizes(), &used);
    KILN_CHECK(used == static_cast<size_t>(node.sizes().size()), TypeError)
        << "the branches of an If disagree in " << used << " extents, but it names "
        << node.sizes().size() << " sizes for them (then " << TypeText(then_type) << ", else "
        << TypeText(else_type) << ")";
    return type;
  }

  /// (carried..., scan outputs...): the carried values keep their types, and each scanned value
  /// gains a leading axis of the loop's iteration count. A carried parameter the body declares
  /// more generally than its initial value (a size variable where the value's extent grows, as
  /// a generation loop's concatenation) takes its declared type, which the result then has.
  Type LoopType(const ir::LoopObj& loop) {
    CheckScalar(loop.trip_count(), kInt64, "the trip count of a Loop");
    CheckScalar(loop.condition(), kBool, "the condition of a Loop");
    std::vector<Type> params{ir::TensorType::Static({}, kInt64), ir::TensorType::Static({}, kBool)};
    for (int64_t i = 0; i < loop.initial().size(); ++i) {
      const Type& entering = types_.at(loop.initial()[i].get());
      const Type& declared = loop.body()->params()[i + 2]->type_annotation();
      KILN_CHECK(!declared.defined() || MayBeEqual(declared, entering), TypeError)
          << "carried value " << i << " of a Loop enters as " << TypeText(entering)
          << " but the body takes " << TypeText(declared);
      params.push_back(declared.defined() ? declared : entering);
    }
    ir::SizeCheckCollector body_checks;  // the body's own: its module's build finds them
    const Type ret = InferFunction(loop.body(), params)->ret();
    const int64_t carried = loop.initial().size();
    const auto* tuple = ret.as<ir::TupleTypeObj>();
    KILN_CHECK(tuple != nullptr && tuple->fields().size() > carried, TypeError)
        << "the body of a Loop must return a tuple (condition, the " << carried
        << " carried values, scanned values...), but it returns " << TypeText(ret);
    KILN_CHECK(IsScalarOf(tuple->fields()[0], kBool), TypeError)
        << "the body of a Loop must return its condition first, a bool tensor of one element, "
        << "but it returns " << TypeText(tuple->fields()[0]);
    Array<Type> fields;
    for (int64_t i = 0; i < carried; ++i) {
      const Type& entering = params[static_cast<size_t>(i) + 2];
      KILN_CHECK(MayBeEqual(tuple->fields()[i + 1], entering), TypeError)
          << "carried value " << i << " of a Loop enters as " << TypeText(entering)
          << " but the body returns " << TypeText(tuple->fields()[i + 1])
          << ": a carried value must keep its type from one iteration to the next";
      fields.push_back(entering);
    }
    for (int64_t i = carried + 1; i < tuple->fields().size(); ++i) {
      const auto* scanned = tuple->fields()[i].as<ir::TensorTypeObj>();
      KILN_CHECK(scanned != nullptr, TypeError)
          << "scanned value " << i - carried - 1 << " of a Loop must be a tensor, got "
          << TypeText(tuple->fields()[i]);
      Array<ir::Dim> shape{ir::Dim::FromSizeExpr(loop.iterations())};
      for (const ir::Dim& dim : scanned->shape()) shape.push_back(dim);
      fields.push_back(ir::TensorType(shape, scanned->dtype()));
    }
    return ir::TupleType(fields);
  }

  static std::string CalleeName(const Expr& callee) {
    if (const auto* gvar = callee.as<ir::GlobalVarObj>()) return "@" + gvar->name_hint().str();
    if (const auto* var = callee.as<ir::VarObj>()) return "%" + var->name_hint().str();
    return "the function";
  }

  static void CheckArguments(const std::string& callee, const Array<Type>& params,
                             const std::vector<Type>& args) {
    KILN_CHECK(params.size() == static_cast<int64_t>(args.size()), TypeError)
        << callee << " takes " << params.size() << " arguments, got " << args.size();
    for (size_t i = 0; i < args.size(); ++i) {
      KILN_CHECK(ir::StructuralEqual(params[static_cast<int64_t>(i)], args[i]), TypeError)
          << "argument " << i << " of " << callee << " must be "
          << TypeText(params[static_cast<int64_t>(i)]) << ", got " << TypeText(args[i]);
    }
  }

  static std::optional<ir::FuncType> AnnotatedType(const ir::Function& func) {
    if (!func->ret_type().defined()) return std::nullopt;
    Array<Type> params;
    for (const ir::Var& param : func->params()) {
      if (!param->type_annotation().defined()) return std::nullopt;
      params.push_back(param->type_annotation());
    }
    return ir::FuncType(params, func->ret_type());
  }

  /// Types `func`'s body with its parameters bound to `arg_types` (when called directly) or to
  /// their annotations; a given argument must match an annotated parameter.
  ir::FuncType InferFunction(const ir::Function& func, const std::vector<Type>& arg_types) {
    const Array<ir::Var>& params = func->params();
    KILN_CHECK(arg_types.empty() || params.size() == static_cast<int64_t>(arg_types.size()),
               TypeError)
        << "a function of " << params.size() << " parameters is called with " << arg_types.size()
        << " arguments";
    Array<Type> param_types;
    for (int64_t i = 0; i < params.size(); ++i) {
      const ir::Var param = params[i];
      const Type& annotation = param->type_annotation();
      Type type = annotation;
      if (!arg_types.empty()) {
        type = arg_types[static_cast<size_t>(i)];
        KILN_CHECK(!annotation.defined() || ir::StructuralEqual(annotation, type), TypeError)
            << "parameter %" << param->name_hint().str() << " is annotated " << TypeText(annotation)
            << " but given " << TypeText(type);
      }
      KILN_CHECK(type.defined(), TypeError)
          << "cannot infer the type of parameter %" << param->name_hint().str()
          << ": annotate it, or call the function directly";
      bound_params_[param.get()] = type;
      param->set_checked_type(type);
      param_types.push_back(type);
    }
    const Type ret = Infer(func->body());
    KILN_CHECK(!func->ret_type().defined() || ir::StructuralEqual(func->ret_type(), ret), TypeError)
        << "the function is annotated to return " << TypeText(func->ret_type())
        << " but its body is " << TypeText(ret);
    ir::FuncType type(param_types, ret);
    func->set_checked_type(type);
    return type;
  }

  ir::IRModule mod_;
  bool reuse_checked_types_;
  std::unordered_map<const Object*, Type> types_;
  std::unordered_map<const Object*, Type> bound_params_;
  std::unordered_set<std::string> in_progress_;
};

/// A deferred size check as the function attribute holds it: [lhs, relation, rhs, message].
Array<Any> CheckEntry(const ir::SizeCheck& check) {
  return Array<Any>{check.lhs, String(check.relation), check.rhs, String(check.message)};
}

/// `attrs` with `checks` added to its size checks (each once). Checks accumulate across runs:
/// once FuseOps has moved ops into primitive functions, inferring @main no longer sees them.
Map<String, Any> WithSizeChecks(const Map<String, Any>& attrs,
                                const std::vector<ir::SizeCheck>& checks) {
  Array<Any> entries;
  if (std::optional<Any> known = attrs.Get(String(ir::kSizeChecksAttr))) {
    entries = known->cast<Array<Any>>();
  }
  bool added = false;
  for (const ir::SizeCheck& check : checks) {
    const Array<Any> entry = CheckEntry(check);
    const bool present = std::any_of(entries.begin(), entries.end(), [&](const Any& known) {
      return ir::StructuralEqual(known.cast<ObjectRef>(), entry);
    });
    if (present) continue;
    entries.push_back(entry);
    added = true;
  }
  if (!added) return attrs;
  Map<String, Any> result = attrs;
  result.Set(String(ir::kSizeChecksAttr), entries);
  return result;
}

/// `func` with its result type set from inference (the body and its types are kept), and the
/// size checks its ops' relations deferred to run time among its attributes.
ir::Function WithInferredTypes(const ir::Function& func, const ir::IRModule& mod) {
  ir::SizeCheckCollector checks;
  TypeInferencer inferencer(mod);
  const Type type = inferencer.Infer(func);
  const Map<String, Any> attrs = WithSizeChecks(func->attrs(), checks.checks());
  if (func->ret_type().defined() && attrs.same_as(func->attrs())) return func;
  const Type& ret =
      func->ret_type().defined() ? func->ret_type() : type.as<ir::FuncTypeObj>()->ret();
  ir::Function typed(func->params(), func->body(), ret, attrs);
  typed->set_checked_type(type);
  return typed;
}

}  // namespace

ir::Type InferExprType(const ir::Expr& expr, const ir::IRModule& mod) {
  return TypeInferencer(mod.defined() ? mod : ir::IRModule::Create()).Infer(expr);
}

ir::Type InferNodeType(const ir::Expr& node, const ir::IRModule& mod) {
  return TypeInferencer(mod.defined() ? mod : ir::IRModule::Create(), true).Infer(node);
}

size_t CountDisagreeingExtents(const ir::Type& then_type, const ir::Type& else_type) {
  size_t used = 0;
  UnifyBranches(then_type, else_type, nullptr, &used);
  return used;
}

Pass InferType() {
  return CreateFunctionPass([](const ir::Function& func, const ir::IRModule& mod,
                               const PassContext& /*ctx*/) { return WithInferredTypes(func, mod); },
                            PassInfo{"transform.InferType", 0, true},
                            /*include_external_functions=*/true);
}

KILN_REGISTER_PASS(InferType);

}  // namespace transform
}  // namespace kiln
