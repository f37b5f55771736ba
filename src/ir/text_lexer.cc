// The lexer of the IR text format (grammar: docs/ir-text-format.md).
#include <kiln/ffi/error.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "text_lexer_internal.h"

namespace kiln {
namespace ir {
namespace text {

/// `line L, column C: <message>` followed by the source line and a caret under the column.
void ThrowAt(std::string_view source, const Token& at, const std::string& kind,
             const std::string& message) {
  size_t begin = source.rfind('\n', at.offset == 0 ? 0 : at.offset - 1);
  begin = (begin == std::string_view::npos || at.offset == 0) ? 0 : begin + 1;
  if (at.offset > 0 && at.offset <= source.size() && source[at.offset - 1] == '\n')
    begin = at.offset;
  size_t end = source.find('\n', begin);
  if (end == std::string_view::npos) end = source.size();
  std::string text = "line " + std::to_string(at.line) + ", column " + std::to_string(at.column) +
                     ": " + message + "\n  " + std::string(source.substr(begin, end - begin)) +
                     "\n  " + std::string(static_cast<size_t>(at.column - 1), ' ') + "^";
  throw Error(kind, text);
}

namespace {

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(source) {}

  std::vector<Token> Run() {
    std::vector<Token> tokens;
    bool after_dot = false;
    while (true) {
      SkipSpaceAndComments();
      Token token{TokenKind::kEnd, "", line_, column_, pos_};
      if (pos_ >= src_.size()) {
        tokens.push_back(token);
        return tokens;
      }
      const char c = src_[pos_];
      if (c == '%' || c == '@') {
        Advance(1);
        token.kind = c == '%' ? TokenKind::kLocal : TokenKind::kGlobal;
        if (c == '@' && Peek() == '"') {
          token.text = ReadString(token);
        } else {
          token.text = ReadWhile(IsIdentChar);
          if (token.text.empty()) Fail(token, "expected a name after '" + std::string(1, c) + "'");
        }
      } else if (IsIdentStart(c)) {
        token.kind = TokenKind::kIdent;
        token.text = ReadWhile([](char ch) { return IsIdentChar(ch) || ch == '.'; });
      } else if (c == '"') {
        token.kind = TokenKind::kString;
        token.text = ReadString(token);
      } else if (c == '-' && Peek(1) == '>') {
        token.kind = TokenKind::kArrow;
        token.text = "->";
        Advance(2);
      } else if (IsDigit(c) || (c == '-' && (IsDigit(Peek(1)) || FollowedByInfOrNan()))) {
        ReadNumber(&token, after_dot);
      } else if (std::strchr("()[]{},:;=.+-*", c) != nullptr) {
        // + - * only appear in symbolic dimensions (`Tensor[(n - 1, 3), float32]`).
        token.kind = TokenKind::kPunct;
        token.text = std::string(1, c);
        Advance(1);
      } else {
        Fail(token, "unexpected character '" + std::string(1, c) + "'");
      }
      after_dot = token.kind == TokenKind::kPunct && token.text == ".";
      tokens.push_back(std::move(token));
    }
  }

 private:
  char Peek(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }
  void Advance(size_t n) {
    for (size_t i = 0; i < n && pos_ < src_.size(); ++i, ++pos_) {
      if (src_[pos_] == '\n') {
        ++line_;
        column_ = 1;
      } else {
        ++column_;
      }
    }
  }
  /// Whether the word after a '-' here is inf or nan (a float), not a name (`n-m` in a dimension).
  bool FollowedByInfOrNan() const {
    size_t end = pos_ + 1;
    while (end < src_.size() && IsIdentChar(src_[end])) ++end;
    const std::string_view word = src_.substr(pos_ + 1, end - pos_ - 1);
    return word == "inf" || word == "nan";
  }
  template <typename Pred>
  std::string ReadWhile(Pred pred) {
    const size_t begin = pos_;
    while (pos_ < src_.size() && pred(src_[pos_])) Advance(1);
    return std::string(src_.substr(begin, pos_ - begin));
  }
  void SkipSpaceAndComments() {
    while (pos_ < src_.size()) {
      if (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\r' || src_[pos_] == '\n') {
        Advance(1);
      } else if (src_[pos_] == '/' && Peek(1) == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') Advance(1);
      } else {
        return;
      }
    }
  }
  /// Integers, decimals with exponents, and -inf/-nan; after '.' (tuple index) digits only.
  void ReadNumber(Token* token, bool after_dot) {
    const size_t begin = pos_;
    token->kind = TokenKind::kInt;
    if (Peek() == '-') Advance(1);
    if (IsIdentStart(Peek())) {
      std::string word = ReadWhile(IsIdentChar);
      if (word != "inf" && word != "nan") Fail(*token, "expected a number after '-'");
      token->kind = TokenKind::kFloat;
    } else {
      ReadWhile(IsDigit);
      if (!after_dot && Peek() == '.' && IsDigit(Peek(1))) {
        token->kind = TokenKind::kFloat;
        Advance(1);
        ReadWhile(IsDigit);
      }
      if (!after_dot && (Peek() == 'e' || Peek() == 'E')) {
        token->kind = TokenKind::kFloat;
        Advance(1);
        if (Peek() == '+' || Peek() == '-') Advance(1);
        if (ReadWhile(IsDigit).empty()) Fail(*token, "expected digits in the exponent");
      }
    }
    token->text = std::string(src_.substr(begin, pos_ - begin));
  }
  std::string ReadString(const Token& token) {
    Advance(1);  // the opening quote
    std::string out;
    while (true) {
      if (pos_ >= src_.size() || src_[pos_] == '\n') Fail(token, "unterminated string");
      const char c = src_[pos_];
      Advance(1);
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = Peek();
      Advance(1);
      if (e == 'n') {
        out += '\n';
      } else if (e == 't') {
        out += '\t';
      } else if (e == '"' || e == '\\') {
        out += e;
      } else if (e == 'x') {
        const std::string hex(src_.substr(pos_, 2));
        char* end = nullptr;
        const long value = std::strtol(hex.c_str(), &end, 16);
        if (hex.size() != 2 || end != hex.c_str() + 2) Fail(token, "bad \\x escape in string");
        out += static_cast<char>(value);
        Advance(2);
      } else {
        Fail(token, "unknown escape '\\" + std::string(1, e) + "' in string");
      }
    }
  }
  [[noreturn]] void Fail(const Token& at, const std::string& message) {
    ThrowAt(src_, at, "ValueError", message);
  }

  std::string_view src_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source) { return Lexer(source).Run(); }

}  // namespace text
}  // namespace ir
}  // namespace kiln
