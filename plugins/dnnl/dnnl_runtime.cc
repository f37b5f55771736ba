// libkiln_runtime_dnnl.so: the "dnnl_json" module kind, a JSON graph runtime that runs a region
// as a list of oneDNN primitives. Init builds the plan once (dnnl_plan.h): one engine and stream
// per module, every primitive created, constant weights reordered into the layouts the
// primitives chose, intermediates allocated. Run binds the caller's buffers and executes.
#include <kiln/runtime/json_runtime.h>
#include <kiln/runtime/thread_pool.h>
#include <omp.h>

#include <memory>
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

Plan::Plan(const runtime::JsonGraph& graph, const Array<Tensor>& constants, dnnl::engine engine,
           dnnl::stream stream)
    : graph_(graph), engine_(std::move(engine)), stream_(std::move(stream)) {
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
}

const Value& Plan::Get(runtime::JsonEntry entry) const {
  KILN_ICHECK(entry.node < values_.size() && entry.index < values_[entry.node].size())
      << "dnnl: '" << graph_.symbol << "' reads node " << entry.node << " before it is built";
  return values_[entry.node][entry.index];
}

Value Plan::Reordered(const Value& value, const dnnl::memory::desc& desc) {
  if (value.memory.get_desc() == desc) return value;
  Value copy{dnnl::memory(desc, engine_)};
  if (value.constant) {
    dnnl::memory from = value.memory;
    dnnl::reorder(from, copy.memory).execute(stream_, from, copy.memory);
    stream_.wait();
    copy.constant = true;
  } else {
    AddCopy(value.memory, copy.memory);
  }
  return copy;
}

Value Plan::View(const Value& value, const dnnl::memory::desc& desc) {
  const dnnl::memory::desc plain = PlainDesc(value.memory.get_desc().dims());
  if (value.memory.get_desc() != plain) return View(Reordered(value, plain), desc);
  KILN_ICHECK(plain.get_size() == desc.get_size())
      << "dnnl: '" << graph_.symbol << "' views a value of " << plain.get_size() << " bytes as "
      << desc.get_size();
  Value view = value;
  view.memory = dnnl::memory(desc, engine_, value.memory.get_data_handle());
  if (value.input >= 0) input_bindings_[static_cast<size_t>(value.input)].push_back(view.memory);
  if (value.output >= 0) {
    output_bindings_[static_cast<size_t>(value.output)].push_back(view.memory);
  }
  return view;
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
  if (!value.memory) value.memory = dnnl::memory(desc, engine_);
  values_[entry.node].push_back(value);
  return value.memory;
}

void Plan::AddStep(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args) {
  steps_.push_back({std::move(primitive), std::move(args)});
}

void Plan::AddCopy(dnnl::memory from, dnnl::memory to) {
  AddStep(dnnl::reorder(from, to), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
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
}

namespace {

/// Sets the OpenMP thread count of the calling thread (Debian's oneDNN runs on libgomp) to
/// Kiln's runtime::NumThreads() for the scope, and restores it after: oneDNN's parallel
/// regions then follow KILN_NUM_THREADS, the affinity mask and the cgroup quota, while other
/// OpenMP users of the process keep their setting. Kiln's own pool sleeps meanwhile.
class ScopedOmpThreads {
 public:
  ScopedOmpThreads() : previous_(omp_get_max_threads()) {
    const int threads = runtime::NumThreads();
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
  }

 protected:
  void Init(const Array<Tensor>& constants) override {
    const ScopedOmpThreads threads;
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    auto plan = std::make_unique<Plan>(graph(), constants, engine, stream);
    try {
      for (uint32_t i = 0; i < graph().nodes.size(); ++i) {
        if (graph().nodes[i].kind == runtime::JsonNode::Kind::kOp) BuildNode(*plan, i);
      }
      plan->Finish();
    } catch (const dnnl::error& error) {
      KILN_THROW(RuntimeError) << "dnnl: '" << graph().symbol
                               << "': oneDNN refused a primitive: " << error.what();
    }
    stream_ = std::move(stream);
    plan_ = std::move(plan);
  }

  void Run(const std::vector<DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) override {
    Bind(plan_->input_bindings(), inputs);
    Bind(plan_->output_bindings(), outputs);
    const ScopedOmpThreads threads;
    for (const Step& step : plan_->steps()) step.primitive.execute(stream_, step.args);
    stream_.wait();
  }

 private:
  static void Bind(const std::vector<std::vector<dnnl::memory>>& bindings,
                   const std::vector<DLTensor*>& tensors) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      void* data = static_cast<char*>(tensors[i]->data) + tensors[i]->byte_offset;
      for (const dnnl::memory& memory : bindings[i]) memory.set_data_handle(data);
    }
  }

  dnnl::stream stream_;
  std::unique_ptr<Plan> plan_;
};

KILN_REGISTER_JSON_RUNTIME(DnnlRuntime, "dnnl");

}  // namespace
}  // namespace dnnl_plugin
}  // namespace kiln
