/// Bring your own codegen, the compiler side before codegen (design §17, docs/byoc.md):
/// AnnotateTarget marks the calls each external compiler takes with annotation.compiler_begin /
/// compiler_end, MergeCompilerRegions merges the marked regions, PartitionGraph turns each region
/// into a global function for its compiler. Each pass is also the global `transform.<Name>`.
///
///   Pass p = ParsePipeline("InferType,AnnotateTarget(dnnl, blas),MergeCompilerRegions,"
///                          "PartitionGraph,InferType");
#ifndef KILN_TRANSFORM_BYOC_H_
#define KILN_TRANSFORM_BYOC_H_

#include <kiln/ir/expr.h>
#include <kiln/transform/pass.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace transform {

/// One compiler's answer to "do you take this call?".
struct PredicateAnswer {
  enum class Kind {
    kTaken,        ///< the predicate returned true, or the call is a composite of this compiler
    kDeclined,     ///< the predicate returned false or a reason, or the composite is another's
    kNoPredicate,  ///< the op has no attribute `target.<compiler>`
    kGraphLevel,   ///< `kiln.ext.<compiler>.partition` decides for the whole function instead
  };
  std::string compiler;
  Kind kind = Kind::kNoPredicate;
  /// Why it declined: the predicate's string, or a sentence for a composite; empty otherwise.
  std::string reason;
};

/// For plugins' predicates and codegens: the static shape of `type` when it is a float32 tensor
/// whose dimensions are all known; otherwise nullopt, with `*reason` naming the value as `what`
/// the way the placement report shows it: "<what> is not a tensor", "<what> is float64, not
/// float32", "<what> has a dynamic shape".
KILN_API std::optional<std::vector<int64_t>> StaticFloat32Shape(const ir::Type& type,
                                                                const std::string& what,
                                                                std::string* reason);

/// Each compiler's answer for `call`, in the order of `compilers`, as AnnotateTarget asks them:
/// a call of an op asks the op attribute `target.<compiler>`, a Function `(call: ir.Call) ->
/// bool | str`; a call of a function with attribute `Composite="<compiler>.<name>"` is taken by
/// that compiler alone; a compiler with a `kiln.ext.<compiler>.partition` function answers
/// kGraphLevel for op calls. Any other call gets kNoPredicate. A predicate's error is rethrown
/// with the compiler and op as context; a result other than a bool or a string is a TypeError.
/// `call` should be typed (InferType), since predicates read argument types. Also the global
/// `transform.AskCompilers(call, compilers)`, answering maps {compiler, answer, reason}.
KILN_API std::vector<PredicateAnswer> AskCompilers(const ir::Call& call,
                                                   const std::vector<std::string>& compilers);

/// Marks, in every function that is not Primitive, Compiler or Composite, each call the first
/// compiler of `compilers` (the user's priority order) takes: its inputs wrapped in
/// compiler_begin, its result in compiler_end (constant inputs stay unwrapped: they go into the
/// region). A compiler whose global `kiln.ext.<compiler>.partition(function) -> Array<Array<Call>>`
/// is registered takes the calls of the regions it returns instead of asking predicates. A tuple
/// is taken when all its fields but constants are calls one compiler took, a tuple field when
/// its tuple was.
/// Host calls are left unannotated; a function that already holds annotations (written by hand)
/// is left as it is. Types the input (InferType) first. Named `transform.AnnotateTarget(a, b)`,
/// so its pipeline string parses back to it. ValueError for an empty, repeated or malformed
/// compiler name.
KILN_API Pass AnnotateTarget(const std::vector<std::string>& compilers);

/// Merges the annotated regions of one compiler into as few regions as it can without making
/// the graph of regions cyclic (a region never absorbs a same-compiler region it reaches through
/// another compiler's region or a host node), by removing the compiler_end -> compiler_begin
/// pairs between merged calls. Greedy (src/transform/byoc/region_merge.h): the result is maximal
/// (no two adjacent regions of one compiler could still merge), not always the fewest. Validates
/// the annotations first (ValueError naming the node: unbalanced, mismatched compilers, a region in
/// a cycle).
KILN_API Pass MergeCompilerRegions();

/// Makes each annotated region (validated as by MergeCompilerRegions) a global function with
/// attributes Compiler=<compiler>, Primitive=1 and global_symbol="kiln_<compiler>_<n>", called
/// through its GlobalVar. n counts each compiler's regions from 0 over @main, then the other
/// functions by name; within a function regions go in a topological order of the regions and
/// host nodes, ties broken by post-order; names the module already has are skipped. So the
/// same input always gives the same names. Inputs from outside become
/// parameters typed by their checked types; constants stay inside; a region with several outputs
/// returns a tuple that the caller reads with TupleGetItem. Removes every annotation.
KILN_API Pass PartitionGraph();

}  // namespace transform
}  // namespace kiln

#endif  // KILN_TRANSFORM_BYOC_H_
