// The OpenCL device API ("device_api.opencl"): buffers, copies, queues and attributes of the
// devices in the Workspace.
//
// Memory: the data pointer of an OpenCL tensor is its cl_mem handle cast to void*, and
// DLTensor::byte_offset is an offset into that buffer (never pointer arithmetic on the handle).
// Streams are extra in-order command queues of the same device; the NULL stream is the
// device's default queue.
#include <kiln/runtime/device_api.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/tensor_checks.h"
#include "opencl_common.h"

namespace kiln {
namespace opencl {
namespace {

template <typename T>
T DeviceInfo(cl_device_id device, cl_device_info param) {
  T value{};
  KILN_CL_CHECK(clGetDeviceInfo(device, param, sizeof(T), &value, nullptr), "clGetDeviceInfo");
  return value;
}

cl_mem ToBuffer(void* data) { return static_cast<cl_mem>(data); }

/// The queue to run on: `stream`, which must be a queue of `device`, or the default queue.
cl_command_queue QueueFor(const Device& device, int32_t device_id, KilnStreamHandle stream) {
  if (stream == nullptr) return device.queue;
  auto queue = static_cast<cl_command_queue>(stream);
  cl_device_id owner = nullptr;
  // cl_device_id is an opaque handle: OpenCL writes the handle itself, sizeof(handle) bytes.
  // NOLINTNEXTLINE(bugprone-sizeof-expression)
  KILN_CL_CHECK(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(owner), &owner, nullptr),
                "clGetCommandQueueInfo")
      << " (the stream given for OpenCL device " << device_id << " is not a live queue)";
  KILN_CHECK(owner == device.id, ValueError)
      << "the stream given belongs to another device than OpenCL device " << device_id << " ("
      << device.name << "); create it with CreateStream(" << device_id << ")";
  return queue;
}

/// ValueError unless `[byte_offset, byte_offset + nbytes)` lies inside the tensor's buffer; the
/// OpenCL error for it (CL_INVALID_VALUE) would not say which side of a copy was wrong.
void CheckInsideBuffer(const DLTensor& tensor, size_t nbytes, const char* side) {
  size_t buffer_size = 0;
  KILN_CL_CHECK(clGetMemObjectInfo(ToBuffer(tensor.data), CL_MEM_SIZE, sizeof(buffer_size),
                                   &buffer_size, nullptr),
                "clGetMemObjectInfo")
      << " (the " << side << " tensor's data is not an OpenCL buffer from this backend)";
  KILN_CHECK(tensor.byte_offset <= buffer_size && nbytes <= buffer_size - tensor.byte_offset,
             ValueError)
      << "copy " << side << " " << backend::DescribeTensor(tensor) << ": " << nbytes
      << " bytes at byte_offset " << tensor.byte_offset << " overrun its OpenCL buffer of "
      << buffer_size << " bytes";
}

char* HostAddress(const DLTensor& tensor) {
  return static_cast<char*>(tensor.data) + tensor.byte_offset;
}

class OpenCLDeviceAPI final : public runtime::DeviceAPI {
 public:
  Any GetAttr(int32_t device_id, KilnDeviceAttr attr) override {
    const Workspace& workspace = Workspace::Global();
    if (attr == kKilnDeviceAttrExist) return workspace.Exists(device_id);
    if (attr == kKilnDeviceAttrDeviceCount) return static_cast<int64_t>(workspace.num_devices());
    const Device& device = workspace.GetDevice(device_id);
    switch (attr) {
      case kKilnDeviceAttrName: return device.name;
      case kKilnDeviceAttrTotalMemory:
        return static_cast<int64_t>(DeviceInfo<cl_ulong>(device.id, CL_DEVICE_GLOBAL_MEM_SIZE));
      case kKilnDeviceAttrComputeVersion: return ComputeVersion(device.id);
      case kKilnDeviceAttrMaxThreadsPerBlock:
        return static_cast<int64_t>(DeviceInfo<size_t>(device.id, CL_DEVICE_MAX_WORK_GROUP_SIZE));
      case kKilnDeviceAttrMultiProcessorCount:
        return static_cast<int64_t>(DeviceInfo<cl_uint>(device.id, CL_DEVICE_MAX_COMPUTE_UNITS));
      case kKilnDeviceAttrDriverVersion: return DeviceInfoString(device.id, CL_DRIVER_VERSION);
      default: return Any();
    }
  }

  void* Alloc(int32_t device_id, size_t nbytes, size_t /*alignment*/) override {
    // `alignment` needs no work: the cl_mem is a handle, and the driver aligns every buffer to
    // CL_DEVICE_MEM_BASE_ADDR_ALIGN. OpenCL refuses empty buffers, but a tensor with a zero
    // extent still needs a valid handle to pass to kernels, hence at least one byte.
    const Device& device = Workspace::Global().GetDevice(device_id);
    cl_int status = CL_SUCCESS;
    cl_mem buffer = clCreateBuffer(device.context, CL_MEM_READ_WRITE, std::max<size_t>(nbytes, 1),
                                   nullptr, &status);
    KILN_CL_CHECK(status, "clCreateBuffer")
        << " (allocating " << nbytes << " bytes on OpenCL device " << device_id << ", "
        << device.name << ", whose largest allocation is "
        << DeviceInfo<cl_ulong>(device.id, CL_DEVICE_MAX_MEM_ALLOC_SIZE) << " bytes)";
    return buffer;
  }

  void Free(int32_t device_id, void* ptr) override {
    if (ptr == nullptr) return;
    Workspace::Global().GetDevice(device_id);
    // The buffer is deleted only once the commands already queued on it have finished, so a
    // pending copy or kernel is safe.
    KILN_CL_CHECK(clReleaseMemObject(ToBuffer(ptr)), "clReleaseMemObject")
        << " (freeing " << ptr << " on OpenCL device " << device_id << ")";
  }

  void Copy(const DLTensor& from, DLTensor& to, KilnStreamHandle stream) override {
    const int32_t from_type = from.device.device_type;
    const int32_t to_type = to.device.device_type;
    KILN_CHECK((from_type == kDLOpenCL || from_type == kDLCPU) &&
                   (to_type == kDLOpenCL || to_type == kDLCPU) &&
                   (from_type == kDLOpenCL || to_type == kDLOpenCL),
               ValueError)
        << "the OpenCL device API copies between OpenCL and CPU memory, not from "
        << backend::DescribeTensor(from) << " to " << backend::DescribeTensor(to);
    const size_t nbytes = backend::CheckCopyExtent(from, to);
    if (nbytes == 0) return;  // OpenCL rejects empty transfers

    // Host transfers are blocking: the caller may reuse or free its host memory as soon as Copy
    // returns, as with cudaMemcpyAsync from pageable memory. Unpinned memory gives no overlap
    // to win by returning earlier.
    if (from_type == kDLCPU) {
      const Device& device = Workspace::Global().GetDevice(to.device.device_id);
      CheckInsideBuffer(to, nbytes, "to");
      KILN_CL_CHECK(clEnqueueWriteBuffer(QueueFor(device, to.device.device_id, stream),
                                         ToBuffer(to.data), CL_TRUE, to.byte_offset, nbytes,
                                         HostAddress(from), 0, nullptr, nullptr),
                    "clEnqueueWriteBuffer")
          << " (copying " << nbytes << " bytes to OpenCL device " << to.device.device_id << ")";
      return;
    }
    if (to_type == kDLCPU) {
      const Device& device = Workspace::Global().GetDevice(from.device.device_id);
      CheckInsideBuffer(from, nbytes, "from");
      KILN_CL_CHECK(clEnqueueReadBuffer(QueueFor(device, from.device.device_id, stream),
                                        ToBuffer(from.data), CL_TRUE, from.byte_offset, nbytes,
                                        HostAddress(to), 0, nullptr, nullptr),
                    "clEnqueueReadBuffer")
          << " (copying " << nbytes << " bytes from OpenCL device " << from.device.device_id << ")";
      return;
    }
    CopyBetweenDevices(from, to, nbytes, stream);
  }

  KilnStreamHandle CreateStream(int32_t device_id) override {
    const Device& device = Workspace::Global().GetDevice(device_id);
    cl_int status = CL_SUCCESS;
    cl_command_queue queue = clCreateCommandQueue(device.context, device.id, 0, &status);
    KILN_CL_CHECK(status, "clCreateCommandQueue") << " (OpenCL device " << device_id << ")";
    return queue;
  }

  void FreeStream(int32_t device_id, KilnStreamHandle stream) override {
    if (stream == nullptr) return;  // the default queue is the device's, never freed
    const Device& device = Workspace::Global().GetDevice(device_id);
    cl_command_queue queue = QueueFor(device, device_id, stream);
    KILN_CL_CHECK(clReleaseCommandQueue(queue), "clReleaseCommandQueue");
  }

  void Sync(int32_t device_id, KilnStreamHandle stream) override {
    const Device& device = Workspace::Global().GetDevice(device_id);
    KILN_CL_CHECK(clFinish(QueueFor(device, device_id, stream)), "clFinish")
        << " (OpenCL device " << device_id << ", " << device.name << ")";
  }

 private:
  /// "OpenCL 3.0" from CL_DEVICE_VERSION, which is "OpenCL <major.minor> <vendor text>".
  static std::string ComputeVersion(cl_device_id device) {
    const std::string version = DeviceInfoString(device, CL_DEVICE_VERSION);
    const size_t end = version.find(' ', version.find(' ') + 1);
    return version.substr(0, end);
  }

  void CopyBetweenDevices(const DLTensor& from, DLTensor& to, size_t nbytes,
                          KilnStreamHandle stream) {
    const Device& source = Workspace::Global().GetDevice(from.device.device_id);
    const Device& target = Workspace::Global().GetDevice(to.device.device_id);
    CheckInsideBuffer(from, nbytes, "from");
    CheckInsideBuffer(to, nbytes, "to");
    if (source.context == target.context) {
      // One context: the buffers are visible to both devices; the source's queue orders the
      // copy after the source's pending writes.
      KILN_CL_CHECK(clEnqueueCopyBuffer(QueueFor(source, from.device.device_id, stream),
                                        ToBuffer(from.data), ToBuffer(to.data), from.byte_offset,
                                        to.byte_offset, nbytes, 0, nullptr, nullptr),
                    "clEnqueueCopyBuffer")
          << " (copying " << nbytes << " bytes from OpenCL device " << from.device.device_id
          << " to " << to.device.device_id << ")";
      return;
    }
    // Devices of different platforms share no context: stage through host memory, on each
    // device's default queue (a stream belongs to one context, so it cannot order both sides).
    std::vector<char> staging(nbytes);
    KILN_CL_CHECK(clEnqueueReadBuffer(source.queue, ToBuffer(from.data), CL_TRUE, from.byte_offset,
                                      nbytes, staging.data(), 0, nullptr, nullptr),
                  "clEnqueueReadBuffer")
        << " (staging a copy from OpenCL device " << from.device.device_id << ")";
    KILN_CL_CHECK(clEnqueueWriteBuffer(target.queue, ToBuffer(to.data), CL_TRUE, to.byte_offset,
                                       nbytes, staging.data(), 0, nullptr, nullptr),
                  "clEnqueueWriteBuffer")
        << " (staging a copy to OpenCL device " << to.device.device_id << ")";
  }
};

KILN_REGISTER_DEVICE_API("opencl", OpenCLDeviceAPI);

// Why OpenCL devices are missing (no ICD, a platform without devices, ...), or "" when every
// platform found could be used; for diagnostics and for tests that need a device.
KILN_REGISTER_GLOBAL("runtime.opencl.Status").set_body_typed([]() -> std::string {
  const Workspace& workspace = Workspace::Global();
  if (workspace.num_devices() == 0) return workspace.Describe();
  return workspace.problems();
});

}  // namespace
}  // namespace opencl
}  // namespace kiln
