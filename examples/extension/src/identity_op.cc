// my_ext.identity: an op that returns its one argument. It exists so the plugin's pass
// (remove_identity.cc) has something of its own to rewrite; a real extension registers the ops
// its frontend emits or its backend implements.
#include <kiln/ir/op.h>

namespace my_ext {
namespace {

KILN_REGISTER_OP("my_ext.identity");

}  // namespace
}  // namespace my_ext
