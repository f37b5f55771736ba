/// External codegen (BYOC, design §17): turning the functions PartitionGraph tagged
/// `Compiler=<name>` into runtime modules, through each compiler's global function
///
///   kiln.ext.<name>(functions: Array<ir.Function>, options: Map<String, Any>) -> Array<Module>
///
/// which a plugin registers. Every function it is given has a `global_symbol`, and the modules
/// it returns must provide a function of that name, called as the graph executor calls node
/// functions (one DLTensor* per input, then one per output). kiln::Build imports the modules
/// into the kernel program, so the graph finds them like any fused CPU function.
#ifndef KILN_CODEGEN_EXTERNAL_CODEGEN_H_
#define KILN_CODEGEN_EXTERNAL_CODEGEN_H_

#include <kiln/ir/module.h>
#include <kiln/runtime/module.h>

#include <string>
#include <vector>

namespace kiln {
namespace codegen {

/// The global function `kiln.ext.<compiler>`, loading the plugin `libkiln_<compiler>.so` by
/// name (kiln::LoadPluginByName) when no loaded plugin has registered it. KeyError naming the
/// compiler, the function and the plugin file otherwise.
KILN_API Function FindExternalCodegen(const std::string& compiler);

/// Runs the codegen of every compiler named by a function of `mod`, compilers in name order,
/// each given its functions in module order, and returns the modules they made. Errors name the
/// compiler: a missing codegen, a codegen that fails (its error, with context), a promised
/// global_symbol that no returned module provides.
KILN_API std::vector<runtime::Module> RunExternalCodegen(const ir::IRModule& mod,
                                                         const Map<String, Any>& options);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_CODEGEN_EXTERNAL_CODEGEN_H_
