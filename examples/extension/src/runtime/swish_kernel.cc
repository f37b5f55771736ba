// kernel.cpu.my_ext.swish: the CPU kernel of my_ext.swish (swish_op.cc), in the plugin's
// runtime side, libkiln_runtime_my_ext.so.
//
// A compiled model calls an op's kernel by name: lowering writes a step "kernel": "my_ext.swish"
// into the kernel program, which calls the global function `kernel.cpu.my_ext.swish`. Because
// the function lives in the runtime side, an exported model runs in a process that has only
// Kiln's runtime: loading the model finds this library next to libkiln_runtime.so (or on
// KILN_RUNTIME_PATH). It links no compiler library.
#include <kiln/ffi/array.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/ffi/tensor.h>
#include <kiln/runtime/thread_pool.h>

#include <cmath>
#include <cstdint>

namespace my_ext {
namespace {

using kiln::Any;
using kiln::Array;
using kiln::Map;
using kiln::String;
using kiln::Tensor;

/// Elements per chunk of the thread pool: below this, threads cost more than they save.
constexpr int64_t kGrain = 1 << 14;

/// The kernel program hands compact CPU tensors; a direct call from Python or C++ might not.
void CheckFloat32(const Tensor& tensor, const char* what) {
  const bool on_cpu = tensor.device().device_type == kDLCPU;
  KILN_CHECK(kiln::DataTypeEqual(tensor.dtype(), DLDataType{kDLFloat, 32, 1}) && on_cpu &&
                 tensor.IsContiguous(),
             ValueError)
      << "kernel.cpu.my_ext.swish: " << what << " must be a compact float32 CPU tensor, got a "
      << (tensor.IsContiguous() ? "" : "strided ") << kiln::DataTypeToString(tensor.dtype())
      << (on_cpu ? " CPU" : " non-CPU") << " tensor";
}

/// FKernel's signature (kiln/ir/op.h): inputs, outputs allocated by the caller, attributes.
void Swish(const Array<Tensor>& inputs, const Array<Tensor>& outputs,
           const Map<String, Any>& attrs) {
  KILN_CHECK(inputs.size() == 1 && outputs.size() == 1, ValueError)
      << "kernel.cpu.my_ext.swish takes 1 input and 1 output, got " << inputs.size() << " and "
      << outputs.size();
  const Tensor x = inputs[0];
  const Tensor y = outputs[0];
  CheckFloat32(x, "input 'x'");
  CheckFloat32(y, "the output");
  KILN_CHECK(x.NumElements() == y.NumElements(), ValueError)
      << "kernel.cpu.my_ext.swish: the output has " << y.NumElements() << " elements, the input "
      << x.NumElements();
  // Compiled models always pass beta (the schema fills in its default); a direct call may not.
  const float beta =
      static_cast<float>(attrs.Get(String("beta")).value_or(Any(1.0)).cast<double>());
  const auto* in = static_cast<const float*>(x.data());
  auto* out = static_cast<float*>(y.data());
  kiln::runtime::ParallelFor(0, x.NumElements(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = in[i] / (1.0F + std::exp(-beta * in[i]));
  });
}

KILN_REGISTER_GLOBAL("kernel.cpu.my_ext.swish").set_body_typed(Swish);

}  // namespace
}  // namespace my_ext
