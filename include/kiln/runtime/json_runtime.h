/// The JSON graph runtime: the base of external-codegen (BYOC) runtimes that interpret a region
/// of the model, serialized as a small JSON graph, with a kernel library (design §17). It lives
/// in libkiln_json_runtime.so (CMake target Kiln::json_runtime); a plugin's runtime side
/// (libkiln_runtime_<plugin>.so) subclasses JsonRuntimeBase and writes no parsing, locking or
/// serialization of its own. The compiler side that writes the graph is kiln/codegen/json_graph.h.
///
/// The graph (format version kJsonGraphFormatVersion):
///
///   {
///     "version": 1,
///     "symbol": "kiln_blas_0",
///     "nodes": [
///       {"kind": "input", "name": "x", "outputs": [{"shape": [2, 3], "dtype": "float32"}]},
///       {"kind": "const", "name": "kiln_blas_0_const_0", "outputs": [{"shape": [4, 3], ...}]},
///       {"kind": "op", "op": "nn.dense", "attrs": {}, "inputs": [[0, 0], [1, 0]],
///        "outputs": [{"shape": [2, 4], "dtype": "float32"}]},
///       {"kind": "op", "op": "dnnl.conv2d_relu", "composite": true,
///        "attrs": {"nn.conv2d": {"strides": {"ints": [1, 1]}, ...}, "nn.relu": {}}, ...}
///     ],
///     "heads": [[2, 0]]
///   }
///
/// - Nodes are in topological order: every input names an earlier node, as [node, output].
/// - "input" nodes are the region function's parameters in order (a tuple parameter has one
///   output per field); "const" nodes its constants, whose tensors travel beside the graph in
///   the same order; "op" nodes its calls. "heads" are the region's results, flattened.
/// - Attribute values are tagged as in kiln/runtime/kernel_program.h ({"int": 3}, ...). A
///   *composite* op node (a call of a function matched by a pattern) is named by its pattern
///   and its attrs hold each inner op's attributes keyed by op name, in the inner calls' order;
///   an op that occurs more than once inside gets keys "add", "add#1", "add#2", ...
///
/// The calling convention is the graph executor's: the module's one function, named by the
/// symbol, takes one DLTensor* per input (the input nodes' outputs in order), then one per head.
#ifndef KILN_RUNTIME_JSON_RUNTIME_H_
#define KILN_RUNTIME_JSON_RUNTIME_H_

#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/ffi/tensor.h>
#include <kiln/runtime/module.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace runtime {

/// The graph format version this runtime reads and kiln/codegen/json_graph.h writes.
constexpr int64_t kJsonGraphFormatVersion = 1;

/// The shape and dtype of one tensor of the graph.
struct JsonTensorSpec {
  std::vector<int64_t> shape;
  DLDataType dtype{};
};

/// One value of the graph: output `index` of node `node`.
struct JsonEntry {
  uint32_t node = 0;
  uint32_t index = 0;
};

struct JsonNode {
  enum class Kind { kInput, kConst, kOp };
  Kind kind = Kind::kOp;
  /// The parameter name (input), the constant name (const), the op or pattern name (op).
  std::string name;
  /// An op node that stands for a composite function; its attrs are keyed by inner op.
  bool composite = false;
  /// Op nodes: the decoded attributes; for a composite, op key -> Map<String, Any>.
  Map<String, Any> attrs;
  std::vector<JsonEntry> inputs;
  std::vector<JsonTensorSpec> outputs;
};

struct JsonGraph {
  std::string symbol;
  std::vector<JsonNode> nodes;
  std::vector<JsonEntry> heads;
  /// Indices of the input nodes and of the const nodes, in order.
  std::vector<uint32_t> input_nodes;
  std::vector<uint32_t> const_nodes;

  /// The spec of `entry` (which Parse checked exists).
  const JsonTensorSpec& spec(JsonEntry entry) const {
    return nodes[entry.node].outputs[entry.index];
  }
};

/// Parses and checks `json` (format above): version, node kinds, entries pointing backwards,
/// dtypes. ValueError starting with "JSON graph: " for anything malformed.
KILN_API JsonGraph ParseJsonGraph(const std::string& json);

/// "json/<plugin>/<version>": what a saved `<plugin>_json` module is checked against on load.
KILN_API std::string JsonRuntimeCompatibility(const std::string& plugin, int64_t version);

/// Base of the JSON graph runtimes: a module of kind "<plugin>_json" with one function, named
/// by the graph's symbol, implemented by the subclass's Init and Run.
///
/// Thread safety: the function may be called from any number of threads at once. Init runs
/// once, lazily, on the first call, alone (if it throws, the next call tries again). By default
/// calls are serialized by a mutex held by this base, so Run never runs concurrently and a
/// subclass may keep per-module scratch state (primitives, workspaces) without locking; a
/// subclass that calls AllowConcurrentRuns() has Run called by several threads at once and
/// keeps its per-call state apart itself (the dnnl plugin: a plan per concurrent call).
class KILN_API JsonRuntimeBase : public ModuleObj {
 public:
  /// `plugin` names the runtime ("blas": kind "blas_json", library libkiln_runtime_blas.so);
  /// `version` is the plugin's own format version, bumped when it reads graphs differently.
  /// `constants` are the graph's const nodes' tensors in order (compact CPU tensors of the
  /// specs the graph gives them; shared, not copied). ValueError when the graph is malformed or
  /// a constant is missing or does not match its node.
  JsonRuntimeBase(std::string plugin, int64_t version, std::string graph_json,
                  Array<Tensor> constants);

  std::string kind() const override { return plugin_ + "_json"; }
  std::optional<Function> GetFunction(const std::string& name) override;
  std::vector<std::string> ListFunctions() const override { return {graph_.symbol}; }
  /// The compatibility string, the graph's JSON, then each constant's name and bytes.
  std::optional<Bytes> SaveToBytes() const override;
  std::string compatibility() const override;
  std::string runtime_library() const override { return "libkiln_runtime_" + plugin_ + ".so"; }

  const JsonGraph& graph() const { return graph_; }
  const std::string& graph_json() const { return graph_json_; }
  const Array<Tensor>& constants() const { return constants_; }

 protected:
  /// Prepares the module (creates primitives, packs weights) from the constants, which are in
  /// the order of graph().const_nodes. Called once, before the first Run, under the lock.
  virtual void Init(const Array<Tensor>& constants) = 0;
  /// Computes the heads. `inputs` are the input nodes' outputs in order and `outputs` the heads,
  /// both already checked against the graph's shapes and dtypes. Called under the lock, unless
  /// the subclass allowed concurrent runs.
  virtual void Run(const std::vector<DLTensor*>& inputs, const std::vector<DLTensor*>& outputs) = 0;
  /// Lets Run be called by several threads at once, after Init. Call it from the constructor.
  void AllowConcurrentRuns() { concurrent_runs_ = true; }

 private:
  void Call(const AnyView* args, int32_t num_args);

  std::string plugin_;
  int64_t version_;
  std::string graph_json_;
  JsonGraph graph_;
  Array<Tensor> constants_;
  /// Per argument of a call: its name in errors and the spec it must match (in graph_).
  std::vector<std::pair<std::string, const JsonTensorSpec*>> arguments_;
  std::mutex mutex_;
  bool initialized_ = false;
  bool concurrent_runs_ = false;
};

/// What SaveToBytes wrote, read back: the graph and its constants (freshly allocated CPU
/// tensors). `expected_compatibility` is the loading library's JsonRuntimeCompatibility; a
/// saved module made for another one is a RuntimeError naming both and `runtime_library`.
/// ValueError for truncated or corrupt bytes.
struct SavedJsonModule {
  std::string graph_json;
  Array<Tensor> constants;
};
KILN_API SavedJsonModule ReadSavedJsonModule(const Bytes& bytes,
                                             const std::string& expected_compatibility,
                                             const std::string& runtime_library);

/// The loader of a JsonRuntimeBase subclass T that has static members kPlugin (a string) and
/// kVersion, and a constructor T(std::string graph_json, Array<Tensor> constants).
template <typename T>
Module LoadJsonRuntime(const Bytes& bytes) {
  const std::string plugin = T::kPlugin;
  try {
    SavedJsonModule saved = ReadSavedJsonModule(
        bytes, JsonRuntimeCompatibility(plugin, T::kVersion), "libkiln_runtime_" + plugin + ".so");
    return Module(make_object<T>(std::move(saved.graph_json), std::move(saved.constants)));
  } catch (const Error& error) {
    throw error.WithContext("while loading a '" + plugin + "_json' module");
  }
}

/// A new module of T from the compiler's graph and constants.
template <typename T>
Module CreateJsonRuntime(const String& graph_json, const Array<Tensor>& constants) {
  return Module(make_object<T>(graph_json.str(), constants));
}

}  // namespace runtime
}  // namespace kiln

/// Registers a JsonRuntimeBase subclass under its plugin name Plugin (a string literal equal to
/// T::kPlugin): its loader "runtime.module.load_bytes.<Plugin>_json" and its creator
/// "runtime.module.create.<Plugin>_json(graph_json: str, constants: Array<Tensor>) -> Module",
/// which kiln/codegen/json_graph.h's CreateJsonModules calls.
#define KILN_REGISTER_JSON_RUNTIME(T, Plugin)                       \
  KILN_REGISTER_GLOBAL("runtime.module.load_bytes." Plugin "_json") \
      .set_body_typed(::kiln::runtime::LoadJsonRuntime<T>);         \
  KILN_REGISTER_GLOBAL("runtime.module.create." Plugin "_json")     \
      .set_body_typed(::kiln::runtime::CreateJsonRuntime<T>)

#endif  // KILN_RUNTIME_JSON_RUNTIME_H_
