// JsonRuntimeBase (kiln/runtime/json_runtime.h): parsing and checking the JSON graph, the
// locked lazy Init, argument checks, and the saved form.
#include <kiln/runtime/byte_stream.h>
#include <kiln/runtime/json_runtime.h>
#include <kiln/runtime/memory.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../runtime/tagged_attrs_internal.h"

namespace kiln {
namespace runtime {
namespace {

using Json = nlohmann::json;

constexpr const char* kPrefix = "JSON graph: ";

/// Compact bytes of `spec`; ValueError when a dimension is negative or the size overflows.
int64_t SpecBytes(const JsonTensorSpec& spec) {
  int64_t bytes = ElementBytes(spec.dtype);
  for (int64_t extent : spec.shape) {
    KILN_CHECK(extent >= 0 && !__builtin_mul_overflow(bytes, extent, &bytes), ValueError)
        << kPrefix << "a tensor of shape " << Shape(spec.shape) << " is negative or too large";
  }
  return bytes;
}

JsonTensorSpec ReadSpec(const Json& value) {
  JsonTensorSpec spec;
  spec.shape = value.at("shape").get<std::vector<int64_t>>();
  const auto dtype_name = value.at("dtype").get<std::string>();
  const std::optional<DLDataType> dtype = ParseDataType(dtype_name);
  KILN_CHECK(dtype.has_value(), ValueError) << kPrefix << "unknown dtype '" << dtype_name << "'";
  spec.dtype = *dtype;
  SpecBytes(spec);
  return spec;
}

/// [node, output], which must name an output of one of the first `num_nodes` nodes.
JsonEntry ReadEntry(const Json& value, const std::vector<JsonNode>& nodes) {
  const auto pair = value.get<std::vector<uint32_t>>();
  KILN_CHECK(pair.size() == 2 && pair[0] < nodes.size() && pair[1] < nodes[pair[0]].outputs.size(),
             ValueError)
      << kPrefix << "entry " << value.dump() << " does not name an output of an earlier node";
  return JsonEntry{pair[0], pair[1]};
}

Map<String, Any> ReadAttrs(const Json& node, bool composite) {
  if (!node.contains("attrs")) return {};
  const Json& attrs = node.at("attrs");
  if (!composite) return tagged_attrs::DecodeAll(attrs, kPrefix);
  KILN_CHECK(attrs.is_object(), ValueError) << kPrefix << "attributes must be a JSON object";
  Map<String, Any> per_op;
  for (const auto& inner : attrs.items()) {
    per_op.Set(String(inner.key()), tagged_attrs::DecodeAll(inner.value(), kPrefix));
  }
  return per_op;
}

JsonNode ReadNode(const Json& value, const std::vector<JsonNode>& earlier) {
  JsonNode node;
  const auto kind = value.at("kind").get<std::string>();
  if (kind == "input" || kind == "const") {
    node.kind = kind == "input" ? JsonNode::Kind::kInput : JsonNode::Kind::kConst;
    node.name = value.at("name").get<std::string>();
  } else {
    KILN_CHECK(kind == "op", ValueError)
        << kPrefix << "node kind '" << kind << "' is not input, const or op";
    node.name = value.at("op").get<std::string>();
    node.composite = value.value("composite", false);
    node.attrs = ReadAttrs(value, node.composite);
    for (const Json& input : value.at("inputs")) node.inputs.push_back(ReadEntry(input, earlier));
  }
  KILN_CHECK(!node.name.empty(), ValueError) << kPrefix << "a " << kind << " node has no name";
  for (const Json& output : value.at("outputs")) node.outputs.push_back(ReadSpec(output));
  KILN_CHECK(node.kind != JsonNode::Kind::kConst || node.outputs.size() == 1, ValueError)
      << kPrefix << "const node '" << node.name << "' must have one output";
  return node;
}

std::string Describe(const std::vector<int64_t>& shape, DLDataType dtype) {
  std::ostringstream text;
  text << Shape(shape) << " " << DataTypeToString(dtype);
  return text.str();
}

/// True when `tensor` is a compact tensor of `spec`.
bool Matches(const DLTensor& tensor, const JsonTensorSpec& spec) {
  return static_cast<size_t>(tensor.ndim) == spec.shape.size() &&
         std::equal(spec.shape.begin(), spec.shape.end(), tensor.shape) &&
         DataTypeEqual(tensor.dtype, spec.dtype) && IsCompact(tensor);
}

}  // namespace

JsonGraph ParseJsonGraph(const std::string& json) {
  JsonGraph graph;
  try {
    const Json document = Json::parse(json);
    const auto version = document.at("version").get<int64_t>();
    KILN_CHECK(version == kJsonGraphFormatVersion, ValueError)
        << kPrefix << "format version " << version << " is not supported (this runtime reads "
        << kJsonGraphFormatVersion << ")";
    graph.symbol = document.at("symbol").get<std::string>();
    KILN_CHECK(!graph.symbol.empty(), ValueError) << kPrefix << "the symbol is empty";
    for (const Json& value : document.at("nodes")) {
      JsonNode node = ReadNode(value, graph.nodes);
      const auto index = static_cast<uint32_t>(graph.nodes.size());
      if (node.kind == JsonNode::Kind::kInput) graph.input_nodes.push_back(index);
      if (node.kind == JsonNode::Kind::kConst) graph.const_nodes.push_back(index);
      graph.nodes.push_back(std::move(node));
    }
    for (const Json& head : document.at("heads")) {
      graph.heads.push_back(ReadEntry(head, graph.nodes));
    }
  } catch (const Json::exception& error) {
    KILN_THROW(ValueError) << kPrefix << "malformed: " << error.what();
  }
  return graph;
}

std::string JsonRuntimeCompatibility(const std::string& plugin, int64_t version) {
  return "json/" + plugin + "/" + std::to_string(version);
}

// ---------------------------------------------------------------------------------------------
// JsonRuntimeBase
// ---------------------------------------------------------------------------------------------

JsonRuntimeBase::JsonRuntimeBase(std::string plugin, int64_t version, std::string graph_json,
                                 Array<Tensor> constants)
    : plugin_(std::move(plugin)),
      version_(version),
      graph_json_(std::move(graph_json)),
      graph_(ParseJsonGraph(graph_json_)),
      constants_(std::move(constants)) {
  KILN_CHECK(static_cast<size_t>(constants_.size()) == graph_.const_nodes.size(), ValueError)
      << "JSON graph '" << graph_.symbol << "' has " << graph_.const_nodes.size()
      << " constants, but " << constants_.size() << " tensors were given";
  for (size_t i = 0; i < graph_.const_nodes.size(); ++i) {
    const JsonNode& node = graph_.nodes[graph_.const_nodes[i]];
    const Tensor& tensor = constants_[static_cast<int64_t>(i)];
    KILN_CHECK(tensor.defined() && tensor.device().device_type == kDLCPU &&
                   Matches(tensor.dl_tensor(), node.outputs[0]),
               ValueError)
        << "JSON graph '" << graph_.symbol << "': constant '" << node.name << "' must be a "
        << "compact CPU tensor of " << Describe(node.outputs[0].shape, node.outputs[0].dtype);
  }
  // What each argument of a call must be, named for errors: the input nodes' outputs in order,
  // then the heads.
  for (uint32_t index : graph_.input_nodes) {
    const JsonNode& node = graph_.nodes[index];
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string field = node.outputs.size() > 1 ? " field " + std::to_string(i) : "";
      arguments_.emplace_back("input '" + node.name + "'" + field, &node.outputs[i]);
    }
  }
  for (size_t i = 0; i < graph_.heads.size(); ++i) {
    arguments_.emplace_back("output " + std::to_string(i), &graph_.spec(graph_.heads[i]));
  }
}

std::string JsonRuntimeBase::compatibility() const {
  return JsonRuntimeCompatibility(plugin_, version_);
}

std::optional<Function> JsonRuntimeBase::GetFunction(const std::string& name) {
  if (name != graph_.symbol) return std::nullopt;
  const auto self = ObjectPtr<JsonRuntimeBase>::FromBorrowed(this);
  return Function::FromPacked(
      [self](const AnyView* args, int32_t num_args, Any*) { self->Call(args, num_args); });
}

void JsonRuntimeBase::Call(const AnyView* args, int32_t num_args) {
  KILN_CHECK(static_cast<size_t>(num_args) == arguments_.size(), TypeError)
      << "'" << graph_.symbol << "' takes " << arguments_.size() - graph_.heads.size()
      << " inputs and " << graph_.heads.size() << " outputs, got " << num_args << " arguments";
  const size_t num_inputs = arguments_.size() - graph_.heads.size();
  std::vector<DLTensor*> inputs;
  std::vector<DLTensor*> outputs;
  for (size_t i = 0; i < arguments_.size(); ++i) {
    const auto& [what, spec] = arguments_[i];
    std::optional<DLTensor*> tensor = args[i].as<DLTensor*>();
    KILN_CHECK(tensor.has_value() && *tensor != nullptr, TypeError)
        << "'" << graph_.symbol << "': " << what << " must be a tensor, got " << args[i].type_str();
    const DLTensor& dl = **tensor;
    KILN_CHECK(Matches(dl, *spec), ValueError)
        << "'" << graph_.symbol << "': " << what << " expects a compact "
        << Describe(spec->shape, spec->dtype) << ", got "
        << Describe(std::vector<int64_t>(dl.shape, dl.shape + dl.ndim), dl.dtype)
        << (IsCompact(dl) ? "" : " (strided)");
    (i < num_inputs ? inputs : outputs).push_back(*tensor);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!initialized_) {
      Init(constants_);
      initialized_ = true;
    }
    if (!concurrent_runs_) {
      Run(inputs, outputs);
      return;
    }
  }
  Run(inputs, outputs);
}

std::optional<Bytes> JsonRuntimeBase::SaveToBytes() const {
  ByteWriter out;
  out.Str(compatibility());
  out.Str(graph_json_);
  out.U32(static_cast<uint32_t>(constants_.size()));
  for (size_t i = 0; i < graph_.const_nodes.size(); ++i) {
    const Tensor& tensor = constants_[static_cast<int64_t>(i)];
    out.Str(graph_.nodes[graph_.const_nodes[i]].name);
    out.Str(std::string_view(static_cast<const char*>(tensor.data()),
                             static_cast<size_t>(tensor.NumBytes())));
  }
  return Bytes(std::move(out).Take());
}

SavedJsonModule ReadSavedJsonModule(const Bytes& bytes, const std::string& expected_compatibility,
                                    const std::string& runtime_library) {
  ByteReader in(bytes.view(), "the saved JSON graph module");
  const std::string compatibility = in.Str("compatibility");
  KILN_CHECK(compatibility == expected_compatibility, RuntimeError)
      << "the saved JSON graph module was made for '" << compatibility << "', but "
      << runtime_library << " reads '" << expected_compatibility
      << "'; rebuild the artifact with the installed plugin";
  SavedJsonModule saved;
  saved.graph_json = in.Str("graph");
  const JsonGraph graph = ParseJsonGraph(saved.graph_json);
  // A constant takes at least its two length fields.
  const uint32_t count = in.Count(16, "constant count");
  KILN_CHECK(count == graph.const_nodes.size(), ValueError)
      << "the saved JSON graph module has " << count << " constants, its graph "
      << graph.const_nodes.size();
  for (uint32_t index : graph.const_nodes) {
    const JsonNode& node = graph.nodes[index];
    const std::string name = in.Str("constant name");
    KILN_CHECK(name == node.name, ValueError)
        << "the saved JSON graph module has constant '" << name << "' where its graph has '"
        << node.name << "'";
    const std::string data = in.Str("constant bytes");
    const JsonTensorSpec& spec = node.outputs[0];
    KILN_CHECK(static_cast<int64_t>(data.size()) == SpecBytes(spec), ValueError)
        << "the saved JSON graph module has " << data.size() << " bytes for constant '" << name
        << "', which needs " << SpecBytes(spec);
    Tensor tensor = Empty(spec.shape, spec.dtype, DLDevice{kDLCPU, 0});
    if (!data.empty()) std::memcpy(tensor.data(), data.data(), data.size());
    saved.constants.push_back(tensor);
  }
  in.ExpectEnd();
  return saved;
}

}  // namespace runtime
}  // namespace kiln
