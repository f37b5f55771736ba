#include "node_context.h"

#include <kiln/ffi/error.h>

#include <kiln/ir/type_relation.h>
#include <algorithm>

#include "constant_eval.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

using onnx::AttributeProto;

NodeContext::NodeContext(const onnx::NodeProto& node, int64_t opset, std::vector<ir::Expr> inputs,
                         std::vector<std::optional<Tensor>> propagated,
                         const SizeVarInputs* size_var_inputs)
    : node_(node),
      opset_(opset),
      inputs_(std::move(inputs)),
      propagated_(std::move(propagated)),
      size_var_inputs_(size_var_inputs) {}

std::string NodeName(const onnx::NodeProto& node) {
  if (!node.name().empty() || node.output_size() == 0) return "'" + node.name() + "'";
  return "(output '" + node.output(0) + "')";
}

std::string NodeContext::Describe() const { return node_.op_type() + " node " + NodeName(node_); }

bool NodeContext::HasInput(size_t index) const {
  return index < inputs_.size() && inputs_[index].defined();
}

const ir::Expr& NodeContext::Input(size_t index) const {
  KILN_CHECK(HasInput(index), ValueError)
      << Describe() << " needs input " << index << ", which the model leaves out";
  return inputs_[index];
}

std::vector<ir::Expr> NodeContext::Inputs() const {
  std::vector<ir::Expr> given;
  for (const ir::Expr& input : inputs_) {
    if (input.defined()) given.push_back(input);
  }
  return given;
}

namespace {

const ir::TensorTypeObj& TensorTypeOf(const NodeContext& node, size_t index) {
  const auto* type = node.Input(index)->checked_type().as<ir::TensorTypeObj>();
  KILN_CHECK(type != nullptr, TypeError) << node.Describe() << ": input " << index << " ('"
                                         << node.proto().input(index) << "') is not a tensor";
  return *type;
}

}  // namespace

size_t NodeContext::InputRank(size_t index) const {
  return static_cast<size_t>(TensorTypeOf(*this, index).shape().size());
}

std::vector<std::optional<int64_t>> NodeContext::InputExtents(size_t index) const {
  std::vector<std::optional<int64_t>> extents;
  for (const ir::Dim& dim : TensorTypeOf(*this, index).shape()) extents.push_back(dim.as_static());
  return extents;
}

std::vector<int64_t> NodeContext::InputShape(size_t index, size_t begin, size_t end,
                                             const char* reason) const {
  const Array<ir::Dim>& dims = TensorTypeOf(*this, index).shape();
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
        << dim.ToString() << ")" << (reason == nullptr ? "" : std::string(": ") + reason) << "; "
        << SpecializeHint(dim);
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

std::string NodeContext::InputShapeText(size_t index) const {
  std::vector<arith::SizeExpr> shape;
  for (const ir::Dim& dim : TensorTypeOf(*this, index).shape()) shape.push_back(dim.AsSizeExpr());
  return ir::ShapeToText(shape);
}

std::string NodeContext::SpecializeHint(size_t index) const {
  const Array<ir::Dim>& shape = TensorTypeOf(*this, index).shape();
  auto symbolic = std::find_if(shape.begin(), shape.end(),
                               [](const ir::Dim& dim) { return !dim.as_static().has_value(); });
  return SpecializeHint(symbolic == shape.end() ? ir::Dim() : *symbolic);
}

std::string NodeContext::SpecializeHint(const ir::Dim& dim) const {
  if (size_var_inputs_ != nullptr && dim.defined() && !dim.as_static().has_value()) {
    for (const std::string& var : arith::FreeSizeVars(dim.AsSizeExpr())) {
      auto input = size_var_inputs_->find(var);
      if (input != size_var_inputs_->end()) {
        return "give the input's shape with shapes={'" + input->second + "': [...]}";
      }
    }
  }
  return "give the model's inputs static shapes with shapes={...}";
}

DLDataType NodeContext::InputDType(size_t index) const {
  return TensorTypeOf(*this, index).dtype();
}

Tensor NodeContext::ConstantInput(size_t index) const {
  const ir::Expr& input = Input(index);
  if (const auto* constant = input.as<ir::ConstantObj>()) return constant->data();
  if (index < propagated_.size() && propagated_[index].has_value()) return *propagated_[index];
  std::optional<Tensor> value = EvaluateConstant(input);
  KILN_CHECK(value.has_value(), ValueError)
      << Describe() << ": input " << index << " ('" << node_.input(index)
      << "') must be a constant (computed from initializers, Constant nodes and shapes only, "
         "or bound with values={...}): Kiln takes it as an attribute of the op";
  return *value;
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
