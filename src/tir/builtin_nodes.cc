// The built-in node kinds (kiln/tir/builtin_nodes.h): their fields, dtype rules and checks,
// registered when libkiln loads, and their builders.
#include <kiln/arith/analyzer.h>
#include <kiln/tir/builtin_nodes.h>

#include <algorithm>

namespace kiln {
namespace tir {
namespace {

constexpr DLDataType kBool{kDLUInt, 1, 1};
constexpr DLDataType kInt32{kDLInt, 32, 1};
constexpr DLDataType kHandle{kDLOpaqueHandle, 64, 1};

DLDataType DTypeOf(const Any& field) { return field.cast<Node>()->dtype(); }

/// The one dtype of two operands; a TypeError naming `kind` when they differ.
DLDataType SameDType(const std::string& kind, const Any& a, const Any& b) {
  const DLDataType x = DTypeOf(a);
  const DLDataType y = DTypeOf(b);
  KILN_CHECK(DataTypeEqual(x, y), TypeError)
      << "tir." << kind << ": operands of " << DataTypeToString(x) << " and " << DataTypeToString(y)
      << " (cast one first)";
  return x;
}

void RequireBool(const std::string& kind, const std::string& field, const Any& value) {
  KILN_CHECK(DataTypeEqual(DTypeOf(value), kBool), TypeError)
      << "tir." << kind << ": '" << field << "' must be bool, got "
      << DataTypeToString(DTypeOf(value));
}

void RequireOneOf(const std::string& kind, const std::string& field, const Any& value,
                  const std::vector<std::string>& choices) {
  const std::string text = value.cast<std::string>();
  if (std::find(choices.begin(), choices.end(), text) != choices.end()) return;
  std::string listed;
  for (const std::string& choice : choices) listed += (listed.empty() ? "" : ", ") + choice;
  KILN_THROW(ValueError) << "tir." << kind << ": " << field << " '" << text << "' is not one of "
                         << listed;
}

/// A load or store's indices: one per dimension of its buffer.
void CheckIndices(const std::string& kind, const Any& buffer, const Any& indices) {
  const Node node = buffer.cast<Node>();
  const auto rank = node.field_as<Array<Any>>("shape").size();
  const auto count = indices.cast<Array<Any>>().size();
  KILN_CHECK(rank == count, ValueError)
      << "tir." << kind << ": " << count << " indices for buffer '"
      << node.field_as<String>("name").str() << "' of rank " << rank;
}

/// Each index of `indices` is a variable (one the node declares: reduction axes, parameters).
void RequireVariables(const std::string& kind, const std::string& field, const Any& indices) {
  for (const Any& index : indices.cast<Array<Any>>()) {
    KILN_CHECK(index.cast<arith::SizeExpr>().as<arith::SizeVarObj>() != nullptr, ValueError)
        << "tir." << kind << ": each of '" << field << "' must be a variable, got "
        << index.cast<arith::SizeExpr>().ToString();
  }
}

DLDataType DTypeField(const std::vector<Any>& fields, size_t index) {
  return fields[index].cast<DLDataType>();
}

void RegisterValues() {
  const FieldInfo dtype{"dtype", FieldKind::kDType};
  RegisterNode({"int", NodeRole::kValue, {{"value", FieldKind::kInt}, dtype}, [](const auto& f) {
                  return DTypeField(f, 1);
                }});
  RegisterNode(
      {"float", NodeRole::kValue, {{"value", FieldKind::kFloat}, dtype}, [](const auto& f) {
         return DTypeField(f, 1);
       }});
  RegisterNode({"var", NodeRole::kValue, {{"name", FieldKind::kIdent}, dtype}, [](const auto& f) {
                  return DTypeField(f, 1);
                }});
  RegisterNode(
      {"index", NodeRole::kValue, {{"index", FieldKind::kIndex}, dtype}, [](const auto& f) {
         return DTypeField(f, 1);
       }});
  const std::vector<FieldInfo> operands{{"a", FieldKind::kValue}, {"b", FieldKind::kValue}};
  for (const char* op : {"add", "sub", "mul", "div", "mod", "min", "max"}) {
    RegisterNode({op, NodeRole::kValue, operands,
                  [op](const auto& f) { return SameDType(op, f[0], f[1]); }});
  }
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    RegisterNode({op, NodeRole::kValue, operands, [op](const auto& f) {
                    SameDType(op, f[0], f[1]);
                    return kBool;
                  }});
  }
  for (const char* op : {"and", "or"}) {
    RegisterNode({op, NodeRole::kValue, operands, [op](const auto& f) {
                    RequireBool(op, "a", f[0]);
                    RequireBool(op, "b", f[1]);
                    return kBool;
                  }});
  }
  RegisterNode({"not", NodeRole::kValue, {{"a", FieldKind::kValue}}, [](const auto& f) {
                  RequireBool("not", "a", f[0]);
                  return kBool;
                }});
  RegisterNode({"select",
                NodeRole::kValue,
                {{"cond", FieldKind::kValue}, {"a", FieldKind::kValue}, {"b", FieldKind::kValue}},
                [](const auto& f) {
                  RequireBool("select", "cond", f[0]);
                  return SameDType("select", f[1], f[2]);
                }});
  RegisterNode({"cast", NodeRole::kValue, {{"value", FieldKind::kValue}, dtype}, [](const auto& f) {
                  return DTypeField(f, 1);
                }});
  RegisterNode({"load",
                NodeRole::kValue,
                {{"buffer", FieldKind::kBufferRef}, {"indices", FieldKind::kIndices}},
                [](const auto& f) {
                  CheckIndices("load", f[0], f[1]);
                  return f[0].template cast<Node>().template field_as<DLDataType>("dtype");
                }});
  RegisterNode({"call",
                NodeRole::kValue,
                {{"name", FieldKind::kString}, {"args", FieldKind::kValues}, dtype},
                [](const auto& f) { return DTypeField(f, 2); }});
  // An external function called through Kiln's FFI (a micro-kernel a tensorized loop nest
  // became): its arguments cross as ints, floats and opaque pointers; its int32 value is 0, or
  // the generated function returns the error the callee raised.
  RegisterNode({"call_packed",
                NodeRole::kValue,
                {{"name", FieldKind::kString}, {"args", FieldKind::kValues}},
                [](const auto&) { return kInt32; }});
  RegisterNode({"address",
                NodeRole::kValue,
                {{"buffer", FieldKind::kBufferRef}, {"indices", FieldKind::kIndices}},
                [](const auto& f) {
                  CheckIndices("address", f[0], f[1]);
                  return kHandle;
                }});
  // A function of int64 parameters a kernel called by call_packed calls back (a generated
  // epilogue on each tile of a GEMM's output): a KilnTileCallback* in C.
  RegisterNode({"callback",
                NodeRole::kValue,
                {{"params", FieldKind::kIndices}, {"body", FieldKind::kStmt}},
                [](const auto&) { return kHandle; },
                [](const auto& f) { RequireVariables("callback", "params", f[0]); }});
  RegisterNode({"reduce",
                NodeRole::kValue,
                {{"combiner", FieldKind::kIdent},
                 {"axes", FieldKind::kIndices},
                 {"extents", FieldKind::kIndices},
                 {"source", FieldKind::kValue}},
                [](const auto& f) { return DTypeOf(f[3]); },
                [](const auto& f) {
                  RequireOneOf("reduce", "combiner", f[0], {"sum", "prod", "max", "min"});
                  RequireVariables("reduce", "axes", f[1]);
                  const auto axes = f[1].template cast<Array<Any>>();
                  KILN_CHECK(axes.size() == f[2].template cast<Array<Any>>().size(), ValueError)
                      << "tir.reduce: " << axes.size() << " axes but "
                      << f[2].template cast<Array<Any>>().size() << " extents";
                }});
}

void RegisterStatements() {
  RegisterNode({"store",
                NodeRole::kStmt,
                {{"buffer", FieldKind::kBufferRef},
                 {"indices", FieldKind::kIndices},
                 {"value", FieldKind::kValue}},
                nullptr,
                [](const auto& f) {
                  CheckIndices("store", f[0], f[1]);
                  const auto stored =
                      f[0].template cast<Node>().template field_as<DLDataType>("dtype");
                  KILN_CHECK(DataTypeEqual(stored, DTypeOf(f[2])), TypeError)
                      << "tir.store: a " << DataTypeToString(DTypeOf(f[2]))
                      << " value into a buffer of " << DataTypeToString(stored);
                }});
  RegisterNode({"for",
                NodeRole::kStmt,
                {{"var", FieldKind::kIdent},
                 {"extent", FieldKind::kIndex},
                 {"kind", FieldKind::kIdent},
                 {"body", FieldKind::kStmt}},
                nullptr,
                [](const auto& f) {
                  RequireOneOf("for", "kind", f[2],
                               {"serial", "parallel", "vectorized", "unrolled", "block_x",
                                "block_y", "block_z", "thread_x", "thread_y", "thread_z"});
                }});
  RegisterNode({"seq", NodeRole::kStmt, {{"stmts", FieldKind::kStmts}}});
  RegisterNode({"if",
                NodeRole::kStmt,
                {{"cond", FieldKind::kValue},
                 {"then", FieldKind::kStmt},
                 {"else", FieldKind::kStmt, /*may_be_none=*/true}},
                nullptr,
                [](const auto& f) { RequireBool("if", "cond", f[0]); }});
  RegisterNode(
      {"let",
       NodeRole::kStmt,
       {{"var", FieldKind::kValue}, {"value", FieldKind::kValue}, {"body", FieldKind::kStmt}},
       nullptr,
       [](const auto& f) {
         KILN_CHECK(f[0].template cast<Node>().is("var"), ValueError)
             << "tir.let: 'var' must be a var, got " << f[0].template cast<Node>()->name();
         SameDType("let", f[0], f[1]);
       }});
  RegisterNode(
      {"allocate",
       NodeRole::kStmt,
       {{"buffer", FieldKind::kBuffer}, {"scope", FieldKind::kIdent}, {"body", FieldKind::kStmt}},
       nullptr,
       [](const auto& f) {
         RequireOneOf("allocate", "scope", f[1], {"local", "shared", "global"});
       }});
  RegisterNode({"evaluate", NodeRole::kStmt, {{"value", FieldKind::kValue}}});
}

void RegisterBuffersAndFunctions() {
  RegisterNode({"buffer",
                NodeRole::kBuffer,
                {{"name", FieldKind::kIdent},
                 {"dtype", FieldKind::kDType},
                 {"shape", FieldKind::kIndices}}});
  RegisterNode(
      {"prim_func",
       NodeRole::kFunc,
       {{"name", FieldKind::kIdent}, {"params", FieldKind::kBuffers}, {"body", FieldKind::kStmt}}});
}

[[maybe_unused]] const bool kRegistered = [] {
  RegisterValues();
  RegisterStatements();
  RegisterBuffersAndFunctions();
  return true;
}();

Array<Any> Indices(const std::vector<arith::SizeExpr>& indices) {
  return Array<Any>(indices.begin(), indices.end());
}

template <typename T>
Array<Any> Items(const std::vector<T>& items) {
  return Array<Any>(items.begin(), items.end());
}

}  // namespace

Node IntImm(int64_t value, DLDataType dtype) { return MakeNode("int", {value, dtype}); }
Node FloatImm(double value, DLDataType dtype) { return MakeNode("float", {value, dtype}); }
Node Var(const std::string& name, DLDataType dtype) {
  return MakeNode("var", {String(name), dtype});
}
Node IndexValue(const arith::SizeExpr& index, DLDataType dtype) {
  return MakeNode("index", {index, dtype});
}
Node Binary(const std::string& op, const Node& a, const Node& b) { return MakeNode(op, {a, b}); }
Node Not(const Node& a) { return MakeNode("not", {a}); }
Node Select(const Node& cond, const Node& a, const Node& b) {
  return MakeNode("select", {cond, a, b});
}
Node Cast(const Node& value, DLDataType dtype) { return MakeNode("cast", {value, dtype}); }
Node Load(const Node& buffer, const std::vector<arith::SizeExpr>& indices) {
  return MakeNode("load", {buffer, Indices(indices)});
}
Node Call(const std::string& name, const std::vector<Node>& args, DLDataType dtype) {
  return MakeNode("call", {String(name), Items(args), dtype});
}
Node CallPacked(const std::string& name, const std::vector<Node>& args) {
  return MakeNode("call_packed", {String(name), Items(args)});
}
Node Address(const Node& buffer, const std::vector<arith::SizeExpr>& indices) {
  return MakeNode("address", {buffer, Indices(indices)});
}
Node Callback(const std::vector<arith::SizeExpr>& params, const Node& body) {
  return MakeNode("callback", {Indices(params), body});
}
Node Store(const Node& buffer, const std::vector<arith::SizeExpr>& indices, const Node& value) {
  return MakeNode("store", {buffer, Indices(indices), value});
}
Node For(const std::string& var, const arith::SizeExpr& extent, const std::string& kind,
         const Node& body) {
  return MakeNode("for", {String(var), extent, String(kind), body});
}
Node Seq(const std::vector<Node>& stmts) { return MakeNode("seq", {Items(stmts)}); }
Node IfThenElse(const Node& cond, const Node& then_body, const Node& else_body) {
  return MakeNode("if", {cond, then_body, else_body.defined() ? Any(else_body) : Any(nullptr)});
}
Node Let(const Node& var, const Node& value, const Node& body) {
  return MakeNode("let", {var, value, body});
}
Node Allocate(const Node& buffer, const std::string& scope, const Node& body) {
  return MakeNode("allocate", {buffer, String(scope), body});
}
Node Evaluate(const Node& value) { return MakeNode("evaluate", {value}); }
Node Buffer(const std::string& name, DLDataType dtype, const std::vector<arith::SizeExpr>& shape) {
  return MakeNode("buffer", {String(name), dtype, Indices(shape)});
}
Node PrimFunc(const std::string& name, const std::vector<Node>& params, const Node& body) {
  return MakeNode("prim_func", {String(name), Items(params), body});
}

arith::SizeExpr RowMajorOffset(const Node& buffer, const Array<Any>& indices) {
  const auto shape = buffer.field_as<Array<Any>>("shape");
  if (indices.size() == 0) return arith::IntImm(0);
  arith::SizeExpr offset = indices[0].cast<arith::SizeExpr>();
  for (int64_t d = 1; d < indices.size(); ++d) {
    offset = offset * shape[d].cast<arith::SizeExpr>() + indices[d].cast<arith::SizeExpr>();
  }
  return arith::Analyzer().Simplify(offset);
}

}  // namespace tir
}  // namespace kiln
