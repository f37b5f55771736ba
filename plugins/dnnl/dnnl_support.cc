// libkiln_dnnl.so, the op predicates: `target.dnnl` on each op the runtime side
// (dnnl_primitives.cc) turns into a oneDNN primitive, returning true or why not. Every check
// reads only the call's types and attributes, as the runtime sees them in the JSON graph.
#include "dnnl_support.h"

#include <kiln/ffi/registry.h>
#include <kiln/ir/op.h>
#include <kiln/transform/byoc.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln {
namespace dnnl_plugin {
namespace {

using Shape = std::vector<int64_t>;
/// Why oneDNN cannot run a call whose tensor arguments have `shapes` (float32, static), or "".
/// `shapes` holds the arguments' shapes, then the result's.
using Check = std::function<std::string(const ir::CallObj&, const std::vector<Shape>&)>;

/// oneDNN's DNNL_MAX_NDIMS.
constexpr size_t kMaxRank = 12;

std::string Ok() { return {}; }

int64_t IntAttr(const ir::CallObj& call, const char* name) {
  return call.attrs().Get(String(name))->cast<int64_t>();
}

std::vector<int64_t> IntsAttr(const ir::CallObj& call, const char* name) {
  std::vector<int64_t> values;
  for (const Any& value : call.attrs().Get(String(name))->cast<Array<Any>>()) {
    values.push_back(value.cast<int64_t>());
  }
  return values;
}

std::string RankBetween(const Shape& shape, size_t lowest, size_t highest, const char* what) {
  if (shape.size() >= lowest && shape.size() <= highest) return Ok();
  return std::string(what) + " has rank " + std::to_string(shape.size()) + "; oneDNN takes " +
         std::to_string(lowest) + " to " + std::to_string(highest);
}

/// Elementwise ops: any layout, ranks 1 to 12 (oneDNN has no 0-D memory).
std::string Unary(const ir::CallObj&, const std::vector<Shape>& shapes) {
  return RankBetween(shapes[0], 1, kMaxRank, "data");
}

/// oneDNN's binary primitive broadcasts its second source only: the result must have the shape
/// of one operand (the other is then the broadcast one; lhs and rhs swap for commutative ops).
std::string Binary(const ir::CallObj& call, const std::vector<Shape>& shapes) {
  const Shape& out = shapes[2];
  if (std::string reason = RankBetween(out, 1, kMaxRank, "the result"); !reason.empty()) {
    return reason;
  }
  if (shapes[0] == out) return Ok();
  const std::string name = call.op().as<ir::OpObj>()->name().str();
  const bool commutative =
      name == "add" || name == "multiply" || name == "maximum" || name == "minimum";
  if (commutative && shapes[1] == out) return Ok();
  return commutative ? "both operands are broadcast; oneDNN broadcasts one source only"
                     : "lhs is broadcast; oneDNN broadcasts the second source only";
}

std::string Conv2D(const ir::CallObj&, const std::vector<Shape>& shapes) {
  if (shapes[0].size() != 4) return "data is not (N, C, H, W)";
  return Ok();
}

std::string Dense(const ir::CallObj&, const std::vector<Shape>& shapes) {
  return RankBetween(shapes[0], 2, kMaxRank, "data");
}

/// numpy matmul without its 1-D promotion; batch dimensions broadcast as oneDNN's matmul does.
std::string MatMul(const ir::CallObj&, const std::vector<Shape>& shapes) {
  for (size_t i = 0; i < 2; ++i) {
    if (std::string reason = RankBetween(shapes[i], 2, kMaxRank, i == 0 ? "lhs" : "rhs");
        !reason.empty()) {
      return reason;
    }
  }
  return Ok();
}

std::string Pool2D(const ir::CallObj& call, const std::vector<Shape>& shapes) {
  if (shapes[0].size() != 4) return "data is not (N, C, H, W)";
  const std::string name = call.op().as<ir::OpObj>()->name().str();
  if (name != "nn.avg_pool2d" || !call.attrs().Get(String("count_include_pad"))->cast<bool>() ||
      !call.attrs().Get(String("ceil_mode"))->cast<bool>()) {
    return Ok();
  }
  // With count_include_pad, Kiln (like PyTorch) counts the padding but not the part of a
  // ceil_mode window past it, while oneDNN counts the whole window: take the call only when no
  // window reaches past the padding.
  const std::vector<int64_t> kernel = IntsAttr(call, "pool_size");
  const std::vector<int64_t> strides = IntsAttr(call, "strides");
  const std::vector<int64_t> padding = IntsAttr(call, "padding");
  const std::vector<int64_t> dilation = IntsAttr(call, "dilation");
  for (size_t i = 0; i < 2; ++i) {
    const int64_t extent = shapes[1][2 + i];
    const int64_t last_end = (extent - 1) * strides[i] + (kernel[i] - 1) * dilation[i] + 1;
    if (last_end > shapes[0][2 + i] + padding[i] + padding[2 + i]) {
      return "count_include_pad with a ceil_mode window past the padding (oneDNN would count "
             "the part past it)";
    }
  }
  return Ok();
}

std::string GlobalPool2D(const ir::CallObj&, const std::vector<Shape>& shapes) {
  return shapes[0].size() == 4 ? Ok() : "data is not (N, C, H, W)";
}

std::string Softmax(const ir::CallObj&, const std::vector<Shape>& shapes) {
  return RankBetween(shapes[0], 1, kMaxRank, "data");
}

std::string LayerNorm(const ir::CallObj& call, const std::vector<Shape>& shapes) {
  if (std::string reason = RankBetween(shapes[0], 2, 5, "data"); !reason.empty()) return reason;
  const auto rank = static_cast<int64_t>(shapes[0].size());
  const int64_t axis = IntAttr(call, "axis");
  if (axis != -1 && axis != rank - 1) {
    return "axis " + std::to_string(axis) + " is not the last; oneDNN normalizes the last only";
  }
  return Ok();
}

std::string BatchNorm(const ir::CallObj& call, const std::vector<Shape>& shapes) {
  if (shapes[0].size() != 4) return "data is not (N, C, H, W)";
  const int64_t axis = IntAttr(call, "axis");
  if (axis != 1 && axis != -3) {
    return "axis " + std::to_string(axis) + " is not the channel axis 1";
  }
  return Ok();
}

/// A view of the same bytes: any rank up to oneDNN's (a scalar is one element).
std::string Reshape(const ir::CallObj&, const std::vector<Shape>& shapes) {
  for (const Shape& shape : shapes) {
    if (shape.size() > kMaxRank) return RankBetween(shape, 0, kMaxRank, "a shape");
  }
  return Ok();
}

/// Unit steps only: a slice is then a view at an offset.
std::string StridedSlice(const ir::CallObj& call, const std::vector<Shape>& shapes) {
  if (std::string reason = RankBetween(shapes[0], 1, kMaxRank, "data"); !reason.empty()) {
    return reason;
  }
  const std::optional<Any> strides = call.attrs().Get(String("strides"));
  if (strides.has_value() && !strides->is_none()) {
    for (int64_t stride : IntsAttr(call, "strides")) {
      if (stride != 1) return "a step of " + std::to_string(stride) + "; oneDNN slices with step 1";
    }
  }
  return Ok();
}

/// `shapes` are the fields, then the result.
std::string Concatenate(const ir::CallObj&, const std::vector<Shape>& shapes) {
  return RankBetween(shapes.back(), 1, kMaxRank, "the result");
}

const std::map<std::string, Check>& Checks() {
  static const std::map<std::string, Check> checks = [] {
    std::map<std::string, Check> table = {
        {"nn.conv2d", Conv2D},
        {"nn.dense", Dense},
        {"matmul", MatMul},
        {"nn.batch_matmul", MatMul},
        {"nn.max_pool2d", Pool2D},
        {"nn.avg_pool2d", Pool2D},
        {"nn.global_max_pool2d", GlobalPool2D},
        {"nn.global_avg_pool2d", GlobalPool2D},
        {"nn.softmax", Softmax},
        {"nn.log_softmax", Softmax},
        {"nn.layer_norm", LayerNorm},
        {"nn.batch_norm", BatchNorm},
        {"reshape", Reshape},
        {"transpose", Unary},
        {"strided_slice", StridedSlice},
        {"concatenate", Concatenate},
    };
    for (const char* op :
         {"nn.relu", "sigmoid", "tanh", "exp", "log", "sqrt", "abs", "clip", "nn.leaky_relu",
          "nn.elu", "nn.gelu", "nn.silu", "nn.hardswish", "nn.softplus"}) {
      table.emplace(op, Unary);
    }
    for (const char* op : {"add", "subtract", "multiply", "divide", "maximum", "minimum"}) {
      table.emplace(op, Binary);
    }
    return table;
  }();
  return checks;
}

/// Registers `target.dnnl` on every op of Checks(), at load time.
const bool kRegistered = [] {
  for (const auto& entry : Checks()) {
    ir::OpRegisterer::Extend(entry.first)
        .set_attr("target.dnnl", Function::FromTyped(
                                     [](const ir::Call& call) -> Any {
                                       const std::string reason = WhyNotDnnl(call);
                                       if (reason.empty()) return true;
                                       return String(reason);
                                     },
                                     "target.dnnl"));
  }
  return true;
}();

}  // namespace

std::string WhyNotDnnl(const ir::Call& call) {
  const auto* op = call->op().as<ir::OpObj>();
  if (op == nullptr) return "not a call of an op";
  auto check = Checks().find(op->name().str());
  if (check == Checks().end()) return "oneDNN does not run " + op->name().str();
  std::string reason;
  std::vector<std::vector<int64_t>> shapes;
  const int64_t num_args = call->args().size();
  for (int64_t i = 0; i <= num_args; ++i) {
    const bool result = i == num_args;
    const ir::Expr& arg = result ? ir::Expr(call) : call->args()[i];
    const std::string what = result ? "the result" : "argument " + std::to_string(i);
    // A tuple argument (concatenate's) counts as its fields, as the JSON graph passes them.
    const auto* tuple = arg.as<ir::TupleObj>();
    for (const ir::Expr& field : tuple != nullptr ? tuple->fields() : Array<ir::Expr>{arg}) {
      std::optional<std::vector<int64_t>> shape =
          transform::StaticFloat32Shape(field->checked_type(), what, &reason);
      if (!shape.has_value()) return reason;
      shapes.push_back(*std::move(shape));
    }
  }
  return check->second(*call.get(), shapes);
}

}  // namespace dnnl_plugin
}  // namespace kiln
