// The placement report (kiln/driver/placement.h): read back from the module as built.
#include <kiln/driver/placement.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>

#include <algorithm>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace kiln {
namespace {

/// Appends a placement for each op call under `body` (nested functions included: composites
/// and fused groups), in post-order.
void CollectOps(const ir::Expr& body, const std::string& target, const std::string& function,
                const std::vector<std::string>& compilers, std::vector<OpPlacement>* out) {
  // Composite functions name the pattern their calls were matched in.
  std::map<const Object*, std::string> composite_of;
  ir::PostOrderVisit(body, [&](const ir::Expr& expr) {
    const auto* func = expr.as<ir::FunctionObj>();
    if (func == nullptr) return;
    std::optional<Any> name = func->attrs().Get(String(ir::attr::kComposite));
    if (!name.has_value()) return;
    ir::PostOrderVisit(func->body(), [&](const ir::Expr& inner) {
      composite_of[inner.get()] = name->cast<String>().str();
    });
  });
  ir::PostOrderVisit(body, [&](const ir::Expr& expr) {
    const auto* call = expr.as<ir::CallObj>();
    const auto* op = call != nullptr ? call->op().as<ir::OpObj>() : nullptr;
    if (op == nullptr) return;
    OpPlacement placement{op->name().str(), target, function, "", {}};
    auto composite = composite_of.find(expr.get());
    if (composite != composite_of.end()) placement.composite = composite->second;
    if (target == kHostTarget)
      placement.answers = transform::AskCompilers(Downcast<ir::Call>(expr), compilers);
    out->push_back(std::move(placement));
  });
}

std::string AnswerText(const transform::PredicateAnswer& answer, bool returned_by_cost) {
  using Kind = transform::PredicateAnswer::Kind;
  switch (answer.kind) {
    case Kind::kTaken:
      return answer.compiler + " would take it" +
             (returned_by_cost ? " (unless its region was returned by cost, above)" : "");
    case Kind::kNoPredicate: return answer.compiler + ": no predicate for this op";
    case Kind::kGraphLevel: return answer.compiler + ": left out by its partition function";
    case Kind::kDeclined: break;
  }
  return answer.compiler + " declined" + (answer.reason.empty() ? "" : " (" + answer.reason + ")");
}

std::string AnswersText(const std::vector<transform::PredicateAnswer>& answers,
                        bool returned_by_cost) {
  std::string text;
  for (const transform::PredicateAnswer& answer : answers) {
    text += (text.empty() ? "" : "; ") + AnswerText(answer, returned_by_cost);
  }
  return text.empty() ? "no compiler asked" : text;
}

}  // namespace

PlacementReport ReportPlacement(const ir::IRModule& built,
                                const std::vector<std::string>& compilers) {
  PlacementReport report;
  report.compilers = compilers;
  std::map<std::string, ir::Function> external;  // by symbol: a stable order
  std::vector<ir::Function> host;
  for (const auto& [gvar, func] : built->functions()) {
    std::optional<String> symbol = func.GetAttr<String>(ir::attr::kGlobalSymbol);
    if (func->attrs().count(String(ir::attr::kCompiler)) != 0 && symbol.has_value()) {
      external.emplace(symbol->str(), func);
    } else {
      host.push_back(func);
    }
  }
  for (const auto& [symbol, func] : external) {
    CollectOps(func->body(), func.GetAttr<String>(ir::attr::kCompiler)->str(), symbol, compilers,
               &report.ops);
  }
  for (const ir::Function& func : host) {
    CollectOps(func->body(), kHostTarget, "", compilers, &report.ops);
  }
  report.region_costs = RegionCosts(built);
  return report;
}

std::string PlacementReport::ToText() const {
  const bool returned_by_cost = std::any_of(region_costs.begin(), region_costs.end(),
                                            [](const RegionCost& cost) { return !cost.kept; });
  std::map<std::string, std::pair<int64_t, std::set<std::string>>> per_target;
  std::map<std::tuple<std::string, std::string, std::string>, int64_t> per_op;
  std::map<std::pair<std::string, std::string>, int64_t> declined;
  for (const OpPlacement& placement : ops) {
    auto& [calls, functions] = per_target[placement.target];
    ++calls;
    if (!placement.function.empty()) functions.insert(placement.function);
    ++per_op[{placement.target, placement.op, placement.composite}];
    if (placement.target == kHostTarget)
      ++declined[{placement.op, AnswersText(placement.answers, returned_by_cost)}];
  }
  std::ostringstream text;
  std::string asked;
  for (const std::string& compiler : compilers) asked += (asked.empty() ? "" : ", ") + compiler;
  text << "placement of " << ops.size() << " op calls among [" << asked
       << "] (host: Kiln's CPU path)\n";
  for (const auto& [target, counts] : per_target) {
    text << "  " << std::left << std::setw(10) << target << counts.first << " op calls";
    if (!counts.second.empty()) text << " in " << counts.second.size() << " function(s)";
    text << "\n";
  }
  text << "per op:\n";
  for (const auto& [key, count] : per_op) {
    const auto& [target, op, composite] = key;
    text << "  " << std::left << std::setw(10) << target << op << " x" << count
         << (composite.empty() ? "" : "  in pattern " + composite) << "\n";
  }
  if (!region_costs.empty()) {
    text << "regions by cost (per run: the compiler's, then Kiln's CPU path's):\n";
  }
  for (const RegionCost& cost : region_costs) {
    text << "  " << cost.function << " (" << cost.compiler << "): ";
    if (cost.source.empty()) {
      text << cost.note;
    } else {
      text << std::fixed << std::setprecision(3) << cost.compiler_seconds * 1e3 << " ms vs "
           << cost.host_seconds * 1e3 << " ms (" << cost.source << ")";
    }
    text << (cost.kept ? ", kept by " + cost.compiler : ", returned to the host: faster there")
         << "\n";
  }
  if (!declined.empty()) text << "left on the host, and why:\n";
  for (const auto& [key, count] : declined) {
    text << "  " << key.first << " x" << count << ": " << key.second << "\n";
  }
  return text.str();
}

KILN_REGISTER_GLOBAL("driver.PlacementReport")
    .set_body_typed([](const ir::IRModule& built, const Array<String>& compilers) {
      return ReportPlacement(built, std::vector<std::string>(compilers.begin(), compilers.end()))
          .ToText();
    });

}  // namespace kiln
