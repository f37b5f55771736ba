/// Private to libkiln_runtime_opencl.so: the OpenCL devices of this process (one workspace,
/// created on first use) and error checking for OpenCL calls.
///
/// Devices are numbered across platforms in the order the ICD loader reports them: device_id 0
/// is the first device of the first platform. The devices of one platform share one context,
/// so a buffer can be copied between them with clEnqueueCopyBuffer.
#ifndef KILN_BACKENDS_OPENCL_OPENCL_COMMON_H_
#define KILN_BACKENDS_OPENCL_OPENCL_COMMON_H_

#include <CL/cl.h>

#include <kiln/ffi/error.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace opencl {

/// "CL_INVALID_VALUE (-30)".
std::string ErrorName(cl_int status);

/// Checks an OpenCL status: `KILN_CL_CHECK(clFinish(q), "clFinish") << " (more context)";`
/// throws RuntimeError "clFinish failed: CL_INVALID_COMMAND_QUEUE (-36) (more context)".
#define KILN_CL_CHECK(call, what)                                             \
  if (const cl_int kiln_cl_status_ = (call); kiln_cl_status_ == CL_SUCCESS) { \
  } else                                                                      \
    KILN_THROW(RuntimeError) << what << " failed: " << ::kiln::opencl::ErrorName(kiln_cl_status_)

/// One usable OpenCL device. The handles live as long as the process (see Workspace).
struct Device {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context context = nullptr;      ///< shared by the devices of `platform`
  cl_command_queue queue = nullptr;  ///< the default stream: in order, created with the device
  std::string name;
};

/// The OpenCL devices found when the workspace was first used. Thread-safe: it is immutable
/// after construction, and OpenCL's own calls are thread-safe.
class Workspace {
 public:
  /// Enumerates on first use and is never destroyed: backends are never unloaded, and releasing
  /// queues from a static destructor would race with the ICD loader's own teardown.
  static const Workspace& Global();

  int32_t num_devices() const { return static_cast<int32_t>(devices_.size()); }
  bool Exists(int32_t device_id) const { return device_id >= 0 && device_id < num_devices(); }
  /// The device, or ValueError naming the devices there are (or why there are none).
  const Device& GetDevice(int32_t device_id) const;
  /// Why devices are missing: every platform or device that could not be set up, with its
  /// OpenCL error; empty when everything found could be used.
  const std::string& problems() const { return problems_; }
  /// "1 OpenCL device: 0 = pthread-... (Portable Computing Language)", or the problems.
  std::string Describe() const;

 private:
  Workspace();
  void AddPlatform(cl_platform_id platform);
  void NoteProblem(const std::string& problem);

  std::vector<Device> devices_;
  std::string problems_;
};

/// A string property of a device (CL_DEVICE_NAME, ...), without the terminating NUL.
std::string DeviceInfoString(cl_device_id device, cl_device_info param);
/// A string property of a platform (CL_PLATFORM_NAME, ...).
std::string PlatformInfoString(cl_platform_id platform, cl_platform_info param);

}  // namespace opencl
}  // namespace kiln

#endif  // KILN_BACKENDS_OPENCL_OPENCL_COMMON_H_
