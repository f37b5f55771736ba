// The ONNX converter of the custom-domain op com.example.my_ext::Swish: Kiln's ONNX importer
// looks up `frontend.onnx.convert.<domain>.<OpType>` for every node of a domain it does not
// know, when it meets one, so the converter works whenever the plugin is loaded before import.
//
//   Swish(X) -> Y, attribute beta (float, default 1.0): Y = X * sigmoid(beta * X)
#include <kiln/frontend/onnx_converter.h>
#include <kiln/ir/op.h>

#include <cstdint>

namespace my_ext {
namespace {

namespace ir = kiln::ir;
using kiln::Any;
using kiln::Array;
using kiln::Map;
using kiln::String;

/// `inputs` in the node's order, `attrs` as plain values (a float attribute is a double),
/// `opset` the version of com.example.my_ext the model imports: only version 1 exists.
ir::Expr ConvertSwish(const Array<ir::Expr>& inputs, const Map<String, Any>& attrs, int64_t opset) {
  KILN_CHECK(opset <= 1, NotImplementedError)
      << "Swish: com.example.my_ext opset " << opset << " is newer than this plugin (1)";
  KILN_CHECK(inputs.size() == 1 && inputs[0].defined(), ValueError)
      << "Swish takes one input, got " << inputs.size();
  const double beta = attrs.Get(String("beta")).value_or(Any(1.0)).cast<double>();
  return ir::Call(ir::Op::Get("my_ext.swish"), {inputs[0]}, {{"beta", beta}});
}

KILN_REGISTER_ONNX_CONVERTER("com.example.my_ext", "Swish", ConvertSwish);

}  // namespace
}  // namespace my_ext
