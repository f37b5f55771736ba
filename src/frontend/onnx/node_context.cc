#include "node_context.h"

#include <kiln/ffi/error.h>
#include <kiln/ir/type_relation.h>

#include "constant_eval.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

using onnx::AttributeProto;

NodeContext::NodeContext(const onnx::NodeProto& node, int64_t opset, std::vector<NodeInput> inputs,
                         const GraphSizes& sizes)
    : node_(node), opset_(opset), inputs_(std::move(inputs)), sizes_(sizes) {
  for (const NodeInput& input : inputs_) {
    shape_value_types_.push_back(input.shape_value.has_value() ? ir::Type(input.shape_value->Type())
                                                               : ir::Type());
  }
}

std::string NodeName(const onnx::NodeProto& node) {
  if (!node.name().empty() || node.output_size() == 0) return "'" + node.name() + "'";
  return "(output '" + node.output(0) + "')";
}

std::string NodeContext::Describe() const { return node_.op_type() + " node " + NodeName(node_); }

bool NodeContext::HasInput(size_t index) const {
  return index < inputs_.size() &&
         (inputs_[index].expr.defined() || inputs_[index].shape_value.has_value());
}

const ir::Expr& NodeContext::Input(size_t index) const {
  KILN_CHECK(HasInput(index), ValueError)
      << Describe() << " needs input " << index << ", which the model leaves out";
  NodeInput& input = inputs_[index];
  if (!input.expr.defined() && input.materialize) input.expr = input.materialize();
  if (!input.expr.defined()) {
    ThrowSymbolicInput(index, "as a tensor",
                       "some of which neither a graph input's shape nor an earlier value's gives, "
                       "so Kiln cannot make it one");
  }
  return input.expr;
}

std::vector<ir::Expr> NodeContext::Inputs() const {
  std::vector<ir::Expr> given;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (HasInput(i)) given.push_back(Input(i));
  }
  return given;
}

const ShapeValue* NodeContext::SymbolicInput(size_t index) const {
  if (index >= inputs_.size() || !inputs_[index].shape_value.has_value()) return nullptr;
  return &*inputs_[index].shape_value;
}

void NodeContext::ThrowSymbolicInput(size_t index, const std::string& needed_as,
                                     const std::string& why) const {
  const ShapeValue& value = *SymbolicInput(index);
  KILN_THROW(NotImplementedError) << Describe() << " needs input " << index << " ('"
                                  << node_.input(static_cast<int>(index)) << "') " << needed_as
                                  << ", but its value " << value.ToString()
                                  << " is computed from symbolic sizes at run time"
                                  << (why.empty() ? "" : ", " + why) << "; "
                                  << onnx_import::SpecializeHint(sizes_.inputs, value.elements);
}

const ir::Type& NodeContext::InputType(size_t index) const {
  if (SymbolicInput(index) != nullptr) return shape_value_types_[index];
  return Input(index)->checked_type();
}

const ir::TensorTypeObj& NodeContext::InputTensorType(size_t index) const {
  const auto* type = InputType(index).as<ir::TensorTypeObj>();
  KILN_CHECK(type != nullptr, TypeError)
      << Describe() << ": input " << index << " ('" << node_.input(static_cast<int>(index))
      << "') is not a tensor";
  return *type;
}

size_t NodeContext::InputRank(size_t index) const {
  return static_cast<size_t>(InputTensorType(index).shape().size());
}

std::vector<std::optional<int64_t>> NodeContext::InputExtents(size_t index) const {
  std::vector<std::optional<int64_t>> extents;
  for (const ir::Dim& dim : InputTensorType(index).shape()) extents.push_back(dim.as_static());
  return extents;
}

std::vector<int64_t> NodeContext::InputShape(size_t index, size_t begin, size_t end) const {
  const Array<ir::Dim>& dims = InputTensorType(index).shape();
  KILN_ICHECK(begin <= end && end <= static_cast<size_t>(dims.size()))
      << Describe() << ": dimensions [" << begin << ", " << end << ") of a rank-" << dims.size()
      << " input";
  std::vector<int64_t> shape;
  for (size_t axis = begin; axis < end; ++axis) {
    const ir::Dim dim = dims[static_cast<int64_t>(axis)];
    const std::optional<int64_t> extent = dim.as_static();
    KILN_CHECK(extent.has_value(), ValueError)
        << Describe() << " needs a static extent in dimension " << axis << " of input " << index
        << " ('" << node_.input(static_cast<int>(index)) << "'), which is symbolic ("
        << dim.ToString() << "); " << SpecializeHint(dim.AsSizeExpr());
    shape.push_back(*extent);
  }
  return shape;
}

std::vector<int64_t> NodeContext::InputShape(size_t index) const {
  return InputShape(index, 0, InputRank(index));
}

int64_t NodeContext::InputExtent(size_t index, size_t axis) const {
  return InputShape(index, axis, axis + 1)[0];
}

std::vector<arith::SizeExpr> NodeContext::InputShapeExprs(size_t index) const {
  std::vector<arith::SizeExpr> shape;
  for (const ir::Dim& dim : InputTensorType(index).shape()) shape.push_back(dim.AsSizeExpr());
  return shape;
}

std::string NodeContext::InputShapeText(size_t index) const {
  return ir::ShapeToText(InputShapeExprs(index));
}

std::string NodeContext::SpecializeHint(size_t index) const {
  return onnx_import::SpecializeHint(sizes_.inputs, InputShapeExprs(index));
}

std::string NodeContext::SpecializeHint(const arith::SizeExpr& extent) const {
  return onnx_import::SpecializeHint(sizes_.inputs, {extent});
}

/// Whether `name` is a size variable's name: an identifier ([A-Za-z_][A-Za-z0-9_]*) other than
/// the function names of the size-expression text.
bool IsSizeVarName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return name != "floordiv" && name != "floormod" && name != "min" && name != "max";
}

/// `text` made a size variable's name: each other character becomes '_', a leading digit (or an
/// empty text) gets a '_' in front and a function name one behind.
std::string SanitizeSizeVarName(const std::string& text) {
  if (IsSizeVarName(text)) return text;
  std::string name = text.empty() || std::isdigit(static_cast<unsigned char>(text[0])) ? "_" : "";
  for (char c : text) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return IsSizeVarName(name) ? name : name + "_";
}

std::string SpecializeHint(const SizeVarInputs& inputs,
                           const std::vector<arith::SizeExpr>& extents) {
  for (const arith::SizeExpr& extent : extents) {
    if (!extent.defined()) continue;
    for (const std::string& var : arith::FreeSizeVars(extent)) {
      auto input = inputs.find(var);
      if (input != inputs.end()) {
        return "give the input's shape with shapes={'" + input->second + "': [...]}";
      }
    }
  }
  return "give the model's inputs static shapes with shapes={...}";
}

bool NodeContext::IsRunTimeValue(size_t index) const {
  return HasInput(index) && SymbolicInput(index) == nullptr && !TryConstantInput(index).has_value();
}

std::vector<arith::SizeExpr> NodeContext::NewSizes(size_t count) const {
  const std::string base = SanitizeSizeVarName(node_.output_size() > 0 ? node_.output(0) : "size");
  std::vector<arith::SizeExpr> sizes;
  while (sizes.size() < count) {
    const std::string name = base + "_" + std::to_string(sizes_named_++);
    // An input's size variable keeps its name: a computed size sharing it would be read as it.
    if (sizes_.inputs.count(name) == 0) sizes.push_back(arith::SizeVar(name));
  }
  return sizes;
}

DLDataType NodeContext::InputDType(size_t index) const { return InputTensorType(index).dtype(); }

std::optional<Tensor> NodeContext::TryConstantInput(size_t index) const {
  if (SymbolicInput(index) != nullptr) return std::nullopt;
  const ir::Expr& input = Input(index);
  if (const auto* constant = input.as<ir::ConstantObj>()) return constant->data();
  if (inputs_[index].propagated.has_value()) return inputs_[index].propagated;
  return EvaluateConstant(input);
}

Tensor NodeContext::ConstantInput(size_t index) const {
  if (SymbolicInput(index) != nullptr) {
    ThrowSymbolicInput(index, "as a constant (Kiln takes it as an attribute of the op)", "");
  }
  std::optional<Tensor> value = TryConstantInput(index);
  KILN_CHECK(value.has_value(), ValueError)
      << Describe() << ": input " << index << " ('" << node_.input(static_cast<int>(index))
      << "') must be a constant (computed from initializers, Constant nodes and shapes only, "
         "or bound with values={...}): Kiln takes it as an attribute of the op";
  return *value;
}

std::optional<ShapeValue> NodeContext::InputShapeValue(size_t index) const {
  if (const ShapeValue* symbolic = SymbolicInput(index)) return *symbolic;
  if (!HasInput(index)) return std::nullopt;
  const auto* type = InputType(index).as<ir::TensorTypeObj>();
  if (type == nullptr || type->shape().size() > 1) return std::nullopt;
  std::optional<Tensor> value = TryConstantInput(index);
  return value.has_value() ? ShapeValueOfTensor(*value) : std::nullopt;
}

std::vector<arith::SizeExpr> NodeContext::SizesInput(size_t index) const {
  if (const ShapeValue* symbolic = SymbolicInput(index)) return symbolic->elements;
  std::vector<arith::SizeExpr> sizes;
  for (int64_t value : ConstantInts(index)) sizes.push_back(arith::IntImm(value));
  return sizes;
}

std::vector<int64_t> NodeContext::ConstantInts(size_t index) const {
  return TensorAsInts(ConstantInput(index));
}

std::vector<double> NodeContext::ConstantFloats(size_t index) const {
  return TensorAsDoubles(ConstantInput(index));
}

const AttributeProto* NodeContext::FindAttr(const std::string& name) const {
  for (const AttributeProto& attr : node_.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

bool NodeContext::HasAttr(const std::string& name) const { return FindAttr(name) != nullptr; }

const onnx::GraphProto& NodeContext::GraphAttr(const std::string& name) const {
  KILN_CHECK(HasAttr(name), ValueError) << Describe() << ": attribute '" << name << "' is missing";
  return AttrOfType(name, AttributeProto::GRAPH).g();
}

const AttributeProto& NodeContext::AttrOfType(const std::string& name,
                                              AttributeProto::AttributeType type) const {
  const AttributeProto* attr = FindAttr(name);
  KILN_ICHECK(attr != nullptr) << name;
  KILN_CHECK(attr->type() == type, TypeError)
      << Describe() << ": attribute '" << name << "' is a "
      << AttributeProto::AttributeType_Name(attr->type()) << ", expected a "
      << AttributeProto::AttributeType_Name(type);
  return *attr;
}

int64_t NodeContext::Int(const std::string& name, int64_t default_value) const {
  return HasAttr(name) ? AttrOfType(name, AttributeProto::INT).i() : default_value;
}

double NodeContext::Float(const std::string& name, double default_value) const {
  return HasAttr(name) ? AttrOfType(name, AttributeProto::FLOAT).f() : default_value;
}

std::string NodeContext::Str(const std::string& name, const std::string& default_value) const {
  return HasAttr(name) ? AttrOfType(name, AttributeProto::STRING).s() : default_value;
}

std::optional<std::vector<int64_t>> NodeContext::Ints(const std::string& name) const {
  if (!HasAttr(name)) return std::nullopt;
  const auto& values = AttrOfType(name, AttributeProto::INTS).ints();
  return std::vector<int64_t>(values.begin(), values.end());
}

std::optional<std::vector<double>> NodeContext::Floats(const std::string& name) const {
  if (!HasAttr(name)) return std::nullopt;
  const auto& values = AttrOfType(name, AttributeProto::FLOATS).floats();
  return std::vector<double>(values.begin(), values.end());
}

std::optional<std::vector<std::string>> NodeContext::Strings(const std::string& name) const {
  if (!HasAttr(name)) return std::nullopt;
  const auto& values = AttrOfType(name, AttributeProto::STRINGS).strings();
  return std::vector<std::string>(values.begin(), values.end());
}

const onnx::TensorProto* NodeContext::TensorAttr(const std::string& name) const {
  return HasAttr(name) ? &AttrOfType(name, AttributeProto::TENSOR).t() : nullptr;
}

size_t NodeContext::NumOutputs() const {
  size_t count = node_.output_size();
  while (count > 0 && node_.output(static_cast<int>(count) - 1).empty()) --count;
  return count;
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
