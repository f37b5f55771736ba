// What a converter sees of one ONNX node: its attributes, its converted inputs and their types.
#ifndef KILN_SRC_FRONTEND_ONNX_NODE_CONTEXT_H_
#define KILN_SRC_FRONTEND_ONNX_NODE_CONTEXT_H_

#include <kiln/arith/analyzer.h>
#include <kiln/ir/expr.h>
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shape_value.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

/// How errors name a node: "'conv1'", or "(output 'y')" for a node without a name.
std::string NodeName(const onnx::NodeProto& node);

/// Size variable -> the graph input whose dimension introduced it, so that an error about a
/// symbolic dimension can say which input to specialize with shapes=.
using SizeVarInputs = std::map<std::string, std::string>;

/// What makes `extents` static: "give the input's shape with shapes={'x': [...]}" naming the
/// graph input behind the first size variable they mention that `inputs` knows (the form the
/// old refusal had, which tools such as the conformance runner read), else the generic
/// "give the model's inputs static shapes with shapes={...}".
std::string SpecializeHint(const SizeVarInputs& inputs,
                           const std::vector<arith::SizeExpr>& extents);

/// Whether `name` is a size variable's name: an identifier ([A-Za-z_][A-Za-z0-9_]*) other than
/// the function names of the size-expression text.
bool IsSizeVarName(const std::string& name);

/// `text` made a size variable's name: each other character becomes '_', a leading digit (or an
/// empty text) gets a '_' in front and a function name one behind.
std::string SanitizeSizeVarName(const std::string& text);

/// What the importer knows of the graph's size variables, shared by its nodes: the graph input
/// behind each, and an analyzer in which each is at least 1 (sizes are, docs/design.md §20),
/// which simplifies and decides shape values (seq * 4 / 4 is seq; batch == -1 is false).
struct GraphSizes {
  SizeVarInputs inputs;
  arith::Analyzer analyzer;
};

/// What the importer has of one input of a node.
struct NodeInput {
  /// The input's expression, with its checked type; null for an omitted optional input (an
  /// empty name) and, until a converter asks for it, for a symbolic shape value.
  ir::Expr expr;
  /// Its value where ONNX's data propagation knows it although it is not a Constant.
  std::optional<Tensor> propagated;
  /// Its elements where they are computed from symbolic sizes (shape_value.h).
  std::optional<ShapeValue> shape_value;
  /// For a symbolic shape value: makes the tensor that computes it at run time (size_values),
  /// or null when no graph input's shape gives its sizes. Called only by a converter that needs
  /// the value as a tensor: most take it as a symbolic attribute.
  std::function<ir::Expr()> materialize;
};

class NodeContext {
 public:
  /// `inputs` holds one entry per input of `node`; `sizes` outlives the context.
  NodeContext(const onnx::NodeProto& node, int64_t opset, std::vector<NodeInput> inputs,
              const GraphSizes& sizes);

  const onnx::NodeProto& proto() const { return node_; }
  int64_t opset() const { return opset_; }
  const GraphSizes& sizes() const { return sizes_; }
  /// The analyzer of the graph's size variables (GraphSizes).
  const arith::Analyzer& analyzer() const { return sizes_.analyzer; }
  /// "Conv node 'conv1'", for error messages (NodeName).
  std::string Describe() const;

  bool HasInput(size_t index) const;
  /// Input `index`; ValueError naming the node when it was omitted, NotImplementedError when it
  /// is a symbolic shape value (which has no tensor yet).
  const ir::Expr& Input(size_t index) const;
  /// Every given input, in order (for variadic ops).
  std::vector<ir::Expr> Inputs() const;
  /// The symbolic shape value of input `index`, or nullptr when it is none (an expression).
  const ShapeValue* SymbolicInput(size_t index) const;
  /// Input `index` as a shape value: a symbolic one, or a constant of rank 0 or 1 whose elements
  /// are integers (ConstantInput where it is one); nullopt otherwise.
  std::optional<ShapeValue> InputShapeValue(size_t index) const;
  /// The elements of input `index` as sizes, where a converter takes a shape (Reshape, Expand,
  /// ConstantOfShape, Range's limit): those of a symbolic shape value (simplified), else
  /// ConstantInts as constants.
  std::vector<arith::SizeExpr> SizesInput(size_t index) const;
  /// The rank of input `index`, which must be a tensor: known even where its extents are
  /// symbolic, so converters that need only the rank take it from here.
  size_t InputRank(size_t index) const;
  /// Each extent of input `index`: its value where static, nullopt where symbolic.
  std::vector<std::optional<int64_t>> InputExtents(size_t index) const;
  /// The static extents of dimensions [begin, end) of input `index`, for converters that need
  /// them (constant tables, SAME padding); ValueError naming the node, the input and the first
  /// symbolic dimension in the range, and saying which graph input to specialize
  /// (SpecializeHint).
  std::vector<int64_t> InputShape(size_t index, size_t begin, size_t end) const;
  /// Every extent of input `index`, static (InputShape over all dimensions).
  std::vector<int64_t> InputShape(size_t index) const;
  /// Static extent `axis` of input `index` (InputShape of that one dimension).
  int64_t InputExtent(size_t index, size_t axis) const;
  /// Every extent of input `index` as a size expression (an IntImm where static).
  std::vector<arith::SizeExpr> InputShapeExprs(size_t index) const;
  /// Whether input `index` is given and its value is known only at run time: neither a constant
  /// nor a shape value computed from symbolic sizes (docs/design.md §22).
  bool IsRunTimeValue(size_t index) const;
  /// `count` fresh size variables for sizes this node computes from tensor values at run time
  /// (docs/design.md §22), named after its first output: `y_0`, `y_1`, ..., numbered on across
  /// calls for the same node.
  std::vector<arith::SizeExpr> NewSizes(size_t count) const;
  /// The shape of input `index` as the text format writes it: "(batch, 3, 224, 224)".
  std::string InputShapeText(size_t index) const;
  /// What makes input `index`'s first symbolic dimension static: "give the input's shape with
  /// shapes={'x': [...]}" naming the graph input behind it (the form the old refusal had, which
  /// tools such as the conformance runner read).
  std::string SpecializeHint(size_t index) const;
  /// The same for the symbolic extent `extent` (the generic hint for a null or constant one).
  std::string SpecializeHint(const arith::SizeExpr& extent) const;
  DLDataType InputDType(size_t index) const;

  /// The tensor of input `index`, which must be a Constant (an initializer, a Constant node or
  /// a Shape) or a value ONNX's data propagation computed (a chain of shape arithmetic): Kiln ops
  /// take what ONNX passes as such inputs (shapes, axes, pads, clip bounds) as attributes.
  /// NotImplementedError for a symbolic shape value, naming it and the graph input to specialize.
  Tensor ConstantInput(size_t index) const;
  /// ConstantInput's value, or nullopt where it would fail (an input computed at run time).
  std::optional<Tensor> TryConstantInput(size_t index) const;
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
  std::optional<std::vector<std::string>> Strings(const std::string& name) const;
  /// The tensor attribute `name`, or nullptr.
  const onnx::TensorProto* TensorAttr(const std::string& name) const;
  /// The graph attribute `name` (an If's branch, a Loop's body); ValueError when it is missing.
  const onnx::GraphProto& GraphAttr(const std::string& name) const;

  /// Number of outputs the node names (trailing optional outputs left out).
  size_t NumOutputs() const;

 private:
  const onnx::AttributeProto* FindAttr(const std::string& name) const;
  /// The checked type of input `index`, a symbolic shape value's included.
  const ir::Type& InputType(size_t index) const;
  /// InputType as a tensor type; TypeError naming the node and the input when it is none.
  const ir::TensorTypeObj& InputTensorType(size_t index) const;
  /// NotImplementedError: input `index`, a symbolic shape value, is needed as `needed_as`, and
  /// cannot be because `why`.
  [[noreturn]] void ThrowSymbolicInput(size_t index, const std::string& needed_as,
                                       const std::string& why) const;
  const onnx::AttributeProto& AttrOfType(const std::string& name,
                                         onnx::AttributeProto::AttributeType type) const;

  const onnx::NodeProto& node_;
  int64_t opset_;
  mutable std::vector<NodeInput> inputs_;    // mutable: a symbolic value's tensor is made on demand
  std::vector<ir::Type> shape_value_types_;  ///< per input: its shape value's type, or null
  const GraphSizes& sizes_;
  mutable size_t sizes_named_ = 0;  ///< how many NewSizes has named
};

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_NODE_CONTEXT_H_
