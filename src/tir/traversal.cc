// The generic visitor and mutator (kiln/tir/node.h): they walk every kind's registered fields,
// so plugin nodes are visited and rewritten like built-in ones.
#include <utility>

#include "node_internal.h"

namespace kiln {
namespace tir {
namespace {

using internal::HoldsChildren;
using internal::IsList;

void VisitAt(const Node& node, const std::function<bool(const Node&)>& visit, int depth) {
  KILN_CHECK(depth < internal::kMaxDepth, ValueError)
      << "tir: nodes nest deeper than " << internal::kMaxDepth << " levels";
  if (!visit(node)) return;
  const std::vector<FieldInfo>& fields = node->info().fields;
  for (size_t i = 0; i < fields.size(); ++i) {
    const Any& value = node->fields()[i];
    if (!HoldsChildren(fields[i].kind) || value.is_none()) continue;
    if (!IsList(fields[i].kind)) {
      VisitAt(value.cast<Node>(), visit, depth + 1);
      continue;
    }
    for (const Any& item : value.cast<Array<Any>>()) VisitAt(item.cast<Node>(), visit, depth + 1);
  }
}

Node MutateAt(const Node& node, const std::function<std::optional<Node>(const Node&)>& rewrite,
              int depth) {
  KILN_CHECK(depth < internal::kMaxDepth, ValueError)
      << "tir: nodes nest deeper than " << internal::kMaxDepth << " levels";
  const std::vector<FieldInfo>& infos = node->info().fields;
  std::vector<Any> fields = node->fields();
  bool changed = false;
  for (size_t i = 0; i < infos.size(); ++i) {
    if (!HoldsChildren(infos[i].kind) || fields[i].is_none()) continue;
    if (!IsList(infos[i].kind)) {
      const Node child = fields[i].cast<Node>();
      const Node mutated = MutateAt(child, rewrite, depth + 1);
      changed = changed || !mutated.same_as(child);
      fields[i] = mutated;
      continue;
    }
    Array<Any> items;
    for (const Any& item : fields[i].cast<Array<Any>>()) {
      const Node child = item.cast<Node>();
      const Node mutated = MutateAt(child, rewrite, depth + 1);
      changed = changed || !mutated.same_as(child);
      items.push_back(mutated);
    }
    fields[i] = items;
  }
  const Node rebuilt = changed ? internal::Rebuild(node, std::move(fields)) : node;
  std::optional<Node> replaced = rewrite(rebuilt);
  return replaced.has_value() ? *replaced : rebuilt;
}

}  // namespace

void Visit(const Node& node, const std::function<bool(const Node&)>& visit) {
  VisitAt(node, visit, 0);
}

Node Mutate(const Node& node, const std::function<std::optional<Node>(const Node&)>& rewrite) {
  return MutateAt(node, rewrite, 0);
}

Node SubstituteIndices(const Node& node, const std::map<std::string, arith::SizeExpr>& values) {
  return Mutate(node, [&](const Node& n) -> std::optional<Node> {
    std::vector<std::pair<std::string, Any>> changes;
    for (size_t i = 0; i < n->info().fields.size(); ++i) {
      const FieldInfo& field = n->info().fields[i];
      const Any& value = n->fields()[i];
      if (field.kind == FieldKind::kIndex) {
        const auto index = value.cast<arith::SizeExpr>();
        const arith::SizeExpr replaced = arith::Substitute(index, values);
        if (!replaced.same_as(index)) changes.emplace_back(field.name, replaced);
      } else if (field.kind == FieldKind::kIndices) {
        Array<Any> items;
        bool changed = false;
        for (const Any& item : value.cast<Array<Any>>()) {
          const auto index = item.cast<arith::SizeExpr>();
          const arith::SizeExpr replaced = arith::Substitute(index, values);
          changed = changed || !replaced.same_as(index);
          items.push_back(replaced);
        }
        if (changed) changes.emplace_back(field.name, items);
      }
    }
    if (changes.empty()) return std::nullopt;
    return WithFields(n, changes);
  });
}

}  // namespace tir
}  // namespace kiln
