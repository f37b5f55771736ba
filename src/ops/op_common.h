// Type relations shared by several families of core ops.
#ifndef KILN_SRC_OP_OP_COMMON_H_
#define KILN_SRC_OP_OP_COMMON_H_

#include <kiln/ir/type_relation.h>

#include <string>
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

/// The number of elements of `shape`; TypeError (naming the op) when it exceeds 2^62, where
/// sizes in bytes would overflow.
int64_t NumElements(const TypeRelationContext& ctx, const std::vector<int64_t>& shape);

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

/// `ctx.StaticShape(i)`, required to have `rank` dimensions; TypeError naming the argument and
/// `layout` ("(N, C, H, W)") otherwise.
std::vector<int64_t> ShapeOfRank(const TypeRelationContext& ctx, int64_t i, size_t rank,
                                 const std::string& layout);

constexpr DLDataType kBool{kDLUInt, 1, 1};
constexpr DLDataType kInt32{kDLInt, 32, 1};
constexpr DLDataType kInt64{kDLInt, 64, 1};

}  // namespace op
}  // namespace kiln

#endif  // KILN_SRC_OP_OP_COMMON_H_
