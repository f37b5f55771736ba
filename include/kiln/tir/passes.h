/// Loop-level passes (docs/design.md §23): each is the global function `tir.pass.<name>`,
/// prim_func -> prim_func, registered from C++ (KILN_REGISTER_GLOBAL, in Kiln or a plugin) or
/// Python (`@kiln.tir.prim_func_pass`), and composed by name.
#ifndef KILN_TIR_PASSES_H_
#define KILN_TIR_PASSES_H_

#include <kiln/tir/node.h>
#include <kiln/transform/pass_context.h>

#include <string>

namespace kiln {
namespace tir {

/// The prefix of the global functions that are loop-level passes.
constexpr const char* kPassPrefix = "tir.pass.";

/// `func` after the passes `names` ("simplify,my_ext.unroll_short_loops"), in order. A name that
/// is not registered loads the plugins on the plugin path first, then is a KeyError listing the
/// passes there are; an error inside a pass names it. The context's instruments see each pass
/// (PassInstrumentObj::RunBeforeLoopPass: timings, dumps, the well-formedness check), and a pass
/// it disables ("tir.pass.unroll") is skipped.
KILN_API Node RunPasses(const Node& func, const std::string& names,
                        const transform::PassContext& context = transform::PassContext::Create());

}  // namespace tir
}  // namespace kiln

#endif  // KILN_TIR_PASSES_H_
