// libkiln_runtime_dnnl.so, one builder per op: each turns an op node of the JSON graph into a
// oneDNN primitive of the plan (dnnl_plan.h). Compute-heavy primitives (convolution, matmul)
// choose their layouts (format_tag::any); layout-agnostic ones (eltwise, pooling, batch norm,
// binary) take their input's layout as it is, so blocked layouts flow through a region and
// reorders happen at its boundary. Composite nodes (dnnl_patterns.cc) become one primitive
// with post-ops.
#include <kiln/ffi/error.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

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
      {"nn.relu", algorithm::eltwise_relu},      {"sigmoid", algorithm::eltwise_logistic},
      {"tanh", algorithm::eltwise_tanh},         {"exp", algorithm::eltwise_exp},
      {"log", algorithm::eltwise_log},           {"sqrt", algorithm::eltwise_sqrt},
      {"abs", algorithm::eltwise_abs},           {"nn.gelu", algorithm::eltwise_gelu_erf},
      {"nn.softplus", algorithm::eltwise_soft_relu}, {"clip", algorithm::eltwise_clip},
      {"nn.leaky_relu", algorithm::eltwise_relu}, {"nn.elu", algorithm::eltwise_elu},
  };
  auto kind = kinds.find(op);
  if (kind == kinds.end()) return std::nullopt;
  Eltwise eltwise{kind->second};
  if (op == "clip") {
    eltwise.alpha = FloatAttr(attrs, "a_min");
    eltwise.beta = FloatAttr(attrs, "a_max");
  } else if (op == "nn.leaky_relu" || op == "nn.elu") {
    eltwise.alpha = FloatAttr(attrs, "alpha");
  }
  return eltwise;
}

void BuildEltwise(Plan& plan, uint32_t index, const Eltwise& eltwise) {
  const JsonNode& node = plan.graph().nodes[index];
  const Value& src = plan.Get(node.inputs[0]);
  const dnnl::eltwise_forward::primitive_desc pd(
      {prop_kind::forward_inference, eltwise.kind, src.memory.get_desc(), eltwise.alpha,
       eltwise.beta},
      plan.engine());
  const memory dst = plan.Define({index, 0}, pd.dst_desc());
  plan.AddStep(dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, src.memory}, {DNNL_ARG_DST, dst}});
}

// ---- convolution and dense, with their fused post-ops ----

/// A composite node's parts (dnnl_patterns.cc): which inputs are which, and the post-ops.
struct Fused {
  std::string anchor;  ///< "nn.conv2d" or "nn.dense"
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

/// Reads `dnnl.<conv2d|dense>[_bias][_sum|_rsum][_<activation>]` and the node's inputs.
Fused ParseFused(const runtime::JsonGraph& graph, const JsonNode& node) {
  static const std::map<std::string, std::string> activations = {
      {"relu", "nn.relu"}, {"clip", "clip"},   {"gelu", "nn.gelu"},
      {"sigmoid", "sigmoid"}, {"tanh", "tanh"}, {"leaky_relu", "nn.leaky_relu"},
  };
  std::string rest = node.name;
  Fused fused;
  if (Consume(&rest, "dnnl.conv2d")) {
    fused.anchor = "nn.conv2d";
  } else if (Consume(&rest, "dnnl.dense")) {
    fused.anchor = "nn.dense";
  }
  const bool bias = Consume(&rest, "_bias");
  const bool rsum = Consume(&rest, "_rsum");
  const bool sum = !rsum && Consume(&rest, "_sum");
  std::string activation;
  if (Consume(&rest, "_")) activation = rest;
  auto op = activations.find(activation);
  // MergeComposite passes each distinct expression once: a residual that is the data itself
  // (a shape-preserving convolution of x added to x) is not an input of its own.
  const size_t inputs = 2 + (bias ? 1 : 0) + (sum || rsum ? 1 : 0);
  const bool residual_is_data = (sum || rsum) && node.inputs.size() + 1 == inputs;
  KILN_CHECK(!fused.anchor.empty() && (activation.empty() || op != activations.end()) &&
                 (node.inputs.size() == inputs || residual_is_data),
             NotImplementedError)
      << "dnnl: '" << graph.symbol << "' has pattern '" << node.name
      << "', which the dnnl runtime does not run";
  fused.anchor_attrs = AttrsOf(node.attrs, fused.anchor);
  size_t next = 0;
  if (rsum && !residual_is_data) fused.residual = node.inputs[next++];
  fused.data = node.inputs[next++];
  fused.weight = node.inputs[next++];
  if (bias) fused.bias = node.inputs[next++];
  if (sum && !residual_is_data) fused.residual = node.inputs[next++];
  if (residual_is_data) fused.residual = fused.data;
  if (op != activations.end()) fused.activation = EltwiseOf(op->second, AttrsOf(node.attrs, op->second));
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
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  return attr;
}

/// Adds the step of a primitive with weights (and maybe bias) whose descriptor `pd` chose the
/// layouts: the weights and bias are read into them (once, when constant), the residual is
/// copied into the destination first (the sum post-op adds to what is there).
template <typename PrimitiveDesc, typename Primitive>
void AddWeighted(Plan& plan, uint32_t index, const Fused& fused, const PrimitiveDesc& pd,
                 const Value& src, const Value& weights, const std::optional<Value>& bias) {
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, plan.Reordered(src, pd.src_desc()).memory},
      {DNNL_ARG_WEIGHTS, plan.Reordered(weights, pd.weights_desc()).memory},
  };
  if (bias.has_value()) args[DNNL_ARG_BIAS] = plan.Reordered(*bias, pd.bias_desc()).memory;
  const memory dst = plan.Define({index, 0}, pd.dst_desc());
  if (fused.residual.has_value()) plan.AddCopy(plan.Get(*fused.residual).memory, dst);
  args[DNNL_ARG_DST] = dst;
  plan.AddStep(Primitive(pd), std::move(args));
}

void BuildConv2D(Plan& plan, uint32_t index, const Fused& fused) {
  const runtime::JsonGraph& graph = plan.graph();
  const std::vector<int64_t>& data = graph.spec(fused.data).shape;
  const std::vector<int64_t>& weight = graph.spec(fused.weight).shape;
  const std::vector<int64_t>& out = graph.nodes[index].outputs[0].shape;
  const int64_t groups = fused.anchor_attrs.at(String("groups")).cast<int64_t>();
  // Grouped weights are (G, O/G, C/G, KH, KW) to oneDNN: the same bytes as Kiln's (O, C/G, ...).
  const Dims weight_dims = groups == 1 ? Dims(weight.begin(), weight.end())
                                       : Dims{groups, weight[0] / groups, weight[1], weight[2],
                                              weight[3]};
  const Dims padding = IntsAttr(fused.anchor_attrs, "padding");  // top, left, bottom, right
  const Dims out_dims(out.begin(), out.end());
  const memory::desc bias_desc =
      fused.bias.has_value() ? AnyDesc({out[1]}) : memory::desc();
  const dnnl::convolution_forward::primitive_desc pd(
      {prop_kind::forward_inference, algorithm::convolution_direct,
       AnyDesc(Dims(data.begin(), data.end())), AnyDesc(weight_dims), bias_desc,
       AnyDesc(out_dims), IntsAttr(fused.anchor_attrs, "strides"),
       OneDnnDilation(IntsAttr(fused.anchor_attrs, "dilation")), {padding[0], padding[1]},
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
  Dims strides(stored.size(), 1);
  for (size_t i = stored.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * stored[i];
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

/// nn.dense as oneDNN's matmul: data (..., K) times weight (N, K) seen as (1..., K, N).
void BuildDense(Plan& plan, uint32_t index, const Fused& fused) {
  const runtime::JsonGraph& graph = plan.graph();
  const std::vector<int64_t>& data = graph.spec(fused.data).shape;
  const std::vector<int64_t>& weight = graph.spec(fused.weight).shape;
  const std::vector<int64_t>& out = graph.nodes[index].outputs[0].shape;
  const Value src = plan.View(plan.Get(fused.data), PlainDesc(data));
  const Value weights =
      plan.View(plan.Get(fused.weight), StridedDesc(PadRank(weight, data.size()), true));
  std::optional<Value> bias;
  if (fused.bias.has_value()) {
    bias = plan.View(plan.Get(*fused.bias), PlainDesc(PadRank({out.back()}, out.size())));
  }
  const dnnl::matmul::primitive_desc pd(
      {src.memory.get_desc(), WeightsDesc(weights),
       bias.has_value() ? AnyDesc(bias->memory.get_desc().dims()) : memory::desc(),
       PlainDesc(out)},
      PostOps(fused), plan.engine());
  AddWeighted<dnnl::matmul::primitive_desc, dnnl::matmul>(plan, index, fused, pd, src, weights,
                                                         bias);
}

/// matmul (numpy, batch dimensions broadcast) and nn.batch_matmul (transposes as strides).
void BuildMatMul(Plan& plan, uint32_t index) {
  const JsonNode& node = plan.graph().nodes[index];
  const std::vector<int64_t>& out = node.outputs[0].shape;
  const bool batch = node.name == "nn.batch_matmul";
  const bool transpose_a = batch && node.attrs.at(String("transpose_a")).cast<bool>();
  const bool transpose_b = batch && node.attrs.at(String("transpose_b")).cast<bool>();
  const Value lhs = plan.View(
      plan.Get(node.inputs[0]),
      StridedDesc(PadRank(plan.graph().spec(node.inputs[0]).shape, out.size()), transpose_a));
  const Value rhs = plan.View(
      plan.Get(node.inputs[1]),
      StridedDesc(PadRank(plan.graph().spec(node.inputs[1]).shape, out.size()), transpose_b));
  const dnnl::matmul::primitive_desc pd(
      {lhs.memory.get_desc(), WeightsDesc(rhs), PlainDesc(out)}, plan.engine());
  AddWeighted<dnnl::matmul::primitive_desc, dnnl::matmul>(plan, index, Fused{}, pd, lhs, rhs,
                                                         std::nullopt);
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
  const dnnl::pooling_v2_forward::primitive_desc pd(
      {prop_kind::forward_inference, kind, src.memory.get_desc(),
       AnyDesc(Dims(out.begin(), out.end())), window.strides, window.kernel,
       OneDnnDilation(window.dilation), {window.padding[0], window.padding[1]}, right},
      plan.engine());
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
    const dnnl::logsoftmax_forward::primitive_desc pd(
        {prop_kind::forward_inference, desc, axis}, plan.engine());
    dst = plan.Define({index, 0}, pd.dst_desc());
    primitive = dnnl::logsoftmax_forward(pd);
  } else {
    const dnnl::softmax_forward::primitive_desc pd({prop_kind::forward_inference, desc, axis},
                                                   plan.engine());
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
      plan.engine());
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
      plan.engine());
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
  Value src0 = plan.Get(node.inputs[swap ? 1 : 0]);
  const JsonEntry other = node.inputs[swap ? 0 : 1];
  const std::vector<int64_t>& other_shape = plan.graph().spec(other).shape;
  const auto src1_for = [&plan, &other, &other_shape, &out](const Value& first) {
    return other_shape == out
               ? plan.Reordered(plan.Get(other), first.memory.get_desc())
               : plan.View(plan.Get(other), PlainDesc(PadRank(other_shape, out.size())));
  };
  const memory::desc dst_desc = AnyDesc(Dims(out.begin(), out.end()));
  std::optional<dnnl::binary::primitive_desc> pd;
  Value src1;
  try {
    src1 = src1_for(src0);
    pd.emplace(dnnl::binary::desc(kind, src0.memory.get_desc(), src1.memory.get_desc(), dst_desc),
               plan.engine());
  } catch (const dnnl::error&) {
    src0 = plan.Reordered(src0, PlainDesc(out));
    src1 = src1_for(src0);
    pd.emplace(dnnl::binary::desc(kind, src0.memory.get_desc(), src1.memory.get_desc(), dst_desc),
               plan.engine());
  }
  const memory dst = plan.Define({index, 0}, pd->dst_desc());
  plan.AddStep(dnnl::binary(*pd),
               {{DNNL_ARG_SRC_0, src0.memory}, {DNNL_ARG_SRC_1, src1.memory}, {DNNL_ARG_DST, dst}});
}

// ---- dispatch ----

using Builder = std::function<void(Plan&, uint32_t)>;

const std::map<std::string, Builder>& Builders() {
  static const std::map<std::string, Builder> builders = [] {
    std::map<std::string, Builder> table = {
        {"matmul", BuildMatMul},
        {"nn.batch_matmul", BuildMatMul},
        {"nn.max_pool2d", BuildWindowPool},
        {"nn.avg_pool2d", BuildWindowPool},
        {"nn.global_max_pool2d", BuildGlobalPool},
        {"nn.global_avg_pool2d", BuildGlobalPool},
        {"nn.softmax", BuildSoftmax},
        {"nn.log_softmax", BuildSoftmax},
        {"nn.layer_norm", BuildLayerNorm},
        {"nn.batch_norm", BuildBatchNorm},
    };
    for (const char* anchor : {"nn.conv2d", "nn.dense"}) {
      table.emplace(anchor, [anchor](Plan& plan, uint32_t index) {
        const JsonNode& node = plan.graph().nodes[index];
        Fused fused;
        fused.anchor = anchor;
        fused.anchor_attrs = node.attrs;
        fused.data = node.inputs[0];
        fused.weight = node.inputs[1];
        const std::string name = anchor;
        name == "nn.conv2d" ? BuildConv2D(plan, index, fused) : BuildDense(plan, index, fused);
      });
    }
    const std::map<std::string, algorithm> binaries = {
        {"add", algorithm::binary_add},     {"subtract", algorithm::binary_sub},
        {"multiply", algorithm::binary_mul}, {"divide", algorithm::binary_div},
        {"maximum", algorithm::binary_max}, {"minimum", algorithm::binary_min},
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
  if (node.composite) {
    const Fused fused = ParseFused(plan.graph(), node);
    fused.anchor == "nn.conv2d" ? BuildConv2D(plan, index, fused) : BuildDense(plan, index, fused);
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
