/// ONNX converters for ops of custom domains, registered by plugins (or Python).
///
/// Kiln's ONNX importer converts ops of the default domain with its own converter table. A node
/// of any other domain `D` with op type `T` is converted by the global function named
/// `frontend.onnx.convert.D.T` (kOnnxConverterPrefix + D + "." + T), looked up each time a
/// model is imported, so a plugin loaded at any point before the import is found. Without
/// that function the node is listed among the model's unsupported ops, with the function's
/// name as a hint.
///
/// The function's signature is `(Array<ir::Expr> inputs, Map<String, Any> attrs,
/// int64_t opset) -> ir::Expr`:
/// - `inputs`: the node's inputs in order, each converted and type-checked (checked_type() is
///   set). An omitted optional input (an empty name) is None: a converter of an op whose
///   optional inputs may be left out in the middle declares `Array<std::optional<ir::Expr>>`
///   (or `Array<Any>`) instead, as a None is not an ir::Expr. Trailing omitted inputs are
///   dropped.
/// - `attrs`: the node's attributes by name: INT as int64_t, FLOAT as double, STRING as
///   String, INTS as Array<int64_t>, FLOATS as Array<double>, STRINGS as Array<String>,
///   TENSOR as a host Tensor. A graph (or any other kind of) attribute is a
///   NotImplementedError naming the node and the attribute.
/// - `opset`: the version of domain D that the model imports (0 when it imports none).
/// - The result: one expression, or for a node with several outputs a tuple-typed expression
///   (an ir::Tuple, say) whose fields are the outputs in order. A converter may also return an
///   Array of expressions, taken as an ir::Tuple of them.
/// A converter throws a Kiln error for a node it cannot convert; the importer adds the node's
/// name to it.
///
/// In a plugin:
///   KILN_REGISTER_ONNX_CONVERTER("com.example.my_ext", "Swish",
///       [](Array<ir::Expr> inputs, Map<String, Any> attrs, int64_t opset) -> ir::Expr {...});
/// From Python: the decorator kiln.frontend.register_onnx_converter(domain, op_type).
#ifndef KILN_FRONTEND_ONNX_CONVERTER_H_
#define KILN_FRONTEND_ONNX_CONVERTER_H_

#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/expr.h>

#include <string>

/// The prefix of converter names, as a string literal (for KILN_REGISTER_ONNX_CONVERTER).
#define KILN_ONNX_CONVERTER_PREFIX "frontend.onnx.convert."

namespace kiln {
namespace frontend {

/// The prefix of the global function names that convert custom-domain ONNX ops.
constexpr const char* kOnnxConverterPrefix = KILN_ONNX_CONVERTER_PREFIX;

/// The global function name that converts op `op_type` of ONNX domain `domain`.
inline std::string OnnxConverterName(const std::string& domain, const std::string& op_type) {
  return kOnnxConverterPrefix + domain + "." + op_type;
}

}  // namespace frontend
}  // namespace kiln

/// Registers the callable given last (of the signature above; variadic so that a lambda's
/// commas need no parentheses) as the converter of op `OpType` of ONNX domain `Domain`, both
/// string literals. In a plugin the registration waits for the plugin's ABI check, as every
/// KILN_REGISTER_GLOBAL does.
#define KILN_REGISTER_ONNX_CONVERTER(Domain, OpType, ...) \
  KILN_REGISTER_GLOBAL(KILN_ONNX_CONVERTER_PREFIX Domain "." OpType).set_body_typed(__VA_ARGS__)

#endif  // KILN_FRONTEND_ONNX_CONVERTER_H_
