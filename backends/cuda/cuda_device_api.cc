// The CUDA device API ("device_api.cuda") over the CUDA runtime API: memory, copies, streams
// and attributes. Every entry first makes the device current for the calling thread, since the
// runtime API acts on the current device.
#include <kiln/runtime/device_api.h>

#include <algorithm>
#include <string>

#include "common/tensor_checks.h"
#include "cuda_common.h"

namespace kiln {
namespace cuda {
namespace {

/// cudaMalloc's guaranteed alignment.
constexpr size_t kMallocAlignment = 256;

bool IsHost(int32_t device_type) { return device_type == kDLCPU || device_type == kDLCUDAHost; }

void* Address(const DLTensor& tensor) {
  return static_cast<char*>(tensor.data) + tensor.byte_offset;
}

int DeviceAttribute(cudaDeviceAttr attr, int32_t device_id) {
  int value = 0;
  KILN_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, device_id), "cudaDeviceGetAttribute")
      << " (device " << device_id << ")";
  return value;
}

class CUDADeviceAPI final : public runtime::DeviceAPI {
 public:
  Any GetAttr(int32_t device_id, KilnDeviceAttr attr) override {
    const Driver& driver = Driver::Global();
    if (attr == kKilnDeviceAttrExist) return driver.Exists(device_id);
    if (attr == kKilnDeviceAttrDeviceCount) return static_cast<int64_t>(driver.num_devices());
    if (attr == kKilnDeviceAttrDriverVersion) {
      int version = 0;
      cudaDriverGetVersion(&version);  // 0, not an error, when there is no driver
      return version == 0 ? Any() : Any(VersionString(version));
    }
    driver.SetDevice(device_id);
    switch (attr) {
      case kKilnDeviceAttrName:
      case kKilnDeviceAttrTotalMemory: {
        cudaDeviceProp properties{};
        KILN_CUDA_CHECK(cudaGetDeviceProperties(&properties, device_id), "cudaGetDeviceProperties");
        if (attr == kKilnDeviceAttrName) return std::string(properties.name);
        return static_cast<int64_t>(properties.totalGlobalMem);
      }
      case kKilnDeviceAttrComputeVersion:
        return std::to_string(DeviceAttribute(cudaDevAttrComputeCapabilityMajor, device_id)) + "." +
               std::to_string(DeviceAttribute(cudaDevAttrComputeCapabilityMinor, device_id));
      case kKilnDeviceAttrMaxThreadsPerBlock:
        return static_cast<int64_t>(DeviceAttribute(cudaDevAttrMaxThreadsPerBlock, device_id));
      case kKilnDeviceAttrMultiProcessorCount:
        return static_cast<int64_t>(DeviceAttribute(cudaDevAttrMultiProcessorCount, device_id));
      default: return Any();
    }
  }

  void* Alloc(int32_t device_id, size_t nbytes, size_t alignment) override {
    Driver::Global().SetDevice(device_id);
    KILN_CHECK(
        alignment == 0 || (alignment <= kMallocAlignment && kMallocAlignment % alignment == 0),
        ValueError)
        << "CUDA allocations are aligned to " << kMallocAlignment << " bytes; alignment "
        << alignment << " was asked for";
    void* ptr = nullptr;
    // cudaMalloc gives nullptr for 0 bytes; like the CPU's, a zero-byte allocation is a real,
    // distinct address, which DLPack consumers and the caching allocator's bookkeeping expect.
    const cudaError_t status = cudaMalloc(&ptr, std::max<size_t>(nbytes, 1));
    if (status == cudaErrorMemoryAllocation) {
      // Not sticky: the device stays usable. Read it so a later cudaGetLastError does not report
      // it, and say MemoryError, as the CPU does, so callers can tell "too big" from "broken".
      cudaGetLastError();
      KILN_THROW(MemoryError) << "out of memory: cudaMalloc failed: " << ErrorName(status)
                              << " (allocating " << nbytes << " bytes on CUDA device " << device_id
                              << ")";
    }
    KILN_CUDA_CHECK(status, "cudaMalloc")
        << " (allocating " << nbytes << " bytes on CUDA device " << device_id << ")";
    return ptr;
  }

  void Free(int32_t device_id, void* ptr) override {
    if (ptr == nullptr) return;
    Driver::Global().SetDevice(device_id);
    KILN_CUDA_CHECK(cudaFree(ptr), "cudaFree") << " (CUDA device " << device_id << ")";
  }

  void Copy(const DLTensor& from, DLTensor& to, KilnStreamHandle stream) override {
    const int32_t from_type = from.device.device_type;
    const int32_t to_type = to.device.device_type;
    KILN_CHECK((from_type == kDLCUDA || IsHost(from_type)) &&
                   (to_type == kDLCUDA || IsHost(to_type)) &&
                   (from_type == kDLCUDA || to_type == kDLCUDA),
               ValueError)
        << "the CUDA device API copies between CUDA and host memory, not from "
        << backend::DescribeTensor(from) << " to " << backend::DescribeTensor(to);
    const size_t nbytes = backend::CheckCopyExtent(from, to);
    if (nbytes == 0) return;
    auto cuda_stream = static_cast<cudaStream_t>(stream);
    // Asynchronous on the stream, with the runtime's rules for pageable host memory: it may be
    // reused when a host-to-device copy returns; device-to-host copies into pageable memory
    // have completed on return, into pinned memory only after Sync.
    if (IsHost(from_type)) {
      Driver::Global().SetDevice(to.device.device_id);
      KILN_CUDA_CHECK(
          cudaMemcpyAsync(Address(to), Address(from), nbytes, cudaMemcpyHostToDevice, cuda_stream),
          "cudaMemcpyAsync")
          << " (copying " << nbytes << " bytes to CUDA device " << to.device.device_id << ")";
    } else if (IsHost(to_type)) {
      Driver::Global().SetDevice(from.device.device_id);
      KILN_CUDA_CHECK(
          cudaMemcpyAsync(Address(to), Address(from), nbytes, cudaMemcpyDeviceToHost, cuda_stream),
          "cudaMemcpyAsync")
          << " (copying " << nbytes << " bytes from CUDA device " << from.device.device_id << ")";
    } else if (from.device.device_id == to.device.device_id) {
      Driver::Global().SetDevice(from.device.device_id);
      KILN_CUDA_CHECK(cudaMemcpyAsync(Address(to), Address(from), nbytes, cudaMemcpyDeviceToDevice,
                                      cuda_stream),
                      "cudaMemcpyAsync")
          << " (copying " << nbytes << " bytes within CUDA device " << from.device.device_id << ")";
    } else {
      // Both ids are checked; the source ends up current, and the stream should be its.
      Driver::Global().SetDevice(to.device.device_id);
      Driver::Global().SetDevice(from.device.device_id);
      KILN_CUDA_CHECK(cudaMemcpyPeerAsync(Address(to), to.device.device_id, Address(from),
                                          from.device.device_id, nbytes, cuda_stream),
                      "cudaMemcpyPeerAsync")
          << " (copying " << nbytes << " bytes from CUDA device " << from.device.device_id << " to "
          << to.device.device_id << ")";
    }
  }

  KilnStreamHandle CreateStream(int32_t device_id) override {
    Driver::Global().SetDevice(device_id);
    cudaStream_t stream = nullptr;
    KILN_CUDA_CHECK(cudaStreamCreate(&stream), "cudaStreamCreate")
        << " (CUDA device " << device_id << ")";
    return stream;
  }

  void FreeStream(int32_t device_id, KilnStreamHandle stream) override {
    if (stream == nullptr) return;  // the default stream is never destroyed
    Driver::Global().SetDevice(device_id);
    KILN_CUDA_CHECK(cudaStreamDestroy(static_cast<cudaStream_t>(stream)), "cudaStreamDestroy")
        << " (CUDA device " << device_id << ")";
  }

  void Sync(int32_t device_id, KilnStreamHandle stream) override {
    Driver::Global().SetDevice(device_id);
    // Errors of earlier asynchronous work (a kernel's bad access) surface here.
    KILN_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
                    "cudaStreamSynchronize")
        << " (CUDA device " << device_id << ")";
  }
};

KILN_REGISTER_DEVICE_API("cuda", CUDADeviceAPI);

// Why CUDA cannot be used here ("CUDA driver not found: ..."), or "" when it can.
KILN_REGISTER_GLOBAL("runtime.cuda.Status").set_body_typed([]() -> std::string {
  return Driver::Global().problem();
});

}  // namespace
}  // namespace cuda
}  // namespace kiln
