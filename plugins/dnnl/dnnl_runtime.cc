// libkiln_runtime_dnnl.so: the "dnnl_json" module kind, a JSON graph runtime that runs a region
// as a list of oneDNN primitives. Init builds the module's plan (dnnl_plan.h): every primitive
// created, constant weights reordered into the layouts the primitives chose, intermediates
// allocated. Run binds the caller's buffers and executes. Calls may run concurrently: each
// concurrent call gets a plan of its own (sharing the reordered weights), see PlanLease.
#include <omp.h>
#include <kiln/runtime/json_runtime.h>
#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dnnl_plan.h"

namespace kiln {
namespace dnnl_plugin {

dnnl::memory::desc PlainDesc(const std::vector<int64_t>& shape) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  if (dims.empty()) dims.push_back(1);
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  return {dims, dnnl::memory::data_type::f32, strides};
}

dnnl::memory ConstantLayouts::Get(const dnnl::memory& constant, const dnnl::memory::desc& desc,
                                  const dnnl::engine& engine, dnnl::stream& stream) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const void* bytes = constant.get_data_handle();
  for (const Entry& entry : entries_) {
    if (entry.bytes == bytes && entry.desc == desc) return entry.reordered;
  }
  dnnl::memory reordered(desc, engine);
  // Executed here, on the thread building the plan, once: its scratchpad is oneDNN's own.
  dnnl::memory from = constant;
  dnnl::reorder(from, reordered).execute(stream, from, reordered);
  stream.wait();
  entries_.push_back({bytes, desc, reordered});
  return reordered;
}

Plan::Plan(const runtime::JsonGraph& graph, const Array<Tensor>& constants, dnnl::engine engine,
           std::shared_ptr<ConstantLayouts> layouts)
    : graph_(graph), engine_(std::move(engine)), stream_(engine_), layouts_(std::move(layouts)) {
  values_.resize(graph.nodes.size());
  for (uint32_t node : graph.input_nodes) {
    for (const runtime::JsonTensorSpec& spec : graph.nodes[node].outputs) {
      Value value{dnnl::memory(PlainDesc(spec.shape), engine_, DNNL_MEMORY_NONE),
                  static_cast<int>(input_bindings_.size())};
      input_bindings_.push_back({value.memory});
      values_[node].push_back(value);
    }
  }
  for (size_t i = 0; i < graph.const_nodes.size(); ++i) {
    const uint32_t node = graph.const_nodes[i];
    Value value{dnnl::memory(PlainDesc(graph.nodes[node].outputs[0].shape), engine_,
                             constants[static_cast<int64_t>(i)].data())};
    value.constant = true;
    values_[node].push_back(value);
  }
  output_bindings_.resize(graph.heads.size());
  last_reader_.resize(graph.nodes.size());
  for (uint32_t node = 0; node < graph.nodes.size(); ++node) {
    last_reader_[node].assign(graph.nodes[node].outputs.size(), 0);
    for (const runtime::JsonEntry& input : graph.nodes[node].inputs) {
      last_reader_[input.node][input.index] = node;
    }
  }
}

bool Plan::IsHead(runtime::JsonEntry entry) const {
  return std::any_of(graph_.heads.begin(), graph_.heads.end(), [entry](runtime::JsonEntry head) {
    return head.node == entry.node && head.index == entry.index;
  });
}

std::optional<dnnl::memory> Plan::TakeOver(runtime::JsonEntry from, runtime::JsonEntry to,
                                           uint32_t reader, const dnnl::memory::desc& desc) {
  const Value& value = Get(from);
  if (!value.scratch || value.memory.get_desc() != desc || IsHead(from) || IsHead(to) ||
      last_reader_[from.node][from.index] != reader) {
    return std::nullopt;
  }
  KILN_ICHECK(to.node < values_.size() && values_[to.node].size() == to.index)
      << "dnnl: '" << graph_.symbol << "' defines node " << to.node << " twice";
  Value taken{value.memory};
  taken.scratch = true;
  values_[from.node][from.index].scratch = false;  // the buffer is `to`'s now
  values_[to.node].push_back(taken);
  return taken.memory;
}

const Value& Plan::Get(runtime::JsonEntry entry) const {
  KILN_ICHECK(entry.node < values_.size() && entry.index < values_[entry.node].size())
      << "dnnl: '" << graph_.symbol << "' reads node " << entry.node << " before it is built";
  return values_[entry.node][entry.index];
}

Value Plan::Reordered(const Value& value, const dnnl::memory::desc& desc) {
  if (value.memory.get_desc() == desc) return value;
  if (value.constant) {
    Value copy{layouts_->Get(value.memory, desc, engine_, stream_)};
    copy.constant = true;
    return copy;
  }
  Value copy{dnnl::memory(desc, engine_)};
  AddCopy(value.memory, copy.memory);
  return copy;
}

Value Plan::View(const Value& value, const dnnl::memory::desc& desc) {
  const dnnl::memory::desc plain = PlainDesc(value.memory.get_desc().dims());
  if (value.memory.get_desc() != plain) return View(Reordered(value, plain), desc);
  KILN_ICHECK(desc.get_size() <= plain.get_size())
      << "dnnl: '" << graph_.symbol << "' views a value of " << plain.get_size() << " bytes as "
      << desc.get_size();
  Value view = value;
  view.memory = dnnl::memory(desc, engine_, value.memory.get_data_handle());
  // The bytes now have two names: neither may be written over in place.
  view.scratch = false;
  if (value.scratch) {
    for (std::vector<Value>& outputs : values_) {
      for (Value& other : outputs) {
        if (other.memory.get_data_handle() == value.memory.get_data_handle()) {
          other.scratch = false;
        }
      }
    }
  }
  if (value.input >= 0) input_bindings_[static_cast<size_t>(value.input)].push_back(view.memory);
  if (value.output >= 0) {
    output_bindings_[static_cast<size_t>(value.output)].push_back(view.memory);
  }
  return view;
}

dnnl::memory Plan::Allocate(const dnnl::memory::desc& desc, uint32_t node) {
  // Best fit among the buffers whose values every reader has run before `node`: a region's
  // working set stays a few buffers (warm in cache), not one per value.
  Value* best = nullptr;
  for (uint32_t producer = 0; producer < node; ++producer) {
    for (uint32_t i = 0; i < values_[producer].size(); ++i) {
      Value& old = values_[producer][i];
      if (!old.scratch || IsHead({producer, i}) || last_reader_[producer][i] >= node ||
          old.memory.get_desc().get_size() < desc.get_size()) {
        continue;
      }
      if (best == nullptr ||
          old.memory.get_desc().get_size() < best->memory.get_desc().get_size()) {
        best = &old;
      }
    }
  }
  if (best == nullptr) return dnnl::memory(desc, engine_);
  best->scratch = false;  // its buffer is the new value's now
  return dnnl::memory(desc, engine_, best->memory.get_data_handle());
}

dnnl::memory Plan::Define(runtime::JsonEntry entry, const dnnl::memory::desc& desc) {
  KILN_ICHECK(entry.node < values_.size() && values_[entry.node].size() == entry.index)
      << "dnnl: '" << graph_.symbol << "' defines node " << entry.node << " twice";
  Value value{dnnl::memory()};
  for (size_t head = 0; head < graph_.heads.size() && !value.memory; ++head) {
    const runtime::JsonEntry& target = graph_.heads[head];
    if (target.node != entry.node || target.index != entry.index) continue;
    if (desc != PlainDesc(graph_.spec(entry).shape)) break;
    value = Value{dnnl::memory(desc, engine_, DNNL_MEMORY_NONE), -1, static_cast<int>(head)};
    output_bindings_[head].push_back(value.memory);
  }
  if (!value.memory) {
    value.memory = Allocate(desc, entry.node);
    value.scratch = true;
  }
  values_[entry.node].push_back(value);
  return value.memory;
}

void Plan::Alias(runtime::JsonEntry entry, const Value& value) {
  KILN_ICHECK(entry.node < values_.size() && values_[entry.node].size() == entry.index)
      << "dnnl: '" << graph_.symbol << "' defines node " << entry.node << " twice";
  values_[entry.node].push_back(value);
}

void Plan::AddStep(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args) {
  steps_.push_back({std::move(primitive), std::move(args)});
}

void Plan::AddCopy(dnnl::memory from, dnnl::memory to) {
  const dnnl::reorder::primitive_desc pd(from, to, UserScratchpad());
  AddStep(dnnl::reorder(pd), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

void Plan::Execute() {
  for (const Step& step : steps_) step.primitive.execute(stream_, step.args);
  stream_.wait();
}

void Plan::Finish() {
  for (size_t head = 0; head < graph_.heads.size(); ++head) {
    const Value& value = Get(graph_.heads[head]);
    if (value.output == static_cast<int>(head)) continue;
    const dnnl::memory out(PlainDesc(graph_.spec(graph_.heads[head]).shape), engine_,
                           DNNL_MEMORY_NONE);
    output_bindings_[head].push_back(out);
    AddCopy(value.memory, out);
  }
  std::vector<dnnl::memory::desc> scratchpads;
  size_t largest = 0;
  for (const Step& step : steps_) {
    const dnnl_memory_desc_t* desc = dnnl_primitive_desc_query_md(
        step.primitive.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
    scratchpads.emplace_back(desc == nullptr ? dnnl::memory::desc() : dnnl::memory::desc(*desc));
    largest = std::max(largest, scratchpads.back().get_size());
  }
  if (largest == 0) return;
  scratchpad_ = dnnl::memory({{static_cast<dnnl::memory::dim>(largest)},
                              dnnl::memory::data_type::u8,
                              dnnl::memory::format_tag::x},
                             engine_);
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (scratchpads[i].get_size() == 0) continue;
    steps_[i].args[DNNL_ARG_SCRATCHPAD] =
        dnnl::memory(scratchpads[i], engine_, scratchpad_.get_data_handle());
  }
}

namespace {

/// Sets the OpenMP thread count of the calling thread (Debian's oneDNN runs on libgomp) for the
/// scope, and restores it after: oneDNN's parallel regions then follow Kiln's thread count
/// (KILN_NUM_THREADS, the affinity mask, the cgroup quota) or one thread, while other OpenMP
/// users of the process keep their setting. Kiln's own pool sleeps meanwhile.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads) : previous_(omp_get_max_threads()) {
    if (threads != previous_) omp_set_num_threads(threads);
  }
  ~ScopedOmpThreads() {
    if (omp_get_max_threads() != previous_) omp_set_num_threads(previous_);
  }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads(ScopedOmpThreads&&) = delete;
  ScopedOmpThreads& operator=(ScopedOmpThreads&&) = delete;

 private:
  int previous_;
};

class DnnlRuntime : public runtime::JsonRuntimeBase {
 public:
  static constexpr const char* kPlugin = "dnnl";
  static constexpr int64_t kVersion = 1;

  DnnlRuntime(std::string graph_json, Array<Tensor> constants)
      : JsonRuntimeBase(kPlugin, kVersion, std::move(graph_json), std::move(constants)) {
    for (const runtime::JsonNode& node : graph().nodes) {
      for (const runtime::JsonTensorSpec& spec : node.outputs) {
        KILN_CHECK(DataTypeEqual(spec.dtype, DLDataType{kDLFloat, 32, 1}), NotImplementedError)
            << "dnnl: '" << graph().symbol << "' has a " << DataTypeToString(spec.dtype)
            << " value; the dnnl plugin runs float32 only";
      }
    }
    AllowConcurrentRuns();
  }

 protected:
  void Init(const Array<Tensor>& /*constants: the base's, read by BuildPlan*/) override {
    engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
    layouts_ = std::make_shared<ConstantLayouts>();
    shared_ = BuildPlan(runtime::NumThreads());
  }

  void Run(const std::vector<DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) override {
    const PlanLease lease(this);
    Bind(lease.plan().input_bindings(), inputs);
    Bind(lease.plan().output_bindings(), outputs);
    const ScopedOmpThreads threads(lease.threads());
    lease.plan().Execute();
  }

 private:
  /// The plan a call runs, and on how many threads. A call alone (no other running or waiting)
  /// runs the module's first plan on every thread of Kiln's pool. Calls that overlap run on one
  /// thread each, on plans of their own (built on first need, then kept; they share the
  /// reordered weights), at most as many at once as the pool has threads, so that concurrent
  /// calls share the cores without oversubscribing them; the others wait. A plan's primitives
  /// are created for the thread count it runs on, as oneDNN sizes their work split then.
  class PlanLease {
   public:
    explicit PlanLease(DnnlRuntime* module) : module_(module) {
      std::unique_lock<std::mutex> lock(module->pool_mutex_);
      const int slots = runtime::NumThreads();
      if (!module->shared_busy_ && module->single_running_ == 0 && module->waiting_ == 0) {
        module->shared_busy_ = true;
        plan_ = module->shared_.get();
        threads_ = slots;
        return;
      }
      ++module->waiting_;
      module->pool_changed_.wait(
          lock, [&] { return !module->shared_busy_ && module->single_running_ < slots; });
      --module->waiting_;
      ++module->single_running_;
      if (!module->idle_.empty()) {
        own_ = std::move(module->idle_.back());
        module->idle_.pop_back();
      }
      lock.unlock();
      threads_ = 1;
      if (own_ == nullptr) {
        try {
          own_ = module->BuildPlan(threads_);
        } catch (...) {
          Return();
          throw;
        }
      }
      plan_ = own_.get();
    }
    ~PlanLease() { Return(); }
    PlanLease(const PlanLease&) = delete;
    PlanLease& operator=(const PlanLease&) = delete;
    PlanLease(PlanLease&&) = delete;
    PlanLease& operator=(PlanLease&&) = delete;

    Plan& plan() const { return *plan_; }
    int threads() const { return threads_; }

   private:
    void Return() {
      const std::lock_guard<std::mutex> lock(module_->pool_mutex_);
      if (plan_ == module_->shared_.get()) {
        module_->shared_busy_ = false;
      } else {
        --module_->single_running_;
        if (own_ != nullptr) module_->idle_.push_back(std::move(own_));
      }
      plan_ = nullptr;
      module_->pool_changed_.notify_all();
    }

    DnnlRuntime* module_;
    Plan* plan_ = nullptr;
    std::unique_ptr<Plan> own_;
    int threads_ = 1;
  };

  std::unique_ptr<Plan> BuildPlan(int threads) {
    const ScopedOmpThreads scoped(threads);
    auto plan = std::make_unique<Plan>(graph(), constants(), engine_, layouts_);
    try {
      for (uint32_t i = 0; i < graph().nodes.size(); ++i) {
        if (graph().nodes[i].kind == runtime::JsonNode::Kind::kOp) BuildNode(*plan, i);
      }
      plan->Finish();
    } catch (const dnnl::error& error) {
      KILN_THROW(RuntimeError) << "dnnl: '" << graph().symbol
                               << "': oneDNN refused a primitive: " << error.what();
    }
    return plan;
  }

  static void Bind(const std::vector<std::vector<dnnl::memory>>& bindings,
                   const std::vector<DLTensor*>& tensors) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      void* data = static_cast<char*>(tensors[i]->data) + tensors[i]->byte_offset;
      for (const dnnl::memory& memory : bindings[i]) memory.set_data_handle(data);
    }
  }

  dnnl::engine engine_;
  std::shared_ptr<ConstantLayouts> layouts_;
  std::unique_ptr<Plan> shared_;  ///< built by Init, for calls that run alone
  std::mutex pool_mutex_;
  std::condition_variable pool_changed_;
  bool shared_busy_ = false;
  int single_running_ = 0;  ///< calls running on one thread, on plans of their own
  int waiting_ = 0;
  std::vector<std::unique_ptr<Plan>> idle_;  ///< one-thread plans between calls
};

KILN_REGISTER_JSON_RUNTIME(DnnlRuntime, "dnnl");

}  // namespace
}  // namespace dnnl_plugin
}  // namespace kiln
