// The IR's global functions for other languages: `ir.<Node>` constructors and
// `ir.NodeField(node, field)` (scheme documented in include/kiln/ir/expr.h).
#include <kiln/ffi/registry.h>
#include <kiln/ir/control_flow.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/module.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/ir/type_relation.h>

#include <map>
#include <sstream>
#include <string>

namespace kiln {
namespace ir {
namespace {

using FieldGetter = Any (*)(const Object*);
using FieldTable = std::map<std::string, FieldGetter>;

template <typename T>
const T& As(const Object* node) {
  return *static_cast<const T*>(node);
}

/// The fields of each node kind, by type key, named as their C++ getters.
const std::map<std::string, FieldTable>& NodeFields() {
  static const auto* fields = new std::map<std::string, FieldTable>{
      {IntDimObj::_type_key,
       {{"value", [](const Object* n) -> Any { return As<IntDimObj>(n).value(); }}}},
      {SymDimObj::_type_key,
       {{"expr", [](const Object* n) -> Any { return As<SymDimObj>(n).expr(); }}}},
      {TensorTypeObj::_type_key,
       {{"shape", [](const Object* n) -> Any { return As<TensorTypeObj>(n).shape(); }},
        {"dtype", [](const Object* n) -> Any { return As<TensorTypeObj>(n).dtype(); }}}},
      {TupleTypeObj::_type_key,
       {{"fields", [](const Object* n) -> Any { return As<TupleTypeObj>(n).fields(); }}}},
      {FuncTypeObj::_type_key,
       {{"params", [](const Object* n) -> Any { return As<FuncTypeObj>(n).params(); }},
        {"ret", [](const Object* n) -> Any { return As<FuncTypeObj>(n).ret(); }}}},
      {VarObj::_type_key,
       {{"name_hint", [](const Object* n) -> Any { return As<VarObj>(n).name_hint(); }},
        {"type_annotation",
         [](const Object* n) -> Any { return As<VarObj>(n).type_annotation(); }}}},
      {ConstantObj::_type_key,
       {{"data", [](const Object* n) -> Any { return As<ConstantObj>(n).data(); }}}},
      {CallObj::_type_key,
       {{"op", [](const Object* n) -> Any { return As<CallObj>(n).op(); }},
        {"args", [](const Object* n) -> Any { return As<CallObj>(n).args(); }},
        {"attrs", [](const Object* n) -> Any { return As<CallObj>(n).attrs(); }}}},
      {TupleObj::_type_key,
       {{"fields", [](const Object* n) -> Any { return As<TupleObj>(n).fields(); }}}},
      {TupleGetItemObj::_type_key,
       {{"tuple", [](const Object* n) -> Any { return As<TupleGetItemObj>(n).tuple(); }},
        {"index", [](const Object* n) -> Any { return As<TupleGetItemObj>(n).index(); }}}},
      {FunctionObj::_type_key,
       {{"params", [](const Object* n) -> Any { return As<FunctionObj>(n).params(); }},
        {"body", [](const Object* n) -> Any { return As<FunctionObj>(n).body(); }},
        {"ret_type", [](const Object* n) -> Any { return As<FunctionObj>(n).ret_type(); }},
        {"attrs", [](const Object* n) -> Any { return As<FunctionObj>(n).attrs(); }}}},
      {IfObj::_type_key,
       {{"cond", [](const Object* n) -> Any { return As<IfObj>(n).cond(); }},
        {"then_branch", [](const Object* n) -> Any { return As<IfObj>(n).then_branch(); }},
        {"else_branch", [](const Object* n) -> Any { return As<IfObj>(n).else_branch(); }},
        {"sizes", [](const Object* n) -> Any { return As<IfObj>(n).sizes(); }}}},
      {LoopObj::_type_key,
       {{"trip_count", [](const Object* n) -> Any { return As<LoopObj>(n).trip_count(); }},
        {"condition", [](const Object* n) -> Any { return As<LoopObj>(n).condition(); }},
        {"initial", [](const Object* n) -> Any { return As<LoopObj>(n).initial(); }},
        {"body", [](const Object* n) -> Any { return As<LoopObj>(n).body(); }},
        {"iterations", [](const Object* n) -> Any { return As<LoopObj>(n).iterations(); }}}},
      {GlobalVarObj::_type_key,
       {{"name_hint", [](const Object* n) -> Any { return As<GlobalVarObj>(n).name_hint(); }}}},
      {OpObj::_type_key, {{"name", [](const Object* n) -> Any { return As<OpObj>(n).name(); }}}},
      {IRModuleObj::_type_key,
       {{"functions", [](const Object* n) -> Any { return As<IRModuleObj>(n).functions(); }},
        {"attrs", [](const Object* n) -> Any { return As<IRModuleObj>(n).attrs(); }}}},
  };
  return *fields;
}

Any NodeField(const ObjectRef& node, const std::string& field) {
  KILN_CHECK(node.defined(), ValueError) << "ir.NodeField: the node is None";
  // Every expression has its checked type (None before InferType): what predicates and
  // pattern checks written in Python read shapes from.
  if (field == "checked_type" && node->IsInstance<ExprObj>()) {
    return static_cast<const ExprObj*>(node.get())->checked_type();
  }
  const std::string key = node->GetTypeKey();
  auto table = NodeFields().find(key);
  KILN_CHECK(table != NodeFields().end(), TypeError)
      << "ir.NodeField: " << key << " is not an IR node";
  auto getter = table->second.find(field);
  if (getter == table->second.end()) {
    std::ostringstream names;
    for (const auto& [name, unused] : table->second) names << " " << name;
    KILN_THROW(KeyError) << "ir.NodeField: " << key << " has no field '" << field
                         << "' (fields:" << names.str() << ")";
  }
  return getter->second(node.get());
}

/// An op's schema as plain containers: {"inputs": [names], "attrs": [{"name", "kind",
/// "default" (absent for a required attribute)}]}; None when the op has no schema.
Any OpSchemaAsMap(const Op& op) {
  const std::shared_ptr<const OpSchema> schema = op.schema();
  if (schema == nullptr) return Any(nullptr);
  Array<String> inputs;
  for (const std::string& input : schema->inputs) inputs.push_back(String(input));
  Array<Any> attrs;
  for (const AttrField& field : schema->attrs) {
    Map<String, Any> entry;
    entry.Set("name", String(field.name));
    entry.Set("kind", String(AttrKindName(field.kind)));
    if (field.default_value.has_value()) entry.Set("default", *field.default_value);
    attrs.push_back(entry);
  }
  Map<String, Any> result;
  result.Set("inputs", inputs);
  result.Set("attrs", attrs);
  return result;
}

/// A size given from another language: an int, a size expression, or its text.
arith::SizeExpr SizeOf(const Any& size) {
  if (std::optional<std::string> text = size.as<std::string>()) return arith::ParseSizeExpr(*text);
  if (size.type_index() == kKilnTypeInt) return arith::IntImm(size.cast<int64_t>());
  return size.cast<arith::SizeExpr>();
}

// A None type in Python is a null Type here.
Type OrNull(const std::optional<Type>& type) { return type.value_or(Type()); }

KILN_REGISTER_GLOBAL("ir.NodeField").set_body_typed(NodeField);
KILN_REGISTER_GLOBAL("ir.IntDim").set_body_typed([](int64_t value) { return IntDim(value); });
KILN_REGISTER_GLOBAL("ir.TensorType").set_body_typed([](Array<Dim> shape, DLDataType dtype) {
  return TensorType(std::move(shape), dtype);
});
KILN_REGISTER_GLOBAL("ir.TupleType").set_body_typed([](Array<Type> fields) {
  return TupleType(std::move(fields));
});
KILN_REGISTER_GLOBAL("ir.FuncType").set_body_typed([](Array<Type> params, Type ret) {
  return FuncType(std::move(params), std::move(ret));
});
KILN_REGISTER_GLOBAL("ir.Var").set_body_typed([](const String& name,
                                                 const std::optional<Type>& type) {
  return Var(name, OrNull(type));
});
KILN_REGISTER_GLOBAL("ir.Constant").set_body_typed([](const Tensor& data) {
  return Constant(data);
});
KILN_REGISTER_GLOBAL("ir.Call").set_body_typed([](const Expr& op, const Array<Expr>& args,
                                                  const Map<String, Any>& attrs) {
  return Call(op, args, attrs);
});
KILN_REGISTER_GLOBAL("ir.Tuple").set_body_typed([](const Array<Expr>& fields) {
  return Tuple(fields);
});
KILN_REGISTER_GLOBAL("ir.TupleGetItem").set_body_typed([](Expr tuple, int64_t index) {
  return TupleGetItem(std::move(tuple), index);
});
KILN_REGISTER_GLOBAL("ir.Function")
    .set_body_typed([](const Array<Var>& params, const Expr& body,
                       const std::optional<Type>& ret_type, const Map<String, Any>& attrs) {
      return Function(params, body, OrNull(ret_type), attrs);
    });
// `sizes`: size expressions or their texts, for the extents where the branches disagree.
KILN_REGISTER_GLOBAL("ir.If").set_body_typed([](Expr cond, Function then_branch,
                                                Function else_branch, const Array<Any>& sizes) {
  Array<arith::SizeExpr> parsed;
  for (const Any& size : sizes) parsed.push_back(SizeOf(size));
  return If(std::move(cond), std::move(then_branch), std::move(else_branch), parsed);
});
// `iterations`: an int, a size expression, or its text ("n", "batch * 2").
KILN_REGISTER_GLOBAL("ir.Loop").set_body_typed([](Expr trip_count, Expr condition,
                                                  const Array<Expr>& initial, Function body,
                                                  const Any& iterations) {
  return Loop(std::move(trip_count), std::move(condition), initial, std::move(body),
              SizeOf(iterations));
});
KILN_REGISTER_GLOBAL("ir.GlobalVar").set_body_typed([](const String& name) {
  return GlobalVar(name);
});
KILN_REGISTER_GLOBAL("ir.Op").set_body_typed([](const std::string& name) { return Op::Get(name); });
// Ops registered from other languages (Python): same registry, same duplicate checks.
KILN_REGISTER_GLOBAL("ir.RegisterOp").set_body_typed([](const std::string& name) {
  detail::RegisterOp(name);
  return Op::Get(name);
});
KILN_REGISTER_GLOBAL("ir.OpSetAttr")
    .set_body_typed([](const std::string& name, const String& key, const Any& value,
                       bool allow_override) {
      detail::SetOpAttr(name, key, value, allow_override);
    });
KILN_REGISTER_GLOBAL("ir.OpAddInput")
    .set_body_typed([](const std::string& name, const std::string& input) {
      detail::AddOpInput(name, input);
    });
// `has_default` tells "no default" (a required attribute) from a default of None.
KILN_REGISTER_GLOBAL("ir.OpAddAttr")
    .set_body_typed([](const std::string& name, const std::string& attr,
                       const std::string& kind_name, const Any& default_value, bool has_default) {
      const AttrKind kind = ParseAttrKind(kind_name);
      detail::AddOpAttrField(
          name,
          AttrField{attr, kind, has_default ? std::optional<Any>(default_value) : std::nullopt});
    });
KILN_REGISTER_GLOBAL("ir.OpSetPattern")
    .set_body_typed([](const std::string& name, const std::string& pattern) {
      detail::SetOpAttr(name, op_attr::kPatternKind, static_cast<int64_t>(ParseOpPattern(pattern)),
                        false);
    });
KILN_REGISTER_GLOBAL("ir.OpSchema").set_body_typed(OpSchemaAsMap);
KILN_REGISTER_GLOBAL("ir.OpPattern").set_body_typed([](const Op& op) {
  return String(OpPatternName(op.pattern()));
});
KILN_REGISTER_GLOBAL("ir.InferCallType")
    .set_body_typed([](const Op& op, const Array<Type>& arg_types, const Map<String, Any>& attrs) {
      return InferCallType(op, arg_types, attrs);
    });
KILN_REGISTER_GLOBAL("ir.OpAttrs").set_body_typed([](const Op& op) { return op.attrs(); });
KILN_REGISTER_GLOBAL("ir.ListOps").set_body_typed([]() {
  std::vector<std::string> names = Op::ListNames();
  return Array<String>(names.begin(), names.end());
});
KILN_REGISTER_GLOBAL("ir.IRModule").set_body_typed([](Map<String, Any> attrs) {
  return IRModule::Create(std::move(attrs));
});
// Returns a new module handle: the argument's module is never changed (copy-on-write).
KILN_REGISTER_GLOBAL("ir.IRModuleAdd")
    .set_body_typed([](IRModule module, const GlobalVar& gvar, const Function& func) {
      module.Add(gvar, func);
      return module;
    });
KILN_REGISTER_GLOBAL("ir.IRModuleLookup")
    .set_body_typed([](const IRModule& module, const std::string& name) {
      return module.Lookup(name);
    });
KILN_REGISTER_GLOBAL("ir.StructuralEqual")
    .set_body_typed([](const ObjectRef& a, const ObjectRef& b, bool map_free_vars) {
      return StructuralEqual(a, b, map_free_vars);
    });
KILN_REGISTER_GLOBAL("ir.StructuralHash")
    .set_body_typed([](const ObjectRef& node, bool map_free_vars) {
      return static_cast<int64_t>(StructuralHash(node, map_free_vars));
    });

}  // namespace
}  // namespace ir
}  // namespace kiln
