// The "control_flow" module: runs the If and Loop nodes of a graph, each body a compiled
// Executable among the module's imports (docs/design.md §32).
//
// Description (its SaveToBytes, "control_flow/1"):
//   {"version": 1, "functions": [
//      {"name": "kiln_if_0", "kind": "if", "bodies": [0, 1]},
//      {"name": "kiln_loop_1", "kind": "loop", "bodies": [2], "carried": 1, "scans": 1}]}
// `bodies` index the module's imports, graph executors whose inputs are, for a branch, the
// values it captures and, for a loop body, (iteration, condition, carried..., captures...).
// A function's arguments follow the graph's calling convention, inputs then outputs:
//   If:   (cond, captures..., outputs...)
//   Loop: (trip_count, condition, initial..., captures..., carried outputs..., scan outputs...)
#include <kiln/ffi/registry.h>
#include <kiln/runtime/executable.h>
#include <kiln/runtime/memory.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tensor_util_internal.h"

namespace kiln {
namespace runtime {
namespace {

using Json = nlohmann::json;

constexpr const char* kControlFlowKind = "control_flow";
constexpr DLDataType kInt64{kDLInt, 64, 1};
constexpr DLDataType kBool{kDLUInt, 1, 1};

/// Loops stop with an error past this many iterations unless KILN_LOOP_MAX_ITERATIONS says
/// otherwise: ONNX's Loop may have no trip count, and a condition that never turns false should
/// be an error, not a hang.
constexpr int64_t kDefaultMaxIterations = 1000000;

int64_t MaxIterations() {
  const char* text = std::getenv("KILN_LOOP_MAX_ITERATIONS");
  if (text == nullptr || *text == '\0') return kDefaultMaxIterations;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  KILN_CHECK(*end == '\0' && value > 0, ValueError)
      << "KILN_LOOP_MAX_ITERATIONS must be a positive integer, got '" << text << "'";
  return value;
}

struct ControlFlowFunction {
  std::string name;
  bool is_loop = false;
  std::vector<size_t> bodies;    ///< indices into the module's imports
  size_t carried = 0;            ///< a loop's carried values
  size_t scans = 0;              ///< a loop's scan outputs
  bool returns_scans = false;    ///< allocated and returned, not written into given outputs
  bool returns_carried = false;  ///< the carried values too (their extents change), first
  bool returns = false;          ///< an If's outputs: the branch's, returned
};

/// The element at the start of a host tensor of one element, as an int64.
int64_t ScalarOf(const Tensor& tensor, const char* what) {
  KILN_CHECK(tensor.NumElements() == 1 && tensor.device().device_type == kDLCPU, ValueError)
      << what << " must be one element in host memory, got " << tensor.NumElements() << " elements";
  const DLTensor& t = tensor.dl_tensor();
  const char* data = static_cast<const char*>(t.data) + t.byte_offset;
  if (t.dtype.code == kDLInt && t.dtype.bits == 64) {
    int64_t value = 0;
    std::memcpy(&value, data, sizeof(value));
    return value;
  }
  return *reinterpret_cast<const uint8_t*>(data);  // bool
}

/// Writes `value` into a host tensor of one int64 or bool element.
void WriteScalar(const Tensor& tensor, int64_t value) {
  char* data = static_cast<char*>(tensor.data());
  if (tensor.dtype().bits == 64) {
    std::memcpy(data, &value, sizeof(value));
  } else {
    *reinterpret_cast<uint8_t*>(data) = value != 0 ? 1 : 0;
  }
}

Tensor HostScalar(DLDataType dtype) { return Empty({}, dtype, DLDevice{kDLCPU, 0}); }

/// Row `row` of `stacked` (whose rows each hold one scanned value of scan output `scan`), as a
/// tensor of its own that shares the memory.
Tensor RowOf(const Tensor& stacked, int64_t row, size_t scan) {
  const Shape stacked_shape = stacked.shape();
  const std::vector<int64_t> shape(stacked_shape.begin(), stacked_shape.end());
  KILN_CHECK(!shape.empty() && row < shape[0], ValueError)
      << "scan output " << scan << " holds " << (shape.empty() ? 0 : shape[0])
      << " iterations, but the loop ran more";
  const std::vector<int64_t> row_shape(shape.begin() + 1, shape.end());
  const auto row_bytes = static_cast<uint64_t>(stacked.NumBytes() / shape[0]);
  const DLTensor& out = stacked.dl_tensor();
  return Tensor::FromMemory(
      out.data, row_shape, out.dtype, out.device, [stacked] {}, {},
      out.byte_offset + static_cast<uint64_t>(row) * row_bytes);
}

/// `source` copied into row `row` of `stacked`.
void CopyRow(const Tensor& source, const Tensor& stacked, int64_t row, size_t scan) {
  const Tensor view = RowOf(stacked, row, scan);
  const Shape source_shape = source.shape();
  const Shape row_shape = view.shape();
  KILN_CHECK(
      std::equal(source_shape.begin(), source_shape.end(), row_shape.begin(), row_shape.end()),
      ValueError)
      << "scanned value " << scan << " of iteration " << row << " has a shape other than the "
      << "scan output's rows";
  CopyTensor(source, view);
}

class ControlFlowModuleObj : public ModuleObj {
 public:
  explicit ControlFlowModuleObj(std::string description) : description_(std::move(description)) {
    const Json json = Json::parse(description_);
    KILN_CHECK(json.value("version", 0) == 1, ValueError)
        << "a control_flow module of version " << json.value("version", 0)
        << ", this Kiln reads version 1";
    for (const Json& entry : json.at("functions")) {
      ControlFlowFunction function;
      function.name = entry.at("name").get<std::string>();
      function.is_loop = entry.at("kind").get<std::string>() == "loop";
      function.bodies = entry.at("bodies").get<std::vector<size_t>>();
      function.carried = entry.value("carried", 0);
      function.scans = entry.value("scans", 0);
      function.returns_scans = entry.value("returns_scans", false);
      function.returns_carried = entry.value("returns_carried", false);
      KILN_CHECK(!function.returns_carried || function.returns_scans, ValueError)
          << "control_flow function '" << function.name << "' returns its carried values but "
          << "not its scan outputs, which follow them";
      function.returns = entry.value("returns", false);
      KILN_CHECK(function.bodies.size() == (function.is_loop ? 1U : 2U), ValueError)
          << "control_flow function '" << function.name << "' has " << function.bodies.size()
          << " bodies";
      functions_.push_back(std::move(function));
    }
  }

  std::string kind() const override { return kControlFlowKind; }

  std::optional<Function> GetFunction(const std::string& name) override {
    for (const ControlFlowFunction& function : functions_) {
      if (function.name != name) continue;
      std::vector<Executable> bodies;
      for (size_t index : function.bodies) bodies.push_back(Body(index, name));
      return Function::FromPacked(
          [function, bodies](const AnyView* args, int32_t num_args, Any* result) {
            std::vector<Tensor> tensors;
            tensors.reserve(static_cast<size_t>(num_args));
            for (int32_t i = 0; i < num_args; ++i) {
              tensors.push_back(internal::ViewOf(*args[i].cast<DLTensor*>()));
            }
            if (function.is_loop) {
              std::vector<Tensor> returned = RunLoop(function, bodies[0], tensors);
              if (function.returns_scans) *result = Array<Tensor>(returned.begin(), returned.end());
            } else if (function.returns) {
              std::vector<Tensor> returned = RunIf(bodies, tensors, true);
              *result = Array<Tensor>(returned.begin(), returned.end());
            } else {
              RunIf(bodies, tensors, false);
            }
          });
    }
    return std::nullopt;
  }

  std::vector<std::string> ListFunctions() const override {
    std::vector<std::string> names;
    for (const ControlFlowFunction& function : functions_) names.push_back(function.name);
    return names;
  }

  std::optional<Bytes> SaveToBytes() const override {
    return Bytes(description_.data(), description_.size());
  }

 private:
  Executable Body(size_t index, const std::string& name) const {
    const std::vector<Module> imports =
        Module(ObjectPtr<ModuleObj>::FromBorrowed(const_cast<ControlFlowModuleObj*>(this)))
            .imports();
    KILN_CHECK(index < imports.size(), ValueError)
        << "control_flow function '" << name << "' runs body " << index << ", but the module "
        << "imports " << imports.size() << " modules";
    return Executable(imports[index]);
  }

  /// The branch the condition picks: its values written into the node's outputs, or, when
  /// `returns` (their extents depend on the branch), returned.
  static std::vector<Tensor> RunIf(const std::vector<Executable>& branches,
                                   const std::vector<Tensor>& args, bool returns) {
    const Executable& branch = branches[ScalarOf(args[0], "the condition of an If") ? 0 : 1];
    const size_t num_inputs = static_cast<size_t>(branch.num_inputs());
    const size_t num_outputs = returns ? 0 : static_cast<size_t>(branch.num_outputs());
    KILN_CHECK(args.size() == 1 + num_inputs + num_outputs, ValueError)
        << "an If node passes " << args.size() << " tensors, its branch needs 1 + " << num_inputs
        << " inputs + " << num_outputs << " outputs";
    const std::vector<Tensor> inputs(args.begin() + 1, args.begin() + 1 + num_inputs);
    if (returns) return branch.invoke(inputs);
    branch.invoke(inputs, std::vector<Tensor>(args.begin() + 1 + num_inputs, args.end()));
    return {};
  }

  /// Runs the loop; returns the outputs the function returns (its scan outputs, and its carried
  /// values before them when their extents change).
  static std::vector<Tensor> RunLoop(const ControlFlowFunction& loop, const Executable& body,
                                     const std::vector<Tensor>& args) {
    const size_t given =
        (loop.returns_carried ? 0 : loop.carried) + (loop.returns_scans ? 0 : loop.scans);
    KILN_CHECK(args.size() >= 2 + loop.carried + given, ValueError)
        << "a Loop node passes " << args.size() << " tensors";
    const int64_t trip_count = ScalarOf(args[0], "the trip count of a Loop");
    bool condition = ScalarOf(args[1], "the condition of a Loop") != 0;
    std::vector<Tensor> carried(args.begin() + 2, args.begin() + 2 + loop.carried);
    const std::vector<Tensor> captures(args.begin() + 2 + loop.carried, args.end() - given);
    const std::vector<Tensor> outputs(args.end() - given, args.end());
    std::vector<std::vector<Tensor>> rows(loop.returns_scans ? loop.scans : 0);
    // What the body reads and writes besides its captures, allocated once rather than per
    // iteration: the iteration and the condition; from the second iteration on, carried values
    // whose shapes stay go to the buffers of the iteration before last (two sets used in turn),
    // and scanned values straight into their rows of the planned outputs, copying no row.
    const Tensor iteration_in = HostScalar(kInt64);
    const Tensor condition_in = HostScalar(kBool);
    const Tensor condition_out = HostScalar(kBool);
    std::vector<Tensor> previous_carried;
    const bool reuses_carried = !loop.returns_carried;
    const int64_t limit = MaxIterations();
    int64_t iteration = 0;
    for (; iteration < trip_count && condition; ++iteration) {
      KILN_CHECK(iteration < limit, RuntimeError)
          << "a Loop ran " << limit << " iterations without stopping (trip count " << trip_count
          << "); raise KILN_LOOP_MAX_ITERATIONS if it should run longer";
      WriteScalar(iteration_in, iteration);
      WriteScalar(condition_in, condition ? 1 : 0);
      std::vector<Tensor> inputs{iteration_in, condition_in};
      inputs.insert(inputs.end(), carried.begin(), carried.end());
      inputs.insert(inputs.end(), captures.begin(), captures.end());
      std::vector<Tensor> into(1 + loop.carried + loop.scans);
      into[0] = condition_out;
      if (reuses_carried && iteration >= 2) {
        std::copy(previous_carried.begin(), previous_carried.end(), into.begin() + 1);
      }
      for (size_t s = 0; s < loop.scans && !loop.returns_scans; ++s) {
        into[1 + loop.carried + s] = RowOf(outputs[loop.carried + s], iteration, s);
      }
      std::vector<Tensor> results;
      try {
        results = body.invoke(inputs, into);
      } catch (const Error& error) {
        throw error.WithContext("in iteration " + std::to_string(iteration) + " of a Loop");
      }
      condition = ScalarOf(results[0], "the condition a Loop body returns") != 0;
      // The carried values this iteration read: the initial ones first, which the graph owns.
      if (iteration >= 1) previous_carried = carried;
      for (size_t i = 0; i < loop.carried; ++i) {
        if (!loop.returns_carried) CheckCarriedShape(carried[i], results[1 + i], i, iteration);
        carried[i] = results[1 + i];
      }
      for (size_t s = 0; s < loop.scans && loop.returns_scans; ++s) {
        rows[s].push_back(results[1 + loop.carried + s]);
      }
    }
    if (loop.returns_carried) {
      // A value no iteration replaced is the node's input, whose memory the graph may reuse.
      std::vector<Tensor> returned;
      for (size_t i = 0; i < loop.carried; ++i) {
        if (iteration > 0) {
          returned.push_back(carried[i]);
          continue;
        }
        const Shape shape = carried[i].shape();
        returned.push_back(Empty(std::vector<int64_t>(shape.begin(), shape.end()),
                                 carried[i].dtype(), DLDevice{kDLCPU, 0}));
        CopyTensor(carried[i], returned.back());
      }
      for (Tensor& stacked : StackRows(loop, body, rows, iteration)) returned.push_back(stacked);
      return returned;
    }
    for (size_t i = 0; i < loop.carried; ++i) CopyTensor(carried[i], outputs[i]);
    if (loop.returns_scans) return StackRows(loop, body, rows, iteration);
    for (size_t s = 0; s < loop.scans; ++s) {
      const int64_t planned = outputs[loop.carried + s].shape()[0];
      KILN_CHECK(planned == iteration, ValueError)
          << "scan output " << s << " of a Loop holds " << planned << " iterations, but the loop "
          << "ran " << iteration;
    }
    return {};
  }

  /// A carried value keeps its shape: the body was compiled for the one it entered with.
  static void CheckCarriedShape(const Tensor& entered, const Tensor& returned, size_t index,
                                int64_t iteration) {
    const Shape before = entered.shape();
    const Shape after = returned.shape();
    KILN_CHECK(std::equal(before.begin(), before.end(), after.begin(), after.end()), ValueError)
        << "carried value " << index << " of a Loop entered iteration " << iteration
        << " with shape " << before << " and the body returned " << after
        << "; Kiln runs loops whose carried values keep their shape";
  }

  /// Each scan output: its rows stacked along a new leading axis. With no iteration, its rows
  /// are shaped as the body's output info says (a symbolic extent as 0: there are no rows).
  static std::vector<Tensor> StackRows(const ControlFlowFunction& loop, const Executable& body,
                                       const std::vector<std::vector<Tensor>>& rows,
                                       int64_t iterations) {
    const Map<String, Any> info = body.output_info();
    std::vector<Tensor> stacked;
    for (size_t s = 0; s < loop.scans; ++s) {
      std::vector<int64_t> shape{iterations};
      DLDataType dtype{};
      if (iterations > 0) {
        const Shape row = rows[s][0].shape();
        shape.insert(shape.end(), row.begin(), row.end());
        dtype = rows[s][0].dtype();
      } else {
        const auto output = static_cast<int64_t>(1 + loop.carried + s);
        for (int64_t extent : info.at("shapes").cast<Array<Shape>>()[output]) {
          shape.push_back(std::max<int64_t>(extent, 0));  // -1: symbolic
        }
        dtype = info.at("dtypes").cast<Array<DLDataType>>()[output];
      }
      const Tensor out = Empty(shape, dtype, DLDevice{kDLCPU, 0});
      for (int64_t i = 0; i < iterations; ++i) CopyRow(rows[s][static_cast<size_t>(i)], out, i, s);
      stacked.push_back(out);
    }
    return stacked;
  }

  std::string description_;
  std::vector<ControlFlowFunction> functions_;
};

Module CreateControlFlowModule(const std::string& description) {
  try {
    return Module(make_object<ControlFlowModuleObj>(description));
  } catch (const Json::exception& error) {
    KILN_THROW(ValueError) << "a control_flow module's description is malformed: " << error.what();
  }
}

KILN_REGISTER_GLOBAL("runtime.ControlFlowModuleCreate").set_body_typed([](const String& json) {
  return CreateControlFlowModule(json.str());
});

KILN_REGISTER_GLOBAL("runtime.module.load_bytes.control_flow")
    .set_body_typed([](const Bytes& bytes) {
      return CreateControlFlowModule(std::string(bytes.view()));
    });

}  // namespace
}  // namespace runtime
}  // namespace kiln
