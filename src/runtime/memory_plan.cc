// Static memory planning by lifetime: greedy storage reuse in order of first use.
//
// The classic scheme (TVM's graph planner, ONNX Runtime's arena planner without offsets): walk
// the tensors in the order they come alive, release the storages of tensors that died before,
// and give each new tensor a released storage. Best fit keeps small tensors out of big
// storages; when none fits, growing the largest free storage is cheaper than a new one.
#include <kiln/ffi/error.h>
#include <kiln/runtime/memory_plan.h>

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>
#include <utility>

namespace kiln {
namespace runtime {
namespace {

int64_t RoundUp(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

void CheckRequest(const BufferRequest& request, size_t index, size_t count) {
  KILN_CHECK(request.bytes >= 0, ValueError)
      << "PlanMemory: buffer " << index << " has a negative size (" << request.bytes << ")";
  KILN_CHECK(request.first_use <= request.last_use, ValueError)
      << "PlanMemory: buffer " << index << " is last used at step " << request.last_use
      << ", before its first use at step " << request.first_use;
  KILN_CHECK(
      request.over < static_cast<int64_t>(count) && request.over != static_cast<int64_t>(index),
      ValueError)
      << "PlanMemory: buffer " << index << " may be over buffer " << request.over
      << ", which is not another of the " << count << " buffers";
}

class Planner {
 public:
  Planner(const std::vector<BufferRequest>& requests, int64_t alignment)
      : requests_(requests), alignment_(alignment) {
    plan_.storage_of.assign(requests.size(), -1);
    holder_of_.assign(requests.size(), -1);
    plan_.offset_of.assign(requests.size(), 0);
  }

  MemoryPlan Run() {
    std::vector<size_t> order(requests_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
      return requests_[a].first_use < requests_[b].first_use;
    });
    for (size_t index : order) {
      const BufferRequest& request = requests_[index];
      ReleaseDeadBefore(request.first_use);
      int64_t storage = TakeOver(request);
      if (storage < 0) storage = request.pinned ? NewStorage(request.bytes) : Reuse(request.bytes);
      plan_.storage_of[index] = storage;
      plan_.naive_bytes += RoundUp(request.bytes, alignment_);
      if (!request.pinned) {
        holder_of_[storage] = static_cast<int64_t>(index);
        live_.push({request.last_use, storage, static_cast<int64_t>(index)});
      }
    }
    plan_.total_bytes =
        std::accumulate(plan_.storage_bytes.begin(), plan_.storage_bytes.end(), int64_t{0});
    return plan_;
  }

 private:
  /// Storages of tensors whose last use is before `step` become free, unless a tensor placed
  /// over one holds it now.
  void ReleaseDeadBefore(int64_t step) {
    while (!live_.empty() && live_.top().last_use < step) {
      const Live dead = live_.top();
      live_.pop();
      if (holder_of_[dead.storage] == dead.request) {
        free_.emplace(plan_.storage_bytes[dead.storage], dead.storage);
      }
    }
  }

  /// The storage of the request `request` may be over, when it may take it (see
  /// BufferRequest::over), grown to fit; else -1.
  int64_t TakeOver(const BufferRequest& request) {
    if (request.over < 0 || request.pinned) return -1;
    const BufferRequest& under = requests_[request.over];
    const int64_t storage = plan_.storage_of[request.over];
    if (under.pinned || storage < 0 || under.last_use != request.first_use ||
        holder_of_[storage] != request.over) {
      return -1;
    }
    plan_.storage_bytes[storage] =
        std::max(plan_.storage_bytes[storage], RoundUp(request.bytes, alignment_));
    return storage;
  }

  int64_t Reuse(int64_t bytes) {
    const int64_t needed = RoundUp(bytes, alignment_);
    if (free_.empty()) return NewStorage(bytes);
    auto fit = free_.lower_bound({needed, -1});
    if (fit == free_.end()) fit = std::prev(free_.end());  // the largest, grown below
    const int64_t storage = fit->second;
    free_.erase(fit);
    plan_.storage_bytes[storage] = std::max(plan_.storage_bytes[storage], needed);
    return storage;
  }

  int64_t NewStorage(int64_t bytes) {
    plan_.storage_bytes.push_back(RoundUp(bytes, alignment_));
    return static_cast<int64_t>(plan_.storage_bytes.size()) - 1;
  }

  const std::vector<BufferRequest>& requests_;
  int64_t alignment_;
  MemoryPlan plan_;
  /// A live unpinned tensor's storage.
  struct Live {
    int64_t last_use;
    int64_t storage;
    int64_t request;
    bool operator>(const Live& other) const { return last_use > other.last_use; }
  };
  /// Earliest death first.
  std::priority_queue<Live, std::vector<Live>, std::greater<>> live_;
  /// Per storage: the request last placed in it (a tensor placed over another takes it over).
  std::vector<int64_t> holder_of_;
  /// (bytes, storage) of storages no live tensor holds.
  std::set<std::pair<int64_t, int64_t>> free_;
};

}  // namespace

MemoryPlan PlanMemory(const std::vector<BufferRequest>& requests, int64_t alignment) {
  KILN_CHECK(alignment > 0, ValueError) << "PlanMemory: alignment must be positive";
  for (size_t i = 0; i < requests.size(); ++i) CheckRequest(requests[i], i, requests.size());
  return Planner(requests, alignment).Run();
}

}  // namespace runtime
}  // namespace kiln
