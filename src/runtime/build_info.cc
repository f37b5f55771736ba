// runtime.BuildInfo: how this Kiln was built, for bug reports and `kilnc plugins`.
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>

namespace kiln {
namespace {

KILN_REGISTER_GLOBAL("runtime.BuildInfo").set_body_typed([]() {
  return Map<String, Any>{
      {"version", String(KILN_VERSION)},
      {"abi_version", String(std::to_string(KILN_ABI_VERSION_MAJOR) + "." +
                             std::to_string(KILN_ABI_VERSION_MINOR))},
      {"cxx_compiler", String(KILN_CXX_COMPILER)},
      {"build_type", String(KILN_BUILD_TYPE)},
  };
});

}  // namespace
}  // namespace kiln
