// A plugin built against a future Kiln ABI: the host must refuse it before it registers.
#include <kiln/ffi/registry.h>

KILN_REGISTER_GLOBAL("bad_abi.never_registered").set_body_typed([]() { return 1; });

extern "C" KILN_API_EXPORT int kiln_plugin_init(const KilnHostApi* host, KilnPluginInfo* info) {
  info->abi_major = KILN_ABI_VERSION_MAJOR + 1;
  info->abi_minor = 0;
  info->name = "bad_abi";
  info->version = "9.9.9";
  info->register_all = [] { return 0; };
  return 0;
}
