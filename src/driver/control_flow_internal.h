// Compiling the IR's control flow (docs/design.md §32): each If and Loop of @main becomes one
// graph node calling a function of a "control_flow" module, whose bodies are built as
// Executables of their own.
#ifndef KILN_SRC_DRIVER_CONTROL_FLOW_INTERNAL_H_
#define KILN_SRC_DRIVER_CONTROL_FLOW_INTERNAL_H_

#include <kiln/ir/module.h>
#include <kiln/runtime/executable.h>

#include <functional>
#include <optional>

namespace kiln {
namespace driver {

struct LoweredControlFlow {
  /// The input with each If and Loop of @main replaced by a call of a function tagged
  /// Compiler="control_flow", which graph lowering turns into a node like a BYOC region's.
  ir::IRModule module;
  /// The module that provides those functions, its bodies among its imports; none when @main
  /// has no control flow.
  std::optional<runtime::Module> runtime;
};

/// Lowers the control flow of @main of `optimized` (typed): each body becomes a module of its
/// own, whose @main takes the values the body captures (and, for a loop, the iteration, the
/// condition and the carried values first), compiled by `build_body`. A Loop whose iteration
/// count only the run decides returns its scan outputs (codegen::kReturnsOutputsAttr).
LoweredControlFlow LowerControlFlow(
    const ir::IRModule& optimized,
    const std::function<Executable(const ir::IRModule&)>& build_body);

}  // namespace driver
}  // namespace kiln

#endif  // KILN_SRC_DRIVER_CONTROL_FLOW_INTERNAL_H_
