// The ops the ccompiler plugin writes in C, shared by its predicates (which calls it takes) and
// its codegen (how it writes them).
#ifndef KILN_PLUGINS_CCOMPILER_CCOMPILER_OPS_H_
#define KILN_PLUGINS_CCOMPILER_CCOMPILER_OPS_H_

#include <kiln/ffi/tensor.h>
#include <kiln/ir/type.h>

#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace ccompiler {

/// One op as a C function of floats: `float kiln_cc_<op>(float a[, float b], float <attr>...)`
/// returning `expression`, which reads the operands `a`, `b` and the op's float attributes.
struct COp {
  std::string op;                  ///< the Kiln op, e.g. "clip"
  int arity;                       ///< tensor operands: 1 (a) or 2 (a, b, broadcast)
  std::vector<std::string> attrs;  ///< float attributes passed after the operands
  std::string expression;          ///< the C expression, e.g. "fminf(fmaxf(a, a_min), a_max)"

  /// The C function's name: kiln_cc_ then the op with dots as underscores.
  std::string FunctionName() const;
};

/// Every op the plugin supports, in a fixed order.
const std::vector<COp>& SupportedOps();

/// The entry of `op`; nullptr when the plugin does not support it.
const COp* FindOp(const std::string& op);

/// The C file header: includes, the argument check the generated functions share, and one
/// static inline function per supported op.
std::string Prelude();

}  // namespace ccompiler
}  // namespace kiln

#endif  // KILN_PLUGINS_CCOMPILER_CCOMPILER_OPS_H_
