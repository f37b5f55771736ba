// The CPU device API, registered as "device_api.cpu": host memory, memcpy, nothing to sync.
#include <unistd.h>
#include <sys/utsname.h>

#include <kiln/runtime/device_api.h>
#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "tensor_util_internal.h"

namespace kiln {
namespace runtime {
namespace {

/// Every CPU allocation is aligned at least to a cache line, so no two tensors share one and
/// vector loads of a tensor's first element never straddle lines.
constexpr size_t kMinAlignment = 64;

/// A copy is split across the pool in pieces of this size: one thread cannot saturate a
/// server's memory bandwidth, and pieces this large keep the split's overhead invisible.
constexpr int64_t kCopyGrainBytes = int64_t{4} << 20;

/// The "model name" of /proc/cpuinfo ("AMD EPYC 7763 64-Core Processor"), else the machine
/// architecture from uname ("aarch64": ARM kernels print no model name).
std::string ReadCpuName() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) return line.substr(start);
  }
  utsname names{};
  return uname(&names) == 0 ? std::string(names.machine) : std::string("cpu");
}

int64_t TotalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) * page_size : 0;
}

/// Copies `nbytes`; in parallel when the ranges are disjoint and large enough to gain from it.
void CopyBytes(const char* src, char* dst, int64_t nbytes) {
  const bool overlap = src < dst + nbytes && dst < src + nbytes;
  if (overlap) {
    std::memmove(dst, src, static_cast<size_t>(nbytes));
    return;
  }
  ParallelFor(0, nbytes, kCopyGrainBytes, [src, dst](int64_t begin, int64_t end) {
    std::memcpy(dst + begin, src + begin, static_cast<size_t>(end - begin));
  });
}

class CpuDeviceAPI final : public DeviceAPI {
 public:
  Any GetAttr(int32_t device_id, KilnDeviceAttr attr) override {
    if (attr == kKilnDeviceAttrExist) return device_id == 0;
    if (attr == kKilnDeviceAttrDeviceCount) return int64_t{1};
    CheckDeviceId(device_id);
    switch (attr) {
      case kKilnDeviceAttrName: return Name();
      case kKilnDeviceAttrTotalMemory: return TotalMemoryBytes();
      case kKilnDeviceAttrMultiProcessorCount: return static_cast<int64_t>(NumThreads());
      default: return Any();
    }
  }

  void* Alloc(int32_t device_id, size_t nbytes, size_t alignment) override {
    CheckDeviceId(device_id);
    KILN_CHECK(alignment == 0 || (alignment & (alignment - 1)) == 0, ValueError)
        << "cpu allocation alignment must be a power of two, got " << alignment;
    void* ptr = nullptr;
    // Zero bytes still get a block of their own: a distinct, non-null address is what DLPack
    // consumers and the allocator's bookkeeping expect.
    const int status =
        posix_memalign(&ptr, std::max(alignment, kMinAlignment), std::max<size_t>(nbytes, 1));
    KILN_CHECK(status == 0, MemoryError)
        << "out of memory: cannot allocate " << nbytes << " bytes on cpu:0";
    return ptr;
  }

  void Free(int32_t device_id, void* ptr) override {
    CheckDeviceId(device_id);
    std::free(ptr);
  }

  void Copy(const DLTensor& from, DLTensor& to, KilnStreamHandle /*stream*/) override {
    CheckCpuTensor(from, "source");
    CheckCpuTensor(to, "destination");
    const int64_t nbytes = CompactBytes(from);
    KILN_CHECK(nbytes == CompactBytes(to), ValueError)
        << "cpu copy needs tensors of equal size: the source " << internal::ShapeToString(from)
        << " " << DataTypeToString(from.dtype) << " has " << nbytes << " bytes, the destination "
        << internal::ShapeToString(to) << " " << DataTypeToString(to.dtype) << " has "
        << CompactBytes(to);
    if (nbytes == 0) return;
    CopyBytes(internal::DataStart(from), internal::DataStart(to), nbytes);
  }

  void Sync(int32_t device_id, KilnStreamHandle /*stream*/) override {
    CheckDeviceId(device_id);  // copies are synchronous: nothing is ever pending
  }

 private:
  static void CheckDeviceId(int32_t device_id) {
    KILN_CHECK(device_id == 0, ValueError)
        << "the cpu is device 0 (all cores are one device), got device_id " << device_id;
  }
  static void CheckCpuTensor(const DLTensor& tensor, const char* role) {
    KILN_CHECK(tensor.device.device_type == kDLCPU, ValueError)
        << "the cpu device API copies between cpu tensors only; the " << role << " is on "
        << internal::DeviceToString(tensor.device);
    CheckDeviceId(tensor.device.device_id);
    KILN_CHECK(IsCompact(tensor), ValueError)
        << "cpu copy needs compact tensors; the " << role << " of shape "
        << internal::ShapeToString(tensor) << " has strides";
    KILN_CHECK(tensor.data != nullptr || CompactBytes(tensor) == 0, ValueError)
        << "the " << role << " of shape " << internal::ShapeToString(tensor)
        << " has no data pointer";
  }
  /// /proc/cpuinfo does not change while we run: read it once.
  static const std::string& Name() {
    static const std::string name = ReadCpuName();
    return name;
  }
};

KILN_REGISTER_DEVICE_API("cpu", CpuDeviceAPI);

}  // namespace
}  // namespace runtime
}  // namespace kiln
