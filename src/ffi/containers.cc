// C entry points for the built-in value objects, and the ffi.Map* globals through which other
// languages build and read maps (whose layout is not part of the C ABI).
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/ffi/shape.h>

#include "c_api_guard_internal.h"

namespace kiln {
namespace {

template <typename RefT>
KilnObjectHandle ReleaseHandle(RefT ref) {
  return detail::ObjectUnsafe::Header(std::move(ref).ReleaseData().release());
}

KILN_REGISTER_GLOBAL("ffi.Map").set_body_packed([](const AnyView* args, int32_t num_args,
                                                   Any* result) {
  KILN_CHECK(num_args % 2 == 0, ValueError)
      << "ffi.Map expects key, value pairs, but got " << num_args << " arguments";
  Map<Any, Any> map;
  for (int32_t i = 0; i < num_args; i += 2) map.Set(Any(args[i]), Any(args[i + 1]));
  *result = map;
});

KILN_REGISTER_GLOBAL("ffi.MapSize").set_body_typed([](const Map<Any, Any>& map) {
  return map.size();
});

KILN_REGISTER_GLOBAL("ffi.MapGetItem").set_body_typed([](const Map<Any, Any>& map, const Any& key) {
  return map.at(key);
});

KILN_REGISTER_GLOBAL("ffi.MapItems").set_body_typed([](const Map<Any, Any>& map) {
  Array<Any> items;
  for (const auto& [key, value] : map.get()->entries()) {
    items.push_back(key);
    items.push_back(value);
  }
  return items;
});

}  // namespace
}  // namespace kiln

extern "C" {

int kiln_string_create(const char* data, size_t size, KilnObjectHandle* out) {
  KILN_C_API_BEGIN();
  *out = kiln::ReleaseHandle(kiln::String(std::string_view(data, size)));
  KILN_C_API_END();
}

int kiln_bytes_create(const char* data, size_t size, KilnObjectHandle* out) {
  KILN_C_API_BEGIN();
  *out = kiln::ReleaseHandle(kiln::Bytes(data, size));
  KILN_C_API_END();
}

int kiln_shape_create(const int64_t* data, int64_t ndim, KilnObjectHandle* out) {
  KILN_C_API_BEGIN();
  *out = kiln::ReleaseHandle(kiln::Shape(data, ndim));
  KILN_C_API_END();
}

int kiln_array_create(const KilnAny* items, int64_t size, KilnObjectHandle* out) {
  KILN_C_API_BEGIN();
  KILN_CHECK(size >= 0, ValueError) << "an array cannot have " << size << " elements";
  std::vector<kiln::Any> owned;
  owned.reserve(size);
  for (int64_t i = 0; i < size; ++i) owned.emplace_back(kiln::AnyView::FromRaw(items[i]));
  auto array = kiln::make_object<kiln::ArrayObj>(std::move(owned));
  *out = kiln::detail::ObjectUnsafe::Header(array.release());
  KILN_C_API_END();
}

}  // extern "C"
