/// Private to libkiln_runtime_cuda.so: whether CUDA can be used here (probed once), and error
/// checking for CUDA runtime calls.
///
/// The backend links the CUDA runtime statically and calls only the runtime API, which loads
/// the driver (libcuda.so.1) itself when first used. So the backend loads on a machine without
/// a driver, and the probe turns "no driver", "driver too old" or "no device" into a reason
/// (runtime.cuda.Status) instead of a failed load.
#ifndef KILN_BACKENDS_CUDA_CUDA_COMMON_H_
#define KILN_BACKENDS_CUDA_CUDA_COMMON_H_

#include <cuda_runtime_api.h>

#include <kiln/ffi/error.h>

#include <cstdint>
#include <string>

namespace kiln {
namespace cuda {

/// "cudaErrorInvalidValue (1): invalid argument".
std::string ErrorName(cudaError_t status);

/// Checks a CUDA status: `KILN_CUDA_CHECK(cudaFree(p), "cudaFree") << " (more context)";`
/// throws RuntimeError "cudaFree failed: cudaErrorInvalidValue (1): invalid argument (...)".
#define KILN_CUDA_CHECK(call, what)                                                     \
  if (const cudaError_t kiln_cuda_status_ = (call); kiln_cuda_status_ == cudaSuccess) { \
  } else                                                                                \
    KILN_THROW(RuntimeError) << what << " failed: " << ::kiln::cuda::ErrorName(kiln_cuda_status_)

/// What the CUDA runtime found when first asked. Immutable after the probe, so thread-safe.
class Driver {
 public:
  /// Probes on first use (cudaGetDeviceCount); never throws.
  static const Driver& Global();

  int32_t num_devices() const { return num_devices_; }
  bool Exists(int32_t device_id) const { return device_id >= 0 && device_id < num_devices_; }
  /// Why CUDA cannot be used ("CUDA driver not found: ..."), or "" when it can.
  const std::string& problem() const { return problem_; }
  /// Makes `device_id` current for this thread; ValueError naming the devices there are, or
  /// RuntimeError with the problem when CUDA cannot be used at all.
  void SetDevice(int32_t device_id) const;

 private:
  Driver();
  int32_t num_devices_ = 0;
  std::string problem_;
};

/// "12.4" from a CUDA version number (12040).
std::string VersionString(int version);

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_BACKENDS_CUDA_CUDA_COMMON_H_
