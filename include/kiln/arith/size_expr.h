/// Size expressions: the integer arithmetic under symbolic tensor shapes (docs/design.md §19).
///
///   const SizeVar batch("batch"), seq("seq");
///   const SizeExpr rows = batch * 3 + 1;            // prints "batch * 3 + 1"
///   const SizeExpr half = FloorDiv(seq, 2);         // prints "floordiv(seq, 2)"
///   ParseSizeExpr(rows.ToString());                 // structurally equal to `rows`
///   Evaluate(rows, {{"batch", 4}});                 // 13
///
/// Nodes are immutable FFI objects with type keys under "kiln.arith.": an integer immediate
/// (IntImm), a named size variable (SizeVar) and seven binary nodes (Add, Sub, Mul, FloorDiv,
/// FloorMod, Min, Max). Values are integers; FloorDiv rounds toward negative infinity and
/// FloorMod takes the sign of the divisor (Python's `//` and `%`). Two variables are the same
/// variable when they have the same name, so expressions built apart (two parses, two passes)
/// mention the same sizes.
///
/// The builders (`a + b`, `a * 2`, FloorDiv, Min, ...) fold constants and drop identities
/// (`x + 0`, `x * 1`, `x * 0`, `floordiv(x, 1)`); they do not reorder or otherwise simplify:
/// Analyzer::Simplify (analyzer.h) does. Size expressions are small, so the algorithms over them
/// recurse; a node deeper than kMaxSizeExprDepth is a ValueError, which bounds every recursion.
#ifndef KILN_ARITH_SIZE_EXPR_H_
#define KILN_ARITH_SIZE_EXPR_H_

#include <kiln/ffi/error.h>
#include <kiln/ffi/string.h>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {
namespace arith {

/// The most levels of nodes an expression may have (a leaf has one).
constexpr int32_t kMaxSizeExprDepth = 512;

/// Base of every size expression node.
class SizeExprObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.arith.SizeExpr";
  KILN_DECLARE_OBJECT_INFO(SizeExprObj, Object);

  /// Levels of nodes from this one down to its deepest leaf (1 for a leaf).
  int32_t depth() const { return depth_; }

 protected:
  explicit SizeExprObj(int32_t depth) : depth_(depth) {}

 private:
  int32_t depth_;
};

/// An integer-valued expression over size variables; null when default-constructed.
class SizeExpr : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(SizeExpr, ObjectRef, SizeExprObj);

  /// The node as a T (e.g. AddObj), or nullptr when it is null or of another kind.
  template <typename T>
  const T* as() const {
    return defined() && data_->IsInstance<T>() ? static_cast<const T*>(data_.get()) : nullptr;
  }
  /// The value when the expression is an integer immediate, else nullopt.
  KILN_API std::optional<int64_t> as_int() const;
  /// The text ParseSizeExpr reads back: `batch * 3 + 1`, `floordiv(seq, 2)`, `min(a, b)`.
  KILN_API std::string ToString() const;
};

/// Writes expr.ToString().
KILN_API std::ostream& operator<<(std::ostream& os, const SizeExpr& expr);

/// An integer constant.
class IntImmObj : public SizeExprObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.IntImm";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(IntImmObj, SizeExprObj);

  explicit IntImmObj(int64_t value) : SizeExprObj(1), value_(value) {}
  int64_t value() const { return value_; }

 private:
  int64_t value_;
};

class IntImm : public SizeExpr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(IntImm, SizeExpr, IntImmObj);
  KILN_API explicit IntImm(int64_t value);
};

/// A named size, unknown at compile time. Equal to every variable of the same name.
class SizeVarObj : public SizeExprObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.SizeVar";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(SizeVarObj, SizeExprObj);

  explicit SizeVarObj(String name) : SizeExprObj(1), name_(std::move(name)) {}
  const String& name() const { return name_; }

 private:
  String name_;
};

class SizeVar : public SizeExpr {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(SizeVar, SizeExpr, SizeVarObj);
  /// ValueError unless `name` is an identifier ([A-Za-z_][A-Za-z0-9_]*) other than the
  /// function names of the text (floordiv, floormod, min, max).
  KILN_API explicit SizeVar(String name);
};

/// The binary node kinds, in the order StructuralCompare sorts them.
enum class BinaryOp : int32_t { kAdd, kSub, kMul, kFloorDiv, kFloorMod, kMin, kMax };

/// Base of the binary nodes: an operator and its two operands.
class BinaryObj : public SizeExprObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.Binary";
  KILN_DECLARE_OBJECT_INFO(BinaryObj, SizeExprObj);

  BinaryOp op() const { return op_; }
  const SizeExpr& a() const { return a_; }
  const SizeExpr& b() const { return b_; }

 protected:
  /// ValueError when an operand is null or the node would be deeper than kMaxSizeExprDepth.
  KILN_API BinaryObj(BinaryOp op, SizeExpr a, SizeExpr b);

 private:
  BinaryOp op_;
  SizeExpr a_;
  SizeExpr b_;
};

/// `a + b`.
class AddObj : public BinaryObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.Add";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(AddObj, BinaryObj);
  AddObj(SizeExpr a, SizeExpr b) : BinaryObj(BinaryOp::kAdd, std::move(a), std::move(b)) {}
};

/// `a - b`.
class SubObj : public BinaryObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.Sub";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(SubObj, BinaryObj);
  SubObj(SizeExpr a, SizeExpr b) : BinaryObj(BinaryOp::kSub, std::move(a), std::move(b)) {}
};

/// `a * b`.
class MulObj : public BinaryObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.Mul";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(MulObj, BinaryObj);
  MulObj(SizeExpr a, SizeExpr b) : BinaryObj(BinaryOp::kMul, std::move(a), std::move(b)) {}
};

/// `floordiv(a, b)`: a / b rounded toward negative infinity.
class FloorDivObj : public BinaryObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.FloorDiv";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(FloorDivObj, BinaryObj);
  FloorDivObj(SizeExpr a, SizeExpr b)
      : BinaryObj(BinaryOp::kFloorDiv, std::move(a), std::move(b)) {}
};

/// `floormod(a, b)`: a - b * floordiv(a, b), of the sign of b.
class FloorModObj : public BinaryObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.FloorMod";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(FloorModObj, BinaryObj);
  FloorModObj(SizeExpr a, SizeExpr b)
      : BinaryObj(BinaryOp::kFloorMod, std::move(a), std::move(b)) {}
};

/// `min(a, b)`.
class MinObj : public BinaryObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.Min";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(MinObj, BinaryObj);
  MinObj(SizeExpr a, SizeExpr b) : BinaryObj(BinaryOp::kMin, std::move(a), std::move(b)) {}
};

/// `max(a, b)`.
class MaxObj : public BinaryObj {
 public:
  static constexpr const char* _type_key = "kiln.arith.Max";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(MaxObj, BinaryObj);
  MaxObj(SizeExpr a, SizeExpr b) : BinaryObj(BinaryOp::kMax, std::move(a), std::move(b)) {}
};

// ---------------------------------------------------------------- builders
// Each folds constants (OverflowError when the result does not fit in int64) and drops the
// identities listed at the top; ValueError for a null operand. FloorDiv and FloorMod by the
// constant 0 are ValueErrors.

/// `op` applied to `a` and `b` with the builders' folding (what the parser builds with).
KILN_API SizeExpr MakeBinary(BinaryOp op, const SizeExpr& a, const SizeExpr& b);
KILN_API SizeExpr operator+(const SizeExpr& a, const SizeExpr& b);
KILN_API SizeExpr operator-(const SizeExpr& a, const SizeExpr& b);
KILN_API SizeExpr operator*(const SizeExpr& a, const SizeExpr& b);
KILN_API SizeExpr FloorDiv(const SizeExpr& a, const SizeExpr& b);
KILN_API SizeExpr FloorMod(const SizeExpr& a, const SizeExpr& b);
KILN_API SizeExpr Min(const SizeExpr& a, const SizeExpr& b);
KILN_API SizeExpr Max(const SizeExpr& a, const SizeExpr& b);

inline SizeExpr operator+(const SizeExpr& a, int64_t b) { return a + IntImm(b); }
inline SizeExpr operator+(int64_t a, const SizeExpr& b) { return IntImm(a) + b; }
inline SizeExpr operator-(const SizeExpr& a, int64_t b) { return a - IntImm(b); }
inline SizeExpr operator-(int64_t a, const SizeExpr& b) { return IntImm(a) - b; }
inline SizeExpr operator*(const SizeExpr& a, int64_t b) { return a * IntImm(b); }
inline SizeExpr operator*(int64_t a, const SizeExpr& b) { return IntImm(a) * b; }
inline SizeExpr FloorDiv(const SizeExpr& a, int64_t b) { return FloorDiv(a, IntImm(b)); }
inline SizeExpr FloorMod(const SizeExpr& a, int64_t b) { return FloorMod(a, IntImm(b)); }
inline SizeExpr Min(const SizeExpr& a, int64_t b) { return Min(a, IntImm(b)); }
inline SizeExpr Max(const SizeExpr& a, int64_t b) { return Max(a, IntImm(b)); }

// ---------------------------------------------------------------- text
/// Parses the text SizeExpr::ToString writes (and the same with other spacing or redundant
/// parentheses):
///   expr := term (("+" | "-") term)*        term := operand ("*" operand)*
///   operand := INT | "-" INT | NAME | ("floordiv" | "floormod" | "min" | "max") "(" expr "," expr
///   ")"
///            | "(" expr ")"
/// Spaces, tabs and newlines separate tokens. A minus sign directly before a number makes a
/// negative literal; there is no other unary minus. The
/// result is built with the builders, so constants fold. Bad text is a ValueError
/// `column C: expected X, found Y` followed by the text and a caret.
KILN_API SizeExpr ParseSizeExpr(std::string_view text);

/// What TryParseSizeExpr found: the expression, or (expr null) where and why the text is bad.
struct SizeExprParseResult {
  SizeExpr expr;
  size_t error_offset = 0;  ///< 0-based offset into the text
  std::string error_kind;   ///< "ValueError" or "OverflowError" (a constant fold)
  std::string error;        ///< the message, without the position
};

/// ParseSizeExpr for callers that place errors in a larger text (the IR text parser): the same
/// grammar, with the failure returned instead of thrown.
KILN_API SizeExprParseResult TryParseSizeExpr(std::string_view text);

// ---------------------------------------------------------------- evaluation
/// The value of `expr` when each variable takes its value in `values` (by name). ValueError
/// for a variable without a value or a division by zero; OverflowError when a step leaves
/// int64; each names the subexpression at fault.
KILN_API int64_t Evaluate(const SizeExpr& expr, const std::map<std::string, int64_t>& values);

/// The names of the variables of `expr`, sorted, each once.
KILN_API std::vector<std::string> FreeSizeVars(const SizeExpr& expr);

/// `expr` with each variable named in `values` replaced by its expression (built with the
/// builders' folding, not simplified); `expr` itself when it has none of them.
KILN_API SizeExpr Substitute(const SizeExpr& expr, const std::map<std::string, SizeExpr>& values);

// ---------------------------------------------------------------- structure
/// True when `a` and `b` are the same tree: same node kinds, equal constants, variables of the
/// same names. Not an algebraic comparison (`a + b` is not `b + a`; see Analyzer).
KILN_API bool StructuralEqual(const SizeExpr& a, const SizeExpr& b);
/// A hash consistent with StructuralEqual; the same in every process (built from kinds,
/// values and names only).
KILN_API uint64_t StructuralHash(const SizeExpr& expr);
/// A total order consistent with StructuralEqual (< 0, 0, > 0): by kind (IntImm, SizeVar, then
/// BinaryOp's order), then value, name or operands. The simplifier sorts with it.
KILN_API int StructuralCompare(const SizeExpr& a, const SizeExpr& b);

/// Hash and equality functors for unordered containers keyed by structure.
struct SizeExprHash {
  size_t operator()(const SizeExpr& expr) const { return StructuralHash(expr); }
};
struct SizeExprEqual {
  bool operator()(const SizeExpr& a, const SizeExpr& b) const { return StructuralEqual(a, b); }
};

}  // namespace arith
}  // namespace kiln

#endif  // KILN_ARITH_SIZE_EXPR_H_
