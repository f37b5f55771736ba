// Execution contexts and their pool (execution_context_internal.h): what lets one loaded model
// serve several threads at once. Each run gets buffers of its own; the graph and the node
// functions are shared and only read.
#include <kiln/runtime/memory.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>

#include "execution_context_internal.h"
#include "tensor_util_internal.h"
#include "timing_internal.h"

namespace kiln {
namespace runtime {
namespace internal {
namespace {

/// The descriptor a kernel receives. Kernels write the elements, never the descriptor, so
/// handing out a mutable pointer to the tensor's own DLTensor is safe.
DLTensor* TensorArg(const Tensor& tensor) { return const_cast<DLTensor*>(&tensor.dl_tensor()); }

/// What a context of a graph planned ahead allocates; contexts of other graphs start empty.
int64_t TotalBytes(const Graph& graph) {
  int64_t total = 0;
  for (int64_t bytes : graph.storage_bytes) total += bytes;
  return total;
}

}  // namespace

/// The entries a node passes as arguments, in order: its inputs, then the outputs it does not
/// return.
std::vector<int64_t> ArgumentEntries(const GraphNode& node) {
  std::vector<int64_t> entries = node.inputs;
  entries.insert(entries.end(), node.outputs.begin(), node.outputs.end() - node.returns);
  return entries;
}

EntryUses FindEntryUses(const Graph& graph) {
  EntryUses uses(graph.entries.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    size_t slot = 0;
    for (int64_t entry : ArgumentEntries(graph.nodes[i])) uses[entry].emplace_back(i, slot++);
  }
  return uses;
}

ExecutionContext::ExecutionContext(const Graph& graph, const EntryUses& uses, DLDevice device)
    : graph_(graph), uses_(uses), device_(device) {}

void ExecutionContext::Use(std::shared_ptr<const ShapePlan> plan) {
  if (plan == plan_) return;
  if (storages_.size() < plan->storage_bytes.size()) storages_.resize(plan->storage_bytes.size());
  for (size_t i = 0; i < plan->storage_bytes.size(); ++i) {
    if (storages_[i].defined() && storages_[i].NumBytes() >= plan->storage_bytes[i]) continue;
    storages_[i] = Tensor();  // the old bytes go back before the larger ones are taken
    try {
      storages_[i] = Empty({plan->storage_bytes[i]}, DLDataType{kDLUInt, 8, 1}, device_);
    } catch (const Error& error) {
      throw error.WithContext("while allocating storage " + std::to_string(i) +
                              " of a graph executor");
    }
  }
  planned_.clear();
  for (size_t e = 0; e < graph_.entries.size(); ++e) {
    const Tensor& storage = storages_[plan->storage_of[e]];
    // DLPack keeps device pointers whole and puts the offset in byte_offset. The view holds a
    // reference to its storage, so an output handed to the caller stays valid memory even
    // after the context is gone or has grown its storages.
    planned_.push_back(Tensor::FromMemory(
        storage.data(), plan->shapes[e], graph_.entries[e].dtype, device_, [storage] {}, {},
        storage.dl_tensor().byte_offset + static_cast<uint64_t>(plan->offset_of[e])));
  }
  plan_ = std::move(plan);
  bound_ = planned_;
  args_.clear();
  for (const GraphNode& node : graph_.nodes) {
    std::vector<AnyView>& args = args_.emplace_back();
    for (int64_t entry : ArgumentEntries(node)) args.emplace_back(TensorArg(bound_[entry]));
  }
}

int64_t ExecutionContext::allocated_bytes() const {
  int64_t total = 0;
  for (const Tensor& storage : storages_) total += storage.defined() ? storage.NumBytes() : 0;
  return total;
}

void ExecutionContext::Bind(int64_t entry, const Tensor& tensor) {
  bound_[entry] = tensor;
  for (const auto& [node, slot] : uses_[entry]) args_[node][slot] = AnyView(TensorArg(tensor));
}

void ExecutionContext::Run(const Graph& graph, const std::vector<Function>& funcs,
                           std::vector<double>* node_seconds) {
  std::map<std::string, int64_t> sizes;  // the signature's, then the late ones as they are read
  if (!graph.size_definitions.empty() || graph.has_returns) {
    ReleaseLate();
    const std::vector<std::string>& variables = graph.signature.variables();
    for (size_t i = 0; i < variables.size(); ++i) sizes[variables[i]] = plan_->signature[i];
    for (int64_t d : graph.definitions_before_run) ReadDefinition(d, sizes);
  }
  for (size_t i = 0; i < args_.size(); ++i) {
    try {
      const Clock::time_point start = node_seconds != nullptr ? Clock::now() : Clock::time_point{};
      const Any result =
          funcs[i].CallPacked(args_[i].data(), static_cast<int32_t>(args_[i].size()));
      if (node_seconds != nullptr) (*node_seconds)[i] += SecondsSince(start);
      if (graph.nodes[i].returns > 0) BindReturned(graph.nodes[i], result, sizes);
      for (int64_t d : graph.definitions_after_node[i]) ReadDefinition(d, sizes);
    } catch (const Error& error) {
      throw error.WithContext("while running " + DescribeNode(graph, i) + ", which calls '" +
                              graph.nodes[i].func + "', in a graph executor");
    }
  }
}

void ExecutionContext::BindReturned(const GraphNode& node, const Any& result,
                                    const std::map<std::string, int64_t>& sizes) {
  const std::optional<Array<Tensor>> returned = result.as<Array<Tensor>>();
  KILN_CHECK(returned.has_value() && returned->size() == node.returns, TypeError)
      << "the function returns " << result.type_str() << ", but the graph expects " << node.returns
      << " tensors it allocated";
  for (int64_t k = 0; k < node.returns; ++k) {
    const int64_t entry = node.outputs[node.outputs.size() - static_cast<size_t>(node.returns - k)];
    Tensor tensor = (*returned)[k];
    const GraphEntry& spec = graph_.entries[entry];
    const Shape shape = tensor.shape();
    KILN_CHECK(DataTypeEqual(tensor.dtype(), spec.dtype) &&
                   shape.size() == static_cast<int64_t>(spec.shape.size()),
               TypeError)
        << "returned tensor " << k << " is " << DataTypeToString(tensor.dtype()) << " of rank "
        << shape.size() << ", but entry " << entry << " is " << DataTypeToString(spec.dtype) << " "
        << SymbolicShapeToString(spec.shape);
    // Extents the graph already knows must agree; an empty tensor takes them (a loop that ran
    // no iteration cannot know its rows' shape).
    std::vector<int64_t> known(shape.begin(), shape.end());
    bool agrees = true;
    for (size_t axis = 0; axis < known.size(); ++axis) {
      const std::vector<std::string> vars = arith::FreeSizeVars(spec.shape[axis]);
      if (!std::all_of(vars.begin(), vars.end(),
                       [&](const std::string& var) { return sizes.count(var) != 0; })) {
        continue;
      }
      const int64_t extent = arith::Evaluate(spec.shape[axis], sizes);
      agrees = agrees && extent == known[axis];
      known[axis] = extent;
    }
    if (!agrees) {
      KILN_CHECK(tensor.NumElements() == 0, ValueError)
          << "returned tensor " << k << " has shape " << shape << ", but entry " << entry << " is "
          << SymbolicShapeToString(spec.shape) << " = " << Shape(known);
      tensor = Empty(known, spec.dtype, device_);
    }
    Bind(entry, tensor);
    late_bound_.push_back(entry);
  }
}

void ExecutionContext::ReadDefinition(size_t d, std::map<std::string, int64_t>& sizes) {
  const SizeDefinition& definition = graph_.size_definitions[d];
  if (!definition.axes.empty()) {
    const Shape shape = bound_[definition.entry].shape();
    for (size_t i = 0; i < definition.sizes.size(); ++i) {
      sizes[definition.sizes[i]] = shape[definition.axes[i]];
    }
    ReadDefinedSizes(d, sizes);
    return;
  }
  Tensor values = bound_[definition.entry];
  if (values.device().device_type != kDLCPU) {
    Tensor on_host =
        Empty({static_cast<int64_t>(definition.sizes.size())}, values.dtype(), DLDevice{kDLCPU, 0});
    CopyTensor(values, on_host);
    values = on_host;
  }
  const auto* data = reinterpret_cast<const int64_t*>(DataStart(values.dl_tensor()));
  for (size_t i = 0; i < definition.sizes.size(); ++i) {
    KILN_CHECK(data[i] >= 0, ValueError)
        << "the model computed the size '" << definition.sizes[i] << "' = " << data[i] << " (entry "
        << definition.entry << ", element " << i << "); a size cannot be negative";
    sizes[definition.sizes[i]] = data[i];
  }
  ReadDefinedSizes(d, sizes);
}

void ExecutionContext::ReadDefinedSizes(size_t d, const std::map<std::string, int64_t>& sizes) {
  const SizeDefinition& definition = graph_.size_definitions[d];
  for (size_t i = 0; i < graph_.checks.size(); ++i) {
    if (graph_.check_definition[i] != static_cast<int64_t>(d)) continue;
    const GraphCheck& check = graph_.checks[i];
    CheckHolds(check, arith::Evaluate(check.lhs, sizes), arith::Evaluate(check.rhs, sizes));
  }
  for (size_t e = 0; e < graph_.entries.size(); ++e) {
    if (graph_.entry_definition[e] != static_cast<int64_t>(d) || graph_.returned[e]) continue;
    const GraphEntry& entry = graph_.entries[e];
    std::vector<int64_t> shape;
    int64_t bytes = ElementBytes(entry.dtype);
    for (const arith::SizeExpr& extent : entry.shape) {
      shape.push_back(arith::Evaluate(extent, sizes));
      KILN_CHECK(shape.back() >= 0, ValueError)
          << "entry " << e << " of shape " << SymbolicShapeToString(entry.shape)
          << " has the negative extent " << extent << " = " << shape.back();
      KILN_CHECK(!__builtin_mul_overflow(bytes, shape.back(), &bytes), OverflowError)
          << "entry " << e << " of shape " << SymbolicShapeToString(entry.shape) << " = "
          << Shape(shape) << " needs more than 2^63 bytes";
    }
    try {
      Bind(static_cast<int64_t>(e), Empty(shape, entry.dtype, device_));
    } catch (const Error& error) {
      std::ostringstream what;
      what << "while allocating entry " << e << " of shape " << SymbolicShapeToString(entry.shape)
           << " = " << Shape(shape) << ", sized by the values of entry " << definition.entry;
      throw error.WithContext(what.str());
    }
    late_bound_.push_back(static_cast<int64_t>(e));
  }
}

void ExecutionContext::ReleaseLate() {
  for (int64_t entry : late_bound_) Restore(entry);
  late_bound_.clear();
}

ContextPool::Lease& ContextPool::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    pool_ = other.pool_;
    context_ = std::move(other.context_);
  }
  return *this;
}

void ContextPool::Lease::Release() {
  if (context_) pool_->Release(std::move(context_));
}

ContextPool::ContextPool(const Graph& graph, DLDevice device)
    : graph_(graph),
      device_(device),
      uses_(FindEntryUses(graph)),
      bytes_per_context_(TotalBytes(graph)) {}

bool ContextPool::CanGrow() const {
  if (max_contexts_ > 0 && num_contexts_ >= max_contexts_) return false;
  return memory_limit_ == 0 || (num_contexts_ + 1) * bytes_per_context_ <= memory_limit_;
}

bool ContextPool::OverLimits() const {
  if (max_contexts_ > 0 && num_contexts_ > max_contexts_) return true;
  return memory_limit_ > 0 && num_contexts_ * bytes_per_context_ > memory_limit_;
}

ContextPool::Lease ContextPool::Acquire(const std::shared_ptr<const ShapePlan>& plan) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (memory_limit_ > 0 && plan->total_bytes > memory_limit_) {
    ThrowOverMemoryLimit(plan->total_bytes);
  }
  bytes_per_context_ = std::max(bytes_per_context_, plan->total_bytes);
  for (;;) {
    if (!idle_.empty()) {
      std::unique_ptr<ExecutionContext> context = std::move(idle_.back());
      idle_.pop_back();
      lock.unlock();
      Lease lease(this, std::move(context));
      lease->Use(plan);
      return lease;
    }
    if (CanGrow()) break;
    // With no context to wait for, only the memory limit can forbid growing.
    if (num_contexts_ == 0) ThrowOverMemoryLimit(bytes_per_context_);
    released_.wait(lock);
  }
  ++num_contexts_;  // counted before allocating, so that concurrent runs respect the limits
  lock.unlock();
  try {
    auto context = std::make_unique<ExecutionContext>(graph_, uses_, device_);
    context->Use(plan);
    return Lease(this, std::move(context));
  } catch (...) {
    lock.lock();
    --num_contexts_;
    released_.notify_one();
    throw;
  }
}

void ContextPool::ThrowOverMemoryLimit(int64_t bytes) const {
  KILN_THROW(MemoryError) << "the model needs " << bytes
                          << " bytes of activation memory per run, over its memory limit of "
                          << memory_limit_ << " bytes";
}

void ContextPool::CheckOneContextFits(const ShapePlan& plan) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (memory_limit_ > 0 && plan.total_bytes > memory_limit_) {
    ThrowOverMemoryLimit(plan.total_bytes);
  }
}

int64_t ContextPool::bytes_per_context() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_per_context_;
}

void ContextPool::Release(std::unique_ptr<ExecutionContext> context) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (OverLimits()) {
    --num_contexts_;
    context.reset();
  } else {
    idle_.push_back(std::move(context));
  }
  released_.notify_one();
}

void ContextPool::SetLimits(int64_t max_contexts, int64_t memory_limit) {
  KILN_CHECK(max_contexts >= 0 && memory_limit >= 0, ValueError)
      << "a graph executor's limits cannot be negative, got max_concurrent_runs " << max_contexts
      << " and memory_limit " << memory_limit;
  std::lock_guard<std::mutex> lock(mutex_);
  max_contexts_ = max_contexts;
  memory_limit_ = memory_limit;
  while (!idle_.empty() && OverLimits()) {
    idle_.pop_back();
    --num_contexts_;
  }
  // Raised limits may let a waiting run grow the pool.
  released_.notify_all();
}

Map<String, Any> ContextPool::Stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {{"contexts", num_contexts_},
          {"idle", static_cast<int64_t>(idle_.size())},
          {"max_concurrent_runs", max_contexts_},
          {"memory_limit", memory_limit_},
          {"bytes_per_context", bytes_per_context_}};
}

}  // namespace internal
}  // namespace runtime
}  // namespace kiln
