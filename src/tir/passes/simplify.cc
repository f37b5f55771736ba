// The loop-level pass `simplify` (the global "tir.pass.simplify"): index expressions simplified by
// the analyzer with each loop variable bound to [0, extent), so `floordiv(i * 4 + j, 4)` over
// j < 4 is `i`; loops proven empty removed; branches whose condition compares indices the
// analyzer decides replaced by the branch taken; integer arithmetic of immediates folded.
#include <kiln/arith/analyzer.h>
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../node_internal.h"
#include "simplify.h"

namespace kiln {
namespace tir {
namespace {

using internal::HoldsChildren;
using internal::IsList;

/// A statement that does nothing.
Node Nothing() { return Seq({}); }

class Simplifier {
 public:
  Node Run(const Node& node, const arith::Analyzer& analyzer, int depth) {
    KILN_CHECK(depth < internal::kMaxDepth, ValueError)
        << "tir: nodes nest deeper than " << internal::kMaxDepth << " levels";
    if (node.is("for")) return Loop(node, analyzer, depth);
    Node rebuilt = Fields(node, analyzer, depth);
    if (rebuilt.is("if")) return Branch(rebuilt);
    if (rebuilt.is("seq")) return Flatten(rebuilt);
    if (std::optional<Node> decided = Decide(rebuilt, analyzer)) return *decided;
    if (std::optional<Node> folded = Fold(rebuilt)) return *folded;
    return rebuilt;
  }

 private:
  /// `node` with its indices simplified and its children run, rebuilt only when one changed.
  Node Fields(const Node& node, const arith::Analyzer& analyzer, int depth) {
    const std::vector<FieldInfo>& infos = node->info().fields;
    std::vector<Any> fields = node->fields();
    bool changed = false;
    for (size_t i = 0; i < infos.size(); ++i) {
      if (fields[i].is_none()) continue;
      if (std::optional<Any> updated = Field(fields[i], infos[i].kind, analyzer, depth)) {
        fields[i] = std::move(*updated);
        changed = true;
      }
    }
    return changed ? internal::Rebuild(node, std::move(fields)) : node;
  }

  /// The field simplified, or nullopt when nothing in it changed.
  std::optional<Any> Field(const Any& value, FieldKind kind, const arith::Analyzer& analyzer,
                           int depth) {
    if (kind == FieldKind::kIndex) {
      const auto index = value.cast<arith::SizeExpr>();
      const arith::SizeExpr simpler = analyzer.Simplify(index);
      if (arith::StructuralEqual(simpler, index)) return std::nullopt;
      return Any(simpler);
    }
    if (kind == FieldKind::kIndices || (HoldsChildren(kind) && IsList(kind))) {
      const FieldKind item = kind == FieldKind::kIndices ? FieldKind::kIndex : FieldKind::kValue;
      Array<Any> items;
      bool changed = false;
      for (const Any& old : value.cast<Array<Any>>()) {
        std::optional<Any> updated = Field(old, item, analyzer, depth);
        changed = changed || updated.has_value();
        items.push_back(updated.has_value() ? *updated : old);
      }
      if (!changed) return std::nullopt;
      return Any(items);
    }
    if (!HoldsChildren(kind)) return std::nullopt;
    const auto child = value.cast<Node>();
    const Node updated = Run(child, analyzer, depth + 1);
    if (updated.same_as(child)) return std::nullopt;
    return Any(updated);
  }

  /// A sequence without the empty sequences in it, nested ones spliced in.
  static Node Flatten(const Node& seq) {
    const auto stmts = seq.field_as<Array<Any>>("stmts");
    const bool flat = std::none_of(stmts.begin(), stmts.end(),
                                   [](const Any& stmt) { return stmt.cast<Node>().is("seq"); });
    if (flat) return seq;
    std::vector<Node> spliced;
    for (const Any& item : stmts) {
      const auto stmt = item.cast<Node>();
      if (!stmt.is("seq")) {
        spliced.push_back(stmt);
        continue;
      }
      for (const Any& inner : stmt.field_as<Array<Any>>("stmts"))
        spliced.push_back(inner.cast<Node>());
    }
    return Seq(spliced);
  }

  /// A loop proven empty is nothing; otherwise its body is simplified with the variable bound.
  Node Loop(const Node& loop, const arith::Analyzer& outer, int depth) {
    const arith::SizeExpr extent = outer.Simplify(loop.field_as<arith::SizeExpr>("extent"));
    if (outer.CanProveLE(extent, arith::IntImm(0))) return Nothing();
    arith::Analyzer inner = outer;
    const int64_t most = outer.Bound(extent).max;
    const std::string var = loop.field_as<String>("var").str();
    inner.Bind(arith::SizeVar(var), 0, most == arith::ConstIntBound::kPosInf ? most : most - 1);
    // The analyzer bounds variables by constants; the loop's own bound, var < extent, is kept
    // for comparisons against a symbolic extent (the tail check `if (i < n)`).
    extents_[var] = extent;
    const auto body = loop.field_as<Node>("body");
    const Node simpler = Run(body, inner, depth + 1);
    extents_.erase(var);
    if (simpler.same_as(body) &&
        arith::StructuralEqual(extent, loop.field_as<arith::SizeExpr>("extent"))) {
      return loop;
    }
    return WithFields(loop, {{"extent", extent}, {"body", simpler}});
  }

  /// A branch on a bool immediate is the branch taken (nothing for a missing else).
  static Node Branch(const Node& branch) {
    const auto cond = branch.field_as<Node>("cond");
    if (!cond.is("int")) return branch;
    if (cond.field_as<int64_t>("value") != 0) return branch.field_as<Node>("then");
    const Any& otherwise = branch.field("else");
    return otherwise.is_none() ? Nothing() : otherwise.cast<Node>();
  }

  /// A comparison of two indices the analyzer decides, as a bool immediate. A loop variable
  /// alone on the left is also compared through its extent: `i < y` holds where extent <= y.
  std::optional<Node> Decide(const Node& compare, const arith::Analyzer& analyzer) const {
    const std::string& kind = compare->name();
    if (kind != "lt" && kind != "le" && kind != "gt" && kind != "ge" && kind != "eq") {
      return std::nullopt;
    }
    const auto a = compare.field_as<Node>("a");
    const auto b = compare.field_as<Node>("b");
    if (!a.is("index") || !b.is("index")) return std::nullopt;
    const auto x = a.field_as<arith::SizeExpr>("index");
    const auto y = b.field_as<arith::SizeExpr>("index");
    const auto* loop_var = x.as<arith::SizeVarObj>();
    auto extent = loop_var == nullptr ? extents_.end() : extents_.find(loop_var->name().str());
    auto holds = [&](const std::string& op, const arith::SizeExpr& p, const arith::SizeExpr& q) {
      if (extent != extents_.end()) {
        // p is the loop variable: p <= extent - 1 always, so p < q where extent <= q, and
        // p >= q fails there.
        if (op == "lt" && analyzer.CanProveLE(extent->second, q)) return true;
        if (op == "le" && analyzer.CanProveLE(extent->second - 1, q)) return true;
      }
      if (op == "lt") return analyzer.CanProveLT(p, q);
      if (op == "le") return analyzer.CanProveLE(p, q);
      if (op == "gt") return analyzer.CanProveGT(p, q);
      if (op == "ge") return analyzer.CanProveGE(p, q);
      return analyzer.CanProveEqual(p, q);
    };
    // The negation of each relation, to prove it false.
    static const std::map<std::string, std::string> kNegation{
        {"lt", "ge"}, {"le", "gt"}, {"gt", "le"}, {"ge", "lt"}};
    const DLDataType boolean{kDLUInt, 1, 1};
    if (holds(kind, x, y)) return IntImm(1, boolean);
    auto negation = kNegation.find(kind);
    if (negation != kNegation.end() && holds(negation->second, x, y)) return IntImm(0, boolean);
    return std::nullopt;
  }

  /// Integer arithmetic of two immediates, folded; nullopt for anything else (floats keep their
  /// operations: folding them would round differently from the target).
  static std::optional<Node> Fold(const Node& node) {
    const std::string& kind = node->name();
    if (kind != "add" && kind != "sub" && kind != "mul" && kind != "min" && kind != "max") {
      return std::nullopt;
    }
    const auto a = node.field_as<Node>("a");
    const auto b = node.field_as<Node>("b");
    if (!a.is("int") || !b.is("int") || node->dtype().bits != 64) return std::nullopt;
    const auto x = a.field_as<int64_t>("value");
    const auto y = b.field_as<int64_t>("value");
    int64_t result = 0;
    if (kind == "add" && __builtin_add_overflow(x, y, &result)) return std::nullopt;
    if (kind == "sub" && __builtin_sub_overflow(x, y, &result)) return std::nullopt;
    if (kind == "mul" && __builtin_mul_overflow(x, y, &result)) return std::nullopt;
    if (kind == "min") result = std::min(x, y);
    if (kind == "max") result = std::max(x, y);
    return IntImm(result, node->dtype());
  }

  std::map<std::string, arith::SizeExpr> extents_;  // of the loops around the node being run
};

}  // namespace

arith::Analyzer FunctionAnalyzer(const Node& func) {
  arith::Analyzer analyzer;
  // A function's sizes are at least 1, as the graph's are (docs/design.md §20).
  if (!func.is("prim_func")) return analyzer;
  for (const Any& param : func.field_as<Array<Any>>("params")) {
    for (const Any& extent : param.cast<Node>().field_as<Array<Any>>("shape")) {
      for (const std::string& var : arith::FreeSizeVars(extent.cast<arith::SizeExpr>())) {
        analyzer.Bind(arith::SizeVar(var), 1);
      }
    }
  }
  return analyzer;
}

Node SimplifyUnder(const Node& node, const arith::Analyzer& analyzer) {
  return Simplifier().Run(node, analyzer, 0);
}

Node Simplify(const Node& func) { return SimplifyUnder(func, FunctionAnalyzer(func)); }

KILN_REGISTER_GLOBAL("tir.pass.simplify").set_body_typed(Simplify);

}  // namespace tir
}  // namespace kiln
