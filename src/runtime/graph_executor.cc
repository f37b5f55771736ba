// The graph executor module (kiln/runtime/graph_executor.h): storages allocated once, a view
// per entry, the argument list of every node built once, node functions found in the imports.
// A run is one call per node over those lists: nothing is allocated or looked up per run.
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/runtime/graph_executor.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph_executor_internal.h"
#include "tensor_util_internal.h"

namespace kiln {
namespace runtime {
namespace {

using internal::Graph;
using internal::GraphEntry;
using internal::GraphInput;
using internal::GraphNode;

/// The descriptor a kernel receives. Kernels write the elements, never the descriptor, so
/// handing out a mutable pointer to the tensor's own DLTensor is safe.
DLTensor* TensorArg(const Tensor& tensor) { return const_cast<DLTensor*>(&tensor.dl_tensor()); }

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

class GraphExecutorObj : public ModuleObj {
 public:
  GraphExecutorObj(Graph graph, DLDevice device) : graph_(std::move(graph)), device_(device) {
    AllocateStorages();
    MakeEntryViews();
    BuildArguments();
  }

  std::string kind() const override { return kGraphExecutorKind; }
  std::optional<Function> GetFunction(const std::string& name) override;
  std::vector<std::string> ListFunctions() const override {
    return {"set_input",       "set_input_zero_copy", "run",
            "get_output",      "get_num_inputs",      "get_num_outputs",
            "get_input_index", "get_input_info",      "get_output_info",
            "memory_plan"};
  }
  std::optional<Bytes> SaveToBytes() const override {
    return Bytes(internal::GraphToJson(graph_, device_));
  }

  /// Looks up every node's function in the imports (once found, a function is kept). With
  /// `allow_listed`, a function an import only lists (it cannot call it yet) is accepted and
  /// looked up again later; unknown names are always errors.
  void ResolveFunctions(bool allow_listed);

 private:
  void AllocateStorages();
  void MakeEntryViews();
  void BuildArguments();
  /// Makes the nodes that use `entry` see `tensor`.
  void Bind(int64_t entry, const Tensor& tensor);

  size_t InputIndex(const AnyView& key, const char* caller) const;
  void CheckInputMatches(size_t index, const Tensor& value, const char* caller) const;
  void SetInput(const AnyView& key, const Tensor& value);
  void SetInputZeroCopy(const AnyView& key, const Tensor& value);
  void Run() const;
  Tensor GetOutput(int64_t index) const;
  int64_t GetInputIndex(const std::string& name) const;
  Map<String, Any> InputInfo() const;
  Map<String, Any> OutputInfo() const;
  Map<String, Any> MemoryPlan() const;

  Graph graph_;
  DLDevice device_;
  std::vector<Tensor> storages_;
  std::vector<Tensor> planned_;  // per entry: its view of its storage
  std::vector<Tensor> bound_;    // per entry: what the nodes see, planned_ or a zero-copy input
  std::vector<std::vector<AnyView>> args_;  // per node: DLTensor* of its inputs, then outputs
  std::vector<std::vector<std::pair<size_t, size_t>>> uses_;  // per entry: (node, arg) slots
  std::vector<Function> funcs_;                               // per node; undefined until resolved
  bool resolved_ = false;
};

void GraphExecutorObj::AllocateStorages() {
  for (size_t i = 0; i < graph_.storage_bytes.size(); ++i) {
    try {
      storages_.push_back(Empty({graph_.storage_bytes[i]}, DLDataType{kDLUInt, 8, 1}, device_));
    } catch (const Error& error) {
      throw error.WithContext("while allocating storage " + std::to_string(i) +
                              " of a graph executor");
    }
  }
}

void GraphExecutorObj::MakeEntryViews() {
  for (const GraphEntry& entry : graph_.entries) {
    const Tensor& storage = storages_[entry.storage];
    // DLPack keeps device pointers whole and puts the offset in byte_offset. The view holds a
    // reference to its storage, so an output handed to the caller stays valid memory even
    // after the executor is gone.
    planned_.push_back(Tensor::FromMemory(
        storage.data(), entry.shape, entry.dtype, device_, [storage] {}, {},
        storage.dl_tensor().byte_offset + static_cast<uint64_t>(entry.offset)));
  }
  bound_ = planned_;
}

void GraphExecutorObj::BuildArguments() {
  uses_.resize(graph_.entries.size());
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const GraphNode& node = graph_.nodes[i];
    std::vector<AnyView>& args = args_.emplace_back();
    for (const std::vector<int64_t>* ids : {&node.inputs, &node.outputs}) {
      for (int64_t entry : *ids) {
        uses_[entry].emplace_back(i, args.size());
        args.emplace_back(TensorArg(bound_[entry]));
      }
    }
  }
  funcs_.resize(graph_.nodes.size());
}

void GraphExecutorObj::Bind(int64_t entry, const Tensor& tensor) {
  bound_[entry] = tensor;
  for (const auto& [node, slot] : uses_[entry]) args_[node][slot] = AnyView(TensorArg(tensor));
}

void GraphExecutorObj::ResolveFunctions(bool allow_listed) {
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

void GraphExecutorObj::CheckInputMatches(size_t index, const Tensor& value,
                                         const char* caller) const {
  const GraphEntry& entry = graph_.entries[graph_.inputs[index].entry];
  const DLDataType got = value.dtype();
  KILN_CHECK(DataTypeEqual(got, entry.dtype) && value.shape() == Shape(entry.shape), ValueError)
      << caller << ": input '" << graph_.inputs[index].name << "' expects " << Shape(entry.shape)
      << " " << DataTypeToString(entry.dtype) << ", got " << value.shape() << " "
      << DataTypeToString(got);
}

void GraphExecutorObj::SetInput(const AnyView& key, const Tensor& value) {
  const size_t index = InputIndex(key, "set_input");
  CheckInputMatches(index, value, "set_input");
  const int64_t entry = graph_.inputs[index].entry;
  Bind(entry, planned_[entry]);  // a previous zero-copy tensor is let go
  try {
    CopyTensor(value, planned_[entry]);
  } catch (const Error& error) {
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
  Bind(graph_.inputs[index].entry, value);
}

void GraphExecutorObj::Run() const {
  for (size_t i = 0; i < args_.size(); ++i) {
    try {
      funcs_[i].CallPacked(args_[i].data(), static_cast<int32_t>(args_[i].size()));
    } catch (const Error& error) {
      throw error.WithContext("while running " + internal::DescribeNode(graph_, i) +
                              ", which calls '" + graph_.nodes[i].func + "', in a graph executor");
    }
  }
  // Like ONNX Runtime after a session run: workers polling for a next node would otherwise
  // hold a core for a while after the model is done, and a pool of another library that
  // starts then (PyTorch's, oneDNN's) was measured getting its threads stacked on one core.
  StopSpinning();
}

Tensor GraphExecutorObj::GetOutput(int64_t index) const {
  const size_t count = graph_.outputs.size();
  KILN_CHECK(index >= 0 && static_cast<uint64_t>(index) < count, IndexError)
      << "get_output: output index " << index << " is out of range: the graph has " << count
      << " output" << (count == 1 ? "" : "s");
  return bound_[graph_.outputs[index]];
}

int64_t GraphExecutorObj::GetInputIndex(const std::string& name) const {
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    if (graph_.inputs[i].name == name) return static_cast<int64_t>(i);
  }
  return -1;
}

Map<String, Any> GraphExecutorObj::InputInfo() const {
  Array<String> names;
  Array<Shape> shapes;
  Array<DLDataType> dtypes;
  for (const GraphInput& input : graph_.inputs) {
    names.push_back(String(input.name));
    shapes.push_back(Shape(graph_.entries[input.entry].shape));
    dtypes.push_back(graph_.entries[input.entry].dtype);
  }
  return {{"names", names}, {"shapes", shapes}, {"dtypes", dtypes}};
}

Map<String, Any> GraphExecutorObj::OutputInfo() const {
  Array<Shape> shapes;
  Array<DLDataType> dtypes;
  for (int64_t entry : graph_.outputs) {
    shapes.push_back(Shape(graph_.entries[entry].shape));
    dtypes.push_back(graph_.entries[entry].dtype);
  }
  return {{"shapes", shapes}, {"dtypes", dtypes}};
}

Map<String, Any> GraphExecutorObj::MemoryPlan() const {
  int64_t total = 0;
  for (int64_t bytes : graph_.storage_bytes) total += bytes;
  int64_t unshared = 0;
  for (const GraphEntry& entry : graph_.entries) unshared += entry.bytes;
  return {{"total_bytes", total},
          {"storage_bytes", Array<int64_t>(graph_.storage_bytes)},
          {"bytes_without_sharing", unshared}};
}

std::optional<Function> GraphExecutorObj::GetFunction(const std::string& name) {
  // Each function holds a reference to the executor: it may outlive the caller's Module.
  const auto self = ObjectPtr<GraphExecutorObj>::FromBorrowed(this);
  const std::string full_name = "graph_executor." + name;
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
