// DeadCodeElimination: drops global functions that no entry function reaches.
#include <kiln/ir/expr_functor.h>
#include <kiln/transform/passes.h>

#include <string>
#include <unordered_set>
#include <vector>

namespace kiln {
namespace transform {
namespace {

bool IsEntry(const ir::GlobalVar& gvar, const ir::Function& func) {
  return gvar->name_hint() == "main" || func->attrs().count(ir::attr::kGlobalSymbol);
}

ir::IRModule EliminateUnreachableFunctions(const ir::IRModule& mod, const PassContext& /*ctx*/) {
  // Functions are matched by name, not GlobalVar identity: a pass that rebuilt a call with a
  // fresh GlobalVar of the same name still refers to the same function.
  std::unordered_set<std::string> reachable;
  std::vector<std::string> worklist;
  for (const auto& [gvar, func] : mod->functions()) {
    if (IsEntry(gvar, func) && reachable.insert(gvar->name_hint().str()).second) {
      worklist.push_back(gvar->name_hint().str());
    }
  }
  if (worklist.empty()) return mod;  // no entry: nothing says which functions are used
  while (!worklist.empty()) {
    const ir::Function func = mod.Lookup(worklist.back());
    worklist.pop_back();
    ir::PostOrderVisit(func, [&](const ir::Expr& expr) {
      const auto* callee = expr.as<ir::GlobalVarObj>();
      if (callee == nullptr) return;
      const std::string name = callee->name_hint().str();
      if (mod.Contains(name) && reachable.insert(name).second) worklist.push_back(name);
    });
  }
  if (static_cast<int64_t>(reachable.size()) == mod->functions().size()) return mod;
  ir::IRModule result = ir::IRModule::Create(mod->attrs());
  for (const auto& [gvar, func] : mod->functions()) {
    if (reachable.count(gvar->name_hint().str())) result.Add(gvar, func);
  }
  return result;
}

}  // namespace

Pass DeadCodeElimination() {
  return CreateModulePass(EliminateUnreachableFunctions,
                          PassInfo{"transform.DeadCodeElimination", 1, false});
}

KILN_REGISTER_PASS(DeadCodeElimination);

}  // namespace transform
}  // namespace kiln
