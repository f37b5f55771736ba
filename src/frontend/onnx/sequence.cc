// ONNX sequences whose structure is static: a sequence value is a Kiln tuple of its tensors, so
// SequenceConstruct/Insert/Erase/At/Length and Split/ConcatFromSequence become tuple building,
// field access and core ops. Positions must be constants (a dynamic length has no static
// type); a sequence as a graph input or output is not supported.
#include <kiln/ffi/error.h>

#include <string>
#include <vector>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// The tensors of sequence-valued input `index`, in order.
std::vector<ir::Expr> Items(const NodeContext& node, size_t index) {
  const ir::Expr& sequence = node.Input(index);
  if (const auto* tuple = sequence.as<ir::TupleObj>()) {
    return std::vector<ir::Expr>(tuple->fields().begin(), tuple->fields().end());
  }
  const auto* type = sequence->checked_type().as<ir::TupleTypeObj>();
  KILN_CHECK(type != nullptr, ValueError)
      << node.Describe() << ": input " << index << " must be a sequence";
  std::vector<ir::Expr> items;
  for (int64_t i = 0; i < type->fields().size(); ++i)
    items.push_back(ir::TupleGetItem(sequence, i));
  return items;
}

ir::Expr MakeSequence(const std::vector<ir::Expr>& items) {
  return ir::Tuple(Array<ir::Expr>(items.begin(), items.end()));
}

/// Constant position input `index` (ONNX counts from the end when negative) within a sequence
/// of `length`; `length` itself is allowed where ONNX allows it (inserting at the end).
int64_t Position(const NodeContext& node, size_t index, int64_t length, bool allow_end) {
  const std::vector<int64_t> values = node.ConstantInts(index);
  KILN_CHECK(values.size() == 1, ValueError)
      << node.Describe() << ": the position must be a scalar, got " << values.size() << " values";
  const int64_t position = values[0] < 0 ? values[0] + length : values[0];
  const int64_t last = allow_end ? length : length - 1;
  KILN_CHECK(position >= 0 && position <= last, ValueError)
      << node.Describe() << ": position " << values[0] << " is outside a sequence of length "
      << length;
  return position;
}

ir::Expr ConvertSequenceInsert(const NodeContext& node) {
  std::vector<ir::Expr> items = Items(node, 0);
  const auto length = static_cast<int64_t>(items.size());
  const int64_t position = node.HasInput(2) ? Position(node, 2, length, true) : length;
  items.insert(items.begin() + position, node.Input(1));
  return MakeSequence(items);
}

ir::Expr ConvertSequenceErase(const NodeContext& node) {
  std::vector<ir::Expr> items = Items(node, 0);
  const auto length = static_cast<int64_t>(items.size());
  KILN_CHECK(length > 0, ValueError) << node.Describe() << ": the sequence is empty";
  const int64_t position = node.HasInput(1) ? Position(node, 1, length, false) : length - 1;
  items.erase(items.begin() + position);
  return MakeSequence(items);
}

ir::Expr ConvertSequenceAt(const NodeContext& node) {
  const std::vector<ir::Expr> items = Items(node, 0);
  return items[Position(node, 1, static_cast<int64_t>(items.size()), false)];
}

ir::Expr ConvertConcatFromSequence(const NodeContext& node) {
  std::vector<ir::Expr> items = Items(node, 0);
  KILN_CHECK(!items.empty(), ValueError) << node.Describe() << ": the sequence is empty";
  int64_t axis = node.Int("axis", 0);
  if (node.Int("new_axis", 0) != 0) {
    // Stacking: each item gains the new axis, which may be one past the items' last.
    const auto rank =
        static_cast<int64_t>(items[0]->checked_type().as<ir::TensorTypeObj>()->shape().size());
    axis = NormalizeAxis(axis, rank + 1);
    for (ir::Expr& item : items) {
      item = MakeCall("unsqueeze", {item}, {{"axes", Array<int64_t>{axis}}});
    }
  }
  return MakeCall("concatenate", {MakeSequence(items)}, {{"axis", axis}});
}

/// Pieces of sizes `split` (input 1: a scalar chunk size or a list of sizes), else of size 1
/// with the axis squeezed away unless keepdims.
ir::Expr ConvertSplitToSequence(const NodeContext& node) {
  const int64_t axis = NormalizeAxis(node.Int("axis", 0), static_cast<int64_t>(node.InputRank(0)));
  const int64_t extent = node.InputExtent(0, static_cast<size_t>(axis));
  std::vector<int64_t> sections;
  const bool given = node.HasInput(1);
  if (given && node.ConstantInput(1).ndim() == 0) {
    const int64_t chunk = node.ConstantInts(1)[0];
    KILN_CHECK(chunk > 0, ValueError) << node.Describe() << ": split must be positive";
    for (int64_t done = 0; done < extent; done += chunk)
      sections.push_back(std::min(chunk, extent - done));
  } else if (given) {
    sections = node.ConstantInts(1);
  } else {
    sections.assign(static_cast<size_t>(extent), 1);
  }
  const ir::Expr pieces =
      MakeCall("split", {node.Input(0)}, {{"sections", ToArray(sections)}, {"axis", axis}});
  const bool squeeze = !given && node.Int("keepdims", 1) == 0;
  std::vector<ir::Expr> items;
  for (size_t i = 0; i < sections.size(); ++i) {
    ir::Expr piece = ir::TupleGetItem(pieces, static_cast<int64_t>(i));
    if (squeeze) piece = MakeCall("squeeze", {piece}, {{"axes", Array<int64_t>{axis}}});
    items.push_back(piece);
  }
  return MakeSequence(items);
}

}  // namespace

bool ProducesSequence(const std::string& op_type) {
  return op_type == "SequenceConstruct" || op_type == "SequenceEmpty" ||
         op_type == "SequenceInsert" || op_type == "SequenceErase" || op_type == "SplitToSequence";
}

void AddSequenceConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "SequenceConstruct", 11, kMaxOpset,
               [](const NodeContext& node) { return MakeSequence(node.Inputs()); });
  AddConverter(table, "SequenceEmpty", 11, kMaxOpset,
               [](const NodeContext& /*node*/) { return MakeSequence({}); });
  AddConverter(table, "SequenceInsert", 11, kMaxOpset, ConvertSequenceInsert);
  AddConverter(table, "SequenceErase", 11, kMaxOpset, ConvertSequenceErase);
  AddConverter(table, "SequenceAt", 11, kMaxOpset, ConvertSequenceAt);
  AddConverter(table, "SequenceLength", 11, kMaxOpset, [](const NodeContext& node) {
    const auto length = static_cast<int64_t>(Items(node, 0).size());
    return ir::Expr(ir::Constant(Int64Tensor({length}, std::vector<int64_t>{})));  // a scalar
  });
  AddConverter(table, "ConcatFromSequence", 11, kMaxOpset, ConvertConcatFromSequence);
  AddConverter(table, "SplitToSequence", 11, kMaxOpset, ConvertSplitToSequence);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
