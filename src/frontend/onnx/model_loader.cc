#include "model_loader.h"

#include <kiln/ffi/error.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <limits>
#include <sstream>

#include "converter.h"
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
    onnx::TensorShapeProto* dims = input->mutable_type()->mutable_tensor_type()->mutable_shape();
    dims->clear_dim();
    for (int64_t extent : shape) dims->add_dim()->set_dim_value(extent);
  }
}

/// The model's opset of the default ONNX domain; 0 when it imports none.
int64_t DefaultDomainOpset(const onnx::ModelProto& model) {
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") return opset.version();
  }
  return 0;
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
  try {
    onnx::shape_inference::InferShapes(model);
    model = onnx::version_conversion::ConvertVersion(model, kUpgradeTarget);
  } catch (const std::exception& error) {
    KILN_THROW(NotImplementedError)
        << source << " uses opset " << opset << "; Kiln imports opsets " << kMinOpset << "-"
        << kMaxOpset << " and ONNX's version converter could not upgrade it: " << error.what();
  }
}

}  // namespace

LoadedModel LoadModel(const std::string& bytes, const std::string& source,
                      const InputShapes& shapes) {
  LoadedModel loaded{Parse(bytes, source), {}};
  onnx::ModelProto& model = loaded.model;
  OverrideShapes(*model.mutable_graph(), shapes, source);
  // Before the checker, which would look for the files and fail with a less useful message.
  for (const onnx::TensorProto& initializer : model.graph().initializer()) {
    CheckDataInside(initializer);
  }
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
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options,
                                       &loaded.shape_values);
  } catch (const std::exception& error) {
    KILN_THROW(ValueError) << source << ": ONNX shape inference failed: " << error.what();
  }
  return loaded;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
