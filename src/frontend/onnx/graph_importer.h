// Converting a loaded ONNX graph into an IRModule, node by node through the converter table.
#ifndef KILN_SRC_FRONTEND_ONNX_GRAPH_IMPORTER_H_
#define KILN_SRC_FRONTEND_ONNX_GRAPH_IMPORTER_H_

#include <kiln/ir/module.h>

#include "model_loader.h"

namespace kiln {
namespace frontend {
namespace onnx_import {

/// @main of the module: one parameter per non-initializer input, the graph's outputs as the
/// result.
ir::IRModule ImportGraph(const LoadedModel& loaded);

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln

#endif  // KILN_SRC_FRONTEND_ONNX_GRAPH_IMPORTER_H_
