// What a converter sees of one ONNX node: its attributes, its converted inputs and their types.
#ifndef KILN_SRC_FRONTEND_ONNX_NODE_CONTEXT_H_
#define KILN_SRC_FRONTEND_ONNX_NODE_CONTEXT_H_

#include <kiln/ir/expr.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace frontend {
namespace onnx_import {

/// How errors name a node: "'conv1'", or "(output 'y')" for a node without a name.
std::string NodeName(const onnx::NodeProto& node);

/// Size variable -> the graph input whose dimension introduced it, so that an error about a
/// symbolic dimension can say which input to specialize with shapes=.
using SizeVarInputs = std::map<std::string, std::string>;

class NodeContext {
 public:
  /// `inputs` holds one expression per input of `node`; a null one for an omitted optional
  /// input (an empty name). Every input has its checked type. `propagated` holds, per input,
  /// its value when ONNX's data propagation knows it although it is not a Constant.
  /// `size_var_inputs` (may be null) names the graph inputs behind the size variables.
  NodeContext(const onnx::NodeProto& node, int64_t opset, std::vector<ir::Expr> inputs,
              std::vector<std::optional<Tensor>> propagated,
              const SizeVarInputs* size_var_inputs = nullptr);

  const onnx::NodeProto& proto() const { return node_; }
  int64_t opset() const { return opset_; }
  const SizeVarInputs* size_var_inputs() const { return size_var_inputs_; }
  /// "Conv node 'conv1'", for error messages (NodeName).
  std::string Describe() const;

  bool HasInput(size_t index) const;
  /// Input `index`; ValueError naming the node when it was omitted.
  const ir::Expr& Input(size_t index) const;
  /// Every given input, in order (for variadic ops).
  std::vector<ir::Expr> Inputs() const;
  /// The rank of input `index`, which must be a tensor: known even where its extents are
  /// symbolic, so converters that need only the rank take it from here.
  size_t InputRank(size_t index) const;
  /// Each extent of input `index`: its value where static, nullopt where symbolic.
  std::vector<std::optional<int64_t>> InputExtents(size_t index) const;
  /// The static extents of dimensions [begin, end) of input `index`, for converters that need
  /// them (constant tables, SAME padding); ValueError naming the node, the input, the first
  /// symbolic dimension in the range and `reason` when given, and saying which graph input to
  /// specialize (SpecializeHint).
  std::vector<int64_t> InputShape(size_t index, size_t begin, size_t end,
                                  const char* reason = nullptr) const;
  /// Every extent of input `index`, static (InputShape over all dimensions).
  std::vector<int64_t> InputShape(size_t index) const;
  /// Static extent `axis` of input `index` (InputShape of that one dimension).
  int64_t InputExtent(size_t index, size_t axis) const;
  /// The shape of input `index` as the text format writes it: "(batch, 3, 224, 224)".
  std::string InputShapeText(size_t index) const;
  /// What makes input `index`'s first symbolic dimension static: "give the input's shape with
  /// shapes={'x': [...]}" naming the graph input behind it (the form the old refusal had, which
  /// tools such as the conformance runner read).
  std::string SpecializeHint(size_t index) const;
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
  std::string SpecializeHint(const ir::Dim& dim) const;
  const onnx::AttributeProto& AttrOfType(const std::string& name,
                                         onnx::AttributeProto::AttributeType type) const;

  const onnx::NodeProto& node_;
  int64_t opset_;
  std::vector<ir::Expr> inputs_;
  std::vector<std::optional<Tensor>> propagated_;
  const SizeVarInputs* size_var_inputs_;
};

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_NODE_CONTEXT_H_
