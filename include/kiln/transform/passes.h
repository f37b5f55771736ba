/// The built-in passes. Each is also registered as the global function `transform.<Name>`.
#ifndef KILN_TRANSFORM_PASSES_H_
#define KILN_TRANSFORM_PASSES_H_

#include <kiln/transform/pass.h>

namespace kiln {
namespace transform {

/// Removes global functions that no entry function can reach through GlobalVar references.
/// Entries are the functions named `main` and those with a `global_symbol` attribute; a module
/// without any entry is returned unchanged (nothing says what is used). Opt level 1.
/// Nothing inside functions is removed: the dataflow IR has no bindings (no `let`) that could
/// be dead, and an unused Tuple field may still be read through the tuple as a whole.
KILN_API Pass DeadCodeElimination();

/// Fills in the checked type of every expression and the result type of every function that
/// has none (infer_type.h). Required (runs at any opt level); functions taken by an external
/// compiler are typed too, since their callers' types depend on them.
KILN_API Pass InferType();

/// Removes operations that do nothing or undo each other, keeping every type: reshape to the
/// same shape, reshape of reshape, cast to the same dtype, transpose of transpose (and identity
/// transposes; a transpose that moves only axes of extent 1 becomes a reshape), x + 0, 0 + x, x -
/// 0, x * 1, 1 * x, x / 1 (constants holding 0 or 1 everywhere, when the result has x's type). Opt
/// level 2.
KILN_API Pass SimplifyExpr();

/// Evaluates op calls whose arguments are all constants through the op's CPU kernel
/// (attribute FKernel), and fields of literal tuples. Calls of ops without a kernel, and
/// results over 64 MiB, stay as they are. Opt level 2.
KILN_API Pass FoldConstant();

/// Rewrites float32 inference batch_norms with constant parameters: folded into the weight and
/// bias of a preceding conv2d / dense (with a constant weight, read by nothing else), or else
/// into `add(multiply(x, scale), shift)` with per-channel constants. Opt level 1.
KILN_API Pass CanonicalizeBatchNorm();

/// Rewrites GELU spelled in five ops, x * (erf(x / sqrt(2)) + 1) * 0.5 (grouped and ordered in
/// any way, or with x * (1 / sqrt(2))), into one nn.gelu call. Opt level 2.
KILN_API Pass RecognizeGelu();

/// Rewrites x * sigmoid(x) (either order, x the same value) into one nn.silu call, and
/// x * hard_sigmoid(x) with alpha 1/6 and beta 1/2 (hard-swish as exported before ONNX opset 14)
/// into one nn.hardswish call. Opt level 2.
KILN_API Pass RecognizeSilu();

/// Rewrites multi-head attention as exporters spell it (q, k, v reshaped and transposed to split
/// their heads, q k^T scaled by a constant, an optional mask added, softmax over the keys, times
/// v, transposed and reshaped back) into one nn.attention call over q, k and v as they were,
/// when every shape and axis is exactly the multi-head layout (PyTorch's MultiheadAttention,
/// layout SBNH, or Hugging Face's BERT, BSNH), the tensors are float32 and nothing else reads
/// the chain's intermediates. Opt level 2.
KILN_API Pass RecognizeAttention();

/// The external compiler name of the functions OutlineControlFlow makes; kiln::Build compiles
/// them itself (docs/design.md §32).
constexpr const char* kControlFlowCompiler = "control_flow";

/// Replaces each If and Loop that @main computes with a call of a closed function tagged
/// Compiler="control_flow" (and a global_symbol, kiln_if_N or kiln_loop_N) that holds it: the
/// call's arguments are the node's operands, then every value its bodies read from @main,
/// which the bodies then read as the function's parameters. Passes that regroup @main's
/// dataflow see those reads as uses. A branch or loop whose outputs' extents only the run
/// decides returns them (codegen::kReturnsOutputsAttr). Required; in the default pipeline after
/// FoldConstant, which folds an If on a constant condition.
KILN_API Pass OutlineControlFlow();

/// Replaces a Loop whose trip count is a constant of at most
/// `transform.unroll_loops.max_trip_count` (default 8), whose condition is constant true and
/// whose body passes its condition through (or returns constant true), with its body repeated:
/// each iteration's carried values feed the next, and each scan output is the concatenation of
/// its rows. Not in the default pipeline. Opt level 2.
KILN_API Pass UnrollLoops();

/// Rewrites float32 nn.conv2d calls into the channel-blocked layout NCHW16c
/// (kiln/ir/channel_blocks.h, docs/design.md §48): nn.conv2d_nchwc between block_channels and
/// unblock_channels, with the elementwise ops, per-channel constants and channel concatenations
/// between two convolutions taking the blocked values, so that a chain of them never changes
/// layout. A convolution with fewer than 16 input channels keeps NCHW unless it is depthwise.
/// `transform.block_channels` (int): -1 (default) where the CPU has AVX-512, 0 never, 1 always.
/// Opt level 2.
KILN_API Pass BlockChannels();

/// Groups the op calls of each function into primitive functions (attribute Primitive=1) by
/// their pattern kinds: injective chains, producers of reductions, and elementwise epilogues
/// of conv2d / dense / reductions (fuse_ops.cc has the rules). Every op call ends up in one;
/// parameters of a primitive function are its inputs from outside the group, constants
/// included. Opt level 1.
KILN_API Pass FuseOps();

}  // namespace transform
}  // namespace kiln

#endif  // KILN_TRANSFORM_PASSES_H_
