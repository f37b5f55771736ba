// libkiln_runtime_ext_op.so, the runtime half of the ext_op test plugin: the CPU kernel of
// ext_op.swish. A process running an exported model loads it on its own when the model's
// kernel program names the kernel (docs/kernels.md, "Kernels of plugin ops"). Never installed.
#include <kiln/ffi/error.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/ffi/tensor.h>

#include <cmath>

namespace kiln {
namespace ext_op {
namespace {

KILN_REGISTER_GLOBAL("kernel.cpu.ext_op.swish")
    .set_body_typed([](const Array<Tensor>& inputs, const Array<Tensor>& outputs,
                       const Map<String, Any>& attrs) {
      const Tensor& x = inputs[0];
      const Tensor& y = outputs[0];
      KILN_CHECK(DataTypeEqual(x.dtype(), DLDataType{kDLFloat, 32, 1}), TypeError)
          << "ext_op.swish: the test kernel takes float32 only";
      const auto alpha = static_cast<float>(attrs.at("alpha").cast<double>());
      const auto* in = static_cast<const float*>(x.data());
      auto* out = static_cast<float*>(y.data());
      for (int64_t i = 0; i < x.NumElements(); ++i) {
        out[i] = in[i] / (1.0F + std::exp(-alpha * in[i]));
      }
    });

}  // namespace
}  // namespace ext_op
}  // namespace kiln
