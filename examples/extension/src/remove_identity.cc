// my_ext.transform.RemoveIdentity: replaces every call `my_ext.identity(x)` by `x`.
//
// The smallest pass worth writing from a plugin: it shows that a pass built outside Kiln, only
// against the installed headers, runs in the same pipelines (C++ Sequential, Python, pipeline
// strings) as the built-in passes once the plugin is loaded.
#include <kiln/ir/expr_functor.h>
#include <kiln/transform/pass.h>

#include "mutator_pass.h"

namespace my_ext {
namespace {

namespace ir = kiln::ir;

class IdentityRemover : public ir::ExprMutator {
 protected:
  ir::Expr VisitCall(const ir::Call& pre, const ir::Call& post) override {
    if (!post->op().same_as(identity_)) return ExprMutator::VisitCall(pre, post);
    KILN_CHECK(post->args().size() == 1, ValueError)
        << "my_ext.identity takes one argument, not " << post->args().size();
    return post->args()[0];
  }

 private:
  // Looked up when the pass runs, not at load time: the op registers once the plugin's ABI is
  // accepted, after this file's static initializers.
  const ir::Op identity_ = ir::Op::Get("my_ext.identity");
};

kiln::transform::Pass RemoveIdentity() {
  return MutatorPass<IdentityRemover>("my_ext.transform.RemoveIdentity");
}

KILN_REGISTER_PASS_AS("my_ext.transform.RemoveIdentity", RemoveIdentity);

}  // namespace
}  // namespace my_ext
