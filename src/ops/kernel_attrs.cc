// FKernel of the core ops: each forwards to the global function `kernel.cpu.<op name>` of
// libkiln_kernels_cpu.so (design §15). The global is looked up on every call rather than
// captured here, so a plugin that overrides `kernel.cpu.<op>` changes what both FoldConstant
// and the executor run.
//
// This file must stay last in kiln_compiler's sources: static initializers of one library run
// in link order, and the ops it extends are registered by the files before it.
#include <kiln/ffi/error.h>
#include <kiln/ir/op.h>

#include <optional>
#include <string>

namespace kiln {
namespace ir {

Function CpuKernelOf(const std::string& op) {
  return Function::FromPacked([op](const AnyView* args, int32_t num_args, Any* result) {
    const std::string name = "kernel.cpu." + op;
    std::optional<Function> kernel = Function::GetGlobal(name.c_str());
    if (!kernel.has_value()) {
      // runtime.WhyNoCpuKernel loads the runtime library of a plugin op's namespace.
      const Any why = Function::GetGlobalRequired("runtime.WhyNoCpuKernel")(String(op));
      kernel = Function::GetGlobal(name.c_str());
      KILN_CHECK(kernel.has_value(), RuntimeError)
          << "op '" << op << "' has no CPU kernel " << name << ": "
          << (why.is_none() ? "it was removed" : why.cast<String>().str());
    }
    *result = kernel->CallPacked(args, num_args);
  });
}

}  // namespace ir

namespace op {
namespace {

void SetCpuKernels() {
  for (const std::string& name : ir::Op::ListNames()) {
    const std::string global_name = "kernel.cpu." + name;
    if (!kiln::Function::GetGlobal(global_name.c_str()).has_value()) continue;
    ir::detail::SetOpAttr(name, String(ir::op_attr::kFKernel), ir::CpuKernelOf(name),
                          /*allow_override=*/false);
  }
}

KILN_REGISTER_INITIALIZER(SetCpuKernels);

}  // namespace
}  // namespace op
}  // namespace kiln
