/// The graph executor: a module that runs a static list of calls to functions of another module
/// (its "lib") over buffers planned ahead of time.
///
/// The graph is JSON (format version 2; version 1, which had no "in_place", is read too):
///
///   {
///     "version": 2,
///     "device": "cpu:0",
///     "storages": [{"bytes": 96}, {"bytes": 96}],
///     "entries": [
///       {"storage": 0, "offset": 0, "shape": [2, 3], "dtype": "float32"},
///       {"storage": 1, "offset": 0, "shape": [2, 3], "dtype": "float32"}, ...
///     ],
///     "inputs": [{"name": "x", "entry": 0}, {"name": "y", "entry": 1}],
///     "nodes": [{"name": "add0", "func": "add", "inputs": [0, 1], "outputs": [2]}, ...],
///     "outputs": [4]
///   }
///
/// Every field is required except "device", "storages", "checks" and "size_definitions"; unknown
/// fields are errors (a misspelling is not silently ignored), ids are 0-based indices into the
/// lists above them.
/// - "version": a runtime refuses versions it does not know.
/// - "device": optional, "<kind>:<id>" ("cpu:0", "cuda:1"); where the storages live. The device
///   given to GraphExecutorCreate replaces it; SaveToBytes writes it; a loaded graph without
///   one runs on cpu:0.
/// - "storages": the planned buffers, allocated (runtime::Empty) for each execution context
///   (see Concurrency below). Their sum is one run's activation memory. A graph without
///   "storages" is planned at run time (see Symbolic shapes below); its entries then have no
///   "storage" or "offset".
/// - "entries": the tensors of the graph, each a compact row-major view of `shape` and `dtype`
///   ("float32", "int64", "bool", "float16x4", ...) at byte `offset` of a storage; the offset is
///   a multiple of the element size. Entries may share bytes of a storage only when their
///   lifetimes do not overlap (checked on create, see below).
/// - "inputs": named entries the caller fills with set_input; an input's shape and dtype are its
///   entry's. No node writes an input, and an input's bytes are never reused, so `run` can be
///   repeated without setting the inputs again.
/// - "nodes": run in order; node i calls `func(inputs..., outputs...)` with one DLTensor* per
///   entry (borrowed, valid during the call; the data is at `data + byte_offset`, as DLPack
///   says). `func` is looked up in the lib and its imports. Each entry is written by at most
///   one node, before any node reads it. A node's optional "in_place", [{"output": 0,
///   "input": 1}], positions in its lists, says that its function reads that input before it
///   writes that output, so the output may be placed in exactly the input's bytes when the
///   input dies at the node (a kernel program's merged residual, docs/design.md §41): of the
///   same shape and dtype, passed once, one input per output, not an output the node returns.
/// - "outputs": the entries get_output returns, by index.
///
/// Symbolic shapes (docs/design.md §20). An extent may be the text of a size expression
/// ("batch", "seq * 64", "floordiv(seq + 1, 2)") in a graph planned at run time. Each variable
/// must be the whole extent of some input axis: a call reads its value there (the first such
/// axis) and checks every other input extent against it (kiln/runtime/shape_signature.h), so a
/// shape that breaks the signature is a ValueError naming the input, the axis and the size.
/// The values of the variables are the call's signature. "checks" (optional) lists size
/// constraints the compiler could not decide, {"lhs": "n", "relation": "==" or ">=", "rhs": "m",
/// "message": "..."}: each new signature is checked before it is planned, and a failing one is
/// a ValueError with the message and both values. The first call with a signature
/// evaluates every entry's shape and plans their storages (kiln/runtime/memory_plan.h); the
/// executor keeps the plans of the last 8 signatures. A context's storages only grow, so a
/// shape seen before, or any plan that fits, allocates nothing.
///
/// Sizes that tensor values decide (docs/design.md §22). "size_definitions" (optional, only in a
/// graph planned at run time) lists {"entry": 7, "sizes": ["n0", "n1"]}: once the node writing
/// entry 7 (int64, one element per size) has run, or before the first node when it is an input,
/// its elements are the values of the new sizes `n0` and `n1`, which later entries' shapes and
/// checks may use. Such entries are allocated when their sizes are read, outside the plan, and
/// released when the run ends (an output is handed to the caller). A negative size is a
/// ValueError naming it; a shape too large to allocate is an OverflowError or MemoryError.
///
/// Lifetimes: an input lives for the whole run, a node's output from the node that writes it
/// to the last node that reads it (to the end of the run when it is a graph output). Two
/// entries whose bytes overlap must not be live at the same node, so a node never writes its
/// outputs over its own inputs, but for an "in_place" pair at exactly the same bytes when the
/// input's last reader is that node. The planner places such pairs so whenever it can.
///
/// The module's functions (GetFunction), all names and errors as below:
///   invoke(inputs: [Tensor], outputs: [Tensor|None] or None) -> [Tensor]
///                                               one whole run, safe to call from many threads
///                                               at once: every input by position (shape and
///                                               dtype must match; compact tensors on the
///                                               executor's device are read in place, others
///                                               are copied, strided ones included); each
///                                               output written into the caller's tensor when
///                                               one is given, else into a new tensor; returns
///                                               the outputs, which no later run touches
///   set_input(name_or_index, Tensor)            copies into the input's planned buffer; shape
///                                               and dtype must match, the device may differ,
///                                               strides are allowed
///   set_input_zero_copy(name_or_index, Tensor)  the nodes read the caller's tensor itself
///                                               (same shape, dtype and device, compact); the
///                                               executor holds a reference to it until the
///                                               next set_input* of that input
///   run()                                       runs every node once; a ValueError names every
///                                               input not set
///   get_output(index) -> Tensor                 a view of the planned buffer (no copy): its
///                                               contents are valid until the next run; it
///                                               keeps the buffer's memory alive
///   get_num_inputs() / get_num_outputs() -> int
///   get_input_index(name) -> int                -1 when there is no such input
///   get_input_info() -> Map                     {"names": [str], "shapes": [Shape],
///                                                "symbolic_shapes": [str], "dtypes":
///                                                [DataType]}; a symbolic extent is -1 in
///                                                "shapes", "(batch, 3)" in "symbolic_shapes"
///   get_output_info() -> Map                    {"shapes", "symbolic_shapes", "dtypes"}
///   memory_plan() -> Map                        {"total_bytes": int, "storage_bytes": [int],
///                                                "bytes_without_sharing": int,
///                                                "planned_at_run_time": bool,
///                                                "size_variables": [str], "plans_made": int,
///                                                "planning_seconds": float};
///                                                total_bytes is per context: the largest plan
///                                                a context has used
///   set_limits(max_concurrent_runs, memory_limit)
///                                               caps on invoke's contexts (0: none), below
///   get_limits() -> Map                         {"contexts", "idle", "max_concurrent_runs",
///                                                "memory_limit", "bytes_per_context"}
///   set_upper_bounds(Map[str, int])             upper bounds of size variables: a call over
///                                               one is a ValueError; with every variable
///                                               bounded, the graph is planned once at the
///                                               bounds and every smaller shape reuses those
///                                               storages (one allocation per context)
///
/// Concurrency. The graph, the node functions and the lib are shared by every run; buffers are
/// not. Each invoke takes an execution context (the planned storages and argument lists) from a
/// pool, which makes a new one when none is idle: concurrent invokes never share activation
/// memory, and a context is allocated only when a run first needs it. With max_concurrent_runs
/// set, a run waits for a context rather than make one more; with memory_limit set (bytes of
/// activation memory over all contexts), a run that would need a context past the limit waits
/// for one, and when even one context exceeds it, invoke fails with a MemoryError giving both
/// figures before anything is allocated. The stateful functions (set_input, run, get_output)
/// work on one context of their own, outside the pool, and are serialized: they serve one
/// caller at a time (two threads interleaving set_input and run see each other's inputs).
/// Whether concurrent runs execute in parallel is up to the lib's functions: Kiln's kernel
/// programs do; a JSON graph runtime (dnnl, blas) runs one call at a time
/// (kiln/runtime/json_runtime.h). Parallel regions of concurrent runs share the one thread
/// pool: a run that finds it busy runs its region on its own thread (thread_pool.h).
///
/// Serialization: SaveToBytes is the graph JSON with "device" set; the lib is the executor's
/// import, so export_library stores it alongside. The loader
/// "runtime.module.load_bytes.graph_executor" parses and checks the graph; contexts allocate
/// their storages on their first run; node functions are
/// looked up in the executor's imports when "run" is first requested (imports are attached
/// after every module of an artifact has loaded).
#ifndef KILN_RUNTIME_GRAPH_EXECUTOR_H_
#define KILN_RUNTIME_GRAPH_EXECUTOR_H_

#include <kiln/runtime/module.h>

#include <string>

namespace kiln {
namespace runtime {

/// The module kind, and the suffix of its loader's name.
constexpr const char* kGraphExecutorKind = "graph_executor";
/// The graph JSON format version this runtime reads and writes.
constexpr int64_t kGraphFormatVersion = 2;

/// A graph executor over `graph_json` whose nodes call functions of `lib` (which becomes the
/// executor's import), with its storages allocated on `device`. Validates the whole graph: a
/// ValueError names the field, entry or node at fault; a node calling a function that `lib`
/// neither has nor lists is an error naming the function and listing those `lib` has. Also
/// registered as the global "runtime.GraphExecutorCreate(json, lib, device)".
KILN_API Module GraphExecutorCreate(const std::string& graph_json, const Module& lib,
                                    DLDevice device);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_GRAPH_EXECUTOR_H_
