// The tensor-level IR's global functions for other languages (kiln/tir/node.h): nodes are made,
// read, printed, parsed and compared by kind and field name, so a Python builder or pass needs
// no binding per kind, and works for plugin kinds too.
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/tir/node.h>

namespace kiln {
namespace tir {
namespace {

KILN_REGISTER_GLOBAL("tir.MakeNode")
    .set_body_typed([](const String& kind, const Array<Any>& fields) {
      return MakeNode(kind.str(), std::vector<Any>(fields.begin(), fields.end()));
    });

/// {"name", "role", "fields": [[field, kind], ...]} of a registered kind.
KILN_REGISTER_GLOBAL("tir.NodeKind").set_body_typed([](const String& kind) -> Map<String, Any> {
  const NodeInfo* info = FindNode(kind.str());
  KILN_CHECK(info != nullptr, KeyError) << "tir: no node kind '" << kind.str() << "' is registered";
  static const char* kRoles[] = {"value", "stmt", "buffer", "func"};
  static const char* kKinds[] = {"index", "indices", "value",   "values",     "stmt",
                                 "stmts", "buffer",  "buffers", "buffer_ref", "ident",
                                 "dtype", "int",     "float",   "string"};
  Array<Any> fields;
  for (const FieldInfo& field : info->fields) {
    fields.push_back(Array<Any>{String(field.name), String(kKinds[static_cast<int>(field.kind)]),
                                field.optional});
  }
  Map<String, Any> described;
  described.Set("name", String(info->name));
  described.Set("role", String(kRoles[static_cast<int>(info->role)]));
  described.Set("fields", fields);
  return described;
});

KILN_REGISTER_GLOBAL("tir.ListNodeKinds").set_body_typed([]() {
  Array<String> names;
  for (const std::string& name : ListNodes()) names.push_back(String(name));
  return names;
});

KILN_REGISTER_GLOBAL("tir.NodeKindOf").set_body_typed([](const Node& node) {
  return String(node->name());
});

KILN_REGISTER_GLOBAL("tir.NodeField").set_body_typed([](const Node& node, const String& field) {
  return node.field(field.str());
});

KILN_REGISTER_GLOBAL("tir.NodeDType").set_body_typed([](const Node& node) {
  KILN_CHECK(node->role() == NodeRole::kValue, TypeError)
      << "tir." << node->name() << " is not a value: it has no dtype";
  return node->dtype();
});

/// Mutate with a rewrite from another language: `rewrite(node)` returns a node or None.
KILN_REGISTER_GLOBAL("tir.Mutate").set_body_typed([](const Node& node, const Function& rewrite) {
  return Mutate(node, [&](const Node& rebuilt) -> std::optional<Node> {
    const Any replaced = rewrite(rebuilt);
    if (replaced.is_none()) return std::nullopt;
    std::optional<Node> result = replaced.as<Node>();
    KILN_CHECK(result.has_value() && result->defined(), TypeError)
        << "tir.Mutate: the rewrite of a " << rebuilt->name()
        << " must return a tir node or None, got " << replaced.type_str();
    return result;
  });
});

KILN_REGISTER_GLOBAL("tir.AsText").set_body_typed([](const Node& node) { return AsText(node); });

// An index (a size expression: a loop variable, `i * 4 + j`) as the text index fields take.
KILN_REGISTER_GLOBAL("tir.IndexText").set_body_typed([](const arith::SizeExpr& index) {
  return index.ToString();
});

KILN_REGISTER_GLOBAL("tir.ParseText").set_body_typed([](const String& text) {
  return ParseText(text.str());
});

KILN_REGISTER_GLOBAL("tir.StructuralEqual").set_body_typed([](const Node& a, const Node& b) {
  return StructuralEqual(a, b);
});

KILN_REGISTER_GLOBAL("tir.StructuralHash").set_body_typed([](const Node& node) {
  return static_cast<int64_t>(StructuralHash(node));
});

}  // namespace
}  // namespace tir
}  // namespace kiln
