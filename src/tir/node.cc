// The registry of node kinds and the checked construction of nodes (kiln/tir/node.h).
#include <kiln/tir/node.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "node_internal.h"

namespace kiln {
namespace tir {
namespace {

/// Kinds by name. Registered kinds are never removed, so the NodeInfo pointers nodes hold stay
/// valid; a map of unique_ptr keeps them in place as the map grows.
struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<NodeInfo>, std::less<>> kinds;
};

Registry& GetRegistry() {
  static auto* registry = new Registry();  // never destroyed: nodes may outlive static teardown
  return *registry;
}

bool IsIdent(std::string_view text) {
  if (text.empty() || !(std::isalpha(static_cast<unsigned char>(text[0])) || text[0] == '_')) {
    return false;
  }
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

/// Identifiers joined by dots: "for", "my_ext.fp8_cast".
bool IsKindName(std::string_view name) {
  size_t start = 0;
  for (;;) {
    const size_t dot = name.find('.', start);
    if (!IsIdent(name.substr(start, dot - start))) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

const char* RoleName(NodeRole role) {
  switch (role) {
    case NodeRole::kValue: return "a value";
    case NodeRole::kStmt: return "a statement";
    case NodeRole::kBuffer: return "a buffer";
    case NodeRole::kFunc: return "a function";
  }
  return "a node";
}

/// `value` as a node of `role`; ValueError naming `where` otherwise.
Node CheckNode(const Any& value, NodeRole role, const std::string& where) {
  std::optional<Node> node = value.as<Node>();
  KILN_CHECK(node.has_value() && node->defined() && (*node)->role() == role, ValueError)
      << where << " must be " << RoleName(role) << ", got "
      << (node.has_value() && node->defined() ? (*node)->name() : value.type_str());
  return *node;
}

arith::SizeExpr CheckIndex(const Any& value, const std::string& where) {
  if (std::optional<int64_t> constant = value.as<int64_t>()) return arith::IntImm(*constant);
  if (std::optional<std::string> text = value.as<std::string>()) {
    // Text, as other languages write an index ("i * 64 + j").
    const arith::SizeExprParseResult parsed = arith::TryParseSizeExpr(*text);
    KILN_CHECK(parsed.expr.defined(), ValueError)
        << where << " '" << *text << "' is not a size expression: " << parsed.error;
    return parsed.expr;
  }
  std::optional<arith::SizeExpr> index = value.as<arith::SizeExpr>();
  KILN_CHECK(index.has_value() && index->defined(), ValueError)
      << where << " must be an index (an integer or a size expression), got " << value.type_str();
  return *index;
}

/// The items of an array field; ValueError naming `where` otherwise.
Array<Any> CheckArray(const Any& value, const std::string& where) {
  std::optional<Array<Any>> items = value.as<Array<Any>>();
  KILN_CHECK(items.has_value(), ValueError) << where << " must be a list, got " << value.type_str();
  return *items;
}

/// `value` in the form fields of `kind` are stored in (ints as IntImm indices, ...).
Any NormalizeField(const Any& value, FieldKind kind, const std::string& where) {
  switch (kind) {
    case FieldKind::kIndex: return CheckIndex(value, where);
    case FieldKind::kIndices: {
      Array<Any> indices;
      int64_t i = 0;
      for (const Any& item : CheckArray(value, where)) {
        indices.push_back(CheckIndex(item, where + "[" + std::to_string(i++) + "]"));
      }
      return indices;
    }
    case FieldKind::kValue: return CheckNode(value, NodeRole::kValue, where);
    case FieldKind::kStmt: return CheckNode(value, NodeRole::kStmt, where);
    case FieldKind::kBuffer:
    case FieldKind::kBufferRef: return CheckNode(value, NodeRole::kBuffer, where);
    case FieldKind::kValues:
    case FieldKind::kStmts:
    case FieldKind::kBuffers: {
      const NodeRole role = kind == FieldKind::kValues  ? NodeRole::kValue
                            : kind == FieldKind::kStmts ? NodeRole::kStmt
                                                        : NodeRole::kBuffer;
      Array<Any> nodes;
      int64_t i = 0;
      for (const Any& item : CheckArray(value, where)) {
        nodes.push_back(CheckNode(item, role, where + "[" + std::to_string(i++) + "]"));
      }
      return nodes;
    }
    case FieldKind::kIdent: {
      std::optional<std::string> text = value.as<std::string>();
      KILN_CHECK(text.has_value() && IsIdent(*text), ValueError)
          << where << " must be an identifier, got "
          << (text.has_value() ? "'" + *text + "'" : value.type_str());
      return String(*text);
    }
    case FieldKind::kString: {
      std::optional<std::string> text = value.as<std::string>();
      KILN_CHECK(text.has_value(), ValueError)
          << where << " must be a string, got " << value.type_str();
      return String(*text);
    }
    case FieldKind::kDType: {
      std::optional<DLDataType> dtype = value.as<DLDataType>();
      if (!dtype.has_value()) {
        if (std::optional<std::string> text = value.as<std::string>()) dtype = ParseDataType(*text);
      }
      KILN_CHECK(dtype.has_value(), ValueError)
          << where << " must be a data type, got " << value.type_str();
      return *dtype;
    }
    case FieldKind::kInt: {
      std::optional<int64_t> number = value.as<int64_t>();
      KILN_CHECK(number.has_value(), ValueError)
          << where << " must be an integer, got " << value.type_str();
      return *number;
    }
    case FieldKind::kFloat: {
      std::optional<double> number = value.as<double>();
      KILN_CHECK(number.has_value(), ValueError)
          << where << " must be a number, got " << value.type_str();
      return *number;
    }
  }
  return value;
}

Node Build(const NodeInfo& info, std::vector<Any> fields) {
  KILN_CHECK(fields.size() == info.fields.size(), ValueError)
      << "tir." << info.name << " has " << info.fields.size() << " fields, got " << fields.size();
  for (size_t i = 0; i < fields.size(); ++i) {
    const FieldInfo& field = info.fields[i];
    if (field.optional && fields[i].is_none()) continue;
    fields[i] = NormalizeField(fields[i], field.kind, "tir." + info.name + "'s " + field.name);
  }
  if (info.check) info.check(fields);
  const DLDataType dtype = info.dtype ? info.dtype(fields) : DLDataType{kDLOpaqueHandle, 0, 0};
  return Node(make_object<NodeObj>(&info, std::move(fields), dtype));
}

}  // namespace

void RegisterNode(NodeInfo info) {
  KILN_CHECK(IsKindName(info.name), ValueError)
      << "tir: '" << info.name << "' is not a node kind's name (identifiers joined by dots)";
  KILN_CHECK(info.role != NodeRole::kValue || info.dtype, ValueError)
      << "tir: value kind '" << info.name << "' needs a dtype rule";
  for (const FieldInfo& field : info.fields) {
    KILN_CHECK(IsIdent(field.name), ValueError)
        << "tir: field '" << field.name << "' of '" << info.name << "' is not an identifier";
  }
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto [it, inserted] = registry.kinds.emplace(info.name, nullptr);
  KILN_CHECK(inserted, ValueError) << "tir: node kind '" << info.name << "' is already registered";
  it->second = std::make_unique<NodeInfo>(std::move(info));
}

const NodeInfo* FindNode(std::string_view name) {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto it = registry.kinds.find(name);
  return it == registry.kinds.end() ? nullptr : it->second.get();
}

std::vector<std::string> ListNodes() {
  Registry& registry = GetRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  std::vector<std::string> names;
  for (const auto& [name, info] : registry.kinds) names.push_back(name);
  return names;
}

const Any& Node::field(std::string_view name) const {
  const NodeInfo& info = get()->info();
  for (size_t i = 0; i < info.fields.size(); ++i) {
    if (info.fields[i].name == name) return get()->fields()[i];
  }
  std::string names;
  for (const FieldInfo& field : info.fields) names += (names.empty() ? "" : ", ") + field.name;
  KILN_THROW(KeyError) << "tir." << info.name << " has no field '" << name
                       << "' (its fields: " << names << ")";
}

Node MakeNode(std::string_view name, std::vector<Any> fields) {
  const NodeInfo* info = FindNode(name);
  KILN_CHECK(info != nullptr, KeyError) << "tir: no node kind '" << name << "' is registered";
  return Build(*info, std::move(fields));
}

Node WithFields(const Node& node, const std::vector<std::pair<std::string, Any>>& changes) {
  const NodeInfo& info = node->info();
  std::vector<Any> fields = node->fields();
  for (const auto& change : changes) {
    const std::string& name = change.first;
    auto it = std::find_if(info.fields.begin(), info.fields.end(),
                           [&](const FieldInfo& field) { return field.name == name; });
    KILN_CHECK(it != info.fields.end(), KeyError)
        << "tir." << info.name << " has no field '" << name << "'";
    fields[it - info.fields.begin()] = change.second;
  }
  return Build(info, std::move(fields));
}

namespace internal {

Node Rebuild(const Node& node, std::vector<Any> fields) {
  return Build(node->info(), std::move(fields));
}

}  // namespace internal

}  // namespace tir
}  // namespace kiln
