// A plugin that registers a global name which the testing plugin already owns.
#include <kiln/ffi/registry.h>

KILN_REGISTER_GLOBAL("duplicate.registered_first").set_body_typed([]() { return 1; });
KILN_REGISTER_GLOBAL("testing.add").set_body_typed([](int64_t a, int64_t b) { return a - b; });
