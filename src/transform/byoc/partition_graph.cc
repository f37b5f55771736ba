// PartitionGraph: each annotated region becomes a global function for its compiler (design
// §17). Its inputs are the values its compiler_begins bring in, one parameter per distinct
// value (a constant stays inside: the codegen sees its value); its outputs are the region's
// values that compiler_ends take out, one per distinct value, returned as a tuple when there
// are several. The caller's compiler_ends become the call or its fields.
#include <kiln/transform/byoc.h>
#include <kiln/transform/infer_type.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "compiler_regions.h"

namespace kiln {
namespace transform {
namespace {

using byoc::CompilerRegions;

/// Hands out `kiln_<compiler>_<n>`, counting per compiler and skipping names already taken.
class SymbolNamer {
 public:
  explicit SymbolNamer(const ir::IRModule& mod) {
    for (const auto& [gvar, func] : mod->functions()) taken_.insert(gvar->name_hint().str());
  }
  std::string Next(const std::string& compiler) {
    int& n = next_[compiler];
    std::string name;
    do {
      name = "kiln_" + compiler + "_" + std::to_string(n++);
    } while (!taken_.insert(name).second);
    return name;
  }

 private:
  std::unordered_set<std::string> taken_;
  std::unordered_map<std::string, int> next_;
};

/// One region turned into a function: what the caller passes and what it reads back.
struct RegionFunction {
  ir::GlobalVar gvar;
  ir::Function func;
  std::vector<ir::Expr> inputs;                   // the values of the begins, in parameter order
  std::unordered_map<const Object*, int> output;  // region node -> output index
};

/// Region `unit` of `regions` as a function named `name`; `ended` holds the nodes that
/// compiler_ends read, the region's outputs.
RegionFunction OutlineRegion(const CompilerRegions& regions, int unit,
                             const std::unordered_set<int>& ended, const std::string& name) {
  RegionFunction region;
  std::unordered_map<const Object*, ir::Expr> inner;  // input value or region node -> inside
  Array<ir::Var> params;
  for (int node : regions.unit_nodes[unit]) {
    const ir::Expr& expr = regions.nodes[node];
    Array<ir::Expr> operands;
    for (const ir::Expr& operand : byoc::Operands(expr)) {
      if (const ir::CallObj* begin = byoc::AsCompilerBegin(operand)) {
        const ir::Expr& value = begin->args()[0];
        if (value.as<ir::ConstantObj>() != nullptr) {
          operands.push_back(value);
          continue;
        }
        auto [it, added] = inner.emplace(value.get(), ir::Expr());
        if (added) {
          ir::Var param("i" + std::to_string(params.size()), operand->checked_type());
          params.push_back(param);
          region.inputs.push_back(value);
          it->second = param;
        }
        operands.push_back(it->second);
      } else if (auto it = inner.find(operand.get()); it != inner.end()) {
        operands.push_back(it->second);
      } else {
        operands.push_back(operand);  // a constant
      }
    }
    inner[expr.get()] = byoc::WithOperands(expr, operands);
  }
  Array<ir::Expr> outputs;
  Array<ir::Type> output_types;
  for (int node : regions.unit_nodes[unit]) {
    if (!ended.count(node)) continue;
    const ir::Expr& expr = regions.nodes[node];
    region.output.emplace(expr.get(), static_cast<int>(outputs.size()));
    outputs.push_back(inner.at(expr.get()));
    output_types.push_back(expr->checked_type());
  }
  const bool single = outputs.size() == 1;
  Map<String, Any> attrs;
  attrs.Set(String(ir::attr::kCompiler), String(regions.unit_compiler[unit]));
  attrs.Set(String(ir::attr::kPrimitive), int64_t{1});
  attrs.Set(String(ir::attr::kGlobalSymbol), String(name));
  region.func = ir::Function(params, single ? outputs[0] : ir::Tuple(outputs),
                             single ? output_types[0] : ir::TupleType(output_types), attrs);
  region.gvar = ir::GlobalVar(String(name));
  return region;
}

/// Outlines the regions of one function and rewrites its body to call them.
class FunctionPartitioner {
 public:
  FunctionPartitioner(const ir::Function& func, SymbolNamer* namer)
      : func_(func), regions_(byoc::FindCompilerRegions(func->body())), namer_(namer) {}

  /// The rewritten function; the region functions are appended to `outlined`. Units go in
  /// their topological order, so every value a unit reads is rewritten before it.
  ir::Function Run(std::vector<RegionFunction>* outlined) {
    const std::vector<ir::Expr>& nodes = regions_.nodes;
    if (nodes.empty()) return func_;
    outside_.resize(nodes.size());
    std::vector<std::vector<int>> ends_of(regions_.unit_nodes.size());
    for (size_t node = 0; node < nodes.size(); ++node) {
      if (const ir::CallObj* end = byoc::AsCompilerEnd(nodes[node])) {
        const int producer = regions_.index.at(end->args()[0].get());
        ends_of[regions_.unit_of[producer]].push_back(static_cast<int>(node));
        ended_.insert(producer);
      }
    }
    for (size_t unit = 0; unit < regions_.unit_nodes.size(); ++unit) {
      if (regions_.unit_compiler[unit].empty()) {
        const int node = regions_.unit_nodes[unit].front();
        Array<ir::Expr> operands;
        for (const ir::Expr& operand : byoc::Operands(nodes[node])) {
          operands.push_back(Outside(operand));
        }
        outside_[node] = byoc::WithOperands(nodes[node], operands);
        continue;
      }
      const ir::Expr call = CallRegion(static_cast<int>(unit), outlined);
      const RegionFunction& region = outlined->back();
      for (int end : ends_of[unit]) {
        const ir::Expr& value = nodes[end].as<ir::CallObj>()->args()[0];
        outside_[end] = region.output.size() == 1
                            ? call
                            : ir::TupleGetItem(call, region.output.at(value.get()));
      }
    }
    return ir::Function(func_->params(), Outside(func_->body()), func_->ret_type(), func_->attrs());
  }

 private:
  ir::Expr Outside(const ir::Expr& expr) const {
    auto it = regions_.index.find(expr.get());
    return it == regions_.index.end() ? expr : outside_[it->second];
  }

  ir::Expr CallRegion(int unit, std::vector<RegionFunction>* outlined) {
    const std::string name = namer_->Next(regions_.unit_compiler[unit]);
    outlined->push_back(OutlineRegion(regions_, unit, ended_, name));
    Array<ir::Expr> args;
    for (const ir::Expr& input : outlined->back().inputs) args.push_back(Outside(input));
    return ir::Call(outlined->back().gvar, args);
  }

  ir::Function func_;
  CompilerRegions regions_;
  SymbolNamer* namer_;
  std::vector<ir::Expr> outside_;  // what each node becomes in the rewritten body
  std::unordered_set<int> ended_;  // nodes read by compiler_ends
};

ir::IRModule Partition(const ir::IRModule& mod, const PassContext& /*ctx*/) {
  // @main first, then the others by name, so that region numbers do not depend on hashing.
  std::vector<std::pair<std::string, ir::GlobalVar>> order;
  for (const auto& [gvar, func] : mod->functions()) {
    if (!byoc::IsOpaqueFunction(func)) order.emplace_back(gvar->name_hint().str(), gvar);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return (a.first != "main") < (b.first != "main") ||
           ((a.first != "main") == (b.first != "main") && a.first < b.first);
  });
  SymbolNamer namer(mod);
  std::unordered_map<const Object*, ir::Function> rewritten;
  std::vector<RegionFunction> outlined;
  for (const auto& [name, gvar] : order) {
    const ir::Function func = mod->functions().at(gvar);
    InferExprType(func, mod);
    rewritten.emplace(gvar.get(), FunctionPartitioner(func, &namer).Run(&outlined));
  }
  if (outlined.empty()) return mod;
  ir::IRModule result = ir::IRModule::Create(mod->attrs());
  for (const auto& [gvar, func] : mod->functions()) {
    auto it = rewritten.find(gvar.get());
    result.Add(gvar, it == rewritten.end() ? func : it->second);
  }
  for (const RegionFunction& region : outlined) result.Add(region.gvar, region.func);
  return result;
}

}  // namespace

Pass PartitionGraph() {
  return CreateModulePass(Partition, PassInfo{"transform.PartitionGraph", 0, false});
}

KILN_REGISTER_PASS(PartitionGraph);

}  // namespace transform
}  // namespace kiln
