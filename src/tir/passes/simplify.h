// Private to the loop-level passes: the simplifier of the pass `simplify`, for passes that
// simplify what they build (a peeled iteration, an unrolled body) under bounds of their own.
#ifndef KILN_SRC_TIR_PASSES_SIMPLIFY_H_
#define KILN_SRC_TIR_PASSES_SIMPLIFY_H_

#include <kiln/arith/analyzer.h>
#include <kiln/tir/node.h>

namespace kiln {
namespace tir {

/// An analyzer with each size variable of `func`'s parameters bound to [1, inf).
arith::Analyzer FunctionAnalyzer(const Node& func);
/// `node` simplified as the pass `simplify` does, its free variables bounded by `analyzer`.
Node SimplifyUnder(const Node& node, const arith::Analyzer& analyzer);
/// The pass `simplify`: `func` simplified under FunctionAnalyzer(func).
Node Simplify(const Node& func);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_SRC_TIR_PASSES_SIMPLIFY_H_
