// BlockChannels: Kiln's own convolutions in the channel-blocked layout NCHW16c (docs/design.md
// §48). Each float32 nn.conv2d that blocks well becomes nn.conv2d_nchwc between a
// block_channels and an unblock_channels; the ops after it that work on blocks as they work on
// channels (elementwise ops, per-channel constants, channel concatenations) take the blocked
// value in place of the unblocked one, so that from one convolution to the next nothing changes
// layout. An op that does not take blocks reads the unblock_channels node, one per value
// whoever reads it.
#include <kiln/ir/channel_blocks.h>
#include <kiln/transform/pass_context.h>
#include <kiln/transform/passes.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "../kernels/cpu/cpu_features.h"
#include "constant_util.h"
#include "expr_util.h"
#include "typed_mutator.h"

namespace kiln {
namespace transform {
namespace {

using ir::Call;
using ir::ChannelBlocks;
using ir::Expr;
using ir::kChannelBlock;

/// -1: block where the CPU takes the blocked kernels' AVX-512 build (their tiles need its 32
/// vector registers); 0: never; 1: always.
constexpr const char* kBlockChannels = "transform.block_channels";
KILN_REGISTER_PASS_CONFIG(kBlockChannels, int64_t, -1);

/// Ops whose output lane depends only on the same lane of their inputs and that keep a finite
/// value finite (a padded lane holds a finite value, which the next convolution multiplies by
/// zero): the blocked value takes them as it is.
const std::set<std::string>& LanewiseUnaryOps() {
  static const std::set<std::string> ops = {
      "nn.relu",      "clip",    "sigmoid", "tanh",          "nn.silu",
      "nn.hardswish", "nn.gelu", "nn.elu",  "nn.leaky_relu", "nn.hard_sigmoid",
      "negative",     "abs"};
  return ops;
}
const std::set<std::string>& LanewiseBinaryOps() {
  static const std::set<std::string> ops = {"add", "subtract", "multiply", "maximum", "minimum"};
  return ops;
}

bool IsFloat32(const Expr& expr) {
  const auto* type = expr->checked_type().as<ir::TensorTypeObj>();
  return type != nullptr && type->dtype().code == kDLFloat && type->dtype().bits == 32 &&
         type->dtype().lanes == 1;
}

/// The shape of a float32 tensor expression with each extent or -1 where symbolic.
std::optional<std::vector<int64_t>> ExtentsOf(const Expr& expr) {
  if (!IsFloat32(expr)) return std::nullopt;
  std::vector<int64_t> shape;
  for (const ir::Dim& dim : expr->checked_type().as<ir::TensorTypeObj>()->shape()) {
    shape.push_back(dim.as_static().value_or(-1));
  }
  return shape;
}

/// The static channel count of a float32 (N, C, H, W) expression.
std::optional<int64_t> ChannelsOf(const Expr& expr) {
  const std::optional<std::vector<int64_t>> shape = ExtentsOf(expr);
  if (!shape.has_value() || shape->size() != 4 || (*shape)[1] < 1) return std::nullopt;
  return (*shape)[1];
}

/// The blocked value `expr` unblocks, when it is an unblock_channels call.
std::optional<Expr> BlockedBehind(const Expr& expr) {
  const ir::CallObj* call = AsCallOf(expr, "unblock_channels");
  if (call == nullptr) return std::nullopt;
  return call->args()[0];
}

class ChannelBlocker : public TypedMutator {
 public:
  using TypedMutator::TypedMutator;

 protected:
  Expr RewriteCall(const Call& /*pre*/, const Call& call) override {
    const auto* op = call->op().as<ir::OpObj>();
    if (op == nullptr) return call;
    const std::string name = op->name().str();
    std::optional<Expr> blocked;
    if (name == "nn.conv2d") blocked = BlockConv(call);
    if (LanewiseUnaryOps().count(name) != 0) blocked = BlockUnary(call);
    if (LanewiseBinaryOps().count(name) != 0) blocked = BlockBinary(call);
    if (name == "concatenate") blocked = BlockConcat(call);
    if (name == "nn.global_avg_pool2d" || (name == "mean" && IsPlaneMean(call))) {
      blocked = BlockGlobalAverage(call);
    }
    if (!blocked.has_value()) return call;
    return Unblock(*blocked, *ChannelsOf(call));
  }

 private:
  Expr Unblock(const Expr& blocked, int64_t channels) const {
    Map<String, Any> attrs;
    attrs.Set("channels", channels);
    return Typed(Call(ir::Op::Get("unblock_channels"), {blocked}, attrs));
  }

  /// `nchw` (N, C, H, W) blocked: what it unblocks, or its block_channels, one per value.
  Expr Block(const Expr& nchw) {
    if (std::optional<Expr> behind = BlockedBehind(nchw)) return *behind;
    auto [it, inserted] = blocks_.emplace(nchw.get(), Expr());
    if (inserted) it->second = Typed(Call(ir::Op::Get("block_channels"), {nchw}));
    return it->second;
  }

  /// A convolution with enough input channels to fill blocks, or whose input is blocked
  /// already, or a depthwise one; its weight a constant, which the kernel packs in blocks when
  /// the program loads.
  std::optional<Expr> BlockConv(const Call& call) {
    const Expr& data = call->args()[0];
    const Expr& weight = call->args()[1];
    const std::optional<int64_t> channels = ChannelsOf(data);
    const std::optional<int64_t> out_channels = ChannelsOf(call);
    const std::optional<std::vector<int64_t>> kernel = ExtentsOf(weight);
    if (!channels.has_value() || !out_channels.has_value() || !kernel.has_value() ||
        weight.as<ir::ConstantObj>() == nullptr) {
      return std::nullopt;
    }
    const int64_t groups = call->attrs().at(String("groups")).cast<int64_t>();
    const bool depthwise = groups == *channels && groups == *out_channels && (*kernel)[1] == 1;
    // Fewer channels than a block cost a block's work: worth it only when they come blocked
    // (a squeeze-excitation's second convolution), never for an image's 3.
    const bool fills_blocks = *channels >= kChannelBlock || BlockedBehind(data).has_value();
    if (!(groups == 1 && fills_blocks) && !depthwise) return std::nullopt;
    if (!depthwise && TakesWinograd(call, *kernel)) return std::nullopt;
    return Typed(Call(ir::Op::Get("nn.conv2d_nchwc"), {Block(data), weight}, call->attrs()));
  }

  /// Whether the NCHW kernel runs `call` (a dense conv2d) by Winograd's F(2x2, 3x3), which does
  /// 2.25x fewer multiplications than any direct convolution: as conv.cc's TakesWinograd and
  /// winograd.cc's PrefersWinograd decide (3x3 at stride 1, 48 channels in, 64 out, 36 tiles of
  /// 2 x 2 outputs); a plane whose extents are symbolic is taken to be large enough.
  static bool TakesWinograd(const Call& call, const std::vector<int64_t>& kernel) {
    const auto ints = [&](const char* name) {
      return call->attrs().at(String(name)).cast<Array<int64_t>>();
    };
    const Array<int64_t> strides = ints("strides");
    const Array<int64_t> dilation = ints("dilation");
    if (kernel[2] != 3 || kernel[3] != 3 || strides[0] != 1 || strides[1] != 1 ||
        dilation[0] != 1 || dilation[1] != 1 || kernel[1] < 48 || kernel[0] < 64) {
      return false;
    }
    const std::vector<int64_t> out = *ExtentsOf(call);
    return out[2] < 0 || out[3] < 0 || ((out[2] + 1) / 2) * ((out[3] + 1) / 2) >= 36;
  }

  /// Whether `call` (a mean) averages an (N, C, H, W) tensor over its plane, keeping its rank.
  static bool IsPlaneMean(const Call& call) {
    const std::optional<Any> axes = call->attrs().Get(String("axis"));
    if (RankOf(call->args()[0]) != 4 || !axes.has_value() || axes->is_none() ||
        !call->attrs().at(String("keepdims")).cast<bool>()) {
      return false;
    }
    std::set<int64_t> plane;
    for (int64_t axis : axes->cast<Array<int64_t>>()) plane.insert(axis < 0 ? axis + 4 : axis);
    return plane == std::set<int64_t>{2, 3};
  }

  /// The mean of each channel over the plane: of each lane over the blocked plane.
  std::optional<Expr> BlockGlobalAverage(const Call& call) const {
    const std::optional<Expr> behind = BlockedBehind(call->args()[0]);
    if (!behind.has_value()) return std::nullopt;
    Map<String, Any> attrs;
    attrs.Set("axis", Array<int64_t>{2, 3});
    attrs.Set("keepdims", true);
    return Typed(Call(ir::Op::Get("mean"), {*behind}, attrs));
  }

  std::optional<Expr> BlockUnary(const Call& call) const {
    const std::optional<Expr> behind = BlockedBehind(call->args()[0]);
    if (!behind.has_value()) return std::nullopt;
    return Typed(Call(call->op(), {*behind}, call->attrs()));
  }

  /// An elementwise op of a blocked value and operands of one value per channel or per
  /// tensor (a bias, a batch norm's scale, a squeeze-excitation gate), or another blocked
  /// value of the same channels.
  std::optional<Expr> BlockBinary(const Call& call) {
    const std::optional<int64_t> channels = ChannelsOf(call);
    if (!channels.has_value()) return std::nullopt;
    const bool any_blocked =
        std::any_of(call->args().begin(), call->args().end(),
                    [&](const Expr& arg) { return BlockedBehind(arg).has_value(); });
    if (!any_blocked) return std::nullopt;
    Array<Expr> args;
    for (const Expr& arg : call->args()) {
      std::optional<Expr> operand = BlockOperand(arg, *channels);
      if (!operand.has_value()) return std::nullopt;
      args.push_back(*operand);
    }
    return Typed(Call(call->op(), args, call->attrs()));
  }

  /// An operand of an elementwise op whose output has `channels` channels, as the blocked op
  /// reads it: blocked when it has those channels, as it is when it has one element.
  std::optional<Expr> BlockOperand(const Expr& arg, int64_t channels) {
    if (std::optional<Expr> behind = BlockedBehind(arg)) return *behind;
    std::optional<std::vector<int64_t>> shape = ExtentsOf(arg);
    if (!shape.has_value() || shape->size() > 4) return std::nullopt;
    shape->insert(shape->begin(), 4 - shape->size(), 1);  // as broadcasting aligns it
    const bool one_value =
        std::all_of(shape->begin(), shape->end(), [](int64_t extent) { return extent == 1; });
    if (one_value) return arg;
    if ((*shape)[1] != channels) return std::nullopt;
    const bool per_channel = (*shape)[2] == 1 && (*shape)[3] == 1;
    if (per_channel && arg.as<ir::ConstantObj>() != nullptr) {
      return BlockedConstant(*Float32Values(Downcast<ir::Constant>(arg)), channels);
    }
    return RankOf(arg) == 4 ? std::optional<Expr>(Block(arg)) : std::nullopt;
  }

  /// One value per channel as a (1, C/16, 1, 1, 16) constant, zero past the channels.
  static Expr BlockedConstant(const std::vector<float>& values, int64_t channels) {
    std::vector<float> blocked(ChannelBlocks(channels) * kChannelBlock, 0.F);
    std::copy(values.begin(), values.end(), blocked.begin());
    return MakeFloat32Constant(blocked, {1, ChannelBlocks(channels), 1, 1, kChannelBlock});
  }

  /// A channel concatenation of blocked values that each fill whole blocks.
  std::optional<Expr> BlockConcat(const Call& call) const {
    const int64_t axis = call->attrs().at(String("axis")).cast<int64_t>();
    const auto* tuple = call->args()[0].as<ir::TupleObj>();
    if ((axis != 1 && axis != -3) || tuple == nullptr || !ChannelsOf(call).has_value()) {
      return std::nullopt;
    }
    Array<Expr> fields;
    for (const Expr& field : tuple->fields()) {
      const std::optional<Expr> behind = BlockedBehind(field);
      const std::optional<int64_t> channels = ChannelsOf(field);
      if (!behind.has_value() || !channels.has_value() || *channels % kChannelBlock != 0) {
        return std::nullopt;
      }
      fields.push_back(*behind);
    }
    Map<String, Any> attrs;
    attrs.Set("axis", int64_t{1});
    return Typed(Call(call->op(), {Typed(ir::Tuple(fields))}, attrs));
  }

  /// The block_channels made of each NCHW value, so that a value read blocked twice (a
  /// residual and a convolution's input) is blocked once.
  std::unordered_map<const Object*, Expr> blocks_;
};

/// Whether blocking a function into `rewritten` pays: each change of layout of a whole plane (a
/// block_channels or unblock_channels of more than one pixel) is a pass over memory, so a
/// function keeps its blocks only when it changes layout about once where it enters and once
/// where it leaves the chain, at most once more per 8 blocked convolutions, and fewer times
/// than it has blocked convolutions (a lone convolution between two changes does not pay). A
/// network whose convolutions alternate with ops that do not take blocks (grouped convolutions,
/// channel shuffles, Winograd's 3x3s, layer norms over channels) would otherwise pay two passes per
/// convolution.
bool BlockingPays(const ir::Function& rewritten) {
  int64_t changes = 0;
  int64_t convs = 0;
  ir::PostOrderVisit(rewritten->body(), [&](const Expr& expr) {
    if (AsCallOf(expr, "nn.conv2d_nchwc") != nullptr) ++convs;
    if (AsCallOf(expr, "block_channels") == nullptr &&
        AsCallOf(expr, "unblock_channels") == nullptr) {
      return;
    }
    const std::optional<std::vector<int64_t>> shape = ExtentsOf(expr);
    const bool one_pixel =
        shape.has_value() && shape->size() >= 4 && (*shape)[2] == 1 && (*shape)[3] == 1;
    if (!one_pixel) ++changes;
  });
  return changes < convs && changes <= 2 + convs / 8;
}

}  // namespace

Pass BlockChannels() {
  return CreateFunctionPass(
      [](const ir::Function& func, const ir::IRModule& mod, const PassContext& ctx) {
        const int64_t mode = ctx.GetConfig<int64_t>(kBlockChannels);
        if (mode == 0 || (mode < 0 && !kernels::cpu::CpuHasX86_64V4())) return func;
        const ir::Function rewritten = ChannelBlocker(mod).RewriteFunction(func);
        return mode > 0 || BlockingPays(rewritten) ? rewritten : func;
      },
      PassInfo{"transform.BlockChannels", 2, false});
}

KILN_REGISTER_PASS(BlockChannels);

}  // namespace transform
}  // namespace kiln
