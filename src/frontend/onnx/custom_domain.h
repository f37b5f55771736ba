// Ops of custom ONNX domains, converted by global functions that plugins (or Python) register
// (kiln/frontend/onnx_converter.h states the contract).
#ifndef KILN_SRC_FRONTEND_ONNX_CUSTOM_DOMAIN_H_
#define KILN_SRC_FRONTEND_ONNX_CUSTOM_DOMAIN_H_

#include <kiln/ffi/function.h>
#include <kiln/ir/expr.h>
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

#include "node_context.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

/// The domain a node's op belongs to: "" for the default domain (named "" or "ai.onnx").
std::string NodeDomain(const onnx::NodeProto& node);

/// The registered converter of custom-domain `node`, looked up now (never cached, so a plugin
/// loaded since the last import is seen); nullopt when there is none.
std::optional<Function> FindCustomConverter(const onnx::NodeProto& node);

/// "frontend.onnx.convert.D.T may convert it: the plugin registering it may not be loaded
/// (...)", the hint listed with a custom-domain op that has no converter.
std::string MissingCustomConverterHint(const onnx::NodeProto& node);

/// The value of `node` as `convert` computes it from the node's inputs and attributes at
/// `opset` (the version of the node's domain the model imports).
ir::Expr ConvertCustomNode(const Function& convert, const NodeContext& node, int64_t opset);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_CUSTOM_DOMAIN_H_
