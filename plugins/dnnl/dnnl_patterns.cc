// libkiln_dnnl.so, the pattern table and the codegen. Patterns fuse what oneDNN runs as one
// primitive with post-ops: a convolution or dense layer, then optionally a per-channel constant
// bias (the primitive's bias), a residual add (the "sum" post-op) and an activation (an
// "eltwise" post-op). The composite's name spells its parts, which is all the runtime reads:
//
//   dnnl.<conv2d|dense>[_bias][_sum|_rsum][_<activation>]
//
// `_sum` adds the residual as the add's rhs, `_rsum` as its lhs. The composite's parameters
// are, in the order MergeComposite gives them (the body's first reads): for _sum data, weight,
// [bias,] residual; for _rsum residual, data, weight[, bias]; a residual that is the data
// itself is passed once, as the data.
#include <kiln/codegen/json_graph.h>
#include <kiln/ffi/registry.h>
#include <kiln/transform/pattern.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dnnl_support.h"

namespace kiln {
namespace dnnl_plugin {
namespace {

using transform::IsConstant;
using transform::IsOp;
using transform::Pattern;
using transform::PatternEntry;
using transform::Wildcard;

/// The activations fused as eltwise post-ops: pattern name part, op.
const std::vector<std::pair<std::string, std::string>>& Activations() {
  static const std::vector<std::pair<std::string, std::string>> activations = {
      {"relu", "nn.relu"}, {"clip", "clip"},   {"gelu", "nn.gelu"},
      {"sigmoid", "sigmoid"}, {"tanh", "tanh"}, {"leaky_relu", "nn.leaky_relu"},
  };
  return activations;
}

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
struct Form {
  std::string anchor;      ///< "conv2d" or "dense"
  bool bias = false;
  int sum = 0;             ///< 0: none, 1: residual as rhs (_sum), 2: as lhs (_rsum)
  std::string activation;  ///< name part of Activations(), or empty

  int parts() const { return (bias ? 1 : 0) + (sum != 0 ? 1 : 0) + (activation.empty() ? 0 : 1); }

  std::string name() const {
    std::string name = "dnnl." + anchor + (bias ? "_bias" : "");
    if (sum != 0) name += sum == 1 ? "_sum" : "_rsum";
    return activation.empty() ? name : name + "_" + activation;
  }
};

/// The entry of `form`. Its check asks WhyNotDnnl of every op of the match, and requires a
/// per-channel bias and a residual of the result's shape (oneDNN's sum post-op adds in place).
PatternEntry MakeEntry(const Form& form) {
  const Pattern anchor = IsOp(form.anchor == "conv2d" ? "nn.conv2d" : "nn.dense")(
      {Wildcard(), Wildcard()});
  const Pattern bias = IsConstant();
  Pattern pattern = form.bias ? IsOp("add")({anchor, bias}) : anchor;
  const Pattern residual = Wildcard();
  if (form.sum == 1) pattern = IsOp("add")({pattern, residual});
  if (form.sum == 2) pattern = IsOp("add")({residual, pattern});
  for (const auto& [part, op] : Activations()) {
    if (part == form.activation) pattern = IsOp(op)({pattern});
  }
  const size_t channel_axis = form.anchor == "conv2d" ? 1 : SIZE_MAX;
  const bool has_bias = form.bias;
  const bool has_sum = form.sum != 0;
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
        Float32Shape(binding->at(anchor), "the result", &reason);
    if (!out.has_value()) return false;
    if (has_bias) {
      const std::optional<std::vector<int64_t>> shape =
          Float32Shape(binding->at(bias), "the bias", &reason);
      const size_t axis = channel_axis == SIZE_MAX ? out->size() - 1 : channel_axis;
      if (!shape.has_value() || !IsPerChannel(*shape, *out, axis)) return false;
    }
    if (has_sum) {
      const std::optional<std::vector<int64_t>> shape =
          Float32Shape(binding->at(residual), "the residual", &reason);
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

/// Every form, the ones with most parts first, so that MergeComposite prefers the biggest.
Array<PatternEntry> MakeTable() {
  std::vector<Form> forms;
  for (const char* anchor : {"conv2d", "dense"}) {
    for (bool bias : {true, false}) {
      for (int sum : {1, 2, 0}) {
        forms.push_back({anchor, bias, sum, ""});
        for (const auto& activation : Activations()) {
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
