// MatchPattern: a backtracking matcher. Each step gets a continuation, "the rest of the match",
// and succeeds only if the continuation does; so when a later sibling fails under the choice an
// alternative made, the other alternative is tried, and a match is found whenever one exists.
// Bindings go to an undo log that a failed step truncates, which keeps "one pattern node, one
// expression" true across backtracking. Patterns are small, so the recursion (bounded by the
// pattern's size, never by the graph's) and the worst-case exponential search are harmless.
#include <kiln/ir/structural_equal.h>
#include <kiln/transform/pattern.h>

#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln {
namespace transform {
namespace {

using ir::Expr;
using Continuation = std::function<bool()>;

/// The attributes HasAttr reads: a Call's or a Function's; nullptr for other expressions.
const Map<String, Any>* AttrsOf(const Expr& expr) {
  if (const auto* call = expr.as<ir::CallObj>()) return &call->attrs();
  if (const auto* func = expr.as<ir::FunctionObj>()) return &func->attrs();
  return nullptr;
}

bool HasAttrs(const Map<String, Any>& wanted, const Expr& expr) {
  const Map<String, Any>* attrs = AttrsOf(expr);
  if (attrs == nullptr) return false;
  for (const auto& [key, value] : wanted) {
    std::optional<Any> actual = attrs->Get(key);
    // StructuralEqual compares attribute values (numbers, strings, arrays) as the IR does;
    // wrapping both in arrays lets plain numbers through its ObjectRef interface.
    if (!actual.has_value() || !ir::StructuralEqual(Array<Any>{value}, Array<Any>{*actual})) {
      return false;
    }
  }
  return true;
}

/// The tensor type of `expr` (nullptr for other types); ValueError when it has no checked type.
const ir::TensorTypeObj* TensorTypeOf(const Expr& expr, const Pattern& predicate) {
  KILN_CHECK(expr->checked_type().defined(), ValueError)
      << "pattern " << predicate.ToString() << " tests the type of a " << expr->GetTypeKey()
      << " that has no checked type; run InferType before matching";
  return expr->checked_type().as<ir::TensorTypeObj>();
}

bool HasShape(const std::vector<int64_t>& wanted, const ir::TensorTypeObj* type) {
  if (type == nullptr || static_cast<size_t>(type->shape().size()) != wanted.size()) return false;
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (wanted[i] == -1) continue;
    std::optional<int64_t> extent = type->shape()[static_cast<int64_t>(i)].as_static();
    if (extent != wanted[i]) return false;
  }
  return true;
}

class Matcher {
 public:
  std::optional<PatternBinding> Run(const Pattern& pattern, const Expr& expr) {
    if (!Match(pattern, expr, [] { return true; })) return std::nullopt;
    PatternBinding binding;
    for (const auto& [node, matched] : log_) binding.Set(node, matched);
    return binding;
  }

 private:
  bool Match(const Pattern& pattern, const Expr& expr, const Continuation& rest) {
    auto bound = bound_.find(pattern.get());
    if (bound != bound_.end()) return bound->second.same_as(expr) && rest();
    const size_t mark = log_.size();
    bound_.emplace(pattern.get(), expr);
    log_.emplace_back(pattern, expr);
    if (MatchNode(pattern, expr, rest)) return true;
    while (log_.size() > mark) {
      bound_.erase(log_.back().first.get());
      log_.pop_back();
    }
    return false;
  }

  /// Matches `patterns[i..]` against `exprs[i..]` pairwise, then the rest.
  bool MatchAll(const Array<Pattern>& patterns, const std::vector<Expr>& exprs, size_t i,
                const Continuation& rest) {
    if (i == exprs.size()) return rest();
    return Match(patterns[static_cast<int64_t>(i)], exprs[i],
                 [&, i] { return MatchAll(patterns, exprs, i + 1, rest); });
  }

  bool MatchNode(const Pattern& pattern, const Expr& expr, const Continuation& rest) {
    const PatternObj* node = pattern.get();
    if (node->IsInstance<WildcardPatternObj>()) return rest();
    if (node->IsInstance<ConstantPatternObj>()) return expr.as<ir::ConstantObj>() && rest();
    if (node->IsInstance<VarPatternObj>()) return expr.as<ir::VarObj>() && rest();
    if (const auto* op = pattern.as<OpPatternObj>()) return expr.same_as(op->op()) && rest();
    if (const auto* call = pattern.as<CallPatternObj>()) return MatchCall(*call, expr, rest);
    if (const auto* tuple = pattern.as<TuplePatternObj>()) {
      const auto* value = expr.as<ir::TupleObj>();
      if (value == nullptr || value->fields().size() != tuple->fields().size()) return false;
      return MatchAll(tuple->fields(), {value->fields().begin(), value->fields().end()}, 0, rest);
    }
    if (const auto* item = pattern.as<TupleGetItemPatternObj>()) {
      const auto* value = expr.as<ir::TupleGetItemObj>();
      if (value == nullptr || (item->index() != -1 && item->index() != value->index())) {
        return false;
      }
      return Match(item->tuple(), value->tuple(), rest);
    }
    if (const auto* alt = pattern.as<AltPatternObj>()) {
      return Match(alt->left(), expr, rest) || Match(alt->right(), expr, rest);
    }
    if (const auto* attrs = pattern.as<AttrPatternObj>()) {
      return HasAttrs(attrs->attrs(), expr) && Match(attrs->pattern(), expr, rest);
    }
    if (const auto* dtype = pattern.as<DTypePatternObj>()) {
      const ir::TensorTypeObj* type = TensorTypeOf(expr, pattern);
      return type != nullptr && DataTypeEqual(type->dtype(), dtype->dtype()) &&
             Match(dtype->pattern(), expr, rest);
    }
    if (const auto* shape = pattern.as<ShapePatternObj>()) {
      return HasShape(shape->shape(), TensorTypeOf(expr, pattern)) &&
             Match(shape->pattern(), expr, rest);
    }
    KILN_THROW(TypeError) << "MatchPattern: unknown pattern node " << node->GetTypeKey();
  }

  bool MatchCall(const CallPatternObj& pattern, const Expr& expr, const Continuation& rest) {
    const auto* call = expr.as<ir::CallObj>();
    if (call == nullptr || call->args().size() != pattern.args().size()) return false;
    // The callee first: it is the cheapest test, and rules out most candidates.
    return Match(pattern.callee(), call->op(), [&] {
      return MatchAll(pattern.args(), {call->args().begin(), call->args().end()}, 0, rest);
    });
  }

  std::unordered_map<const PatternObj*, Expr> bound_;
  std::vector<std::pair<Pattern, Expr>> log_;
};

}  // namespace

std::optional<PatternBinding> MatchPattern(const Pattern& pattern, const Expr& expr) {
  KILN_CHECK(pattern.defined(), ValueError) << "MatchPattern: the pattern is null";
  KILN_CHECK(expr.defined(), ValueError) << "MatchPattern: the expression is null";
  return Matcher().Run(pattern, expr);
}

bool Match(const Pattern& pattern, const Expr& expr) {
  return MatchPattern(pattern, expr).has_value();
}

}  // namespace transform
}  // namespace kiln
