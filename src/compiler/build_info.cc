// compiler.Version: the compiler library's version, which must match the runtime it loaded.
#include <kiln/ffi/registry.h>

namespace kiln {
namespace {

KILN_REGISTER_GLOBAL("compiler.Version").set_body_typed([]() { return String(KILN_VERSION); });

}  // namespace
}  // namespace kiln
