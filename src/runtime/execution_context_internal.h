// Private to libkiln_runtime: what one run of a graph executor owns (its activation buffers and
// argument lists), and the pool that hands contexts to concurrent runs. The executor's graph,
// node functions and lib are shared by every run; nothing here is.
#ifndef KILN_SRC_RUNTIME_EXECUTION_CONTEXT_INTERNAL_H_
#define KILN_SRC_RUNTIME_EXECUTION_CONTEXT_INTERNAL_H_

#include <kiln/ffi/function.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/tensor.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "graph_executor_internal.h"
#include "shape_plan_internal.h"

namespace kiln {
namespace runtime {
namespace internal {

/// Per entry of a graph: the (node, argument) slots that pass it.
using EntryUses = std::vector<std::vector<std::pair<size_t, size_t>>>;

/// The (node, argument) slots of every entry of `graph`.
EntryUses FindEntryUses(const Graph& graph);

/// The buffers and argument lists of one run: the planned storages, each entry's view of them,
/// and the DLTensor* of every node argument. Entries can be bound to other tensors (a caller's
/// input or output) for one run and restored afterwards. Used by one thread at a time.
class ExecutionContext {
 public:
  /// A context with no memory yet; `graph` and `uses` must outlive it.
  ExecutionContext(const Graph& graph, const EntryUses& uses, DLDevice device);

  /// Lays the entries out as `plan` says, over storages that only grow: a plan this context
  /// used before, or one that fits the storages it has, allocates nothing. Every entry is
  /// restored to its planned view.
  void Use(std::shared_ptr<const ShapePlan> plan);
  /// The plan in use; null before the first Use.
  const ShapePlan* plan() const { return plan_.get(); }
  /// Bytes of the storages this context holds.
  int64_t allocated_bytes() const;

  /// The view of `entry` in this context's storages.
  const Tensor& planned(int64_t entry) const { return planned_[entry]; }
  /// What the nodes read or write for `entry`: planned(entry) unless bound to another tensor.
  const Tensor& bound(int64_t entry) const { return bound_[entry]; }
  /// Makes the nodes that pass `entry` see `tensor` (same shape and dtype, compact).
  void Bind(int64_t entry, const Tensor& tensor);
  /// Binds `entry` back to its planned view, letting go of the tensor it was bound to.
  void Restore(int64_t entry) { Bind(entry, planned_[entry]); }

  /// Calls every node of `graph` in order: funcs[i] for node i. Errors name the node. Late
  /// sizes are read as soon as their entries are written, and the late entries they give are
  /// allocated and bound then (docs/design.md §22); they stay bound until ReleaseLate. With
  /// `node_seconds` (one per node), each node's wall time is added to its element.
  void Run(const Graph& graph, const std::vector<Function>& funcs,
           std::vector<double>* node_seconds = nullptr);
  /// Binds the late entries of the last run back to their placeholders.
  void ReleaseLate();

 private:
  const Graph& graph_;
  const EntryUses& uses_;
  const DLDevice device_;
  std::shared_ptr<const ShapePlan> plan_;
  std::vector<Tensor> storages_;
  std::vector<Tensor> planned_;
  std::vector<Tensor> bound_;
  /// Reads size definition `d` of the graph into `sizes`, then allocates the entries and
  /// evaluates the checks that were waiting for it (ReadDefinedSizes).
  void ReadDefinition(size_t d, std::map<std::string, int64_t>& sizes);
  void ReadDefinedSizes(size_t d, const std::map<std::string, int64_t>& sizes);
  /// Binds the outputs `node` returned (`result`, an Array<Tensor>) to their entries, checking
  /// the extents `sizes` already give.
  void BindReturned(const GraphNode& node, const Any& result,
                    const std::map<std::string, int64_t>& sizes);

  std::vector<std::vector<AnyView>> args_;  // per node: DLTensor* of its inputs, then outputs
  std::vector<int64_t> late_bound_;         // late entries bound by the last run
};

/// Hands execution contexts to runs: an idle one when there is one, else a new one, unless the
/// limits forbid it, in which case the run waits for one to be released. A context is created
/// (and its memory allocated) only when a run needs it. Thread-safe.
class ContextPool {
 public:
  /// A context held by one run; returned to the pool when the lease ends.
  class Lease {
   public:
    Lease(ContextPool* pool, std::unique_ptr<ExecutionContext> context)
        : pool_(pool), context_(std::move(context)) {}
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { Release(); }

    ExecutionContext& operator*() const { return *context_; }
    ExecutionContext* operator->() const { return context_.get(); }

   private:
    void Release();

    ContextPool* pool_ = nullptr;
    std::unique_ptr<ExecutionContext> context_;
  };

  /// `graph` must outlive the pool.
  ContextPool(const Graph& graph, DLDevice device);

  /// A context for one run laid out as `plan`. Waits while the pool is at its limits and
  /// another run holds a context; a MemoryError, before anything is allocated, when even one
  /// context of the plan's size would exceed the memory limit.
  Lease Acquire(const std::shared_ptr<const ShapePlan>& plan);

  /// At most `max_contexts` contexts (runs at once), and at most `memory_limit` bytes of
  /// activation memory in all; 0 means no limit. Idle contexts over the new limits are freed
  /// now, busy ones when they are released.
  void SetLimits(int64_t max_contexts, int64_t memory_limit);

  /// A MemoryError when one context laid out as `plan` would exceed the memory limit: for a
  /// context made outside the pool (the stateful API's), which counts against no other limit.
  void CheckOneContextFits(const ShapePlan& plan) const;

  /// {"contexts", "idle", "max_concurrent_runs", "memory_limit", "bytes_per_context"}.
  Map<String, Any> Stats() const;

  /// The (node, argument) slots of every entry, for contexts made outside the pool.
  const EntryUses& uses() const { return uses_; }

  /// Bytes of activation memory one context allocates: the largest plan's any context used.
  int64_t bytes_per_context() const;

 private:
  bool CanGrow() const;     // with mutex_ held
  bool OverLimits() const;  // with mutex_ held
  [[noreturn]] void ThrowOverMemoryLimit(int64_t bytes) const;
  void Release(std::unique_ptr<ExecutionContext> context);

  const Graph& graph_;
  const DLDevice device_;
  const EntryUses uses_;
  int64_t bytes_per_context_ = 0;  // grows with the plans contexts are leased for
  mutable std::mutex mutex_;
  std::condition_variable released_;
  std::vector<std::unique_ptr<ExecutionContext>> idle_;
  int64_t num_contexts_ = 0;  // created and not freed: idle, leased, or being allocated
  int64_t max_contexts_ = 0;
  int64_t memory_limit_ = 0;
};

}  // namespace internal
}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_EXECUTION_CONTEXT_INTERNAL_H_
