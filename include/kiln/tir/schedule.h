/// Schedule primitives (docs/design.md §21, §24): transformations of a prim_func's loops that
/// keep what it computes, named by loop variable, as the default schedule and passes (from Kiln,
/// a plugin or Python) apply them. Each returns the new function; the one given is unchanged.
///
///   Node f = Split(func, "i", 16, "io", "ii");     // for io: for ii: ... i = io * 16 + ii
///   f = Vectorize(f, "ii");
///   f = Parallel(f, "io");
///
/// A primitive applied where it is invalid is a ValueError that names the function, the loop and
/// the reason: an unknown loop (the loops there are listed), a factor below 1, fusing or
/// reordering loops that are not directly nested, vectorizing a loop that holds another loop,
/// a new loop variable name already taken, inlining a stage that is not one store, or moving a
/// stage into a loop whose iterations read values other iterations compute.
#ifndef KILN_TIR_SCHEDULE_H_
#define KILN_TIR_SCHEDULE_H_

#include <kiln/ffi/function.h>
#include <kiln/tir/node.h>

#include <cstdint>
#include <string>

namespace kiln {
namespace tir {

/// Loop `loop` as `outer` over ceildiv(extent, factor) and `inner` over `factor`, its variable
/// `outer * factor + inner`; iterations past the extent are skipped by an `if` unless the
/// analyzer proves that `factor` divides it.
KILN_API Node Split(const Node& func, const std::string& loop, int64_t factor,
                    const std::string& outer, const std::string& inner);

/// Loops `outer` and `inner`, the latter the whole body of the former, as one loop `fused` over
/// both extents' product: outer = fused / inner extent, inner = fused % inner extent.
KILN_API Node Fuse(const Node& func, const std::string& outer, const std::string& inner,
                   const std::string& fused);

/// Swaps loops `outer` and `inner`, the latter the whole body of the former. The caller
/// vouches that no iteration reads what another one writes across the two loops (loops of a
/// generated group, which store each element once, qualify).
KILN_API Node Reorder(const Node& func, const std::string& outer, const std::string& inner);

/// Marks loop `loop` parallel (run on Kiln's thread pool), vectorized (its body must hold no
/// loop) or unrolled.
KILN_API Node Parallel(const Node& func, const std::string& loop);
KILN_API Node Vectorize(const Node& func, const std::string& loop);
KILN_API Node Unroll(const Node& func, const std::string& loop);

/// Stages: a buffer the function allocates and computes in one statement of the sequence under
/// its allocation, read by later statements of that sequence (a group's reductions as the
/// lowering writes them, a temporary of a hand-written function).
///
/// Inlines stage `buffer`, computed by one store at its loops' variables: each read becomes the
/// stored value at the read's indices, and the stage, its loops and its allocation go.
KILN_API Node ComputeInline(const Node& func, const std::string& buffer);

/// Moves the computation of stage `buffer` into loop `loop` of a later statement (compute-at),
/// which also makes it a cache stage: with `loop` and the loops around it (k of them) over the
/// stage's first k axes, and every read of the stage inside `loop` at those loops' variables,
/// each iteration computes the one slice it reads into a local buffer of the stage's other axes,
/// where it stays in cache. The stage's loops over those axes go; its allocation becomes the
/// slice's, inside the loop.
KILN_API Node ComputeAt(const Node& func, const std::string& buffer, const std::string& loop);

/// Tensor intrinsics: a loop nest a hand-written kernel computes, and how to call that kernel.
/// `desc` is a prim_func whose body is the loop nest, over its parameters' buffers, whose sizes
/// are variables (`m`, `n`, `k`) bound by the matched nest's extents. `impl` builds the statement
/// that replaces a matched nest; it is called with two maps:
///   buffers: the description's buffer name -> {"buffer": the function's buffer, "offset": the
///            region's first element (one index per axis of that buffer), "strides": the
///            buffer's row-major strides in elements over the description's axes (its last ones)}
///   sizes:   the description's size name -> its extent in the nest
/// and typically returns evaluate(call_packed("<micro-kernel>", [address(buffer, offset), ...])).
/// Registered as the globals `tir.intrin.<name>` (impl) and `tir.intrin.<name>.desc`, so that C++,
/// plugins and Python register them alike; the core registers `sgemm` (C = A * B) and
/// `sgemm_bt` (C = A * B^T), calling the CPU kernels' GEMM.
KILN_API void RegisterTensorIntrin(const std::string& name, const Node& desc, const Function& impl);

/// Replaces loop `loop` (with everything in it) by intrinsic `intrin`'s implementation, when
/// the nest computes what its description does: the same statements, loops paired in order,
/// and each buffer accessed at a fixed offset (which may depend on the loops outside `loop`)
/// plus the description's index. Otherwise a ValueError names the loop and the first
/// difference.
KILN_API Node Tensorize(const Node& func, const std::string& loop, const std::string& intrin);

/// Binds loop `loop` to a GPU index: `index` is block_x, block_y, block_z, thread_x, thread_y
/// or thread_z (kiln/tir/codegen_c.h's GenerateCuda launches it so).
KILN_API Node Bind(const Node& func, const std::string& loop, const std::string& index);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_TIR_SCHEDULE_H_
