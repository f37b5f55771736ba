// The "cuda" module kind: see cuda_module.h for the launch convention.
#include "cuda_module.h"

#include <kiln/ffi/registry.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/kernel_module.h"
#include "common/tensor_checks.h"
#include "cuda_common.h"

namespace kiln {
namespace cuda {
namespace {

constexpr const char* kKind = "cuda";
constexpr size_t kJitLogBytes = 8192;
/// The dynamic shared memory every kernel may use without opting in.
constexpr unsigned int kDefaultDynamicSharedBytes = 48 * 1024;

struct Kernel {
  cudaKernel_t handle = nullptr;
  std::vector<size_t> param_sizes;  // bytes of each parameter, from the image
};

/// What an image looks like at its start; cudaLibraryLoadData would reject anything else with
/// a less helpful error, at the first launch rather than at creation.
bool LooksLikeImage(const std::string& image) {
  static const char kElfMagic[] = {0x7f, 'E', 'L', 'F'};
  static const unsigned char kFatbinMagic[] = {0x50, 0xed, 0x55, 0xba};  // 0xba55ed50, LE
  if (image.size() >= 4 && std::memcmp(image.data(), kElfMagic, 4) == 0) return true;
  if (image.size() >= 4 && std::memcmp(image.data(), kFatbinMagic, 4) == 0) return true;
  return image.find(".version") != std::string::npos && image.find(".target") != std::string::npos;
}

class CUDAModuleObj final : public backend::KernelModuleObj {
 public:
  CUDAModuleObj(std::string image, std::vector<std::string> kernel_names)
      : KernelModuleObj(std::move(image), std::move(kernel_names)) {}
  ~CUDAModuleObj() override {
    // The library may outlive the CUDA runtime at process exit; its error is of no use then.
    if (library_ != nullptr) cudaLibraryUnload(library_);
  }

  std::string kind() const override { return kKind; }
  std::string compatibility() const override { return "cuda/1"; }
  std::string runtime_library() const override { return "libkiln_runtime_cuda.so"; }

 private:
  void Launch(const std::string& name, const AnyView* args, int32_t num_args) override {
    const int32_t device_id = TensorArgumentsDevice(name, args, num_args, kDLCUDA, "CUDA");
    Driver::Global().SetDevice(device_id);
    const Kernel kernel = GetKernel(name);
    const int32_t num_params = static_cast<int32_t>(kernel.param_sizes.size());
    const int32_t num_launch = num_args - num_params;
    KILN_CHECK(num_launch == 6 || num_launch == 7, TypeError)
        << "CUDA kernel '" << name << "' takes " << num_params
        << " arguments followed by grid x, y, z, block x, y, z and optionally the dynamic shared "
           "memory bytes, but "
        << num_args << " values were given";
    unsigned int launch[7] = {1, 1, 1, 1, 1, 1, 0};
    static const char* const kLaunchNames[] = {"grid x",
                                               "grid y",
                                               "grid z",
                                               "block x",
                                               "block y",
                                               "block z",
                                               "dynamic shared memory bytes"};
    bool empty = false;
    for (int32_t i = 0; i < num_launch; ++i) {
      const AnyView& value = args[num_params + i];
      KILN_CHECK(value.type_index() == kKilnTypeInt, TypeError)
          << "argument #" << num_params + i << " of CUDA kernel '" << name << "' is "
          << kLaunchNames[i] << " and must be an int, got " << value.type_str();
      const int64_t extent = value.cast<int64_t>();
      KILN_CHECK(extent >= 0 && extent <= UINT32_MAX, ValueError)
          << kLaunchNames[i] << " of CUDA kernel '" << name << "' is out of range: " << extent;
      launch[i] = static_cast<unsigned int>(extent);
      empty = empty || (i < 6 && extent == 0);
    }

    // Each parameter's bytes, 8-byte aligned; cudaLaunchKernel copies them before it returns.
    std::vector<uint64_t> storage(num_params, 0);
    std::vector<void*> pointers(num_params);
    for (int32_t i = 0; i < num_params; ++i) {
      PackArgument(name, i, kernel.param_sizes[i], args[i], &storage[i]);
      pointers[i] = &storage[i];
    }
    if (empty) return;
    if (launch[6] > kDefaultDynamicSharedBytes) {
      AllowDynamicSharedBytes(name, kernel, device_id, launch[6]);
    }
    KILN_CUDA_CHECK(cudaLaunchKernel(static_cast<const void*>(kernel.handle),
                                     dim3(launch[0], launch[1], launch[2]),
                                     dim3(launch[3], launch[4], launch[5]), pointers.data(),
                                     launch[6], nullptr),
                    "cudaLaunchKernel")
        << " (kernel '" << name << "' on CUDA device " << device_id << ", grid (" << launch[0]
        << ", " << launch[1] << ", " << launch[2] << "), block (" << launch[3] << ", " << launch[4]
        << ", " << launch[5] << "))";
  }

  /// Lets `kernel` use `bytes` of dynamic shared memory on `device_id`. Above 48 KiB a kernel
  /// must opt in per device (Volta and newer have up to 227 KiB per block), or the launch fails
  /// with a bare "invalid argument". The limit only ever grows, so it is set once per size.
  void AllowDynamicSharedBytes(const std::string& name, const Kernel& kernel, int32_t device_id,
                               unsigned int bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    unsigned int& allowed = dynamic_shared_allowed_[{name, device_id}];
    if (bytes <= allowed) return;
    const cudaError_t status =
        cudaKernelSetAttributeForDevice(kernel.handle, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes), device_id);
    if (status != cudaSuccess) {
      cudaGetLastError();  // not sticky; keep it from later checks
      int most = 0;
      cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_id);
      KILN_THROW(ValueError) << "CUDA kernel '" << name << "' asks for " << bytes
                             << " bytes of dynamic shared memory, more than CUDA device "
                             << device_id << " allows (at most " << most
                             << " bytes per block, less the kernel's static shared memory): "
                             << ErrorName(status);
    }
    allowed = bytes;
  }

  /// The kernel, loading the image on first use. The library is context-independent: loaded
  /// once, it serves every device.
  Kernel GetKernel(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (library_ == nullptr) library_ = LoadLibrary();
    auto found = kernels_.find(name);
    if (found != kernels_.end()) return found->second;

    Kernel kernel;
    const cudaError_t status = cudaLibraryGetKernel(&kernel.handle, library_, name.c_str());
    if (status != cudaSuccess) {
      cudaGetLastError();  // not sticky; keep it from later checks
      const std::vector<std::string> defined = KernelNamesInImage();
      std::string listed;
      for (const std::string& kernel_name : defined) {
        listed += (listed.empty() ? "" : ", ") + kernel_name;
      }
      // An image whose kernels cannot be listed leaves the runtime's own error to say more.
      KILN_CHECK(
          defined.empty() || std::find(defined.begin(), defined.end(), name) != defined.end(),
          AttributeError)
          << "kernel '" << name
          << "' is listed in the CUDA module but its image defines no such kernel (it defines: "
          << listed << ")";
    }
    KILN_CUDA_CHECK(status, "cudaLibraryGetKernel") << " (kernel '" << name << "')";
    // Parameters are counted by asking for each index until the runtime says there is none.
    for (size_t index = 0;; ++index) {
      size_t offset = 0;
      size_t size = 0;
      if (cudaFuncGetParamInfo(static_cast<const void*>(kernel.handle), index, &offset, &size) !=
          cudaSuccess) {
        cudaGetLastError();
        break;
      }
      kernel.param_sizes.push_back(size);
    }
    return kernels_.emplace(name, std::move(kernel)).first->second;
  }

  cudaLibrary_t LoadLibrary() const {
    // The JIT's error log says what is wrong with a PTX image (the line, the unknown opcode).
    std::string log(kJitLogBytes, '\0');
    cudaJitOption options[] = {cudaJitErrorLogBuffer, cudaJitErrorLogBufferSizeBytes};
    // The JIT options API passes integer values in pointer-sized slots.
    void* values[] = {log.data(),
                      reinterpret_cast<void*>(  // NOLINT(performance-no-int-to-ptr)
                          static_cast<uintptr_t>(log.size()))};
    cudaLibrary_t library = nullptr;
    // payload().c_str() is NUL-terminated, as the runtime requires of PTX text.
    const cudaError_t status =
        cudaLibraryLoadData(&library, payload().c_str(), options, values, 2, nullptr, nullptr, 0);
    if (status == cudaSuccess) return library;
    cudaGetLastError();
    log.resize(std::strlen(log.c_str()));
    KILN_THROW(RuntimeError) << "cannot load the CUDA module with kernels " << JoinedKernelNames()
                             << ": cudaLibraryLoadData failed: " << ErrorName(status)
                             << (log.empty() ? "" : "; JIT log:\n" + log);
  }

  /// The kernels the loaded image defines; empty when the runtime cannot list them.
  std::vector<std::string> KernelNamesInImage() const {
    unsigned int count = 0;
    if (cudaLibraryGetKernelCount(&count, library_) != cudaSuccess) {
      cudaGetLastError();
      return {};
    }
    std::vector<cudaKernel_t> kernels(count);
    if (cudaLibraryEnumerateKernels(kernels.data(), count, library_) != cudaSuccess) {
      cudaGetLastError();
      return {};
    }
    std::vector<std::string> names;
    for (cudaKernel_t kernel : kernels) {
      const char* name = nullptr;
      if (cudaFuncGetName(&name, static_cast<const void*>(kernel)) == cudaSuccess) {
        names.emplace_back(name);
      } else {
        cudaGetLastError();
      }
    }
    return names;
  }

  static void PackArgument(const std::string& kernel_name, int32_t index, size_t size,
                           const AnyView& value, uint64_t* out) {
    auto where = [&] {
      return "argument #" + std::to_string(index) + " (" + std::to_string(size) +
             " bytes) of CUDA kernel '" + kernel_name + "'";
    };
    KILN_CHECK(size == 1 || size == 2 || size == 4 || size == 8, TypeError)
        << where()
        << " is not a pointer or a scalar of 1, 2, 4 or 8 bytes; this backend cannot "
           "pass it";
    const std::optional<DLTensor*> tensor = value.as<DLTensor*>();
    if (tensor.has_value() && *tensor != nullptr) {
      KILN_CHECK(size == sizeof(void*), TypeError) << where() << " is not a pointer, got a tensor";
      void* address = static_cast<char*>((*tensor)->data) + (*tensor)->byte_offset;
      std::memcpy(out, &address, sizeof(address));
      return;
    }
    if (value.type_index() == kKilnTypeFloat) {
      KILN_CHECK(size == 4 || size == 8, TypeError)
          << where() << " cannot take a float: only 4-byte float and 8-byte double are passed";
      if (size == 4) {
        const float narrow = static_cast<float>(value.cast<double>());
        std::memcpy(out, &narrow, sizeof(narrow));
      } else {
        const double wide = value.cast<double>();
        std::memcpy(out, &wide, sizeof(wide));
      }
      return;
    }
    KILN_CHECK(value.type_index() == kKilnTypeInt || value.type_index() == kKilnTypeBool, TypeError)
        << where() << " expects a tensor, an int or a float, got " << value.type_str();
    const int64_t integer = value.cast<int64_t>();
    // Signedness is unknown, so a value fits if it fits either way: [-2^(b-1), 2^b).
    const int bits = static_cast<int>(8 * size);
    KILN_CHECK(
        bits == 64 || (integer >= -(int64_t{1} << (bits - 1)) && integer < (int64_t{1} << bits)),
        ValueError)
        << where() << ": " << integer << " does not fit in " << size << " bytes";
    // Little-endian: the low bytes of the value are the narrow integer.
    std::memcpy(out, &integer, size);
  }

  std::string JoinedKernelNames() const {
    std::string joined;
    for (const std::string& name : kernel_names()) joined += (joined.empty() ? "" : ", ") + name;
    return joined;
  }

  std::mutex mutex_;
  cudaLibrary_t library_ = nullptr;        // guarded by mutex_
  std::map<std::string, Kernel> kernels_;  // guarded by mutex_
  // Dynamic shared memory bytes each (kernel, device) has opted in to; guarded by mutex_.
  std::map<std::pair<std::string, int32_t>, unsigned int> dynamic_shared_allowed_;
};

KILN_REGISTER_GLOBAL("runtime.cuda.ModuleCreate")
    .set_body_typed([](const Bytes& image, const Array<String>& kernel_names) {
      std::vector<std::string> names;
      for (const String& name : kernel_names) names.push_back(name.str());
      return ModuleCreate(std::string(image.view()), std::move(names));
    });

KILN_REGISTER_GLOBAL("runtime.module.load_bytes.cuda").set_body_typed([](const Bytes& bytes) {
  return ModuleLoadFromBytes(bytes.view());
});

}  // namespace

runtime::Module ModuleCreate(std::string image, std::vector<std::string> kernel_names) {
  KILN_CHECK(LooksLikeImage(image), ValueError)
      << "a CUDA module needs PTX text, a cubin or a fatbin; the " << image.size()
      << "-byte image given is none of these";
  backend::CheckKernelNames(kernel_names, "the CUDA module");
  return runtime::Module(make_object<CUDAModuleObj>(std::move(image), std::move(kernel_names)));
}

runtime::Module ModuleLoadFromBytes(std::string_view bytes) {
  backend::SavedKernelModule saved = backend::ParseSavedKernelModule(
      bytes, "the saved CUDA module", "libkiln_runtime_cuda.so", "image");
  return ModuleCreate(std::move(saved.payload), std::move(saved.kernel_names));
}

}  // namespace cuda
}  // namespace kiln
