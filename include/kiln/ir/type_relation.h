/// Type relations: how an op's result type follows from its argument types and attributes.
///
/// A relation is what InferType calls for each Call of an op. In C++ it is a plain function
/// reading a TypeRelationContext, which also builds the error messages: every failure names the
/// op, the argument (by its schema name and position) and the argument types, e.g.
///
///   nn.conv2d: input channels 3 of 'data' do not match 4 channels of 'weight' x 1 groups
///     (arguments: data: Tensor[(1, 3, 8, 8), float32], weight: Tensor[(8, 4, 3, 3), float32])
///
///   Type Conv2DRelation(const TypeRelationContext& ctx) {
///     const std::vector<int64_t> data = ctx.StaticShape(0);
///     KILN_CHECK(data.size() == 4, TypeError) << ctx.Describe("'data' must be 4-D");
///     ...
///     return ctx.TensorResult(out_shape, ctx.DType(0));
///   }
#ifndef KILN_IR_TYPE_RELATION_H_
#define KILN_IR_TYPE_RELATION_H_

#include <kiln/arith/analyzer.h>
#include <kiln/arith/size_expr.h>
#include <kiln/ir/op.h>

#include <string>
#include <vector>

namespace kiln {
namespace ir {

/// What a type relation sees: the op, the argument types and the (defaults-filled) attributes.
class KILN_API TypeRelationContext {
 public:
  TypeRelationContext(Op op, const Array<Type>& arg_types, Map<String, Any> attrs);

  const Op& op() const { return op_; }
  int64_t num_args() const { return static_cast<int64_t>(arg_types_.size()); }
  const Type& arg_type(int64_t i) const;
  /// Argument `i` as a tensor type; TypeError naming the argument when it is something else.
  const TensorTypeObj* Tensor(int64_t i) const;
  /// The static shape of tensor argument `i`; TypeError when a dimension is not static.
  std::vector<int64_t> StaticShape(int64_t i) const;
  /// The shape of tensor argument `i`, each dimension a size expression (a static extent is an
  /// integer immediate): one rule serves static and symbolic shapes (docs/design.md §20).
  std::vector<arith::SizeExpr> Shape(int64_t i) const;
  /// What is known of the size variables (each at least 1, as the runtime checks), for
  /// relations to prove with.
  const arith::Analyzer& analyzer() const { return analyzer_; }
  DLDataType DType(int64_t i) const { return Tensor(i)->dtype(); }
  /// Argument `i` as a tuple of tensors (concatenate's input); TypeError otherwise.
  std::vector<const TensorTypeObj*> TensorTuple(int64_t i) const;

  /// The attribute `name` converted to T (it is present: Calls get their defaults filled in).
  template <typename T>
  T Attr(const char* name) const {
    std::optional<Any> value = attrs_.Get(String(name));
    KILN_CHECK(value.has_value(), KeyError)
        << Describe(std::string("has no attribute '") + name + "'");
    return value->cast<T>();
  }
  /// An attribute of kind ints or floats as a vector.
  std::vector<int64_t> IntsAttr(const char* name) const;
  /// An attribute of kind sizes (ints accepted) as size expressions, constants as IntImm.
  std::vector<arith::SizeExpr> SizesAttr(const char* name) const;
  /// An attribute of kind size (an int accepted) as a size expression.
  arith::SizeExpr SizeAttr(const char* name) const;
  std::vector<double> FloatsAttr(const char* name) const;
  /// True when the attribute is present and not None.
  bool HasAttr(const char* name) const;

  /// "'data' (argument 0)", by the schema's input name when there is one.
  std::string ArgName(int64_t i) const;
  /// "<op>: <what>\n  (arguments: data: Tensor[...], weight: Tensor[...])": the message of
  /// every type error of a relation.
  std::string Describe(const std::string& what) const;

  /// Requires exactly `n` arguments.
  void CheckNumArgs(int64_t n) const;
  /// Requires argument `i`'s dtype to equal argument `j`'s.
  void CheckSameDType(int64_t i, int64_t j) const;
  /// Normalizes axis `axis` of a rank-`rank` tensor (negative counts from the end); TypeError
  /// naming the attribute when out of range.
  int64_t NormalizeAxis(int64_t axis, int64_t rank, const char* attr) const;

  /// Defers `lhs relation rhs` ("==", ">=") to run time: the relation calls it where the
  /// analyzer cannot decide a constraint the types assume (`n` broadcast against `m`), instead
  /// of rejecting the model. `what` says what breaks when it fails (as Describe's argument).
  /// Recorded by the SizeCheckCollector alive on this thread, if any; InferType keeps them in
  /// its function's attributes and the executor checks them once per input-shape signature.
  void DeferCheck(const arith::SizeExpr& lhs, const std::string& relation,
                  const arith::SizeExpr& rhs, const std::string& what) const;

  static Type TensorResult(const std::vector<int64_t>& shape, DLDataType dtype);
  /// A tensor type of `shape`: constant expressions become static dimensions.
  static Type TensorResult(const std::vector<arith::SizeExpr>& shape, DLDataType dtype);

 private:
  Op op_;
  std::vector<Type> arg_types_;
  Map<String, Any> attrs_;
  arith::Analyzer analyzer_;
};

/// A size constraint only a run can decide (TypeRelationContext::DeferCheck).
struct SizeCheck {
  arith::SizeExpr lhs;
  std::string relation;  ///< "==" or ">="
  arith::SizeExpr rhs;
  std::string message;  ///< the error when it fails
};

/// Collects the checks type relations defer while it is alive, on the thread that made it
/// (collectors nest; the innermost collects).
class KILN_API SizeCheckCollector {
 public:
  SizeCheckCollector();
  ~SizeCheckCollector();
  SizeCheckCollector(const SizeCheckCollector&) = delete;
  SizeCheckCollector& operator=(const SizeCheckCollector&) = delete;

  const std::vector<SizeCheck>& checks() const { return checks_; }
  /// Adds `check` unless an equal one (same text) is there.
  void Add(SizeCheck check);

 private:
  SizeCheckCollector* outer_;
  std::vector<SizeCheck> checks_;
};

/// The function attribute InferType keeps deferred checks in: a list of
/// [lhs, relation, rhs, message] (size expressions and strings).
constexpr const char* kSizeChecksAttr = "size_checks";

/// The result type of calling `op` on arguments of `arg_types` with `attrs`: runs the op's
/// "FInferType". TypeError when the op has no type relation or the relation returns no type.
KILN_API Type InferCallType(const Op& op, const Array<Type>& arg_types,
                            const Map<String, Any>& attrs);

/// "(2, 3)", "(5)", "()": a shape as the text format writes it.
KILN_API std::string ShapeToText(const std::vector<int64_t>& shape);
/// "(batch, 3)": the same for a shape of size expressions.
KILN_API std::string ShapeToText(const std::vector<arith::SizeExpr>& shape);

/// The numpy/ONNX multidirectional broadcast of two shapes; nullopt when they do not broadcast.
KILN_API std::optional<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                             const std::vector<int64_t>& b);

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_TYPE_RELATION_H_
