// The kernel program module (kiln/runtime/kernel_program.h): parses and checks a description
// once, resolves every kernel once, merges epilogues (program_epilogues.cc) and prepacks
// constants, and runs a function as its list of kernel calls.
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/runtime/backend.h>
#include <kiln/runtime/byte_stream.h>
#include <kiln/runtime/kernel_program.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/module.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "../../runtime/tagged_attrs_internal.h"
#include "../../runtime/tensor_util_internal.h"
#include "kernel_program_internal.h"

namespace kiln {
namespace runtime {
namespace {

using Json = nlohmann::json;

constexpr const char* kPrefix = "kernel_program: ";
/// The first bytes of a saved program whose constants are aligned (SaveToBytes).
constexpr char kSavedMagic[8] = {'K', 'I', 'L', 'N', 'P', 'R', 'G', '2'};
/// Where a saved constant starts: a multiple of this from the start of the saved bytes, which an
/// artifact places at a multiple of it too (kArtifactBlobAlignment), so a constant read in place
/// is as aligned as the caching allocator's tensors.
constexpr size_t kConstantAlignment = 64;

/// Zero bytes that put what comes next at a multiple of kConstantAlignment.
size_t PaddingAt(size_t position) {
  return (kConstantAlignment - position % kConstantAlignment) % kConstantAlignment;
}

// ---------------------------------------------------------------------------------------------
// Reading the description
// ---------------------------------------------------------------------------------------------

/// An extent: an integer, or the text of a size expression ("batch", "floordiv(seq, 2)").
arith::SizeExpr ReadExtent(const Json& value) {
  if (value.is_string()) return ParseExtent(value.get<std::string>(), kPrefix);
  return arith::IntImm(value.get<int64_t>());
}

TensorSpec ReadSpec(const Json& value) {
  TensorSpec spec;
  for (const Json& extent : value.at("shape")) spec.shape.push_back(ReadExtent(extent));
  const auto dtype_name = value.at("dtype").get<std::string>();
  const std::optional<DLDataType> dtype = ParseDataType(dtype_name);
  KILN_CHECK(dtype.has_value(), ValueError) << kPrefix << "unknown dtype '" << dtype_name << "'";
  spec.dtype = *dtype;
  spec.is_static = IsStatic(spec.shape);
  if (!spec.is_static) return spec;
  spec.bytes = ElementBytes(spec.dtype);
  for (const arith::SizeExpr& expr : spec.shape) {
    const int64_t extent = *expr.as_int();
    spec.extents.push_back(extent);
    KILN_CHECK(extent >= 0 && !__builtin_mul_overflow(spec.bytes, extent, &spec.bytes), ValueError)
        << kPrefix << "a tensor of shape " << SymbolicShapeToString(spec.shape)
        << " is negative or too large";
  }
  return spec;
}

/// The size expressions of attribute value `value`: itself, or the items of an array.
SymbolicShape SizeExprsOf(const Any& value) {
  SymbolicShape exprs;
  if (std::optional<arith::SizeExpr> extent = value.as<arith::SizeExpr>()) return {*extent};
  if (std::optional<Array<Any>> items = value.as<Array<Any>>()) {
    for (const Any& item : *items) {
      if (std::optional<arith::SizeExpr> extent = item.as<arith::SizeExpr>()) {
        exprs.push_back(*extent);
      }
    }
  }
  return exprs;
}

/// `value` with its size expressions evaluated at `sizes`. A negative one is passed on: the op
/// decides (a reshape's target extent is checked by the output's shape; size_values writes it).
Any EvaluateAttr(const Any& value, const ShapeSignature& signature,
                 const std::vector<int64_t>& sizes, const std::string& what) {
  auto evaluate = [&](const arith::SizeExpr& extent) {
    return signature.Evaluate({extent}, sizes, what, /*extents=*/false)[0];
  };
  if (std::optional<arith::SizeExpr> extent = value.as<arith::SizeExpr>()) return evaluate(*extent);
  Array<Any> items;
  for (const Any& item : value.cast<Array<Any>>()) {
    std::optional<arith::SizeExpr> extent = item.as<arith::SizeExpr>();
    items.push_back(extent.has_value() ? Any(evaluate(*extent)) : item);
  }
  return items;
}

/// The signature of `func`'s arguments. A function with a symbolic temporary or attribute must
/// give the specs of its arguments, from which its sizes are read.
ShapeSignature ReadSignature(const ProgramFunction& func) {
  std::vector<SymbolicShape> shapes;
  std::vector<std::string> names;
  for (const auto& [specs, kind] :
       {std::pair(&func.input_specs, "input "), std::pair(&func.output_specs, "output ")}) {
    for (size_t i = 0; i < specs->size(); ++i) {
      shapes.push_back((*specs)[i].shape);
      names.push_back(kind + std::to_string(i));
    }
  }
  // The executor has checked the graph's input sizes; a size computed from values may be 0.
  ShapeSignature signature(std::move(shapes), std::move(names), /*min_size=*/0);
  const std::string where = std::string(kPrefix) + "function '" + func.name + "': ";
  for (size_t i = 0; i < func.temps.size(); ++i) {
    signature.CheckReadable(func.temps[i].shape, where + "temporary " + std::to_string(i));
  }
  for (const Step& step : func.steps) {
    for (const String& key : step.symbolic_attrs) {
      signature.CheckReadable(SizeExprsOf(step.attrs.at(key)),
                              where + "attribute '" + key.str() + "' of " + step.kernel);
    }
  }
  return signature;
}

TensorRef ReadRef(const Json& value, const ProgramFunction& func, size_t num_constants) {
  const auto text = value.get<std::string>();
  KILN_CHECK(text.size() >= 2 && std::string_view("iotc").find(text[0]) != std::string_view::npos,
             ValueError)
      << kPrefix << "'" << text << "' does not name a tensor (i<n>, o<n>, c<n> or t<n>)";
  size_t index = 0;
  const char* end = text.data() + text.size();
  const bool parsed = std::from_chars(text.data() + 1, end, index).ptr == end;
  const size_t count = text[0] == 'i'   ? func.num_inputs
                       : text[0] == 'o' ? func.num_outputs
                       : text[0] == 'c' ? num_constants
                                        : func.temps.size();
  KILN_CHECK(parsed && index < count, ValueError)
      << kPrefix << "function '" << func.name << "' refers to '" << text << "', but has only "
      << count << " of that kind";
  return TensorRef{text[0], index};
}

std::vector<TensorRef> ReadRefs(const Json& value, const ProgramFunction& func,
                                size_t num_constants) {
  std::vector<TensorRef> refs;
  for (const Json& item : value) refs.push_back(ReadRef(item, func, num_constants));
  return refs;
}

Step ReadStep(const Json& value, const ProgramFunction& func, size_t num_constants) {
  Step step;
  if (value.contains("copy")) {
    step.inputs = {ReadRef(value.at("copy"), func, num_constants)};
    step.outputs = {ReadRef(value.at("to"), func, num_constants)};
    return step;
  }
  step.kernel = value.at("kernel").get<std::string>();
  KILN_CHECK(!step.kernel.empty(), ValueError) << kPrefix << "a step names an empty kernel";
  step.attrs = tagged_attrs::DecodeAll(value.at("attrs"), kPrefix);
  for (const auto& [key, attr] : step.attrs) {
    if (!SizeExprsOf(attr).empty()) step.symbolic_attrs.push_back(key);
  }
  step.inputs = ReadRefs(value.at("inputs"), func, num_constants);
  step.outputs = ReadRefs(value.at("outputs"), func, num_constants);
  return step;
}

ProgramFunction ReadFunction(const Json& value, size_t num_constants) {
  ProgramFunction func;
  func.name = value.at("name").get<std::string>();
  func.num_inputs = value.at("num_inputs").get<size_t>();
  func.num_outputs = value.at("num_outputs").get<size_t>();
  for (const auto& [key, specs, count] :
       {std::tuple("inputs", &func.input_specs, func.num_inputs),
        std::tuple("outputs", &func.output_specs, func.num_outputs)}) {
    if (!value.contains(key)) continue;
    for (const Json& spec : value.at(key)) specs->push_back(ReadSpec(spec));
    KILN_CHECK(specs->size() == count, ValueError)
        << kPrefix << "function '" << func.name << "' lists " << specs->size() << " " << key
        << ", but takes " << count;
  }
  for (const Json& temp : value.at("temps")) func.temps.push_back(ReadSpec(temp));
  for (const Json& step : value.at("steps")) {
    func.steps.push_back(ReadStep(step, func, num_constants));
  }
  func.signature = ReadSignature(func);
  func.caller = std::string(kPrefix) + "'" + func.name + "'";
  return func;
}

/// The plugin namespace of kernel `kernel` ("my_ext" for "my_ext.swish"): the part before its
/// first dot, when no kernel of that namespace is registered at all. Core ops' namespaces ("nn",
/// "image") always have kernels, which this library registers, so they never count; nor does a
/// plugin whose runtime library is loaded already.
std::optional<std::string> PluginNamespace(const std::string& kernel) {
  const size_t dot = kernel.find('.');
  if (dot == std::string::npos || dot == 0) return std::nullopt;
  const std::string prefix = "kernel.cpu." + kernel.substr(0, dot + 1);
  for (const std::string& name : Function::ListGlobalNames()) {
    if (name.rfind(prefix, 0) == 0) return std::nullopt;
  }
  return kernel.substr(0, dot);
}

/// The library providing the kernels of plugin namespace `ns`.
std::string RuntimePluginFile(const std::string& ns) { return "libkiln_runtime_" + ns + ".so"; }

/// The CPU kernel `kernel.cpu.<kernel>`. When it is missing and `kernel` is of a plugin
/// namespace, the plugin's runtime library is loaded first; when none is found, `why_missing`
/// receives why.
std::optional<Function> FindCpuKernel(const std::string& kernel, std::string& why_missing) {
  const std::string name = "kernel.cpu." + kernel;
  if (std::optional<Function> found = Function::GetGlobal(name.c_str())) return found;
  const std::optional<std::string> ns = PluginNamespace(kernel);
  if (!ns.has_value()) {
    why_missing = "no loaded library registers it";
    return std::nullopt;
  }
  std::optional<std::string> reason = LoadRuntimeLibrary(RuntimePluginFile(*ns));
  if (std::optional<Function> found = Function::GetGlobal(name.c_str())) return found;
  why_missing = reason.value_or(RuntimePluginFile(*ns) + " is loaded but does not register it");
  return std::nullopt;
}

/// Sets each step's kernel function; one error lists every kernel that is not registered, each
/// with the library it was looked for in.
void ResolveKernels(std::vector<ProgramFunction>& functions) {
  std::vector<std::string> missing;
  for (ProgramFunction& func : functions) {
    for (Step& step : func.steps) {
      if (step.kernel.empty()) continue;
      std::string why;
      if (std::optional<Function> kernel = FindCpuKernel(step.kernel, why)) {
        step.function = *kernel;
        continue;
      }
      std::string line = "kernel.cpu." + step.kernel;
      line.append(": ").append(why);
      if (std::find(missing.begin(), missing.end(), line) == missing.end()) missing.push_back(line);
    }
  }
  if (missing.empty()) return;
  std::string lines;
  for (const std::string& line : missing) lines += "\n  " + line;
  KILN_THROW(RuntimeError) << kPrefix << "no CPU kernel registered for " << missing.size()
                           << " kernel(s) (a kernel my_ext.op is looked for in "
                           << "libkiln_runtime_my_ext.so, docs/kernels.md):" << lines;
}

/// Marks the steps that only give their input another shape and write a temporary: the
/// temporary becomes a view of the input when the function runs. Each temporary is written by
/// one step and nothing writes an input, so the bytes stay what the copy would have held.
void MarkAliases(ProgramFunction& func) {
  func.temp_aliases.assign(func.temps.size(), false);
  for (Step& step : func.steps) {
    const bool reshapes =
        step.kernel == "reshape" || step.kernel == "squeeze" || step.kernel == "unsqueeze";
    if (!reshapes || step.inputs.size() != 1 || step.outputs.size() != 1 ||
        step.outputs[0].list != 't') {
      continue;
    }
    step.aliases_input = true;
    func.temp_aliases[step.outputs[0].index] = true;
  }
}

/// Finds the inputs an output may be placed over (design §41): an input that one step reads,
/// once, as the merged residual of a GEMM-backed step writing that output. The step's GEMM adds
/// its product into the output, which holds the residual (kernels/cpu/gemm.h), so nothing reads
/// the input after the output is written.
void MarkOutputsOverInputs(ProgramFunction& func) {
  func.output_over_input.assign(func.num_inputs, -1);
  std::vector<int64_t> reads(func.num_inputs, 0);
  for (const Step& step : func.steps) {
    for (const TensorRef& ref : step.inputs) {
      if (ref.list == 'i') ++reads[ref.index];
    }
    const std::optional<Any> residual = step.attrs.Get(String(kEpilogueResidualAttr));
    if (!residual.has_value() || step.outputs.size() != 1 || step.outputs[0].list != 'o') {
      continue;
    }
    const TensorRef& read = step.inputs.at(static_cast<size_t>(residual->cast<int64_t>()));
    if (read.list == 'i') {
      func.output_over_input[read.index] = static_cast<int64_t>(step.outputs[0].index);
    }
  }
  for (size_t i = 0; i < func.num_inputs; ++i) {
    if (reads[i] != 1) func.output_over_input[i] = -1;
  }
}

/// The step's attributes as its prepack hook sees them: with its first output's shape when the
/// program describes it, each extent not known before a call (symbolic) as -1.
Map<String, Any> PrepackAttrs(const ProgramFunction& func, const Step& step) {
  if (step.outputs.empty()) return step.attrs;
  const TensorRef& out = step.outputs[0];
  if (out.list != 't' && out.list != 'o') return step.attrs;
  const std::vector<TensorSpec>& specs = out.list == 't' ? func.temps : func.output_specs;
  if (out.index >= specs.size()) return step.attrs;
  std::vector<int64_t> extents;
  for (const arith::SizeExpr& extent : specs[out.index].shape) {
    extents.push_back(extent.as_int().value_or(-1));
  }
  Map<String, Any> attrs = step.attrs;  // copied on write: the step's own map is unchanged
  attrs.Set(kPrepackOutputShapeAttr, Array<int64_t>(extents));
  return attrs;
}

/// Offers each step's constant inputs to the kernel's prepack hook, once per program; what it
/// returns rides along as an attribute of the step (kiln/runtime/kernel_program.h). Calls
/// `only_packed(c)` as soon as every step reading constant c has a packed copy instead, so that
/// its original can be let go before the next one is packed.
void PrepackConstants(std::vector<ProgramFunction>& functions, const std::vector<Tensor>& constants,
                      const std::function<void(size_t)>& only_packed) {
  std::vector<int64_t> uses_left(constants.size(), 0);
  for (const ProgramFunction& func : functions) {
    for (const Step& step : func.steps) {
      for (const TensorRef& ref : step.inputs) {
        if (ref.list == 'c') ++uses_left[ref.index];
      }
    }
  }
  std::vector<bool> read_unpacked(constants.size(), false);
  for (ProgramFunction& func : functions) {
    for (Step& step : func.steps) {
      std::optional<Function> prepack;
      if (!step.kernel.empty()) {
        prepack = Function::GetGlobal(("kernel_prepack.cpu." + step.kernel).c_str());
      }
      for (size_t i = 0; i < step.inputs.size(); ++i) {
        if (step.inputs[i].list != 'c') continue;
        const size_t c = step.inputs[i].index;
        const Any packed = prepack.has_value() ? (*prepack)(static_cast<int64_t>(i), constants[c],
                                                            PrepackAttrs(func, step))
                                               : Any();
        if (packed.is_none()) {
          read_unpacked[c] = true;
        } else {
          step.attrs.Set(kPrepackedAttrPrefix + std::to_string(i), packed);
        }
        if (--uses_left[c] == 0 && !read_unpacked[c]) only_packed(c);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The module
// ---------------------------------------------------------------------------------------------

/// A view of a DLTensor argument as a Tensor (no ownership: valid during the call).
Tensor ViewOf(const AnyView& arg, const std::string& func, size_t position) {
  std::optional<DLTensor*> tensor = arg.as<DLTensor*>();
  KILN_CHECK(tensor.has_value() && *tensor != nullptr, TypeError)
      << kPrefix << "argument " << position << " of '" << func << "' must be a DLTensor*, got "
      << arg.type_str();
  return internal::ViewOf(**tensor);
}

/// Whether the bytes of `a` and `b` overlap.
bool Overlap(const Tensor& a, const Tensor& b) {
  const auto* a_begin = static_cast<const char*>(a.data());
  const auto* b_begin = static_cast<const char*>(b.data());
  return a.NumBytes() > 0 && b.NumBytes() > 0 && a_begin < b_begin + b.NumBytes() &&
         b_begin < a_begin + a.NumBytes();
}

/// Replaces each input whose bytes an output overlaps by a copy, unless the function may write
/// that output over exactly those bytes (ProgramFunction::output_over_input): the steps may
/// write an output before they read an input.
void CopyInputsUnderOutputs(const ProgramFunction& func, std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& outputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (!Overlap(inputs[i], outputs[o])) continue;
      const bool over_input = func.output_over_input[i] == static_cast<int64_t>(o) &&
                              inputs[i].data() == outputs[o].data() &&
                              inputs[i].NumBytes() == outputs[o].NumBytes();
      if (over_input) continue;
      const Shape shape = inputs[i].shape();
      Tensor copy = Empty(std::vector<int64_t>(shape.begin(), shape.end()), inputs[i].dtype(),
                          DLDevice{kDLCPU, 0});
      CopyTensor(inputs[i], copy);
      inputs[i] = std::move(copy);
      break;
    }
  }
}

/// Whether `tensor` is a compact CPU tensor of `spec`'s (static) shape and dtype.
bool SameSpec(const Tensor& tensor, const TensorSpec& spec) {
  const Shape shape = tensor.shape();
  return spec.is_static &&
         std::equal(shape.begin(), shape.end(), spec.extents.begin(), spec.extents.end()) &&
         DataTypeEqual(tensor.dtype(), spec.dtype) && tensor.device().device_type == kDLCPU &&
         tensor.IsContiguous() && tensor.dl_tensor().byte_offset == 0;
}

/// The sizes a call of `func` binds, after checking its arguments against the specs the
/// description gives (merged epilogues rely on those shapes): a ValueError names the argument
/// whose shape or dtype differs.
std::vector<int64_t> BindArguments(const ProgramFunction& func, const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& outputs) {
  std::vector<const DLTensor*> args;
  for (const auto& [tensors, specs, what] : {std::tuple(&inputs, &func.input_specs, "input "),
                                             std::tuple(&outputs, &func.output_specs, "output ")}) {
    for (size_t i = 0; i < specs->size(); ++i) {
      const Tensor& tensor = (*tensors)[i];
      const TensorSpec& spec = (*specs)[i];
      KILN_CHECK(DataTypeEqual(tensor.dtype(), spec.dtype) &&
                     tensor.device().device_type == kDLCPU && tensor.IsContiguous(),
                 ValueError)
          << kPrefix << "'" << func.name << "' takes " << what << i
          << " as a compact CPU tensor of dtype " << DataTypeToString(spec.dtype) << ", got "
          << DataTypeToString(tensor.dtype());
      args.push_back(&tensor.dl_tensor());
    }
  }
  return func.signature.Bind(args, func.caller.c_str());
}

class KernelProgramObj : public ModuleObj {
 public:
  KernelProgramObj(std::string description, std::vector<ProgramFunction> functions,
                   std::vector<Tensor> constants)
      : description_(std::move(description)),
        functions_(std::move(functions)),
        constants_(std::move(constants)) {}

  std::string kind() const override { return kKernelProgramKind; }
  std::string runtime_library() const override { return kKernelProgramLibrary; }

  std::optional<Function> GetFunction(const std::string& name) override {
    for (size_t i = 0; i < functions_.size(); ++i) {
      if (functions_[i].name != name) continue;
      const auto self = ObjectPtr<KernelProgramObj>::FromBorrowed(this);
      return Function::FromPacked([self, i](const AnyView* args, int32_t num_args, Any*) {
        self->Call(self->functions_[i], args, num_args);
      });
    }
    return std::nullopt;
  }

  std::vector<std::string> ListFunctions() const override {
    std::vector<std::string> names;
    for (const ProgramFunction& func : functions_) names.push_back(func.name);
    return names;
  }

  const std::string& description() const { return description_; }

  std::optional<Bytes> SaveToBytes() const override {
    // The saved layout (LoadProgram): magic, the description's length and text, then each
    // constant at a multiple of kConstantAlignment from the start, zero-padded.
    runtime::ByteWriter out;
    out.Raw(std::string_view(kSavedMagic, sizeof(kSavedMagic)));
    out.Str(description_);
    for (const Tensor& constant : constants_) {
      out.Zeros(PaddingAt(out.size()));
      out.Raw(std::string_view(static_cast<const char*>(constant.data()),
                               static_cast<size_t>(CompactBytes(constant.dl_tensor()))));
    }
    return Bytes(std::move(out).Take());
  }

 private:
  void Call(const ProgramFunction& func, const AnyView* args, int32_t num_args) const {
    KILN_CHECK(static_cast<size_t>(num_args) == func.num_inputs + func.num_outputs, TypeError)
        << kPrefix << "'" << func.name << "' takes " << func.num_inputs << " inputs and "
        << func.num_outputs << " outputs, got " << num_args << " arguments";
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    for (size_t i = 0; i < func.num_inputs; ++i) inputs.push_back(ViewOf(args[i], func.name, i));
    for (size_t i = 0; i < func.num_outputs; ++i) {
      outputs.push_back(ViewOf(args[func.num_inputs + i], func.name, func.num_inputs + i));
    }
    const std::vector<int64_t> sizes = BindArguments(func, inputs, outputs);
    CopyInputsUnderOutputs(func, inputs, outputs);
    std::vector<std::vector<int64_t>> temp_shapes;
    std::vector<std::optional<Tensor>> temps(func.temps.size());
    for (size_t i = 0; i < func.temps.size(); ++i) {
      const TensorSpec& spec = func.temps[i];
      temp_shapes.push_back(
          spec.is_static
              ? spec.extents
              : func.signature.Evaluate(spec.shape, sizes, "temporary " + std::to_string(i)));
      if (!func.temp_aliases[i]) temps[i] = Empty(temp_shapes[i], spec.dtype, DLDevice{kDLCPU, 0});
    }
    auto lookup = [&](const TensorRef& ref) -> const Tensor& {
      switch (ref.list) {
        case 'i': return inputs[ref.index];
        case 'o': return outputs[ref.index];
        case 'c': return constants_[ref.index];
        default: return *temps[ref.index];
      }
    };
    for (const Step& step : func.steps) {
      if (step.kernel.empty()) {
        CopyTensor(lookup(step.inputs[0]), lookup(step.outputs[0]));
        continue;
      }
      if (step.aliases_input) {
        const Tensor& in = lookup(step.inputs[0]);
        const size_t temp = step.outputs[0].index;
        Tensor view = Tensor::FromMemory(in.data(), temp_shapes[temp], func.temps[temp].dtype,
                                         in.device(), nullptr);
        KILN_CHECK(in.NumBytes() == view.NumBytes(), ValueError)
            << kPrefix << "'" << func.name << "': " << step.kernel << " of " << in.NumBytes()
            << " bytes into a temporary of " << view.NumBytes();
        temps[temp] = std::move(view);
        continue;
      }
      Array<Tensor> step_inputs;
      Array<Tensor> step_outputs;
      for (const TensorRef& ref : step.inputs) step_inputs.push_back(lookup(ref));
      for (const TensorRef& ref : step.outputs) step_outputs.push_back(lookup(ref));
      if (step.symbolic_attrs.empty()) {
        step.function(step_inputs, step_outputs, step.attrs);
        continue;
      }
      Map<String, Any> attrs = step.attrs;
      for (const String& key : step.symbolic_attrs) {
        attrs.Set(key, EvaluateAttr(attrs.at(key), func.signature, sizes,
                                    "attribute '" + key.str() + "' of " + step.kernel));
      }
      step.function(step_inputs, step_outputs, attrs);
    }
  }

  std::string description_;
  std::vector<ProgramFunction> functions_;
  std::vector<Tensor> constants_;
};

/// Parses `description`; `constant_at(i, spec)` supplies constant i, which must match `spec`.
/// `only_packed(i, constant)` is told of each constant no step reads but through its packed
/// copy.
template <typename ConstantSource, typename OnlyPacked>
Module MakeProgram(std::string description, ConstantSource constant_at, OnlyPacked only_packed) {
  std::vector<ProgramFunction> functions;
  std::vector<Tensor> constants;
  try {
    const Json json = Json::parse(description);
    const auto version = json.at("version").get<int64_t>();
    KILN_CHECK(version == kKernelProgramFormatVersion, ValueError)
        << kPrefix << "format version " << version << " is not supported (this runtime reads "
        << kKernelProgramFormatVersion << ")";
    const Json& constant_specs = json.at("constants");
    for (size_t i = 0; i < constant_specs.size(); ++i) {
      constants.push_back(constant_at(i, ReadSpec(constant_specs[i])));
    }
    for (const Json& func : json.at("functions")) {
      functions.push_back(ReadFunction(func, constants.size()));
    }
  } catch (const Json::exception& error) {
    KILN_THROW(ValueError) << kPrefix << "malformed description: " << error.what();
  }
  ResolveKernels(functions);
  for (ProgramFunction& func : functions) {
    MergeEpilogues(func, constants);
    MarkAliases(func);
    MarkOutputsOverInputs(func);
  }
  PrepackConstants(functions, constants, [&](size_t c) { only_packed(c, constants[c]); });
  return Module(make_object<KernelProgramObj>(std::move(description), std::move(functions),
                                              std::move(constants)));
}

Module CreateProgram(const String& description, const Array<Tensor>& constants) {
  return MakeProgram(
      description.str(),
      [&](size_t i, const TensorSpec& spec) {
        KILN_CHECK(static_cast<int64_t>(i) < constants.size() && SameSpec(constants[i], spec),
                   ValueError)
            << kPrefix << "constant " << i << " is missing or does not match its description";
        return constants[i];
      },
      [](size_t, const Tensor&) {});
}

/// A saved program (SaveToBytes): `kSavedMagic`, the description (a u64 length, the text), then
/// the constants, each at a multiple of kConstantAlignment from the start. Programs saved before
/// the magic existed start with the length and pack the constants; both are read. With
/// `in_place`, `data` stays mapped for the process's life (an artifact's bytes) and an aligned
/// constant is a view of it, whose pages go back to the kernel once only its packed form is used
/// (MakeProgram); otherwise each constant is copied out.
Module LoadProgram(std::string_view data, bool in_place) {
  const bool aligned =
      data.substr(0, sizeof(kSavedMagic)) == std::string_view(kSavedMagic, sizeof(kSavedMagic));
  runtime::ByteReader in(data.substr(aligned ? sizeof(kSavedMagic) : 0),
                         "the saved kernel program");
  const size_t base = aligned ? sizeof(kSavedMagic) : 0;
  std::string description = in.Str("description");
  std::vector<bool> views;
  Module program = MakeProgram(
      std::move(description),
      [&](size_t, const TensorSpec& spec) {
        KILN_CHECK(spec.is_static, ValueError)
            << kPrefix << "a constant has the symbolic shape " << SymbolicShapeToString(spec.shape);
        if (aligned) in.Zeros(PaddingAt(base + in.position()), "the padding before a constant");
        const std::string_view bytes = in.View(static_cast<uint64_t>(spec.bytes), "a constant");
        const size_t alignment = std::max<size_t>(1, (spec.dtype.bits * spec.dtype.lanes + 7) / 8);
        const bool view = in_place && reinterpret_cast<uintptr_t>(bytes.data()) % alignment == 0;
        views.push_back(view);
        if (view) {
          return Tensor::FromMemory(const_cast<char*>(bytes.data()), spec.extents, spec.dtype,
                                    DLDevice{kDLCPU, 0}, [] {});
        }
        Tensor constant = Empty(spec.extents, spec.dtype, DLDevice{kDLCPU, 0});
        if (!bytes.empty()) std::memcpy(constant.data(), bytes.data(), bytes.size());
        return constant;
      },
      [&](size_t i, const Tensor& constant) {
        if (views[i]) {
          ReleaseMappedPages(constant.data(),
                             static_cast<size_t>(CompactBytes(constant.dl_tensor())));
        }
      });
  in.ExpectEnd();
  return program;
}

KILN_REGISTER_GLOBAL("runtime.KernelProgramCreate").set_body_typed(CreateProgram);

KILN_REGISTER_GLOBAL("runtime.KernelProgramDescription").set_body_typed([](const Module& module) {
  const auto* program = dynamic_cast<const KernelProgramObj*>(module.get());
  KILN_CHECK(program != nullptr, TypeError)
      << "runtime.KernelProgramDescription takes a '" << kKernelProgramKind << "' module, got '"
      << module->kind() << "'";
  return String(program->description());
});

KILN_REGISTER_GLOBAL("runtime.WhyNoCpuKernel").set_body_typed([](const String& kernel) {
  std::string why;
  return FindCpuKernel(kernel.str(), why).has_value() ? std::nullopt
                                                      : std::optional<String>(String(why));
});

KILN_REGISTER_GLOBAL("runtime.module.load_bytes.kernel_program")
    .set_body_typed([](const Bytes& bytes) {
      try {
        return LoadProgram(bytes.view(), /*in_place=*/false);
      } catch (const Error& error) {
        throw error.WithContext("while loading a kernel_program module");
      }
    });

// An artifact's program, read where the artifact is mapped (kiln/runtime/artifact.h).
KILN_REGISTER_GLOBAL("runtime.module.load_mapped.kernel_program")
    .set_body_typed([](void* data, int64_t size) {
      try {
        return LoadProgram(std::string_view(static_cast<const char*>(data), size),
                           /*in_place=*/true);
      } catch (const Error& error) {
        throw error.WithContext("while loading a kernel_program module");
      }
    });

}  // namespace

TensorSpec SpecOfTensor(const Tensor& tensor) {
  TensorSpec spec;
  const Shape shape = tensor.shape();
  spec.extents.assign(shape.begin(), shape.end());
  spec.shape = FromStatic(spec.extents);
  spec.dtype = tensor.dtype();
  spec.bytes = tensor.NumBytes();
  return spec;
}

}  // namespace runtime
}  // namespace kiln
