/// Function: parameters, a body, an optional result type and attributes.
#ifndef KILN_IR_FUNCTION_H_
#define KILN_IR_FUNCTION_H_

#include <kiln/ir/expr.h>

#include <optional>

namespace kiln {
namespace ir {

/// Names of the function attributes the compiler itself reads.
namespace attr {
/// String: the external compiler (BYOC) that takes this function, e.g. "dnnl".
constexpr const char* kCompiler = "Compiler";
/// String: the pattern a composite function was matched from, e.g. "dnnl.conv2d_relu".
constexpr const char* kComposite = "Composite";
/// String: the symbol the function is exported under.
constexpr const char* kGlobalSymbol = "global_symbol";
/// Int (0 or 1): the function is a fused group that codegen lowers as one kernel.
constexpr const char* kPrimitive = "Primitive";
}  // namespace attr

class FunctionObj : public ExprObj {
 public:
  static constexpr const char* _type_key = "kiln.ir.Function";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(FunctionObj, ExprObj);

  FunctionObj(Array<Var> params, Expr body, Type ret_type, Map<String, Any> attrs)
      : params_(std::move(params)),
        body_(std::move(body)),
        ret_type_(std::move(ret_type)),
        attrs_(std::move(attrs)) {}
  KILN_API ~FunctionObj();
  const Array<Var>& params() const { return params_; }
  const Expr& body() const { return body_; }
  /// May be null: the result type is then left to inference.
  const Type& ret_type() const { return ret_type_; }
  const Map<String, Any>& attrs() const { return attrs_; }

 private:
  Array<Var> params_;
  Expr body_;
  Type ret_type_;
  Map<String, Any> attrs_;
};

class Function : public Expr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Function, Expr, FunctionObj);
  /// ValueError when the body is null, a parameter is null or appears twice, or a known
  /// attribute (attr::k*) has the wrong type.
  KILN_API Function(Array<Var> params, Expr body, Type ret_type = Type(),
                    Map<String, Any> attrs = Map<String, Any>());

  /// The attribute `key` converted to T; nullopt when absent, TypeError when it is not a T.
  template <typename T>
  std::optional<T> GetAttr(const String& key) const {
    std::optional<Any> value = get()->attrs().Get(key);
    if (!value.has_value()) return std::nullopt;
    return value->cast<T>();
  }
  /// A new Function equal to this one but with attribute `key` set to `value` (this one is
  /// unchanged). Validated like the constructor.
  KILN_API Function WithAttr(const String& key, const Any& value) const;
};

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_FUNCTION_H_
