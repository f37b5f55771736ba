// MergeEpilogues (kernel_program_internal.h): when a kernel program loads, the elementwise
// steps after a GEMM-backed step become part of it, so they run while its output is in cache.
#include <kiln/runtime/kernel_program.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "kernel_program_internal.h"

namespace kiln {
namespace runtime {
namespace {

bool SameRef(const TensorRef& a, const TensorRef& b) {
  return a.list == b.list && a.index == b.index;
}

/// How many times the function's steps name `ref`, as an input or an output.
size_t Uses(const ProgramFunction& func, const TensorRef& ref) {
  size_t uses = 0;
  for (const Step& step : func.steps) {
    for (const std::vector<TensorRef>* refs : {&step.inputs, &step.outputs}) {
      uses += std::count_if(refs->begin(), refs->end(),
                            [&](const TensorRef& other) { return SameRef(other, ref); });
    }
  }
  return uses;
}

constexpr DLDataType kFloat32{kDLFloat, 32, 1};

/// A float32 temporary that one step writes and one other step reads.
bool IsPassedOnce(const ProgramFunction& func, const TensorRef& ref) {
  return ref.list == 't' && Uses(func, ref) == 2 &&
         DataTypeEqual(func.temps[ref.index].dtype, kFloat32);
}

/// The step after steps[s] when it is the only reader of `ref`, a temporary that steps up to s
/// wrote; else null.
const Step* NextReader(const ProgramFunction& func, size_t s, const TensorRef& ref) {
  return s + 1 < func.steps.size() && IsPassedOnce(func, ref) ? &func.steps[s + 1] : nullptr;
}

/// The shape and dtype of `ref`, when the description gives them.
std::optional<TensorSpec> SpecOf(const ProgramFunction& func, const TensorRef& ref,
                                 const std::vector<Tensor>& constants) {
  switch (ref.list) {
    case 'i':
      if (func.input_specs.empty()) return std::nullopt;
      return func.input_specs[ref.index];
    case 'o':
      if (func.output_specs.empty()) return std::nullopt;
      return func.output_specs[ref.index];
    case 'c': return SpecOfTensor(constants[ref.index]);
    default: return func.temps[ref.index];
  }
}

/// The other input of a two-input `kernel` step (add, multiply) reading `ref`.
std::optional<TensorRef> OtherOperand(const Step& step, const char* kernel, const TensorRef& ref) {
  if (step.kernel != kernel || step.inputs.size() != 2 || step.outputs.size() != 1) {
    return std::nullopt;
  }
  if (SameRef(step.inputs[0], ref)) return step.inputs[1];
  if (SameRef(step.inputs[1], ref)) return step.inputs[0];
  return std::nullopt;
}

/// Whether `extent` is the constant `value`.
bool ExtentIs(const arith::SizeExpr& extent, int64_t value) { return extent.as_int() == value; }

/// Whether `a` and `b` are the same shape whatever the sizes: extents written the same way
/// (type inference writes equal sizes in one simplified form).
bool SameShape(const SymbolicShape& a, const SymbolicShape& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), arith::StructuralEqual);
}

/// A bias (a constant) of shape (C, 1, 1) or (1, C, 1, 1): one value per channel of the
/// (N, C, H, W) `out`.
bool IsChannelBias(const TensorSpec& bias, const TensorSpec& out) {
  const std::vector<int64_t>& shape = bias.extents;
  const size_t rank = shape.size();
  return out.shape.size() == 4 && (rank == 3 || (rank == 4 && shape[0] == 1)) &&
         ExtentIs(out.shape[1], shape[rank - 3]) && shape[rank - 2] == 1 && shape[rank - 1] == 1;
}

/// A bias (a constant) of shape (1, C/16, 1, 1, 16): one value per channel of the blocked
/// (N, C/16, H, W, 16) `out` (kiln/ir/channel_blocks.h).
bool IsBlockedChannelBias(const TensorSpec& bias, const TensorSpec& out) {
  const std::vector<int64_t>& shape = bias.extents;
  return out.shape.size() == 5 && shape.size() == 5 && shape[0] == 1 &&
         ExtentIs(out.shape[1], shape[1]) && shape[2] == 1 && shape[3] == 1 &&
         ExtentIs(out.shape[4], shape[4]);
}

/// A bias (a constant) of shape (N) or (1, ..., 1, N): one value per column of the (..., N)
/// `out`.
bool IsColumnBias(const TensorSpec& bias, const TensorSpec& out) {
  const std::vector<int64_t>& shape = bias.extents;
  return !shape.empty() && shape.size() <= out.shape.size() &&
         ExtentIs(out.shape.back(), shape.back()) &&
         std::all_of(shape.begin(), shape.end() - 1, [](int64_t extent) { return extent == 1; });
}

/// A step whose kernel reads the kEpilogue* attributes, with one output; for matmul, one whose
/// operands are matrices or batches of them (a vector operand has no column of the output to
/// add a bias to).
bool IsEpilogueAnchor(const ProgramFunction& func, const Step& step,
                      const std::vector<Tensor>& constants) {
  if (step.inputs.size() != 2 || step.outputs.size() != 1) return false;
  if (step.kernel == "nn.conv2d" || step.kernel == "nn.conv2d_nchwc" || step.kernel == "nn.dense") {
    return true;
  }
  if (step.kernel != "matmul") return false;
  return std::all_of(step.inputs.begin(), step.inputs.end(), [&](const TensorRef& ref) {
    const std::optional<TensorSpec> spec = SpecOf(func, ref, constants);
    return spec.has_value() && spec->shape.size() >= 2;
  });
}

/// The epilogue attributes of an `nn.relu`, `clip`, `nn.gelu`, `nn.silu` or `nn.hardswish` step
/// reading `ref`.
std::optional<Map<String, Any>> ActivationOf(const Step& step, const TensorRef& ref) {
  if (step.inputs.size() != 1 || !SameRef(step.inputs[0], ref) || step.outputs.size() != 1) {
    return std::nullopt;
  }
  Map<String, Any> attrs;
  if (step.kernel == "nn.gelu") {
    attrs.Set(kEpilogueGeluAttr, true);
  } else if (step.kernel == "nn.silu") {
    attrs.Set(kEpilogueSiluAttr, true);
  } else if (step.kernel == "nn.hardswish") {
    attrs.Set(kEpilogueHardSwishAttr, true);
  } else if (step.kernel == "nn.relu") {
    attrs.Set(kEpilogueMinAttr, 0.0);
  } else if (step.kernel == "clip") {
    for (const auto& [from, to] :
         {std::pair("a_min", kEpilogueMinAttr), {"a_max", kEpilogueMaxAttr}}) {
      if (std::optional<Any> bound = step.attrs.Get(from)) attrs.Set(to, bound->cast<double>());
    }
  } else {
    return std::nullopt;
  }
  return attrs;
}

/// A `concatenate` step along the channels of an (N, C, H, W) float32 temporary.
bool IsChannelConcat(const ProgramFunction& func, const Step& step) {
  if (step.kernel != "concatenate" || step.outputs.size() != 1 || step.outputs[0].list != 't') {
    return false;
  }
  const std::optional<Any> axis = step.attrs.Get("axis");
  const TensorSpec& out = func.temps[step.outputs[0].index];
  return axis.has_value() && out.shape.size() == 4 && DataTypeEqual(out.dtype, kFloat32) &&
         (axis->cast<int64_t>() == 1 || axis->cast<int64_t>() == -3);
}

/// Merges into the channel concatenation steps[s] (advancing s past what it takes) a
/// multiplication and an addition by constants with one value per channel, then relu or clip,
/// each optional: an inference batch norm and its activation after a concatenation (DenseNet's
/// layers), applied to each piece as it is copied.
void MergeChannelAffine(const ProgramFunction& func, const std::vector<Tensor>& constants,
                        size_t& s, Step& step) {
  const TensorSpec out = func.temps[step.outputs[0].index];
  auto next = [&] { return NextReader(func, s, step.outputs[0]); };
  for (const auto& [kernel, attr] :
       {std::pair("multiply", kEpilogueScaleAttr), {"add", kEpilogueBiasAttr}}) {
    const Step* following = next();
    if (following == nullptr) return;
    const std::optional<TensorRef> other = OtherOperand(*following, kernel, step.outputs[0]);
    if (!other.has_value() || other->list != 'c') continue;
    const TensorSpec spec = SpecOfTensor(constants[other->index]);
    if (!DataTypeEqual(spec.dtype, kFloat32) || !IsChannelBias(spec, out)) continue;
    step.attrs.Set(attr, static_cast<int64_t>(step.inputs.size()));
    step.inputs.push_back(*other);
    step.outputs = func.steps[++s].outputs;
  }
  const Step* activation = next();
  if (activation == nullptr || (activation->kernel != "nn.relu" && activation->kernel != "clip")) {
    return;
  }
  if (std::optional<Map<String, Any>> attrs = ActivationOf(*activation, step.outputs[0])) {
    for (const auto& [key, value] : *attrs) step.attrs.Set(key, value);
    step.outputs = func.steps[++s].outputs;
  }
}

}  // namespace

void MergeEpilogues(ProgramFunction& func, const std::vector<Tensor>& constants) {
  std::vector<Step> merged;
  for (size_t s = 0; s < func.steps.size(); ++s) {
    Step step = func.steps[s];
    if (IsChannelConcat(func, step)) {
      MergeChannelAffine(func, constants, s, step);
      merged.push_back(std::move(step));
      continue;
    }
    // Only a temporary that the next step alone reads can be merged away.
    if (!IsEpilogueAnchor(func, step, constants) || !IsPassedOnce(func, step.outputs[0])) {
      merged.push_back(std::move(step));
      continue;
    }
    const TensorSpec product = func.temps[step.outputs[0].index];
    // The step after the merged ones, when it reads what they wrote and nothing else does.
    auto next = [&] { return NextReader(func, s, step.outputs[0]); };
    auto absorb = [&](const char* attr, const TensorRef& input) {
      step.attrs.Set(attr, static_cast<int64_t>(step.inputs.size()));
      step.inputs.push_back(input);
      step.outputs = func.steps[++s].outputs;
    };
    // One bias per channel (a row of the convolution's GEMM), else per column.
    auto is_bias = [&](const TensorSpec& spec) {
      if (step.kernel == "nn.conv2d") return IsChannelBias(spec, product);
      if (step.kernel == "nn.conv2d_nchwc") return IsBlockedChannelBias(spec, product);
      return IsColumnBias(spec, product);
    };
    if (const Step* add = next()) {
      const std::optional<TensorRef> bias = OtherOperand(*add, "add", step.outputs[0]);
      const std::optional<TensorSpec> spec =
          bias.has_value() ? SpecOf(func, *bias, constants) : std::nullopt;
      if (bias.has_value() && bias->list == 'c' && DataTypeEqual(spec->dtype, kFloat32) &&
          is_bias(*spec)) {
        absorb(kEpilogueBiasAttr, *bias);
      }
    }
    if (const Step* add = next()) {
      const std::optional<TensorRef> residual = OtherOperand(*add, "add", step.outputs[0]);
      const std::optional<TensorSpec> spec =
          residual.has_value() ? SpecOf(func, *residual, constants) : std::nullopt;
      if (spec.has_value() && SameShape(spec->shape, product.shape) &&
          DataTypeEqual(spec->dtype, kFloat32)) {
        absorb(kEpilogueResidualAttr, *residual);
      }
    }
    if (const Step* activation = next()) {
      if (std::optional<Map<String, Any>> attrs = ActivationOf(*activation, step.outputs[0])) {
        for (const auto& [key, value] : *attrs) step.attrs.Set(key, value);
        step.outputs = func.steps[++s].outputs;
      }
    }
    merged.push_back(std::move(step));
  }
  func.steps = std::move(merged);
}

}  // namespace runtime
}  // namespace kiln
