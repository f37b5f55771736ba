// ONNX Einsum: each operand is transposed and reshaped onto one common order of subscripts, the
// operands are multiplied with broadcasting, and the subscripts missing from the output are
// summed away. An ellipsis becomes fresh subscripts (right-aligned, broadcasting), and a
// subscript repeated within an operand (a diagonal) becomes a fresh one tied to the first by a
// constant identity operand, so summing it away keeps the diagonal. Memory grows with the
// product of all extents, which suits the small contractions models write as Einsum; a matmul
// rewrite is a later optimization.
#include <kiln/ffi/error.h>

#include <algorithm>
#include <string>
#include <vector>

#include "converter.h"
#include "tensor_proto.h"

namespace kiln {
namespace frontend {
namespace onnx_import {
namespace {

const std::string kEllipsis = "...";

/// The equation without spaces, split into its input terms and its output term (empty and
/// `explicit_output` false when there is no "->").
void ParseEquation(const NodeContext& node, std::vector<std::string>* inputs, std::string* output,
                   bool* explicit_output) {
  std::string equation = node.Str("equation", "");
  equation.erase(std::remove(equation.begin(), equation.end(), ' '), equation.end());
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    inputs->push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *explicit_output = arrow != std::string::npos;
  if (*explicit_output) *output = equation.substr(arrow + 2);
}

/// Hands out subscripts the equation does not use.
class FreshSubscripts {
 public:
  explicit FreshSubscripts(const std::string& used) : used_(used) {}
  char Next(const NodeContext& node) {
    for (const char* range : {"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}) {
      for (const char* c = range; *c != '\0'; ++c) {
        if (used_.find(*c) == std::string::npos) {
          used_.push_back(*c);
          return *c;
        }
      }
    }
    KILN_THROW(NotImplementedError) << node.Describe() << ": too many subscripts";
  }

 private:
  std::string used_;
};

/// `term` with its ellipsis replaced by the last `count` of `ellipsis`.
std::string ExpandEllipsis(const std::string& term, const std::string& ellipsis, size_t count) {
  const size_t at = term.find(kEllipsis);
  if (at == std::string::npos) return term;
  return term.substr(0, at) + ellipsis.substr(ellipsis.size() - count) +
         term.substr(at + kEllipsis.size());
}

ir::Expr ConvertEinsum(const NodeContext& node) {
  std::vector<std::string> terms;
  std::string output;
  bool explicit_output = false;
  ParseEquation(node, &terms, &output, &explicit_output);
  std::vector<ir::Expr> operands = node.Inputs();
  KILN_CHECK(terms.size() == operands.size(), ValueError)
      << node.Describe() << ": the equation has " << terms.size() << " operands, the node "
      << operands.size();
  std::vector<std::vector<int64_t>> shapes;
  std::string used = output;
  for (size_t i = 0; i < operands.size(); ++i) {
    shapes.push_back(node.InputShape(i));
    used += terms[i];
  }
  FreshSubscripts fresh(used);
  // Ellipses: as many fresh subscripts as the widest operand's ellipsis covers.
  size_t widest = 0;
  std::vector<size_t> covered(terms.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].find(kEllipsis) == std::string::npos) continue;
    const size_t named = terms[i].size() - kEllipsis.size();
    KILN_CHECK(shapes[i].size() >= named, ValueError)
        << node.Describe() << ": term '" << terms[i] << "' for an input of rank "
        << shapes[i].size();
    covered[i] = shapes[i].size() - named;
    widest = std::max(widest, covered[i]);
  }
  std::string ellipsis;
  for (size_t k = 0; k < widest; ++k) ellipsis.push_back(fresh.Next(node));
  for (size_t i = 0; i < terms.size(); ++i)
    terms[i] = ExpandEllipsis(terms[i], ellipsis, covered[i]);
  if (explicit_output) {
    output = ExpandEllipsis(output, ellipsis, widest);
  } else {
    // numpy's implicit output: the ellipsis, then every subscript used once, sorted.
    std::string all;
    for (const std::string& term : terms) all += term;
    output = ellipsis;
    std::string once;
    for (char c : all) {
      if (ellipsis.find(c) == std::string::npos && std::count(all.begin(), all.end(), c) == 1) {
        once.push_back(c);
      }
    }
    std::sort(once.begin(), once.end());
    output += once;
  }
  // Diagonals: a repeated subscript's later occurrence becomes fresh, tied by an identity.
  const size_t given = terms.size();
  for (size_t i = 0; i < given; ++i) {
    KILN_CHECK(terms[i].size() == shapes[i].size(), ValueError)
        << node.Describe() << ": term '" << terms[i] << "' for an input of rank "
        << shapes[i].size();
    for (size_t a = 0; a < terms[i].size(); ++a) {
      const size_t first = terms[i].find(terms[i][a]);
      if (first == a) continue;
      const int64_t n = shapes[i][a];
      const char tied = fresh.Next(node);
      std::vector<double> eye(static_cast<size_t>(n * n), 0.0);
      for (int64_t k = 0; k < n; ++k) eye[k * n + k] = 1.0;
      operands.push_back(ir::Constant(TensorFromDoubles(eye, {n, n}, node.InputDType(i))));
      shapes.push_back({n, n});
      terms.push_back(std::string{terms[i][first], tied});
      terms[i][a] = tied;
    }
  }
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
    std::vector<int64_t> axes(term.size());
    for (size_t a = 0; a < term.size(); ++a) axes[a] = static_cast<int64_t>(a);
    std::sort(axes.begin(), axes.end(),
              [&](int64_t a, int64_t b) { return order.find(term[a]) < order.find(term[b]); });
    std::vector<int64_t> aligned(order.size(), 1);
    for (size_t a = 0; a < term.size(); ++a) aligned[order.find(term[a])] = shapes[i][a];
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
