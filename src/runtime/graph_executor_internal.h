// Private to libkiln_runtime: the graph executor's graph, as parsed and validated from its JSON
// (the schema is documented in kiln/runtime/graph_executor.h).
#ifndef KILN_SRC_RUNTIME_GRAPH_EXECUTOR_INTERNAL_H_
#define KILN_SRC_RUNTIME_GRAPH_EXECUTOR_INTERNAL_H_

#include <kiln/ffi/tensor.h>
#include <kiln/runtime/shape_signature.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {
namespace runtime {
namespace internal {

/// A tensor of the graph: a compact view into a storage.
struct GraphEntry {
  /// Where the graph's plan puts it; only in graphs planned ahead of time.
  int64_t storage = 0;
  int64_t offset = 0;  ///< bytes from the start of the storage
  SymbolicShape shape;
  DLDataType dtype{};
  int64_t bytes = 0;  ///< compact size of `shape` x `dtype`, when the shape is static
};

struct GraphInput {
  std::string name;
  int64_t entry = 0;
};

/// One call: `func(inputs..., outputs...)`, each argument an entry. The last `returns` outputs
/// are not arguments: the function allocates them and returns them (an Array<Tensor>), for
/// outputs whose extents only the call decides (a loop's scan outputs).
struct GraphNode {
  std::string name;
  std::string func;
  std::vector<int64_t> inputs;
  std::vector<int64_t> outputs;
  int64_t returns = 0;
  /// (output, input) positions: the output may be placed in exactly the input's bytes when the
  /// input dies at this node, as the function reads that input before it writes that output (a
  /// kernel program's merged residual, design §41).
  std::vector<std::pair<int64_t, int64_t>> in_place;
};

/// A size constraint the compiler could not decide, checked once per signature: `lhs relation
/// rhs` ("==" or ">="), else a ValueError with `message`.
struct GraphCheck {
  arith::SizeExpr lhs;
  std::string relation;
  arith::SizeExpr rhs;
  std::string message;
};

/// Sizes that a tensor's values decide (docs/design.md §22): once the node writing `entry` (an
/// int64 vector of one element per size) has run, element i is the value of `sizes[i]`. With
/// `axes`, `entry` is an output a node returns and `sizes[i]` is its extent at `axes[i]`.
struct SizeDefinition {
  int64_t entry = 0;
  std::vector<std::string> sizes;
  std::vector<int64_t> axes;
};

/// A validated graph: every id is in range, every entry fits its storage, every entry a node
/// reads was written before, and entries sharing bytes never live at the same time. A graph
/// whose JSON has no "storages" is planned at run time, once per signature (shape_plan.cc):
/// its shapes may be symbolic, read from the inputs.
struct Graph {
  std::optional<DLDevice> device;  ///< absent when the JSON names none
  bool planned_ahead = true;       ///< storages and offsets come with the graph
  std::vector<int64_t> storage_bytes;
  std::vector<GraphEntry> entries;
  std::vector<GraphInput> inputs;
  std::vector<GraphNode> nodes;
  std::vector<int64_t> outputs;  ///< entry ids
  ShapeSignature signature;      ///< of the inputs, in order
  std::vector<GraphCheck> checks;
  std::vector<SizeDefinition> size_definitions;
  /// Derived from size_definitions: per entry, the index of the last definition its shape needs
  /// (-1 when the signature alone gives it); per check, the same; per node, the definitions read
  /// once it has run, and those read before the first.
  std::vector<int64_t> entry_definition;
  std::vector<int64_t> check_definition;
  std::vector<std::vector<int64_t>> definitions_after_node;
  std::vector<int64_t> definitions_before_run;
  bool is_late(int64_t entry) const { return entry_definition[entry] >= 0; }
  /// Per entry: a node returns it (GraphNode::returns), so no run allocates it.
  std::vector<bool> returned;
  bool has_returns = false;
  /// Whether a run, not the plan, provides the entry's tensor: late, or returned by its node.
  bool allocated_by_run(int64_t entry) const {
    return is_late(entry) || returned[static_cast<size_t>(entry)];
  }
  /// Per entry, the node that writes it and the last node that reads it (-1 and nodes.size()
  /// for what lives the whole run); first_use is kUnused for an entry nothing touches.
  std::vector<int64_t> first_use;
  std::vector<int64_t> last_use;
  /// Per entry: the entry its node may place it over (GraphNode::in_place), or -1.
  std::vector<int64_t> placed_over;
  static constexpr int64_t kUnused = std::numeric_limits<int64_t>::min();
};

/// Parses and validates graph JSON; a ValueError names the field, entry or node at fault.
Graph ParseGraphJson(std::string_view json);

/// The JSON of `graph` with "device" set to `device`; ParseGraphJson reads it back.
std::string GraphToJson(const Graph& graph, DLDevice device);

/// "node 2 ('relu0')": how errors name a node.
std::string DescribeNode(const Graph& graph, size_t index);

/// "cpu:0", "cuda:1", or "cpu" for device 0; nullopt for anything else.
std::optional<DLDevice> ParseDevice(std::string_view text);

}  // namespace internal
}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_GRAPH_EXECUTOR_INTERNAL_H_
