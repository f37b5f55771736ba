/// Tensor memory on any device: allocation through each device's caching allocator, and copies.
#ifndef KILN_RUNTIME_MEMORY_H_
#define KILN_RUNTIME_MEMORY_H_

#include <kiln/ffi/tensor.h>
#include <kiln/runtime/c_device_api.h>

#include <cstdint>
#include <vector>

namespace kiln {
namespace runtime {

/// A compact, uninitialized tensor on `device`, from that device's caching allocator (blocks
/// are kept for reuse when freed). Thread-safe.
KILN_API Tensor Empty(const std::vector<int64_t>& shape, DLDataType dtype, DLDevice device);

/// Copies `from` into `to` (same shape and dtype): CPU<->device or within a kind when both are
/// compact; any strides (in elements, negative ones too) when both are on the CPU.
KILN_API void CopyTensor(const Tensor& from, const Tensor& to, KilnStreamHandle stream = nullptr);

struct AllocatorStats {
  int64_t bytes_in_use = 0;  ///< handed out and not yet freed
  int64_t bytes_cached = 0;  ///< freed, kept for reuse
  int64_t peak_bytes_in_use = 0;
  int64_t allocations = 0;  ///< requests served
  int64_t cache_hits = 0;   ///< requests served from the cache
};

/// Counters of the caching allocator of `device`.
KILN_API AllocatorStats GetAllocatorStats(DLDevice device);
/// Returns every cached block to its device.
KILN_API void ReleaseCachedMemory();

/// Hands the pages wholly inside [data, data + size) back to the kernel. Only for memory mapped
/// read-only from a file and never written (a loaded artifact's embedded bytes): read again, the
/// pages come back from the file, so only the process's resident memory changes.
KILN_API void ReleaseMappedPages(const void* data, size_t size);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_MEMORY_H_
