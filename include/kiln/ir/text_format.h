/// The IR text format: a printer and a parser that round-trip modules, expressions and types.
///
/// The grammar and the printing rules are in docs/ir-text-format.md. In short:
///
///   def @main(%x: Tensor[(1, 3), float32], %w) -> Tensor[(1, 3), float32] attrs={Primitive=1} {
///     %0 = nn.conv2d(%x, %w, strides=[1, 1]);
///     %1 = (%0, %x);
///     %1.0
///   }
///
/// Every Call, Tuple, TupleGetItem and nested Function is bound to a numbered temporary, so a
/// node shared by several parents prints once and parses back as one object; the parser never
/// recurses along the data flow. Constants of at most kMaxInlineConstantElements elements print
/// inline (`const(float32, (2), [1, 2.5])`); larger ones go to a side table and print as
/// `meta[Constant][i]`. Floats print so that they parse back bit for bit. Type annotations of
/// variables and function result types print; checked types do not.
#ifndef KILN_IR_TEXT_FORMAT_H_
#define KILN_IR_TEXT_FORMAT_H_

#include <kiln/ffi/array.h>
#include <kiln/ffi/tensor.h>
#include <kiln/ir/module.h>

#include <string>
#include <string_view>

namespace kiln {
namespace ir {

/// Constants with more elements than this print as `meta[Constant][i]` when a side table is given.
constexpr int64_t kMaxInlineConstantElements = 16;

/// The text of an IRModule, an expression or a type. When `large_constants` is not null, every
/// constant of more than kMaxInlineConstantElements elements (or of a dtype the text cannot spell
/// element by element, such as float16) is appended to it, once per distinct tensor, and printed
/// as a reference to its index; when it is null every constant prints inline. ValueError for an
/// attribute value the format cannot spell (only None, bool, int, float, str and arrays of those
/// print). With `show_checked_types`, each statement whose value has a checked type (after
/// InferType) ends with a comment `// Tensor[...]`, which the parser skips. Attributes equal to
/// their op's default are left out (the parser fills them back in). Thread-compatible: the nodes
/// must not be mutated while printing.
KILN_API std::string AsText(const ObjectRef& node_or_module,
                            Array<Tensor>* large_constants = nullptr,
                            bool show_checked_types = false);

/// Parses a module printed by AsText (or written by hand). `constants` is the side table that
/// `meta[Constant][i]` refers to; the resulting Constants share its tensors. A syntax error is a
/// ValueError whose message is `line L, column C: expected X, found Y` followed by the source line
/// and a caret; an unknown op name is Op::Get's KeyError (with its suggestions) at a position.
KILN_API IRModule ParseModule(std::string_view text, const Array<Tensor>& constants = {});

/// Parses an expression as AsText prints one: statements `%N = expr;` then the result expression.
/// Variables not bound by a function are free; each distinct name is one Var.
KILN_API Expr ParseExpr(std::string_view text, const Array<Tensor>& constants = {});

/// Parses a type (`Tensor[(2, 3), float32]`, `(T1, T2)`, `fn (T1) -> T2`).
KILN_API Type ParseType(std::string_view text);

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_TEXT_FORMAT_H_
