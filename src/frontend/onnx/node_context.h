// What a converter sees of one ONNX node: its attributes, its converted inputs and their types.
#ifndef KILN_SRC_FRONTEND_ONNX_NODE_CONTEXT_H_
#define KILN_SRC_FRONTEND_ONNX_NODE_CONTEXT_H_

#include <kiln/ir/expr.h>
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace frontend {
namespace onnx_import {

/// How errors name a node: "'conv1'", or "(output 'y')" for a node without a name.
std::string NodeName(const onnx::NodeProto& node);

class NodeContext {
 public:
  /// `inputs` holds one expression per input of `node`; a null one for an omitted optional
  /// input (an empty name). Every input has its checked type. `propagated` holds, per input,
  /// its value when ONNX's data propagation knows it although it is not a Constant.
  NodeContext(const onnx::NodeProto& node, int64_t opset, std::vector<ir::Expr> inputs,
              std::vector<std::optional<Tensor>> propagated);

  const onnx::NodeProto& proto() const { return node_; }
  int64_t opset() const { return opset_; }
  /// "Conv node 'conv1'", for error messages (NodeName).
  std::string Describe() const;

  bool HasInput(size_t index) const;
  /// Input `index`; ValueError naming the node when it was omitted.
  const ir::Expr& Input(size_t index) const;
  /// Every given input, in order (for variadic ops).
  std::vector<ir::Expr> Inputs() const;
  /// The shape of input `index`, which must be a tensor.
  std::vector<int64_t> InputShape(size_t index) const;
  DLDataType InputDType(size_t index) const;

  /// The tensor of input `index`, which must be a Constant (an initializer, a Constant node or
  /// a Shape) or a value ONNX's data propagation computed (a chain of shape arithmetic): Kiln ops
  /// take what ONNX passes as such inputs (shapes, axes, pads, clip bounds) as attributes.
  Tensor ConstantInput(size_t index) const;
  /// The elements of constant input `index` (an integer tensor).
  std::vector<int64_t> ConstantInts(size_t index) const;
  /// The elements of constant input `index` (a float or integer tensor).
  std::vector<double> ConstantFloats(size_t index) const;

  bool HasAttr(const std::string& name) const;
  int64_t Int(const std::string& name, int64_t default_value) const;
  double Float(const std::string& name, double default_value) const;
  std::string Str(const std::string& name, const std::string& default_value) const;
  std::optional<std::vector<int64_t>> Ints(const std::string& name) const;
  std::optional<std::vector<double>> Floats(const std::string& name) const;
  /// The tensor attribute `name`, or nullptr.
  const onnx::TensorProto* TensorAttr(const std::string& name) const;

  /// Number of outputs the node names (trailing optional outputs left out).
  size_t NumOutputs() const;

 private:
  const onnx::AttributeProto* FindAttr(const std::string& name) const;
  const onnx::AttributeProto& AttrOfType(const std::string& name,
                                         onnx::AttributeProto::AttributeType type) const;

  const onnx::NodeProto& node_;
  int64_t opset_;
  std::vector<ir::Expr> inputs_;
  std::vector<std::optional<Tensor>> propagated_;
};

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_NODE_CONTEXT_H_
