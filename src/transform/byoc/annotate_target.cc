// AnnotateTarget: marks the calls each external compiler takes, in the user's priority order
// (design §17). The predicates are op attributes `target.<compiler>` so that anyone, a plugin
// or a user in Python, can claim an op for a compiler without touching the op or the compiler.
#include <kiln/ir/expr_functor.h>
#include <kiln/transform/byoc.h>
#include <kiln/transform/infer_type.h>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler_regions.h"

namespace kiln {
namespace transform {
namespace {

using byoc::Operands;

std::optional<Function> GraphLevelPartition(const std::string& compiler) {
  return Function::GetGlobal(("kiln.ext." + compiler + ".partition").c_str());
}

/// The compiler named by a composite function's pattern, "dnnl" for "dnnl.conv2d_relu".
std::optional<std::string> CompositeCompiler(const ir::CallObj* call) {
  const auto* func = call->op().as<ir::FunctionObj>();
  if (func == nullptr) return std::nullopt;
  std::optional<Any> composite = func->attrs().Get(String(ir::attr::kComposite));
  if (!composite.has_value()) return std::nullopt;
  const std::string pattern = composite->cast<String>().str();
  return pattern.substr(0, pattern.find('.'));
}

PredicateAnswer AskPredicate(const ir::Call& call, const ir::Op& op, const std::string& compiler) {
  PredicateAnswer answer{compiler, PredicateAnswer::Kind::kNoPredicate, ""};
  const std::string key = "target." + compiler;
  std::optional<Function> predicate = op.GetAttr<Function>(String(key));
  if (!predicate.has_value()) return answer;
  Any result;
  try {
    result = (*predicate)(call);
  } catch (const Error& error) {
    throw error.WithContext("while asking " + key + " of " + op->name().str() + " about " +
                            byoc::NodeText(call));
  }
  if (result.type_index() == kKilnTypeBool) {
    answer.kind =
        result.cast<bool>() ? PredicateAnswer::Kind::kTaken : PredicateAnswer::Kind::kDeclined;
  } else if (std::optional<String> reason = result.as<String>()) {
    answer.kind = PredicateAnswer::Kind::kDeclined;
    answer.reason = reason->str();
  } else {
    KILN_THROW(TypeError) << key << " of " << op->name().str()
                          << " must return a bool or a string (the reason it declines), not a "
                          << result.type_str();
  }
  return answer;
}

PredicateAnswer Ask(const ir::Call& call, const std::string& compiler) {
  if (std::optional<std::string> owner = CompositeCompiler(call.get())) {
    if (*owner == compiler) return {compiler, PredicateAnswer::Kind::kTaken, ""};
    return {compiler, PredicateAnswer::Kind::kDeclined,
            "composite function of compiler '" + *owner + "'"};
  }
  if (call->op().as<ir::OpObj>() != nullptr) {
    if (GraphLevelPartition(compiler).has_value()) {
      return {compiler, PredicateAnswer::Kind::kGraphLevel, ""};
    }
    return AskPredicate(call, Downcast<ir::Op>(call->op()), compiler);
  }
  return {compiler, PredicateAnswer::Kind::kNoPredicate, ""};
}

bool HasAnnotations(const ir::Expr& body) {
  bool found = false;
  ir::PostOrderVisit(body, [&found](const ir::Expr& expr) {
    found = found || byoc::AsCompilerBegin(expr) != nullptr || byoc::AsCompilerEnd(expr) != nullptr;
  });
  return found;
}

/// Decides the compiler of each computing node of one function, then rewrites it.
class TargetAnnotator {
 public:
  TargetAnnotator(const std::vector<std::string>& compilers, const ir::Function& func)
      : compilers_(compilers), regions_(byoc::FindCompilerRegions(func->body())) {
    for (const std::string& compiler : compilers_) {
      if (std::optional<Function> partition = GraphLevelPartition(compiler)) {
        graph_level_.emplace(compiler, CallsOfRegions(compiler, *partition, func));
      }
    }
  }

  ir::Expr Rewrite(const ir::Expr& body) {
    const std::vector<ir::Expr>& nodes = regions_.nodes;
    compiler_of_.assign(nodes.size(), "");
    inside_.resize(nodes.size());
    outside_.resize(nodes.size());
    for (size_t node = 0; node < nodes.size(); ++node) {
      compiler_of_[node] = Choose(nodes[node]);
      const std::string& compiler = compiler_of_[node];
      Array<ir::Expr> operands;
      for (const ir::Expr& operand : Operands(nodes[node])) {
        const ir::Expr outer = Outside(operand);
        const bool wrap = !compiler.empty() && operand.as<ir::ConstantObj>() == nullptr;
        operands.push_back(wrap ? byoc::CompilerBegin(outer, compiler) : outer);
      }
      inside_[node] = byoc::WithOperands(nodes[node], operands);
      outside_[node] =
          compiler.empty() ? inside_[node] : byoc::CompilerEnd(inside_[node], compiler);
    }
    return Outside(body);
  }

 private:
  std::unordered_set<const Object*> CallsOfRegions(const std::string& compiler,
                                                   const Function& partition,
                                                   const ir::Function& func) const {
    std::unordered_set<const Object*> calls;
    const std::string name = "kiln.ext." + compiler + ".partition";
    const auto regions = partition(func).cast<Array<Array<ir::Call>>>();
    for (const Array<ir::Call>& region : regions) {
      for (const ir::Call& call : region) {
        KILN_CHECK(regions_.index.count(call.get()), ValueError)
            << name << " returned " << byoc::NodeText(call)
            << ", which is not a call of the function it was given";
        calls.insert(call.get());
      }
    }
    return calls;
  }

  /// The compiler that takes `node`, or "" for the host.
  std::string Choose(const ir::Expr& node) const {
    if (const auto* call = node.as<ir::CallObj>()) {
      for (const std::string& compiler : compilers_) {
        auto graph_level = graph_level_.find(compiler);
        const bool taken =
            graph_level != graph_level_.end() && call->op().as<ir::OpObj>()
                ? graph_level->second.count(call) > 0
                : Ask(Downcast<ir::Call>(node), compiler).kind == PredicateAnswer::Kind::kTaken;
        if (taken) return compiler;
      }
      return "";
    }
    // A tuple or a tuple field carries no computation: it joins the region of what it groups
    // (constants go along with any region).
    std::string common;
    for (const ir::Expr& operand : Operands(node)) {
      if (operand.as<ir::ConstantObj>() != nullptr) continue;
      auto it = regions_.index.find(operand.get());
      const std::string compiler = it == regions_.index.end() ? "" : compiler_of_[it->second];
      if (compiler.empty() || (!common.empty() && compiler != common)) return "";
      common = compiler;
    }
    return common;
  }

  ir::Expr Outside(const ir::Expr& expr) const {
    auto it = regions_.index.find(expr.get());
    return it == regions_.index.end() ? expr : outside_[it->second];
  }

  const std::vector<std::string>& compilers_;
  byoc::CompilerRegions regions_;  // of an unannotated body: every computing node is a unit
  std::unordered_map<std::string, std::unordered_set<const Object*>> graph_level_;
  std::vector<std::string> compiler_of_;
  std::vector<ir::Expr> inside_;   // each node rebuilt
  std::vector<ir::Expr> outside_;  // what readers outside its region see: end(inside) or inside
};

void CheckCompilerNames(const std::vector<std::string>& compilers) {
  std::unordered_set<std::string> seen;
  for (const std::string& compiler : compilers) {
    const bool identifier =
        !compiler.empty() && std::all_of(compiler.begin(), compiler.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
        });
    KILN_CHECK(identifier, ValueError) << "AnnotateTarget: compiler name '" << compiler
                                       << "' must be a non-empty identifier (letters, digits, '_')";
    KILN_CHECK(seen.insert(compiler).second, ValueError)
        << "AnnotateTarget: compiler '" << compiler << "' is listed twice";
  }
}

}  // namespace

std::vector<PredicateAnswer> AskCompilers(const ir::Call& call,
                                          const std::vector<std::string>& compilers) {
  std::vector<PredicateAnswer> answers;
  answers.reserve(compilers.size());
  for (const std::string& compiler : compilers) answers.push_back(Ask(call, compiler));
  return answers;
}

Pass AnnotateTarget(const std::vector<std::string>& compilers) {
  CheckCompilerNames(compilers);
  auto annotate = [compilers](const ir::Function& func, const ir::IRModule& mod,
                              const PassContext& /*ctx*/) {
    if (compilers.empty() || byoc::IsOpaqueFunction(func) || HasAnnotations(func->body())) {
      return func;
    }
    InferExprType(func, mod);
    const ir::Expr body = TargetAnnotator(compilers, func).Rewrite(func->body());
    return ir::Function(func->params(), body, func->ret_type(), func->attrs());
  };
  return CreateFunctionPass(
      annotate, PassInfo{PassNameWithArgs("transform.AnnotateTarget", compilers), 0, false});
}

KILN_REGISTER_GLOBAL("transform.AnnotateTarget").set_body_typed([](const Array<String>& names) {
  std::vector<std::string> compilers;
  for (const String& name : names) compilers.push_back(name.str());
  return AnnotateTarget(compilers);
});

KILN_REGISTER_GLOBAL("transform.AskCompilers")
    .set_body_typed([](const ir::Call& call, const Array<String>& names) {
      std::vector<std::string> compilers;
      for (const String& name : names) compilers.push_back(name.str());
      Array<Map<String, Any>> answers;
      for (const PredicateAnswer& answer : AskCompilers(call, compilers)) {
        static const char* const kKinds[] = {"taken", "declined", "no_predicate", "graph_level"};
        Map<String, Any> entry;
        entry.Set(String("compiler"), String(answer.compiler));
        entry.Set(String("answer"), String(kKinds[static_cast<int>(answer.kind)]));
        entry.Set(String("reason"), String(answer.reason));
        answers.push_back(entry);
      }
      return answers;
    });

}  // namespace transform
}  // namespace kiln
