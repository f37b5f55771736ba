// Reading and making small constant tensors in passes that rewrite arithmetic.
#ifndef KILN_SRC_TRANSFORM_CONSTANT_UTIL_H_
#define KILN_SRC_TRANSFORM_CONSTANT_UTIL_H_

#include <kiln/ir/expr.h>

#include <optional>
#include <vector>

namespace kiln {
namespace transform {

/// The value every element of `constant` holds, when they all hold the same one and the dtype
/// is a float or integer type of 8 to 64 bits; nullopt otherwise.
std::optional<double> UniformValue(const ir::Constant& constant);

/// The value of `value` when it is a constant of one element of dtype int64 or bool (0 or 1);
/// nullopt for anything else: a condition, a trip count.
std::optional<int64_t> ScalarInt(const ir::Expr& value);

/// The elements of a float32 constant; nullopt for any other dtype.
std::optional<std::vector<float>> Float32Values(const ir::Constant& constant);

/// A new float32 constant of `shape` holding `values` (row-major), typed.
ir::Constant MakeFloat32Constant(const std::vector<float>& values,
                                 const std::vector<int64_t>& shape);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_SRC_TRANSFORM_CONSTANT_UTIL_H_
