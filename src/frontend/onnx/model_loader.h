// Reading an ONNX model: parsing, input-shape overrides, the ONNX checker and shape inference,
// each failure a Kiln error that names the model.
#ifndef KILN_SRC_FRONTEND_ONNX_MODEL_LOADER_H_
#define KILN_SRC_FRONTEND_ONNX_MODEL_LOADER_H_

#include <kiln/frontend/onnx.h>
#include <onnx/onnx_pb.h>

#include <string>

namespace kiln {
namespace frontend {
namespace onnx_import {

/// The model serialized in `bytes`, checked, with `shapes` written into its inputs and every
/// value's shape inferred. `source` names the model in errors ("model.onnx", "<bytes>").
onnx::ModelProto LoadModel(const std::string& bytes, const std::string& source,
                           const InputShapes& shapes);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_MODEL_LOADER_H_
