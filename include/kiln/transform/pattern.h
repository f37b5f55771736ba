/// Dataflow patterns over the graph IR, pattern tables, and the MergeComposite pass.
///
/// A Pattern describes a small subgraph; Match tells whether an expression is the root of one:
///
///   Pattern conv = IsOp("nn.conv2d")({Wildcard(), IsConstant()}).HasAttr({{"groups", 1}});
///   Pattern bias = IsOp("add")({conv, IsConstant()});
///   Pattern pattern = bias.Optional([](const Pattern& p) { return IsOp("nn.relu")({p}); });
///   std::optional<Map<Pattern, ir::Expr>> binding = MatchPattern(pattern, expr);
///
/// Semantics (docs/byoc.md, "Patterns"):
///   - a call pattern matches a Call whose callee matches its callee pattern (IsOp: that op)
///     and whose arguments match its argument patterns, exactly as many;
///   - one Pattern object used in two places must match the same expression in both
///     (`auto x = Wildcard(); IsOp("add")({x, x})` matches `add(%a, %a)` only);
///   - `a | b` tries `a` first; when the rest of the match fails with `a`'s choice, `b` is tried
///     (the matcher backtracks), so a match is found whenever one exists;
///   - `p.Optional(wrap)` is `wrap(p) | p`: the bigger form is preferred;
///   - HasAttr, HasDType, HasShape and HasRank add a predicate to a pattern; the last three read
///     the checked type (run InferType first: a type predicate on an untyped expression is a
///     ValueError naming it).
/// Patterns are immutable and may be shared between threads and tables.
#ifndef KILN_TRANSFORM_PATTERN_H_
#define KILN_TRANSFORM_PATTERN_H_

#include <kiln/ir/op.h>
#include <kiln/transform/pass.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace transform {

/// Base of every pattern node.
class PatternObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.transform.Pattern";
  KILN_DECLARE_OBJECT_INFO(PatternObj, Object);
};

class Pattern : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Pattern, ObjectRef, PatternObj);

  /// The node as a T (e.g. CallPatternObj), or nullptr when it is null or of another kind.
  template <typename T>
  const T* as() const {
    return defined() && data_->IsInstance<T>() ? static_cast<const T*>(data_.get()) : nullptr;
  }

  /// A call of what this pattern matches (usually IsOp) with exactly `args` as arguments.
  KILN_API Pattern operator()(Array<Pattern> args) const;
  /// This pattern, on a Call (or Function) whose attributes include every entry of `attrs`
  /// with a structurally equal value (an integer never equals a float).
  KILN_API Pattern HasAttr(Map<String, Any> attrs) const;
  /// This pattern, on a tensor-typed expression of element type `dtype` ("float32"); ValueError
  /// when `dtype` names no data type.
  KILN_API Pattern HasDType(const std::string& dtype) const;
  /// This pattern, on a tensor of this shape; -1 matches any extent (static or not).
  KILN_API Pattern HasShape(std::vector<int64_t> shape) const;
  /// This pattern, on a tensor of `rank` dimensions.
  KILN_API Pattern HasRank(int64_t rank) const;
  /// `wrap(*this) | *this`: an optional wrapper around this pattern, preferred when present.
  KILN_API Pattern Optional(const std::function<Pattern(const Pattern&)>& wrap) const;
  /// Readable text of the pattern, e.g. `nn.relu(add(*, const))`, for messages and reprs.
  KILN_API std::string ToString() const;
};

/// Either pattern, `left` tried first.
KILN_API Pattern operator|(const Pattern& left, const Pattern& right);

/// Matches any expression.
KILN_API Pattern Wildcard();
/// Matches a Constant.
KILN_API Pattern IsConstant();
/// Matches a Var.
KILN_API Pattern IsVar();
/// Matches the op `name` itself (the callee of a call pattern); KeyError when no op has that
/// name.
KILN_API Pattern IsOp(const std::string& name);
/// Matches a Tuple with exactly these fields.
KILN_API Pattern IsTuple(Array<Pattern> fields);
/// Matches field `index` of what `tuple` matches; index -1 matches any field.
KILN_API Pattern IsTupleGetItem(Pattern tuple, int64_t index = -1);

// ---- pattern nodes (built by the functions above; read by the matcher and MergeComposite) ----

class WildcardPatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.WildcardPattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(WildcardPatternObj, PatternObj);
};

class ConstantPatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.ConstantPattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(ConstantPatternObj, PatternObj);
};

class VarPatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.VarPattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(VarPatternObj, PatternObj);
};

class OpPatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.OpPattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(OpPatternObj, PatternObj);

  explicit OpPatternObj(ir::Op op) : op_(std::move(op)) {}
  const ir::Op& op() const { return op_; }

 private:
  ir::Op op_;
};

class CallPatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.CallPattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(CallPatternObj, PatternObj);

  CallPatternObj(Pattern callee, Array<Pattern> args)
      : callee_(std::move(callee)), args_(std::move(args)) {}
  const Pattern& callee() const { return callee_; }
  const Array<Pattern>& args() const { return args_; }

 private:
  Pattern callee_;
  Array<Pattern> args_;
};

class TuplePatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.TuplePattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(TuplePatternObj, PatternObj);

  explicit TuplePatternObj(Array<Pattern> fields) : fields_(std::move(fields)) {}
  const Array<Pattern>& fields() const { return fields_; }

 private:
  Array<Pattern> fields_;
};

class TupleGetItemPatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.TupleGetItemPattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(TupleGetItemPatternObj, PatternObj);

  TupleGetItemPatternObj(Pattern tuple, int64_t index) : tuple_(std::move(tuple)), index_(index) {}
  const Pattern& tuple() const { return tuple_; }
  /// -1: any field.
  int64_t index() const { return index_; }

 private:
  Pattern tuple_;
  int64_t index_;
};

class AltPatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.AltPattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(AltPatternObj, PatternObj);

  AltPatternObj(Pattern left, Pattern right) : left_(std::move(left)), right_(std::move(right)) {}
  const Pattern& left() const { return left_; }
  const Pattern& right() const { return right_; }

 private:
  Pattern left_;
  Pattern right_;
};

class AttrPatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.AttrPattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(AttrPatternObj, PatternObj);

  AttrPatternObj(Pattern pattern, Map<String, Any> attrs)
      : pattern_(std::move(pattern)), attrs_(std::move(attrs)) {}
  const Pattern& pattern() const { return pattern_; }
  const Map<String, Any>& attrs() const { return attrs_; }

 private:
  Pattern pattern_;
  Map<String, Any> attrs_;
};

class DTypePatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.DTypePattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(DTypePatternObj, PatternObj);

  DTypePatternObj(Pattern pattern, DLDataType dtype)
      : pattern_(std::move(pattern)), dtype_(dtype) {}
  const Pattern& pattern() const { return pattern_; }
  DLDataType dtype() const { return dtype_; }

 private:
  Pattern pattern_;
  DLDataType dtype_;
};

class ShapePatternObj : public PatternObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.ShapePattern";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(ShapePatternObj, PatternObj);

  ShapePatternObj(Pattern pattern, std::vector<int64_t> shape)
      : pattern_(std::move(pattern)), shape_(std::move(shape)) {}
  const Pattern& pattern() const { return pattern_; }
  /// -1: any extent.
  const std::vector<int64_t>& shape() const { return shape_; }

 private:
  Pattern pattern_;
  std::vector<int64_t> shape_;
};

// ---- matching ----

/// Which expression each pattern node of a successful match matched (every node the match went
/// through, wrappers such as AltPattern included; the untaken side of an alternative is absent).
using PatternBinding = Map<Pattern, ir::Expr>;

/// The binding when `expr` is the root of a match of `pattern`, else nullopt. Not matching is
/// not an error; ValueError when a type predicate meets an expression without a checked type.
KILN_API std::optional<PatternBinding> MatchPattern(const Pattern& pattern, const ir::Expr& expr);
/// MatchPattern(pattern, expr).has_value().
KILN_API bool Match(const Pattern& pattern, const ir::Expr& expr);

// ---- pattern tables ----

/// One row of a compiler's pattern table: matches of `pattern` become composite functions with
/// attribute Composite=`name` (`<compiler>.<pattern>`, e.g. "dnnl.conv2d_bias_relu"), unless
/// `check` (may be null) returns false for the matched root expression (typed).
class PatternEntryObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.transform.PatternEntry";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(PatternEntryObj, Object);

  PatternEntryObj(String name, Pattern pattern, kiln::Function check)
      : name_(std::move(name)), pattern_(std::move(pattern)), check_(std::move(check)) {}
  const String& name() const { return name_; }
  const Pattern& pattern() const { return pattern_; }
  /// `(root: Expr) -> bool`, or null.
  const kiln::Function& check() const { return check_; }

 private:
  String name_;
  Pattern pattern_;
  kiln::Function check_;
};

class PatternEntry : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(PatternEntry, ObjectRef, PatternEntryObj);
  /// ValueError when `name` is empty or `pattern` is null.
  KILN_API PatternEntry(String name, Pattern pattern, kiln::Function check = kiln::Function());
};

/// The pattern table `compiler` registers as the global function
/// `kiln.ext.<compiler>.pattern_table` (no arguments, returning Array<PatternEntry>), in table
/// order; empty when it registers none. TypeError when it returns something else, ValueError
/// when an entry's name does not start with "<compiler>.".
KILN_API Array<PatternEntry> GetPatternTable(const std::string& compiler);

/// MergeComposite over the concatenated pattern tables of `compilers`, in that order; the pass
/// is named `transform.MergeComposite(<compilers joined by ", ">)` (just
/// `transform.MergeComposite`, a pass that changes nothing, when `compilers` is empty), so its
/// PipelineString parses back to the same pass. Registered as `transform.MergeComposite`,
/// callable with no arguments or with one Array<String>. The tables are read when the pass runs.
KILN_API Pass MergeComposite(const Array<String>& compilers);

/// MergeComposite with a table given directly. Each function of the module (but those taken by
/// an external compiler) is rewritten: for each entry in table order, every Call, Tuple and
/// TupleGetItem of the function, nested functions included (composite and primitive ones
/// excepted), from the function's result back towards its parameters (reverse post-order), is
/// tried as the root of a match; an accepted match becomes a call of a new Function with
/// attribute Composite=<entry name> whose body is the matched subgraph and whose parameters are
/// the distinct expressions matched by Wildcard, IsConstant and IsVar leaves (in the order the
/// body first reads them); the call passes those expressions, so constants stay at the call
/// site. A match is refused when an expression inside it (all but its root and leaves) is read
/// from outside the match, is already part of another match, or when the entry's check says
/// false. The composite functions carry their parameters' and result's types.
KILN_API Pass MergeComposite(const Array<PatternEntry>& table);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_TRANSFORM_PATTERN_H_
