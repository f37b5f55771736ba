// DLPack import and export for Tensor objects (DLPack 0.6's DLManagedTensor, which numpy 1.24
// and PyTorch 1.13 exchange). Both directions share memory; neither copies.
#include <kiln/ffi/tensor.h>

#include "c_api_guard_internal.h"

namespace kiln {
namespace {

/// Rejects descriptors no consumer could use, naming what is wrong.
void CheckDescriptor(const DLTensor& t) {
  KILN_CHECK(t.ndim >= 0, ValueError) << "DLPack tensor has " << t.ndim << " dimensions";
  KILN_CHECK(t.ndim == 0 || t.shape != nullptr, ValueError)
      << "DLPack tensor of " << t.ndim << " dimensions has no shape";
  KILN_CHECK(t.dtype.bits > 0 && t.dtype.lanes > 0, ValueError)
      << "DLPack tensor has an invalid dtype (code " << int{t.dtype.code} << ", "
      << int{t.dtype.bits} << " bits, " << t.dtype.lanes << " lanes)";
}

/// The context of an exported DLManagedTensor: keeps the tensor alive until the deleter runs.
struct ExportedTensor {
  DLManagedTensor managed;
  ObjectPtr<Object> tensor;
};

}  // namespace
}  // namespace kiln

extern "C" {

int kiln_tensor_from_dlpack(DLManagedTensor* managed, KilnObjectHandle* out) {
  KILN_C_API_BEGIN();
  KILN_CHECK(managed != nullptr, ValueError) << "kiln_tensor_from_dlpack needs a tensor";
  const DLTensor& t = managed->dl_tensor;
  kiln::CheckDescriptor(t);
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  std::vector<int64_t> strides;
  if (t.strides != nullptr) strides.assign(t.strides, t.strides + t.ndim);
  auto tensor =
      kiln::make_object<kiln::TensorObj>(t, std::move(shape), std::move(strides), [managed] {
        if (managed->deleter) {
          managed->deleter(managed);
        }
      });
  *out = kiln::detail::ObjectUnsafe::Header(tensor.release());
  KILN_C_API_END();
}

int kiln_tensor_to_dlpack(KilnObjectHandle tensor, DLManagedTensor** out) {
  KILN_C_API_BEGIN();
  KILN_CHECK(tensor != nullptr && tensor->type_index == kKilnTypeTensor, TypeError)
      << "kiln_tensor_to_dlpack needs a Tensor";
  auto* exported = new kiln::ExportedTensor();
  exported->tensor =
      kiln::ObjectPtr<kiln::Object>::FromBorrowed(kiln::detail::ObjectUnsafe::FromHeader(tensor));
  exported->managed.dl_tensor = reinterpret_cast<KilnTensorObject*>(tensor)->dl_tensor;
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<kiln::ExportedTensor*>(self->manager_ctx);
  };
  *out = &exported->managed;
  KILN_C_API_END();
}

}  // extern "C"
