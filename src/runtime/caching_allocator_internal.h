// Private to libkiln_runtime: the caching allocator behind runtime::Empty, one per device.
//
// Size policy (RoundAllocationSize): a request is rounded up to its size class and served from
// that class's free list when it can be, from the device otherwise.
//   up to 4 KiB     multiples of 64 B           (waste < 64 B: small tensors, scalars)
//   up to 8 MiB     4 classes per power of two  (waste < 25%, 5, 6, 7, 8 KiB, 10, 12, 14, 16
//   KiB...) above 8 MiB     multiples of 2 MiB          (waste < 2 MiB; huge-page multiples)
// Coarse classes make reuse likely when shapes vary a little (batch sizes, sequence lengths);
// the 2 MiB steps keep the waste of large tensors bounded. Blocks are never split or merged:
// simple, and good enough for inference, whose allocation pattern repeats every run. A failed
// device allocation releases this device's cache and is retried once.
#ifndef KILN_SRC_RUNTIME_CACHING_ALLOCATOR_INTERNAL_H_
#define KILN_SRC_RUNTIME_CACHING_ALLOCATOR_INTERNAL_H_

#include <kiln/runtime/device_api.h>
#include <kiln/runtime/memory.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kiln {
namespace runtime {
namespace internal {

/// Alignment of every block: DLPack promises consumers 256-byte aligned data pointers (as
/// CUDA's allocator gives), which also covers the CPU's cache lines and AVX-512 loads.
constexpr size_t kAllocationAlignment = 256;

constexpr size_t kSmallSizeLimit = size_t{4} << 10;
constexpr size_t kSmallSizeStep = 64;
constexpr size_t kLargeSizeStep = size_t{2} << 20;
constexpr size_t kMediumSizeLimit = size_t{8} << 20;

inline size_t RoundUp(size_t n, size_t step) { return (n + step - 1) / step * step; }

/// The size class of a request for `nbytes` (see the policy above). Zero bytes get the smallest
/// block, so every tensor has a distinct, non-null data pointer.
inline size_t RoundAllocationSize(size_t nbytes) {
  if (nbytes <= kSmallSizeLimit) return RoundUp(std::max<size_t>(nbytes, 1), kSmallSizeStep);
  if (nbytes > kMediumSizeLimit) return RoundUp(nbytes, kLargeSizeStep);
  // A quarter of the power of two just below nbytes: four classes per doubling.
  const int top_bit = 63 - __builtin_clzll(static_cast<unsigned long long>(nbytes - 1));
  return RoundUp(nbytes, size_t{1} << (top_bit - 2));
}

/// A caching allocator over one device. Thread-safe.
class CachingAllocator {
 public:
  /// A block handed out by Allocate; give it back to its owner's Free.
  struct Block {
    void* ptr;
    size_t size;  // the size class, not the size requested
    CachingAllocator* owner;
  };

  CachingAllocator(DLDevice device, DeviceApiRef api) : device_(device), api_(api) {}
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  /// The allocator of `device`, made on first use and kept for the process: tensors may be
  /// freed during static destruction. A RuntimeError when no backend provides the device,
  /// a ValueError when the backend says the device does not exist.
  static CachingAllocator& Get(DLDevice device);
  /// The allocator of `device` if one has been made, else nullptr.
  static CachingAllocator* Find(DLDevice device);
  /// Every allocator made so far.
  static std::vector<CachingAllocator*> All();

  /// A block of at least `nbytes`, aligned to kAllocationAlignment. Owned by the caller until
  /// passed to Free.
  Block* Allocate(size_t nbytes);
  /// Keeps `block` for reuse. Never throws: it runs in tensor destructors.
  void Free(Block* block) noexcept;
  /// Returns every cached block to the device; the bytes given back.
  size_t ReleaseCached();
  AllocatorStats Stats() const;

 private:
  Block* TakeCached(size_t size);
  void* AllocateFromDevice(size_t size);
  void RecordInUse(size_t size);

  const DLDevice device_;
  const DeviceApiRef api_;  // backends are never unloaded, so the table outlives us
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<Block*>> free_blocks_;  // by size class, LIFO
  AllocatorStats stats_;
};

}  // namespace internal
}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_CACHING_ALLOCATOR_INTERNAL_H_
