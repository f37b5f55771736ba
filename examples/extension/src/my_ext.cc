// my_ext: the smallest useful Kiln plugin. Each KILN_REGISTER_GLOBAL becomes a global function
// that C++, Python and other plugins call by name once the plugin is loaded.
#include <kiln/ffi/registry.h>
#include <kiln/ffi/string.h>

#include <cstdint>

namespace my_ext {
namespace {

KILN_REGISTER_GLOBAL("my_ext.add_one").set_body_typed([](int64_t x) { return x + 1; });

KILN_REGISTER_GLOBAL("my_ext.greet").set_body_typed([](const kiln::String& name) {
  return kiln::String("Hello, " + name.str() + "!");
});

}  // namespace
}  // namespace my_ext
