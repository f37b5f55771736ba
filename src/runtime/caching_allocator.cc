// The caching allocator behind runtime::Empty; policy in caching_allocator_internal.h.
#include <kiln/runtime/device_api.h>

#include <exception>
#include <map>
#include <memory>
#include <shared_mutex>
#include <utility>

#include "caching_allocator_internal.h"
#include "tensor_util_internal.h"

namespace kiln {
namespace runtime {
namespace internal {
namespace {

/// Requests above this are refused before rounding, which could otherwise overflow.
constexpr size_t kMaxAllocationBytes = size_t{1} << 62;

/// Every allocator made, by (device_type, device_id). Leaked like the allocators themselves.
struct AllocatorTable {
  std::shared_mutex mutex;
  std::map<std::pair<int32_t, int32_t>, CachingAllocator*> allocators;
};

AllocatorTable& Table() {
  static auto* table = new AllocatorTable();
  return *table;
}

bool SameDevice(DLDevice a, DLDevice b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}

/// Checks with the backend that `device` exists; done once per device, when its allocator is
/// made, so Empty on a bad device_id fails with a message instead of deep in a driver.
void CheckDeviceExists(const DeviceApiRef& api, DLDevice device) {
  if (api.GetAttr(device.device_id, kKilnDeviceAttrExist).cast<bool>()) return;
  const std::optional<int64_t> count =
      api.GetAttr(device.device_id, kKilnDeviceAttrDeviceCount).as<int64_t>();
  KILN_THROW(ValueError) << "device " << DeviceToString(device) << " does not exist"
                         << (count.has_value()
                                 ? " (" + std::to_string(*count) + " " +
                                       DeviceTypeName(device.device_type) + " device(s) found)"
                                 : std::string());
}

CachingAllocator* Create(DLDevice device) {
  // Outside the table's lock: the backend lookup goes through the registry, maybe a driver.
  const DeviceApiRef api = DeviceApiRef::Get(device.device_type);
  CheckDeviceExists(api, device);
  AllocatorTable& table = Table();
  std::unique_lock<std::shared_mutex> lock(table.mutex);
  auto [it, inserted] =
      table.allocators.emplace(std::make_pair(device.device_type, device.device_id), nullptr);
  if (inserted) it->second = new CachingAllocator(device, api);
  return it->second;
}

}  // namespace

CachingAllocator* CachingAllocator::Find(DLDevice device) {
  AllocatorTable& table = Table();
  std::shared_lock<std::shared_mutex> lock(table.mutex);
  auto it = table.allocators.find({device.device_type, device.device_id});
  return it == table.allocators.end() ? nullptr : it->second;
}

CachingAllocator& CachingAllocator::Get(DLDevice device) {
  // A thread mostly allocates on one device: remembering the last one skips the table's lock.
  thread_local DLDevice last_device{};
  thread_local CachingAllocator* last_allocator = nullptr;
  if (last_allocator != nullptr && SameDevice(device, last_device)) return *last_allocator;
  CachingAllocator* allocator = Find(device);
  if (allocator == nullptr) allocator = Create(device);
  last_device = device;
  last_allocator = allocator;
  return *allocator;
}

std::vector<CachingAllocator*> CachingAllocator::All() {
  AllocatorTable& table = Table();
  std::shared_lock<std::shared_mutex> lock(table.mutex);
  std::vector<CachingAllocator*> result;
  for (const auto& entry : table.allocators) result.push_back(entry.second);
  return result;
}

CachingAllocator::Block* CachingAllocator::Allocate(size_t nbytes) {
  KILN_CHECK(nbytes <= kMaxAllocationBytes, MemoryError)
      << "cannot allocate " << nbytes << " bytes on " << DeviceToString(device_);
  const size_t size = RoundAllocationSize(nbytes);
  if (Block* block = TakeCached(size)) return block;
  auto block = std::make_unique<Block>(Block{nullptr, size, this});
  block->ptr = AllocateFromDevice(size);
  std::lock_guard<std::mutex> lock(mutex_);
  RecordInUse(size);
  return block.release();
}

CachingAllocator::Block* CachingAllocator::TakeCached(size_t size) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = free_blocks_.find(size);
  if (it == free_blocks_.end() || it->second.empty()) return nullptr;
  Block* block = it->second.back();  // the most recently freed: likeliest still in cache
  it->second.pop_back();
  stats_.bytes_cached -= static_cast<int64_t>(size);
  ++stats_.cache_hits;
  RecordInUse(size);
  return block;
}

void* CachingAllocator::AllocateFromDevice(size_t size) {
  try {
    return api_.Alloc(device_.device_id, size, kAllocationAlignment);
  } catch (const Error&) {
    // What the cache holds may be what the device lacks: give it back and try once more.
    if (ReleaseCached() == 0) throw;
  }
  return api_.Alloc(device_.device_id, size, kAllocationAlignment);
}

/// Caller holds mutex_.
void CachingAllocator::RecordInUse(size_t size) {
  ++stats_.allocations;
  stats_.bytes_in_use += static_cast<int64_t>(size);
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
}

void CachingAllocator::Free(Block* block) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= static_cast<int64_t>(block->size);
  try {
    free_blocks_[block->size].push_back(block);
    stats_.bytes_cached += static_cast<int64_t>(block->size);
  } catch (...) {
    // No memory left even for the free list: hand the block back to the device instead of
    // terminating in a tensor's destructor (and leak it if the device refuses too).
    try {
      api_.Free(device_.device_id, block->ptr);
      delete block;
    } catch (...) {
    }
  }
}

size_t CachingAllocator::ReleaseCached() {
  std::unordered_map<size_t, std::vector<Block*>> blocks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks.swap(free_blocks_);
    stats_.bytes_cached = 0;
  }
  // Outside the lock: a device free may wait for the device (cudaFree synchronizes). Every
  // block is attempted; the first failure is reported after.
  size_t released = 0;
  std::exception_ptr first_error;
  for (const auto& [size, list] : blocks) {
    for (Block* block : list) {
      try {
        api_.Free(device_.device_id, block->ptr);
        released += size;
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
      delete block;
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  return released;
}

AllocatorStats CachingAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace internal
}  // namespace runtime
}  // namespace kiln
