// Type relations shared by several families of core ops.
#ifndef KILN_SRC_OP_OP_COMMON_H_
#define KILN_SRC_OP_OP_COMMON_H_

#include <kiln/ir/type_relation.h>

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

/// The broadcast of every argument's shape; TypeError naming the shapes when they do not
/// broadcast. Dtypes are not checked.
std::vector<int64_t> BroadcastArgShapes(const TypeRelationContext& ctx, int64_t first_arg);

/// DLDataType of a dtype attribute value ("float32").
DLDataType DTypeAttr(const TypeRelationContext& ctx, const char* name);

constexpr DLDataType kBool{kDLUInt, 1, 1};
constexpr DLDataType kInt64{kDLInt, 64, 1};

}  // namespace op
}  // namespace kiln

#endif  // KILN_SRC_OP_OP_COMMON_H_
