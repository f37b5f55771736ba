// Shape plans (shape_plan_internal.h). Planning a signature evaluates each entry's shape and
// runs the same greedy lifetime planner the compiler runs on static graphs: linear in the
// entries and nodes, so a new input shape costs well under a millisecond for a CNN's graph.
#include <kiln/runtime/memory_plan.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

#include "shape_plan_internal.h"

namespace kiln {
namespace runtime {
namespace internal {
namespace {

/// The compact bytes of `shape` x `dtype` (the shape was checked when its plan was made).
int64_t NumBytes(const std::vector<int64_t>& shape, DLDataType dtype) {
  int64_t bytes = ElementBytes(dtype);
  for (int64_t extent : shape) bytes *= extent;
  return bytes;
}

/// `plan`'s entries at `signature` laid out in `bounding`'s storages, when each fits the place
/// it has there (it does unless an extent shrinks as a size grows); nullopt otherwise.
std::optional<ShapePlan> WithinBounds(const Graph& graph, ShapePlan plan,
                                      const ShapePlan& bounding) {
  for (size_t i = 0; i < graph.entries.size(); ++i) {
    const int64_t bytes = NumBytes(plan.shapes[i], graph.entries[i].dtype);
    const int64_t room = NumBytes(bounding.shapes[i], graph.entries[i].dtype);
    if (bytes > room) return std::nullopt;
  }
  plan.storage_bytes = bounding.storage_bytes;
  plan.storage_of = bounding.storage_of;
  plan.offset_of = bounding.offset_of;
  plan.total_bytes = bounding.total_bytes;
  return plan;
}

/// ValueError with the check's message when one of the graph's checks fails at `signature`.
void CheckSizes(const Graph& graph, const std::vector<int64_t>& signature) {
  for (size_t i = 0; i < graph.checks.size(); ++i) {
    if (graph.check_definition[i] >= 0) continue;  // checked once its late sizes are read
    const GraphCheck& check = graph.checks[i];
    const std::vector<int64_t> sides =
        graph.signature.Evaluate({check.lhs, check.rhs}, signature, "a size check");
    CheckHolds(check, sides[0], sides[1]);
  }
}

}  // namespace

void CheckHolds(const GraphCheck& check, int64_t lhs, int64_t rhs) {
  const bool holds = check.relation == "==" ? lhs == rhs : lhs >= rhs;
  KILN_CHECK(holds, ValueError) << check.message << "\n  (a run-time size check: " << check.lhs
                                << " " << check.relation << " " << check.rhs << " fails, with "
                                << check.lhs << " = " << lhs << " and " << check.rhs << " = " << rhs
                                << ")";
}

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
    if (graph.is_late(static_cast<int64_t>(i))) {
      // Allocated by the run once its sizes are read; a placeholder of its rank meanwhile.
      plan.shapes.emplace_back(entry.shape.size(), 0);
      requests.push_back(BufferRequest{0, 0, 0, false});
      continue;
    }
    std::vector<int64_t> shape = graph.signature.Evaluate(
        entry.shape, plan.signature, "entry " + std::to_string(i) + " of the graph");
    // A returned entry's node allocates it: it takes no bytes of the plan.
    int64_t bytes = graph.returned[i] ? 0 : ElementBytes(entry.dtype);
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
    const int64_t under = graph.placed_over[i];
    if (under >= 0 && !graph.allocated_by_run(static_cast<int64_t>(i)) &&
        !graph.allocated_by_run(under)) {
      requests.back().over = under;
    }
  }
  CheckSizes(graph, plan.signature);
  MemoryPlan memory = PlanMemory(requests);
  plan.storage_bytes = std::move(memory.storage_bytes);
  plan.storage_of = std::move(memory.storage_of);
  plan.offset_of = std::move(memory.offset_of);
  plan.total_bytes = memory.total_bytes;
  return plan;
}

ShapePlanCache::ShapePlanCache(const Graph& graph, size_t capacity)
    : graph_(graph),
      capacity_(graph.planned_ahead ? 1 : capacity),
      upper_bounds_(graph.signature.variables().size()) {
  if (graph.planned_ahead) plans_.push_back(std::make_shared<const ShapePlan>(PlanAhead(graph)));
}

void ShapePlanCache::SetUpperBounds(const std::map<std::string, int64_t>& bounds) {
  const std::vector<std::string>& variables = graph_.signature.variables();
  std::vector<std::optional<int64_t>> upper(variables.size());
  for (const auto& [name, bound] : bounds) {
    auto it = std::find(variables.begin(), variables.end(), name);
    std::string known;
    for (const std::string& variable : variables) known += (known.empty() ? "" : ", ") + variable;
    KILN_CHECK(it != variables.end(), ValueError)
        << "set_upper_bounds: the model has no size '" << name
        << "' (its sizes: " << (known.empty() ? "none, its shapes are static" : known) << ")";
    KILN_CHECK(bound >= 0, ValueError)
        << "set_upper_bounds: the bound of '" << name << "' must be >= 0, got " << bound;
    upper[it - variables.begin()] = bound;
  }
  std::shared_ptr<const ShapePlan> bounding;
  if (!variables.empty() && std::all_of(upper.begin(), upper.end(),
                                        [](const auto& bound) { return bound.has_value(); })) {
    std::vector<int64_t> at_bounds;
    at_bounds.reserve(upper.size());
    for (const auto& bound : upper) at_bounds.push_back(*bound);
    bounding = std::make_shared<const ShapePlan>(PlanForSignature(graph_, at_bounds));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  upper_bounds_ = std::move(upper);
  bounding_plan_ = std::move(bounding);
  if (!graph_.planned_ahead) plans_.clear();
}

std::shared_ptr<const ShapePlan> ShapePlanCache::Plan(
    const std::vector<int64_t>& signature, const std::shared_ptr<const ShapePlan>& bounding) const {
  ShapePlan plan = PlanForSignature(graph_, signature);
  if (bounding == nullptr) return std::make_shared<const ShapePlan>(std::move(plan));
  std::optional<ShapePlan> bounded = WithinBounds(graph_, plan, *bounding);
  return std::make_shared<const ShapePlan>(bounded.has_value() ? std::move(*bounded)
                                                               : std::move(plan));
}

std::shared_ptr<const ShapePlan> ShapePlanCache::Get(const std::vector<int64_t>& signature) {
  std::shared_ptr<const ShapePlan> bounding;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bounding = bounding_plan_;
    for (size_t i = 0; i < signature.size(); ++i) {
      KILN_CHECK(!upper_bounds_[i].has_value() || signature[i] <= *upper_bounds_[i], ValueError)
          << "the size '" << graph_.signature.variables()[i] << "' is " << signature[i]
          << ", over its upper bound " << *upper_bounds_[i] << " (set_upper_bounds)";
    }
    auto found = std::find_if(plans_.begin(), plans_.end(),
                              [&](const auto& plan) { return plan->signature == signature; });
    if (found != plans_.end()) {
      plans_.splice(plans_.begin(), plans_, found);
      return plans_.front();
    }
  }
  // Planned outside the lock: other signatures need not wait. Two threads may plan the same
  // signature at once; both plans are equal and the cache keeps one.
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const ShapePlan> plan = Plan(signature, bounding);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::lock_guard<std::mutex> lock(mutex_);
  planning_seconds_ += took.count();
  ++plans_made_;
  plans_.push_front(plan);
  if (plans_.size() > capacity_) plans_.pop_back();
  return plan;
}

int64_t ShapePlanCache::plans_made() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return plans_made_;
}

double ShapePlanCache::planning_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return planning_seconds_;
}

}  // namespace internal
}  // namespace runtime
}  // namespace kiln
