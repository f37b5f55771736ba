#include "model_loader.h"

#include <kiln/ffi/error.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "checked_schemas.h"
#include "converter.h"
#include "custom_domain.h"
#include "node_context.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

onnx::ModelProto Parse(const std::string& bytes, const std::string& source) {
  onnx::ModelProto model;
  // protobuf's size limit is an int; larger models need external data anyway.
  const bool fits = bytes.size() < static_cast<size_t>(std::numeric_limits<int>::max());
  KILN_CHECK(fits && model.ParseFromString(bytes), ValueError)
      << source << " is not a valid ONNX model: it does not parse as an ONNX ModelProto "
      << "(malformed or truncated, " << bytes.size() << " bytes)";
  KILN_CHECK(model.has_graph(), ValueError)
      << source << " is not a valid ONNX model: it has no graph";
  return model;
}

std::string InputNames(const onnx::GraphProto& graph) {
  std::ostringstream names;
  for (const onnx::ValueInfoProto& input : graph.input()) names << " '" << input.name() << "'";
  return names.str();
}

/// ValueError unless `shape` (from shapes=) agrees with what the model declares of input `name`:
/// it specializes symbolic and unknown dimensions, so the rank and every static extent stay.
void CheckSpecializes(const onnx::TensorShapeProto& declared, const std::string& name,
                      const Array<int64_t>& shape, const std::string& source) {
  KILN_CHECK(declared.dim_size() == shape.size(), ValueError)
      << "shapes= gives input '" << name << "' of " << source << " " << shape.size()
      << " dimensions, but the model declares " << declared.dim_size();
  for (int i = 0; i < declared.dim_size(); ++i) {
    const onnx::TensorShapeProto::Dimension& dim = declared.dim(i);
    KILN_CHECK(!dim.has_dim_value() || dim.dim_value() == shape[i], ValueError)
        << "shapes= gives input '" << name << "' of " << source << " extent " << shape[i]
        << " in dimension " << i << ", but the model declares it static with extent "
        << dim.dim_value();
  }
}

/// Replaces the declared shape of each input named in `shapes`.
void OverrideShapes(onnx::GraphProto& graph, const InputShapes& shapes, const std::string& source) {
  for (const auto& [name, shape] : shapes) {
    onnx::ValueInfoProto* input = nullptr;
    for (onnx::ValueInfoProto& candidate : *graph.mutable_input()) {
      if (candidate.name() == name.str()) input = &candidate;
    }
    KILN_CHECK(input != nullptr, KeyError)
        << "shapes= names '" << name.str() << "', which is not an input of " << source
        << "; its inputs are" << InputNames(graph);
    onnx::TypeProto::Tensor* type = input->mutable_type()->mutable_tensor_type();
    if (type->has_shape()) CheckSpecializes(type->shape(), name.str(), shape, source);
    onnx::TensorShapeProto* dims = type->mutable_shape();
    dims->clear_dim();
    for (int64_t extent : shape) dims->add_dim()->set_dim_value(extent);
  }
}

/// ValueError for a tensor input without a shape, not even a rank, that neither shapes= nor
/// values= gave one: the importer turns unknown extents into size variables, but the rank it
/// must know. Checked before ONNX's checker, whose message for it does not say what to do.
void CheckInputsHaveShapes(const onnx::GraphProto& graph) {
  for (const onnx::ValueInfoProto& input : graph.input()) {
    const onnx::TypeProto& type = input.type();
    KILN_CHECK(!type.has_tensor_type() || type.tensor_type().has_shape(), ValueError)
        << "input '" << input.name() << "' has no shape, not even a rank; give it with shapes={'"
        << input.name() << "': [...]}";
  }
}

/// The model's opset of the default ONNX domain; 0 when it imports none.
int64_t DefaultDomainOpset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  }
  return 0;
}

/// The declared type of value `name` (a graph input, output or inferred value), or nullptr.
onnx::ValueInfoProto* FindValueInfo(onnx::GraphProto& graph, const std::string& name) {
  for (auto* list : {graph.mutable_input(), graph.mutable_value_info(), graph.mutable_output()}) {
    for (onnx::ValueInfoProto& info : *list) {
      if (info.name() == name) return &info;
    }
  }
  return nullptr;
}

/// Before opset 7, PRelu's slope of shape (C) applied per channel (axis 1), as PyTorch's early
/// exporter relied on; from opset 7 it broadcasts numpy-style from the last axis, which the
/// version converter does not adjust. A (C) slope initializer of a rank-r input with C channels
/// becomes (C, 1, ..., 1) so the upgraded model means what the old one did.
void ReshapeLegacyPReluSlopes(onnx::GraphProto& graph) {
  for (const onnx::NodeProto& node : graph.node()) {
    if (node.op_type() != "PRelu" || node.input_size() < 2) continue;
    const onnx::ValueInfoProto* x = FindValueInfo(graph, node.input(0));
    if (x == nullptr || !x->type().tensor_type().has_shape()) continue;
    const onnx::TensorShapeProto& x_shape = x->type().tensor_type().shape();
    if (x_shape.dim_size() < 3 || !x_shape.dim(1).has_dim_value()) continue;
    const int64_t channels = x_shape.dim(1).dim_value();
    for (onnx::TensorProto& slope : *graph.mutable_initializer()) {
      if (slope.name() != node.input(1) || slope.dims_size() != 1 || slope.dims(0) != channels ||
          channels == 1) {
        continue;
      }
      for (int i = 2; i < x_shape.dim_size(); ++i) slope.add_dims(1);
      if (onnx::ValueInfoProto* declared = FindValueInfo(graph, slope.name())) {
        declared->mutable_type()->mutable_tensor_type()->clear_shape();
      }
    }
  }
}

/// ValueError unless every node input and graph output names a value defined before it (a
/// graph input, an initializer or an earlier node's output). ONNX's checker leaves this to
/// importers, and ONNX's own graph conversion (used by the version converter) dereferences
/// undefined values (a crash the fuzzer found). Subgraphs are refused here: they may read the
/// enclosing scope, which the upgrade path does not need to support.
void CheckGraphForUpgrade(const onnx::GraphProto& graph, const std::string& source) {
  std::set<std::string> defined;
  for (const onnx::ValueInfoProto& input : graph.input()) defined.insert(input.name());
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    defined.insert(initializer.name());
  }
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& attr : node.attribute()) {
      KILN_CHECK(!attr.has_g() && attr.graphs_size() == 0, NotImplementedError)
          << source << ": node " << NodeName(node) << " has a subgraph, which Kiln does not "
          << "upgrade from opsets before " << kMinOpset;
    }
    for (const std::string& input : node.input()) {
      KILN_CHECK(input.empty() || defined.count(input) != 0, ValueError)
          << source << " is not a valid ONNX model: node " << NodeName(node) << " reads '" << input
          << "', which nothing before it defines";
    }
    for (const std::string& output : node.output()) defined.insert(output);
  }
  for (const onnx::ValueInfoProto& output : graph.output()) {
    KILN_CHECK(defined.count(output.name()) != 0, ValueError)
        << source << " is not a valid ONNX model: graph output '" << output.name()
        << "' is never defined";
  }
}

/// ValueError unless each Gemm's A and B, where their rank is known (declared or inferred),
/// are matrices. ONNX's Gemm_6_7 adapter indexes both shapes' first two extents without
/// checking the rank (a crash the fuzzer found, with a rank-0 A).
void CheckGemmRanksForUpgrade(const onnx::GraphProto& graph, const std::string& source) {
  std::map<std::string, int> ranks;
  auto note = [&](const onnx::ValueInfoProto& value) {
    if (value.type().has_tensor_type() && value.type().tensor_type().has_shape()) {
      ranks[value.name()] = value.type().tensor_type().shape().dim_size();
    }
  };
  for (const onnx::ValueInfoProto& value : graph.input()) note(value);
  for (const onnx::ValueInfoProto& value : graph.value_info()) note(value);
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    ranks[initializer.name()] = initializer.dims_size();
  }
  for (const onnx::NodeProto& node : graph.node()) {
    if (!NodeDomain(node).empty() || node.op_type() != "Gemm") continue;
    for (int i = 0; i < std::min(node.input_size(), 2); ++i) {
      auto rank = ranks.find(node.input(i));
      KILN_CHECK(rank == ranks.end() || rank->second == 2, ValueError)
          << source << ": node " << NodeName(node) << " (Gemm) reads '" << node.input(i)
          << "' of rank " << rank->second << "; Gemm multiplies matrices (rank 2)";
    }
  }
}

/// Runs ONNX's version converter on `model`. The converter looks every node's op type up among
/// the default domain's schemas, even a custom domain's node, which it then leaves alone; an op
/// type ONNX does not know fails that lookup (std::out_of_range). So each custom-domain node is
/// named Identity (an op unchanged over the opsets upgraded through) while converting, and
/// named back after: the adapters only insert default-domain nodes, so custom-domain nodes keep
/// their order.
onnx::ModelProto ConvertDefaultDomain(const onnx::ModelProto& model, int target) {
  onnx::ModelProto stand_ins = model;
  std::vector<std::string> custom_op_types;
  for (onnx::NodeProto& node : *stand_ins.mutable_graph()->mutable_node()) {
    if (NodeDomain(node).empty()) continue;
    custom_op_types.push_back(node.op_type());
    node.set_op_type("Identity");
  }
  onnx::ModelProto converted = onnx::version_conversion::ConvertVersion(stand_ins, target);
  size_t next = 0;
  for (onnx::NodeProto& node : *converted.mutable_graph()->mutable_node()) {
    if (NodeDomain(node).empty()) continue;
    KILN_ICHECK(next < custom_op_types.size())
        << "the version converter added a custom-domain node";
    node.set_op_type(custom_op_types[next++]);
  }
  KILN_ICHECK(next == custom_op_types.size())
      << "the version converter dropped a custom-domain node";
  return converted;
}

/// Models older than the converters (opset 6 and before: PyTorch's early exporters, legacy
/// broadcasting attributes) are upgraded by ONNX's own version converter rather than by a second
/// set of converters in Kiln. The target is opset 9, not 7: those exporters wrote int64
/// Constants, which Constant's schema allows only from opset 9. The converter's adapters read
/// input shapes, hence shape inference first.
void UpgradeOldOpset(onnx::ModelProto& model, const std::string& source) {
  constexpr int kUpgradeTarget = 9;
  const int64_t opset = DefaultDomainOpset(model);
  if (opset == 0 || opset >= kMinOpset) return;
  CheckGraphForUpgrade(model.graph(), source);
  auto upgrade_step = [&](auto step) {
    try {
      step();
    } catch (const std::exception& error) {
      KILN_THROW(NotImplementedError)
          << source << " uses opset " << opset << "; Kiln imports opsets " << kMinOpset << "-"
          << kMaxOpset << " and ONNX's version converter could not upgrade it: " << error.what();
    }
  };
  // Declared ranks before inference too: ONNX 1.12's Gemm-6 inference indexes the first two
  // extents of its inputs without checking their rank (found by fuzzing).
  CheckGemmRanksForUpgrade(model.graph(), source);
  upgrade_step([&] {
    onnx::shape_inference::InferShapes(model, CheckedSchemaRegistry());
    ReshapeLegacyPReluSlopes(*model.mutable_graph());
    onnx::shape_inference::InferShapes(model, CheckedSchemaRegistry());
  });
  CheckGemmRanksForUpgrade(model.graph(), source);
  upgrade_step([&] { model = ConvertDefaultDomain(model, kUpgradeTarget); });
}

/// Makes each input named in `values` an initializer holding its tensor, with the tensor's
/// shape declared on the input. Initializers rather than Constant nodes: the importer already
/// treats an input with an initializer as a constant, and ONNX's shape inference reads
/// initializers, so shapes that depend on the bound values are inferred statically too.
void BindValues(onnx::GraphProto& graph, const InputValues& values, const std::string& source) {
  for (const auto& [name, tensor] : values) {
    onnx::ValueInfoProto* input = nullptr;
    for (onnx::ValueInfoProto& candidate : *graph.mutable_input()) {
      if (candidate.name() == name.str()) input = &candidate;
    }
    KILN_CHECK(input != nullptr, ValueError)
        << "values= names '" << name.str() << "', which is not an input of " << source
        << "; its inputs are" << InputNames(graph);
    onnx::TensorProto proto = TensorToProto(tensor, name.str());
    onnx::TypeProto::Tensor* type = input->mutable_type()->mutable_tensor_type();
    KILN_CHECK(!type->has_elem_type() || type->elem_type() == proto.data_type(), ValueError)
        << "values= binds input '" << name.str() << "' of " << source << " to a "
        << DataTypeToString(tensor.dtype()) << " tensor, but the input is "
        << onnx::TensorProto::DataType_Name(type->elem_type());
    type->set_elem_type(proto.data_type());
    onnx::TensorShapeProto* dims = type->mutable_shape();
    dims->clear_dim();
    for (int64_t extent : proto.dims()) dims->add_dim()->set_dim_value(extent);
    // A bound value replaces an initializer of that name (an input with a default).
    for (int i = graph.initializer_size() - 1; i >= 0; --i) {
      if (graph.initializer(i).name() == name.str())
        graph.mutable_initializer()->DeleteSubrange(i, 1);
    }
    *graph.add_initializer() = std::move(proto);
  }
}

/// CheckTensorData on every tensor `graph` holds: its initializers and its nodes' tensor
/// attributes (Constant's value), and those of its subgraphs (If, Loop, Scan bodies).
void CheckTensorsOf(const onnx::GraphProto& graph) {
  for (const onnx::TensorProto& initializer : graph.initializer()) CheckTensorData(initializer);
  for (const onnx::NodeProto& node : graph.node()) {
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.has_t()) CheckTensorData(attribute.t());
      for (const onnx::TensorProto& tensor : attribute.tensors()) CheckTensorData(tensor);
      if (attribute.has_g()) CheckTensorsOf(attribute.g());
      for (const onnx::GraphProto& subgraph : attribute.graphs()) CheckTensorsOf(subgraph);
    }
  }
}

}  // namespace

LoadedModel LoadModel(const std::string& bytes, const std::string& source,
                      const InputShapes& shapes, const InputValues& values) {
  LoadedModel loaded{Parse(bytes, source), {}};
  onnx::ModelProto& model = loaded.model;
  OverrideShapes(*model.mutable_graph(), shapes, source);
  BindValues(*model.mutable_graph(), values, source);
  CheckInputsHaveShapes(model.graph());
  // Before the checker, which would look for external files and fail with a less useful
  // message, and before shape inference, which reads constants' data as it finds them.
  CheckTensorsOf(model.graph());
  // ONNX reports failures as exceptions of its own; their messages name the node.
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& error) {
    KILN_THROW(ValueError) << source << " is not a valid ONNX model: " << error.what();
  }
  UpgradeOldOpset(model, source);
  try {
    // Data propagation gives the values of PyTorch-style shape chains
    // (Shape -> Gather -> Concat -> Reshape), which Kiln needs as constants.
    onnx::ShapeInferenceOptions options{/*check_type_val=*/true, /*strict_mode_val=*/1,
                                        /*data_prop_val=*/true};
    onnx::shape_inference::InferShapes(model, CheckedSchemaRegistry(), options,
                                       &loaded.shape_values);
  } catch (const std::exception& error) {
    KILN_THROW(ValueError) << source << ": ONNX shape inference failed: " << error.what();
  }
  return loaded;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
