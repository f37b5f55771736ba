// MergeComposite: each match of a pattern table entry becomes a call of a composite function
// (attribute Composite=<entry name>), which a BYOC compiler then takes as one unit
// (docs/design.md §17; the rules are in pattern.h).
//
// Two phases per function: first every match is chosen on the input graph (entries in table
// order, roots from the function's result back towards its parameters, so that the biggest form
// of an optional pattern claims its nodes before a smaller match rooted lower down could),
// then one ExprMutator rewrites each chosen root into a call. Choosing on the input graph lets
// the "read from outside" rule use the input's use counts, and the mutator keeps every node the
// matches do not touch, sharing included.
#include <kiln/ir/expr_functor.h>
#include <kiln/transform/infer_type.h>
#include <kiln/transform/pattern.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln {
namespace transform {
namespace {

using ir::Expr;
using NodeSet = std::unordered_set<const Object*>;
/// Nodes by identity, each kept alive with its Expr.
using NodeMap = std::unordered_map<const Object*, Expr>;

/// Composite and primitive functions are finished groups: nothing inside them is matched.
bool IsGroup(const ir::FunctionObj& func) {
  return func.attrs().count(String(ir::attr::kComposite)) > 0 ||
         func.attrs().count(String(ir::attr::kPrimitive)) > 0;
}

bool IsDataflowNode(const Expr& expr) {
  return expr.as<ir::CallObj>() != nullptr || expr.as<ir::TupleObj>() != nullptr ||
         expr.as<ir::TupleGetItemObj>() != nullptr;
}

/// The values `expr` reads: a Call's callee and arguments, a Tuple's fields, a TupleGetItem's
/// tuple.
std::vector<Expr> Operands(const Expr& expr) {
  if (const auto* call = expr.as<ir::CallObj>()) {
    std::vector<Expr> operands{call->op()};
    operands.insert(operands.end(), call->args().begin(), call->args().end());
    return operands;
  }
  if (const auto* tuple = expr.as<ir::TupleObj>()) {
    return {tuple->fields().begin(), tuple->fields().end()};
  }
  if (const auto* item = expr.as<ir::TupleGetItemObj>()) return {item->tuple()};
  return {};
}

/// A chosen match: the call that replaces `root`.
struct Merge {
  ir::Function composite;
  Array<Expr> args;  // expressions of the input graph
};

/// The nodes of a function body where matches may be rooted, and how often each node is read.
class MatchGraph {
 public:
  explicit MatchGraph(const ir::Function& func) {
    NodeSet in_groups;
    ir::PostOrderVisit(func->body(), [&](const Expr& expr) {
      for (const Expr& operand : Operands(expr)) ++uses_[operand.get()];
      if (const auto* nested = expr.as<ir::FunctionObj>()) {
        ++uses_[nested->body().get()];  // a nested function returns its body's value
        if (IsGroup(*nested)) {
          ir::PostOrderVisit(nested->body(),
                             [&](const Expr& inner) { in_groups.insert(inner.get()); });
        }
      }
      if (IsDataflowNode(expr)) nodes_.push_back(expr);
    });
    ++uses_[func->body().get()];  // the result is read by the caller
    nodes_.erase(std::remove_if(nodes_.begin(), nodes_.end(),
                                [&](const Expr& node) { return in_groups.count(node.get()) > 0; }),
                 nodes_.end());
  }

  /// Candidate roots in post-order (producers first).
  const std::vector<Expr>& nodes() const { return nodes_; }
  int uses(const Object* node) const {
    auto it = uses_.find(node);
    return it == uses_.end() ? 0 : it->second;
  }

 private:
  std::vector<Expr> nodes_;
  std::unordered_map<const Object*, int> uses_;
};

/// The expressions a match computes: those its call, tuple and tuple-field patterns matched.
NodeMap InteriorOf(const PatternBinding& binding) {
  NodeMap interior;
  for (const auto& [pattern, expr] : binding) {
    if (pattern.as<CallPatternObj>() != nullptr || pattern.as<TuplePatternObj>() != nullptr ||
        pattern.as<TupleGetItemPatternObj>() != nullptr) {
      interior.emplace(expr.get(), expr);
    }
  }
  return interior;
}

/// Builds the body of a composite function from the matched subgraph: interior nodes are
/// copied, every other operand becomes a parameter (one per distinct expression, in the order
/// the body first reads them). Recursion is bounded by the pattern's depth.
class CompositeBuilder {
 public:
  explicit CompositeBuilder(const NodeMap& interior) : interior_(interior) {}

  Merge Build(const Expr& root, const String& name) {
    const Expr body = Inner(root);
    Map<String, Any> attrs;
    attrs.Set(String(ir::attr::kComposite), name);
    return {ir::Function(params_, body, root->checked_type(), attrs), args_};
  }

 private:
  Expr Inner(const Expr& expr) {
    if (auto it = inner_.find(expr.get()); it != inner_.end()) return it->second;
    Expr inner;
    if (interior_.count(expr.get()) == 0) {
      const ir::Var param("p" + std::to_string(params_.size()), expr->checked_type());
      params_.push_back(param);
      args_.push_back(expr);
      inner = param;
    } else if (const auto* call = expr.as<ir::CallObj>()) {
      Array<Expr> args;
      for (const Expr& arg : call->args()) args.push_back(Inner(arg));
      inner = ir::Call(call->op(), args, call->attrs());  // the callee is an op: kept as is
    } else if (const auto* tuple = expr.as<ir::TupleObj>()) {
      Array<Expr> fields;
      for (const Expr& field : tuple->fields()) fields.push_back(Inner(field));
      inner = ir::Tuple(fields);
    } else {
      const auto* item = expr.as<ir::TupleGetItemObj>();
      inner = ir::TupleGetItem(Inner(item->tuple()), item->index());
    }
    inner_.emplace(expr.get(), inner);
    return inner;
  }

  const NodeMap& interior_;
  NodeMap inner_;
  Array<ir::Var> params_;
  Array<Expr> args_;
};

/// Chooses the matches of `table` in a function (see the file comment).
class MatchChooser {
 public:
  explicit MatchChooser(const ir::Function& func) : graph_(func) {}

  std::unordered_map<const Object*, Merge> Choose(const Array<PatternEntry>& table) {
    const std::vector<Expr>& nodes = graph_.nodes();
    for (const PatternEntry& entry : table) {
      for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
        if (claimed_.count(it->get()) == 0) TryMerge(entry, *it);
      }
    }
    return std::move(merges_);
  }

 private:
  void TryMerge(const PatternEntry& entry, const Expr& root) {
    std::optional<PatternBinding> binding = MatchPattern(entry->pattern(), root);
    if (!binding.has_value()) return;
    const NodeMap interior = InteriorOf(*binding);
    if (!Separable(interior, root) || !Accepted(entry, root)) return;
    for (const auto& entry_node : interior) claimed_.insert(entry_node.first);
    merges_.emplace(root.get(), CompositeBuilder(interior).Build(root, entry->name()));
  }

  /// No interior node but the root is read from outside the match or already merged.
  bool Separable(const NodeMap& interior, const Expr& root) const {
    std::unordered_map<const Object*, int> inside_uses;
    for (const auto& entry : interior) {
      for (const Expr& operand : Operands(entry.second)) ++inside_uses[operand.get()];
    }
    for (const auto& entry : interior) {
      const Object* node = entry.first;
      if (node == root.get()) continue;
      if (claimed_.count(node) > 0 || inside_uses[node] != graph_.uses(node)) return false;
    }
    return true;
  }

  static bool Accepted(const PatternEntry& entry, const Expr& root) {
    if (!entry->check().defined()) return true;
    const Any verdict = entry->check()(root);
    KILN_CHECK(verdict.type_index() == kKilnTypeBool, TypeError)
        << "the check of pattern '" << entry->name().str() << "' returned a " << verdict.type_str()
        << "; expected a bool";
    return verdict.cast<bool>();
  }

  MatchGraph graph_;
  NodeSet claimed_;
  std::unordered_map<const Object*, Merge> merges_;
};

/// Replaces each chosen root by its call; arguments are the rewritten input expressions.
class CompositeRewriter : public ir::ExprMutator {
 public:
  explicit CompositeRewriter(std::unordered_map<const Object*, Merge> merges)
      : merges_(std::move(merges)) {}

 protected:
  Expr VisitCall(const ir::Call& pre, const ir::Call& post) override { return Replace(pre, post); }
  Expr VisitTuple(const ir::Tuple& pre, const ir::Tuple& post) override {
    return Replace(pre, post);
  }
  Expr VisitTupleGetItem(const ir::TupleGetItem& pre, const ir::TupleGetItem& post) override {
    return Replace(pre, post);
  }

 private:
  Expr Replace(const Expr& pre, const Expr& post) {
    auto it = merges_.find(pre.get());
    if (it == merges_.end()) return post;
    Array<Expr> args;
    // Every argument is below the root, so the walk has already rewritten it: Mutate only
    // looks its result up.
    for (const Expr& arg : it->second.args) args.push_back(Mutate(arg));
    return ir::Call(it->second.composite, args);
  }

  std::unordered_map<const Object*, Merge> merges_;
};

ir::Function MergeInFunction(const ir::Function& func, const ir::IRModule& mod,
                             const Array<PatternEntry>& table) {
  if (table.empty() || IsGroup(*func.get())) return func;
  InferExprType(func, mod);
  std::unordered_map<const Object*, Merge> merges = MatchChooser(func).Choose(table);
  if (merges.empty()) return func;
  const Expr body = CompositeRewriter(std::move(merges)).Mutate(func->body());
  return ir::Function(func->params(), body, func->ret_type(), func->attrs());
}

Pass MakeMergeComposite(std::function<Array<PatternEntry>()> table, std::string name) {
  return CreateFunctionPass(
      [table = std::move(table)](const ir::Function& func, const ir::IRModule& mod,
                                 const PassContext& /*ctx*/) {
        return MergeInFunction(func, mod, table());
      },
      PassInfo{std::move(name), 0, false});
}

}  // namespace

Pass MergeComposite(const Array<String>& compilers) {
  std::string name = PassNameWithArgs("transform.MergeComposite",
                                      std::vector<std::string>(compilers.begin(), compilers.end()));
  // The tables are read when the pass runs, so plugins loaded after the pass was built count.
  return MakeMergeComposite(
      [compilers] {
        Array<PatternEntry> table;
        for (const String& compiler : compilers) {
          for (const PatternEntry& entry : GetPatternTable(compiler.str())) table.push_back(entry);
        }
        return table;
      },
      std::move(name));
}

Pass MergeComposite(const Array<PatternEntry>& table) {
  for (const PatternEntry& entry : table) {
    KILN_CHECK(entry.defined(), ValueError) << "MergeComposite: a pattern table entry is null";
  }
  return MakeMergeComposite([table] { return table; }, "transform.MergeComposite");
}

/// No argument, or one Array of compiler names or of PatternEntry (pipeline strings pass the
/// former).
KILN_REGISTER_GLOBAL("transform.MergeComposite")
    .set_body_packed([](const AnyView* args, int32_t num_args, Any* result) {
      KILN_CHECK(num_args <= 1, TypeError)
          << "transform.MergeComposite takes no argument or one list of compiler names (or of "
             "PatternEntry), got "
          << num_args << " arguments";
      if (num_args == 0) {
        *result = MergeComposite(Array<String>());
      } else if (std::optional<Array<String>> compilers = args[0].as<Array<String>>()) {
        *result = MergeComposite(*compilers);
      } else if (std::optional<Array<PatternEntry>> table = args[0].as<Array<PatternEntry>>()) {
        *result = MergeComposite(*table);
      } else {
        KILN_THROW(TypeError) << "transform.MergeComposite: expected a list of compiler names or "
                                 "of PatternEntry, got a "
                              << args[0].type_str();
      }
    });

}  // namespace transform
}  // namespace kiln
