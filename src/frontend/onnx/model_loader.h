// Reading an ONNX model: parsing, input-shape overrides, the ONNX checker and shape inference,
// each failure a Kiln error that names the model.
#ifndef KILN_SRC_FRONTEND_ONNX_MODEL_LOADER_H_
#define KILN_SRC_FRONTEND_ONNX_MODEL_LOADER_H_

#include <kiln/frontend/onnx.h>
#include <onnx/onnx_pb.h>

#include <string>
#include <unordered_map>

namespace kiln {
namespace frontend {
namespace onnx_import {

/// Value name -> the elements of that int64 value, where ONNX's data propagation computed them
/// (Shape, and Gather/Concat/Unsqueeze/Slice/arithmetic over shapes). Stored as ONNX stores
/// them, one dim per element; unknown elements have no dim_value.
using PropagatedValues = std::unordered_map<std::string, onnx::TensorShapeProto>;

struct LoadedModel {
  onnx::ModelProto model;
  PropagatedValues shape_values;
};

/// The model serialized in `bytes`, checked, with `shapes` written into its inputs, each input
/// of `values` made an initializer holding its tensor, every value's shape inferred and shape
/// arithmetic propagated. `source` names the model in errors ("'model.onnx'", "the ONNX
/// bytes").
LoadedModel LoadModel(const std::string& bytes, const std::string& source,
                      const InputShapes& shapes, const InputValues& values);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_MODEL_LOADER_H_
