// Error objects and the thread-local slot through which errors cross the C ABI.
#include <kiln/ffi/error.h>

#include "c_api_guard_internal.h"

namespace kiln {
namespace {

ObjectPtr<ErrorObj>& RaisedSlot() {
  thread_local ObjectPtr<ErrorObj> slot;
  return slot;
}

}  // namespace
}  // namespace kiln

extern "C" {

int kiln_error_create(const char* kind, const char* message, const char* context,
                      KilnObjectHandle* out_error) {
  KILN_C_API_BEGIN();
  auto error = kiln::make_object<kiln::ErrorObj>(kind ? kind : "RuntimeError",
                                                 message ? message : "", context ? context : "");
  *out_error = kiln::detail::ObjectUnsafe::Header(error.release());
  KILN_C_API_END();
}

void kiln_error_set_raised(KilnObjectHandle error) {
  kiln::Object* obj = kiln::detail::ObjectUnsafe::FromHeader(error);
  if (obj == nullptr || !obj->IsInstance<kiln::ErrorObj>()) {
    kiln_error_set_raised_from_cstr("InternalError",
                                    "kiln_error_set_raised was given something not an Error");
    return;
  }
  kiln::RaisedSlot() =
      kiln::ObjectPtr<kiln::ErrorObj>::FromBorrowed(static_cast<kiln::ErrorObj*>(obj));
}

int kiln_error_set_raised_from_cstr(const char* kind, const char* message) {
  try {
    kiln::RaisedSlot() =
        kiln::make_object<kiln::ErrorObj>(kind ? kind : "RuntimeError", message ? message : "", "");
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory while reporting an error
  }
  return -1;
}

void kiln_error_move_from_raised(KilnObjectHandle* out_error) {
  kiln::ObjectPtr<kiln::ErrorObj> error = std::move(kiln::RaisedSlot());
  kiln::RaisedSlot() = nullptr;
  if (error == nullptr) {
    error = kiln::make_object<kiln::ErrorObj>(
        "InternalError", "a call failed without raising an error (a bug in the callee)", "");
  }
  *out_error = kiln::detail::ObjectUnsafe::Header(error.release());
}

}  // extern "C"
