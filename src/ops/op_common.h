// Type relations shared by several families of core ops.
#ifndef KILN_SRC_OP_OP_COMMON_H_
#define KILN_SRC_OP_OP_COMMON_H_

#include <kiln/ir/type_relation.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace op {

using ir::AttrKind;
using ir::OpPattern;
using ir::Type;
using ir::TypeRelationContext;

/// One tensor in, the same type out (relu, exp, ...).
Type SameAsInputRelation(const TypeRelationContext& ctx);

/// Every argument a tensor of one dtype, shapes broadcast together; the result has the
/// broadcast shape and that dtype (add, maximum, ...).
Type BroadcastRelation(const TypeRelationContext& ctx);

/// As BroadcastRelation, with a bool result (equal, less, ...).
Type CompareRelation(const TypeRelationContext& ctx);

/// The broadcast of the shapes of the arguments from `first_arg` on, static or symbolic; a
/// TypeError naming the shapes when two static extents differ and neither is 1, or when two
/// symbolic extents cannot be proven equal (Kiln has no run-time size checks yet: design §20).
/// Dtypes are not checked.
std::vector<arith::SizeExpr> BroadcastArgShapes(const TypeRelationContext& ctx, int64_t first_arg);

/// The broadcast of shapes `a` and `b` (aligned from the right) by the rule of
/// BroadcastArgShapes: nullopt when two static extents differ and neither is 1 (the caller
/// names the shapes), a TypeError naming `b_name` (whose shape `b` is) and both extents when
/// two extents can be proven neither equal nor different.
std::optional<std::vector<arith::SizeExpr>> BroadcastTwoShapes(
    const TypeRelationContext& ctx, const std::vector<arith::SizeExpr>& a,
    const std::vector<arith::SizeExpr>& b, const std::string& b_name);

/// No tensor has more elements than this: sizes in bytes would overflow past it. So no extent
/// of a non-empty tensor exceeds it either.
constexpr int64_t kMaxElements = int64_t{1} << 62;

/// The number of elements of `shape`; TypeError (naming the op) when it exceeds kMaxElements.
int64_t NumElements(const TypeRelationContext& ctx, const std::vector<int64_t>& shape);

/// The number of elements of a static or symbolic `shape`, simplified; the TypeError of
/// NumElements when its static extents alone exceed kMaxElements.
arith::SizeExpr NumElementsExpr(const TypeRelationContext& ctx,
                                const std::vector<arith::SizeExpr>& shape);

/// What the analyzer proves of a size constraint (`c == 4`, `h + 2 >= 3`): that it holds, that it
/// fails, or neither, when it knows too little of the size variables. Static sizes are always
/// decided, so their errors are as before. An undecided one is deferred to run time where the
/// types can assume it (Defer: `n` broadcast against `m`, matmul's K), else an error whose
/// message adds Undecided() to name the constraint.
///
///   const SizeFact same = ProveEqual(ctx, data[1], weight[1]);
///   KILN_CHECK(same.holds() || same.Defer(ctx, what), TypeError) << ctx.Describe(what);
class SizeFact {
 public:
  enum class Status { kHolds, kFails, kUndecided };

  SizeFact(Status status, arith::SizeExpr lhs, std::string relation, arith::SizeExpr rhs)
      : status_(status),
        lhs_(std::move(lhs)),
        relation_(std::move(relation)),
        rhs_(std::move(rhs)) {}

  bool holds() const { return status_ == Status::kHolds; }
  bool undecided() const { return status_ == Status::kUndecided; }
  /// "" unless undecided; then " (`lhs relation rhs` cannot be proven ...)" to add to an error.
  std::string Undecided() const;
  /// When undecided: defers the constraint to run time (TypeRelationContext::DeferCheck, with
  /// `what` as its error) and returns true; otherwise false.
  bool Defer(const TypeRelationContext& ctx, const std::string& what) const;

 private:
  Status status_;
  arith::SizeExpr lhs_;
  std::string relation_;
  arith::SizeExpr rhs_;
};

/// `a == b`, `a >= b`, `a < b` for every value of the size variables.
SizeFact ProveEqual(const TypeRelationContext& ctx, const arith::SizeExpr& a,
                    const arith::SizeExpr& b);
SizeFact ProveGE(const TypeRelationContext& ctx, const arith::SizeExpr& a,
                 const arith::SizeExpr& b);
SizeFact ProveLT(const TypeRelationContext& ctx, const arith::SizeExpr& a,
                 const arith::SizeExpr& b);
/// `divisor` divides `value`: floormod(value, divisor) == 0. `divisor` must not be the constant 0.
SizeFact ProveDivisible(const TypeRelationContext& ctx, const arith::SizeExpr& value,
                        const arith::SizeExpr& divisor);
/// Extent by extent equality of `a` and `b`: the first pair not proven equal, failing when the
/// ranks differ.
SizeFact ProveSameShape(const TypeRelationContext& ctx, const std::vector<arith::SizeExpr>& a,
                        const std::vector<arith::SizeExpr>& b);

/// DLDataType of a dtype attribute value ("float32").
DLDataType DTypeAttr(const TypeRelationContext& ctx, const char* name);

/// The largest value ReadBoundedInts accepts by default: window attributes (strides, padding,
/// dilation) beyond it are nonsense, and bounding them keeps shape arithmetic from overflowing.
constexpr int64_t kMaxWindowValue = int64_t{1} << 20;

/// The ints attribute `name`, required to have `length` values each in [minimum, maximum];
/// TypeError naming the attribute otherwise.
std::vector<int64_t> ReadBoundedInts(const TypeRelationContext& ctx, const char* name,
                                     size_t length, int64_t minimum,
                                     int64_t maximum = kMaxWindowValue);

/// Each of `axes` (attribute `attr`) normalized against `rank`; TypeError naming the attribute
/// when one is out of range or repeated.
std::vector<int64_t> NormalizeAxes(const TypeRelationContext& ctx, const std::vector<int64_t>& axes,
                                   int64_t rank, const char* attr);

/// The string attribute `name`; TypeError listing `allowed` when it is not one of them. The
/// schema has no enumeration kind, so the relation checks modes and methods.
std::string StringChoiceAttr(const TypeRelationContext& ctx, const char* name,
                             const std::vector<std::string>& allowed);

/// `ctx.Shape(i)`, required to have `rank` dimensions; TypeError naming the argument and
/// `layout` ("(N, C, H, W)") otherwise.
std::vector<arith::SizeExpr> ShapeOfRank(const TypeRelationContext& ctx, int64_t i, size_t rank,
                                         const std::string& layout);

/// Extent `axis` of `shape` (argument `i`'s) as a constant, for extents an op cannot take
/// symbolically (a kernel window, the length of an index tuple); TypeError naming `what`, the
/// argument and the extent when it is symbolic.
int64_t StaticExtent(const TypeRelationContext& ctx, int64_t i,
                     const std::vector<arith::SizeExpr>& shape, size_t axis, const char* what);

constexpr DLDataType kBool{kDLUInt, 1, 1};
constexpr DLDataType kInt32{kDLInt, 32, 1};
constexpr DLDataType kInt64{kDLInt, 64, 1};

}  // namespace op
}  // namespace kiln

#endif  // KILN_SRC_OP_OP_COMMON_H_
