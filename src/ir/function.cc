// Function: construction, validation of parameters and of the attributes the compiler reads.
#include <kiln/ir/function.h>

#include <string_view>
#include <unordered_set>

#include "validate_internal.h"

namespace kiln {
namespace ir {
namespace {

/// The known attributes are read by passes that trust their type, so a wrong one fails here,
/// where the author of the attribute can see it, rather than deep inside a pass.
void CheckKnownAttr(const String& key, const Any& value) {
  const std::string_view name = key.view();
  if (name == attr::kCompiler || name == attr::kComposite || name == attr::kGlobalSymbol) {
    KILN_CHECK(value.as<String>().has_value(), TypeError)
        << "Function: attribute '" << name << "' must be a str, got " << value.type_str();
  } else if (name == attr::kPrimitive) {
    std::optional<int64_t> flag = value.as<int64_t>();
    KILN_CHECK(flag.has_value() && (*flag == 0 || *flag == 1), ValueError)
        << "Function: attribute '" << name << "' must be 0 or 1, got " << value.type_str();
  }
}

void CheckParams(const Array<Var>& params) {
  CheckNoNullElement(params, "Function", "parameter");
  std::unordered_set<const Object*> seen;
  for (int64_t i = 0; i < params.size(); ++i) {
    const Var param = params[i];
    KILN_CHECK(seen.insert(param.get()).second, ValueError)
        << "Function: parameter " << i << " (%" << param->name_hint() << ") appears more than once";
  }
}

}  // namespace

FunctionObj::~FunctionObj() {
  detail::ReleaseIteratively(std::move(params_));
  detail::ReleaseIteratively(std::move(body_));
}

Function::Function(Array<Var> params, Expr body, Type ret_type, Map<String, Any> attrs) {
  CheckParams(params);
  KILN_CHECK(body.defined(), ValueError) << "Function: the body is null";
  for (const auto& [key, value] : attrs) CheckKnownAttr(key, value);
  data_ = make_object<FunctionObj>(std::move(params), std::move(body), std::move(ret_type),
                                   std::move(attrs));
}

Function Function::WithAttr(const String& key, const Any& value) const {
  CheckKnownAttr(key, value);
  Map<String, Any> attrs = get()->attrs();
  attrs.Set(key, value);  // copy-on-write: this function's map is untouched
  return Function(get()->params(), get()->body(), get()->ret_type(), std::move(attrs));
}

}  // namespace ir
}  // namespace kiln
