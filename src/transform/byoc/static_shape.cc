// StaticFloat32Shape (kiln/transform/byoc.h): the one check every plugin predicate starts with,
// so that all plugins word their reasons alike in the placement report.
#include <kiln/ir/type.h>
#include <kiln/transform/byoc.h>

namespace kiln {
namespace transform {

std::optional<std::vector<int64_t>> StaticFloat32Shape(const ir::Type& type,
                                                       const std::string& what,
                                                       std::string* reason) {
  const auto* tensor = type.as<ir::TensorTypeObj>();
  if (tensor == nullptr) {
    *reason = what + " is not a tensor";
    return std::nullopt;
  }
  if (!DataTypeEqual(tensor->dtype(), DLDataType{kDLFloat, 32, 1})) {
    *reason = what + " is " + DataTypeToString(tensor->dtype()) + ", not float32";
    return std::nullopt;
  }
  std::vector<int64_t> shape;
  for (const ir::Dim& dim : tensor->shape()) {
    if (!dim.as_static().has_value()) {
      *reason = what + " has a dynamic shape";
      return std::nullopt;
    }
    shape.push_back(*dim.as_static());
  }
  return shape;
}

}  // namespace transform
}  // namespace kiln
