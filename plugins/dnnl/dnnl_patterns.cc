// libkiln_dnnl.so, the pattern table and the codegen. Patterns fuse what oneDNN runs as one
// primitive with post-ops: a convolution, dense layer or matmul, then optionally a constant
// bias per output channel (the primitive's bias), a residual add (the "sum" post-op) and an
// activation (an "eltwise" post-op). The composite's name spells its parts, which is all the
// runtime reads:
//
//   dnnl.<conv2d|dense|matmul>[_bias|_lbias][_sum|_lsum][_<activation>]
//
// `_bias` and `_sum` add the bias or residual as the add's rhs, `_lbias` and `_lsum` as its
// lhs (exporters write both). The composite's parameters are the leaves in the order the body
// first reads them (MergeComposite), e.g. data, weight, bias, residual for _bias_sum and
// residual, bias, data, weight for _lbias_lsum; a residual that is the data itself is passed
// once, as the data. The runtime (dnnl_primitives.cc, ParseFused) reads them back the same way.
#include <kiln/codegen/json_graph.h>
#include <kiln/ffi/registry.h>
#include <kiln/transform/byoc.h>
#include <kiln/transform/pattern.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dnnl_activations.h"
#include "dnnl_support.h"

namespace kiln {
namespace dnnl_plugin {
namespace {

using transform::IsConstant;
using transform::IsOp;
using transform::Pattern;
using transform::PatternEntry;
using transform::Wildcard;

/// True when `bias` (right-aligned against `out`) varies along `channel_axis` of `out` only.
bool IsPerChannel(const std::vector<int64_t>& bias, const std::vector<int64_t>& out,
                  size_t channel_axis) {
  if (bias.size() > out.size()) return false;
  const size_t offset = out.size() - bias.size();
  for (size_t i = 0; i < bias.size(); ++i) {
    if (bias[i] != 1 && (i + offset != channel_axis || bias[i] != out[channel_axis])) return false;
  }
  return true;
}

/// One shape of the fused form: which optional parts it has.
/// Where an added operand sits: absent, the add's rhs, or its lhs.
enum class Side { kNone, kRight, kLeft };

/// `add(inner, operand)` or `add(operand, inner)` as `side` says; `inner` when kNone.
Pattern AddOn(Side side, const Pattern& inner, const Pattern& operand) {
  if (side == Side::kNone) return inner;
  return side == Side::kRight ? IsOp("add")({inner, operand}) : IsOp("add")({operand, inner});
}

struct Form {
  std::string anchor;  ///< "conv2d", "dense" or "matmul"
  Side bias = Side::kNone;
  Side sum = Side::kNone;
  std::string activation;  ///< name part of FusedActivations(), or empty

  int parts() const {
    return (bias != Side::kNone ? 1 : 0) + (sum != Side::kNone ? 1 : 0) +
           (activation.empty() ? 0 : 1);
  }

  std::string name() const {
    static const char* const kSide[] = {"", "_", "_l"};
    std::string name = "dnnl." + anchor;
    if (bias != Side::kNone) name += kSide[static_cast<int>(bias)] + std::string("bias");
    if (sum != Side::kNone) name += kSide[static_cast<int>(sum)] + std::string("sum");
    return activation.empty() ? name : name + "_" + activation;
  }
};

/// The entry of `form`. Its check asks WhyNotDnnl of every op of the match, and requires a
/// per-channel bias and a residual of the result's shape (oneDNN's sum post-op adds in place).
PatternEntry MakeEntry(const Form& form) {
  const Pattern anchor =
      IsOp(form.anchor == "matmul" ? "matmul" : "nn." + form.anchor)({Wildcard(), Wildcard()});
  const Pattern bias = IsConstant();
  const Pattern residual = Wildcard();
  Pattern pattern = AddOn(form.sum, AddOn(form.bias, anchor, bias), residual);
  for (const auto& [part, op] : FusedActivations()) {
    if (part == form.activation) pattern = IsOp(op)({pattern});
  }
  const size_t channel_axis = form.anchor == "conv2d" ? 1 : SIZE_MAX;
  const bool has_bias = form.bias != Side::kNone;
  const bool has_sum = form.sum != Side::kNone;
  auto check = [pattern, anchor, bias, residual, channel_axis, has_bias,
                has_sum](const ir::Expr& root) {
    std::optional<transform::PatternBinding> binding = transform::MatchPattern(pattern, root);
    if (!binding.has_value()) return false;
    for (const auto& entry : *binding) {
      if (entry.first.as<transform::CallPatternObj>() == nullptr) continue;
      if (!WhyNotDnnl(Downcast<ir::Call>(entry.second)).empty()) return false;
    }
    std::string reason;
    const std::optional<std::vector<int64_t>> out =
        transform::StaticFloat32Shape(binding->at(anchor)->checked_type(), "the result", &reason);
    if (!out.has_value()) return false;
    if (has_bias) {
      const std::optional<std::vector<int64_t>> shape =
          transform::StaticFloat32Shape(binding->at(bias)->checked_type(), "the bias", &reason);
      const size_t axis = channel_axis == SIZE_MAX ? out->size() - 1 : channel_axis;
      if (!shape.has_value() || !IsPerChannel(*shape, *out, axis)) return false;
    }
    if (has_sum) {
      const std::optional<std::vector<int64_t>> shape = transform::StaticFloat32Shape(
          binding->at(residual)->checked_type(), "the residual", &reason);
      if (!shape.has_value() || *shape != *out) return false;
      // The runtime finds the residual by position; it may be the data (passed once) but
      // not the weight or bias.
      const ir::Expr& conv = binding->at(anchor);
      const ir::Expr& added = binding->at(residual);
      const auto* call = conv.as<ir::CallObj>();
      if (added.same_as(call->args()[1]) || (has_bias && added.same_as(binding->at(bias)))) {
        return false;
      }
    }
    return true;
  };
  return PatternEntry(form.name(), pattern,
                      Function::FromTyped(check, "kiln.ext.dnnl.pattern_check"));
}

/// The one value of a float32 constant of one element, or nullopt.
std::optional<float> ScalarOf(const ir::Expr& expr) {
  const auto* constant = expr.as<ir::ConstantObj>();
  if (constant == nullptr) return std::nullopt;
  const Tensor& data = constant->data();
  if (!DataTypeEqual(data.dtype(), DLDataType{kDLFloat, 32, 1}) || data.NumElements() != 1) {
    return std::nullopt;
  }
  return *static_cast<const float*>(data.data());
}

/// GELU as ONNX exporters spell it, x * (erf(x / sqrt(2)) + 1) * 0.5, which Kiln keeps as
/// five ops (one of them erf, which oneDNN has not alone): one gelu_erf eltwise on dnnl. Its
/// parameters are x and the three constants, in that order.
PatternEntry MakeGeluEntry() {
  const Pattern x = Wildcard();
  const Pattern root2 = IsConstant();
  const Pattern one = IsConstant();
  const Pattern half = IsConstant();
  const Pattern erf = IsOp("erf")({IsOp("divide")({x, root2})});
  const Pattern pattern = IsOp("multiply")({IsOp("multiply")({x, IsOp("add")({erf, one})}), half});
  auto check = [pattern, x, root2, one, half](const ir::Expr& root) {
    std::optional<transform::PatternBinding> binding = transform::MatchPattern(pattern, root);
    std::string reason;
    if (!binding.has_value() ||
        !transform::StaticFloat32Shape(binding->at(x)->checked_type(), "x", &reason).has_value()) {
      return false;
    }
    const std::optional<float> divisor = ScalarOf(binding->at(root2));
    return divisor.has_value() && std::abs(*divisor - std::sqrt(2.0F)) < 1e-6F &&
           ScalarOf(binding->at(one)) == 1.0F && ScalarOf(binding->at(half)) == 0.5F;
  };
  return PatternEntry("dnnl.gelu_erf", pattern,
                      Function::FromTyped(check, "kiln.ext.dnnl.pattern_check"));
}

/// Every form, the ones with most parts first, so that MergeComposite prefers the biggest.
Array<PatternEntry> MakeTable() {
  std::vector<Form> forms;
  for (const char* anchor : {"conv2d", "dense", "matmul"}) {
    for (Side bias : {Side::kRight, Side::kLeft, Side::kNone}) {
      for (Side sum : {Side::kRight, Side::kLeft, Side::kNone}) {
        forms.push_back({anchor, bias, sum, ""});
        for (const auto& activation : FusedActivations()) {
          forms.push_back({anchor, bias, sum, activation.first});
        }
      }
    }
  }
  std::stable_sort(forms.begin(), forms.end(),
                   [](const Form& a, const Form& b) { return a.parts() > b.parts(); });
  Array<PatternEntry> table;
  for (const Form& form : forms) {
    if (form.parts() > 0) table.push_back(MakeEntry(form));
  }
  table.push_back(MakeGeluEntry());
  return table;
}

KILN_REGISTER_GLOBAL("kiln.ext.dnnl.pattern_table").set_body_typed([]() {
  static const Array<PatternEntry> table = MakeTable();
  return table;
});

KILN_REGISTER_GLOBAL("kiln.ext.dnnl")
    .set_body_typed([](const Array<ir::Function>& functions, const Map<String, Any>&) {
      return codegen::CreateJsonModules(functions, "dnnl");
    });

}  // namespace
}  // namespace dnnl_plugin
}  // namespace kiln
