// Function objects made from C callbacks, and calling a Function through the C ABI.
#include <kiln/ffi/function.h>

#include "c_api_guard_internal.h"

namespace kiln {
namespace {

/// A Function whose body is a C callback and its resource (a Python callable, say).
class CallbackFunctionObj : public FunctionObj {
 public:
  CallbackFunctionObj(void* resource, KilnSafeCall callback, void (*deleter)(void*))
      : resource_(resource), callback_(callback), deleter_(deleter) {
    safe_call = &Trampoline;
  }
  CallbackFunctionObj(const CallbackFunctionObj&) = delete;
  CallbackFunctionObj& operator=(const CallbackFunctionObj&) = delete;
  ~CallbackFunctionObj() {
    if (deleter_ != nullptr) deleter_(resource_);
  }

 private:
  static int Trampoline(void* self, const KilnAny* args, int32_t num_args, KilnAny* result) {
    auto* func = static_cast<CallbackFunctionObj*>(
        detail::ObjectUnsafe::FromHeader(static_cast<KilnObject*>(self)));
    return func->callback_(func->resource_, args, num_args, result);
  }
  void* resource_;
  KilnSafeCall callback_;
  void (*deleter_)(void*);
};

}  // namespace
}  // namespace kiln

extern "C" {

int kiln_function_create(void* resource, KilnSafeCall safe_call,
                         void (*resource_deleter)(void* resource), KilnObjectHandle* out_func) {
  KILN_C_API_BEGIN();
  KILN_CHECK(safe_call != nullptr, ValueError) << "kiln_function_create needs a callback";
  auto func = kiln::make_object<kiln::CallbackFunctionObj>(resource, safe_call, resource_deleter);
  *out_func = kiln::detail::ObjectUnsafe::Header(func.release());
  KILN_C_API_END();
}

int kiln_function_call(KilnObjectHandle func, const KilnAny* args, int32_t num_args,
                       KilnAny* result) {
  if (func == nullptr || func->type_index != kKilnTypeFunction) {
    return kiln_error_set_raised_from_cstr("TypeError", "kiln_function_call needs a Function");
  }
  return reinterpret_cast<KilnFunctionObject*>(func)->safe_call(func, args, num_args, result);
}

}  // extern "C"
