// The text parser of the tensor-level IR (kiln/tir/node.h), with the graph IR's lexer. A node is
// `kind(field=value, ...)` with its fields in their registered order; what a value is read as
// follows the field's kind, so plugin kinds parse like built-in ones.
#include <cmath>
#include <map>

#include "../ir/text_lexer_internal.h"
#include "node_internal.h"

namespace kiln {
namespace tir {
namespace {

using ir::text::Token;
using ir::text::TokenKind;

class Parser {
 public:
  explicit Parser(std::string_view source) : src_(source), tokens_(ir::text::Tokenize(source)) {}

  Node ParseAll() {
    Node node = ParseNode(0);
    if (Peek().kind != TokenKind::kEnd) Fail(Peek(), "expected the end of the text");
    return node;
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  [[noreturn]] void Fail(const Token& at, const std::string& message) const {
    ir::text::ThrowAt(src_, at, "ValueError", message);
  }
  bool IsPunct(const Token& token, const char* text) const {
    return token.kind == TokenKind::kPunct && token.text == text;
  }
  void Expect(const char* punct) {
    if (!IsPunct(Peek(), punct)) Fail(Peek(), std::string("expected '") + punct + "'");
    Next();
  }

  Node ParseNode(int depth) {
    if (depth >= internal::kMaxDepth) Fail(Peek(), "nodes nest too deeply");
    const Token& name = Next();
    if (name.kind != TokenKind::kIdent) Fail(name, "expected a node kind");
    const NodeInfo* info = FindNode(name.text);
    if (info == nullptr) Fail(name, "unknown node kind '" + name.text + "'");
    Expect("(");
    // Buffers a function or an allocation declares are in scope in its later fields.
    const size_t scope = declared_.size();
    std::vector<Any> fields;
    for (size_t i = 0; i < info->fields.size(); ++i) {
      if (i > 0) Expect(",");
      const FieldInfo& field = info->fields[i];
      const Token& key = Next();
      if (key.kind != TokenKind::kIdent || key.text != field.name) {
        Fail(key, "expected field '" + field.name + "' of " + info->name);
      }
      Expect("=");
      const Token& start = Peek();
      if (field.optional && start.kind == TokenKind::kIdent && start.text == "none") {
        Next();
        fields.emplace_back(nullptr);
        continue;
      }
      fields.push_back(ParseField(field.kind, depth));
    }
    Expect(")");
    declared_.resize(scope);
    try {
      return MakeNode(info->name, std::move(fields));
    } catch (const Error& error) {
      Fail(name, error.message());
    }
  }

  Any ParseField(FieldKind kind, int depth) {
    switch (kind) {
      case FieldKind::kIndex: return ParseIndex();
      case FieldKind::kIndices:
      case FieldKind::kValues:
      case FieldKind::kStmts:
      case FieldKind::kBuffers: return ParseList(kind, depth);
      case FieldKind::kValue:
      case FieldKind::kStmt: return ParseNode(depth + 1);
      case FieldKind::kBuffer: {
        Node buffer = ParseNode(depth + 1);
        declared_.push_back(buffer);
        return buffer;
      }
      case FieldKind::kBufferRef: return ParseBufferRef();
      case FieldKind::kIdent: {
        const Token& token = Next();
        if (token.kind != TokenKind::kIdent) Fail(token, "expected a name");
        return String(token.text);
      }
      case FieldKind::kString: {
        const Token& token = Next();
        if (token.kind != TokenKind::kString) Fail(token, "expected a string");
        return String(token.text);
      }
      case FieldKind::kDType: {
        const Token& token = Next();
        std::optional<DLDataType> dtype = ParseDataType(token.text);
        if (token.kind != TokenKind::kIdent || !dtype.has_value()) {
          Fail(token, "expected a data type (float32, int64, ...)");
        }
        return *dtype;
      }
      case FieldKind::kInt: {
        const Token& token = Next();
        if (token.kind != TokenKind::kInt) Fail(token, "expected an integer");
        try {
          return int64_t{std::stoll(token.text)};
        } catch (const std::exception&) {
          Fail(token, "the integer " + token.text + " does not fit in int64");
        }
      }
      case FieldKind::kFloat: return ParseFloat();
    }
    Fail(Peek(), "unreadable field");
  }

  Any ParseList(FieldKind kind, int depth) {
    const FieldKind item = kind == FieldKind::kIndices  ? FieldKind::kIndex
                           : kind == FieldKind::kValues ? FieldKind::kValue
                           : kind == FieldKind::kStmts  ? FieldKind::kStmt
                                                        : FieldKind::kBuffer;
    Expect("[");
    Array<Any> items;
    while (!IsPunct(Peek(), "]")) {
      items.push_back(ParseField(item, depth));
      if (!IsPunct(Peek(), ",")) break;
      Next();  // a trailing comma is allowed: the printer writes one after each statement
    }
    Expect("]");
    return items;
  }

  /// A size expression: the source text up to the next ',', ')' or ']' outside its own
  /// parentheses, read by arith::TryParseSizeExpr.
  arith::SizeExpr ParseIndex() {
    const Token& start = Peek();
    int depth = 0;
    while (Peek().kind != TokenKind::kEnd) {
      const Token& token = Peek();
      if (depth == 0 && (IsPunct(token, ",") || IsPunct(token, ")") || IsPunct(token, "]"))) {
        break;
      }
      if (IsPunct(token, "(")) ++depth;
      if (IsPunct(token, ")")) --depth;
      Next();
    }
    const Token& end = Peek();
    if (&end == &start) Fail(start, "expected an index (a size expression)");
    const arith::SizeExprParseResult parsed =
        arith::TryParseSizeExpr(src_.substr(start.offset, end.offset - start.offset));
    if (!parsed.expr.defined()) Fail(start, "not a size expression: " + parsed.error);
    return parsed.expr;
  }

  Node ParseBufferRef() {
    const Token& token = Next();
    if (token.kind != TokenKind::kLocal) Fail(token, "expected a buffer reference '%name'");
    for (auto it = declared_.rbegin(); it != declared_.rend(); ++it) {
      if (it->field_as<String>("name").str() == token.text) return *it;
    }
    Fail(token, "no buffer '" + token.text + "' is declared here");
  }

  double ParseFloat() {
    const Token& token = Next();
    if (token.kind == TokenKind::kIdent && (token.text == "inf" || token.text == "nan")) {
      return token.text == "inf" ? HUGE_VAL : std::nan("");
    }
    if (token.kind != TokenKind::kFloat && token.kind != TokenKind::kInt) {
      Fail(token, "expected a number");
    }
    if (token.text == "-inf") return -HUGE_VAL;
    if (token.text == "-nan") return -std::nan("");
    try {
      return std::stod(token.text);
    } catch (const std::exception&) {
      Fail(token, "the number " + token.text + " is out of range");
    }
  }

  std::string_view src_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  std::vector<Node> declared_;  // buffers in scope, innermost last
};

}  // namespace

Node ParseText(std::string_view text) { return Parser(text).ParseAll(); }

}  // namespace tir
}  // namespace kiln
