// FKernel of the core ops: each forwards to the global function `kernel.cpu.<op name>` of
// libkiln_kernels_cpu.so (design §15). The global is looked up on every call rather than
// captured here, so a plugin that overrides `kernel.cpu.<op>` changes what both FoldConstant
// and the executor run.
//
// This file must stay last in kiln_compiler's sources: static initializers of one library run
// in link order, and the ops it extends are registered by the files before it.
#include <kiln/ir/op.h>

#include <string>

namespace kiln {
namespace op {
namespace {

kiln::Function ForwardToCpuKernel(const std::string& global_name) {
  return kiln::Function::FromPacked(
      [global_name](const AnyView* args, int32_t num_args, Any* result) {
        *result = kiln::Function::GetGlobalRequired(global_name.c_str()).CallPacked(args, num_args);
      });
}

void SetCpuKernels() {
  for (const std::string& name : ir::Op::ListNames()) {
    const std::string global_name = "kernel.cpu." + name;
    if (!kiln::Function::GetGlobal(global_name.c_str()).has_value()) continue;
    ir::detail::SetOpAttr(name, String(ir::op_attr::kFKernel), ForwardToCpuKernel(global_name),
                          /*allow_override=*/false);
  }
}

KILN_REGISTER_INITIALIZER(SetCpuKernels);

}  // namespace
}  // namespace op
}  // namespace kiln
