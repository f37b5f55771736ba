/// kiln::Executable: a compiled model, ready to run. It wraps the graph executor module that
/// kiln::Build returns and kiln::Executable::Load reads back from an artifact, so code that
/// runs models needs only the runtime:
///
///   kiln::Executable model = kiln::Executable::Load("model.so");
///   model.set_input("input", image);          // a Tensor, copied into the planned buffer
///   model.run();
///   kiln::Tensor scores = model.get_output(0);  // a view, valid until the next run
///
///   std::vector<kiln::Tensor> outputs = model.invoke({image});  // or whole runs, from any thread
///
/// invoke runs concurrently from many threads on one Executable: weights and code are shared,
/// each run gets buffers of its own. set_input/run/get_output serve one caller at a time
/// (kiln/runtime/graph_executor.h, "Concurrency").
#ifndef KILN_RUNTIME_EXECUTABLE_H_
#define KILN_RUNTIME_EXECUTABLE_H_

#include <kiln/ffi/map.h>
#include <kiln/ffi/tensor.h>
#include <kiln/runtime/artifact.h>
#include <kiln/runtime/graph_executor.h>

#include <string>
#include <utility>
#include <vector>

namespace kiln {

class Executable {
 public:
  /// Wraps `module`, which must be a graph executor (ValueError otherwise).
  explicit Executable(runtime::Module module) : module_(std::move(module)) {
    KILN_CHECK(module_.defined() && module_->kind() == runtime::kGraphExecutorKind, ValueError)
        << "an Executable wraps a '" << runtime::kGraphExecutorKind << "' module, got "
        << (module_.defined() ? "'" + module_->kind() + "'" : std::string("none"));
    invoke_ = module_.GetFunctionRequired("invoke");
    set_input_ = module_.GetFunctionRequired("set_input");
    run_ = module_.GetFunctionRequired("run");
    get_output_ = module_.GetFunctionRequired("get_output");
  }

  /// Loads an artifact written by export_library (kiln/runtime/artifact.h).
  static Executable Load(const std::string& path) { return Executable(runtime::LoadModule(path)); }

  /// Runs the model once on `inputs` (every input, in order) and returns its outputs, new
  /// tensors that no later run touches. Thread-safe.
  std::vector<Tensor> invoke(const std::vector<Tensor>& inputs) const {
    return ToVector(invoke_(Array<Tensor>(inputs), nullptr).cast<Array<Tensor>>());
  }
  /// As above, writing output i into `outputs[i]` (same shape and dtype; any strides on the
  /// CPU), or into a new tensor where `outputs[i]` is undefined. Returns the outputs.
  std::vector<Tensor> invoke(const std::vector<Tensor>& inputs,
                             const std::vector<Tensor>& outputs) const {
    Array<Any> given;
    for (const Tensor& output : outputs) given.push_back(output.defined() ? Any(output) : Any());
    return ToVector(invoke_(Array<Tensor>(inputs), given).cast<Array<Tensor>>());
  }
  /// At most `max_concurrent_runs` invokes at once and `memory_limit` bytes of activation
  /// memory in all (0: no limit); see kiln/runtime/graph_executor.h.
  void set_limits(int64_t max_concurrent_runs, int64_t memory_limit) const {
    module_.GetFunctionRequired("set_limits")(max_concurrent_runs, memory_limit);
  }

  /// Upper bounds of the model's size variables ({"batch": 8}): see set_upper_bounds in
  /// kiln/runtime/graph_executor.h.
  void set_upper_bounds(const Map<String, int64_t>& bounds) const {
    module_.GetFunctionRequired("set_upper_bounds")(bounds);
  }

  /// Copies `value` into the input `name`; shape and dtype must match (errors name the input).
  void set_input(const std::string& name, const Tensor& value) const {
    set_input_(String(name), value);
  }
  void set_input(int64_t index, const Tensor& value) const { set_input_(index, value); }
  /// Runs the model once on the inputs last set.
  void run() const { run_(); }
  /// Output `index`, a view of the executor's buffer: valid until the next run.
  Tensor get_output(int64_t index) const { return get_output_(index).cast<Tensor>(); }

  int64_t num_inputs() const { return Call("get_num_inputs").cast<int64_t>(); }
  int64_t num_outputs() const { return Call("get_num_outputs").cast<int64_t>(); }
  /// {"names", "shapes", "dtypes"} of the inputs; {"shapes", "dtypes"} of the outputs.
  Map<String, Any> input_info() const { return Call("get_input_info").cast<Map<String, Any>>(); }
  Map<String, Any> output_info() const { return Call("get_output_info").cast<Map<String, Any>>(); }
  /// {"total_bytes", "storage_bytes", "bytes_without_sharing"}: the planned activation memory.
  Map<String, Any> memory_plan() const { return Call("memory_plan").cast<Map<String, Any>>(); }

  /// Runs the model `repeat` times on `inputs` after one untimed run and times every graph
  /// node: {"names", "funcs", "shapes", "seconds" (each node's median)} per node, "run_seconds"
  /// (the median run) and "repeat". runtime::FormatProfile (kiln/runtime/profile.h) prints it.
  /// Nodes on a device that runs asynchronously are timed as far as their launch.
  Map<String, Any> profile(const std::vector<Tensor>& inputs, int64_t repeat) const {
    return module_.GetFunctionRequired("profile")(Array<Tensor>(inputs), repeat)
        .cast<Map<String, Any>>();
  }

  /// Writes the model as one shared library; nothing is left at `path` on failure.
  void export_library(const std::string& path) const { runtime::ExportLibrary(module_, path); }

  const runtime::Module& module() const { return module_; }

 private:
  Any Call(const char* name) const { return module_.GetFunctionRequired(name)(); }
  static std::vector<Tensor> ToVector(const Array<Tensor>& tensors) {
    return std::vector<Tensor>(tensors.begin(), tensors.end());
  }

  runtime::Module module_;
  Function invoke_;
  Function set_input_;
  Function run_;
  Function get_output_;
};

}  // namespace kiln

#endif  // KILN_RUNTIME_EXECUTABLE_H_
