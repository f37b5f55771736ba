// The IR text printer (grammar and rules: docs/ir-text-format.md).
//
// Each function body is printed by an explicit-stack post-order walk, so a 100,000-node chain
// costs no stack depth; only nested Functions recurse, once per level of function nesting.
#include <kiln/ffi/registry.h>
#include <kiln/ir/control_flow.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/op.h>
#include <kiln/ir/text_format.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln {
namespace ir {
namespace {

template <typename T>
const T* AsNode(const ObjectRef& ref) {
  return ref.defined() && ref->IsInstance<T>() ? static_cast<const T*>(ref.get()) : nullptr;
}

[[noreturn]] void ThrowValueError(const std::string& message) {
  throw Error("ValueError", message);
}

bool IsIdentChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/// True for names the lexer reads as one identifier: [A-Za-z_][A-Za-z0-9_]*.
bool IsPlainIdent(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    if (!IsIdentChar(c)) return false;
  }
  return true;
}

std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

/// `%.17g` round-trips every double and `%.9g` every float; a '.0' marks a float that would
/// otherwise read as an integer.
std::string FormatFloat(double value, bool is_float32, bool mark_float) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buf[40];
  std::snprintf(buf, sizeof(buf), is_float32 ? "%.9g" : "%.17g", value);
  std::string text = buf;
  if (mark_float && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string DimsText(const Array<Dim>& shape) {
  std::string out = "(";
  for (int64_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + shape[i].ToString();
  return out + ")";
}

std::string TypeText(const Type& type) {
  if (const auto* t = AsNode<TensorTypeObj>(type)) {
    return "Tensor[" + DimsText(t->shape()) + ", " + DataTypeToString(t->dtype()) + "]";
  }
  if (const auto* t = AsNode<TupleTypeObj>(type)) {
    std::string out = "(";
    for (int64_t i = 0; i < t->fields().size(); ++i) {
      out += (i ? ", " : "") + TypeText(t->fields()[i]);
    }
    return out + (t->fields().size() == 1 ? ",)" : ")");
  }
  if (const auto* t = AsNode<FuncTypeObj>(type)) {
    std::string out = "fn (";
    for (int64_t i = 0; i < t->params().size(); ++i) {
      out += (i ? ", " : "") + TypeText(t->params()[i]);
    }
    return out + ") -> " + TypeText(t->ret());
  }
  ThrowValueError("the text format cannot print a type of kind `" +
                  (type.defined() ? type->GetTypeKey() : std::string("null")) + "`");
}

std::string AttrValueText(const Any& value) {
  switch (value.type_index()) {
    case kKilnTypeNone: return "None";
    case kKilnTypeBool: return value.cast<bool>() ? "true" : "false";
    case kKilnTypeInt: return std::to_string(value.cast<int64_t>());
    case kKilnTypeFloat: return FormatFloat(value.cast<double>(), false, true);
    default: break;
  }
  if (std::optional<std::string> text = value.as<std::string>()) return Quote(*text);
  if (std::optional<arith::SizeExpr> extent = value.as<arith::SizeExpr>()) {
    return extent->ToString();  // a symbolic extent of a size or sizes attribute
  }
  if (std::optional<Array<Any>> array = value.as<Array<Any>>()) {
    std::string out = "[";
    for (int64_t i = 0; i < array->size(); ++i) out += (i ? ", " : "") + AttrValueText((*array)[i]);
    return out + "]";
  }
  ThrowValueError("the text format cannot print an attribute value of type `" + value.type_str() +
                  "` (only None, bool, int, float, str, size expressions and arrays)");
}

std::string AttrKey(const String& key) {
  const std::string text(key);
  return IsPlainIdent(text) ? text : Quote(text);
}

std::string AttrMapText(const Map<String, Any>& attrs) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : attrs) {
    out += (first ? "" : ", ") + AttrKey(key) + "=" + AttrValueText(value);
    first = false;
  }
  return out + "}";
}

/// True when the text can spell each element of a tensor of `dtype`.
bool CanPrintElements(DLDataType dtype) {
  if (dtype.lanes != 1) return false;
  if (dtype.code == kDLFloat) return dtype.bits == 32 || dtype.bits == 64;
  if (dtype.code == kDLInt)
    return dtype.bits == 8 || dtype.bits == 16 || dtype.bits == 32 || dtype.bits == 64;
  if (dtype.code == kDLUInt) {
    return dtype.bits == 1 || dtype.bits == 8 || dtype.bits == 16 || dtype.bits == 32 ||
           dtype.bits == 64;
  }
  return false;
}

template <typename T>
T Load(const char* bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
  return value;
}

std::string ElementText(DLDataType dtype, const char* bytes, int64_t i) {
  if (dtype.code == kDLFloat) {
    return dtype.bits == 32 ? FormatFloat(Load<float>(bytes, i), true, false)
                            : FormatFloat(Load<double>(bytes, i), false, false);
  }
  if (dtype.code == kDLUInt && dtype.bits == 1) return Load<uint8_t>(bytes, i) ? "true" : "false";
  if (dtype.code == kDLInt) {
    switch (dtype.bits) {
      case 8: return std::to_string(Load<int8_t>(bytes, i));
      case 16: return std::to_string(Load<int16_t>(bytes, i));
      case 32: return std::to_string(Load<int32_t>(bytes, i));
      default: return std::to_string(Load<int64_t>(bytes, i));
    }
  }
  switch (dtype.bits) {
    case 8: return std::to_string(Load<uint8_t>(bytes, i));
    case 16: return std::to_string(Load<uint16_t>(bytes, i));
    case 32: return std::to_string(Load<uint32_t>(bytes, i));
    default: return std::to_string(Load<uint64_t>(bytes, i));
  }
}

std::string InlineConstantText(const Tensor& data) {
  std::string out = "const(" + DataTypeToString(data.dtype()) + ", (";
  for (int32_t i = 0; i < data.ndim(); ++i) out += (i ? ", " : "") + std::to_string(data.shape(i));
  out += "), [";
  const char* bytes = static_cast<const char*>(data.data()) + data.dl_tensor().byte_offset;
  const int64_t n = data.NumElements();
  for (int64_t i = 0; i < n; ++i) out += (i ? ", " : "") + ElementText(data.dtype(), bytes, i);
  return out + "])";
}

class Printer {
 public:
  Printer(Array<Tensor>* large_constants, bool show_checked_types)
      : large_constants_(large_constants), show_checked_types_(show_checked_types) {}

  std::string PrintModule(const IRModule& module) {
    std::ostringstream os;
    if (!module->attrs().empty()) os << "module attrs=" << AttrMapText(module->attrs()) << ";\n\n";
    bool first = true;
    for (const auto& [gvar, func] : module->functions()) {
      if (!first) os << "\n";
      first = false;
      ResetNames();
      CountConstantUses(func);
      os << "def @" << GlobalName(gvar);
      PrintFunctionRest(func, 0, os);
      os << "\n";
    }
    return os.str();
  }

  std::string PrintExpr(const Expr& expr) {
    ResetNames();
    std::ostringstream os;
    CountConstantUses(expr);
    scopes_.emplace_back();
    std::string result = PrintBody(expr, 0, os);
    os << result << "\n";
    return os.str();
  }

 private:
  void ResetNames() {
    used_names_.clear();
    var_names_.clear();
    pending_annotation_.clear();
    scopes_.clear();
    owned_.clear();
    next_temp_ = 0;
  }

  std::string GlobalName(const GlobalVar& gvar) {
    const std::string name(gvar->name_hint());
    return IsPlainIdent(name) ? name : Quote(name);
  }

  /// A unique printed name for `var` (hints may repeat or hold characters the lexer rejects).
  std::string VarName(const Var& var, bool* is_new) {
    auto it = var_names_.find(var);
    *is_new = it == var_names_.end();
    if (!*is_new) return it->second;
    std::string base(var->name_hint());
    for (char& c : base) {
      if (!IsIdentChar(c)) c = '_';
    }
    if (base.empty() || (base[0] >= '0' && base[0] <= '9')) base = "v" + base;
    std::string name = base;
    for (int suffix = 1; used_names_.count(name); ++suffix)
      name = base + "_" + std::to_string(suffix);
    used_names_.insert(name);
    var_names_.emplace(var, "%" + name);
    return "%" + name;
  }

  void CountConstantUses(const Expr& root) {
    constant_uses_.clear();
    auto count = [this](const Expr& child) {
      if (child.as<ConstantObj>()) ++constant_uses_[child.get()];
    };
    count(root);
    PostOrderVisit(root, [&](const Expr& node) {
      for (const Expr& operand : DirectOperands(node)) count(operand);
      if (const auto* func = node.as<FunctionObj>()) count(func->body());
    });
  }

  /// `(params) -> ret attrs={...} { body }` after the function's name or `fn `.
  void PrintFunctionRest(const Function& func, int indent, std::ostringstream& os) {
    os << "(";
    for (int64_t i = 0; i < func->params().size(); ++i) {
      const Var param = func->params()[i];
      bool is_new = false;
      os << (i ? ", " : "") << VarName(param, &is_new);
      if (param->type_annotation().defined()) os << ": " << TypeText(param->type_annotation());
    }
    os << ")";
    if (func->ret_type().defined()) os << " -> " << TypeText(func->ret_type());
    if (!func->attrs().empty()) os << " attrs=" << AttrMapText(func->attrs());
    os << " {\n";
    scopes_.emplace_back();
    std::string result = PrintBody(func->body(), indent + 1, os);
    scopes_.pop_back();
    os << std::string(2 * static_cast<size_t>(indent + 1), ' ') << result << "\n"
       << std::string(2 * static_cast<size_t>(indent), ' ') << "}";
  }

  const std::string* Lookup(const Expr& expr) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(expr);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }

  /// Children of `expr` that must be printed before it, in print order. For a nested function
  /// these are the values of the current scope its body uses: they print before it, in this
  /// scope, so a value shared across the function boundary prints (and parses back) once.
  std::vector<Expr> Operands(const Expr& expr) const {
    if (expr.as<FunctionObj>()) return Captured(expr);
    return DirectOperands(expr);
  }

  std::vector<Expr> Captured(const Expr& func) const {
    std::vector<Expr> captured;
    std::unordered_set<const Object*> seen;
    std::vector<Expr> stack{func};
    while (!stack.empty()) {
      Expr expr = stack.back();
      stack.pop_back();
      if (!seen.insert(expr.get()).second) continue;
      if (expr.get() != func.get() && owned_.back().count(expr.get())) {
        captured.push_back(expr);
        continue;
      }
      if (const auto* inner = expr.as<FunctionObj>()) {
        stack.push_back(inner->body());
      } else {
        for (const Expr& child : DirectOperands(expr)) stack.push_back(child);
      }
    }
    return captured;
  }

  /// The nodes a body reaches without entering nested functions.
  std::unordered_set<const Object*> OwnedNodes(const Expr& body) const {
    std::unordered_set<const Object*> owned;
    std::vector<Expr> stack{body};
    while (!stack.empty()) {
      Expr expr = stack.back();
      stack.pop_back();
      if (!owned.insert(expr.get()).second) continue;
      for (const Expr& child : DirectOperands(expr)) stack.push_back(child);
    }
    return owned;
  }

  static std::vector<Expr> DirectOperands(const Expr& expr) {
    if (const auto* call = expr.as<CallObj>()) {
      std::vector<Expr> out{call->op()};
      for (const Expr& arg : call->args()) out.push_back(arg);
      return out;
    }
    if (const auto* tuple = expr.as<TupleObj>()) {
      return std::vector<Expr>(tuple->fields().begin(), tuple->fields().end());
    }
    if (const auto* item = expr.as<TupleGetItemObj>()) return {item->tuple()};
    // Bodies are operands like a called function: each prints as a `fn` before the node.
    if (const auto* branch = expr.as<IfObj>()) {
      return {branch->cond(), branch->then_branch(), branch->else_branch()};
    }
    if (const auto* loop = expr.as<LoopObj>()) {
      std::vector<Expr> out{loop->trip_count(), loop->condition()};
      out.insert(out.end(), loop->initial().begin(), loop->initial().end());
      out.push_back(loop->body());
      return out;
    }
    return {};
  }

  /// Prints the statements of a body at `indent` and returns the text of its result.
  std::string PrintBody(const Expr& body, int indent, std::ostringstream& os) {
    const std::string pad(2 * static_cast<size_t>(indent), ' ');
    struct Frame {
      Expr expr;
      bool expanded;
    };
    owned_.push_back(OwnedNodes(body));
    std::vector<Frame> stack{{body, false}};
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (Lookup(frame.expr) != nullptr) {
        stack.pop_back();
        continue;
      }
      if (!frame.expanded) {
        frame.expanded = true;
        std::vector<Expr> operands = Operands(frame.expr);
        for (auto it = operands.rbegin(); it != operands.rend(); ++it)
          stack.push_back({*it, false});
        continue;
      }
      Expr expr = frame.expr;
      stack.pop_back();
      // The temporary is numbered before a nested function's body takes its own numbers.
      const bool needs_temporary = NeedsTemporary(expr);
      const std::string name = needs_temporary ? "%" + std::to_string(next_temp_++) : "";
      std::string text = NodeText(expr, indent);
      if (needs_temporary) {
        os << pad << name << " = " << text << ";" << TypeComment(expr) << "\n";
        text = name;
      }
      scopes_.back().emplace(expr, text);
    }
    owned_.pop_back();
    return OperandText(body);
  }

  /// `  // Tensor[...]` when checked types are shown and `expr` has one.
  std::string TypeComment(const Expr& expr) const {
    if (!show_checked_types_ || !expr->checked_type().defined()) return "";
    return "  // " + TypeText(expr->checked_type());
  }

  bool NeedsTemporary(const Expr& expr) const {
    if (expr.as<CallObj>() || expr.as<TupleObj>() || expr.as<TupleGetItemObj>() ||
        expr.as<FunctionObj>() || expr.as<IfObj>() || expr.as<LoopObj>()) {
      return true;
    }
    if (expr.as<ConstantObj>()) {
      auto it = constant_uses_.find(expr.get());
      return it != constant_uses_.end() && it->second > 1;
    }
    return false;
  }

  /// The node's own text; its operands are already named.
  std::string NodeText(const Expr& expr, int indent) {
    if (const auto* var = expr.as<VarObj>()) {
      bool is_new = false;
      std::string name = VarName(Downcast<Var>(expr), &is_new);
      // A variable not bound by a function is free: its annotation goes with its first use.
      if (is_new && var->type_annotation().defined()) pending_annotation_.insert(var);
      return name;
    }
    if (expr.as<GlobalVarObj>() != nullptr) return "@" + GlobalName(Downcast<GlobalVar>(expr));
    if (const auto* op = expr.as<OpObj>()) return std::string(op->name());
    if (const auto* constant = expr.as<ConstantObj>()) return ConstantText(constant->data());
    if (const auto* call = expr.as<CallObj>()) {
      std::string out = OperandText(call->op()) + "(";
      bool first = true;
      for (const Expr& arg : call->args()) {
        out += (first ? "" : ", ") + OperandText(arg);
        first = false;
      }
      const std::shared_ptr<const OpSchema> schema =
          call->op().as<OpObj>() ? Downcast<Op>(call->op()).schema() : nullptr;
      for (const auto& [key, value] : call->attrs()) {
        const std::string value_text = AttrValueText(value);
        if (IsDefault(schema.get(), key, value_text)) continue;
        out += (first ? "" : ", ") + AttrKey(key) + "=" + value_text;
        first = false;
      }
      return out + ")";
    }
    if (const auto* tuple = expr.as<TupleObj>()) {
      std::string out = "(";
      for (int64_t i = 0; i < tuple->fields().size(); ++i) {
        out += (i ? ", " : "") + OperandText(tuple->fields()[i]);
      }
      return out + (tuple->fields().size() == 1 ? ",)" : ")");
    }
    if (const auto* item = expr.as<TupleGetItemObj>()) {
      return OperandText(item->tuple()) + "." + std::to_string(item->index());
    }
    if (expr.as<IfObj>() != nullptr || expr.as<LoopObj>() != nullptr) {
      // `if(%cond, %then, %else[, sizes=[...]])`,
      // `loop(%trip_count, %condition, %initial..., %body, iterations=n)`.
      std::string out = expr.as<IfObj>() != nullptr ? "if(" : "loop(";
      bool first = true;
      for (const Expr& operand : DirectOperands(expr)) {
        out += (first ? "" : ", ") + OperandText(operand);
        first = false;
      }
      if (const auto* loop = expr.as<LoopObj>()) {
        out += ", iterations=" + loop->iterations().ToString();
      }
      if (const auto* branch = expr.as<IfObj>(); branch != nullptr && !branch->sizes().empty()) {
        out += ", sizes=" + AttrValueText(branch->sizes());
      }
      return out + ")";
    }
    if (expr.as<FunctionObj>() != nullptr) {
      std::ostringstream inner;
      inner << "fn ";
      PrintFunctionRest(Downcast<Function>(expr), indent, inner);
      return inner.str();
    }
    ThrowValueError("the text format cannot print a node of kind `" + expr->GetTypeKey() + "`");
  }

  /// Whether attribute `key` printed as `value_text` is its default: the parser fills defaults
  /// back in, so leaving them out keeps the text short without changing the Call.
  static bool IsDefault(const OpSchema* schema, const String& key, const std::string& value_text) {
    if (schema == nullptr) return false;
    const AttrField* field = schema->FindAttr(key.str());
    return field != nullptr && field->default_value.has_value() &&
           AttrValueText(*field->default_value) == value_text;
  }

  /// An operand as its parent refers to it: a free variable's annotation is never repeated.
  std::string OperandText(const Expr& expr) {
    if (const auto* var = expr.as<VarObj>()) {
      const std::string& name = var_names_.at(Downcast<Var>(expr));
      if (pending_annotation_.erase(var) == 0) return name;
      return name + ": " + TypeText(var->type_annotation());
    }
    return *Lookup(expr);
  }

  std::string ConstantText(const Tensor& data) {
    const bool inline_ok =
        CanPrintElements(data.dtype()) &&
        (large_constants_ == nullptr || data.NumElements() <= kMaxInlineConstantElements);
    if (inline_ok) return InlineConstantText(data);
    KILN_CHECK(large_constants_ != nullptr, ValueError)
        << "a constant of dtype " << DataTypeToString(data.dtype())
        << " prints only as meta[Constant][i]: pass a side table to AsText";
    auto it = meta_index_.find(data.get());
    if (it == meta_index_.end()) {
      it = meta_index_.emplace(data.get(), large_constants_->size()).first;
      large_constants_->push_back(data);
    }
    return "meta[Constant][" + std::to_string(it->second) + "]";
  }

  Array<Tensor>* large_constants_;
  bool show_checked_types_;
  std::unordered_map<const Object*, int64_t> meta_index_;
  std::unordered_map<const Object*, int> constant_uses_;
  std::unordered_set<std::string> used_names_;
  std::unordered_set<const Object*> pending_annotation_;
  std::vector<std::unordered_set<const Object*>> owned_;
  std::unordered_map<Var, std::string, ObjectRefIdentityHash> var_names_;
  std::vector<std::unordered_map<Expr, std::string, ObjectRefIdentityHash>> scopes_;
  int64_t next_temp_ = 0;
};

}  // namespace

std::string AsText(const ObjectRef& node, Array<Tensor>* large_constants, bool show_checked_types) {
  KILN_CHECK(node.defined(), ValueError) << "AsText: the node is null";
  Printer printer(large_constants, show_checked_types);
  if (node->IsInstance<IRModuleObj>()) return printer.PrintModule(Downcast<IRModule>(node));
  if (node->IsInstance<ExprObj>()) return printer.PrintExpr(Downcast<Expr>(node));
  if (node->IsInstance<TypeObj>()) return TypeText(Downcast<Type>(node)) + "\n";
  ThrowValueError("AsText: cannot print a node of kind `" + node->GetTypeKey() + "`");
}

KILN_REGISTER_GLOBAL("ir.AsText").set_body_typed([](const ObjectRef& node) {
  return String(AsText(node));
});

}  // namespace ir
}  // namespace kiln
