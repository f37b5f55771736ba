// Shape plans (shape_plan_internal.h). Planning a signature evaluates each entry's shape and
// runs the same greedy lifetime planner the compiler runs on static graphs: linear in the
// entries and nodes, so a new input shape costs well under a millisecond for a CNN's graph.
#include <kiln/runtime/memory_plan.h>

#include <algorithm>
#include <string>
#include <utility>

#include "shape_plan_internal.h"

namespace kiln {
namespace runtime {
namespace internal {

ShapePlan PlanAhead(const Graph& graph) {
  ShapePlan plan;
  plan.storage_bytes = graph.storage_bytes;
  for (const GraphEntry& entry : graph.entries) {
    plan.shapes.push_back(graph.signature.Evaluate(entry.shape, {}, "a graph entry"));
    plan.storage_of.push_back(entry.storage);
    plan.offset_of.push_back(entry.offset);
  }
  for (int64_t bytes : plan.storage_bytes) plan.total_bytes += bytes;
  return plan;
}

ShapePlan PlanForSignature(const Graph& graph, std::vector<int64_t> signature) {
  ShapePlan plan;
  plan.signature = std::move(signature);
  const auto last_node = std::max<int64_t>(static_cast<int64_t>(graph.nodes.size()) - 1, 0);
  std::vector<BufferRequest> requests;
  for (size_t i = 0; i < graph.entries.size(); ++i) {
    const GraphEntry& entry = graph.entries[i];
    std::vector<int64_t> shape = graph.signature.Evaluate(
        entry.shape, plan.signature, "entry " + std::to_string(i) + " of the graph");
    int64_t bytes = ElementBytes(entry.dtype);
    for (int64_t extent : shape) {
      KILN_CHECK(!__builtin_mul_overflow(bytes, extent, &bytes), OverflowError)
          << "entry " << i << " of the graph, of shape " << Shape(shape)
          << ", needs more than 2^63 bytes";
    }
    plan.shapes.push_back(std::move(shape));
    // Inputs and outputs are the caller's tensors or returned to the caller: never shared.
    const bool unused = graph.first_use[i] == Graph::kUnused;
    const bool pinned = unused || graph.first_use[i] < 0 ||
                        graph.last_use[i] == static_cast<int64_t>(graph.nodes.size());
    const int64_t first = unused ? 0 : std::clamp<int64_t>(graph.first_use[i], 0, last_node);
    const int64_t last = unused ? 0 : std::clamp<int64_t>(graph.last_use[i], 0, last_node);
    requests.push_back(BufferRequest{bytes, first, last, pinned});
  }
  MemoryPlan memory = PlanMemory(requests);
  plan.storage_bytes = std::move(memory.storage_bytes);
  plan.storage_of = std::move(memory.storage_of);
  plan.offset_of = std::move(memory.offset_of);
  plan.total_bytes = memory.total_bytes;
  return plan;
}

ShapePlanCache::ShapePlanCache(const Graph& graph, size_t capacity)
    : graph_(graph), capacity_(graph.planned_ahead ? 1 : capacity) {
  if (graph.planned_ahead) plans_.push_back(std::make_shared<const ShapePlan>(PlanAhead(graph)));
}

std::shared_ptr<const ShapePlan> ShapePlanCache::Get(const std::vector<int64_t>& signature) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = std::find_if(plans_.begin(), plans_.end(),
                              [&](const auto& plan) { return plan->signature == signature; });
    if (found != plans_.end()) {
      plans_.splice(plans_.begin(), plans_, found);
      return plans_.front();
    }
  }
  // Planned outside the lock: other signatures need not wait. Two threads may plan the same
  // signature at once; both plans are equal and the cache keeps one.
  auto plan = std::make_shared<const ShapePlan>(PlanForSignature(graph_, signature));
  std::lock_guard<std::mutex> lock(mutex_);
  ++plans_made_;
  plans_.push_front(plan);
  if (plans_.size() > capacity_) plans_.pop_back();
  return plan;
}

int64_t ShapePlanCache::plans_made() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plans_made_;
}

}  // namespace internal
}  // namespace runtime
}  // namespace kiln
