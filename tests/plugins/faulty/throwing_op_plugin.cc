// A plugin that registers an op, adds an attribute to a core op, and then fails: the host must
// roll both back, so that a fixed version of the plugin can register the op again.
#include <kiln/ir/op.h>

KILN_REGISTER_OP("throwing_op.relu").add_input("data").set_pattern(kiln::ir::OpPattern::kElemWise);
KILN_EXTEND_OP("exp").set_attr("throwing_op.marker", int64_t{1});

KILN_REGISTER_INITIALIZER([] {
  KILN_THROW(RuntimeError) << "the throwing_op plugin failed to initialize on purpose";
});
