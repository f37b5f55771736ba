// A plugin whose initialization fails after it has registered a function (as one that finds no
// device would): the host must report it and roll its registration back.
#include <kiln/ffi/registry.h>

KILN_REGISTER_GLOBAL("throwing.registered_before_failure").set_body_typed([]() { return 1; });

KILN_REGISTER_INITIALIZER([] {
  KILN_THROW(RuntimeError) << "the throwing plugin failed to initialize on purpose";
});
