// The IR text parser (grammar: docs/ir-text-format.md).
//
// A recursive-descent parser over the tokens of text_lexer.cc. The data flow of a printed function
// is a flat list of statements, so a long chain costs no recursion; what does recurse (parentheses,
// brackets, nested functions and types written by hand) is capped at kMaxNesting levels with a
// clear error instead of a stack overflow.
#include <kiln/arith/size_expr.h>
#include <kiln/ffi/registry.h>
#include <kiln/ir/control_flow.h>
#include <kiln/ir/op.h>
#include <kiln/ir/text_format.h>

#include "text_lexer_internal.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace kiln {
namespace ir {
namespace {

constexpr int kMaxNesting = 256;

using text::IsDigit;
using text::ThrowAt;
using text::Token;
using text::TokenKind;

std::string Describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kEnd: return "end of input";
    case TokenKind::kLocal: return "'%" + token.text + "'";
    case TokenKind::kGlobal: return "'@" + token.text + "'";
    case TokenKind::kString: return "a string";
    default: return "'" + token.text + "'";
  }
}

class Parser {
 public:
  Parser(std::string_view source, const Array<Tensor>& constants)
      : src_(source), tokens_(text::Tokenize(source)), constants_(constants) {}

  IRModule ParseModule() {
    Map<String, Any> module_attrs;
    if (PeekIdent("module")) {
      Next();
      ExpectIdent("attrs");
      Expect("=");
      module_attrs = ParseAttrMap();
      Expect(";");
    }
    IRModule module = IRModule::Create(module_attrs);
    std::unordered_map<std::string, bool> defined;
    while (Peek().kind != TokenKind::kEnd) {
      ExpectIdent("def");
      const Token& name = Peek();
      if (name.kind != TokenKind::kGlobal) Fail(name, "a global name such as @main");
      Next();
      if (defined.count(name.text))
        Fail(name, "a new function name", "ValueError", "a second definition of @" + name.text);
      defined[name.text] = true;
      free_vars_.clear();  // the printer names free variables per function
      GlobalVar gvar = GetGlobal(name);
      Function func = ParseFunctionRest();
      module.Add(gvar, func);
    }
    for (const auto& [name, use] : global_uses_) {
      if (!defined.count(name))
        ThrowAt(src_, use, "ValueError", "undefined global function @" + name);
    }
    return module;
  }

  Expr ParseStandaloneExpr() {
    scopes_.emplace_back();
    Expr result = ParseBody();
    if (Peek().kind != TokenKind::kEnd) Fail(Peek(), "end of input");
    return result;
  }

  Type ParseStandaloneType() {
    Type type = ParseType();
    if (Peek().kind != TokenKind::kEnd) Fail(Peek(), "end of input");
    return type;
  }

 private:
  // ------------------------------------------------------------------ tokens
  const Token& Peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token& Next() {
    const Token& token = Peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return token;
  }
  bool PeekPunct(const char* text, size_t ahead = 0) const {
    return Peek(ahead).kind == TokenKind::kPunct && Peek(ahead).text == text;
  }
  bool PeekIdent(const char* text) const {
    return Peek().kind == TokenKind::kIdent && Peek().text == text;
  }
  bool Accept(const char* punct) {
    if (!PeekPunct(punct)) return false;
    Next();
    return true;
  }
  void Expect(const char* punct) {
    if (!Accept(punct)) Fail(Peek(), std::string("'") + punct + "'");
  }
  void ExpectIdent(const char* word) {
    if (!PeekIdent(word)) Fail(Peek(), std::string("'") + word + "'");
    Next();
  }
  const Token& ExpectKind(TokenKind kind, const char* what) {
    if (Peek().kind != kind) Fail(Peek(), what);
    return Next();
  }
  [[noreturn]] void Fail(const Token& at, const std::string& expected,
                         const char* kind = "ValueError", const std::string& found = "") {
    ThrowAt(src_, at, kind,
            "expected " + expected + ", found " + (found.empty() ? Describe(at) : found));
  }
  /// Runs `build` (a node constructor, Op::Get) and puts the position in front of its error.
  template <typename F>
  auto At(const Token& at, F build) -> decltype(build()) {
    try {
      return build();
    } catch (const Error& error) {
      ThrowAt(src_, at, error.kind(), error.message());
    }
  }
  /// Counts one level of bracket or function nesting for as long as it lives.
  struct NestingGuard {
    NestingGuard(Parser* parser, const Token& at) : parser_(parser) {
      if (++parser_->depth_ > kMaxNesting) {
        ThrowAt(parser_->src_, at, "ValueError",
                "nesting deeper than " + std::to_string(kMaxNesting) +
                    " levels; bind inner expressions to %temporaries instead");
      }
    }
    ~NestingGuard() { --parser_->depth_; }
    Parser* parser_;
  };

  int64_t ParseInt(const Token& token) {
    int64_t value = 0;
    auto [end, ec] =
        std::from_chars(token.text.data(), token.text.data() + token.text.size(), value);
    if (ec != std::errc() || end != token.text.data() + token.text.size()) {
      Fail(token, "an integer that fits in 64 bits");
    }
    return value;
  }

  // ------------------------------------------------------------------ types
  Type ParseType() {
    const Token& start = Peek();
    NestingGuard guard(this, start);
    if (PeekIdent("Tensor")) {
      Next();
      Expect("[");
      Array<Dim> shape;
      Expect("(");
      while (!PeekPunct(")")) {
        shape.push_back(ParseDim());
        if (!Accept(",")) break;
      }
      Expect(")");
      Expect(",");
      const DLDataType dtype = ParseDType();
      Expect("]");
      return At(start, [&] { return TensorType(shape, dtype); });
    }
    if (PeekIdent("fn")) {
      Next();
      Array<Type> params = ParseTypeList();
      if (Peek().kind != TokenKind::kArrow) Fail(Peek(), "'->'");
      Next();
      Type ret = ParseType();
      return FuncType(params, ret);
    }
    if (PeekPunct("(")) return TupleType(ParseTypeList());
    Fail(start, "a type");
  }
  /// One extent: an integer, or a size expression (`batch * 2`, `floordiv(n, 2)`), which
  /// arith::ParseSizeExpr reads from the source text up to the next ',' or ')' outside its own
  /// parentheses, so the two parsers share one grammar.
  Dim ParseDim() {
    const Token& start = Peek();
    if (start.kind == TokenKind::kInt && (PeekPunct(",", 1) || PeekPunct(")", 1))) {
      Next();
      const int64_t extent = ParseInt(start);
      return At(start, [&] { return Dim(IntDim(extent)); });
    }
    const arith::SizeExpr expr = ParseSizeExprRun("a dimension");
    return At(start, [&] { return Dim::FromSizeExpr(expr); });
  }
  /// The size expression of the tokens from here up to the next ',' or ')' outside its own
  /// parentheses (or any token a size expression cannot hold, such as ']'), read by
  /// arith::ParseSizeExpr from the source text; `what` names it in errors.
  arith::SizeExpr ParseSizeExprRun(const char* what) {
    const Token& start = Peek();
    int depth = 0;
    for (const Token* token = &Peek(); IsSizeExprToken(*token); token = &Peek()) {
      if (token->text == ")" || (token->text == "," && depth == 0)) {
        if (depth == 0) break;
        --depth;
      } else if (token->text == "(") {
        ++depth;
      }
      Next();
    }
    const Token& end = Peek();
    if (&end == &start) Fail(start, what);
    const arith::SizeExprParseResult parsed =
        arith::TryParseSizeExpr(src_.substr(start.offset, end.offset - start.offset));
    if (!parsed.expr.defined()) {
      ThrowAt(src_, PositionAfter(start, parsed.error_offset), parsed.error_kind,
              std::string("in ") + what + ": " + parsed.error);
    }
    return parsed.expr;
  }
  static bool IsSizeExprToken(const Token& token) {
    if (token.kind == TokenKind::kIdent || token.kind == TokenKind::kInt) return true;
    return token.kind == TokenKind::kPunct && token.text.size() == 1 &&
           std::string_view("()+-*,").find(token.text[0]) != std::string_view::npos;
  }
  /// A position `offset` bytes after `from`, for errors inside a token run.
  Token PositionAfter(const Token& from, size_t offset) const {
    Token at = from;
    for (size_t i = 0; i < offset && at.offset < src_.size(); ++i, ++at.offset) {
      if (src_[at.offset] == '\n') {
        ++at.line;
        at.column = 1;
      } else {
        ++at.column;
      }
    }
    return at;
  }

  Array<Type> ParseTypeList() {
    Array<Type> types;
    Expect("(");
    while (!PeekPunct(")")) {
      types.push_back(ParseType());
      if (!Accept(",")) break;
    }
    Expect(")");
    return types;
  }
  DLDataType ParseDType() {
    const Token& token = Peek();
    std::optional<DLDataType> dtype;
    if (token.kind == TokenKind::kIdent) dtype = ParseDataType(token.text);
    if (!dtype.has_value()) Fail(token, "a dtype such as float32");
    Next();
    return *dtype;
  }

  // ------------------------------------------------------------------ attribute values
  Any ParseValue() {
    const Token& token = Peek();
    NestingGuard guard(this, token);
    if (StartsSizeExpr()) {
      // A symbolic extent of a size or sizes attribute: `newshape=[batch, seq * 4, 16]`.
      const arith::SizeExpr extent = ParseSizeExprRun("a size expression");
      if (std::optional<int64_t> constant = extent.as_int()) return *constant;
      return extent;
    }
    if (Accept("[")) {
      Array<Any> items;
      while (!PeekPunct("]")) {
        items.push_back(ParseValue());
        if (!Accept(",")) break;
      }
      Expect("]");
      return items;
    }
    Next();
    switch (token.kind) {
      case TokenKind::kInt: return ParseInt(token);
      case TokenKind::kFloat: return std::strtod(token.text.c_str(), nullptr);
      case TokenKind::kString: return String(token.text);
      case TokenKind::kIdent:
        if (token.text == "None") return Any();
        if (token.text == "true") return true;
        if (token.text == "false") return false;
        if (token.text == "inf" || token.text == "nan")
          return std::strtod(token.text.c_str(), nullptr);
        break;
      default: break;
    }
    Fail(token, "a value (None, true, false, a number, a string or a [list])");
  }
  /// Whether the value here is a size expression rather than a plain value: a name other than
  /// the keywords, or a number followed by an operator.
  bool StartsSizeExpr() const {
    const Token& token = Peek();
    if (token.kind == TokenKind::kIdent) {
      return token.text != "None" && token.text != "true" && token.text != "false" &&
             token.text != "inf" && token.text != "nan";
    }
    if (token.kind != TokenKind::kInt) return false;
    return PeekPunct("+", 1) || PeekPunct("-", 1) || PeekPunct("*", 1);
  }
  /// `{key=value, ...}`; keys are identifiers or strings.
  Map<String, Any> ParseAttrMap() {
    Map<String, Any> attrs;
    Expect("{");
    while (!PeekPunct("}")) {
      const Token& key = Peek();
      if (key.kind != TokenKind::kIdent && key.kind != TokenKind::kString)
        Fail(key, "an attribute name");
      Next();
      Expect("=");
      if (attrs.count(String(key.text)))
        Fail(key, "a new attribute name", "ValueError", "a second '" + key.text + "'");
      attrs.Set(String(key.text), ParseValue());
      if (!Accept(",")) break;
    }
    Expect("}");
    return attrs;
  }

  // ------------------------------------------------------------------ expressions
  GlobalVar GetGlobal(const Token& name) {
    auto it = globals_.find(name.text);
    if (it != globals_.end()) return it->second;
    global_uses_.emplace(name.text, name);
    return globals_.emplace(name.text, At(name, [&] { return GlobalVar(String(name.text)); }))
        .first->second;
  }

  /// `(params) [-> type] [attrs={...}] { body }`, after `def @name` or `fn`.
  Function ParseFunctionRest() {
    const Token& start = Peek();
    NestingGuard guard(this, start);
    Array<Var> params;
    std::unordered_map<std::string, Expr> scope;
    Expect("(");
    while (!PeekPunct(")")) {
      const Token& name = ExpectKind(TokenKind::kLocal, "a parameter such as %x");
      Type annotation;
      if (Accept(":")) annotation = ParseType();
      Var param = At(name, [&] { return Var(String(name.text), annotation); });
      if (!scope.emplace(name.text, param).second) {
        Fail(name, "a new parameter name", "ValueError", "a second '%" + name.text + "'");
      }
      params.push_back(param);
      if (!Accept(",")) break;
    }
    Expect(")");
    Type ret_type;
    if (Peek().kind == TokenKind::kArrow) {
      Next();
      ret_type = ParseType();
    }
    Map<String, Any> attrs;
    if (PeekIdent("attrs")) {
      Next();
      Expect("=");
      attrs = ParseAttrMap();
    }
    Expect("{");
    scopes_.push_back(std::move(scope));
    Expr body = ParseBody();
    scopes_.pop_back();
    Expect("}");
    return At(start, [&] { return Function(params, body, ret_type, attrs); });
  }

  /// `(%name = expr;)* expr`: the statements of a function body or a standalone expression.
  Expr ParseBody() {
    while (Peek().kind == TokenKind::kLocal && PeekPunct("=", 1)) {
      const Token& name = Next();
      Next();
      Expr value = ParseExpr();
      Expect(";");
      if (!scopes_.back().emplace(name.text, value).second) {
        Fail(name, "a new name", "ValueError", "a second definition of '%" + name.text + "'");
      }
    }
    return ParseExpr();
  }

  Expr ParseExpr() {
    const Token& start = Peek();
    NestingGuard guard(this, start);
    Expr expr = ParsePrimary();
    while (true) {
      const Token& token = Peek();
      if (Accept("(")) {
        Expr callee = expr;
        // C++17 lambdas cannot capture structured bindings: unpack into named locals.
        auto call_args = ParseCallArgs();
        const Array<Expr>& args = call_args.first;
        const Map<String, Any>& attrs = call_args.second;
        expr = At(token, [&] { return Call(callee, args, attrs); });
      } else if (Accept(".")) {
        const Token& index_token = ExpectKind(TokenKind::kInt, "a tuple index");
        const int64_t index = ParseInt(index_token);
        Expr tuple = expr;
        expr = At(index_token, [&] { return TupleGetItem(tuple, index); });
      } else {
        return expr;
      }
    }
  }

  std::pair<Array<Expr>, Map<String, Any>> ParseCallArgs() {
    Array<Expr> args;
    Map<String, Any> attrs;
    while (!PeekPunct(")")) {
      const Token& token = Peek();
      if ((token.kind == TokenKind::kIdent || token.kind == TokenKind::kString) &&
          PeekPunct("=", 1)) {
        Next();
        Next();
        if (attrs.count(String(token.text))) {
          Fail(token, "a new attribute name", "ValueError", "a second '" + token.text + "'");
        }
        attrs.Set(String(token.text), ParseValue());
      } else {
        if (!attrs.empty()) Fail(token, "an attribute key=value (arguments come first)");
        args.push_back(ParseExpr());
      }
      if (!Accept(",")) break;
    }
    Expect(")");
    return {args, attrs};
  }

  Expr ParsePrimary() {
    const Token& token = Peek();
    switch (token.kind) {
      case TokenKind::kLocal: Next(); return LookupLocal(token);
      case TokenKind::kGlobal: Next(); return GetGlobal(token);
      case TokenKind::kIdent:
        if (token.text == "fn") {
          Next();
          return ParseFunctionRest();
        }
        if ((token.text == "if" || token.text == "loop") && PeekPunct("(", 1)) {
          return ParseControlFlow();
        }
        if (token.text == "const") return ParseInlineConstant();
        if (token.text == "meta") return ParseMetaConstant();
        Next();
        return At(token, [&] { return Op::Get(token.text); });
      case TokenKind::kPunct:
        if (token.text == "(") return ParseTupleOrGroup();
        break;
      default: break;
    }
    Fail(token, "an expression");
  }

  /// `if(cond, then, else)` or `loop(trip_count, condition, initial..., body)`, whose branches
  /// and body are functions (include/kiln/ir/control_flow.h).
  Expr ParseControlFlow() {
    const Token& keyword = Next();
    Next();
    const Token& first = Peek();
    // C++17 lambdas cannot capture structured bindings: unpack into named locals.
    const auto call_args = ParseCallArgs();
    const Array<Expr>& args = call_args.first;
    const Map<String, Any>& attrs = call_args.second;
    const bool is_if = keyword.text == "if";
    const std::optional<Any> iterations = attrs.Get(String("iterations"));
    const std::optional<Any> sizes = attrs.Get(String("sizes"));
    if (is_if ? attrs.size() != (sizes.has_value() ? 1U : 0U)
              : attrs.size() != 1 || !iterations.has_value()) {
      Fail(first, is_if ? "`if` with no attribute but `sizes=[...]`"
                        : "`loop` with one attribute, `iterations=<size>`");
    }
    const int64_t num_args = args.size();
    auto body = [&](int64_t i) -> Function {
      const auto* function = args[i].as<FunctionObj>();
      if (function == nullptr) {
        ThrowAt(src_, keyword, "TypeError",
                "operand " + std::to_string(i) + " of `" + keyword.text +
                    "` must be a function (`fn (...) {...}`), got a " + args[i]->GetTypeKey());
      }
      return Downcast<Function>(args[i]);
    };
    if (is_if) {
      if (num_args != 3) {
        ThrowAt(src_, keyword, "ValueError",
                "`if` takes a condition and two branches, got " + std::to_string(num_args) +
                    " operands");
      }
      Array<arith::SizeExpr> extents;
      if (sizes.has_value()) {
        const std::optional<Array<Any>> items = sizes->as<Array<Any>>();
        if (!items.has_value()) Fail(first, "`sizes=` a list of size expressions");
        for (const Any& item : *items) {
          if (item.type_index() == kKilnTypeInt) {
            extents.push_back(arith::IntImm(item.cast<int64_t>()));
          } else if (std::optional<arith::SizeExpr> extent = item.as<arith::SizeExpr>()) {
            extents.push_back(*extent);
          } else {
            Fail(first, "`sizes=` a list of size expressions");
          }
        }
      }
      return At(keyword, [&] { return If(args[0], body(1), body(2), extents); });
    }
    if (num_args < 3) {
      ThrowAt(src_, keyword, "ValueError",
              "`loop` takes a trip count, a condition, the initial values and a body, got " +
                  std::to_string(num_args) + " operands");
    }
    Array<Expr> initial;
    for (int64_t i = 2; i + 1 < num_args; ++i) initial.push_back(args[i]);
    std::optional<arith::SizeExpr> count = iterations->as<arith::SizeExpr>();
    if (iterations->type_index() == kKilnTypeInt)
      count = arith::IntImm(iterations->cast<int64_t>());
    if (!count.has_value()) Fail(first, "`iterations=` a size expression");
    return At(keyword, [&] { return Loop(args[0], args[1], initial, body(num_args - 1), *count); });
  }

  /// A bound name, or a free variable (annotated at its first use: `%x: Tensor[...]`).
  Expr LookupLocal(const Token& name) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name.text);
      if (found != it->end()) return found->second;
    }
    if (IsDigit(name.text[0]))
      Fail(name, "a defined name", "ValueError", "undefined '%" + name.text + "'");
    auto it = free_vars_.find(name.text);
    if (it != free_vars_.end()) return it->second;
    Type annotation;
    if (Accept(":")) annotation = ParseType();
    Var var = At(name, [&] { return Var(String(name.text), annotation); });
    free_vars_.emplace(name.text, var);
    return var;
  }

  /// `()`, `(e,)`, `(e1, e2, ...)`, or `(e)` for grouping.
  Expr ParseTupleOrGroup() {
    const Token& start = Next();
    Array<Expr> fields;
    bool trailing_comma = false;
    while (!PeekPunct(")")) {
      fields.push_back(ParseExpr());
      trailing_comma = Accept(",");
      if (!trailing_comma) break;
    }
    Expect(")");
    if (fields.size() == 1 && !trailing_comma) return fields[0];
    return At(start, [&] { return Tuple(fields); });
  }

  /// `meta[Constant][i]`: a tensor of the side table given to the parser.
  Expr ParseMetaConstant() {
    const Token& start = Next();
    Expect("[");
    ExpectIdent("Constant");
    Expect("]");
    Expect("[");
    const Token& index_token = ExpectKind(TokenKind::kInt, "a constant index");
    const int64_t index = ParseInt(index_token);
    Expect("]");
    if (index < 0 || index >= constants_.size()) {
      ThrowAt(src_, index_token, "IndexError",
              "meta[Constant][" + std::to_string(index) +
                  "] is out of range: the side table holds " + std::to_string(constants_.size()) +
                  " constants");
    }
    return At(start, [&] { return Constant(constants_[index]); });
  }

  /// `const(dtype, (dims), [elements])`, elements in row-major order.
  Expr ParseInlineConstant() {
    const Token& start = Next();
    Expect("(");
    const Token& dtype_token = Peek();
    const DLDataType dtype = ParseDType();
    Expect(",");
    std::vector<int64_t> shape;
    Expect("(");
    int64_t count = 1;
    while (!PeekPunct(")")) {
      const Token& dim = ExpectKind(TokenKind::kInt, "a dimension");
      shape.push_back(ParseInt(dim));
      if (shape.back() < 0 || shape.back() > (int64_t{1} << 40))
        Fail(dim, "a dimension between 0 and 2^40");
      // Compared before multiplying: the product of two extents of up to 2^40 overflows int64.
      if (shape.back() != 0 && count > (int64_t{1} << 40) / shape.back())
        Fail(dim, "a constant of fewer than 2^40 elements");
      count *= shape.back();
      if (!Accept(",")) break;
    }
    Expect(")");
    Expect(",");
    const int64_t element_bytes = (dtype.bits + 7) / 8;
    const bool is_float = dtype.code == kDLFloat && (dtype.bits == 32 || dtype.bits == 64);
    const bool is_int = (dtype.code == kDLInt || dtype.code == kDLUInt) &&
                        (dtype.bits == 1 || dtype.bits == 8 || dtype.bits == 16 ||
                         dtype.bits == 32 || dtype.bits == 64);
    if (dtype.lanes != 1 || (!is_float && !is_int) || (dtype.code == kDLInt && dtype.bits == 1)) {
      ThrowAt(src_, dtype_token, "ValueError",
              "a constant of dtype " + DataTypeToString(dtype) +
                  " cannot be written inline; use meta[Constant][i]");
    }
    // Every element is at least one token: a count the rest of the input cannot hold fails before
    // the storage is allocated, so a few bytes of text cannot ask for gigabytes.
    const int64_t tokens_left = static_cast<int64_t>(tokens_.size() - pos_);
    if (count > tokens_left) {
      Fail(Peek(), std::to_string(count) + " elements", "ValueError",
           "only " + std::to_string(tokens_left) + " tokens left");
    }
    auto storage =
        std::make_shared<std::vector<char>>(static_cast<size_t>(count * element_bytes) + 1);
    Expect("[");
    int64_t n = 0;
    while (!PeekPunct("]")) {
      const Token& element = Next();
      if (n >= count) Fail(element, "']' after " + std::to_string(count) + " elements");
      char* out = storage->data() + n * element_bytes;
      if (is_float) {
        const bool word =
            element.kind == TokenKind::kIdent && (element.text == "inf" || element.text == "nan");
        if (element.kind != TokenKind::kInt && element.kind != TokenKind::kFloat && !word) {
          Fail(element, "a number");
        }
        if (dtype.bits == 32) {
          const float value = std::strtof(element.text.c_str(), nullptr);
          std::memcpy(out, &value, 4);
        } else {
          const double value = std::strtod(element.text.c_str(), nullptr);
          std::memcpy(out, &value, 8);
        }
      } else {
        int64_t value = 0;
        if (dtype.bits == 1 && element.kind == TokenKind::kIdent &&
            (element.text == "true" || element.text == "false")) {
          value = element.text == "true";
        } else if (element.kind == TokenKind::kInt) {
          value = ParseInt(element);
        } else {
          Fail(element, dtype.bits == 1 ? "true or false" : "an integer");
        }
        StoreInt(element, dtype, value, out);
      }
      ++n;
      if (!Accept(",")) break;
    }
    if (n != count)
      Fail(Peek(), std::to_string(count) + " elements", "ValueError", std::to_string(n));
    Expect("]");
    Expect(")");
    return At(start, [&] {
      return Constant(
          Tensor::FromMemory(storage->data(), shape, dtype, DLDevice{kDLCPU, 0}, [storage] {}));
    });
  }

  void StoreInt(const Token& at, DLDataType dtype, int64_t value, char* out) {
    const int bits = dtype.bits == 1 ? 1 : dtype.bits;
    bool fits = true;
    if (dtype.code == kDLUInt) {
      fits = value >= 0 && (bits == 64 || value < (int64_t{1} << bits));
    } else if (bits < 64) {
      fits = value >= -(int64_t{1} << (bits - 1)) && value < (int64_t{1} << (bits - 1));
    }
    if (!fits) Fail(at, "a value that fits in " + DataTypeToString(dtype));
    const int64_t size = (dtype.bits + 7) / 8;
    // Little-endian hosts only, as DLPack data is native-endian and Kiln targets x86-64/AArch64.
    std::memcpy(out, &value, static_cast<size_t>(size));
  }

  std::string_view src_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
  const Array<Tensor>& constants_;
  std::vector<std::unordered_map<std::string, Expr>> scopes_;
  std::unordered_map<std::string, Var> free_vars_;
  std::unordered_map<std::string, GlobalVar> globals_;
  std::unordered_map<std::string, Token> global_uses_;
};

}  // namespace

IRModule ParseModule(std::string_view text, const Array<Tensor>& constants) {
  return Parser(text, constants).ParseModule();
}

Expr ParseExpr(std::string_view text, const Array<Tensor>& constants) {
  return Parser(text, constants).ParseStandaloneExpr();
}

Type ParseType(std::string_view text) {
  return Parser(text, Array<Tensor>()).ParseStandaloneType();
}

KILN_REGISTER_GLOBAL("ir.ParseModule")
    .set_body_typed([](const String& text, const Array<Tensor>& constants) {
      return ParseModule(std::string_view(text.data(), text.size()), constants);
    });

}  // namespace ir
}  // namespace kiln
