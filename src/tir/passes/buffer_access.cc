// Finding and rewriting the loads and stores of one buffer (buffer_access.h).
#include "buffer_access.h"

#include <kiln/tir/builtin_nodes.h>

#include <optional>

namespace kiln {
namespace tir {
namespace {

bool AnyAccess(const Node& root, const std::string& name, bool loads_only) {
  bool found = false;
  Visit(root, [&](const Node& node) {
    if (found) return false;
    if (node.is("load") || (!loads_only && node.is("store"))) {
      found = AccessedBuffer(node) == name;
    }
    return !found;
  });
  return found;
}

}  // namespace

std::string AccessedBuffer(const Node& node) {
  if (!node.is("load") && !node.is("store")) return "";
  return node.field_as<Node>("buffer").field_as<String>("name").str();
}

bool ReadsBuffer(const Node& node, const std::string& name) {
  return AnyAccess(node, name, /*loads_only=*/true);
}

bool AccessesBuffer(const Node& node, const std::string& name) {
  return AnyAccess(node, name, /*loads_only=*/false);
}

Node RetargetAccesses(const Node& node, const std::string& name, const Node& replacement,
                      const IndexMap& indices) {
  return Mutate(node, [&](const Node& access) -> std::optional<Node> {
    if (AccessedBuffer(access) != name) return std::nullopt;
    const std::vector<arith::SizeExpr> moved = indices(access.field_as<Array<Any>>("indices"));
    if (access.is("load")) return Load(replacement, moved);
    return Store(replacement, moved, access.field_as<Node>("value"));
  });
}

}  // namespace tir
}  // namespace kiln
