// FindCompilerRegions: the regions compiler_begin / compiler_end delimit, and their validation.
//
// As in TVM's AnnotatedRegionSet, a region is a set of computing nodes connected by edges that
// no annotation interrupts: an edge through compiler_begin enters a region, one through
// compiler_end leaves it. Checking the annotations therefore comes down to checking each such
// component: one compiler, every input brought in by a begin (constants excepted: they stay
// inside the region), every output taken out by an end. The cycle check runs on the graph of
// units (regions and single host nodes) with annotations looked through, which is also the graph
// MergeCompilerRegions merges.
#include "compiler_regions.h"

#include <kiln/ir/op.h>
#include <kiln/ir/text_format.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <queue>
#include <sstream>

namespace kiln {
namespace transform {
namespace byoc {
namespace {

const ir::CallObj* AsAnnotation(const ir::Expr& expr, const char* name) {
  const auto* call = expr.as<ir::CallObj>();
  if (call == nullptr) return nullptr;
  const auto* op = call->op().as<ir::OpObj>();
  return op != nullptr && op->name() == name ? call : nullptr;
}

bool IsAnnotation(const ir::Expr& expr) {
  return AsCompilerBegin(expr) != nullptr || AsCompilerEnd(expr) != nullptr;
}

bool IsDataflowNode(const ir::Expr& expr) {
  return expr.as<ir::CallObj>() != nullptr || expr.as<ir::TupleObj>() != nullptr ||
         expr.as<ir::TupleGetItemObj>() != nullptr;
}

ir::Expr Annotate(const char* op_name, const ir::Expr& data, const std::string& compiler) {
  Map<String, Any> attrs;
  attrs.Set(String("compiler"), String(compiler));
  return ir::Call(ir::Op::Get(op_name), {data}, attrs);
}

/// Builds CompilerRegions step by step; each step throws on the first invalid node it meets.
class RegionFinder {
 public:
  explicit RegionFinder(const ir::Expr& body) : body_(body) {}

  CompilerRegions Find() {
    CollectNodes();
    GroupComputingNodes();
    for (int root = 0; root < static_cast<int>(regions_.nodes.size()); ++root) {
      if (!members_[root].empty()) CheckComponent(members_[root]);
    }
    for (int node = 0; node < static_cast<int>(regions_.nodes.size()); ++node) {
      CheckAnnotation(node);
    }
    NumberUnits();
    return std::move(regions_);
  }

 private:
  /// Iterative post-order over operands (graphs of 100k nodes), nested functions not entered.
  void CollectNodes() {
    std::vector<std::pair<ir::Expr, bool>> stack = {{body_, false}};
    std::unordered_map<const Object*, int>& index = regions_.index;
    while (!stack.empty()) {
      const ir::Expr expr = stack.back().first;
      const bool expanded = stack.back().second;
      stack.pop_back();
      if (!IsDataflowNode(expr) || index.count(expr.get())) continue;
      if (expanded) {
        index.emplace(expr.get(), static_cast<int>(regions_.nodes.size()));
        regions_.nodes.push_back(expr);
        continue;
      }
      stack.emplace_back(expr, true);
      const std::vector<ir::Expr> operands = Operands(expr);
      for (auto it = operands.rbegin(); it != operands.rend(); ++it) stack.emplace_back(*it, false);
    }
    consumers_.resize(regions_.nodes.size());
    for (int node = 0; node < static_cast<int>(regions_.nodes.size()); ++node) {
      for (const ir::Expr& operand : Operands(regions_.nodes[node])) {
        if (auto it = index.find(operand.get()); it != index.end()) {
          consumers_[it->second].push_back(node);
        }
      }
    }
  }

  int IndexOf(const ir::Expr& expr) const {
    auto it = regions_.index.find(expr.get());
    return it == regions_.index.end() ? -1 : it->second;
  }

  bool IsComputing(int node) const { return node >= 0 && !IsAnnotation(regions_.nodes[node]); }

  /// Union-find over computing nodes joined by un-annotated edges; members_ per root.
  void GroupComputingNodes() {
    const int n = static_cast<int>(regions_.nodes.size());
    std::vector<int> parent(n);
    std::iota(parent.begin(), parent.end(), 0);
    auto find = [&parent](int node) {
      while (parent[node] != node) node = parent[node] = parent[parent[node]];
      return node;
    };
    for (int node = 0; node < n; ++node) {
      if (!IsComputing(node)) continue;
      for (const ir::Expr& operand : Operands(regions_.nodes[node])) {
        const int input = IndexOf(operand);
        if (IsComputing(input)) parent[find(input)] = find(node);
      }
    }
    members_.resize(n);
    component_of_.assign(n, -1);
    for (int node = 0; node < n; ++node) {
      if (!IsComputing(node)) continue;
      component_of_[node] = find(node);
      members_[find(node)].push_back(node);
    }
  }

  std::string Text(int node) const { return NodeText(regions_.nodes[node]); }

  /// The compiler of a component from the annotations around it; "" when there are none.
  /// `begins` and `ends` get the annotations that open and close it.
  std::string ComponentCompiler(const std::vector<int>& members, std::vector<int>* begins,
                                std::vector<int>* ends) const {
    for (int member : members) {
      for (const ir::Expr& operand : Operands(regions_.nodes[member])) {
        if (AsCompilerBegin(operand) != nullptr) begins->push_back(IndexOf(operand));
      }
      for (int consumer : consumers_[member]) {
        if (AsCompilerEnd(regions_.nodes[consumer]) != nullptr) ends->push_back(consumer);
      }
    }
    std::string compiler;
    int first = -1;
    for (const std::vector<int>* annotations : {begins, ends}) {
      for (int annotation : *annotations) {
        const std::string name = AnnotationCompiler(regions_.nodes[annotation].as<ir::CallObj>());
        if (first < 0) {
          compiler = name;
          first = annotation;
        }
        KILN_CHECK(name == compiler, ValueError)
            << "mismatched compilers: " << Text(annotation) << " marks, for compiler '" << name
            << "', the region that " << Text(first) << " marks for compiler '" << compiler << "'";
      }
    }
    return compiler;
  }

  void CheckComponent(const std::vector<int>& members) {
    std::vector<int> begins;
    std::vector<int> ends;
    const std::string compiler = ComponentCompiler(members, &begins, &ends);
    if (compiler.empty()) return;  // host nodes
    KILN_CHECK(!ends.empty(), ValueError)
        << "unbalanced annotations: " << Text(begins.front()) << " opens a region of compiler '"
        << compiler << "' that no compiler_end closes";
    for (int member : members) {
      for (const ir::Expr& operand : Operands(regions_.nodes[member])) {
        const int input = IndexOf(operand);
        const bool brought_in = AsCompilerBegin(operand) != nullptr || IsComputing(input) ||
                                operand.as<ir::ConstantObj>() != nullptr;
        if (brought_in) continue;
        if (begins.empty()) {
          KILN_THROW(ValueError) << "unbalanced annotations: " << Text(ends.front())
                                 << " closes a region of compiler '" << compiler
                                 << "' that no compiler_begin opens (" << Text(member) << " reads "
                                 << NodeText(operand) << ")";
        }
        KILN_THROW(ValueError) << "unbalanced annotations: " << Text(member)
                               << " in a region of compiler '" << compiler << "' reads "
                               << NodeText(operand) << " without compiler_begin";
      }
      KILN_CHECK(!regions_.nodes[member].same_as(body_), ValueError)
          << "unbalanced annotations: the function's result " << Text(member)
          << " is in a region of compiler '" << compiler << "' that no compiler_end closes";
      for (int consumer : consumers_[member]) {
        KILN_CHECK(IsComputing(consumer) || AsCompilerEnd(regions_.nodes[consumer]) != nullptr,
                   ValueError)
            << "unbalanced annotations: " << Text(consumer) << " reads " << Text(member)
            << " of a region of compiler '" << compiler << "' without compiler_end";
      }
    }
    regions_.unit_compiler.push_back(compiler);  // numbered for real in NumberUnits
    region_roots_.push_back(component_of_[members.front()]);
  }

  /// A begin must be read by ops of its region only (which also rules out begin(begin(x)) and
  /// the empty region end(begin(x))); an end must close a value some region computes.
  void CheckAnnotation(int node) {
    const ir::Expr& expr = regions_.nodes[node];
    if (AsCompilerBegin(expr) != nullptr) {
      KILN_CHECK(!expr.same_as(body_), ValueError)
          << "unbalanced annotations: the function returns " << Text(node)
          << ", which opens no region";
      for (int consumer : consumers_[node]) {
        KILN_CHECK(IsComputing(consumer), ValueError)
            << "unbalanced annotations: " << Text(node) << " is read by " << Text(consumer)
            << " instead of an op of its region";
      }
    } else if (AsCompilerEnd(expr) != nullptr) {
      const ir::Expr data = Operands(expr).front();
      KILN_CHECK(IsComputing(IndexOf(data)), ValueError)
          << "unbalanced annotations: " << Text(node) << " has no matching compiler_begin: it "
          << "closes " << NodeText(data) << ", which no region computes";
    }
  }

  /// Gives each unit its number (topological, ties by first node) and its inputs; ValueError
  /// when the graph of units has a cycle.
  void NumberUnits() {
    const int n = static_cast<int>(regions_.nodes.size());
    // Provisional units: regions first (in CheckComponent's order), then host nodes.
    std::vector<int> provisional(n, -1);
    std::vector<int> first_node;
    std::unordered_map<int, int> region_unit;
    for (size_t r = 0; r < region_roots_.size(); ++r) {
      region_unit.emplace(region_roots_[r], static_cast<int>(r));
      first_node.push_back(members_[region_roots_[r]].front());
    }
    std::vector<std::string> compiler = regions_.unit_compiler;
    for (int node = 0; node < n; ++node) {
      if (!IsComputing(node)) continue;
      auto it = region_unit.find(component_of_[node]);
      if (it != region_unit.end()) {
        provisional[node] = it->second;
      } else {
        provisional[node] = static_cast<int>(first_node.size());
        first_node.push_back(node);
        compiler.emplace_back();
      }
    }
    const int units = static_cast<int>(first_node.size());
    std::vector<std::vector<int>> successors(units);
    std::vector<int> in_degree(units, 0);
    for (int node = 0; node < n; ++node) {
      if (!IsComputing(node)) continue;
      for (const ir::Expr& operand : Operands(regions_.nodes[node])) {
        const int producer = regions_.Producer(operand);
        if (producer < 0 || provisional[producer] == provisional[node]) continue;
        successors[provisional[producer]].push_back(provisional[node]);
        ++in_degree[provisional[node]];
      }
    }
    // Kahn's algorithm, the unit whose first node comes first in post-order taking precedence.
    std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>>
        ready;
    for (int unit = 0; unit < units; ++unit) {
      if (in_degree[unit] == 0) ready.emplace(first_node[unit], unit);
    }
    std::vector<int> number(units, -1);
    int next = 0;
    while (!ready.empty()) {
      const int unit = ready.top().second;
      ready.pop();
      number[unit] = next++;
      for (int successor : successors[unit]) {
        if (--in_degree[successor] == 0) ready.emplace(first_node[successor], successor);
      }
    }
    if (next != units) ThrowCycle(number, first_node, compiler);
    regions_.unit_of.assign(n, -1);
    regions_.unit_compiler.assign(units, "");
    regions_.unit_nodes.assign(units, {});
    regions_.unit_inputs.assign(units, {});
    for (int unit = 0; unit < units; ++unit) regions_.unit_compiler[number[unit]] = compiler[unit];
    for (int node = 0; node < n; ++node) {
      if (provisional[node] < 0) continue;
      const int unit = number[provisional[node]];
      regions_.unit_of[node] = unit;
      regions_.unit_nodes[unit].push_back(node);
    }
    for (int unit = 0; unit < units; ++unit) {
      for (int successor : successors[unit]) {
        regions_.unit_inputs[number[successor]].push_back(number[unit]);
      }
    }
    for (std::vector<int>& inputs : regions_.unit_inputs) {
      std::sort(inputs.begin(), inputs.end());
      inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
    }
  }

  /// Names the first region (by its first node) left unnumbered by Kahn's algorithm: regions
  /// are the only units of several nodes, so every cycle goes through one.
  [[noreturn]] void ThrowCycle(const std::vector<int>& number, const std::vector<int>& first_node,
                               const std::vector<std::string>& compiler) const {
    int culprit = -1;
    for (int unit = 0; unit < static_cast<int>(number.size()); ++unit) {
      if (number[unit] < 0 && !compiler[unit].empty() &&
          (culprit < 0 || first_node[unit] < first_node[culprit])) {
        culprit = unit;
      }
    }
    KILN_ICHECK(culprit >= 0);
    KILN_THROW(ValueError) << "the region of compiler '" << compiler[culprit] << "' holding "
                           << Text(first_node[culprit])
                           << " would create a cycle: a path leaves it and comes back into it "
                              "through nodes outside it";
  }

  ir::Expr body_;
  CompilerRegions regions_;
  std::vector<std::vector<int>> consumers_;
  std::vector<std::vector<int>> members_;  // per union-find root
  std::vector<int> component_of_;          // union-find root per computing node
  std::vector<int> region_roots_;          // roots of the components that are regions
};

}  // namespace

const ir::CallObj* AsCompilerBegin(const ir::Expr& expr) {
  return AsAnnotation(expr, kCompilerBegin);
}

const ir::CallObj* AsCompilerEnd(const ir::Expr& expr) { return AsAnnotation(expr, kCompilerEnd); }

std::string AnnotationCompiler(const ir::CallObj* annotation) {
  std::optional<Any> compiler = annotation->attrs().Get(String("compiler"));
  KILN_ICHECK(compiler.has_value());
  return compiler->cast<String>().str();
}

ir::Expr CompilerBegin(const ir::Expr& data, const std::string& compiler) {
  return Annotate(kCompilerBegin, data, compiler);
}

ir::Expr CompilerEnd(const ir::Expr& data, const std::string& compiler) {
  return Annotate(kCompilerEnd, data, compiler);
}

std::vector<ir::Expr> Operands(const ir::Expr& expr) {
  if (const auto* call = expr.as<ir::CallObj>()) return {call->args().begin(), call->args().end()};
  if (const auto* tuple = expr.as<ir::TupleObj>()) {
    return {tuple->fields().begin(), tuple->fields().end()};
  }
  if (const auto* item = expr.as<ir::TupleGetItemObj>()) return {item->tuple()};
  return {};
}

ir::Expr WithOperands(const ir::Expr& node, const Array<ir::Expr>& operands) {
  if (const auto* call = node.as<ir::CallObj>()) {
    return ir::Call(call->op(), operands, call->attrs());
  }
  if (node.as<ir::TupleObj>() != nullptr) return ir::Tuple(operands);
  return ir::TupleGetItem(operands[0], node.as<ir::TupleGetItemObj>()->index());
}

std::string NodeText(const ir::Expr& node) {
  const std::string text = ir::AsText(node);
  // The printer binds every call, tuple and field to a temporary: the last binding is the node.
  // A leaf prints alone.
  const size_t end = text.rfind(";\n");
  std::string line = text.substr(0, text.find_last_not_of('\n') + 1);
  if (end != std::string::npos) {
    const size_t newline = text.rfind('\n', end - 1);
    const size_t begin = newline == std::string::npos ? 0 : newline + 1;
    line = text.substr(begin, end - begin);
    line = line.substr(line.find_first_not_of(' '));
  }
  return "'" + line + "'";
}

int CompilerRegions::Producer(const ir::Expr& expr) const {
  ir::Expr value = expr;
  while (AsCompilerBegin(value) != nullptr || AsCompilerEnd(value) != nullptr) {
    value = value.as<ir::CallObj>()->args()[0];
  }
  auto it = index.find(value.get());
  return it == index.end() ? -1 : it->second;
}

CompilerRegions FindCompilerRegions(const ir::Expr& body) { return RegionFinder(body).Find(); }

bool IsOpaqueFunction(const ir::Function& func) {
  const Map<String, Any>& attrs = func->attrs();
  return attrs.count(String(ir::attr::kPrimitive)) || attrs.count(String(ir::attr::kCompiler)) ||
         attrs.count(String(ir::attr::kComposite));
}

}  // namespace byoc
}  // namespace transform
}  // namespace kiln
