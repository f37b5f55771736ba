// The public entry points (kiln/frontend/onnx.h) and their global functions.
#include <kiln/ffi/error.h>
#include <kiln/ffi/plugin.h>
#include <kiln/ffi/registry.h>
#include <kiln/frontend/onnx.h>

#include <fstream>
#include <sstream>

#include "graph_importer.h"
#include "model_loader.h"

namespace kiln {
namespace frontend {
namespace {

ir::IRModule Import(const std::string& bytes, const std::string& source, const InputShapes& shapes,
                    const InputValues& values) {
  EnsurePluginsDiscovered();  // converters of custom domains come from plugins
  try {
    return onnx_import::ImportGraph(onnx_import::LoadModel(bytes, source, shapes, values));
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& error) {
    // protobuf and libonnx throw their own exceptions; callers see Kiln errors only.
    KILN_THROW(ValueError) << "importing " << source << " failed: " << error.what();
  }
}

}  // namespace

ir::IRModule ImportOnnxFile(const std::string& path, const InputShapes& shapes,
                            const InputValues& values) {
  std::ifstream file(path, std::ios::binary);
  KILN_CHECK(file.good(), ValueError) << "cannot open ONNX model '" << path << "'";
  std::ostringstream bytes;
  bytes << file.rdbuf();
  KILN_CHECK(!file.bad(), ValueError) << "cannot read ONNX model '" << path << "'";
  return Import(bytes.str(), "'" + path + "'", shapes, values);
}

ir::IRModule ImportOnnxBytes(const std::string& bytes, const InputShapes& shapes,
                             const InputValues& values) {
  return Import(bytes, "the ONNX bytes", shapes, values);
}

KILN_REGISTER_GLOBAL("frontend.from_onnx_file")
    .set_body_typed([](const String& path, const std::optional<InputShapes>& shapes,
                       const std::optional<InputValues>& values) {
      return ImportOnnxFile(path.str(), shapes.value_or(InputShapes()),
                            values.value_or(InputValues()));
    });
KILN_REGISTER_GLOBAL("frontend.from_onnx_bytes")
    .set_body_typed([](const Bytes& bytes, const std::optional<InputShapes>& shapes,
                       const std::optional<InputValues>& values) {
      return ImportOnnxBytes(std::string(bytes.view()), shapes.value_or(InputShapes()),
                             values.value_or(InputValues()));
    });

}  // namespace frontend
}  // namespace kiln
