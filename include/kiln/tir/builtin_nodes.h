/// The built-in node kinds of the tensor-level IR (kiln/tir/node.h) and builders for them. Each
/// builder is MakeNode of its kind, with the same checks.
///
/// Values (each has a dtype):
///   int(value: int, dtype), float(value: float, dtype)     immediates
///   var(name: ident, dtype)                                 a scalar variable (let binds it)
///   index(index: index, dtype)                              an index (a loop variable) as a value
///   add, sub, mul, div, mod, min, max (a: value, b: value)  operands of one dtype, which is the
///                                                           result's; div of integers truncates
///   eq, ne, lt, le, gt, ge (a: value, b: value)             operands of one dtype; bool
///   and, or (a: value, b: value), not (a: value)            bool
///   select(cond: value, a: value, b: value)                 cond bool, a and b of one dtype
///   cast(value: value, dtype)
///   load(buffer: %ref, indices: [index...])                 the buffer's dtype; one index per dim
///   call(name: string, args: [value...], dtype)             an intrinsic (exp, erf, tanh, sqrt,
///                                                           fma, ...) or an external function
///   call_packed(name: string, args: [value...])           the global function `name` called
///                                                           through Kiln's FFI (a micro-kernel);
///                                                           int32, only as an evaluate's value:
///                                                           an error it raises is the caller's
///   address(buffer: %ref, indices: [index...])             the address of that element; handle
///   callback(params: [index...], body: stmt)               a function of int64 parameters (each
///                                                           a variable) the callee of a
///                                                           call_packed calls back: handle
///   reduce(combiner: ident, axes: [index...],               source combined (sum, prod, max,
///          extents: [index...], source: value)              min) over each axis (a variable)
///                                                           in [0, extent); source's dtype.
///                                                           Lowered to loops before codegen
/// Statements:
///   store(buffer: %ref, indices: [index...], value)         value of the buffer's dtype
///   for(var: ident, extent: index, kind: ident, body)       kind: serial, parallel, vectorized,
///                                                           unrolled, block_x/y/z, thread_x/y/z
///   seq(stmts: [stmt...])
///   if(cond: value, then: stmt, else: stmt or none)
///   let(var: var, value: value, body)                       var and value of one dtype
///   allocate(buffer: buffer, scope: ident, body)            scope: local, shared, global
///   evaluate(value: value)
/// Buffers and functions:
///   buffer(name: ident, dtype, shape: [index...])
///   prim_func(name: ident, params: [buffer...], body)       the buffers' sizes are its size
///                                                           variables
#ifndef KILN_TIR_BUILTIN_NODES_H_
#define KILN_TIR_BUILTIN_NODES_H_

#include <kiln/tir/node.h>

#include <string>
#include <vector>

namespace kiln {
namespace tir {

KILN_API Node IntImm(int64_t value, DLDataType dtype);
KILN_API Node FloatImm(double value, DLDataType dtype);
KILN_API Node Var(const std::string& name, DLDataType dtype);
KILN_API Node IndexValue(const arith::SizeExpr& index, DLDataType dtype);
/// `op` is one of add, sub, mul, div, mod, min, max, eq, ne, lt, le, gt, ge, and, or.
KILN_API Node Binary(const std::string& op, const Node& a, const Node& b);
KILN_API Node Not(const Node& a);
KILN_API Node Select(const Node& cond, const Node& a, const Node& b);
KILN_API Node Cast(const Node& value, DLDataType dtype);
KILN_API Node Load(const Node& buffer, const std::vector<arith::SizeExpr>& indices);
KILN_API Node Call(const std::string& name, const std::vector<Node>& args, DLDataType dtype);
KILN_API Node CallPacked(const std::string& name, const std::vector<Node>& args);
KILN_API Node Address(const Node& buffer, const std::vector<arith::SizeExpr>& indices);
KILN_API Node Callback(const std::vector<arith::SizeExpr>& params, const Node& body);

KILN_API Node Store(const Node& buffer, const std::vector<arith::SizeExpr>& indices,
                    const Node& value);
KILN_API Node For(const std::string& var, const arith::SizeExpr& extent, const std::string& kind,
                  const Node& body);
KILN_API Node Seq(const std::vector<Node>& stmts);
/// `else_body` may be null: no else branch.
KILN_API Node IfThenElse(const Node& cond, const Node& then_body, const Node& else_body);
KILN_API Node Let(const Node& var, const Node& value, const Node& body);
KILN_API Node Allocate(const Node& buffer, const std::string& scope, const Node& body);
KILN_API Node Evaluate(const Node& value);

KILN_API Node Buffer(const std::string& name, DLDataType dtype,
                     const std::vector<arith::SizeExpr>& shape);
KILN_API Node PrimFunc(const std::string& name, const std::vector<Node>& params, const Node& body);

/// The row-major offset of `indices` (a load's or a store's) in `buffer`, simplified as a
/// whole: per-axis indices that split one position (floordiv(p, w) and floormod(p, w), as a
/// convolution's epilogue or a fused loop writes them) fold back into it.
KILN_API arith::SizeExpr RowMajorOffset(const Node& buffer, const Array<Any>& indices);

}  // namespace tir
}  // namespace kiln

#endif  // KILN_TIR_BUILTIN_NODES_H_
