/// The compiler side of the JSON graph runtime (kiln/runtime/json_runtime.h, which documents
/// the format): a partitioned region function becomes a JSON graph plus its constants, and a
/// plugin's codegen `kiln.ext.<name>` becomes one line:
///
///   KILN_REGISTER_GLOBAL("kiln.ext.blas")
///       .set_body_typed([](const Array<ir::Function>& functions, const Map<String, Any>&) {
///         return codegen::CreateJsonModules(functions, "blas");
///       });
#ifndef KILN_CODEGEN_JSON_GRAPH_H_
#define KILN_CODEGEN_JSON_GRAPH_H_

#include <kiln/ir/function.h>
#include <kiln/runtime/module.h>

#include <functional>
#include <string>

namespace kiln {
namespace codegen {

/// One region function serialized.
struct JsonGraphCode {
  /// The function's global_symbol: the name of the module's function.
  std::string symbol;
  std::string graph_json;
  /// The constants of the body, in the order of the graph's const nodes, named
  /// "<symbol>_const_<i>" there. Shared with the IR, not copied.
  Array<Tensor> constants;
};

/// Serializes `function`, a typed (InferType) region function with a global_symbol whose body
/// is made of op calls, calls of composite functions, tuples, tuple fields and constants.
/// Each distinct constant tensor becomes one const node (Constants sharing a tensor share it).
/// ValueError for a missing symbol or type, or a shape that is not static; NotImplementedError
/// naming the node for what the graph cannot express (a call of a global or of a non-composite
/// function, a constant inside a composite function).
KILN_API JsonGraphCode SerializeJsonGraph(const ir::Function& function);

/// Makes the runtime module of one serialized function.
using JsonModuleFactory = std::function<runtime::Module(const JsonGraphCode&)>;

/// One module per function, from `factory`; errors are given the function's symbol as context.
KILN_API Array<runtime::Module> CreateJsonModules(const Array<ir::Function>& functions,
                                                  const JsonModuleFactory& factory);

/// One module per function through the creator that the runtime side of `plugin` registered
/// with KILN_REGISTER_JSON_RUNTIME ("runtime.module.create.<plugin>_json"). When it is not
/// registered yet, backend discovery loads libkiln_runtime_<plugin>.so from the folder of
/// libkiln_runtime.so or KILN_RUNTIME_PATH; a RuntimeError names that library, and why it did
/// not load, when the creator is still missing.
KILN_API Array<runtime::Module> CreateJsonModules(const Array<ir::Function>& functions,
                                                  const std::string& plugin);

}  // namespace codegen
}  // namespace kiln

#endif  // KILN_CODEGEN_JSON_GRAPH_H_
