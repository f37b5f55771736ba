// ONNX Einsum without ellipses or repeated subscripts within one operand (diagonals): each
// operand is transposed and reshaped onto one common order of subscripts, the operands are
// multiplied with broadcasting, and the subscripts missing from the output are summed away.
// Memory grows with the product of all extents, which suits the small contractions models
// write as Einsum; a matmul rewrite is a later optimization.
#include <kiln/ffi/error.h>

#include <algorithm>
#include <string>

#include "converter.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

/// The equation without spaces, split into its input terms and output term; the implicit
/// output (no "->") is every subscript used once, in alphabetical order.
void ParseEquation(const NodeContext& node, std::vector<std::string>* inputs, std::string* output) {
  std::string equation = node.Str("equation", "");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  KILN_CHECK(equation.find("...") == std::string::npos, NotImplementedError)
      << node.Describe() << ": equations with ellipses are not supported";
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    inputs->push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    *output = equation.substr(arrow + 2);
    return;
  }
  for (char c = 'A'; c <= 'z'; ++c) {
    if (std::count(lhs.begin(), lhs.end(), c) == 1) output->push_back(c);
  }
}

ir::Expr ConvertEinsum(const NodeContext& node) {
  std::vector<std::string> terms;
  std::string output;
  ParseEquation(node, &terms, &output);
  const std::vector<ir::Expr> operands = node.Inputs();
  KILN_CHECK(terms.size() == operands.size(), ValueError)
      << node.Describe() << ": the equation has " << terms.size() << " operands, the node "
      << operands.size();
  // Output subscripts first, so that after the sum the axes are in output order.
  std::string order = output;
  for (const std::string& term : terms) {
    for (char c : term) {
      if (order.find(c) == std::string::npos) order.push_back(c);
    }
  }
  ir::Expr product;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string& term = terms[i];
    const std::vector<int64_t> shape = node.InputShape(i);
    KILN_CHECK(term.size() == shape.size(), ValueError)
        << node.Describe() << ": term '" << term << "' for an input of rank " << shape.size();
    std::vector<int64_t> axes(term.size());
    for (size_t a = 0; a < term.size(); ++a) {
      KILN_CHECK(std::count(term.begin(), term.end(), term[a]) == 1, NotImplementedError)
          << node.Describe() << ": repeated subscripts within an operand (diagonals) are not "
          << "supported";
      axes[a] = static_cast<int64_t>(a);
    }
    std::sort(axes.begin(), axes.end(),
              [&](int64_t a, int64_t b) { return order.find(term[a]) < order.find(term[b]); });
    std::vector<int64_t> aligned(order.size(), 1);
    for (size_t a = 0; a < term.size(); ++a) aligned[order.find(term[a])] = shape[a];
    ir::Expr operand = MakeCall("transpose", {operands[i]}, {{"axes", ToArray(axes)}});
    operand = MakeCall("reshape", {operand}, {{"newshape", ToArray(aligned)}});
    product = product.defined() ? MakeCall("multiply", {product, operand}) : operand;
  }
  if (order.size() == output.size()) return product;
  std::vector<int64_t> summed;
  for (size_t a = output.size(); a < order.size(); ++a) summed.push_back(static_cast<int64_t>(a));
  return MakeCall("sum", {product}, {{"axis", ToArray(summed)}, {"keepdims", false}});
}

}  // namespace

void AddEinsumConverters(std::vector<ConverterEntry>& table) {
  AddConverter(table, "Einsum", 12, kMaxOpset, ConvertEinsum);
}

}  // namespace onnx_import
}  // namespace frontend
}  // namespace kiln
