/// Macros shared by every Kiln header: symbol visibility and small helpers.
#ifndef KILN_FFI_BASE_H_
#define KILN_FFI_BASE_H_

#include <kiln/ffi/c_api.h>

/// Marks a declaration as part of a Kiln library's public interface. Everything else is hidden
/// (-fvisibility=hidden), so a plugin sees only what Kiln promises to keep.
#define KILN_API KILN_API_EXPORT

/// Forces a per-DSO copy of an inline function: each plugin keeps its own state (for example its
/// list of pending registrations) even when two plugins were built from the same headers.
#define KILN_DSO_LOCAL __attribute__((visibility("hidden")))

#define KILN_STR_CONCAT_(a, b) a##b
#define KILN_STR_CONCAT(a, b) KILN_STR_CONCAT_(a, b)
#define KILN_UNIQUE_NAME(prefix) KILN_STR_CONCAT(prefix, __COUNTER__)

#if defined(__GNUC__) || defined(__clang__)
#define KILN_ALWAYS_INLINE inline __attribute__((always_inline))
#define KILN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define KILN_ALWAYS_INLINE inline
#define KILN_UNLIKELY(x) (x)
#endif

#endif  // KILN_FFI_BASE_H_
