/// Static memory planning: which storage (and where in it) each intermediate tensor of a
/// compiled graph lives in, so tensors whose lifetimes do not overlap share bytes.
///
/// The plan has the graph executor's shape (kiln/runtime/graph_executor.h): storages of some
/// bytes, and each tensor at an offset of one storage. A tensor is live from the step that
/// writes it to the last step that reads it, both inclusive, as the executor checks; a step's
/// outputs therefore never share bytes with its own inputs, unless a request says it may take
/// the bytes of one that dies at that step (BufferRequest::over).
#ifndef KILN_RUNTIME_MEMORY_PLAN_H_
#define KILN_RUNTIME_MEMORY_PLAN_H_

#include <kiln/ffi/base.h>

#include <cstdint>
#include <vector>

namespace kiln {
namespace runtime {

/// One tensor to place.
struct BufferRequest {
  int64_t bytes = 0;
  /// First and last step at which it is live, inclusive (first <= last).
  int64_t first_use = 0;
  int64_t last_use = 0;
  /// Graph inputs and outputs: the caller reads or writes them outside the steps, so their
  /// bytes are never shared.
  bool pinned = false;
  /// Another request whose bytes this one may take: the step that last reads that one writes
  /// this one over it (an output in its residual input's storage, design §41). Honoured when
  /// that one's last use is this one's first use, neither is pinned, and no other request took
  /// them first; -1: none.
  int64_t over = -1;
};

struct MemoryPlan {
  /// Bytes of each storage.
  std::vector<int64_t> storage_bytes;
  /// For each request, in order: its storage and its byte offset there.
  std::vector<int64_t> storage_of;
  std::vector<int64_t> offset_of;
  /// The sum of storage_bytes: the memory the executor allocates.
  int64_t total_bytes = 0;
  /// What one storage per tensor would need: the saving is naive_bytes - total_bytes.
  int64_t naive_bytes = 0;
};

/// Places `requests`: each unpinned tensor takes the storage of the request it may be `over`,
/// else reuses a storage no live tensor holds (the smallest that fits, else the largest free
/// one, grown), or gets a new one; pinned tensors get their own. Storage sizes are rounded up to
/// `alignment` bytes. ValueError for a negative size or a lifetime that ends before it starts.
KILN_API MemoryPlan PlanMemory(const std::vector<BufferRequest>& requests, int64_t alignment = 64);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_MEMORY_PLAN_H_
