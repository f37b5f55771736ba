// The text of size expressions: the printer (SizeExpr::ToString) and ParseSizeExpr.
//
// The printer writes the fewest parentheses that keep the tree: `+` and `-` bind looser than
// `*`, all three associate to the left, so a right operand of the same precedence is
// parenthesized (`a - (b + c)`) and a left one is not. The parser builds with the folding
// builders; a printed tree was built by them too (or is a normal form, which they leave
// alone), so parse(print(e)) is e.
#include <kiln/arith/size_expr.h>

#include <charconv>
#include <ostream>
#include <string>

#include "arith_internal.h"

namespace kiln {
namespace arith {
namespace {

/// Parenthesis depth the parser accepts; deeper text is an error instead of a stack overflow.
constexpr int kMaxParseNesting = 256;

/// 1 for + and -, 2 for *, 3 for what never needs parentheses (leaves and calls).
int Precedence(const SizeExpr& expr) {
  const auto* node = expr.as<BinaryObj>();
  if (node == nullptr) return 3;
  switch (node->op()) {
    case BinaryOp::kAdd:
    case BinaryOp::kSub: return 1;
    case BinaryOp::kMul: return 2;
    default: return 3;
  }
}

void Print(const SizeExpr& expr, std::string* out);

void PrintOperand(const SizeExpr& expr, bool parenthesize, std::string* out) {
  if (parenthesize) *out += '(';
  Print(expr, out);
  if (parenthesize) *out += ')';
}

void Print(const SizeExpr& expr, std::string* out) {
  if (!expr.defined()) {
    *out += "<null>";
    return;
  }
  if (const auto* imm = expr.as<IntImmObj>()) {
    *out += std::to_string(imm->value());
    return;
  }
  if (const auto* var = expr.as<SizeVarObj>()) {
    *out += var->name().view();
    return;
  }
  const auto* node = expr.as<BinaryObj>();
  const int precedence = Precedence(expr);
  if (precedence == 3) {
    *out += internal::OpSpelling(node->op());
    *out += '(';
    Print(node->a(), out);
    *out += ", ";
    Print(node->b(), out);
    *out += ')';
    return;
  }
  PrintOperand(node->a(), Precedence(node->a()) < precedence, out);
  *out += ' ';
  *out += internal::OpSpelling(node->op());
  *out += ' ';
  PrintOperand(node->b(), Precedence(node->b()) <= precedence, out);
}

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

/// Why and where the text is bad; thrown inside the parser, returned by TryParseSizeExpr.
struct ParseFailure {
  size_t offset;
  std::string kind;
  std::string message;
};

/// Recursive descent over the characters (the grammar is in size_expr.h). Positions in
/// errors are 1-based columns of `text`.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  SizeExpr Run() {
    SizeExpr expr = ParseSum();
    SkipSpace();
    if (pos_ < text_.size()) Fail(pos_, "an operator (+, -, *) or the end of the text");
    return expr;
  }

 private:
  SizeExpr ParseSum() {
    SizeExpr expr = ParseProduct();
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || (text_[pos_] != '+' && text_[pos_] != '-')) return expr;
      const size_t at = pos_++;
      const BinaryOp op = text_[at] == '+' ? BinaryOp::kAdd : BinaryOp::kSub;
      SizeExpr rhs = ParseProduct();
      expr = Build(at, op, expr, rhs);
    }
  }

  SizeExpr ParseProduct() {
    SizeExpr expr = ParseOperand();
    while (true) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '*') return expr;
      const size_t at = pos_++;
      SizeExpr rhs = ParseOperand();
      expr = Build(at, BinaryOp::kMul, expr, rhs);
    }
  }

  SizeExpr ParseOperand() {
    SkipSpace();
    const size_t start = pos_;
    if (++nesting_ > kMaxParseNesting) {
      Throw(start, "ValueError",
            "nesting deeper than " + std::to_string(kMaxParseNesting) + " levels");
    }
    SizeExpr expr = ParseOperandAt(start);
    --nesting_;
    return expr;
  }

  SizeExpr ParseOperandAt(size_t start) {
    const char c = Peek();
    if (IsDigit(c) || (c == '-' && IsDigit(Peek(1)))) return ParseInt(start);
    if (c == '(') {
      ++pos_;
      SizeExpr inner = ParseSum();
      Expect(')');
      return inner;
    }
    if (!IsIdentStart(c)) {
      Fail(start, "a number, a name, floordiv/floormod/min/max(...) or '('");
    }
    while (pos_ < text_.size() && (IsIdentStart(text_[pos_]) || IsDigit(text_[pos_]))) ++pos_;
    const std::string_view word = text_.substr(start, pos_ - start);
    const std::optional<BinaryOp> op = FunctionNamed(word);
    SkipSpace();
    if (!op.has_value()) {
      if (Peek() == '(') {
        Throw(start, "ValueError",
              "unknown function '" + std::string(word) +
                  "' (the functions are floordiv, floormod, min and max)");
      }
      return At(start, [&] { return SizeVar(String(word)); });
    }
    Expect('(');
    SizeExpr a = ParseSum();
    Expect(',');
    SizeExpr b = ParseSum();
    Expect(')');
    return Build(start, *op, a, b);
  }

  static std::optional<BinaryOp> FunctionNamed(std::string_view word) {
    if (word == "floordiv") return BinaryOp::kFloorDiv;
    if (word == "floormod") return BinaryOp::kFloorMod;
    if (word == "min") return BinaryOp::kMin;
    if (word == "max") return BinaryOp::kMax;
    return std::nullopt;
  }

  SizeExpr ParseInt(size_t start) {
    if (text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() && IsDigit(text_[pos_])) ++pos_;
    int64_t value = 0;
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    const auto [end, error] = std::from_chars(first, last, value);
    if (error != std::errc() || end != last) {
      Throw(start, "ValueError",
            "integer " + std::string(first, last) + " does not fit in 64 bits");
    }
    return IntImm(value);
  }

  /// Runs a builder and puts the position of `at` in front of its error (overflow while
  /// folding, division by zero, nesting too deep).
  template <typename F>
  SizeExpr At(size_t at, F build) {
    try {
      return build();
    } catch (const Error& error) {
      Throw(at, error.kind(), error.message());
    }
  }

  SizeExpr Build(size_t at, BinaryOp op, const SizeExpr& a, const SizeExpr& b) {
    return At(at, [&] { return MakeBinary(op, a, b); });
  }

  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos)
      ++pos_;
  }
  void Expect(char c) {
    SkipSpace();
    if (Peek() != c) Fail(pos_, std::string("'") + c + "'");
    ++pos_;
  }

  [[noreturn]] void Fail(size_t at, const std::string& expected) {
    const std::string found =
        at >= text_.size() ? "the end of the text" : "'" + std::string(1, text_[at]) + "'";
    Throw(at, "ValueError", "expected " + expected + ", found " + found);
  }

  [[noreturn]] static void Throw(size_t at, const std::string& kind, const std::string& message) {
    throw ParseFailure{at, kind, message};
  }

  std::string_view text_;
  size_t pos_ = 0;
  int nesting_ = 0;
};

}  // namespace

std::string SizeExpr::ToString() const {
  std::string out;
  Print(*this, &out);
  return out;
}

std::ostream& operator<<(std::ostream& os, const SizeExpr& expr) { return os << expr.ToString(); }

SizeExprParseResult TryParseSizeExpr(std::string_view text) {
  SizeExprParseResult result;
  try {
    result.expr = Parser(text).Run();
  } catch (const ParseFailure& failure) {
    result.error_offset = failure.offset;
    result.error_kind = failure.kind;
    result.error = failure.message;
  }
  return result;
}

SizeExpr ParseSizeExpr(std::string_view text) {
  SizeExprParseResult result = TryParseSizeExpr(text);
  if (result.expr.defined()) return result.expr;
  // `column C: <message>`, then the text and a caret under the column.
  throw Error(result.error_kind, "column " + std::to_string(result.error_offset + 1) + ": " +
                                     result.error + "\n  " + std::string(text) + "\n  " +
                                     std::string(result.error_offset, ' ') + "^");
}

}  // namespace arith
}  // namespace kiln
