// Enumeration of OpenCL platforms and devices, and OpenCL error names.
#include "opencl_common.h"

#include <sstream>

namespace kiln {
namespace opencl {

std::string ErrorName(cl_int status) {
  const char* name = nullptr;
  switch (status) {
    case CL_DEVICE_NOT_FOUND: name = "CL_DEVICE_NOT_FOUND"; break;
    case CL_DEVICE_NOT_AVAILABLE: name = "CL_DEVICE_NOT_AVAILABLE"; break;
    case CL_COMPILER_NOT_AVAILABLE: name = "CL_COMPILER_NOT_AVAILABLE"; break;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: name = "CL_MEM_OBJECT_ALLOCATION_FAILURE"; break;
    case CL_OUT_OF_RESOURCES: name = "CL_OUT_OF_RESOURCES"; break;
    case CL_OUT_OF_HOST_MEMORY: name = "CL_OUT_OF_HOST_MEMORY"; break;
    case CL_PROFILING_INFO_NOT_AVAILABLE: name = "CL_PROFILING_INFO_NOT_AVAILABLE"; break;
    case CL_MEM_COPY_OVERLAP: name = "CL_MEM_COPY_OVERLAP"; break;
    case CL_BUILD_PROGRAM_FAILURE: name = "CL_BUILD_PROGRAM_FAILURE"; break;
    case CL_MISALIGNED_SUB_BUFFER_OFFSET: name = "CL_MISALIGNED_SUB_BUFFER_OFFSET"; break;
    case CL_KERNEL_ARG_INFO_NOT_AVAILABLE: name = "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"; break;
    case CL_INVALID_VALUE: name = "CL_INVALID_VALUE"; break;
    case CL_INVALID_DEVICE_TYPE: name = "CL_INVALID_DEVICE_TYPE"; break;
    case CL_INVALID_PLATFORM: name = "CL_INVALID_PLATFORM"; break;
    case CL_INVALID_DEVICE: name = "CL_INVALID_DEVICE"; break;
    case CL_INVALID_CONTEXT: name = "CL_INVALID_CONTEXT"; break;
    case CL_INVALID_COMMAND_QUEUE: name = "CL_INVALID_COMMAND_QUEUE"; break;
    case CL_INVALID_HOST_PTR: name = "CL_INVALID_HOST_PTR"; break;
    case CL_INVALID_MEM_OBJECT: name = "CL_INVALID_MEM_OBJECT"; break;
    case CL_INVALID_BINARY: name = "CL_INVALID_BINARY"; break;
    case CL_INVALID_BUILD_OPTIONS: name = "CL_INVALID_BUILD_OPTIONS"; break;
    case CL_INVALID_PROGRAM: name = "CL_INVALID_PROGRAM"; break;
    case CL_INVALID_PROGRAM_EXECUTABLE: name = "CL_INVALID_PROGRAM_EXECUTABLE"; break;
    case CL_INVALID_KERNEL_NAME: name = "CL_INVALID_KERNEL_NAME"; break;
    case CL_INVALID_KERNEL_DEFINITION: name = "CL_INVALID_KERNEL_DEFINITION"; break;
    case CL_INVALID_KERNEL: name = "CL_INVALID_KERNEL"; break;
    case CL_INVALID_ARG_INDEX: name = "CL_INVALID_ARG_INDEX"; break;
    case CL_INVALID_ARG_VALUE: name = "CL_INVALID_ARG_VALUE"; break;
    case CL_INVALID_ARG_SIZE: name = "CL_INVALID_ARG_SIZE"; break;
    case CL_INVALID_KERNEL_ARGS: name = "CL_INVALID_KERNEL_ARGS"; break;
    case CL_INVALID_WORK_DIMENSION: name = "CL_INVALID_WORK_DIMENSION"; break;
    case CL_INVALID_WORK_GROUP_SIZE: name = "CL_INVALID_WORK_GROUP_SIZE"; break;
    case CL_INVALID_WORK_ITEM_SIZE: name = "CL_INVALID_WORK_ITEM_SIZE"; break;
    case CL_INVALID_GLOBAL_OFFSET: name = "CL_INVALID_GLOBAL_OFFSET"; break;
    case CL_INVALID_EVENT_WAIT_LIST: name = "CL_INVALID_EVENT_WAIT_LIST"; break;
    case CL_INVALID_OPERATION: name = "CL_INVALID_OPERATION"; break;
    case CL_INVALID_BUFFER_SIZE: name = "CL_INVALID_BUFFER_SIZE"; break;
    case CL_INVALID_GLOBAL_WORK_SIZE: name = "CL_INVALID_GLOBAL_WORK_SIZE"; break;
    case -1001: name = "CL_PLATFORM_NOT_FOUND_KHR"; break;  // from cl_khr_icd: no ICD installed
    default: name = "unknown OpenCL error";
  }
  return std::string(name) + " (" + std::to_string(status) + ")";
}

std::string DeviceInfoString(cl_device_id device, cl_device_info param) {
  size_t size = 0;
  if (clGetDeviceInfo(device, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string value(size, '\0');
  if (clGetDeviceInfo(device, param, size, value.data(), nullptr) != CL_SUCCESS) return "";
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return value;
}

std::string PlatformInfoString(cl_platform_id platform, cl_platform_info param) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, param, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string value(size, '\0');
  if (clGetPlatformInfo(platform, param, size, value.data(), nullptr) != CL_SUCCESS) return "";
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  return value;
}

const Workspace& Workspace::Global() {
  static const Workspace* workspace = new Workspace();
  return *workspace;
}

Workspace::Workspace() {
  // A missing ICD loader configuration (no /etc/OpenCL/vendors/*.icd) is the common case of
  // "no OpenCL here": clGetPlatformIDs then fails with CL_PLATFORM_NOT_FOUND_KHR, which is a
  // reason to report, not an error.
  cl_uint num_platforms = 0;
  cl_int status = clGetPlatformIDs(0, nullptr, &num_platforms);
  if (status != CL_SUCCESS || num_platforms == 0) {
    NoteProblem("no OpenCL platform: clGetPlatformIDs " +
                (status != CL_SUCCESS ? "failed: " + ErrorName(status) : "found none") +
                " (is an OpenCL driver installed? Debian: pocl-opencl-icd)");
    return;
  }
  std::vector<cl_platform_id> platforms(num_platforms);
  status = clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  if (status != CL_SUCCESS) {
    NoteProblem("clGetPlatformIDs failed: " + ErrorName(status));
    return;
  }
  for (cl_platform_id platform : platforms) AddPlatform(platform);
}

void Workspace::AddPlatform(cl_platform_id platform) {
  const std::string platform_name = PlatformInfoString(platform, CL_PLATFORM_NAME);
  cl_uint num_devices = 0;
  cl_int status = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices);
  if (status != CL_SUCCESS || num_devices == 0) {
    NoteProblem("platform '" + platform_name + "' has no device" +
                (status != CL_SUCCESS ? ": clGetDeviceIDs failed: " + ErrorName(status) : ""));
    return;
  }
  std::vector<cl_device_id> ids(num_devices);
  status = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, num_devices, ids.data(), nullptr);
  if (status != CL_SUCCESS) {
    NoteProblem("platform '" + platform_name + "': clGetDeviceIDs failed: " + ErrorName(status));
    return;
  }
  const cl_context_properties properties[] = {CL_CONTEXT_PLATFORM,
                                              reinterpret_cast<cl_context_properties>(platform), 0};
  cl_context context =
      clCreateContext(properties, num_devices, ids.data(), nullptr, nullptr, &status);
  if (status != CL_SUCCESS) {
    NoteProblem("platform '" + platform_name + "': clCreateContext failed: " + ErrorName(status));
    return;
  }
  for (cl_device_id id : ids) {
    Device device;
    device.platform = platform;
    device.id = id;
    device.context = context;
    device.name = DeviceInfoString(id, CL_DEVICE_NAME);
    device.queue = clCreateCommandQueue(context, id, 0, &status);
    if (status != CL_SUCCESS) {
      NoteProblem("device '" + device.name + "' of platform '" + platform_name +
                  "': clCreateCommandQueue failed: " + ErrorName(status));
      continue;
    }
    devices_.push_back(device);
  }
}

void Workspace::NoteProblem(const std::string& problem) {
  problems_ += (problems_.empty() ? "" : "; ") + problem;
}

const Device& Workspace::GetDevice(int32_t device_id) const {
  KILN_CHECK(Exists(device_id), ValueError)
      << "OpenCL device " << device_id << " does not exist: " << Describe();
  return devices_[device_id];
}

std::string Workspace::Describe() const {
  std::ostringstream out;
  out << devices_.size() << " OpenCL device" << (devices_.size() == 1 ? "" : "s");
  for (size_t i = 0; i < devices_.size(); ++i) {
    out << (i == 0 ? ": " : ", ") << i << " = " << devices_[i].name << " ("
        << PlatformInfoString(devices_[i].platform, CL_PLATFORM_NAME) << ")";
  }
  if (!problems_.empty()) out << "; " << problems_;
  return out.str();
}

}  // namespace opencl
}  // namespace kiln
