// The graph executor module (kiln/runtime/graph_executor.h): the graph and node functions,
// found once in the imports, shared by every run; buffers and argument lists in execution
// contexts (execution_context.cc), one per run in flight. A run is one call per node over a
// context's lists: nothing is looked up per run, and nothing allocated but the outputs of
// invoke.
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/runtime/graph_executor.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "execution_context_internal.h"
#include "graph_executor_internal.h"
#include "shape_plan_internal.h"
#include "tensor_util_internal.h"
#include "timing_internal.h"

namespace kiln {
namespace runtime {
namespace {

using internal::ContextPool;
using internal::ExecutionContext;
using internal::Graph;
using internal::GraphEntry;
using internal::GraphInput;
using internal::GraphNode;
using internal::ShapePlan;

/// Plans kept per executor: a server sees a few batch sizes and sequence lengths over and over.
constexpr size_t kPlanCacheCapacity = 8;

/// Runs under way on this thread: a loop body's runs are called by a node of the run around it.
thread_local int t_runs_on_this_thread = 0;

/// Counts a run while it lasts. When the outermost one ends, the pool's workers stop polling
/// for a next region, as ONNX Runtime's do after a session run: polling would hold a core for a
/// while after the model is done, and a pool of another library that starts then (PyTorch's,
/// oneDNN's) was measured getting its threads stacked on one core. A nested run leaves them
/// polling, since the run around it goes on at once (a loop's next iteration would pay a
/// wake-up otherwise).
class RunScope {
 public:
  RunScope() { ++t_runs_on_this_thread; }
  ~RunScope() {
    if (--t_runs_on_this_thread == 0) StopSpinning();
  }
  RunScope(const RunScope&) = delete;
  RunScope& operator=(const RunScope&) = delete;
};

/// Each input alone: how set_input checks one input before the others are known.
std::vector<ShapeSignature> InputSignatures(const Graph& graph) {
  std::vector<ShapeSignature> signatures;
  for (const GraphInput& input : graph.inputs) {
    signatures.emplace_back(std::vector<SymbolicShape>{graph.entries[input.entry].shape},
                            std::vector<std::string>{"input '" + input.name + "'"});
  }
  return signatures;
}

/// The shapes of `entries`: static extents as they are, symbolic ones as -1 (what ONNX Runtime
/// reports for a dynamic dimension), and as text.
std::pair<Array<Shape>, Array<String>> DescribeShapes(const Graph& graph,
                                                      const std::vector<int64_t>& entries) {
  Array<Shape> shapes;
  Array<String> texts;
  for (int64_t id : entries) {
    std::vector<int64_t> extents;
    for (const arith::SizeExpr& extent : graph.entries[id].shape) {
      extents.push_back(extent.as_int().value_or(-1));
    }
    shapes.push_back(Shape(extents));
    texts.push_back(String(SymbolicShapeToString(graph.entries[id].shape)));
  }
  return {shapes, texts};
}

/// Calls `visit(module)` for every module of the import trees under `roots`, depth first.
template <typename Visit>
void ForEachModule(const std::vector<Module>& roots, const Visit& visit) {
  for (const Module& module : roots) {
    visit(module);
    ForEachModule(module.imports(), visit);
  }
}

std::string ListedFunctions(const std::vector<Module>& imports) {
  std::vector<std::string> names;
  ForEachModule(imports, [&](const Module& module) {
    for (const std::string& name : module->ListFunctions()) {
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  });
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

/// The kind of the first module under `imports` that lists `name`, or nullopt.
std::optional<std::string> KindListing(const std::vector<Module>& imports,
                                       const std::string& name) {
  std::optional<std::string> kind;
  ForEachModule(imports, [&](const Module& module) {
    const std::vector<std::string> names = module->ListFunctions();
    if (!kind && std::find(names.begin(), names.end(), name) != names.end()) {
      kind = module->kind();
    }
  });
  return kind;
}

/// Entries bound to a caller's tensors for one run, restored to their planned views when the
/// run ends, however it ends: a context goes back to the pool holding no caller's tensor.
class BindingsGuard {
 public:
  explicit BindingsGuard(ExecutionContext& context) : context_(context) {}
  BindingsGuard(const BindingsGuard&) = delete;
  BindingsGuard& operator=(const BindingsGuard&) = delete;
  ~BindingsGuard() {
    for (int64_t entry : bound_) context_.Restore(entry);
    context_.ReleaseLate();
  }
  void Bind(int64_t entry, const Tensor& tensor) {
    context_.Bind(entry, tensor);
    bound_.push_back(entry);
  }

 private:
  ExecutionContext& context_;
  std::vector<int64_t> bound_;
};

bool IsCompactOn(const Tensor& tensor, DLDevice device) {
  const DLDevice at = tensor.device();
  return at.device_type == device.device_type && at.device_id == device.device_id &&
         IsCompact(tensor.dl_tensor());
}

class GraphExecutorObj : public ModuleObj {
 public:
  GraphExecutorObj(Graph graph, DLDevice device)
      : graph_(std::move(graph)),
        device_(device),
        input_signatures_(InputSignatures(graph_)),
        plans_(graph_, kPlanCacheCapacity),
        pool_(graph_, device_),
        funcs_(graph_.nodes.size()),
        staged_(graph_.inputs.size()),
        staged_owned_(graph_.inputs.size(), false) {}

  std::string kind() const override { return kGraphExecutorKind; }
  std::optional<Function> GetFunction(const std::string& name) override;
  std::vector<std::string> ListFunctions() const override {
    return {"invoke",
            "set_input",
            "set_input_zero_copy",
            "run",
            "get_output",
            "get_num_inputs",
            "get_num_outputs",
            "get_input_index",
            "get_input_info",
            "get_output_info",
            "memory_plan",
            "set_limits",
            "get_limits",
            "set_upper_bounds",
            "profile"};
  }
  std::optional<Bytes> SaveToBytes() const override {
    return Bytes(internal::GraphToJson(graph_, device_));
  }

  /// Looks up every node's function in the imports (once found, a function is kept). With
  /// `allow_listed`, a function an import only lists (it cannot call it yet) is accepted and
  /// looked up again later; unknown names are always errors.
  void ResolveFunctions(bool allow_listed);

 private:
  size_t InputIndex(const AnyView& key, const char* caller) const;
  void CheckMatches(const char* caller, const std::string& what, DLDataType dtype,
                    const std::vector<int64_t>& shape, const Tensor& value) const;
  void CheckInputMatches(size_t index, const Tensor& value, const char* caller) const;
  std::shared_ptr<const ShapePlan> PlanFor(const std::vector<Tensor>& inputs, const char* caller);

  Array<Tensor> Invoke(const Array<Tensor>& inputs, const AnyView& outputs,
                       std::vector<double>* node_seconds = nullptr);
  Map<String, Any> Profile(const Array<Tensor>& inputs, int64_t repeat);
  std::vector<std::optional<Tensor>> OutputArguments(const AnyView& outputs,
                                                     const ShapePlan& plan) const;

  ExecutionContext& StatefulContext();  // with stateful_mutex_ held
  void SetInput(const AnyView& key, const Tensor& value);
  void SetInputZeroCopy(const AnyView& key, const Tensor& value);
  void Run();
  Tensor GetOutput(int64_t index);

  int64_t GetInputIndex(const std::string& name) const;
  Map<String, Any> InputInfo() const;
  Map<String, Any> OutputInfo() const;
  Map<String, Any> MemoryPlan() const;

  Graph graph_;
  DLDevice device_;
  std::vector<ShapeSignature> input_signatures_;  // per input, checked alone
  internal::ShapePlanCache plans_;
  ContextPool pool_;             // contexts of invoke, one per run in flight
  std::mutex resolve_mutex_;     // guards funcs_ and resolved_ until every function is found
  std::vector<Function> funcs_;  // per node; undefined until resolved, then only read
  bool resolved_ = false;
  // The stateful API (set_input, run, get_output) works on one context of its own, reading
  // the inputs staged by set_input (undefined until set).
  std::mutex stateful_mutex_;
  std::unique_ptr<ExecutionContext> stateful_;
  std::vector<Tensor> staged_;
  std::vector<bool> staged_owned_;  // per input: staged_ is the executor's copy, not the caller's
};

void GraphExecutorObj::ResolveFunctions(bool allow_listed) {
  std::lock_guard<std::mutex> lock(resolve_mutex_);
  if (resolved_) return;
  const std::vector<Module> imports = Module(ObjectPtr<ModuleObj>::FromBorrowed(this)).imports();
  bool all_found = true;
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    if (funcs_[i].defined()) continue;
    const std::string& name = graph_.nodes[i].func;
    for (const Module& module : imports) {
      if (std::optional<Function> func = module.GetFunction(name)) {
        funcs_[i] = *func;
        break;
      }
    }
    if (funcs_[i].defined()) continue;
    const std::optional<std::string> kind = KindListing(imports, name);
    KILN_CHECK(kind.has_value(), ValueError)
        << "graph: " << internal::DescribeNode(graph_, i) << " calls '" << name
        << "', which the executor's lib does not have "
        << (imports.empty() ? "(the executor imports no module; create it with "
                              "runtime.GraphExecutorCreate(json, lib, device))"
                            : "(it has: " + ListedFunctions(imports) + ")");
    KILN_CHECK(allow_listed, RuntimeError)
        << "graph: " << internal::DescribeNode(graph_, i) << " calls '" << name
        << "', which a module of kind '" << *kind << "' lists but cannot call";
    all_found = false;
  }
  resolved_ = all_found;
}

size_t GraphExecutorObj::InputIndex(const AnyView& key, const char* caller) const {
  const size_t count = graph_.inputs.size();
  if (std::optional<std::string> name = key.as<std::string>()) {
    const int64_t index = GetInputIndex(*name);
    if (index >= 0) return static_cast<size_t>(index);
    std::string names;
    for (const GraphInput& input : graph_.inputs) names += (names.empty() ? "" : ", ") + input.name;
    KILN_THROW(KeyError) << caller << ": the graph has no input named '" << *name
                         << "' (inputs: " << (names.empty() ? "none" : names) << ")";
  }
  std::optional<int64_t> index =
      key.type_index() == kKilnTypeInt ? key.as<int64_t>() : std::nullopt;
  KILN_CHECK(index.has_value(), TypeError)
      << caller << " takes an input name (str) or index (int), got " << key.type_str();
  KILN_CHECK(*index >= 0 && static_cast<uint64_t>(*index) < count, IndexError)
      << caller << ": input index " << *index << " is out of range: the graph has " << count
      << " input" << (count == 1 ? "" : "s");
  return static_cast<size_t>(*index);
}

void GraphExecutorObj::CheckMatches(const char* caller, const std::string& what, DLDataType dtype,
                                    const std::vector<int64_t>& shape, const Tensor& value) const {
  KILN_CHECK(value.defined(), ValueError) << caller << ": " << what << " is not a tensor";
  const DLDataType got = value.dtype();
  KILN_CHECK(DataTypeEqual(got, dtype) && value.shape() == Shape(shape), ValueError)
      << caller << ": " << what << " expects " << Shape(shape) << " " << DataTypeToString(dtype)
      << ", got " << value.shape() << " " << DataTypeToString(got);
}

void GraphExecutorObj::CheckInputMatches(size_t index, const Tensor& value,
                                         const char* caller) const {
  const GraphEntry& entry = graph_.entries[graph_.inputs[index].entry];
  const std::string what = "input '" + graph_.inputs[index].name + "'";
  if (IsStatic(entry.shape)) {
    CheckMatches(caller, what, entry.dtype,
                 input_signatures_[index].Evaluate(entry.shape, {}, what), value);
    return;
  }
  KILN_CHECK(value.defined(), ValueError) << caller << ": " << what << " is not a tensor";
  KILN_CHECK(DataTypeEqual(value.dtype(), entry.dtype), ValueError)
      << caller << ": " << what << " expects " << DataTypeToString(entry.dtype) << ", got "
      << DataTypeToString(value.dtype());
  input_signatures_[index].Bind({&value.dl_tensor()}, caller);
}

std::shared_ptr<const ShapePlan> GraphExecutorObj::PlanFor(const std::vector<Tensor>& inputs,
                                                           const char* caller) {
  std::vector<const DLTensor*> tensors;
  tensors.reserve(inputs.size());
  for (const Tensor& input : inputs) tensors.push_back(&input.dl_tensor());
  return plans_.Get(graph_.signature.Bind(tensors, caller));
}

std::vector<std::optional<Tensor>> GraphExecutorObj::OutputArguments(const AnyView& outputs,
                                                                     const ShapePlan& plan) const {
  const size_t count = graph_.outputs.size();
  std::vector<std::optional<Tensor>> result(count);
  if (outputs.type_index() == kKilnTypeNone) return result;
  std::optional<Array<Any>> given = outputs.as<Array<Any>>();
  KILN_CHECK(given.has_value(), TypeError)
      << "invoke takes its outputs as a list of tensors (None for those to allocate) or None, "
      << "got " << outputs.type_str();
  KILN_CHECK(static_cast<size_t>(given->size()) == count, ValueError)
      << "invoke: the graph has " << count << " output" << (count == 1 ? "" : "s") << ", got "
      << given->size() << " output arguments";
  for (size_t i = 0; i < count; ++i) {
    const Any& item = (*given)[static_cast<int64_t>(i)];
    if (item.type_index() == kKilnTypeNone) continue;
    std::optional<Tensor> tensor = item.as<Tensor>();
    KILN_CHECK(tensor.has_value(), TypeError)
        << "invoke: output argument " << i << " must be a tensor or None, got " << item.type_str();
    const int64_t entry = graph_.outputs[i];
    // A late output's shape is known after the run, and checked then.
    if (!graph_.is_late(entry)) {
      CheckMatches("invoke", "output " + std::to_string(i), graph_.entries[entry].dtype,
                   plan.shapes[entry], *tensor);
    }
    result[i] = *tensor;
  }
  return result;
}

Array<Tensor> GraphExecutorObj::Invoke(const Array<Tensor>& inputs, const AnyView& outputs,
                                       std::vector<double>* node_seconds) {
  KILN_CHECK(static_cast<size_t>(inputs.size()) == graph_.inputs.size(), ValueError)
      << "invoke: the graph takes " << graph_.inputs.size() << " inputs, got " << inputs.size();
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    CheckInputMatches(i, inputs[static_cast<int64_t>(i)], "invoke");
  }
  const std::shared_ptr<const ShapePlan> plan =
      PlanFor(std::vector<Tensor>(inputs.begin(), inputs.end()), "invoke");
  std::vector<std::optional<Tensor>> results = OutputArguments(outputs, *plan);

  const RunScope scope;
  ContextPool::Lease context = pool_.Acquire(plan);
  BindingsGuard bindings(*context);
  std::vector<bool> is_input(graph_.entries.size(), false);
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const Tensor& value = inputs[static_cast<int64_t>(i)];
    const int64_t entry = graph_.inputs[i].entry;
    is_input[entry] = true;
    if (IsCompactOn(value, device_)) {
      bindings.Bind(entry, value);  // no node writes an input: the caller's tensor is read as is
      continue;
    }
    try {
      CopyTensor(value, context->planned(entry));
    } catch (const Error& error) {
      throw error.WithContext("while copying input '" + graph_.inputs[i].name + "' in invoke");
    }
  }
  // Each output entry is written straight into the tensor returned for it, when it can be:
  // a caller's compact tensor, else a new one. The rest are copied once the run is done.
  std::vector<std::pair<int64_t, Tensor>> copies;
  std::vector<bool> is_bound(graph_.entries.size(), false);
  for (size_t i = 0; i < results.size(); ++i) {
    const int64_t entry = graph_.outputs[i];
    std::optional<Tensor>& result = results[i];
    if (graph_.allocated_by_run(entry)) continue;  // handed over or copied after the run
    if (!result) result = Empty(plan->shapes[entry], graph_.entries[entry].dtype, device_);
    if (is_input[entry] || is_bound[entry] || !IsCompactOn(*result, device_)) {
      copies.emplace_back(entry, *result);
      continue;
    }
    bindings.Bind(entry, *result);
    is_bound[entry] = true;
  }
  context->Run(graph_, funcs_, node_seconds);
  for (const auto& [entry, to] : copies) CopyTensor(context->bound(entry), to);
  for (size_t i = 0; i < results.size(); ++i) {
    const int64_t entry = graph_.outputs[i];
    if (!graph_.allocated_by_run(entry)) continue;
    const Tensor& value = context->bound(entry);
    if (!results[i]) {
      results[i] = value;  // allocated for this run alone
      continue;
    }
    const Shape shape = value.shape();
    CheckMatches("invoke", "output " + std::to_string(i), graph_.entries[entry].dtype,
                 std::vector<int64_t>(shape.begin(), shape.end()), *results[i]);
    CopyTensor(value, *results[i]);
  }
  Array<Tensor> returned;
  for (std::optional<Tensor>& result : results) returned.push_back(*result);
  return returned;
}

ExecutionContext& GraphExecutorObj::StatefulContext() {
  if (!stateful_) stateful_ = std::make_unique<ExecutionContext>(graph_, pool_.uses(), device_);
  return *stateful_;
}

void GraphExecutorObj::SetInput(const AnyView& key, const Tensor& value) {
  const size_t index = InputIndex(key, "set_input");
  CheckInputMatches(index, value, "set_input");
  std::lock_guard<std::mutex> lock(stateful_mutex_);
  Tensor& staged = staged_[index];
  // The executor's own copy is reused while the shape stays; a zero-copy tensor is let go.
  if (!staged_owned_[index] || !staged.defined() || staged.shape() != value.shape()) {
    staged = Tensor();
    const Shape shape = value.shape();
    staged = Empty(std::vector<int64_t>(shape.begin(), shape.end()), value.dtype(), device_);
    staged_owned_[index] = true;
  }
  try {
    CopyTensor(value, staged);
  } catch (const Error& error) {
    staged = Tensor();
    throw error.WithContext("while copying input '" + graph_.inputs[index].name + "' in set_input");
  }
}

void GraphExecutorObj::SetInputZeroCopy(const AnyView& key, const Tensor& value) {
  const size_t index = InputIndex(key, "set_input_zero_copy");
  CheckInputMatches(index, value, "set_input_zero_copy");
  const std::string& name = graph_.inputs[index].name;
  const DLDevice got = value.device();
  KILN_CHECK(got.device_type == device_.device_type && got.device_id == device_.device_id,
             ValueError)
      << "set_input_zero_copy: input '" << name << "' lives on "
      << internal::DeviceToString(device_) << ", got a tensor on " << internal::DeviceToString(got)
      << " (set_input copies across devices)";
  // The kernels assume compact row-major data, as the planned buffers are.
  KILN_CHECK(IsCompact(value.dl_tensor()), ValueError)
      << "set_input_zero_copy: input '" << name << "' needs a compact (row-major) tensor, got a "
      << "strided one (set_input copies from strided tensors)";
  std::lock_guard<std::mutex> lock(stateful_mutex_);
  staged_[index] = value;
  staged_owned_[index] = false;
}

void GraphExecutorObj::Run() {
  std::lock_guard<std::mutex> lock(stateful_mutex_);
  std::string missing;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    if (!staged_[i].defined()) {
      missing += (missing.empty() ? "'" : ", '") + graph_.inputs[i].name + "'";
    }
  }
  KILN_CHECK(missing.empty(), ValueError)
      << "run: input" << (missing.find(',') == std::string::npos ? " " : "s ") << missing
      << " not set (set_input sets one; invoke takes them all at once)";
  const std::shared_ptr<const ShapePlan> plan = PlanFor(staged_, "run");
  pool_.CheckOneContextFits(*plan);
  ExecutionContext& context = StatefulContext();
  context.Use(plan);
  for (size_t i = 0; i < graph_.inputs.size(); ++i)
    context.Bind(graph_.inputs[i].entry, staged_[i]);
  const RunScope scope;
  context.Run(graph_, funcs_);
}

Tensor GraphExecutorObj::GetOutput(int64_t index) {
  const size_t count = graph_.outputs.size();
  KILN_CHECK(index >= 0 && static_cast<uint64_t>(index) < count, IndexError)
      << "get_output: output index " << index << " is out of range: the graph has " << count
      << " output" << (count == 1 ? "" : "s");
  std::lock_guard<std::mutex> lock(stateful_mutex_);
  const ExecutionContext& context = StatefulContext();
  KILN_CHECK(context.plan() != nullptr, ValueError)
      << "get_output: the model has not run yet (call run after set_input)";
  return context.bound(graph_.outputs[index]);
}

int64_t GraphExecutorObj::GetInputIndex(const std::string& name) const {
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    if (graph_.inputs[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

Map<String, Any> GraphExecutorObj::InputInfo() const {
  Array<String> names;
  Array<DLDataType> dtypes;
  std::vector<int64_t> entries;
  for (const GraphInput& input : graph_.inputs) {
    names.push_back(String(input.name));
    dtypes.push_back(graph_.entries[input.entry].dtype);
    entries.push_back(input.entry);
  }
  auto [shapes, texts] = DescribeShapes(graph_, entries);
  return {{"names", names}, {"shapes", shapes}, {"symbolic_shapes", texts}, {"dtypes", dtypes}};
}

Map<String, Any> GraphExecutorObj::OutputInfo() const {
  Array<DLDataType> dtypes;
  for (int64_t entry : graph_.outputs) dtypes.push_back(graph_.entries[entry].dtype);
  auto [shapes, texts] = DescribeShapes(graph_, graph_.outputs);
  return {{"shapes", shapes}, {"symbolic_shapes", texts}, {"dtypes", dtypes}};
}

Map<String, Any> GraphExecutorObj::MemoryPlan() const {
  int64_t unshared = 0;
  for (const GraphEntry& entry : graph_.entries) unshared += entry.bytes;
  Array<String> variables;
  for (const std::string& name : graph_.signature.variables()) variables.push_back(String(name));
  return {{"total_bytes", pool_.bytes_per_context()},
          {"storage_bytes", Array<int64_t>(graph_.storage_bytes)},
          {"bytes_without_sharing", unshared},
          {"planned_at_run_time", !graph_.planned_ahead},
          {"size_variables", variables},
          {"plans_made", plans_.plans_made()},
          {"planning_seconds", plans_.planning_seconds()}};
}

/// "1x72x80x80": an entry's shape in `plan`, or "?" for one only the run decides.
std::string ShapeText(const Graph& graph, const ShapePlan& plan, int64_t entry) {
  if (graph.allocated_by_run(entry)) return "?";
  std::string text;
  for (int64_t extent : plan.shapes[entry]) {
    text += (text.empty() ? "" : "x") + std::to_string(extent);
  }
  return text.empty() ? "scalar" : text;
}

Map<String, Any> GraphExecutorObj::Profile(const Array<Tensor>& inputs, int64_t repeat) {
  KILN_CHECK(repeat > 0, ValueError) << "profile: repeat must be at least 1, got " << repeat;
  Invoke(inputs, AnyView());  // plans the shapes and makes a context, untimed
  const size_t count = graph_.nodes.size();
  std::vector<std::vector<double>> times(count);
  std::vector<double> runs;
  for (int64_t r = 0; r < repeat; ++r) {
    std::vector<double> seconds(count, 0.0);
    const internal::Clock::time_point start = internal::Clock::now();
    Invoke(inputs, AnyView(), &seconds);
    runs.push_back(internal::SecondsSince(start));
    for (size_t i = 0; i < count; ++i) times[i].push_back(seconds[i]);
  }
  const std::shared_ptr<const ShapePlan> plan =
      PlanFor(std::vector<Tensor>(inputs.begin(), inputs.end()), "profile");
  Array<String> names;
  Array<String> funcs;
  Array<String> shapes;
  Array<double> medians;
  for (size_t i = 0; i < count; ++i) {
    const GraphNode& node = graph_.nodes[i];
    names.push_back(String(node.name));
    funcs.push_back(String(node.func));
    std::string text;
    for (int64_t entry : node.inputs)
      text += (text.empty() ? "" : ", ") + ShapeText(graph_, *plan, entry);
    text += " -> ";
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      text += (k == 0 ? "" : ", ") + ShapeText(graph_, *plan, node.outputs[k]);
    }
    shapes.push_back(String(text));
    medians.push_back(internal::Median(times[i]));
  }
  return {{"names", names},
          {"funcs", funcs},
          {"shapes", shapes},
          {"seconds", medians},
          {"run_seconds", internal::Median(runs)},
          {"repeat", repeat}};
}

std::optional<Function> GraphExecutorObj::GetFunction(const std::string& name) {
  // Each function holds a reference to the executor: it may outlive the caller's Module.
  const auto self = ObjectPtr<GraphExecutorObj>::FromBorrowed(this);
  const std::string full_name = "graph_executor." + name;
  if (name == "invoke") {
    ResolveFunctions(/*allow_listed=*/false);
    return Function::FromTyped([self](const Array<Tensor>& inputs,
                                      AnyView outputs) { return self->Invoke(inputs, outputs); },
                               full_name);
  }
  if (name == "profile") {
    ResolveFunctions(/*allow_listed=*/false);
    return Function::FromTyped([self](const Array<Tensor>& inputs,
                                      int64_t repeat) { return self->Profile(inputs, repeat); },
                               full_name);
  }
  if (name == "set_limits") {
    return Function::FromTyped(
        [self](int64_t max_concurrent_runs, int64_t memory_limit) {
          self->pool_.SetLimits(max_concurrent_runs, memory_limit);
        },
        full_name);
  }
  if (name == "set_upper_bounds") {
    return Function::FromTyped(
        [self](const Map<String, int64_t>& bounds) {
          std::map<std::string, int64_t> by_name;
          for (const auto& [variable, bound] : bounds) by_name.emplace(variable.str(), bound);
          self->plans_.SetUpperBounds(by_name);
        },
        full_name);
  }
  if (name == "get_limits") {
    return Function::FromTyped([self]() { return self->pool_.Stats(); }, full_name);
  }
  if (name == "set_input") {
    return Function::FromTyped(
        [self](AnyView key, const Tensor& value) { self->SetInput(key, value); }, full_name);
  }
  if (name == "set_input_zero_copy") {
    return Function::FromTyped(
        [self](AnyView key, const Tensor& value) { self->SetInputZeroCopy(key, value); },
        full_name);
  }
  if (name == "run") {
    // Functions are looked up here rather than at load: a loaded executor's imports are
    // attached only after every module of the artifact has loaded.
    ResolveFunctions(/*allow_listed=*/false);
    return Function::FromTyped([self]() { self->Run(); }, full_name);
  }
  if (name == "get_output") {
    return Function::FromTyped([self](int64_t index) { return self->GetOutput(index); }, full_name);
  }
  if (name == "get_num_inputs") {
    return Function::FromTyped(
        [self]() { return static_cast<int64_t>(self->graph_.inputs.size()); }, full_name);
  }
  if (name == "get_num_outputs") {
    return Function::FromTyped(
        [self]() { return static_cast<int64_t>(self->graph_.outputs.size()); }, full_name);
  }
  if (name == "get_input_index") {
    return Function::FromTyped(
        [self](const std::string& input) { return self->GetInputIndex(input); }, full_name);
  }
  if (name == "get_input_info") {
    return Function::FromTyped([self]() { return self->InputInfo(); }, full_name);
  }
  if (name == "get_output_info") {
    return Function::FromTyped([self]() { return self->OutputInfo(); }, full_name);
  }
  if (name == "memory_plan") {
    return Function::FromTyped([self]() { return self->MemoryPlan(); }, full_name);
  }
  return std::nullopt;
}

Module MakeGraphExecutor(Graph graph, DLDevice device) {
  return Module(make_object<GraphExecutorObj>(std::move(graph), device));
}

KILN_REGISTER_GLOBAL("runtime.GraphExecutorCreate")
    .set_body_typed([](const String& json, const Module& lib, DLDevice device) {
      return GraphExecutorCreate(json.str(), lib, device);
    });

KILN_REGISTER_GLOBAL("runtime.module.load_bytes.graph_executor")
    .set_body_typed([](const Bytes& bytes) {
      try {
        Graph graph = internal::ParseGraphJson(bytes.view());
        const DLDevice device = graph.device.value_or(DLDevice{kDLCPU, 0});
        return MakeGraphExecutor(std::move(graph), device);
      } catch (const Error& error) {
        throw error.WithContext("while loading a graph_executor module");
      }
    });

}  // namespace

Module GraphExecutorCreate(const std::string& graph_json, const Module& lib, DLDevice device) {
  KILN_CHECK(lib.defined(), ValueError) << "GraphExecutorCreate needs a lib module";
  Module executor = MakeGraphExecutor(internal::ParseGraphJson(graph_json), device);
  executor.Import(lib);
  static_cast<GraphExecutorObj*>(const_cast<ModuleObj*>(executor.get()))
      ->ResolveFunctions(/*allow_listed=*/true);
  return executor;
}

}  // namespace runtime
}  // namespace kiln
