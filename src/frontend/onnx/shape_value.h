// Shape values: small integer tensors whose elements the importer knows as size expressions,
// such as Shape(x) of a (batch, seq, 64) input, [batch, seq, 64]. PyTorch's exporter computes
// target shapes from them at run time (Shape -> Gather -> Unsqueeze -> Concat -> Reshape); the
// importer evaluates those chains on the expressions instead (shape_propagation.h), so that the
// consumers (Reshape, Expand, ...) get symbolic attributes rather than run-time tensors.
#ifndef KILN_SRC_FRONTEND_ONNX_SHAPE_VALUE_H_
#define KILN_SRC_FRONTEND_ONNX_SHAPE_VALUE_H_

#include <kiln/arith/size_expr.h>
#include <kiln/ffi/tensor.h>
#include <kiln/ir/type.h>

#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace frontend {
namespace onnx_import {

/// A tensor of rank 0 or 1 whose elements are integers known as size expressions. Its dtype is
/// the ONNX element type it has (as a Kiln dtype): an integer type, bool (elements 0 and 1) or a
/// float type (PyTorch casts sizes to float and back; the elements are still integers).
struct ShapeValue {
  std::vector<arith::SizeExpr> elements;
  bool scalar = false;  ///< rank 0 (one element) rather than rank 1
  DLDataType dtype{kDLInt, 64, 1};

  /// The elements as integers when every one is constant, else nullopt.
  std::optional<std::vector<int64_t>> AsInts() const;
  /// Whether some element is not a constant: a value known only when the model runs.
  bool IsSymbolic() const { return !AsInts().has_value(); }
  /// Tensor[(), dtype] or Tensor[(n), dtype].
  ir::TensorType Type() const;
  /// The elements as the IR text writes extents: "[batch, seq * 4]", or "seq" for a scalar.
  std::string ToString() const;
};

/// `sizes` as integers when every one is constant, else nullopt.
std::optional<std::vector<int64_t>> ConstantSizes(const std::vector<arith::SizeExpr>& sizes);

/// The shape value holding `tensor`'s elements: nullopt unless it has rank 0 or 1 and integer or
/// bool elements, or float elements that are all integers in int64's range.
std::optional<ShapeValue> ShapeValueOfTensor(const Tensor& tensor);

/// The host tensor of an all-constant shape value (ICHECKed), of its dtype and rank.
Tensor ShapeValueTensor(const ShapeValue& value);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_SHAPE_VALUE_H_
