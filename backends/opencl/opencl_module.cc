// The "opencl" module kind: see opencl_module.h for the launch convention.
#include "opencl_module.h"

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
#include "opencl_common.h"

namespace kiln {
namespace opencl {
namespace {

constexpr const char* kKind = "opencl";

/// How a kernel parameter takes its value.
enum class ParamKind {
  kBuffer,       // global/constant pointer: a tensor's cl_mem
  kSignedInt,    // char, short, int, long
  kUnsignedInt,  // uchar, ushort, uint, ulong
  kFloat,        // float, double
  kUntyped,      // the driver gives no argument info: chosen by the value's type
  kUnsupported,  // __local pointers, images, samplers, vectors, structs
};

struct Param {
  ParamKind kind = ParamKind::kUntyped;
  size_t size = 0;        // bytes of a scalar
  std::string type_name;  // "float*", "int"; empty when untyped
  std::string name;       // as declared in the source; empty when untyped

  std::string Declaration(size_t index) const {
    if (kind == ParamKind::kUntyped) return "arg" + std::to_string(index);
    return type_name + " " + name;
  }
};

struct Kernel {
  cl_kernel handle = nullptr;
  std::vector<Param> params;
};

struct DeviceProgram {
  cl_program program = nullptr;
  std::map<std::string, Kernel> kernels;
};

/// The scalar types a kernel can take by value, by their OpenCL C names.
bool ClassifyScalar(const std::string& type_name, Param* param) {
  static const std::map<std::string, std::pair<ParamKind, size_t>> kScalars = {
      {"char", {ParamKind::kSignedInt, 1}},
      {"uchar", {ParamKind::kUnsignedInt, 1}},
      {"short", {ParamKind::kSignedInt, 2}},
      {"ushort", {ParamKind::kUnsignedInt, 2}},
      {"int", {ParamKind::kSignedInt, 4}},
      {"uint", {ParamKind::kUnsignedInt, 4}},
      {"long", {ParamKind::kSignedInt, 8}},
      {"ulong", {ParamKind::kUnsignedInt, 8}},
      {"float", {ParamKind::kFloat, 4}},
      {"double", {ParamKind::kFloat, 8}},
      {"unsigned char", {ParamKind::kUnsignedInt, 1}},
      {"unsigned short", {ParamKind::kUnsignedInt, 2}},
      {"unsigned int", {ParamKind::kUnsignedInt, 4}},
      {"unsigned long", {ParamKind::kUnsignedInt, 8}}};
  auto found = kScalars.find(type_name);
  if (found == kScalars.end()) return false;
  param->kind = found->second.first;
  param->size = found->second.second;
  return true;
}

std::string KernelArgInfoString(cl_kernel kernel, cl_uint index, cl_kernel_arg_info what) {
  size_t size = 0;
  KILN_CL_CHECK(clGetKernelArgInfo(kernel, index, what, 0, nullptr, &size), "clGetKernelArgInfo");
  std::string value(size, '\0');
  KILN_CL_CHECK(clGetKernelArgInfo(kernel, index, what, size, value.data(), nullptr),
                "clGetKernelArgInfo");
  value.resize(std::strlen(value.c_str()));
  return value;
}

/// The parameter's kind from the argument info that -cl-kernel-arg-info keeps.
Param DescribeParam(cl_kernel kernel, cl_uint index) {
  Param param;
  cl_kernel_arg_address_qualifier address = 0;
  const cl_int status = clGetKernelArgInfo(kernel, index, CL_KERNEL_ARG_ADDRESS_QUALIFIER,
                                           sizeof(address), &address, nullptr);
  if (status == CL_KERNEL_ARG_INFO_NOT_AVAILABLE) return param;  // kUntyped
  KILN_CL_CHECK(status, "clGetKernelArgInfo");
  param.type_name = KernelArgInfoString(kernel, index, CL_KERNEL_ARG_TYPE_NAME);
  param.name = KernelArgInfoString(kernel, index, CL_KERNEL_ARG_NAME);
  const bool is_pointer = !param.type_name.empty() && param.type_name.back() == '*';
  if (is_pointer &&
      (address == CL_KERNEL_ARG_ADDRESS_GLOBAL || address == CL_KERNEL_ARG_ADDRESS_CONSTANT)) {
    param.kind = ParamKind::kBuffer;
  } else if (is_pointer || !ClassifyScalar(param.type_name, &param)) {
    param.kind = ParamKind::kUnsupported;
  }
  return param;
}

/// Releases the sub-buffers made for one launch. The launch keeps what it uses alive: OpenCL
/// deletes a memory object only after the commands queued on it have finished.
class SubBuffers {
 public:
  SubBuffers() = default;
  SubBuffers(const SubBuffers&) = delete;
  SubBuffers& operator=(const SubBuffers&) = delete;
  ~SubBuffers() {
    for (cl_mem buffer : buffers_) clReleaseMemObject(buffer);
  }
  void Add(cl_mem buffer) { buffers_.push_back(buffer); }

 private:
  std::vector<cl_mem> buffers_;
};

class OpenCLModuleObj final : public backend::KernelModuleObj {
 public:
  OpenCLModuleObj(std::string source, std::vector<std::string> kernel_names)
      : KernelModuleObj(std::move(source), std::move(kernel_names)) {}
  ~OpenCLModuleObj() override {
    for (auto& [device_id, program] : programs_) {
      for (auto& [name, kernel] : program.kernels) clReleaseKernel(kernel.handle);
      clReleaseProgram(program.program);
    }
  }

  std::string kind() const override { return kKind; }
  std::string compatibility() const override { return "opencl/1"; }
  std::string runtime_library() const override { return "libkiln_runtime_opencl.so"; }

 private:
  void Launch(const std::string& name, const AnyView* args, int32_t num_args) override {
    const int32_t device_id = TensorArgumentsDevice(name, args, num_args, kDLOpenCL, "OpenCL");
    const Device& device = Workspace::Global().GetDevice(device_id);
    // One lock for building and for launching: a cl_kernel's arguments are state shared by
    // every thread that launches it, so setting them and enqueueing must not interleave.
    std::lock_guard<std::mutex> lock(mutex_);
    const Kernel& kernel = GetKernel(device_id, device, name);
    const int32_t num_params = static_cast<int32_t>(kernel.params.size());
    const int32_t num_dims = num_args - num_params;
    KILN_CHECK(num_dims >= 1 && num_dims <= 3, TypeError)
        << "OpenCL kernel `" << Signature(name, kernel) << "` takes " << num_params
        << " arguments followed by 1 to 3 global work sizes, but " << num_args
        << " values were given";
    size_t global[3] = {1, 1, 1};
    bool empty = false;
    for (int32_t d = 0; d < num_dims; ++d) {
      const AnyView& value = args[num_params + d];
      KILN_CHECK(value.type_index() == kKilnTypeInt, TypeError)
          << "argument #" << num_params + d << " of OpenCL kernel `" << Signature(name, kernel)
          << "` is global work size " << d << " and must be an int, got " << value.type_str();
      const int64_t extent = value.cast<int64_t>();
      KILN_CHECK(extent >= 0, ValueError) << "global work size " << d << " of OpenCL kernel '"
                                          << name << "' cannot be negative, got " << extent;
      global[d] = static_cast<size_t>(extent);
      empty = empty || extent == 0;
    }
    SubBuffers sub_buffers;
    for (int32_t i = 0; i < num_params; ++i) {
      SetArgument(name, kernel, device, i, args[i], &sub_buffers);
    }
    if (empty) return;  // OpenCL 1.2 rejects a zero global size; nothing to run anyway
    KILN_CL_CHECK(clEnqueueNDRangeKernel(device.queue, kernel.handle, num_dims, nullptr, global,
                                         nullptr, 0, nullptr, nullptr),
                  "clEnqueueNDRangeKernel")
        << " (kernel '" << name << "' on OpenCL device " << device_id << ", " << device.name << ")";
  }

  const Kernel& GetKernel(int32_t device_id, const Device& device, const std::string& name) {
    auto program_it = programs_.find(device_id);
    if (program_it == programs_.end()) {
      DeviceProgram built;
      built.program = Build(device_id, device);
      program_it = programs_.emplace(device_id, std::move(built)).first;
    }
    DeviceProgram& program = program_it->second;
    auto kernel_it = program.kernels.find(name);
    if (kernel_it != program.kernels.end()) return kernel_it->second;

    cl_int status = CL_SUCCESS;
    Kernel kernel;
    kernel.handle = clCreateKernel(program.program, name.c_str(), &status);
    KILN_CHECK(status != CL_INVALID_KERNEL_NAME, AttributeError)
        << "kernel '" << name
        << "' is listed in the OpenCL module but its source defines no such kernel (it defines: "
        << KernelNamesInSource(program.program) << ")";
    KILN_CL_CHECK(status, "clCreateKernel") << " (kernel '" << name << "')";
    cl_uint num_params = 0;
    status = clGetKernelInfo(kernel.handle, CL_KERNEL_NUM_ARGS, sizeof(num_params), &num_params,
                             nullptr);
    if (status != CL_SUCCESS) clReleaseKernel(kernel.handle);
    KILN_CL_CHECK(status, "clGetKernelInfo") << " (kernel '" << name << "')";
    try {
      for (cl_uint i = 0; i < num_params; ++i)
        kernel.params.push_back(DescribeParam(kernel.handle, i));
    } catch (...) {
      clReleaseKernel(kernel.handle);
      throw;
    }
    return program.kernels.emplace(name, std::move(kernel)).first->second;
  }

  cl_program Build(int32_t device_id, const Device& device) const {
    const char* text = payload().c_str();
    const size_t length = payload().size();
    cl_int status = CL_SUCCESS;
    cl_program program = clCreateProgramWithSource(device.context, 1, &text, &length, &status);
    KILN_CL_CHECK(status, "clCreateProgramWithSource");
    // -cl-kernel-arg-info keeps parameter names and types, which convert scalar arguments.
    status = clBuildProgram(program, 1, &device.id, "-cl-kernel-arg-info", nullptr, nullptr);
    if (status != CL_SUCCESS) {
      const std::string log = BuildLog(program, device.id);
      clReleaseProgram(program);
      KILN_THROW(RuntimeError) << "cannot build the OpenCL module with kernels "
                               << JoinedKernelNames() << " for OpenCL device " << device_id << " ("
                               << device.name << "): clBuildProgram failed: " << ErrorName(status)
                               << "; build log:\n"
                               << log;
    }
    return program;
  }

  void SetArgument(const std::string& kernel_name, const Kernel& kernel, const Device& device,
                   int32_t index, const AnyView& value, SubBuffers* sub_buffers) const {
    const Param& param = kernel.params[index];
    auto where = [&] {
      return "argument #" + std::to_string(index) + " (`" + param.Declaration(index) +
             "`) of OpenCL kernel '" + kernel_name + "'";
    };
    auto set = [&](size_t size, const void* data) {
      KILN_CL_CHECK(clSetKernelArg(kernel.handle, index, size, data), "clSetKernelArg")
          << " (" << where() << ")";
    };
    const std::optional<DLTensor*> tensor = value.as<DLTensor*>();
    const bool is_tensor = tensor.has_value() && *tensor != nullptr;
    switch (param.kind) {
      case ParamKind::kBuffer: {
        KILN_CHECK(is_tensor, TypeError)
            << where() << " expects a tensor on an OpenCL device, got " << value.type_str();
        cl_mem buffer = BufferOf(**tensor, device, where, sub_buffers);
        set(sizeof(cl_mem), &buffer);
        return;
      }
      case ParamKind::kSignedInt:
      case ParamKind::kUnsignedInt: {
        KILN_CHECK(value.type_index() == kKilnTypeInt || value.type_index() == kKilnTypeBool,
                   TypeError)
            << where() << " expects an int, got " << value.type_str();
        SetInteger(param, value.cast<int64_t>(), where, set);
        return;
      }
      case ParamKind::kFloat: {
        const std::optional<double> number = value.as<double>();
        KILN_CHECK(number.has_value(), TypeError)
            << where() << " expects a float, got " << value.type_str();
        if (param.size == sizeof(cl_float)) {
          const cl_float narrow = static_cast<cl_float>(*number);
          set(sizeof(narrow), &narrow);
        } else {
          const cl_double wide = *number;
          set(sizeof(wide), &wide);
        }
        return;
      }
      case ParamKind::kUntyped: {
        if (is_tensor) {
          cl_mem buffer = BufferOf(**tensor, device, where, sub_buffers);
          set(sizeof(cl_mem), &buffer);
        } else if (value.type_index() == kKilnTypeInt || value.type_index() == kKilnTypeBool) {
          SetInteger(Param{ParamKind::kSignedInt, sizeof(cl_int), "int", ""}, value.cast<int64_t>(),
                     where, set);
        } else if (value.type_index() == kKilnTypeFloat) {
          const cl_float narrow = static_cast<cl_float>(value.cast<double>());
          set(sizeof(narrow), &narrow);
        } else {
          KILN_THROW(TypeError) << where() << " expects a tensor, an int or a float, got "
                                << value.type_str();
        }
        return;
      }
      case ParamKind::kUnsupported:
        KILN_THROW(TypeError) << where() << " has a parameter type this backend cannot pass ("
                              << param.type_name
                              << "); kernels take global/constant pointers and the scalar "
                                 "types char..ulong, float and double";
    }
  }

  template <typename Where, typename Set>
  static void SetInteger(const Param& param, int64_t value, const Where& where, const Set& set) {
    const bool is_signed = param.kind == ParamKind::kSignedInt;
    const int bits = static_cast<int>(8 * param.size);
    bool fits = true;
    if (is_signed && bits < 64) {
      fits = value >= -(int64_t{1} << (bits - 1)) && value < (int64_t{1} << (bits - 1));
    } else if (!is_signed) {
      fits = value >= 0 && (bits == 64 || value < (int64_t{1} << bits));
    }
    KILN_CHECK(fits, ValueError) << where() << ": " << value << " does not fit in "
                                 << param.type_name;
    // Little-endian host and device are assumed, as by every OpenCL driver Kiln targets, so the
    // low bytes of the value are the narrow value.
    set(param.size, &value);
  }

  /// The cl_mem to pass for a tensor: its buffer, or a sub-buffer at its byte_offset.
  template <typename Where>
  static cl_mem BufferOf(const DLTensor& tensor, const Device& device, const Where& where,
                         SubBuffers* sub_buffers) {
    auto buffer = static_cast<cl_mem>(tensor.data);
    if (tensor.byte_offset == 0) return buffer;
    cl_uint align_bits = 0;
    KILN_CL_CHECK(clGetDeviceInfo(device.id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits),
                                  &align_bits, nullptr),
                  "clGetDeviceInfo");
    const uint64_t align = align_bits / 8;
    KILN_CHECK(align != 0 && tensor.byte_offset % align == 0, ValueError)
        << where() << ": byte_offset " << tensor.byte_offset
        << " is not a multiple of the device's buffer alignment (" << align
        << " bytes), so it cannot be passed as an OpenCL sub-buffer";
    size_t buffer_size = 0;
    KILN_CL_CHECK(
        clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof(buffer_size), &buffer_size, nullptr),
        "clGetMemObjectInfo")
        << " (" << where() << " is not an OpenCL buffer from this backend)";
    KILN_CHECK(tensor.byte_offset < buffer_size, ValueError)
        << where() << ": byte_offset " << tensor.byte_offset << " is past the end of its "
        << buffer_size << "-byte buffer";
    const cl_buffer_region region = {static_cast<size_t>(tensor.byte_offset),
                                     buffer_size - static_cast<size_t>(tensor.byte_offset)};
    cl_int status = CL_SUCCESS;
    cl_mem sub = clCreateSubBuffer(buffer, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region,
                                   &status);
    KILN_CL_CHECK(status, "clCreateSubBuffer") << " (" << where() << ")";
    sub_buffers->Add(sub);
    return sub;
  }

  static std::string BuildLog(cl_program program, cl_device_id device) {
    size_t size = 0;
    if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) !=
        CL_SUCCESS) {
      return "(no build log)";
    }
    std::string log(size, '\0');
    if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) !=
        CL_SUCCESS) {
      return "(no build log)";
    }
    log.resize(std::strlen(log.c_str()));
    return log;
  }

  static std::string KernelNamesInSource(cl_program program) {
    size_t size = 0;
    if (clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &size) != CL_SUCCESS) {
      return "unknown";
    }
    std::string names(size, '\0');
    if (clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, size, names.data(), nullptr) !=
        CL_SUCCESS) {
      return "unknown";
    }
    names.resize(std::strlen(names.c_str()));
    for (char& c : names) c = c == ';' ? ',' : c;  // OpenCL separates them with ';'
    return names.empty() ? "no kernels" : names;
  }

  std::string JoinedKernelNames() const {
    std::string joined;
    for (const std::string& name : kernel_names()) joined += (joined.empty() ? "" : ", ") + name;
    return joined;
  }

  static std::string Signature(const std::string& name, const Kernel& kernel) {
    std::string result = name + "(";
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      result += (i == 0 ? "" : ", ") + kernel.params[i].Declaration(i);
    }
    return result + ")";
  }

  std::mutex mutex_;
  std::map<int32_t, DeviceProgram> programs_;  // by device_id, guarded by mutex_
};

KILN_REGISTER_GLOBAL("runtime.opencl.ModuleCreate")
    .set_body_typed([](const String& source, const Array<String>& kernel_names) {
      std::vector<std::string> names;
      for (const String& name : kernel_names) names.push_back(name.str());
      return ModuleCreate(source.str(), std::move(names));
    });

KILN_REGISTER_GLOBAL("runtime.module.load_bytes.opencl").set_body_typed([](const Bytes& bytes) {
  return ModuleLoadFromBytes(bytes.view());
});

}  // namespace

runtime::Module ModuleCreate(std::string source, std::vector<std::string> kernel_names) {
  KILN_CHECK(!source.empty(), ValueError) << "an OpenCL module needs OpenCL C source, got none";
  backend::CheckKernelNames(kernel_names, "the OpenCL module");
  return runtime::Module(make_object<OpenCLModuleObj>(std::move(source), std::move(kernel_names)));
}

runtime::Module ModuleLoadFromBytes(std::string_view bytes) {
  backend::SavedKernelModule saved = backend::ParseSavedKernelModule(
      bytes, "the saved OpenCL module", "libkiln_runtime_opencl.so", "source");
  return ModuleCreate(std::move(saved.payload), std::move(saved.kernel_names));
}

}  // namespace opencl
}  // namespace kiln
