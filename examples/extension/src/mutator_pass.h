// MutatorPass<M>(name): a function pass that rewrites each function with a fresh M, an
// ir::ExprMutator. Both of the plugin's passes are of this shape.
#ifndef MY_EXT_MUTATOR_PASS_H_
#define MY_EXT_MUTATOR_PASS_H_

#include <kiln/ir/expr_functor.h>
#include <kiln/transform/pass.h>

namespace my_ext {

/// The pass `name`, at opt level 1 (it runs in default pipelines, and is skipped below).
template <typename Mutator>
kiln::transform::Pass MutatorPass(const char* name) {
  return kiln::transform::CreateFunctionPass(
      [](const kiln::ir::Function& func, const kiln::ir::IRModule& /*mod*/,
         const kiln::transform::PassContext& /*ctx*/) {
        // An ExprMutator rather than a recursive walk: its driver handles deep graphs and
        // shared nodes.
        return kiln::Any(Mutator().Mutate(func)).cast<kiln::ir::Function>();
      },
      kiln::transform::PassInfo{name, /*opt_level=*/1, /*required=*/false});
}

}  // namespace my_ext

#endif  // MY_EXT_MUTATOR_PASS_H_
