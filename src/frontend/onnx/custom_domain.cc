#include "custom_domain.h"

#include <kiln/ffi/error.h>
#include <kiln/ffi/registry.h>
#include <kiln/frontend/onnx_converter.h>

#include <vector>

#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

using onnx::AttributeProto;

/// `attr` as the converter sees it (the list in kiln/frontend/onnx_converter.h).
Any AttrValue(const NodeContext& node, const AttributeProto& attr) {
  switch (attr.type()) {
    case AttributeProto::INT: return Any(attr.i());
    case AttributeProto::FLOAT: return Any(static_cast<double>(attr.f()));
    case AttributeProto::STRING: return Any(String(attr.s()));
    case AttributeProto::INTS: return Any(Array<int64_t>(attr.ints().begin(), attr.ints().end()));
    case AttributeProto::FLOATS:
      return Any(Array<double>(attr.floats().begin(), attr.floats().end()));
    case AttributeProto::STRINGS:
      return Any(Array<String>(attr.strings().begin(), attr.strings().end()));
    case AttributeProto::TENSOR: return Any(TensorFromProto(attr.t()));
    default:
      KILN_THROW(NotImplementedError)
          << node.Describe() << ": attribute '" << attr.name() << "' is a "
          << AttributeProto::AttributeType_Name(attr.type())
          << ", which Kiln does not pass to a custom-domain converter (it passes ints, floats, "
             "strings, lists of those and tensors)";
  }
}

Map<String, Any> Attrs(const NodeContext& node) {
  Map<String, Any> attrs;
  for (const AttributeProto& attr : node.proto().attribute()) {
    attrs.Set(String(attr.name()), AttrValue(node, attr));
  }
  return attrs;
}

/// The node's inputs, None for an omitted one; trailing omitted inputs dropped.
Array<Any> Inputs(const NodeContext& node) {
  size_t count = node.proto().input_size();
  while (count > 0 && !node.HasInput(count - 1)) --count;
  std::vector<Any> inputs;
  for (size_t i = 0; i < count; ++i) {
    inputs.push_back(node.HasInput(i) ? Any(node.Input(i)) : Any());
  }
  return Array<Any>(inputs);
}

std::string ConverterName(const onnx::NodeProto& node) {
  return OnnxConverterName(NodeDomain(node), node.op_type());
}

}  // namespace

std::string NodeDomain(const onnx::NodeProto& node) {
  return node.domain() == "ai.onnx" ? "" : node.domain();
}

std::optional<Function> FindCustomConverter(const onnx::NodeProto& node) {
  return Function::GetGlobal(ConverterName(node).c_str());
}

std::string MissingCustomConverterHint(const onnx::NodeProto& node) {
  return "no global function '" + ConverterName(node) +
         "' converts it; the plugin registering it may not be loaded (kiln.load_plugin(...), "
         "or put it on KILN_PLUGIN_PATH)";
}

ir::Expr ConvertCustomNode(const Function& convert, const NodeContext& node, int64_t opset) {
  Any result = convert(Inputs(node), Attrs(node), opset);
  if (std::optional<ir::Expr> value = result.as<ir::Expr>()) return *value;
  if (std::optional<Array<ir::Expr>> outputs = result.as<Array<ir::Expr>>()) {
    return ir::Tuple(*outputs);
  }
  KILN_THROW(TypeError) << "the converter '" << ConverterName(node.proto()) << "' of "
                        << node.Describe() << " returned a " << result.type_str()
                        << ", expected an expression or a list of expressions";
}

KILN_REGISTER_GLOBAL("frontend.OnnxConverterName")
    .set_body_typed([](const String& domain, const String& op_type) {
      return String(OnnxConverterName(domain.str(), op_type.str()));
    });

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
