/// What every device-code module shares (OpenCL C source, a CUDA image): one code payload, the
/// names of the kernels it defines, the saved form, and kernel functions that keep their module
/// alive. A backend adds only how a kernel is launched.
///
/// Saved form (runtime/byte_stream.h): u32 format version (1), str payload, u32 kernel count,
/// str kernel name per kernel.
#ifndef KILN_BACKENDS_COMMON_KERNEL_MODULE_H_
#define KILN_BACKENDS_COMMON_KERNEL_MODULE_H_

#include <kiln/runtime/byte_stream.h>
#include <kiln/runtime/device_api.h>
#include <kiln/runtime/module.h>

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tensor_checks.h"

namespace kiln {
namespace backend {

constexpr uint32_t kKernelModuleFormatVersion = 1;

class KernelModuleObj : public runtime::ModuleObj {
 public:
  std::vector<std::string> ListFunctions() const override { return kernel_names_; }

  std::optional<Function> GetFunction(const std::string& name) override {
    if (std::find(kernel_names_.begin(), kernel_names_.end(), name) == kernel_names_.end()) {
      return std::nullopt;
    }
    // The function holds the module, so the module outlives every function taken from it.
    auto self = ObjectPtr<KernelModuleObj>::FromBorrowed(this);
    return Function::FromPacked(
        [self = std::move(self), name](const AnyView* args, int32_t num_args, Any* /*result*/) {
          self->Launch(name, args, num_args);
        });
  }

  std::optional<Bytes> SaveToBytes() const override {
    runtime::ByteWriter out;
    out.U32(kKernelModuleFormatVersion);
    out.Str(payload_);
    out.U32(static_cast<uint32_t>(kernel_names_.size()));
    for (const std::string& name : kernel_names_) out.Str(name);
    return Bytes(std::string_view(out.bytes()));
  }

 protected:
  KernelModuleObj(std::string payload, std::vector<std::string> kernel_names)
      : payload_(std::move(payload)), kernel_names_(std::move(kernel_names)) {}

  /// Runs kernel `name` (one of kernel_names()) with the backend's launch convention.
  virtual void Launch(const std::string& name, const AnyView* args, int32_t num_args) = 0;

  /// The device of the kernel's tensor arguments, which must all be `device_type` memory on one
  /// device; device 0 when there are none. `label` ("CUDA") names the kind in errors.
  static int32_t TensorArgumentsDevice(const std::string& kernel, const AnyView* args,
                                       int32_t num_args, int32_t device_type, const char* label) {
    const char* kind = runtime::DeviceTypeName(device_type);
    std::optional<int32_t> device_id;
    int32_t first = -1;
    for (int32_t i = 0; i < num_args; ++i) {
      std::optional<DLTensor*> tensor = args[i].as<DLTensor*>();
      if (!tensor.has_value() || *tensor == nullptr) continue;
      const DLDevice where = (*tensor)->device;
      KILN_CHECK(where.device_type == device_type, ValueError)
          << "argument #" << i << " of " << label << " kernel '" << kernel << "' is "
          << DescribeTensor(**tensor) << "; " << label << " kernels take " << label << " memory";
      if (!device_id.has_value()) {
        device_id = where.device_id;
        first = i;
      }
      KILN_CHECK(where.device_id == *device_id, ValueError)
          << "arguments of " << label << " kernel '" << kernel << "' are on different devices: #"
          << first << " on " << kind << ":" << *device_id << ", #" << i << " on " << kind << ":"
          << where.device_id;
    }
    return device_id.value_or(0);
  }

  const std::string& payload() const { return payload_; }
  const std::vector<std::string>& kernel_names() const { return kernel_names_; }

 private:
  std::string payload_;
  std::vector<std::string> kernel_names_;
};

/// Kernel names must be non-empty and unique; `module` ("the OpenCL module") names the culprit.
inline void CheckKernelNames(const std::vector<std::string>& names, const std::string& module) {
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    KILN_CHECK(!names[i].empty(), ValueError)
        << "kernel name #" << i << " of " << module << " is empty";
    KILN_CHECK(seen.insert(names[i]).second, ValueError)
        << "kernel '" << names[i] << "' is listed twice in " << module;
  }
}

/// The contents of a saved kernel module.
struct SavedKernelModule {
  std::string payload;
  std::vector<std::string> kernel_names;
};

/// Reads what SaveToBytes wrote. `what` ("the saved OpenCL module") and `library`
/// ("libkiln_runtime_opencl.so") name the input and the reader in errors; `payload_field`
/// ("source", "image") names the payload.
inline SavedKernelModule ParseSavedKernelModule(std::string_view bytes, const std::string& what,
                                                const std::string& library,
                                                const char* payload_field) {
  runtime::ByteReader in(bytes, what);
  const uint32_t version = in.U32("format version");
  KILN_CHECK(version == kKernelModuleFormatVersion, ValueError)
      << what << " has format version " << version << ", but this " << library << " reads version "
      << kKernelModuleFormatVersion;
  SavedKernelModule saved;
  saved.payload = in.Str(payload_field);
  const uint32_t count = in.Count(sizeof(uint64_t), "kernel count");
  for (uint32_t i = 0; i < count; ++i) saved.kernel_names.push_back(in.Str("kernel name"));
  in.ExpectEnd();
  return saved;
}

}  // namespace backend
}  // namespace kiln

#endif  // KILN_BACKENDS_COMMON_KERNEL_MODULE_H_
