// The boundary of every extern "C" function of libkiln_ffi: C++ exceptions become a -1 return
// plus the error in the thread-local slot, never an exception crossing into C.
#ifndef KILN_SRC_FFI_C_API_GUARD_INTERNAL_H_
#define KILN_SRC_FFI_C_API_GUARD_INTERNAL_H_

#include <kiln/ffi/error.h>

#define KILN_C_API_BEGIN() try {
#define KILN_C_API_END()                             \
  }                                                  \
  catch (...) {                                      \
    ::kiln::detail::SetRaisedFromCurrentException(); \
    return -1;                                       \
  }                                                  \
  return 0;

#endif  // KILN_SRC_FFI_C_API_GUARD_INTERNAL_H_
