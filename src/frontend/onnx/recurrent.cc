// ONNX's recurrent layers: LSTM, GRU and RNN become nn.lstm, nn.gru and nn.rnn
// (src/ops/nn/recurrent.cc), every input possibly fed at run time. An omitted optional input
// becomes a tensor of no elements, which the ops read as ONNX's default.
#include <optional>
#include <string>
#include <vector>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// A converter for `op` with `inputs` inputs (6, or 8 for LSTM) and `gates` gates per step.
Converter RecurrentConverter(const char* op, size_t inputs, int64_t gates) {
  return [op, inputs, gates](const NodeContext& node) {
    const DLDataType dtype = node.InputDType(0);
    Array<ir::Expr> args;
    for (size_t i = 0; i < inputs; ++i) {
      const DLDataType absent = i == 4 ? DLDataType{kDLInt, 32, 1} : dtype;
      args.push_back(node.HasInput(i) ? node.Input(i) : ir::Constant(FilledTensor({0}, absent, 0)));
    }
    std::string activations;
    for (const std::string& name :
         node.Strings("activations").value_or(std::vector<std::string>{})) {
      activations += (activations.empty() ? "" : ",") + name;
    }
    // hidden_size is optional in ONNX's schema; the weight's rows give it.
    const int64_t hidden = node.Int("hidden_size", node.InputExtent(1, 1) / gates);
    Map<String, Any> attrs{{"hidden_size", hidden},
                           {"direction", String(node.Str("direction", "forward"))},
                           {"layout", node.Int("layout", 0)},
                           {"activations", String(activations)},
                           {"clip", node.Float("clip", 0.0)}};
    for (const char* list : {"activation_alpha", "activation_beta"}) {
      if (std::optional<std::vector<double>> values = node.Floats(list)) {
        attrs.Set(list, Array<double>(*values));
      }
    }
    if (gates == 4) attrs.Set("input_forget", node.Int("input_forget", 0) != 0);
    if (gates == 3) attrs.Set("linear_before_reset", node.Int("linear_before_reset", 0) != 0);
    return MakeCall(op, args, attrs);
  };
}

}  // namespace

void AddRecurrentConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "LSTM", 7, kMaxOpset, RecurrentConverter("nn.lstm", 8, 4));
  AddConverter(table, "GRU", 7, kMaxOpset, RecurrentConverter("nn.gru", 6, 3));
  AddConverter(table, "RNN", 7, kMaxOpset, RecurrentConverter("nn.rnn", 6, 1));
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
