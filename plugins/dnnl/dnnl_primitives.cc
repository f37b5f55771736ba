// libkiln_runtime_dnnl.so, one builder per op: each turns an op node of the JSON graph into a
// oneDNN primitive of the plan (dnnl_plan.h). Compute-heavy primitives (convolution, matmul)
// choose their layouts (format_tag::any); layout-agnostic ones (eltwise, pooling, batch norm,
// binary) take their input's layout as it is, so blocked layouts flow through a region and
// reorders happen at its boundary. Composite nodes (dnnl_patterns.cc) become one primitive
// with post-ops.
#include <kiln/ffi/error.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "dnnl_activations.h"
#include "dnnl_plan.h"

namespace kiln {
namespace dnnl_plugin {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using runtime::JsonEntry;
using runtime::JsonNode;
using Dims = memory::dims;

// ---- attributes ----

Map<String, Any> AttrsOf(const Map<String, Any>& attrs, const std::string& op) {
  return attrs.at(String(op)).cast<Map<String, Any>>();
}

Dims IntsAttr(const Map<String, Any>& attrs, const char* name) {
  Dims values;
  for (const Any& value : attrs.at(String(name)).cast<Array<Any>>()) {
    values.push_back(value.cast<int64_t>());
  }
  return values;
}

float FloatAttr(const Map<String, Any>& attrs, const char* name) {
  return static_cast<float>(attrs.at(String(name)).cast<double>());
}

/// oneDNN counts dilation from 0 (no dilation), Kiln from 1.
Dims OneDnnDilation(const Dims& dilation) {
  Dims result;
  for (int64_t d : dilation) result.push_back(d - 1);
  return result;
}

memory::desc AnyDesc(const Dims& dims) {
  return {dims, memory::data_type::f32, memory::format_tag::any};
}

Dims RowMajorStrides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i > 1; --i) strides[i - 2] = strides[i - 1] * dims[i - 1];
  return strides;
}

/// `shape` with ones prepended up to `rank` (numpy broadcasting aligns from the right).
Dims PadRank(const std::vector<int64_t>& shape, size_t rank) {
  Dims dims(rank - std::min(rank, shape.size()), 1);
  dims.insert(dims.end(), shape.begin(), shape.end());
  return dims;
}

// ---- eltwise: standalone ops and activation post-ops ----

struct Eltwise {
  algorithm kind;
  float alpha = 0.0F;
  float beta = 0.0F;
};

/// The eltwise of op `op` with attributes `attrs`, or nullopt when it is not one.
std::optional<Eltwise> EltwiseOf(const std::string& op, const Map<String, Any>& attrs) {
  static const std::map<std::string, algorithm> kinds = {
      {"nn.relu", algorithm::eltwise_relu},
      {"sigmoid", algorithm::eltwise_logistic},
      {"tanh", algorithm::eltwise_tanh},
      {"exp", algorithm::eltwise_exp},
      {"log", algorithm::eltwise_log},
      {"sqrt", algorithm::eltwise_sqrt},
      {"abs", algorithm::eltwise_abs},
      {"nn.gelu", algorithm::eltwise_gelu_erf},
      {"nn.silu", algorithm::eltwise_swish},           // x * sigmoid(alpha x), alpha 1
      {"nn.hardswish", algorithm::eltwise_hardswish},  // x * relu6(x + 3) / 6
      {"nn.softplus", algorithm::eltwise_soft_relu},
      {"clip", algorithm::eltwise_clip},
      {"nn.leaky_relu", algorithm::eltwise_relu},
      {"nn.elu", algorithm::eltwise_elu},
  };
  auto kind = kinds.find(op);
  if (kind == kinds.end()) return std::nullopt;
  Eltwise eltwise{kind->second};
  if (op == "clip") {
    eltwise.alpha = FloatAttr(attrs, "a_min");
    eltwise.beta = FloatAttr(attrs, "a_max");
  } else if (op == "nn.leaky_relu" || op == "nn.elu") {
    eltwise.alpha = FloatAttr(attrs, "alpha");
  } else if (op == "nn.silu") {
    eltwise.alpha = 1.0F;
  }
  return eltwise;
}

/// The output of op node `index` written over its source `src` (eltwise and binary primitives
/// may run in place) when nothing reads `src` later, else new memory.
memory InPlaceOrNew(Plan& plan, JsonEntry src, uint32_t index, const memory::desc& desc) {
  std::optional<memory> taken = plan.TakeOver(src, {index, 0}, index, desc);
  return taken.has_value() ? *taken : plan.Define({index, 0}, desc);
}

void BuildEltwise(Plan& plan, uint32_t index, const Eltwise& eltwise) {
  const JsonNode& node = plan.graph().nodes[index];
  const Value& src = plan.Get(node.inputs[0]);
  const dnnl::eltwise_forward::primitive_desc pd(
      {prop_kind::forward_inference, eltwise.kind, src.memory.get_desc(), eltwise.alpha,
       eltwise.beta},
      UserScratchpad(), plan.engine());
  const memory dst = InPlaceOrNew(plan, node.inputs[0], index, pd.dst_desc());
  plan.AddStep(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, src.memory}, {DNNL_ARG_DST, dst}});
}

// ---- convolution and dense, with their fused post-ops ----

/// A composite node's parts (dnnl_patterns.cc): which inputs are which, and the post-ops.
struct Fused {
  std::string anchor;  ///< "nn.conv2d", "nn.dense", "matmul" or "nn.batch_matmul"
  Map<String, Any> anchor_attrs;
  JsonEntry data, weight;
  std::optional<JsonEntry> bias, residual;
  std::optional<Eltwise> activation;
};

bool Consume(std::string* rest, const std::string& prefix) {
  if (rest->compare(0, prefix.size(), prefix) != 0) return false;
  *rest = rest->substr(prefix.size());
  return true;
}

/// Reads `dnnl.<conv2d|dense|matmul>[_bias|_lbias][_sum|_lsum][_<activation>]` and the node's
/// inputs (dnnl_patterns.cc).
Fused ParseFused(const runtime::JsonGraph& graph, const JsonNode& node) {
  const auto& activations = FusedActivations();
  std::string rest = node.name;
  Fused fused;
  for (const char* anchor : {"nn.conv2d", "nn.dense", "matmul"}) {
    const std::string op = anchor;
    const std::string part = op.substr(op.find('.') + 1);
    if (fused.anchor.empty() && Consume(&rest, "dnnl." + part)) fused.anchor = op;
  }
  const bool lbias = Consume(&rest, "_lbias");
  const bool bias = lbias || Consume(&rest, "_bias");
  const bool lsum = Consume(&rest, "_lsum");
  const bool sum = lsum || Consume(&rest, "_sum");
  std::string activation;
  if (Consume(&rest, "_")) activation.swap(rest);
  auto op = std::find_if(activations.begin(), activations.end(),
                         [&activation](const auto& entry) { return entry.first == activation; });
  // The parameters are the body's leaves in the order it first reads them (left to right,
  // depth first), each distinct expression once: a residual that is the data itself (a
  // shape-preserving convolution of x added to x) is not a parameter of its own.
  enum Role { kData, kWeight, kBias, kResidual };
  std::vector<Role> roles = {kData, kWeight};
  if (bias) roles.insert(lbias ? roles.begin() : roles.end(), kBias);
  if (sum) roles.insert(lsum ? roles.begin() : roles.end(), kResidual);
  const bool residual_is_data = sum && node.inputs.size() + 1 == roles.size();
  if (residual_is_data) roles.erase(std::find(roles.begin(), roles.end(), kResidual));
  KILN_CHECK(!fused.anchor.empty() && rest.empty() &&
                 (activation.empty() || op != activations.end()) &&
                 node.inputs.size() == roles.size(),
             NotImplementedError)
      << "dnnl: '" << graph.symbol << "' has pattern '" << node.name
      << "', which the dnnl runtime does not run";
  fused.anchor_attrs = AttrsOf(node.attrs, fused.anchor);
  for (size_t i = 0; i < roles.size(); ++i) {
    const JsonEntry input = node.inputs[i];
    switch (roles[i]) {
      case kData: fused.data = input; break;
      case kWeight: fused.weight = input; break;
      case kBias: fused.bias = input; break;
      case kResidual: fused.residual = input; break;
    }
  }
  if (residual_is_data) fused.residual = fused.data;
  if (op != activations.end()) {
    fused.activation = EltwiseOf(op->second, AttrsOf(node.attrs, op->second));
  }
  return fused;
}

/// The post-ops of `fused`: the residual added in place ("sum"), then the activation.
dnnl::primitive_attr PostOps(const Fused& fused) {
  dnnl::post_ops ops;
  if (fused.residual.has_value()) ops.append_sum(1.0F);
  if (fused.activation.has_value()) {
    ops.append_eltwise(1.0F, fused.activation->kind, fused.activation->alpha,
                       fused.activation->beta);
  }
  dnnl::primitive_attr attr = UserScratchpad();
  attr.set_post_ops(ops);
  return attr;
}

/// Adds the step of a primitive with weights (and maybe bias) whose descriptor `pd` chose the
/// layouts: the weights and bias are read into them (once, when constant), and the destination
/// holds the residual first (the sum post-op adds to what is there).
template <typename PrimitiveDesc, typename Primitive>
void AddWeighted(Plan& plan, uint32_t index, const Fused& fused, const PrimitiveDesc& pd,
                 const Value& src, const Value& weights, const std::optional<Value>& bias) {
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, plan.Reordered(src, pd.src_desc()).memory},
      {DNNL_ARG_WEIGHTS, plan.Reordered(weights, pd.weights_desc()).memory},
  };
  if (bias.has_value()) args[DNNL_ARG_BIAS] = plan.Reordered(*bias, pd.bias_desc()).memory;
  // The sum post-op adds to what the destination holds: the residual itself when nothing
  // reads it later (and it is not the source), else a copy of it.
  const bool residual_is_source = fused.residual.has_value() &&
                                  fused.residual->node == fused.data.node &&
                                  fused.residual->index == fused.data.index;
  std::optional<memory> dst;
  if (fused.residual.has_value() && !residual_is_source) {
    dst = plan.TakeOver(*fused.residual, {index, 0}, index, pd.dst_desc());
  }
  if (!dst.has_value()) {
    dst = plan.Define({index, 0}, pd.dst_desc());
    if (fused.residual.has_value()) plan.AddCopy(plan.Get(*fused.residual).memory, *dst);
  }
  args[DNNL_ARG_DST] = *dst;
  plan.AddStep(Primitive(pd), std::move(args));
}

void BuildConv2D(Plan& plan, uint32_t index, const Fused& fused) {
  const runtime::JsonGraph& graph = plan.graph();
  const std::vector<int64_t>& data = graph.spec(fused.data).shape;
  const std::vector<int64_t>& weight = graph.spec(fused.weight).shape;
  const std::vector<int64_t>& out = graph.nodes[index].outputs[0].shape;
  const int64_t groups = fused.anchor_attrs.at(String("groups")).cast<int64_t>();
  // Grouped weights are (G, O/G, C/G, KH, KW) to oneDNN: the same bytes as Kiln's (O, C/G, ...).
  const Dims weight_dims = groups == 1
                               ? Dims(weight.begin(), weight.end())
                               : Dims{groups, weight[0] / groups, weight[1], weight[2], weight[3]};
  const Dims padding = IntsAttr(fused.anchor_attrs, "padding");  // top, left, bottom, right
  const Dims out_dims(out.begin(), out.end());
  const memory::desc bias_desc = fused.bias.has_value() ? AnyDesc({out[1]}) : memory::desc();
  const dnnl::convolution_forward::primitive_desc pd(
      {prop_kind::forward_inference,
       algorithm::convolution_direct,
       AnyDesc(Dims(data.begin(), data.end())),
       AnyDesc(weight_dims),
       bias_desc,
       AnyDesc(out_dims),
       IntsAttr(fused.anchor_attrs, "strides"),
       OneDnnDilation(IntsAttr(fused.anchor_attrs, "dilation")),
       {padding[0], padding[1]},
       {padding[2], padding[3]}},
      PostOps(fused), plan.engine());
  const Value weights = plan.View(plan.Get(fused.weight), PlainDesc(weight_dims));
  std::optional<Value> bias;
  if (fused.bias.has_value()) bias = plan.View(plan.Get(*fused.bias), PlainDesc({out[1]}));
  AddWeighted<dnnl::convolution_forward::primitive_desc, dnnl::convolution_forward>(
      plan, index, fused, pd, plan.Get(fused.data), weights, bias);
}

/// A row-major tensor of dimensions `stored`, seen with its last two dimensions swapped when
/// `transpose` (a strided view, which oneDNN's matmul reads directly).
memory::desc StridedDesc(Dims stored, bool transpose) {
  Dims strides = RowMajorStrides(stored);
  if (transpose) {
    std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
    std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  }
  return {stored, memory::data_type::f32, strides};
}

/// Weights that are constant get the layout the primitive prefers (reordered once at Init);
/// others are read as they are.
memory::desc WeightsDesc(const Value& weights) {
  return weights.constant ? AnyDesc(weights.memory.get_desc().dims()) : weights.memory.get_desc();
}

/// nn.dense, matmul and nn.batch_matmul as oneDNN's matmul, whose operands are strided views:
/// dense's weight (N, K) is seen as (1..., K, N), batch_matmul's transposes swap strides, and
/// numpy's batch broadcasting is oneDNN's (dimensions of 1 prepended to the shorter operand).
void BuildProduct(Plan& plan, uint32_t index, const Fused& fused) {
  const runtime::JsonGraph& graph = plan.graph();
  const std::vector<int64_t>& out = graph.nodes[index].outputs[0].shape;
  const bool dense = fused.anchor == "nn.dense";
  const bool batch = fused.anchor == "nn.batch_matmul";
  const bool transpose_a = batch && fused.anchor_attrs.at(String("transpose_a")).cast<bool>();
  const bool transpose_b =
      dense || (batch && fused.anchor_attrs.at(String("transpose_b")).cast<bool>());
  const Value src =
      plan.View(plan.Get(fused.data),
                StridedDesc(PadRank(graph.spec(fused.data).shape, out.size()), transpose_a));
  const Value weights =
      plan.View(plan.Get(fused.weight),
                StridedDesc(PadRank(graph.spec(fused.weight).shape, out.size()), transpose_b));
  std::optional<Value> bias;
  if (fused.bias.has_value()) {
    bias = plan.View(plan.Get(*fused.bias), PlainDesc(PadRank({out.back()}, out.size())));
  }
  const dnnl::matmul::primitive_desc pd(
      {src.memory.get_desc(), WeightsDesc(weights),
       bias.has_value() ? AnyDesc(bias->memory.get_desc().dims()) : memory::desc(), PlainDesc(out)},
      PostOps(fused), plan.engine());
  AddWeighted<dnnl::matmul::primitive_desc, dnnl::matmul>(plan, index, fused, pd, src, weights,
                                                          bias);
}

void BuildFused(Plan& plan, uint32_t index, const Fused& fused) {
  fused.anchor == "nn.conv2d" ? BuildConv2D(plan, index, fused) : BuildProduct(plan, index, fused);
}

// ---- pooling ----

struct Window {
  Dims kernel, strides, dilation, padding;  ///< padding: top, left, bottom, right
};

void BuildPool(Plan& plan, uint32_t index, algorithm kind, const Window& window) {
  const JsonNode& node = plan.graph().nodes[index];
  const Value& src = plan.Get(node.inputs[0]);
  const std::vector<int64_t>& in = plan.graph().spec(node.inputs[0]).shape;
  const std::vector<int64_t>& out = node.outputs[0].shape;
  // A ceil_mode window that ends past the right padding needs that much more padding on
  // oneDNN's side, which it does not count (nor does Kiln) in an average without padding.
  Dims right(2);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t last_end =
        (out[2 + i] - 1) * window.strides[i] + (window.kernel[i] - 1) * window.dilation[i] + 1;
    right[i] = std::max(window.padding[2 + i], last_end - in[2 + i] - window.padding[i]);
  }
  const dnnl::pooling_v2_forward::primitive_desc pd({prop_kind::forward_inference,
                                                     kind,
                                                     src.memory.get_desc(),
                                                     AnyDesc(Dims(out.begin(), out.end())),
                                                     window.strides,
                                                     window.kernel,
                                                     OneDnnDilation(window.dilation),
                                                     {window.padding[0], window.padding[1]},
                                                     right},
                                                    UserScratchpad(), plan.engine());
  const memory dst = plan.Define({index, 0}, pd.dst_desc());
  plan.AddStep(dnnl::pooling_v2_forward(pd), {{DNNL_ARG_SRC, src.memory}, {DNNL_ARG_DST, dst}});
}

void BuildWindowPool(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  algorithm kind = algorithm::pooling_max;
  if (node.name == "nn.avg_pool2d") {
    kind = node.attrs.at(String("count_include_pad")).cast<bool>()
               ? algorithm::pooling_avg_include_padding
               : algorithm::pooling_avg_exclude_padding;
  }
  BuildPool(plan, index, kind,
            {IntsAttr(node.attrs, "pool_size"), IntsAttr(node.attrs, "strides"),
             IntsAttr(node.attrs, "dilation"), IntsAttr(node.attrs, "padding")});
}

void BuildGlobalPool(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  const std::vector<int64_t>& in = plan.graph().spec(node.inputs[0]).shape;
  BuildPool(plan, index,
            node.name == "nn.global_max_pool2d" ? algorithm::pooling_max
                                                : algorithm::pooling_avg_exclude_padding,
            {{in[2], in[3]}, {1, 1}, {1, 1}, {0, 0, 0, 0}});
}

// ---- normalization and softmax ----

void BuildSoftmax(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  const std::vector<int64_t>& shape = node.outputs[0].shape;
  const Value src = plan.Reordered(plan.Get(node.inputs[0]), PlainDesc(shape));
  auto axis = static_cast<int>(node.attrs.at(String("axis")).cast<int64_t>());
  if (axis < 0) axis += static_cast<int>(shape.size());
  const memory::desc& desc = src.memory.get_desc();
  memory dst;
  dnnl::primitive primitive;
  if (node.name == "nn.log_softmax") {
    const dnnl::logsoftmax_forward::primitive_desc pd({prop_kind::forward_inference, desc, axis},
                                                      UserScratchpad(), plan.engine());
    dst = plan.Define({index, 0}, pd.dst_desc());
    primitive = dnnl::logsoftmax_forward(pd);
  } else {
    const dnnl::softmax_forward::primitive_desc pd({prop_kind::forward_inference, desc, axis},
                                                   UserScratchpad(), plan.engine());
    dst = plan.Define({index, 0}, pd.dst_desc());
    primitive = dnnl::softmax_forward(pd);
  }
  plan.AddStep(primitive, {{DNNL_ARG_SRC, src.memory}, {DNNL_ARG_DST, dst}});
}

/// The per-channel (C,) operand `entry` (gamma, beta, mean, variance) as oneDNN reads it.
memory ChannelOperand(Plan& plan, JsonEntry entry, int64_t channels) {
  return plan.View(plan.Get(entry), PlainDesc({channels})).memory;
}

void BuildLayerNorm(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  const std::vector<int64_t>& shape = node.outputs[0].shape;
  const Value src = plan.Reordered(plan.Get(node.inputs[0]), PlainDesc(shape));
  const dnnl::layer_normalization_forward::primitive_desc pd(
      {prop_kind::forward_inference, src.memory.get_desc(), FloatAttr(node.attrs, "epsilon"),
       dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift},
      UserScratchpad(), plan.engine());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src.memory},
      {DNNL_ARG_SCALE, ChannelOperand(plan, node.inputs[1], shape.back())},
      {DNNL_ARG_SHIFT, ChannelOperand(plan, node.inputs[2], shape.back())},
      {DNNL_ARG_MEAN, memory(pd.mean_desc(), plan.engine())},
      {DNNL_ARG_VARIANCE, memory(pd.variance_desc(), plan.engine())},
  };
  args[DNNL_ARG_DST] = plan.Define({index, 0}, pd.dst_desc());
  plan.AddStep(dnnl::layer_normalization_forward(pd), std::move(args));
}

void BuildBatchNorm(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  const Value& src = plan.Get(node.inputs[0]);
  const int64_t channels = node.outputs[0].shape[1];
  const dnnl::batch_normalization_forward::primitive_desc pd(
      {prop_kind::forward_inference, src.memory.get_desc(), FloatAttr(node.attrs, "epsilon"),
       dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
           dnnl::normalization_flags::use_shift},
      UserScratchpad(), plan.engine());
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, src.memory},
      {DNNL_ARG_SCALE, ChannelOperand(plan, node.inputs[1], channels)},
      {DNNL_ARG_SHIFT, ChannelOperand(plan, node.inputs[2], channels)},
      {DNNL_ARG_MEAN, ChannelOperand(plan, node.inputs[3], channels)},
      {DNNL_ARG_VARIANCE, ChannelOperand(plan, node.inputs[4], channels)},
  };
  args[DNNL_ARG_DST] = plan.Define({index, 0}, pd.dst_desc());
  plan.AddStep(dnnl::batch_normalization_forward(pd), std::move(args));
}

// ---- binary ----

/// add, subtract, ...: the operand of the result's shape is oneDNN's first source, in its own
/// layout; the other is read in that layout too, or broadcast from a row-major view. A layout
/// oneDNN cannot broadcast into is made row-major first.
void BuildBinary(Plan& plan, uint32_t index, algorithm kind) {
  const JsonNode& node = plan.graph().nodes[index];
  const std::vector<int64_t>& out = node.outputs[0].shape;
  const bool swap = plan.graph().spec(node.inputs[0]).shape != out;
  const Value& first = plan.Get(node.inputs[swap ? 1 : 0]);
  const JsonEntry other = node.inputs[swap ? 0 : 1];
  const bool broadcast = plan.graph().spec(other).shape != out;
  const memory::desc broadcast_desc =
      PlainDesc(PadRank(plan.graph().spec(other).shape, out.size()));
  const auto make = [&](const memory::desc& src0) {
    return dnnl::binary::primitive_desc(
        {kind, src0, broadcast ? broadcast_desc : src0, AnyDesc(Dims(out.begin(), out.end()))},
        UserScratchpad(), plan.engine());
  };
  std::optional<dnnl::binary::primitive_desc> pd;
  try {
    pd.emplace(make(first.memory.get_desc()));
  } catch (const dnnl::error&) {
    pd.emplace(make(PlainDesc(out)));
  }
  const memory src0 = plan.Reordered(first, pd->src_desc(0)).memory;
  const memory src1 = broadcast ? plan.View(plan.Get(other), broadcast_desc).memory
                                : plan.Reordered(plan.Get(other), pd->src_desc(1)).memory;
  const memory dst = InPlaceOrNew(plan, node.inputs[swap ? 1 : 0], index, pd->dst_desc());
  plan.AddStep(dnnl::binary(*pd),
               {{DNNL_ARG_SRC_0, src0}, {DNNL_ARG_SRC_1, src1}, {DNNL_ARG_DST, dst}});
}

// ---- layout ops: views and reorders ----

/// A reshape of a row-major value is a view of its bytes: no step (a blocked value is made
/// row-major first).
void BuildReshape(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  plan.Alias({index, 0}, plan.View(plan.Get(node.inputs[0]), PlainDesc(node.outputs[0].shape)));
}

/// A transpose is a reorder from a view of the input with permuted dimensions and strides.
void BuildTranspose(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  const std::vector<int64_t>& in = plan.graph().spec(node.inputs[0]).shape;
  const Dims strides = RowMajorStrides(Dims(in.begin(), in.end()));
  Dims axes(in.size());
  std::iota(axes.rbegin(), axes.rend(), 0);  // None reverses the axes
  if (const std::optional<Any> given = node.attrs.Get(String("axes")); given && !given->is_none()) {
    axes = IntsAttr(node.attrs, "axes");
  }
  Dims dims, permuted;
  for (int64_t axis : axes) {
    axis = axis < 0 ? axis + static_cast<int64_t>(in.size()) : axis;
    dims.push_back(in[axis]);
    permuted.push_back(strides[axis]);
  }
  const Value src =
      plan.View(plan.Get(node.inputs[0]), memory::desc(dims, memory::data_type::f32, permuted));
  plan.AddCopy(src.memory, plan.Define({index, 0}, PlainDesc(node.outputs[0].shape)));
}

/// A strided_slice with unit steps is a reorder from a view of the input at an offset.
void BuildStridedSlice(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  const std::vector<int64_t>& in = plan.graph().spec(node.inputs[0]).shape;
  const std::vector<int64_t>& out = node.outputs[0].shape;
  const auto rank = static_cast<int64_t>(in.size());
  const Dims begin = IntsAttr(node.attrs, "begin");
  Dims axes(begin.size());
  std::iota(axes.begin(), axes.end(), 0);  // None: the first len(begin) axes
  if (const std::optional<Any> given = node.attrs.Get(String("axes")); given && !given->is_none()) {
    axes = IntsAttr(node.attrs, "axes");
  }
  const Dims strides = RowMajorStrides(Dims(in.begin(), in.end()));
  memory::desc view(Dims(out.begin(), out.end()), memory::data_type::f32, strides);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    const int64_t extent = in[axis];
    const int64_t start = begin[i] < 0 ? begin[i] + extent : begin[i];
    view.data.offset0 += std::clamp<int64_t>(start, 0, extent) * strides[axis];
  }
  const Value src = plan.View(plan.Get(node.inputs[0]), view);
  plan.AddCopy(src.memory, plan.Define({index, 0}, PlainDesc(out)));
}

/// concatenate (its tuple's fields are the node's inputs): oneDNN's concat, in the inputs'
/// layouts when it can (channels of blocked convolution outputs), row-major otherwise.
void BuildConcatenate(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  const std::vector<int64_t>& out = node.outputs[0].shape;
  auto axis = static_cast<int>(node.attrs.at(String("axis")).cast<int64_t>());
  if (axis < 0) axis += static_cast<int>(out.size());
  std::vector<memory::desc> own, row_major;
  for (const JsonEntry& input : node.inputs) {
    own.push_back(plan.Get(input).memory.get_desc());
    row_major.push_back(PlainDesc(plan.graph().spec(input).shape));
  }
  std::optional<dnnl::concat::primitive_desc> pd;
  try {
    pd.emplace(AnyDesc(Dims(out.begin(), out.end())), axis, own, plan.engine(), UserScratchpad());
  } catch (const dnnl::error&) {
    pd.emplace(PlainDesc(out), axis, row_major, plan.engine(), UserScratchpad());
  }
  std::unordered_map<int, memory> args;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const auto arg = static_cast<int>(i);
    args[DNNL_ARG_MULTIPLE_SRC + arg] =
        plan.Reordered(plan.Get(node.inputs[i]), pd->src_desc(arg)).memory;
  }
  args[DNNL_ARG_DST] = plan.Define({index, 0}, pd->dst_desc());
  plan.AddStep(dnnl::concat(*pd), std::move(args));
}

// ---- dispatch ----

using Builder = std::function<void(Plan&, uint32_t)>;

const std::map<std::string, Builder>& Builders() {
  static const std::map<std::string, Builder> builders = [] {
    std::map<std::string, Builder> table = {
        {"nn.max_pool2d", BuildWindowPool},
        {"nn.avg_pool2d", BuildWindowPool},
        {"nn.global_max_pool2d", BuildGlobalPool},
        {"nn.global_avg_pool2d", BuildGlobalPool},
        {"nn.softmax", BuildSoftmax},
        {"nn.log_softmax", BuildSoftmax},
        {"nn.layer_norm", BuildLayerNorm},
        {"nn.batch_norm", BuildBatchNorm},
        {"reshape", BuildReshape},
        {"transpose", BuildTranspose},
        {"strided_slice", BuildStridedSlice},
        {"concatenate", BuildConcatenate},
    };
    // The anchors of patterns, alone: a primitive without post-ops.
    for (const char* anchor : {"nn.conv2d", "nn.dense", "matmul", "nn.batch_matmul"}) {
      table.emplace(anchor, [anchor](Plan& plan, uint32_t index) {
        const JsonNode& node = plan.graph().nodes[index];
        Fused fused;
        fused.anchor = anchor;
        fused.anchor_attrs = node.attrs;
        fused.data = node.inputs[0];
        fused.weight = node.inputs[1];
        BuildFused(plan, index, fused);
      });
    }
    const std::map<std::string, algorithm> binaries = {
        {"add", algorithm::binary_add},      {"subtract", algorithm::binary_sub},
        {"multiply", algorithm::binary_mul}, {"divide", algorithm::binary_div},
        {"maximum", algorithm::binary_max},  {"minimum", algorithm::binary_min},
    };
    for (const auto& binary : binaries) {
      const algorithm kind = binary.second;
      table.emplace(binary.first,
                    [kind](Plan& plan, uint32_t index) { BuildBinary(plan, index, kind); });
    }
    return table;
  }();
  return builders;
}

}  // namespace

void BuildNode(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  if (node.composite && node.name == "dnnl.gelu_erf") {
    BuildEltwise(plan, index, {algorithm::eltwise_gelu_erf});
    return;
  }
  if (node.composite) {
    BuildFused(plan, index, ParseFused(plan.graph(), node));
    return;
  }
  if (std::optional<Eltwise> eltwise = EltwiseOf(node.name, node.attrs)) {
    BuildEltwise(plan, index, *eltwise);
    return;
  }
  auto builder = Builders().find(node.name);
  KILN_CHECK(builder != Builders().end(), NotImplementedError)
      << "dnnl: '" << plan.graph().symbol << "' has op '" << node.name
      << "', which the dnnl runtime does not run";
  builder->second(plan, index);
}

}  // namespace dnnl_plugin
}  // namespace kiln
