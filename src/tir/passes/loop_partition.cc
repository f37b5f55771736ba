// The loop-level pass `loop_partition` (the global "tir.pass.loop_partition"): the tail checks a
// split leaves (`if (io * 4 + ii < n)` around a loop's whole body) move out of the innermost
// loops, so that no iteration tests a condition.
//
// 1. A loop whose whole body is `if (v + c < b)` over its own variable v, with c and b free of
//    v and no else branch, runs only while the condition holds: its extent becomes
//    min(extent, b - c) and the `if` goes. This holds for symbolic sizes too; the price is one
//    min per run of the loop instead of a compare per iteration.
// 2. A loop of constant extent whose body still has a tail (an `if`, or an extent with a min)
//    that its last iteration alone needs is peeled: the first extent - 1 iterations run the
//    body simplified under that bound, then the last runs on its own, simplified. It is peeled
//    only when that removes a tail from the loop.
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>

#include <optional>
#include <string>
#include <vector>

#include "simplify.h"

namespace kiln {
namespace tir {
namespace {

bool Mentions(const arith::SizeExpr& expr, const std::string& var) {
  for (const std::string& free : arith::FreeSizeVars(expr)) {
    if (free == var) return true;
  }
  return false;
}

bool HasMin(const arith::SizeExpr& expr) {
  if (expr.as<arith::MinObj>() != nullptr) return true;
  const auto* binary = expr.as<arith::BinaryObj>();
  return binary != nullptr && (HasMin(binary->a()) || HasMin(binary->b()));
}

/// The tails in `node`: its `if`s and the loops whose extent has a min.
int64_t CountTails(const Node& node) {
  int64_t tails = 0;
  Visit(node, [&](const Node& inner) {
    if (inner.is("if")) ++tails;
    if (inner.is("for") && HasMin(inner.field_as<arith::SizeExpr>("extent"))) ++tails;
    return true;
  });
  return tails;
}

/// For `v + c < b` (or <=, or the same written b > v + c): the iterations that pass, b - c
/// (b - c + 1 for <=); nullopt for any other condition.
std::optional<arith::SizeExpr> PassingIterations(const Node& cond, const std::string& var) {
  const std::string& kind = cond->name();
  const bool var_left = kind == "lt" || kind == "le";
  if (!var_left && kind != "gt" && kind != "ge") return std::nullopt;
  const auto a = cond.field_as<Node>("a");
  const auto b = cond.field_as<Node>("b");
  if (!a.is("index") || !b.is("index")) return std::nullopt;
  const auto with_var = (var_left ? a : b).field_as<arith::SizeExpr>("index");
  const auto bound = (var_left ? b : a).field_as<arith::SizeExpr>("index");
  const arith::SizeExpr offset = arith::Analyzer().Simplify(with_var - arith::SizeVar(var));
  if (Mentions(offset, var) || Mentions(bound, var)) return std::nullopt;
  const bool inclusive = kind == "le" || kind == "ge";
  return inclusive ? bound - offset + arith::IntImm(1) : bound - offset;
}

/// Step 1 on one loop, or nullopt.
std::optional<Node> Tighten(const Node& loop) {
  const auto body = loop.field_as<Node>("body");
  if (!body.is("if") || !body.field("else").is_none()) return std::nullopt;
  const std::string var = loop.field_as<String>("var").str();
  const std::optional<arith::SizeExpr> passing =
      PassingIterations(body.field_as<Node>("cond"), var);
  if (!passing.has_value()) return std::nullopt;
  const arith::SizeExpr extent = arith::Min(loop.field_as<arith::SizeExpr>("extent"), *passing);
  return WithFields(loop, {{"extent", extent}, {"body", body.field_as<Node>("then")}});
}

/// Step 2 on one loop, or nullopt.
std::optional<Node> Peel(const Node& loop, const arith::Analyzer& analyzer) {
  const std::optional<int64_t> extent = loop.field_as<arith::SizeExpr>("extent").as_int();
  const auto body = loop.field_as<Node>("body");
  if (!extent.has_value() || *extent < 2 || CountTails(body) == 0) return std::nullopt;
  const std::string var = loop.field_as<String>("var").str();
  arith::Analyzer leading = analyzer;
  leading.Bind(arith::SizeVar(var), 0, *extent - 2);
  const Node main = SimplifyUnder(body, leading);
  if (CountTails(main) >= CountTails(SimplifyUnder(loop, analyzer))) return std::nullopt;
  const Node last =
      SimplifyUnder(SubstituteIndices(body, {{var, arith::IntImm(*extent - 1)}}), analyzer);
  return Seq({WithFields(loop, {{"extent", arith::IntImm(*extent - 1)}, {"body", main}}), last});
}

Node LoopPartition(const Node& func) {
  const Node tightened = Simplify(Mutate(func, [](const Node& node) -> std::optional<Node> {
    return node.is("for") ? Tighten(node) : std::nullopt;
  }));
  const arith::Analyzer analyzer = FunctionAnalyzer(func);
  return Simplify(Mutate(tightened, [&](const Node& node) -> std::optional<Node> {
    return node.is("for") ? Peel(node, analyzer) : std::nullopt;
  }));
}

}  // namespace

KILN_REGISTER_GLOBAL("tir.pass.loop_partition").set_body_typed(LoopPartition);

}  // namespace tir
}  // namespace kiln
