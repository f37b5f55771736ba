// The runtime side's plan of one region: every value of the JSON graph as a oneDNN memory, and
// the primitives that compute the heads, built once at Init (dnnl_runtime.cc) by one builder
// per op (dnnl_primitives.cc). Run then only rebinds the caller's buffers and executes.
#ifndef KILN_PLUGINS_DNNL_DNNL_PLAN_H_
#define KILN_PLUGINS_DNNL_DNNL_PLAN_H_

#include <kiln/ffi/tensor.h>
#include <kiln/runtime/json_runtime.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kiln {
namespace dnnl_plugin {

/// One value as oneDNN holds it. A value whose bytes are a caller's buffer (a region input, or
/// a head written in place) has no data until Run binds it.
struct Value {
  dnnl::memory memory;
  int input = -1;   ///< the region input whose buffer this is, or -1
  int output = -1;  ///< the head whose buffer this is, or -1
  bool constant = false;
  /// Memory the plan allocated for an op's output, seen by no other value: a later op may
  /// write over it once nothing reads it any more.
  bool scratch = false;
};

/// One primitive execution of Run, with its arguments.
struct Step {
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
};

/// The attributes of every primitive of a plan: the plan hands each its scratchpad, one buffer
/// shared by all (a plan runs one call at a time), allocated when the plan is built. oneDNN's
/// own ("library") scratchpad would be shared between threads and require each primitive to
/// run on the thread that created it, which a module called from several threads cannot
/// promise.
inline dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// The memory of a region's row-major tensor of `shape` (a scalar as one element).
dnnl::memory::desc PlainDesc(const std::vector<int64_t>& shape);

/// A module's constants in the layouts its primitives chose, reordered once and shared by all
/// of the module's plans (one per concurrent call), so that a second plan costs its
/// intermediates only, not another copy of the weights.
class ConstantLayouts {
 public:
  /// `constant` in layout `desc`: reordered on `stream` the first time it is asked for.
  dnnl::memory Get(const dnnl::memory& constant, const dnnl::memory::desc& desc,
                   const dnnl::engine& engine, dnnl::stream& stream);

 private:
  struct Entry {
    const void* bytes;  ///< the constant's own
    dnnl::memory::desc desc;
    dnnl::memory reordered;
  };
  std::mutex mutex_;
  std::vector<Entry> entries_;  ///< a few per constant at most: searched in order
};

/// Builds the plan of `graph` on `engine`, and runs it on a stream of its own, one call at a
/// time. Layouts are chosen by the primitives (blocked inside the region); constants are
/// reordered into them once per module (`layouts`); anything else read in another layout gets
/// a reorder step. Intermediate memory is allocated here, once, and a buffer is shared by
/// values whose lifetimes do not overlap.
class Plan {
 public:
  Plan(const runtime::JsonGraph& graph, const Array<Tensor>& constants, dnnl::engine engine,
       std::shared_ptr<ConstantLayouts> layouts);

  const runtime::JsonGraph& graph() const { return graph_; }
  const dnnl::engine& engine() const { return engine_; }

  /// The value of `entry`.
  const Value& Get(runtime::JsonEntry entry) const;
  /// `value` in layout `desc`: itself, or a copy reordered now (a constant) or at each run.
  Value Reordered(const Value& value, const dnnl::memory::desc& desc);
  /// The bytes of `value`, row-major (reordered first when it is not), described by `desc`: a
  /// plain layout within them (a reshape, an added dimension of 1, transposed strides, a slice
  /// at an offset).
  Value View(const Value& value, const dnnl::memory::desc& desc);
  /// Memory in layout `desc` for the value of `entry` (an op's output), which the caller's
  /// buffer is when `entry` is a head and `desc` is row-major.
  dnnl::memory Define(runtime::JsonEntry entry, const dnnl::memory::desc& desc);
  /// The scratch memory of `from`, handed over to `to` (an op's output in layout `desc`) to be
  /// written in place, when `reader` is the last op to read `from`, neither is a head and
  /// `from` is in layout `desc`; else nullopt. (oneDNN's sum post-op then adds to a residual
  /// where it lies; eltwise and binary primitives run in place.)
  std::optional<dnnl::memory> TakeOver(runtime::JsonEntry from, runtime::JsonEntry to,
                                       uint32_t reader, const dnnl::memory::desc& desc);
  /// Makes `value` the value of `entry` too (a reshape: the same bytes, another shape).
  void Alias(runtime::JsonEntry entry, const Value& value);
  /// Appends a step to run.
  void AddStep(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args);
  /// Appends a step that copies `from` into `to` in `to`'s layout.
  void AddCopy(dnnl::memory from, dnnl::memory to);

  /// Builds the heads that no op wrote in place (a reorder step into the caller's buffer), then
  /// gives every step that needs one the shared scratchpad.
  void Finish();

  /// Runs every step on the plan's stream, after the caller bound its buffers.
  void Execute();
  /// The memories to point at input (output) i's buffer before each run.
  const std::vector<std::vector<dnnl::memory>>& input_bindings() const { return input_bindings_; }
  const std::vector<std::vector<dnnl::memory>>& output_bindings() const { return output_bindings_; }

 private:
  const runtime::JsonGraph& graph_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::shared_ptr<ConstantLayouts> layouts_;
  std::vector<std::vector<Value>> values_;  ///< per node, per output
  /// Per node, per output: the last op node that reads it; kNever for a head.
  std::vector<std::vector<uint32_t>> last_reader_;
  /// Memory in layout `desc` for an output of op node `node`: a buffer that no value read from
  /// `node` on needs any more, or a new one.
  dnnl::memory Allocate(const dnnl::memory::desc& desc, uint32_t node);
  /// Whether entry (node, index) is a head.
  bool IsHead(runtime::JsonEntry entry) const;
  std::vector<Step> steps_;
  dnnl::memory scratchpad_;  ///< owns the buffer the steps' scratchpads share
  std::vector<std::vector<dnnl::memory>> input_bindings_;
  std::vector<std::vector<dnnl::memory>> output_bindings_;
};

/// Adds the steps of op node `index` of `plan`'s graph; NotImplementedError naming the op for
/// one the plugin does not run (the compiler side never hands it one).
void BuildNode(Plan& plan, uint32_t index);

}  // namespace dnnl_plugin
}  // namespace kiln

#endif  // KILN_PLUGINS_DNNL_DNNL_PLAN_H_
