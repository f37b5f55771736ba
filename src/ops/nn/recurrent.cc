// nn.lstm, nn.gru and nn.rnn: ONNX's recurrent layers, over a whole sequence in one call.
//
// Inputs, as ONNX orders them: data (seq, batch, input) (or (batch, seq, input) with layout 1),
// weight (directions, gates * hidden, input), recurrence (directions, gates * hidden, hidden),
// bias (directions, 2 * gates * hidden), sequence_lens (batch) int32, initial_h (directions,
// batch, hidden) (batch first with layout 1), and for LSTM initial_c (as initial_h) and
// peepholes (directions, 3 * hidden). An optional input ONNX left out is a 1-D tensor of extent
// 0. The result is a tuple: Y (seq, directions, batch, hidden) (layout 1: (batch, seq,
// directions, hidden)), Y_h (as initial_h), and for LSTM Y_c.
#include <kiln/ir/op.h>

#include <string>
#include <vector>

#include "../op_common.h"

namespace kiln {
namespace op {
namespace {

using Shape = std::vector<arith::SizeExpr>;

/// `shape` of argument `i` is `expected` (`layout` names it in the error), or it is absent
/// (extent 0) when `optional`.
void ExpectShape(const TypeRelationContext& ctx, int64_t i, const Shape& expected,
                 const std::string& layout, bool optional) {
  const Shape shape = ctx.Shape(i);
  if (optional && shape.size() == 1 && shape[0].as_int() == 0) return;
  const std::string what = ctx.ArgName(i) + " must be " + layout + " = " +
                           ir::ShapeToText(expected) + (optional ? " (or absent)" : "") + ", got " +
                           ir::ShapeToText(shape);
  KILN_CHECK(shape.size() == expected.size(), TypeError) << ctx.Describe(what);
  for (size_t d = 0; d < shape.size(); ++d) {
    const SizeFact same = ProveEqual(ctx, shape[d], expected[d]);
    KILN_CHECK(same.holds() || same.Defer(ctx, what), TypeError) << ctx.Describe(what);
  }
}

/// The relation of a recurrent op with `gates` gates per step and `states` state tensors
/// (h, and c for LSTM).
Type RecurrentRelation(const TypeRelationContext& ctx, int64_t gates, int64_t states) {
  const std::string direction = ctx.Attr<String>("direction").str();
  KILN_CHECK(direction == "forward" || direction == "reverse" || direction == "bidirectional",
             TypeError)
      << ctx.Describe("direction '" + direction +
                      "' is not one of forward, reverse, bidirectional");
  const int64_t layout = ctx.Attr<int64_t>("layout");
  KILN_CHECK(layout == 0 || layout == 1, TypeError)
      << ctx.Describe("layout must be 0 or 1, got " + std::to_string(layout));
  const Shape data = ctx.Shape(0);
  KILN_CHECK(data.size() == 3, TypeError)
      << ctx.Describe("data must be 3-D (seq, batch, input), or (batch, seq, input) with layout 1");
  const arith::SizeExpr& seq = data[layout == 0 ? 0 : 1];
  const arith::SizeExpr& batch = data[layout == 0 ? 1 : 0];
  const arith::SizeExpr& input = data[2];
  const arith::SizeExpr dirs = arith::IntImm(direction == "bidirectional" ? 2 : 1);
  const arith::SizeExpr hidden = arith::IntImm(ctx.Attr<int64_t>("hidden_size"));
  const arith::SizeExpr gate_rows = arith::IntImm(gates) * hidden;
  ExpectShape(ctx, 1, {dirs, gate_rows, input}, "(directions, gates * hidden, input)", false);
  ExpectShape(ctx, 2, {dirs, gate_rows, hidden}, "(directions, gates * hidden, hidden)", false);
  ExpectShape(ctx, 3, {dirs, arith::IntImm(2) * gate_rows}, "(directions, 2 * gates * hidden)",
              true);
  ExpectShape(ctx, 4, {batch}, "(batch)", true);
  const Shape state = layout == 0 ? Shape{dirs, batch, hidden} : Shape{batch, dirs, hidden};
  const std::string state_layout =
      layout == 0 ? "(directions, batch, hidden)" : "(batch, directions, hidden)";
  for (int64_t s = 0; s < states; ++s) ExpectShape(ctx, 5 + s, state, state_layout, true);
  if (states == 2) {
    ExpectShape(ctx, 7, {dirs, arith::IntImm(3) * hidden}, "(directions, 3 * hidden)", true);
  }
  for (int64_t i : {1, 2, 3, 5, 6, 7}) {
    if (i < ctx.num_args()) ctx.CheckSameDType(0, i);
  }
  const Shape y = layout == 0 ? Shape{seq, dirs, batch, hidden} : Shape{batch, seq, dirs, hidden};
  Array<Type> fields{TypeRelationContext::TensorResult(y, ctx.DType(0))};
  for (int64_t s = 0; s < states; ++s) {
    fields.push_back(TypeRelationContext::TensorResult(state, ctx.DType(0)));
  }
  return ir::TupleType(fields);
}

template <int64_t kGates, int64_t kStates>
Type Relation(const TypeRelationContext& ctx) {
  return RecurrentRelation(ctx, kGates, kStates);
}

/// The schema of a recurrent op with `kGates` gates and `kStates` state tensors.
template <int64_t kGates, int64_t kStates>
void RecurrentOp(ir::OpRegisterer op) {
  constexpr int64_t states = kStates;
  op.add_input("data")
      .add_input("weight")
      .add_input("recurrence")
      .add_input("bias")
      .add_input("sequence_lens")
      .add_input("initial_h");
  if constexpr (states == 2) op.add_input("initial_c").add_input("peepholes");
  op.add_attr("hidden_size", AttrKind::kInt)
      .add_attr("direction", AttrKind::kString, String("forward"))
      .add_attr("layout", AttrKind::kInt, int64_t{0})
      // Comma-separated ONNX activation names, one per function of each direction ("" for
      // the defaults); alpha and beta as ONNX gives them, in that order.
      .add_attr("activations", AttrKind::kString, String(""))
      .add_attr("activation_alpha", AttrKind::kFloats, Array<double>{})
      .add_attr("activation_beta", AttrKind::kFloats, Array<double>{})
      .add_attr("clip", AttrKind::kFloat, 0.0)  // 0: no clip
      .set_pattern(OpPattern::kOpaque)
      .set_type_relation(Relation<kGates, kStates>);
}

[[maybe_unused]] const bool kRegistered = [] {
  RecurrentOp<4, 2>(ir::Op::Register("nn.lstm").add_attr("input_forget", AttrKind::kBool, false));
  RecurrentOp<3, 1>(
      ir::Op::Register("nn.gru").add_attr("linear_before_reset", AttrKind::kBool, false));
  RecurrentOp<1, 1>(ir::Op::Register("nn.rnn"));
  return true;
}();

}  // namespace
}  // namespace op
}  // namespace kiln
