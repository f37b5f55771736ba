// FuseOps: groups the op calls of each function into primitive functions (attribute
// Primitive=1) that codegen lowers as one kernel each, by the op pattern kinds:
//   - elementwise / broadcast / injective producers fuse into injective and reduction consumers
//     (injective chains, and the inputs of a reduction);
//   - elementwise / broadcast consumers fuse after an out-elementwise-fusable op (conv2d or
//     dense with its epilogue) or after a reduction;
//   - a group holds at most one op of the last two kinds (diamonds aside, below), and opaque ops
//     stay alone.
// Only a producer read by exactly one consumer is fused into it. Every group then has one node
// read from outside, its last one in topological order, so no path can leave a group and come
// back: fusion cannot create a cycle. A producer read by several consumers (a diamond) joins
// their group afterwards when they all ended up in one and neither group has an
// out-elementwise-fusable or opaque op: softmax and layer norm become one group each, with
// several reductions. (Diamonds whose readers are in different groups stay apart: correct, if
// less fused than a post-dominator analysis would get.)
// Every op call ends up in some primitive function, singletons included; calls of functions
// and nested functions are left alone.
#include <kiln/transform/passes.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "typed_mutator.h"

namespace kiln {
namespace transform {
namespace {

using ir::Expr;
using ir::OpPattern;

/// Groups grow no larger: the kernel of a fused group is one function, and huge ones compile
/// slowly and gain nothing.
constexpr int kMaxGroupSize = 256;

bool IsOpCall(const Expr& expr) {
  const auto* call = expr.as<ir::CallObj>();
  return call != nullptr && call->op().as<ir::OpObj>() != nullptr;
}

/// Operands inside the same function body (a Call's callee only when it is a value).
std::vector<Expr> Operands(const Expr& expr) {
  if (const auto* call = expr.as<ir::CallObj>()) return {call->args().begin(), call->args().end()};
  if (const auto* tuple = expr.as<ir::TupleObj>()) {
    return {tuple->fields().begin(), tuple->fields().end()};
  }
  if (const auto* item = expr.as<ir::TupleGetItemObj>()) return {item->tuple()};
  return {};
}

/// Op calls, tuples and fields group; a call of a function (an external region, control flow,
/// a group fused before) is a node too, never joined (it is opaque), so that it is rebuilt
/// reading what its arguments became.
bool IsDataflowNode(const Expr& expr) {
  return expr.as<ir::CallObj>() != nullptr || expr.as<ir::TupleObj>() != nullptr ||
         expr.as<ir::TupleGetItemObj>() != nullptr;
}

OpPattern PatternOf(const Expr& expr) {
  if (IsOpCall(expr)) return Downcast<ir::Op>(expr.as<ir::CallObj>()->op()).pattern();
  if (expr.as<ir::CallObj>() != nullptr) return OpPattern::kOpaque;
  if (expr.as<ir::TupleObj>() != nullptr) return OpPattern::kTuple;
  return OpPattern::kInjective;  // TupleGetItem: reads a field, computes nothing
}

/// The fusable nodes of a body in topological order, and how many readers each has.
struct DataflowGraph {
  std::vector<Expr> nodes;
  std::unordered_map<const Object*, size_t> index;
  std::vector<int> uses;

  explicit DataflowGraph(const Expr& body) {
    for (const Expr& expr : ir::DataflowPostOrder(body)) {
      if (!IsDataflowNode(expr)) continue;
      index.emplace(expr.get(), nodes.size());
      nodes.push_back(expr);
    }
    uses.assign(nodes.size(), 0);
    for (const Expr& node : nodes) {
      for (const Expr& operand : Operands(node)) {
        if (auto it = index.find(operand.get()); it != index.end()) ++uses[it->second];
      }
    }
    if (auto it = index.find(body.get()); it != index.end()) ++uses[it->second];
  }
};

/// Union-find over node indices; each root keeps its group's pattern, size and op count.
class Groups {
 public:
  explicit Groups(const DataflowGraph& graph) : parent_(graph.nodes.size()) {
    std::iota(parent_.begin(), parent_.end(), 0);
    for (const Expr& node : graph.nodes) {
      const OpPattern pattern = PatternOf(node);
      // A tuple computes nothing: it takes the pattern of what it groups.
      pattern_.push_back(pattern == OpPattern::kTuple ? OpPattern::kElemWise : pattern);
      size_.push_back(1);
    }
  }

  size_t Find(size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  OpPattern pattern(size_t i) { return pattern_[Find(i)]; }
  int size(size_t i) { return size_[Find(i)]; }

  /// Moves `producer`'s group into `consumer`'s.
  void Merge(size_t producer, size_t consumer) {
    const size_t from = Find(producer);
    const size_t into = Find(consumer);
    parent_[from] = into;
    pattern_[into] = std::max(pattern_[into], pattern_[from]);
    size_[into] += size_[from];
  }

 private:
  std::vector<size_t> parent_;
  std::vector<OpPattern> pattern_;
  std::vector<int> size_;
};

bool IsMaster(OpPattern pattern) {
  return pattern == OpPattern::kCommReduce || pattern == OpPattern::kOutEWiseFusable;
}

/// Whether a group of pattern `producer` may join the group of a consumer of pattern
/// `consumer` (its own op's pattern) whose group so far has pattern `consumer_group`.
bool CanFuse(OpPattern producer, OpPattern consumer, OpPattern consumer_group) {
  if (producer == OpPattern::kOpaque || consumer == OpPattern::kOpaque) return false;
  if (IsMaster(producer) && IsMaster(consumer_group)) return false;  // one master per group
  if (producer <= OpPattern::kInjective) {
    return consumer <= OpPattern::kCommReduce || consumer == OpPattern::kTuple;
  }
  if (IsMaster(producer)) return consumer <= OpPattern::kBroadcast;
  return false;
}

/// The readers of each node (a node reading another twice is listed twice).
std::vector<std::vector<size_t>> ReadersOf(const DataflowGraph& graph) {
  std::vector<std::vector<size_t>> readers(graph.nodes.size());
  for (size_t c = 0; c < graph.nodes.size(); ++c) {
    for (const Expr& operand : Operands(graph.nodes[c])) {
      if (auto it = graph.index.find(operand.get()); it != graph.index.end()) {
        readers[it->second].push_back(c);
      }
    }
  }
  return readers;
}

/// Whether the group of `p`, read by several nodes that all lie in one other group, may join
/// it: both groups hold only elementwise, broadcast, injective and reduction ops. That joins
/// the two halves of a softmax or a layer norm (the centred input is read by a reduction and
/// by the output) into one group, which the loop-level lowering computes row by row.
bool CanJoinDiamond(Groups& groups, const DataflowGraph& graph, const std::vector<size_t>& readers,
                    size_t p) {
  if (readers.size() < 2 || readers.size() != static_cast<size_t>(graph.uses[p])) return false;
  const size_t group = groups.Find(readers.front());
  if (group == groups.Find(p)) return false;
  for (size_t reader : readers) {
    if (groups.Find(reader) != group) return false;
  }
  return groups.pattern(p) <= OpPattern::kCommReduce &&
         groups.pattern(group) <= OpPattern::kCommReduce &&
         groups.size(p) + groups.size(group) <= kMaxGroupSize;
}

Groups Partition(const DataflowGraph& graph) {
  Groups groups(graph);
  for (size_t c = 0; c < graph.nodes.size(); ++c) {
    const OpPattern consumer = PatternOf(graph.nodes[c]);
    for (const Expr& operand : Operands(graph.nodes[c])) {
      auto it = graph.index.find(operand.get());
      if (it == graph.index.end()) continue;
      const size_t p = it->second;
      if (graph.uses[p] != 1 || groups.Find(p) == groups.Find(c)) continue;
      if (groups.size(p) + groups.size(c) > kMaxGroupSize) continue;
      if (CanFuse(groups.pattern(p), consumer, groups.pattern(c))) groups.Merge(p, c);
    }
  }
  // A node read several times is its group's only node read from outside; when all its readers
  // are in one group, every path out of its group enters that one, so joining them cannot
  // create a cycle.
  const std::vector<std::vector<size_t>> readers = ReadersOf(graph);
  for (size_t p = 0; p < graph.nodes.size(); ++p) {
    if (CanJoinDiamond(groups, graph, readers[p], p)) groups.Merge(p, readers[p].front());
  }
  return groups;
}

/// Rebuilds a body with each group of op calls replaced by a call of a primitive function.
class GroupBuilder {
 public:
  GroupBuilder(const DataflowGraph& graph, Groups& groups) : graph_(graph), groups_(groups) {
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const size_t group = groups.Find(i);
      members_[group].push_back(i);  // in topological order
      if (IsOpCall(graph.nodes[i])) has_op_[group] = true;
    }
  }

  Expr Rewrite(const Expr& body) {
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      const size_t group = groups_.Find(i);
      const bool root = members_[group].back() == i;
      if (!has_op_[group]) {
        outer_[graph_.nodes[i].get()] = RebuildWith(graph_.nodes[i], outer_);
      } else if (root) {
        outer_[graph_.nodes[i].get()] = MakeGroupCall(members_[group]);
      }
    }
    return Outer(body);
  }

 private:
  using NodeMap = std::unordered_map<const Object*, Expr>;

  Expr Outer(const Expr& expr) const {
    auto it = outer_.find(expr.get());
    return it == outer_.end() ? expr : it->second;
  }

  /// `node` with its operands replaced through `map` (operands not in it are kept).
  static Expr RebuildWith(const Expr& node, const NodeMap& map) {
    auto replaced = [&map](const Expr& operand) {
      auto it = map.find(operand.get());
      return it == map.end() ? operand : it->second;
    };
    if (const auto* call = node.as<ir::CallObj>()) {
      Array<Expr> args;
      for (const Expr& arg : call->args()) args.push_back(replaced(arg));
      return ir::Call(call->op(), args, call->attrs());
    }
    if (const auto* tuple = node.as<ir::TupleObj>()) {
      Array<Expr> fields;
      for (const Expr& field : tuple->fields()) fields.push_back(replaced(field));
      return ir::Tuple(fields);
    }
    const auto* item = node.as<ir::TupleGetItemObj>();
    return ir::TupleGetItem(replaced(item->tuple()), item->index());
  }

  Expr MakeGroupCall(const std::vector<size_t>& members) {
    NodeMap inner;
    Array<ir::Var> params;
    Array<Expr> args;
    std::unordered_map<const Object*, size_t> member_set;
    for (size_t i : members) member_set.emplace(graph_.nodes[i].get(), i);
    for (size_t i : members) {
      for (const Expr& operand : Operands(graph_.nodes[i])) {
        if (member_set.count(operand.get()) || inner.count(operand.get())) continue;
        ir::Var param("p" + std::to_string(params.size()), operand->checked_type());
        inner.emplace(operand.get(), param);
        params.push_back(param);
        args.push_back(Outer(operand));
      }
      inner[graph_.nodes[i].get()] = RebuildWith(graph_.nodes[i], inner);
    }
    const Expr& root = graph_.nodes[members.back()];
    Map<String, Any> attrs;
    attrs.Set(String(ir::attr::kPrimitive), int64_t{1});
    ir::Function func(params, inner.at(root.get()), root->checked_type(), attrs);
    return ir::Call(func, args);
  }

  const DataflowGraph& graph_;
  Groups& groups_;
  std::unordered_map<size_t, std::vector<size_t>> members_;
  std::unordered_map<size_t, bool> has_op_;
  NodeMap outer_;
};

ir::Function FuseFunction(const ir::Function& func, const ir::IRModule& mod) {
  if (func->attrs().count(String(ir::attr::kPrimitive))) return func;
  InferExprType(func, mod);
  const DataflowGraph graph(func->body());
  if (graph.nodes.empty()) return func;
  Groups groups = Partition(graph);
  const Expr body = GroupBuilder(graph, groups).Rewrite(func->body());
  return ir::Function(func->params(), body, func->ret_type(), func->attrs());
}

}  // namespace

Pass FuseOps() {
  return CreateFunctionPass([](const ir::Function& func, const ir::IRModule& mod,
                               const PassContext& /*ctx*/) { return FuseFunction(func, mod); },
                            PassInfo{"transform.FuseOps", 1, false});
}

KILN_REGISTER_PASS(FuseOps);

}  // namespace transform
}  // namespace kiln
