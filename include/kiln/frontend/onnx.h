/// ONNX import: an ONNX model (opsets 7-17) as an IRModule of Kiln's core ops.
///
/// The module's @main has one parameter per graph input that is not an initializer, in the
/// graph's order, each annotated with its tensor type, and returns the graph's output (a Tuple
/// when the graph has several). Initializers become Constants. A symbolic input dimension
/// becomes a size variable named after its dim_param (inputs sharing one share it), an unknown
/// one a variable named `<input>_<axis>`; `shapes` specializes an input to static extents. An
/// input
/// bound in `values` is an initializer holding that tensor: a Constant, not a parameter, so the
/// inputs a model uses as shapes, axes or scales can be given at import.
///
/// Errors are Kiln errors: ValueError for a file that is not a valid ONNX model (or fails the
/// ONNX checker or shape inference), NotImplementedError listing every unsupported
/// (op type, opset) of the model at once, TypeError when the imported graph is ill-typed.
/// Ops of custom domains are converted by functions plugins register
/// (kiln/frontend/onnx_converter.h).
///
/// Libraries: libkiln_onnx.so (CMake target Kiln::onnx). From other languages:
/// `frontend.from_onnx_file(path, shapes, values)` and
/// `frontend.from_onnx_bytes(bytes, shapes, values)`.
#ifndef KILN_FRONTEND_ONNX_H_
#define KILN_FRONTEND_ONNX_H_

#include <kiln/ffi/tensor.h>
#include <kiln/ir/module.h>

#include <string>

namespace kiln {
namespace frontend {

/// Input name -> shape, overriding the shape the model declares for that input.
using InputShapes = Map<String, Array<int64_t>>;
/// Input name -> the host tensor (compact, of a dtype Kiln imports) the input is bound to. The
/// caller keeps ownership; the importer copies the elements.
using InputValues = Map<String, Tensor>;

/// Imports the ONNX model stored at `path`.
KILN_API ir::IRModule ImportOnnxFile(const std::string& path,
                                     const InputShapes& shapes = InputShapes(),
                                     const InputValues& values = InputValues());

/// Imports an ONNX model from its serialized bytes (a ModelProto).
KILN_API ir::IRModule ImportOnnxBytes(const std::string& bytes,
                                      const InputShapes& shapes = InputShapes(),
                                      const InputValues& values = InputValues());

}  // namespace frontend
}  // namespace kiln

#endif  // KILN_FRONTEND_ONNX_H_
