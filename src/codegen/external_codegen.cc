// External codegen (kiln/codegen/external_codegen.h): calls kiln.ext.<compiler> for the
// functions partitioned to it and checks that it delivered every symbol.
#include <kiln/codegen/external_codegen.h>
#include <kiln/ffi/plugin.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/function.h>

#include <map>
#include <string>
#include <vector>

namespace kiln {
namespace codegen {
namespace {

/// The functions of `mod` tagged for an external compiler, by compiler name.
std::map<std::string, Array<ir::Function>> FunctionsByCompiler(const ir::IRModule& mod) {
  std::map<std::string, Array<ir::Function>> by_compiler;
  for (const auto& [gvar, func] : mod->functions()) {
    if (std::optional<String> compiler = func.GetAttr<String>(ir::attr::kCompiler)) {
      by_compiler[compiler->str()].push_back(func);
    }
  }
  return by_compiler;
}

std::string SymbolOf(const ir::Function& func, const std::string& compiler) {
  std::optional<String> symbol = func.GetAttr<String>(ir::attr::kGlobalSymbol);
  KILN_CHECK(symbol.has_value(), ValueError)
      << "a function for compiler '" << compiler
      << "' has no global_symbol (PartitionGraph gives each region one)";
  return symbol->str();
}

/// ValueError unless one of `modules` (or their imports) provides each function's symbol.
void CheckSymbols(const std::string& compiler, const Array<ir::Function>& functions,
                  const std::vector<runtime::Module>& modules) {
  for (const ir::Function& func : functions) {
    const std::string symbol = SymbolOf(func, compiler);
    bool found = false;
    std::string provided;
    for (const runtime::Module& module : modules) {
      found = found || module.GetFunction(symbol).has_value();
      for (const std::string& name : module->ListFunctions()) {
        provided += (provided.empty() ? "" : ", ") + name;
      }
    }
    KILN_CHECK(found, ValueError) << "compiler '" << compiler << "' was asked for '" << symbol
                                  << "', but none of the " << modules.size()
                                  << " module(s) kiln.ext." << compiler << " returned provides it"
                                  << (provided.empty() ? std::string()
                                                       : " (they have: " + provided + ")");
  }
}

}  // namespace

Function FindExternalCodegen(const std::string& compiler) {
  const std::string name = "kiln.ext." + compiler;
  if (std::optional<Function> codegen = Function::GetGlobal(name.c_str())) return *codegen;
  EnsurePluginsDiscovered();
  if (std::optional<Function> codegen = Function::GetGlobal(name.c_str())) return *codegen;
  try {
    LoadPluginByName(compiler);
  } catch (const Error& error) {
    throw error.WithContext("while looking for the codegen of compiler '" + compiler + "'");
  }
  std::optional<Function> codegen = Function::GetGlobal(name.c_str());
  KILN_CHECK(codegen.has_value(), KeyError)
      << "compiler '" << compiler << "': the plugin libkiln_" << compiler
      << ".so loaded but registers no codegen " << name;
  return *codegen;
}

std::vector<runtime::Module> RunExternalCodegen(const ir::IRModule& mod,
                                                const Map<String, Any>& options) {
  std::vector<runtime::Module> all;
  for (const auto& [compiler, functions] : FunctionsByCompiler(mod)) {
    std::vector<runtime::Module> modules;
    try {
      const Any made = FindExternalCodegen(compiler)(functions, options);
      for (const runtime::Module& module : made.cast<Array<runtime::Module>>()) {
        modules.push_back(module);
      }
    } catch (const Error& error) {
      throw error.WithContext("while running the codegen of compiler '" + compiler + "' on " +
                              std::to_string(functions.size()) + " function(s)");
    }
    CheckSymbols(compiler, functions, modules);
    all.insert(all.end(), modules.begin(), modules.end());
  }
  return all;
}

}  // namespace codegen
}  // namespace kiln
