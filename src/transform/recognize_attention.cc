// RecognizeAttention: ONNX has no attention op before opset 23, so exporters spell multi-head
// attention in a dozen ops: each of q, k, v reshaped to split its heads and transposed to put
// them first, q k^T scaled by a constant, a mask added, softmax, times v, transposed back and
// reshaped to merge the heads. The transposes, the scores and the probabilities are each a pass
// over memory; nn.attention reads q, k and v where the projections wrote them and keeps the
// scores in cache. Two spellings are recognized, as the importer gives them:
//   - PyTorch's nn.MultiheadAttention: q, k, v of (seq, batch, embed) reshaped to
//     (seq, batch * heads, head_dim), heads first by transpose [1, 0, 2] (k by [1, 2, 0]), q
//     scaled before the product, the result transposed by [1, 0, 2]: layout SBNH;
//   - Hugging Face's BERT and torch's scaled_dot_product_attention export: q, k, v of
//     (batch, seq, embed) reshaped to (batch, seq, heads, head_dim), transposed by [0, 2, 1, 3]
//     (k by [0, 2, 3, 1]), the scores scaled: layout BSNH.
// Each chain is rewritten only when every shape and axis is exactly that layout, the scales are
// scalar constants, the softmax runs over the keys, the tensors are float32 (the kernel's one
// dtype), and no tensor inside the chain is read from outside it.
#include <kiln/arith/analyzer.h>
#include <kiln/transform/passes.h>
#include <kiln/transform/pattern.h>

#include <optional>
#include <unordered_map>
#include <vector>

#include "constant_util.h"
#include "expr_util.h"
#include "typed_mutator.h"

namespace kiln {
namespace transform {
namespace {

using ir::Call;
using ir::Expr;

/// `x` scaled by a constant (`x / c`, `x * c` or `c * x`), or `x` itself.
struct MaybeScaled {
  Pattern constant = IsConstant();
  Pattern scaled;  ///< the scaled form alone: bound only when the scale is there
  Pattern root;

  explicit MaybeScaled(const Pattern& x) {
    scaled = IsOp("divide")({x, constant}) | IsOp("multiply")({x, constant}) |
             IsOp("multiply")({constant, x});
    root = scaled | x;
  }
};

/// How one exporter splits the heads: the transposes after the reshapes of q (and v), and of k.
/// Both q_axes are their own inverse, so they also merge the heads back.
struct HeadSplit {
  bool merged_batch;  ///< heads merged with the batch into one axis (SBNH) or their own (BSNH)
  std::vector<int64_t> q_axes;
  std::vector<int64_t> k_axes;
};

Pattern Transposed(const Pattern& data, const std::vector<int64_t>& axes) {
  return IsOp("transpose")({data}).HasAttr({{"axes", Array<int64_t>(axes.begin(), axes.end())}});
}

/// The parts of the pattern whose bindings the checks read.
struct AttentionPattern {
  HeadSplit split;
  Pattern q = Wildcard();
  Pattern k = Wildcard();
  Pattern v = Wildcard();
  Pattern mask = Wildcard();
  Pattern q_split = IsOp("reshape")({q});
  Pattern k_split = IsOp("reshape")({k});
  Pattern v_split = IsOp("reshape")({v});
  Pattern q_heads, k_heads, v_heads;
  MaybeScaled q_scaled, k_scaled;
  Pattern scores;
  MaybeScaled scores_scaled;
  Pattern masked, probs, context, merged, root;

  explicit AttentionPattern(HeadSplit head_split)
      : split(std::move(head_split)),
        q_heads(Transposed(q_split, split.q_axes)),
        k_heads(Transposed(k_split, split.k_axes)),
        v_heads(Transposed(v_split, split.q_axes)),
        q_scaled(q_heads),
        k_scaled(k_heads),
        scores(IsOp("matmul")({q_scaled.root, k_scaled.root})),
        scores_scaled(scores) {
    masked = IsOp("add")({scores_scaled.root, mask}) | IsOp("add")({mask, scores_scaled.root});
    probs = IsOp("nn.softmax")({masked | scores_scaled.root});
    context = IsOp("matmul")({probs, v_heads});
    merged = Transposed(context, split.q_axes);
    root = IsOp("reshape")({merged});
  }

  /// The patterns of the tensors inside the chain, which nothing else may read.
  std::vector<Pattern> Interior() const {
    return {q_split, k_split,         v_split,         q_heads, k_heads,
            v_heads, q_scaled.scaled, k_scaled.scaled, scores,  scores_scaled.scaled,
            masked,  probs,           context,         merged};
  }
};

/// A shape whose batch and sequence extents may be symbolic (the model runs at any of them);
/// the hidden and head extents the rewrite reads must be static.
using Extents = std::vector<arith::SizeExpr>;

/// The shape of a float32 tensor expression, or nullopt.
std::optional<Extents> Float32Shape(const Expr& expr) {
  const auto* type = expr->checked_type().as<ir::TensorTypeObj>();
  if (type == nullptr || !DataTypeEqual(type->dtype(), DLDataType{kDLFloat, 32, 1})) {
    return std::nullopt;
  }
  Extents shape;
  for (const ir::Dim& dim : type->shape()) shape.push_back(dim.AsSizeExpr());
  return shape;
}

/// Whether `a` and `b` are the same shape for every value of the sizes (their extents may be
/// written differently: `batch * 4` and `4 * batch`).
bool SameShape(const std::optional<Extents>& a, const std::optional<Extents>& b) {
  if (!a.has_value() || !b.has_value() || a->size() != b->size()) return false;
  const arith::Analyzer analyzer;
  for (size_t i = 0; i < a->size(); ++i) {
    if (!analyzer.CanProveEqual((*a)[i], (*b)[i])) return false;
  }
  return true;
}

/// Extents of the multi-head layout, read off q and the reshape that splits its heads.
struct HeadShape {
  arith::SizeExpr batch;
  int64_t heads = 0;
  int64_t head_dim = 0;
};

/// What the reshape of a (batch, seq, heads * dim) tensor (BSNH) or a (seq, batch, ...) one
/// (SBNH) to split its heads gives.
Extents SplitShape(bool merged_batch, const arith::SizeExpr& batch, const arith::SizeExpr& seq,
                   int64_t heads, int64_t dim) {
  if (merged_batch) return {seq, batch * heads, arith::IntImm(dim)};
  return {batch, seq, arith::IntImm(heads), arith::IntImm(dim)};
}

/// The factor a bound MaybeScaled multiplies by: 1 when absent; nullopt when the constant is
/// not a single value or would broadcast the tensor it scales.
std::optional<double> ScaleFactor(const PatternBinding& binding, const MaybeScaled& scaled) {
  const std::optional<Expr> call = binding.Get(scaled.scaled);
  if (!call.has_value()) return 1.0;
  const auto constant = Downcast<ir::Constant>(binding.at(scaled.constant));
  const std::optional<double> value = UniformValue(constant);
  const auto* scaled_call = call->as<ir::CallObj>();
  const Expr& operand =
      scaled_call->args()[0].same_as(constant) ? scaled_call->args()[1] : scaled_call->args()[0];
  if (!value.has_value() || constant->data().NumElements() != 1 || *value == 0.0 ||
      !SameShape(Float32Shape(operand), Float32Shape(*call))) {
    return std::nullopt;
  }
  const bool divides = Downcast<ir::Op>(scaled_call->op())->name() == "divide";
  return divides ? 1.0 / *value : *value;
}

/// The product of the factors on q, on k^T and on the scores; nullopt when one is not a scalar.
std::optional<double> CombinedScale(const AttentionPattern& pattern,
                                    const PatternBinding& binding) {
  double scale = 1.0;
  for (const MaybeScaled* scaled : {&pattern.q_scaled, &pattern.k_scaled, &pattern.scores_scaled}) {
    const std::optional<double> factor = ScaleFactor(binding, *scaled);
    if (!factor.has_value()) return std::nullopt;
    scale *= *factor;
  }
  return scale;
}

/// Whether the softmax of `probs` runs over the last axis (the keys).
bool SoftmaxOverKeys(const Expr& probs, size_t rank) {
  const auto axis = probs.as<ir::CallObj>()->attrs().Get(String("axis"))->cast<int64_t>();
  return axis == -1 || axis == static_cast<int64_t>(rank) - 1;
}

class AttentionRecognizer : public TypedMutator {
 public:
  AttentionRecognizer(ir::IRModule mod, const ir::Function& func)
      : TypedMutator(std::move(mod)), uses_(CountUses(func)) {}

 protected:
  Expr RewriteCall(const Call& pre, const Call& call) override {
    for (const AttentionPattern& pattern : patterns_) {
      const std::optional<PatternBinding> binding = MatchPattern(pattern.root, call);
      if (!binding.has_value() || !ReadOnlyInside(pattern, pre)) continue;
      if (std::optional<Expr> attention = Rewrite(pattern, *binding)) return *attention;
    }
    return call;
  }

 private:
  /// Whether every tensor inside the chain rooted at `pre` (the input graph, whose uses were
  /// counted) is read by the chain alone.
  bool ReadOnlyInside(const AttentionPattern& pattern, const Call& pre) const {
    const std::optional<PatternBinding> binding = MatchPattern(pattern.root, pre);
    if (!binding.has_value()) return false;
    for (const Pattern& interior : pattern.Interior()) {
      const std::optional<Expr> expr = binding->Get(interior);
      if (!expr.has_value()) continue;
      const auto uses = uses_.find(expr->get());
      if (uses == uses_.end() || uses->second != 1) return false;
    }
    return true;
  }

  /// nn.attention for the matched chain, reshaped as its root was; nullopt when a shape, axis
  /// or constant is not exactly the multi-head layout.
  std::optional<Expr> Rewrite(const AttentionPattern& pattern, const PatternBinding& binding) {
    const bool merged = pattern.split.merged_batch;
    const std::optional<HeadShape> heads = ReadHeads(pattern, binding);
    if (!heads.has_value()) return std::nullopt;
    const std::optional<double> scale = CombinedScale(pattern, binding);
    const std::optional<Extents> scores = Float32Shape(binding.at(pattern.scores));
    const std::optional<Extents> shape = Float32Shape(binding.at(pattern.root));
    if (!scale || !scores || !shape ||
        !SoftmaxOverKeys(binding.at(pattern.probs), scores->size())) {
      return std::nullopt;
    }
    const std::optional<Expr> mask = ReadMask(pattern, binding, *heads, *scores);
    if (!mask.has_value()) return std::nullopt;
    Map<String, Any> attrs;
    attrs.Set(String("num_heads"), heads->heads);
    attrs.Set(String("scale"), *scale);
    attrs.Set(String("layout"), String(merged ? "SBNH" : "BSNH"));
    const Expr attention = Typed(
        Call(ir::Op::Get("nn.attention"),
             {binding.at(pattern.q), binding.at(pattern.k), binding.at(pattern.v), *mask}, attrs));
    if (SameShape(Float32Shape(attention), shape)) return attention;
    return Reshaped(attention, *shape);
  }

  /// Batch, heads and head size when q, k and v are (batch, seq, heads * dim) tensors (SBNH:
  /// (seq, batch, ...)) whose reshapes split exactly their heads, with one batch and head
  /// count, one head size for q and k, and one key sequence for k and v.
  static std::optional<HeadShape> ReadHeads(const AttentionPattern& pattern,
                                            const PatternBinding& binding) {
    const bool merged = pattern.split.merged_batch;
    const std::optional<Extents> q = Float32Shape(binding.at(pattern.q));
    const std::optional<Extents> k = Float32Shape(binding.at(pattern.k));
    const std::optional<Extents> v = Float32Shape(binding.at(pattern.v));
    const std::optional<Extents> q_split = Float32Shape(binding.at(pattern.q_split));
    if (!q || !k || !v || !q_split || q->size() != 3 || k->size() != 3 || v->size() != 3 ||
        q_split->empty()) {
      return std::nullopt;
    }
    // The hidden extents and the head size decide the kernel's layout: they must be static.
    const std::optional<int64_t> q_hidden = (*q)[2].as_int();
    const std::optional<int64_t> k_hidden = (*k)[2].as_int();
    const std::optional<int64_t> v_hidden = (*v)[2].as_int();
    const std::optional<int64_t> head_dim = q_split->back().as_int();
    if (!q_hidden || !k_hidden || !v_hidden || !head_dim || *head_dim <= 0 ||
        *q_hidden % *head_dim != 0 || *k_hidden != *q_hidden) {
      return std::nullopt;
    }
    const size_t batch_axis = merged ? 1 : 0;
    const size_t seq_axis = merged ? 0 : 1;
    HeadShape shape;
    shape.batch = (*q)[batch_axis];
    shape.head_dim = *head_dim;
    shape.heads = *q_hidden / shape.head_dim;
    if (*v_hidden % shape.heads != 0) return std::nullopt;
    const auto split_of = [&](const Extents& x, int64_t dim) {
      return std::optional<Extents>(
          SplitShape(merged, x[batch_axis], x[seq_axis], shape.heads, dim));
    };
    const bool exact =
        SameShape(q_split, split_of(*q, shape.head_dim)) &&
        SameShape(Float32Shape(binding.at(pattern.k_split)), split_of(*k, shape.head_dim)) &&
        SameShape(Float32Shape(binding.at(pattern.v_split)),
                  split_of(*v, *v_hidden / shape.heads)) &&
        SameShape(Extents{(*k)[batch_axis], (*v)[batch_axis], (*v)[seq_axis]},
                  Extents{shape.batch, shape.batch, (*k)[seq_axis]});
    return exact ? std::optional(shape) : std::nullopt;
  }

  /// The mask as nn.attention takes it (broadcast to (batch, heads, seq_q, seq_k)): a scalar 0
  /// when the chain adds none; nullopt when the one it adds is not float32 or would broadcast
  /// the scores to a larger shape.
  std::optional<Expr> ReadMask(const AttentionPattern& pattern, const PatternBinding& binding,
                               const HeadShape& heads, const Extents& scores) {
    if (!binding.Get(pattern.masked).has_value()) return Expr(MakeFloat32Constant({0.F}, {}));
    const Expr mask = binding.at(pattern.mask);
    const std::optional<Extents> shape = Float32Shape(mask);
    if (!shape || shape->size() > scores.size() ||
        !SameShape(Float32Shape(binding.at(pattern.masked)), scores)) {
      return std::nullopt;
    }
    // SBNH scores merge batch and heads into their first axis: a mask that varies along it
    // splits it back.
    if (pattern.split.merged_batch && shape->size() == 3 && (*shape)[0].as_int() != 1 &&
        heads.batch.as_int() != 1) {
      return Reshaped(mask, {heads.batch, arith::IntImm(heads.heads), (*shape)[1], (*shape)[2]});
    }
    return mask;
  }

  /// A reshape of `data` to `shape`, whose symbolic extents the sizes attribute holds as is.
  Expr Reshaped(const Expr& data, const Extents& shape) const {
    Array<Any> newshape;
    for (const arith::SizeExpr& extent : shape) {
      const std::optional<int64_t> constant = extent.as_int();
      newshape.push_back(constant.has_value() ? Any(*constant) : Any(extent));
    }
    Map<String, Any> attrs;
    attrs.Set(String("newshape"), newshape);
    return Typed(Call(ir::Op::Get("reshape"), {data}, attrs));
  }

  const std::vector<AttentionPattern> patterns_ = {
      AttentionPattern(HeadSplit{true, {1, 0, 2}, {1, 2, 0}}),
      AttentionPattern(HeadSplit{false, {0, 2, 1, 3}, {0, 2, 3, 1}}),
  };
  const std::unordered_map<const Object*, int> uses_;
};

}  // namespace

Pass RecognizeAttention() {
  return CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& mod, const PassContext& /*ctx*/) {
        return AttentionRecognizer(mod, func).RewriteFunction(func);
      },
      PassInfo{"transform.RecognizeAttention", 2, false});
}

KILN_REGISTER_PASS(RecognizeAttention);

}  // namespace transform
}  // namespace kiln
