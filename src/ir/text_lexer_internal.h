// The lexer of the IR text format, shared by the parser (text_parser.cc).
#ifndef KILN_SRC_IR_TEXT_LEXER_INTERNAL_H_
#define KILN_SRC_IR_TEXT_LEXER_INTERNAL_H_

#include <kiln/ffi/c_api.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {
namespace ir {
namespace text {

enum class TokenKind { kLocal, kGlobal, kIdent, kInt, kFloat, kString, kPunct, kArrow, kEnd };

struct Token {
  TokenKind kind;
  std::string text;  // the name without %/@, the unescaped string, the number or the punctuation
  int line;
  int column;
  size_t offset;
};

inline bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

/// Throws kiln::Error of `kind` with `line L, column C: <message>`, the source line and a caret.
[[noreturn]] void ThrowAt(std::string_view source, const Token& at, const std::string& kind,
                          const std::string& message);

/// The tokens of `source`, ending with one kEnd token; ValueError (via ThrowAt) on a bad token.
std::vector<Token> Tokenize(std::string_view source);

}  // namespace text
}  // namespace ir
}  // namespace kiln

#endif  // KILN_SRC_IR_TEXT_LEXER_INTERNAL_H_
