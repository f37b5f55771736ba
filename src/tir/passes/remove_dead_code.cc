// The loop-level pass `remove_dead_code` (the global "tir.pass.remove_dead_code"):
// - an allocation nothing loads from is removed with every store into it;
// - a `let` whose variable is not used is its body;
// - a loop or branch left with nothing to do is removed, and empty statements leave sequences.
// Values have no side effects in this IR (an external call for its effect is an `evaluate`
// statement, which stays), so a store nobody reads can go with its value. Removing one store
// can make another buffer dead, so the rules run until nothing changes.
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>

#include <optional>
#include <string>
#include <vector>

#include "buffer_access.h"

namespace kiln {
namespace tir {
namespace {

bool IsNothing(const Node& stmt) {
  return stmt.is("seq") && stmt.field_as<Array<Any>>("stmts").empty();
}

bool UsesVar(const Node& root, const std::string& name) {
  bool used = false;
  Visit(root, [&](const Node& node) {
    used = used || (node.is("var") && node.field_as<String>("name").str() == name);
    return !used;
  });
  return used;
}

Node WithoutStoresInto(const Node& body, const std::string& buffer) {
  return Mutate(body, [&](const Node& node) -> std::optional<Node> {
    if (node.is("store") && AccessedBuffer(node) == buffer) return Seq({});
    return std::nullopt;
  });
}

std::optional<Node> RemoveIfDead(const Node& node) {
  if (node.is("allocate")) {
    const std::string buffer = node.field_as<Node>("buffer").field_as<String>("name").str();
    const auto body = node.field_as<Node>("body");
    if (ReadsBuffer(body, buffer)) return std::nullopt;
    return WithoutStoresInto(body, buffer);
  }
  if (node.is("let")) {
    const std::string var = node.field_as<Node>("var").field_as<String>("name").str();
    const auto body = node.field_as<Node>("body");
    return UsesVar(body, var) ? std::nullopt : std::optional<Node>(body);
  }
  if (node.is("for") && IsNothing(node.field_as<Node>("body"))) return Seq({});
  if (node.is("if") && IsNothing(node.field_as<Node>("then")) &&
      (node.field("else").is_none() || IsNothing(node.field_as<Node>("else")))) {
    return Seq({});
  }
  if (node.is("seq")) {
    const auto stmts = node.field_as<Array<Any>>("stmts");
    std::vector<Node> kept;
    for (const Any& stmt : stmts) {
      if (!IsNothing(stmt.cast<Node>())) kept.push_back(stmt.cast<Node>());
    }
    if (static_cast<int64_t>(kept.size()) == stmts.size()) return std::nullopt;
    return kept.size() == 1 ? kept[0] : Seq(kept);
  }
  return std::nullopt;
}

Node RemoveDeadCode(const Node& func) {
  Node current = func;
  while (true) {
    const Node next = Mutate(current, RemoveIfDead);
    if (next.same_as(current)) return current;
    current = next;
  }
}

}  // namespace

KILN_REGISTER_GLOBAL("tir.pass.remove_dead_code").set_body_typed(RemoveDeadCode);

}  // namespace tir
}  // namespace kiln
