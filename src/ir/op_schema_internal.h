// Checking Call attributes against an op's schema (op.h).
#ifndef KILN_SRC_IR_OP_SCHEMA_INTERNAL_H_
#define KILN_SRC_IR_OP_SCHEMA_INTERNAL_H_

#include <kiln/ir/op.h>

#include <string>

namespace kiln {
namespace ir {

/// `value` as attribute `field` of op `op_name` stores it (ints given for floats become
/// floats); TypeError naming the op, the attribute, the expected kind and what was given.
Any CheckAttrValue(const std::string& op_name, const AttrField& field, const Any& value);

/// The attributes a Call of `op` with `num_args` arguments keeps: checked against the op's
/// schema and completed with defaults, in schema order. `attrs` unchanged when the op has no
/// schema. ValueError for a wrong argument count, an unknown or missing attribute.
Map<String, Any> NormalizeCallAttrs(const Op& op, int64_t num_args, const Map<String, Any>& attrs);

}  // namespace ir
}  // namespace kiln

#endif  // KILN_SRC_IR_OP_SCHEMA_INTERNAL_H_
