// The graph executor's JSON (schema in kiln/runtime/graph_executor.h): parsing with errors that
// name the field at fault, the dataflow and memory-plan checks, and writing it back.
#include <kiln/runtime/device_api.h>
#include <kiln/runtime/graph_executor.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "graph_executor_internal.h"
#include "tensor_util_internal.h"

namespace kiln {
namespace runtime {
namespace internal {
namespace {

using Json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Reading JSON values; `path` is where the value sits ("nodes[2].inputs[0]"), for the errors
// ---------------------------------------------------------------------------------------------

std::string At(const std::string& path, const char* key) {
  return path.empty() ? key : path + "." + key;
}
std::string At(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

/// A JSON value as an error message shows it. Arrays and objects are only named: printing one
/// recurses, and an artifact could hold one nested deep enough to overflow the stack.
std::string Show(const Json& value) {
  if (value.is_structured()) return value.is_array() ? "an array" : "an object";
  std::string text = value.dump();
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

/// An object with only `keys` (not all need be present). Unknown keys are errors, so a
/// misspelt field ("output") is reported rather than silently ignored.
void CheckObject(const Json& value, const std::string& path,
                 std::initializer_list<const char*> keys) {
  const std::string where = path.empty() ? "the top level" : path;
  KILN_CHECK(value.is_object(), ValueError)
      << "graph JSON: " << where << " must be an object, got " << Show(value);
  for (const auto& item : value.items()) {
    const bool known =
        std::any_of(keys.begin(), keys.end(), [&](const char* key) { return item.key() == key; });
    if (known) continue;
    std::string names;
    for (const char* key : keys) names += (names.empty() ? "" : ", ") + std::string(key);
    KILN_THROW(ValueError) << "graph JSON: " << where << " has an unknown field '" << item.key()
                           << "' (known fields: " << names << ")";
  }
}

const Json& Required(const Json& object, const std::string& path, const char* key) {
  auto it = object.find(key);
  KILN_CHECK(it != object.end(), ValueError) << "graph JSON: " << At(path, key) << " is missing";
  return *it;
}

int64_t ReadInt(const Json& value, const std::string& path, int64_t min) {
  const bool fits = value.is_number_integer() &&
                    !(value.is_number_unsigned() &&
                      value.get<uint64_t>() > uint64_t{std::numeric_limits<int64_t>::max()});
  KILN_CHECK(fits, ValueError) << "graph JSON: " << path << " must be an integer, got "
                               << Show(value);
  const auto result = value.get<int64_t>();
  KILN_CHECK(result >= min, ValueError)
      << "graph JSON: " << path << " must be at least " << min << ", got " << result;
  return result;
}

/// "1 entry", "3 entries", "2 storages".
std::string Count(size_t count, std::string_view noun) {
  std::string text = std::to_string(count) + " " + std::string(noun);
  if (count == 1) return text;
  return noun.back() == 'y' ? text.substr(0, text.size() - 1) + "ies" : text + "s";
}

/// An index into the graph's list of `what` ("entry", "storage").
int64_t ReadId(const Json& value, const std::string& path, size_t count, const char* what) {
  const int64_t id = ReadInt(value, path, 0);
  KILN_CHECK(static_cast<uint64_t>(id) < count, ValueError)
      << "graph JSON: " << path << " is " << what << " " << id << ", but the graph has "
      << Count(count, what);
  return id;
}

std::string ReadString(const Json& value, const std::string& path) {
  KILN_CHECK(value.is_string() && !value.get_ref<const std::string&>().empty(), ValueError)
      << "graph JSON: " << path << " must be a non-empty string, got " << Show(value);
  return value.get<std::string>();
}

const Json& ReadArray(const Json& value, const std::string& path) {
  KILN_CHECK(value.is_array(), ValueError)
      << "graph JSON: " << path << " must be an array, got " << Show(value);
  return value;
}

std::vector<int64_t> ReadIds(const Json& value, const std::string& path, size_t count,
                             const char* what) {
  const Json& array = ReadArray(value, path);
  std::vector<int64_t> ids;
  for (size_t i = 0; i < array.size(); ++i)
    ids.push_back(ReadId(array[i], At(path, i), count, what));
  return ids;
}

// ---------------------------------------------------------------------------------------------
// The parts of a graph
// ---------------------------------------------------------------------------------------------

std::string DescribeEntry(const GraphEntry& entry) {
  std::ostringstream os;
  os << DataTypeToString(entry.dtype) << " " << SymbolicShapeToString(entry.shape) << ", "
     << entry.bytes << " bytes at offset " << entry.offset;
  return os.str();
}

/// Whether `entry` holds no element whatever its sizes: one of its extents is 0.
bool HasNoElement(const GraphEntry& entry) {
  return std::any_of(entry.shape.begin(), entry.shape.end(),
                     [](const arith::SizeExpr& extent) { return extent.as_int() == 0; });
}

/// The compact size of a static `shape` of `dtype`; a ValueError when it does not fit in an
/// int64.
int64_t CompactBytes(const std::vector<int64_t>& shape, DLDataType dtype, const std::string& path) {
  int64_t bytes = ElementBytes(dtype);
  for (int64_t extent : shape) {
    KILN_CHECK(!__builtin_mul_overflow(bytes, extent, &bytes), ValueError)
        << "graph JSON: " << path << " of shape " << Shape(shape) << " " << DataTypeToString(dtype)
        << " needs more than 2^63 bytes";
  }
  return bytes;
}

/// An extent: a non-negative integer or the text of a size expression ("batch", "seq * 2").
arith::SizeExpr ReadExtent(const Json& value, const std::string& path) {
  if (!value.is_string()) return arith::IntImm(ReadInt(value, path, 0));
  arith::SizeExpr extent = ParseExtent(value.get<std::string>(), "graph JSON: " + path);
  const std::optional<int64_t> constant = extent.as_int();
  KILN_CHECK(!constant.has_value() || *constant >= 0, ValueError)
      << "graph JSON: " << path << " must be >= 0, got " << Show(value);
  return extent;
}

GraphEntry ParseEntry(const Json& value, const std::string& path, const Graph& graph) {
  CheckObject(value, path, {"storage", "offset", "shape", "dtype"});
  GraphEntry entry;
  const Json& shape = ReadArray(Required(value, path, "shape"), At(path, "shape"));
  for (size_t i = 0; i < shape.size(); ++i) {
    entry.shape.push_back(ReadExtent(shape[i], At(At(path, "shape"), i)));
  }
  const std::string dtype = ReadString(Required(value, path, "dtype"), At(path, "dtype"));
  std::optional<DLDataType> parsed = ParseDataType(dtype);
  KILN_CHECK(parsed.has_value(), ValueError)
      << "graph JSON: " << At(path, "dtype") << " '" << dtype
      << "' is not a data type (float32, int64, bool, float16x4, ...)";
  entry.dtype = *parsed;
  if (!graph.planned_ahead) {
    KILN_CHECK(!value.contains("storage") && !value.contains("offset"), ValueError)
        << "graph JSON: " << path << " has a storage, but the graph has no \"storages\" (it is "
        << "planned at run time)";
    return entry;
  }
  KILN_CHECK(IsStatic(entry.shape), ValueError)
      << "graph JSON: " << path << " has the symbolic shape " << SymbolicShapeToString(entry.shape)
      << " in a graph planned ahead of time (one with \"storages\")";
  std::vector<int64_t> extents;
  for (const arith::SizeExpr& extent : entry.shape) extents.push_back(*extent.as_int());
  entry.bytes = CompactBytes(extents, entry.dtype, path);
  entry.storage = ReadId(Required(value, path, "storage"), At(path, "storage"),
                         graph.storage_bytes.size(), "storage");
  entry.offset = ReadInt(Required(value, path, "offset"), At(path, "offset"), 0);

  // Kernels load whole elements: a misaligned one is undefined behaviour on most targets.
  const int64_t element_bytes = ElementBytes(entry.dtype);
  KILN_CHECK(entry.offset % element_bytes == 0, ValueError)
      << "graph JSON: " << path << " (" << DescribeEntry(entry) << ") is not aligned to its "
      << element_bytes << "-byte elements";
  const int64_t capacity = graph.storage_bytes[entry.storage];
  KILN_CHECK(entry.offset <= capacity && entry.bytes <= capacity - entry.offset, ValueError)
      << "graph JSON: " << path << " (" << DescribeEntry(entry) << ") does not fit in storage "
      << entry.storage << " of " << capacity << " bytes";
  return entry;
}

GraphInput ParseInput(const Json& value, const std::string& path, size_t num_entries) {
  CheckObject(value, path, {"name", "entry"});
  GraphInput input;
  input.name = ReadString(Required(value, path, "name"), At(path, "name"));
  input.entry = ReadId(Required(value, path, "entry"), At(path, "entry"), num_entries, "entry");
  return input;
}

/// A node's "in_place" pairs, {"output": position, "input": position}.
std::vector<std::pair<int64_t, int64_t>> ParseInPlace(const Json& value, const std::string& path,
                                                      const GraphNode& node) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  const Json& items = ReadArray(value, path);
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string item = At(path, i);
    CheckObject(items[i], item, {"output", "input"});
    const int64_t output = ReadInt(Required(items[i], item, "output"), At(item, "output"), 0);
    const int64_t input = ReadInt(Required(items[i], item, "input"), At(item, "input"), 0);
    KILN_CHECK(output < static_cast<int64_t>(node.outputs.size() - node.returns) &&
                   input < static_cast<int64_t>(node.inputs.size()),
               ValueError)
        << "graph JSON: " << item << " places output " << output << " over input " << input
        << ", but the node has " << Count(node.inputs.size(), "input") << " and "
        << Count(node.outputs.size() - node.returns, "output") << " the graph allocates";
    pairs.emplace_back(output, input);
  }
  return pairs;
}

GraphNode ParseNode(const Json& value, const std::string& path, size_t num_entries) {
  CheckObject(value, path, {"name", "func", "inputs", "outputs", "returns", "in_place"});
  GraphNode node;
  node.name = ReadString(Required(value, path, "name"), At(path, "name"));
  // Node names are for people; errors from here on say which node ("nodes[2] ('relu0')").
  const std::string named = path + " ('" + node.name + "')";
  node.func = ReadString(Required(value, path, "func"), At(named, "func"));
  node.inputs = ReadIds(Required(value, path, "inputs"), At(named, "inputs"), num_entries, "entry");
  node.outputs =
      ReadIds(Required(value, path, "outputs"), At(named, "outputs"), num_entries, "entry");
  if (value.contains("returns")) {
    node.returns = ReadInt(value.at("returns"), At(named, "returns"), 0);
    KILN_CHECK(node.returns <= static_cast<int64_t>(node.outputs.size()), ValueError)
        << "graph JSON: " << At(named, "returns") << " is " << node.returns << ", but the node has "
        << node.outputs.size() << " outputs";
  }
  if (value.contains("in_place")) {
    node.in_place = ParseInPlace(value.at("in_place"), At(named, "in_place"), node);
  }
  return node;
}

void ParseVersion(const Json& root) {
  KILN_CHECK(root.is_object(), ValueError)
      << "graph JSON: the top level must be an object, got " << Show(root);
  const int64_t version = ReadInt(Required(root, "", "version"), "version", 1);
  KILN_CHECK(version <= kGraphFormatVersion, ValueError)
      << "graph JSON: format version " << version << " is not supported; this runtime reads "
      << "versions 1 to " << kGraphFormatVersion;
}

std::optional<DLDevice> ParseDeviceField(const Json& root) {
  auto it = root.find("device");
  if (it == root.end()) return std::nullopt;
  const std::string text = ReadString(*it, "device");
  std::optional<DLDevice> device = ParseDevice(text);
  KILN_CHECK(device.has_value(), ValueError)
      << "graph JSON: device '" << text << "' is not a device (\"cpu:0\", \"cuda:1\", ...)";
  return device;
}

// ---------------------------------------------------------------------------------------------
// Dataflow and memory plan
// ---------------------------------------------------------------------------------------------

void CheckInputs(const Graph& graph) {
  std::unordered_map<std::string, size_t> names;
  std::unordered_map<int64_t, size_t> entries;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const GraphInput& input = graph.inputs[i];
    auto [name, new_name] = names.emplace(input.name, i);
    KILN_CHECK(new_name, ValueError) << "graph JSON: inputs[" << name->second << "] and inputs["
                                     << i << "] are both named '" << input.name << "'";
    auto [entry, new_entry] = entries.emplace(input.entry, i);
    KILN_CHECK(new_entry, ValueError)
        << "graph JSON: inputs '" << graph.inputs[entry->second].name << "' and '" << input.name
        << "' are both entry " << input.entry;
  }
}

/// Checks that nodes read only entries already written (or inputs), that each entry is
/// written once and no input is written, and that every graph output gets a value; sets the
/// graph's lifetimes.
void CheckDataflow(Graph& graph) {
  const auto end = static_cast<int64_t>(graph.nodes.size());
  std::vector<int64_t>& first = graph.first_use;
  std::vector<int64_t>& last = graph.last_use;
  first.assign(graph.entries.size(), Graph::kUnused);
  last.assign(graph.entries.size(), Graph::kUnused);
  for (const GraphInput& input : graph.inputs) {
    first[input.entry] = -1;
    last[input.entry] = end;
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = graph.nodes[i];
    const auto index = static_cast<int64_t>(i);
    for (int64_t entry : node.inputs) {
      // An empty entry has nothing to write: a size carrier (a (n, 0) tensor a kernel program
      // reads n from) is read unwritten, from the first node that reads it.
      if (first[entry] == Graph::kUnused && HasNoElement(graph.entries[entry]))
        first[entry] = index;
      KILN_CHECK(first[entry] != Graph::kUnused, ValueError)
          << "graph JSON: " << DescribeNode(graph, i) << " reads entry " << entry
          << " before any node writes it (and no input names it)";
      last[entry] = std::max(last[entry], index);
    }
    for (int64_t entry : node.outputs) {
      const int64_t writer = first[entry];
      KILN_CHECK(writer == Graph::kUnused, ValueError)
          << "graph JSON: " << DescribeNode(graph, i) << " writes entry " << entry << ", which "
          << (writer < 0
                  ? "is an input"
                  : "is already written by " + DescribeNode(graph, static_cast<size_t>(writer)));
      first[entry] = index;
      last[entry] = index;  // an output nobody reads still occupies its bytes in the node
    }
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const int64_t entry = graph.outputs[i];
    KILN_CHECK(first[entry] != Graph::kUnused, ValueError)
        << "graph JSON: outputs[" << i << "] is entry " << entry
        << ", which no node writes and no input names";
    last[entry] = end;
  }
}

/// Each "in_place" pair joins an output and an input of one shape and dtype, the input passed
/// to the node once and each output placed over one input; sets the graph's placed_over.
void CheckInPlace(Graph& graph) {
  graph.placed_over.assign(graph.entries.size(), -1);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& node = graph.nodes[i];
    for (const auto& [output, input] : node.in_place) {
      const int64_t out = node.outputs[output];
      const int64_t in = node.inputs[input];
      const GraphEntry& a = graph.entries[out];
      const GraphEntry& b = graph.entries[in];
      const bool same =
          DataTypeEqual(a.dtype, b.dtype) && a.shape.size() == b.shape.size() &&
          std::equal(a.shape.begin(), a.shape.end(), b.shape.begin(), arith::StructuralEqual);
      KILN_CHECK(same && std::count(node.inputs.begin(), node.inputs.end(), in) == 1 &&
                     graph.placed_over[out] < 0,
                 ValueError)
          << "graph JSON: " << DescribeNode(graph, i) << " places output " << output << " ("
          << DescribeEntry(a) << ") over input " << input << " (" << DescribeEntry(b)
          << "): an output may be placed over one input of its shape and dtype, which the node "
             "is passed once";
      graph.placed_over[out] = in;
    }
  }
}

std::string DescribeLifetime(const Graph& graph, int64_t entry) {
  const int64_t first = graph.first_use[entry];
  const int64_t last = graph.last_use[entry];
  std::string text =
      first < 0 ? "an input" : "written by " + DescribeNode(graph, static_cast<size_t>(first));
  if (last == static_cast<int64_t>(graph.nodes.size())) {
    return text + ", live to the end of the run";
  }
  return text + ", live until " + DescribeNode(graph, static_cast<size_t>(last));
}

/// Whether entry `e` takes the bytes of `under` at the node that writes it: it may be placed
/// over it (CheckInPlace), has exactly its bytes, and `under` dies at that node.
bool TakesOver(const Graph& graph, int64_t e, int64_t under) {
  const GraphEntry& a = graph.entries[e];
  const GraphEntry& b = graph.entries[under];
  return graph.placed_over[e] == under && a.storage == b.storage && a.offset == b.offset &&
         a.bytes == b.bytes && graph.last_use[under] == graph.first_use[e];
}

/// Entries that share bytes of a storage must not be live at the same node, but for an entry
/// and the one it takes over (TakesOver). A sweep over the nodes keeps, per storage, the live
/// entries by offset; they never overlap one another, so a new entry need only be compared
/// with its two neighbours: O(entries log entries).
void CheckMemoryPlan(const Graph& graph) {
  const size_t steps = graph.nodes.size() + 2;  // before the first node, each node, the end
  std::vector<std::vector<int64_t>> starts(steps);
  std::vector<std::vector<int64_t>> ends(steps);
  for (size_t e = 0; e < graph.entries.size(); ++e) {
    // An empty entry has no bytes to clobber; one nothing touches is never live.
    if (graph.first_use[e] == Graph::kUnused || graph.entries[e].bytes == 0) continue;
    starts[graph.first_use[e] + 1].push_back(static_cast<int64_t>(e));
    ends[graph.last_use[e] + 1].push_back(static_cast<int64_t>(e));
  }
  std::vector<std::map<int64_t, int64_t>> live(graph.storage_bytes.size());  // offset -> entry
  auto conflict = [&](int64_t a, int64_t b) {
    const GraphEntry& x = graph.entries[a];
    const GraphEntry& y = graph.entries[b];
    KILN_THROW(ValueError) << "graph JSON: memory plan: entries " << b << " and " << a
                           << " share bytes [" << std::max(x.offset, y.offset) << ", "
                           << std::min(x.offset + x.bytes, y.offset + y.bytes) << ") of storage "
                           << x.storage << " while both are live (entry " << b << " is "
                           << DescribeLifetime(graph, b) << "; entry " << a << " is "
                           << DescribeLifetime(graph, a) << ")";
  };
  for (size_t step = 0; step < steps; ++step) {
    for (int64_t e : starts[step]) {
      const GraphEntry& entry = graph.entries[e];
      std::map<int64_t, int64_t>& in_storage = live[entry.storage];
      auto next = in_storage.lower_bound(entry.offset);
      if (next != in_storage.end() && TakesOver(graph, e, next->second)) {
        next->second = e;
        continue;
      }
      if (next != in_storage.end() && next->first < entry.offset + entry.bytes) {
        conflict(e, next->second);
      }
      if (next != in_storage.begin()) {
        const int64_t before = std::prev(next)->second;
        const GraphEntry& prev = graph.entries[before];
        if (prev.offset + prev.bytes > entry.offset) conflict(e, before);
      }
      in_storage.emplace(entry.offset, e);
    }
    for (int64_t e : ends[step]) {
      std::map<int64_t, int64_t>& in_storage = live[graph.entries[e].storage];
      auto it = in_storage.find(graph.entries[e].offset);
      if (it != in_storage.end() && it->second == e) in_storage.erase(it);  // not taken over
    }
  }
}

GraphCheck ParseCheck(const Json& value, const std::string& path) {
  CheckObject(value, path, {"lhs", "relation", "rhs", "message"});
  GraphCheck check;
  check.lhs = ReadExtent(Required(value, path, "lhs"), At(path, "lhs"));
  check.relation = ReadString(Required(value, path, "relation"), At(path, "relation"));
  KILN_CHECK(check.relation == "==" || check.relation == ">=", ValueError)
      << "graph JSON: " << At(path, "relation") << " must be \"==\" or \">=\", got '"
      << check.relation << "'";
  check.rhs = ReadExtent(Required(value, path, "rhs"), At(path, "rhs"));
  check.message = ReadString(Required(value, path, "message"), At(path, "message"));
  return check;
}

SizeDefinition ParseSizeDefinition(const Json& value, const std::string& path, size_t num_entries) {
  CheckObject(value, path, {"entry", "sizes", "axes"});
  SizeDefinition definition;
  definition.entry =
      ReadId(Required(value, path, "entry"), At(path, "entry"), num_entries, "entry");
  const Json& sizes = ReadArray(Required(value, path, "sizes"), At(path, "sizes"));
  for (size_t i = 0; i < sizes.size(); ++i) {
    definition.sizes.push_back(ReadString(sizes[i], At(At(path, "sizes"), i)));
  }
  if (value.contains("axes")) {
    const Json& axes = ReadArray(value.at("axes"), At(path, "axes"));
    for (size_t i = 0; i < axes.size(); ++i) {
      definition.axes.push_back(ReadInt(axes[i], At(At(path, "axes"), i), 0));
    }
    KILN_CHECK(definition.axes.size() == definition.sizes.size(), ValueError)
        << "graph JSON: " << At(path, "axes") << " needs one axis per size ("
        << definition.sizes.size() << "), got " << definition.axes.size();
  }
  return definition;
}

/// Checks a definition by the shape of a returned output: each size is the bare extent of its
/// axis, which only that output's node can decide.
void CheckShapeDefinition(const Graph& graph, const SizeDefinition& definition,
                          const std::string& path) {
  const GraphEntry& entry = graph.entries[definition.entry];
  KILN_CHECK(graph.returned[definition.entry], ValueError)
      << path << " reads sizes from the entry's shape, so a node must return it (\"returns\")";
  for (size_t i = 0; i < definition.axes.size(); ++i) {
    const int64_t axis = definition.axes[i];
    KILN_CHECK(axis < static_cast<int64_t>(entry.shape.size()) &&
                   entry.shape[axis].ToString() == definition.sizes[i],
               ValueError)
        << path << " defines the size '" << definition.sizes[i] << "' as the extent of axis "
        << axis << " of " << DescribeEntry(entry) << ", which is not that size";
  }
}

/// Checks the size definitions and orders them as a run reads them (by the node writing their
/// entry); fills the graph's definitions_after_node and definitions_before_run.
void ReadSizeDefinitions(Graph& graph) {
  std::stable_sort(graph.size_definitions.begin(), graph.size_definitions.end(),
                   [&](const SizeDefinition& a, const SizeDefinition& b) {
                     return graph.first_use[a.entry] < graph.first_use[b.entry];
                   });
  const std::vector<std::string>& inputs = graph.signature.variables();
  std::set<std::string> defined(inputs.begin(), inputs.end());
  graph.definitions_after_node.assign(graph.nodes.size(), {});
  for (size_t d = 0; d < graph.size_definitions.size(); ++d) {
    const SizeDefinition& definition = graph.size_definitions[d];
    const GraphEntry& entry = graph.entries[definition.entry];
    const std::string path =
        "graph JSON: the size definition of entry " + std::to_string(definition.entry);
    if (!definition.axes.empty()) {
      CheckShapeDefinition(graph, definition, path);
    } else {
      KILN_CHECK(DataTypeEqual(entry.dtype, DLDataType{kDLInt, 64, 1}) && entry.shape.size() == 1 &&
                     entry.shape[0].as_int() == static_cast<int64_t>(definition.sizes.size()),
                 ValueError)
          << path << " defines " << definition.sizes.size()
          << " sizes, so the entry must be int64 (" << definition.sizes.size() << ",), got "
          << DescribeEntry(entry);
    }
    KILN_CHECK(graph.first_use[definition.entry] != Graph::kUnused, ValueError)
        << path << ": no node writes the entry and no input names it";
    for (const std::string& name : definition.sizes) {
      KILN_CHECK(defined.insert(name).second, ValueError)
          << path << " defines the size '" << name << "', which is already defined";
    }
    const int64_t writer = graph.first_use[definition.entry];
    (writer < 0 ? graph.definitions_before_run
                : graph.definitions_after_node[static_cast<size_t>(writer)])
        .push_back(static_cast<int64_t>(d));
  }
}

/// The index of the last size definition `shape` needs, -1 when the signature gives all its
/// sizes; a ValueError naming `what` for a size nothing defines.
int64_t DefinitionNeeded(const Graph& graph, const SymbolicShape& shape, const std::string& what) {
  int64_t needed = -1;
  SymbolicShape early;
  for (const arith::SizeExpr& extent : shape) {
    bool late = false;
    for (const std::string& name : arith::FreeSizeVars(extent)) {
      for (size_t d = 0; d < graph.size_definitions.size(); ++d) {
        const std::vector<std::string>& sizes = graph.size_definitions[d].sizes;
        if (std::find(sizes.begin(), sizes.end(), name) == sizes.end()) continue;
        needed = std::max(needed, static_cast<int64_t>(d));
        late = true;
      }
    }
    if (!late) early.push_back(extent);
  }
  graph.signature.CheckReadable(early, what);
  return needed;
}

/// The graph's signature: its inputs' shapes, from which every size variable of an entry must
/// be readable unless a size definition gives it; an entry that needs a late size must be
/// written after the size is read.
void ReadSignature(Graph& graph) {
  std::vector<SymbolicShape> shapes;
  std::vector<std::string> names;
  for (const GraphInput& input : graph.inputs) {
    shapes.push_back(graph.entries[input.entry].shape);
    names.push_back("input '" + input.name + "'");
  }
  graph.signature = ShapeSignature(std::move(shapes), std::move(names));
  ReadSizeDefinitions(graph);
  for (size_t i = 0; i < graph.entries.size(); ++i) {
    const std::string what = "graph JSON: " + At("entries", i);
    const int64_t needed = DefinitionNeeded(graph, graph.entries[i].shape, what);
    graph.entry_definition.push_back(needed);
    if (needed < 0 || graph.first_use[i] == Graph::kUnused) continue;
    const int64_t defined_by = graph.first_use[graph.size_definitions[needed].entry];
    // A returned output is written by the call that decides its sizes.
    const bool own = graph.returned[i] && graph.first_use[i] == defined_by;
    KILN_CHECK(graph.first_use[i] > defined_by || own, ValueError)
        << what << " of shape " << SymbolicShapeToString(graph.entries[i].shape)
        << " is written before its sizes are defined (by entry "
        << graph.size_definitions[needed].entry << ")";
  }
  for (size_t i = 0; i < graph.checks.size(); ++i) {
    graph.check_definition.push_back(DefinitionNeeded(
        graph, {graph.checks[i].lhs, graph.checks[i].rhs}, "graph JSON: " + At("checks", i)));
  }
}

}  // namespace

Graph ParseGraphJson(std::string_view json) {
  Json root;
  try {
    root = Json::parse(json.begin(), json.end());
  } catch (const Json::exception& error) {
    KILN_THROW(ValueError) << "graph JSON does not parse: " << error.what();
  }
  // The version comes first: a newer format may have fields this reader does not know.
  ParseVersion(root);
  CheckObject(root, "",
              {"version", "device", "storages", "entries", "inputs", "nodes", "outputs", "checks",
               "size_definitions"});
  Graph graph;
  graph.device = ParseDeviceField(root);
  graph.planned_ahead = root.contains("storages");
  if (graph.planned_ahead) {
    const Json& storages = ReadArray(root.at("storages"), "storages");
    for (size_t i = 0; i < storages.size(); ++i) {
      CheckObject(storages[i], At("storages", i), {"bytes"});
      graph.storage_bytes.push_back(ReadInt(Required(storages[i], At("storages", i), "bytes"),
                                            At(At("storages", i), "bytes"), 0));
    }
  }
  const Json& entries = ReadArray(Required(root, "", "entries"), "entries");
  for (size_t i = 0; i < entries.size(); ++i) {
    graph.entries.push_back(ParseEntry(entries[i], At("entries", i), graph));
  }
  const Json& inputs = ReadArray(Required(root, "", "inputs"), "inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    graph.inputs.push_back(ParseInput(inputs[i], At("inputs", i), graph.entries.size()));
  }
  const Json& nodes = ReadArray(Required(root, "", "nodes"), "nodes");
  for (size_t i = 0; i < nodes.size(); ++i) {
    graph.nodes.push_back(ParseNode(nodes[i], At("nodes", i), graph.entries.size()));
  }
  graph.outputs = ReadIds(Required(root, "", "outputs"), "outputs", graph.entries.size(), "entry");
  if (root.contains("checks")) {
    const Json& checks = ReadArray(root.at("checks"), "checks");
    for (size_t i = 0; i < checks.size(); ++i) {
      graph.checks.push_back(ParseCheck(checks[i], At("checks", i)));
    }
  }

  if (root.contains("size_definitions")) {
    const Json& definitions = ReadArray(root.at("size_definitions"), "size_definitions");
    for (size_t i = 0; i < definitions.size(); ++i) {
      graph.size_definitions.push_back(
          ParseSizeDefinition(definitions[i], At("size_definitions", i), graph.entries.size()));
    }
    KILN_CHECK(graph.size_definitions.empty() || !graph.planned_ahead, ValueError)
        << "graph JSON: a graph with \"size_definitions\" is planned at run time (it has no "
           "\"storages\")";
  }

  CheckInputs(graph);
  CheckDataflow(graph);
  CheckInPlace(graph);
  graph.returned.assign(graph.entries.size(), false);
  for (const GraphNode& node : graph.nodes) {
    for (size_t k = node.outputs.size() - static_cast<size_t>(node.returns);
         k < node.outputs.size(); ++k) {
      graph.returned[node.outputs[k]] = true;
      graph.has_returns = true;
    }
  }
  if (graph.planned_ahead) CheckMemoryPlan(graph);
  ReadSignature(graph);
  return graph;
}

namespace {

using Ordered = nlohmann::ordered_json;

/// An extent as the JSON writes it: a number, or a size expression's text.
Ordered ExtentJson(const arith::SizeExpr& extent) {
  const std::optional<int64_t> constant = extent.as_int();
  return constant.has_value() ? Ordered(*constant) : Ordered(extent.ToString());
}

}  // namespace

std::string GraphToJson(const Graph& graph, DLDevice device) {
  // ordered_json keeps the fields in the order of the documented schema.
  Ordered root;
  root["version"] = kGraphFormatVersion;
  root["device"] = DeviceToString(device);
  if (graph.planned_ahead) {
    root["storages"] = Ordered::array();
    for (int64_t bytes : graph.storage_bytes) root["storages"].push_back({{"bytes", bytes}});
  }
  root["entries"] = Ordered::array();
  for (const GraphEntry& entry : graph.entries) {
    Ordered shape = Ordered::array();
    for (const arith::SizeExpr& extent : entry.shape) shape.push_back(ExtentJson(extent));
    Ordered item;
    if (graph.planned_ahead) {
      item["storage"] = entry.storage;
      item["offset"] = entry.offset;
    }
    item["shape"] = std::move(shape);
    item["dtype"] = DataTypeToString(entry.dtype);
    root["entries"].push_back(std::move(item));
  }
  root["inputs"] = Ordered::array();
  for (const GraphInput& input : graph.inputs) {
    root["inputs"].push_back({{"name", input.name}, {"entry", input.entry}});
  }
  root["nodes"] = Ordered::array();
  for (const GraphNode& node : graph.nodes) {
    root["nodes"].push_back({{"name", node.name},
                             {"func", node.func},
                             {"inputs", node.inputs},
                             {"outputs", node.outputs}});
    if (node.returns > 0) root["nodes"].back()["returns"] = node.returns;
    for (const auto& [output, input] : node.in_place) {
      root["nodes"].back()["in_place"].push_back({{"output", output}, {"input", input}});
    }
  }
  root["outputs"] = graph.outputs;
  if (!graph.checks.empty()) {
    root["checks"] = Ordered::array();
    for (const GraphCheck& check : graph.checks) {
      root["checks"].push_back({{"lhs", ExtentJson(check.lhs)},
                                {"relation", check.relation},
                                {"rhs", ExtentJson(check.rhs)},
                                {"message", check.message}});
    }
  }
  if (!graph.size_definitions.empty()) {
    root["size_definitions"] = Ordered::array();
    for (const SizeDefinition& definition : graph.size_definitions) {
      root["size_definitions"].push_back(
          {{"entry", definition.entry}, {"sizes", definition.sizes}});
      if (!definition.axes.empty()) root["size_definitions"].back()["axes"] = definition.axes;
    }
  }
  return root.dump();
}

std::string DescribeNode(const Graph& graph, size_t index) {
  return "nodes[" + std::to_string(index) + "] ('" + graph.nodes[index].name + "')";
}

std::optional<DLDevice> ParseDevice(std::string_view text) {
  const size_t colon = text.find(':');
  std::optional<int32_t> type = DeviceTypeFromName(text.substr(0, colon));
  if (!type.has_value()) return std::nullopt;
  int32_t id = 0;
  if (colon != std::string_view::npos) {
    const char* end = text.data() + text.size();
    auto [ptr, error] = std::from_chars(text.data() + colon + 1, end, id);
    if (error != std::errc() || ptr != end || id < 0) return std::nullopt;
  }
  return DLDevice{static_cast<DLDeviceType>(*type), id};
}

}  // namespace internal
}  // namespace runtime
}  // namespace kiln
