// Private to libkiln_runtime: what the graph executor knows once a call's input shapes are
// known (its signature): every entry's shape and where it lives. A graph planned ahead has
// one such plan; a graph planned at run time gets one per signature, made on the first call
// with it and kept in a small cache shared by the executor's contexts (docs/design.md §20).
#ifndef KILN_SRC_RUNTIME_SHAPE_PLAN_INTERNAL_H_
#define KILN_SRC_RUNTIME_SHAPE_PLAN_INTERNAL_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "graph_executor_internal.h"

namespace kiln {
namespace runtime {
namespace internal {

struct ShapePlan {
  std::vector<int64_t> signature;            ///< the size variables' values
  std::vector<std::vector<int64_t>> shapes;  ///< per entry
  std::vector<int64_t> storage_bytes;
  std::vector<int64_t> storage_of;  ///< per entry
  std::vector<int64_t> offset_of;   ///< per entry
  int64_t total_bytes = 0;          ///< the sum of storage_bytes
};

/// ValueError with `check`'s message unless `lhs relation rhs` holds.
void CheckHolds(const GraphCheck& check, int64_t lhs, int64_t rhs);

/// The plan of a graph planned ahead: its own storages and offsets.
ShapePlan PlanAhead(const Graph& graph);

/// The plan of `graph` at `signature`: every entry's shape evaluated (a ValueError names an
/// entry whose extent comes out negative) and placed by the lifetime planner.
ShapePlan PlanForSignature(const Graph& graph, std::vector<int64_t> signature);

/// The plans of a graph by signature: one for a graph planned ahead, else up to `capacity`,
/// the least recently used dropped first. Thread-safe; a plan stays valid while a caller holds
/// it, even once dropped.
class ShapePlanCache {
 public:
  ShapePlanCache(const Graph& graph, size_t capacity);

  /// The plan for `signature`, made now when the cache has none. A ValueError names a size
  /// over its upper bound.
  std::shared_ptr<const ShapePlan> Get(const std::vector<int64_t>& signature);

  /// Upper bounds of size variables (by name; the others stay unbounded). When every variable
  /// has one, the graph is planned once at the bounds and every signature within them lays its
  /// entries out in those storages, so a context allocates once for every shape. Replaces
  /// earlier bounds and empties the cache. ValueError for an unknown name or a negative bound.
  void SetUpperBounds(const std::map<std::string, int64_t>& bounds);

  /// How many plans were made since the executor was created, and the seconds spent making
  /// them (evaluating shapes and planning storages: what a first call at a new shape adds).
  int64_t plans_made() const;
  double planning_seconds() const;

 private:
  const Graph& graph_;
  const size_t capacity_;
  mutable std::mutex mutex_;
  /// A new plan for `signature`, in `bounding`'s storages when it fits them.
  std::shared_ptr<const ShapePlan> Plan(const std::vector<int64_t>& signature,
                                        const std::shared_ptr<const ShapePlan>& bounding) const;

  std::list<std::shared_ptr<const ShapePlan>> plans_;  // most recently used first
  int64_t plans_made_ = 0;
  double planning_seconds_ = 0;
  std::vector<std::optional<int64_t>> upper_bounds_;  // per variable of the signature
  std::shared_ptr<const ShapePlan> bounding_plan_;    // at the bounds, when all are bounded
};

}  // namespace internal
}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_SHAPE_PLAN_INTERNAL_H_
