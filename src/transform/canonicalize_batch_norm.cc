// CanonicalizeBatchNorm: inference batch_norm is a per-channel affine map,
//   y = x * scale + shift,  scale = gamma / sqrt(var + epsilon),  shift = beta - mean * scale.
// After a conv2d or dense with a constant weight (and at most a constant per-channel bias) that
// nothing else reads, scale goes into the weight and shift into the bias, so the batch_norm
// costs nothing at run time. Anywhere else it becomes a multiply and an add of constants.
// Only float32 is rewritten; other batch_norms are left for their kernel.
#include <kiln/transform/passes.h>

#include <cmath>
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

Call MakeCall(const char* op, Array<Expr> args) { return Call(ir::Op::Get(op), std::move(args)); }

std::optional<std::vector<float>> ConstantValues(const Expr& expr) {
  if (expr.as<ir::ConstantObj>() == nullptr) return std::nullopt;
  return Float32Values(Downcast<ir::Constant>(expr));
}

struct Affine {
  std::vector<float> scale;
  std::vector<float> shift;
};

/// The per-channel affine map of a float32 batch_norm with constant parameters, or nullopt.
std::optional<Affine> ReadAffine(const Call& bn) {
  std::vector<std::vector<float>> params;
  for (int64_t i = 1; i <= 4; ++i) {
    std::optional<std::vector<float>> values = ConstantValues(bn->args()[i]);
    if (!values.has_value()) return std::nullopt;
    params.push_back(std::move(*values));
  }
  const auto epsilon = static_cast<float>(bn->attrs().Get(String("epsilon"))->cast<double>());
  const std::vector<float>& gamma = params[0];
  Affine affine{std::vector<float>(gamma.size()), std::vector<float>(gamma.size())};
  for (size_t c = 0; c < gamma.size(); ++c) {
    affine.scale[c] = gamma[c] / std::sqrt(params[3][c] + epsilon);
    affine.shift[c] = params[1][c] - params[2][c] * affine.scale[c];
  }
  return affine;
}

/// `weight` (channels first) with each channel's elements multiplied by its scale.
std::vector<float> ScaleChannels(std::vector<float> weight, const std::vector<float>& scale) {
  const size_t per_channel = weight.size() / scale.size();
  for (size_t i = 0; i < weight.size(); ++i) weight[i] *= scale[i / per_channel];
  return weight;
}

/// The shape of a per-channel constant that broadcasts along `axis` of a rank-`rank` tensor:
/// (C, 1, ..., 1) with rank - 1 - axis ones.
std::vector<int64_t> ChannelShape(int64_t channels, int64_t axis, int64_t rank) {
  std::vector<int64_t> shape{channels};
  shape.resize(static_cast<size_t>(rank - axis), 1);
  return shape;
}

class BatchNormCanonicalizer : public TypedMutator {
 public:
  BatchNormCanonicalizer(ir::IRModule mod, const ir::Function& func)
      : TypedMutator(std::move(mod)), uses_(CountUses(func)) {}

 protected:
  Expr RewriteCall(const Call& pre, const Call& call) override {
    if (AsCallOf(call, "nn.batch_norm") == nullptr) return call;
    if (!DataTypeEqual(ShapeDType(call), DLDataType{kDLFloat, 32, 1})) return call;
    std::optional<Affine> affine = ReadAffine(call);
    if (!affine.has_value()) return call;
    const Expr& data = call->args()[0];
    // Only the rank and the channels matter: other extents (a symbolic batch) may be anything.
    const int64_t rank = RankOf(data);
    int64_t axis = call->attrs().Get(String("axis"))->cast<int64_t>();
    axis = axis < 0 ? axis + rank : axis;
    if (uses_[pre->args()[0].get()] == 1) {
      std::optional<Expr> folded = FoldIntoProducer(pre->args()[0], data, *affine, axis, rank);
      if (folded.has_value()) return *folded;
    }
    const auto channels = static_cast<int64_t>(affine->scale.size());
    const std::vector<int64_t> shape = ChannelShape(channels, axis, rank);
    return MakeCall("add",
                    {Typed(MakeCall("multiply", {data, MakeFloat32Constant(affine->scale, shape)})),
                     MakeFloat32Constant(affine->shift, shape)});
  }

 private:
  static DLDataType ShapeDType(const Expr& expr) {
    return expr->checked_type().as<ir::TensorTypeObj>()->dtype();
  }

  /// conv2d / dense, optionally followed by the add of a per-channel constant bias, with the
  /// batch_norm folded in; nullopt when `data` is not of that form. `pre_data` is the input
  /// node `data` was rewritten from, whose graph the use counts describe.
  std::optional<Expr> FoldIntoProducer(const Expr& pre_data, const Expr& data, const Affine& affine,
                                       int64_t axis, int64_t rank) {
    std::vector<float> shift = affine.shift;
    Expr producer = data;
    if (const ir::CallObj* add = AsCallOf(data, "add")) {
      std::optional<std::vector<float>> bias = ConstantValues(add->args()[1]);
      if (!bias.has_value() || bias->size() != shift.size()) return std::nullopt;
      if (StaticShapeOf(add->args()[1]) !=
          ChannelShape(static_cast<int64_t>(shift.size()), axis, rank)) {
        return std::nullopt;
      }
      // A convolution read elsewhere too would need two versions; the general form handles it.
      const ir::CallObj* pre_add = AsCallOf(pre_data, "add");
      if (pre_add == nullptr || uses_[pre_add->args()[0].get()] != 1) return std::nullopt;
      for (size_t c = 0; c < shift.size(); ++c) shift[c] += (*bias)[c] * affine.scale[c];
      producer = add->args()[0];
    }
    const bool conv = AsCallOf(producer, "nn.conv2d") != nullptr && axis == 1;
    const bool dense = AsCallOf(producer, "nn.dense") != nullptr && axis == rank - 1;
    if (!conv && !dense) return std::nullopt;
    const auto* call = producer.as<ir::CallObj>();
    std::optional<std::vector<float>> weight = ConstantValues(call->args()[1]);
    if (!weight.has_value()) return std::nullopt;
    // A constant's shape is static.
    const Expr scaled_weight =
        MakeFloat32Constant(ScaleChannels(*weight, affine.scale), *StaticShapeOf(call->args()[1]));
    const Expr scaled = Typed(Call(call->op(), {call->args()[0], scaled_weight}, call->attrs()));
    const auto channels = static_cast<int64_t>(shift.size());
    return MakeCall("add",
                    {scaled, MakeFloat32Constant(shift, ChannelShape(channels, axis, rank))});
  }

  std::unordered_map<const Object*, int> uses_;
};

}  // namespace

Pass CanonicalizeBatchNorm() {
  return CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& mod, const PassContext& /*ctx*/) {
        return BatchNormCanonicalizer(mod, func).RewriteFunction(func);
      },
      PassInfo{"transform.CanonicalizeBatchNorm", 1, false});
}

KILN_REGISTER_PASS(CanonicalizeBatchNorm);

}  // namespace transform
}  // namespace kiln
