// libFuzzer target for the size expression parser and simplifier (kiln/arith/size_expr.h,
// analyzer.h): any byte string must parse or raise a kiln::Error; never crash, hang or read out
// of bounds (run under ASan/UBSan). What parses is checked against the library's own promises,
// and a broken promise aborts like a crash:
//   - its text parses back to the same tree and prints the same (the round trip);
//   - its normal form prints text that parses back, and simplifies to itself;
//   - at one assignment of its variables, where it evaluates, the normal form has the same value
//     (or leaves int64 on the way, as an expanded product may) and Bound() holds the value.
#include <kiln/arith/analyzer.h>
#include <kiln/ffi/error.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace {

using kiln::arith::SizeExpr;

/// The value of `expr`, or nullopt with the error's kind in `kind`.
std::optional<int64_t> TryEvaluate(const SizeExpr& expr,
                                   const std::map<std::string, int64_t>& values,
                                   std::string* kind) {
  try {
    return kiln::arith::Evaluate(expr, values);
  } catch (const kiln::Error& error) {
    *kind = error.kind();
    return std::nullopt;
  }
}

void Require(bool promise_kept) {
  if (!promise_kept) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  SizeExpr expr;
  try {
    expr = kiln::arith::ParseSizeExpr(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const kiln::Error&) {  // NOLINT(bugprone-empty-catch): rejecting input is expected
    return 0;
  }
  const std::string text = expr.ToString();
  const SizeExpr back = kiln::arith::ParseSizeExpr(text);
  Require(kiln::arith::StructuralEqual(back, expr) && back.ToString() == text);

  // Variables 1, 2, 3, ... in order of name: small sizes, as shapes have.
  std::map<std::string, int64_t> values;
  for (const std::string& name : kiln::arith::FreeSizeVars(expr)) {
    values.emplace(name, static_cast<int64_t>(values.size()) + 1);
  }
  kiln::arith::Analyzer analyzer;
  const SizeExpr simple = analyzer.Simplify(expr);
  Require(kiln::arith::StructuralEqual(kiln::arith::ParseSizeExpr(simple.ToString()), simple));
  Require(kiln::arith::StructuralEqual(analyzer.Simplify(simple), simple));

  std::string kind;
  const std::optional<int64_t> value = TryEvaluate(expr, values, &kind);
  if (!value.has_value()) return 0;
  const kiln::arith::ConstIntBound bound = analyzer.Bound(expr);
  Require(bound.min <= *value && *value <= bound.max);
  const std::optional<int64_t> simple_value = TryEvaluate(simple, values, &kind);
  Require(simple_value == value || (!simple_value.has_value() && kind == "OverflowError"));
  return 0;
}
