// The runtime side's plan of one region: every value of the JSON graph as a oneDNN memory, and
// the primitives that compute the heads, built once at Init (dnnl_runtime.cc) by one builder
// per op (dnnl_primitives.cc). Run then only rebinds the caller's buffers and executes.
#ifndef KILN_PLUGINS_DNNL_DNNL_PLAN_H_
#define KILN_PLUGINS_DNNL_DNNL_PLAN_H_

#include <kiln/ffi/tensor.h>
#include <kiln/runtime/json_runtime.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
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
};

/// One primitive execution of Run, with its arguments.
struct Step {
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
};

/// The memory of a region's row-major tensor of `shape` (a scalar as one element).
dnnl::memory::desc PlainDesc(const std::vector<int64_t>& shape);

/// Builds the plan of `graph` on `engine`. Layouts are chosen by the primitives (blocked
/// inside the region); constants are reordered into them here, once; anything else read in
/// another layout gets a reorder step. Intermediate memory is allocated here, once.
class Plan {
 public:
  Plan(const runtime::JsonGraph& graph, const Array<Tensor>& constants, dnnl::engine engine,
       dnnl::stream stream);

  const runtime::JsonGraph& graph() const { return graph_; }
  const dnnl::engine& engine() const { return engine_; }

  /// The value of `entry`.
  const Value& Get(runtime::JsonEntry entry) const;
  /// `value` in layout `desc`: itself, or a copy reordered now (a constant) or at each run.
  Value Reordered(const Value& value, const dnnl::memory::desc& desc);
  /// The bytes of `value`, row-major (reordered first when it is not), described by `desc`: a
  /// plain layout of as many elements (a reshape, an added dimension of 1, transposed strides).
  Value View(const Value& value, const dnnl::memory::desc& desc);
  /// Memory in layout `desc` for the value of `entry` (an op's output), which the caller's
  /// buffer is when `entry` is a head and `desc` is row-major.
  dnnl::memory Define(runtime::JsonEntry entry, const dnnl::memory::desc& desc);
  /// Appends a step to run.
  void AddStep(dnnl::primitive primitive, std::unordered_map<int, dnnl::memory> args);
  /// Appends a step that copies `from` into `to` in `to`'s layout.
  void AddCopy(dnnl::memory from, dnnl::memory to);

  /// Builds the heads that no op wrote in place: a reorder step into the caller's buffer.
  void Finish();

  const std::vector<Step>& steps() const { return steps_; }
  /// The memories to point at input (output) i's buffer before each run.
  const std::vector<std::vector<dnnl::memory>>& input_bindings() const { return input_bindings_; }
  const std::vector<std::vector<dnnl::memory>>& output_bindings() const {
    return output_bindings_;
  }

 private:
  const runtime::JsonGraph& graph_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::vector<std::vector<Value>> values_;  ///< per node, per output
  std::vector<Step> steps_;
  std::vector<std::vector<dnnl::memory>> input_bindings_;
  std::vector<std::vector<dnnl::memory>> output_bindings_;
};

/// Adds the steps of op node `index` of `plan`'s graph; NotImplementedError naming the op for
/// one the plugin does not run (the compiler side never hands it one).
void BuildNode(Plan& plan, uint32_t index);

}  // namespace dnnl_plugin
}  // namespace kiln

#endif  // KILN_PLUGINS_DNNL_DNNL_PLAN_H_
