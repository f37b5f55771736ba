// ONNX tensors and element types as Kiln tensors and dtypes.
#ifndef KILN_SRC_FRONTEND_ONNX_TENSOR_PROTO_H_
#define KILN_SRC_FRONTEND_ONNX_TENSOR_PROTO_H_

#include <kiln/ffi/tensor.h>
#include <onnx/onnx_pb.h>

#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace frontend {
namespace onnx_import {

/// The Kiln dtype of ONNX element type `elem_type` (TensorProto::DataType); NotImplementedError
/// naming `what` for types Kiln has no tensors of (strings, complex, 4- and 8-bit floats, ...).
DLDataType DTypeFromOnnx(int32_t elem_type, const std::string& what);

/// The ONNX element type of Kiln dtype `dtype`; NotImplementedError naming `what` for dtypes
/// DTypeFromOnnx never returns.
int32_t DTypeToOnnx(DLDataType dtype, const std::string& what);

/// An ONNX tensor named `name` holding a copy of `tensor`'s elements (raw_data); ValueError
/// naming it unless it is a compact host tensor of a dtype Kiln imports.
onnx::TensorProto TensorToProto(const Tensor& tensor, const std::string& name);

/// NotImplementedError naming the tensor when its data live in an external file.
void CheckDataInside(const onnx::TensorProto& proto);

/// CheckDataInside, then ValueError naming the tensor when its data (raw_data bytes or typed
/// elements) do not fill its shape exactly; element types Kiln does not import are left to
/// the converter that reads them. Run on every tensor of a model before ONNX's checker and
/// shape inference, which read initializers as they are (Debian's ONNX copies a raw_data
/// whose size is not a multiple of the element's past the end of its buffer).
void CheckTensorData(const onnx::TensorProto& proto);

/// A host tensor holding `proto`'s elements, from raw_data or the typed fields; ValueError
/// naming the tensor when the data do not match its shape, NotImplementedError for external
/// data.
Tensor TensorFromProto(const onnx::TensorProto& proto);

/// The elements of a host tensor of a float or integer (or bool) dtype, converted.
std::vector<double> TensorAsDoubles(const Tensor& tensor);
std::vector<int64_t> TensorAsInts(const Tensor& tensor);

/// A host tensor of `shape` and `dtype` holding `values` (row-major), each converted to dtype.
Tensor TensorFromDoubles(const std::vector<double>& values, const std::vector<int64_t>& shape,
                         DLDataType dtype);
/// A host tensor of `shape` and `dtype` with every element `value`.
Tensor FilledTensor(const std::vector<int64_t>& shape, DLDataType dtype, double value);
/// An int64 host tensor holding `values`, 1-D unless `shape` is given.
Tensor Int64Tensor(const std::vector<int64_t>& values,
                   const std::optional<std::vector<int64_t>>& shape = std::nullopt);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_TENSOR_PROTO_H_
