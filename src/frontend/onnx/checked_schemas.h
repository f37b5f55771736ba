// Private to the ONNX frontend: ONNX's operator schemas for shape inference, with the inference
// of the convolutions guarded against ranks that crash ONNX 1.12.
#ifndef KILN_SRC_FRONTEND_ONNX_CHECKED_SCHEMAS_H_
#define KILN_SRC_FRONTEND_ONNX_CHECKED_SCHEMAS_H_

#include <onnx/defs/schema.h>

namespace kiln {
namespace frontend {
namespace onnx_import {

/// ONNX's own schema registry, except that Conv, ConvInteger, ConvTranspose and QLinearConv
/// check their data and weight ranks before ONNX's inference runs: onnx::convPoolShapeInference
/// takes the kernel's rank from the weight and reads the input's dimensions past its end when
/// the weight has the higher rank (a 154-byte model crashed the importer: kiln_onnx_fuzzer,
/// tests/fuzz/corpus/onnx/regression_conv_weight_rank_above_input_rank.onnx; upstream
/// onnx/onnx#8036). Such a model now fails inference with an error naming the op and both ranks.
/// Thread-safe; the registry lives as long as the process.
const onnx::ISchemaRegistry* CheckedSchemaRegistry();

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_CHECKED_SCHEMAS_H_
