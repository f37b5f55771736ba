// The probe that decides whether CUDA can be used, and CUDA error names.
#include "cuda_common.h"

#include <dlfcn.h>

namespace kiln {
namespace cuda {
namespace {

/// Whether the driver library itself can be loaded; its dlerror() text otherwise. The runtime
/// reports a missing driver and a too-old one with the same error, and the fix differs.
std::string DriverLibraryProblem() {
  void* handle = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    return reason != nullptr ? reason : "libcuda.so.1 cannot be loaded";
  }
  dlclose(handle);
  return "";
}

std::string DescribeProbeFailure(cudaError_t status) {
  int runtime_version = 0;
  int driver_version = 0;
  cudaRuntimeGetVersion(&runtime_version);
  cudaDriverGetVersion(&driver_version);
  switch (status) {
    case cudaErrorInsufficientDriver: {
      const std::string missing = DriverLibraryProblem();
      if (!missing.empty()) {
        return "CUDA driver not found: " + missing + " (install the NVIDIA driver; " +
               ErrorName(status) + ")";
      }
      return "CUDA driver too old: it supports CUDA " + VersionString(driver_version) +
             ", this backend's runtime is CUDA " + VersionString(runtime_version) + " (" +
             ErrorName(status) + ")";
    }
    case cudaErrorStubLibrary:
      return "CUDA driver not found: the libcuda.so.1 found is the toolkit's stub, not a driver (" +
             ErrorName(status) + ")";
    case cudaErrorNoDevice: return "no CUDA device found (" + ErrorName(status) + ")";
    default: return "CUDA cannot be used: cudaGetDeviceCount failed: " + ErrorName(status);
  }
}

}  // namespace

std::string ErrorName(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + " (" + std::to_string(static_cast<int>(status)) +
         "): " + cudaGetErrorString(status);
}

std::string VersionString(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

const Driver& Driver::Global() {
  static const Driver* driver = new Driver();
  return *driver;
}

Driver::Driver() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    // Not a sticky error, but it stays as the thread's "last error" until read; read it so a
    // later unrelated cudaGetLastError does not report it.
    cudaGetLastError();
    problem_ = DescribeProbeFailure(status);
    return;
  }
  if (count == 0) {
    problem_ = "no CUDA device found (cudaGetDeviceCount returned 0)";
    return;
  }
  num_devices_ = count;
}

void Driver::SetDevice(int32_t device_id) const {
  KILN_CHECK(problem_.empty(), RuntimeError)
      << "CUDA device " << device_id << " cannot be used: " << problem_;
  KILN_CHECK(Exists(device_id), ValueError)
      << "CUDA device " << device_id << " does not exist: there "
      << (num_devices_ == 1 ? "is 1 CUDA device"
                            : "are " + std::to_string(num_devices_) + " CUDA devices");
  KILN_CUDA_CHECK(cudaSetDevice(device_id), "cudaSetDevice") << " (device " << device_id << ")";
}

}  // namespace cuda
}  // namespace kiln
