/// Symbolic shapes at run time (docs/design.md §20): the extents of a description (a graph's
/// entries, a kernel program function's tensors) may be size expressions over named variables
/// (`batch`, `floordiv(seq, 2)`), whose values each call reads from its arguments.
///
///   ShapeSignature signature({{SizeVar("batch"), IntImm(3)}}, {"input 'x'"});
///   const std::vector<int64_t> values = signature.Bind({&x.dl_tensor()}, "invoke");
///   signature.Evaluate({SizeVar("batch") * 2}, values);  // {2 * batch}
///
/// A variable is read from the first argument axis whose extent is that variable alone, or else
/// solved from an extent in which it is the one size not known yet (`batch * 4`, `seq + 1`:
/// functions of a kernel program often see a size only inside such an extent). An extent with
/// several sizes none of which can be read (`batch * seq` of a flattened (batch * seq, 64)
/// argument) is read as a whole: other extents may use it as a product, not its factors. Every
/// other
/// extent of every argument is checked against the values read, so a call whose shapes
/// break the signature is a ValueError naming the argument, the axis and the constraint. A
/// size read from a graph's inputs is at least 1: the compiler proves shapes under that
/// assumption.
#ifndef KILN_RUNTIME_SHAPE_SIGNATURE_H_
#define KILN_RUNTIME_SHAPE_SIGNATURE_H_

#include <kiln/arith/size_expr.h>
#include <kiln/ffi/base.h>
#include <kiln/ffi/tensor.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {
namespace runtime {

/// A shape whose extents are size expressions; static extents are IntImm.
using SymbolicShape = std::vector<arith::SizeExpr>;

/// "(batch, 3, 224, 224)": Python's tuple syntax, with expressions as ParseSizeExpr reads them.
KILN_API std::string SymbolicShapeToString(const SymbolicShape& shape);

/// Whether every extent of `shape` is a constant.
KILN_API bool IsStatic(const SymbolicShape& shape);

/// `shape` as a symbolic shape of constants.
KILN_API SymbolicShape FromStatic(const std::vector<int64_t>& shape);

/// One extent as a description writes it: an integer, or the text of a size expression. A
/// ValueError names `what` for text that does not parse.
KILN_API arith::SizeExpr ParseExtent(std::string_view text, const std::string& what);

/// The size variables of a list of argument shapes, where each is read, and the checks a call's
/// arguments must pass.
class ShapeSignature {
 public:
  ShapeSignature() = default;
  /// `args`: the shapes of the arguments, in order; `names`: how errors name each argument
  /// ("input 'x'"), as many as `args`; `min_size`: the least value Bind accepts for a size (1
  /// for a graph's inputs; 0 inside a graph, where a size computed from values may be 0,
  /// docs/design.md §22).
  KILN_API ShapeSignature(std::vector<SymbolicShape> args, std::vector<std::string> names,
                          int64_t min_size = 1);

  /// The variables, in the order their values come in Bind's result.
  const std::vector<std::string>& variables() const { return variables_; }
  /// Whether the arguments have no symbolic extent (Bind then only checks them).
  bool is_static() const { return variables_.empty() && all_static_; }

  /// ValueError unless every variable of `shape` is read from an argument; `what` names the
  /// tensor whose shape it is.
  KILN_API void CheckReadable(const SymbolicShape& shape, const std::string& what) const;

  /// The variables' values read from `args`, one per argument of the signature, after checking
  /// each argument's rank and every extent. `caller` prefixes the errors.
  KILN_API std::vector<int64_t> Bind(const std::vector<const DLTensor*>& args,
                                     const char* caller) const;

  /// `shape` with the variables at `values` (Bind's result). ValueError naming `what` when an
  /// extent is negative, unless `extents` is false (sizes used as values, which may be);
  /// OverflowError when it does not fit in int64.
  KILN_API std::vector<int64_t> Evaluate(const SymbolicShape& shape,
                                         const std::vector<int64_t>& values,
                                         const std::string& what, bool extents = true) const;

 private:
  /// Where variable i is read: axis `axis` of argument `arg`, whose extent is the variable
  /// itself unless `solved` (then an expression of it and the variables before it).
  struct Source {
    size_t arg = 0;
    size_t axis = 0;
    bool solved = false;
  };

  /// Adds sources that solve variables no extent gives alone, each from an extent whose other
  /// variables are known by then.
  void AddSolvedSources();
  /// Reads extents with several unknown sizes as wholes (products_), each named by a variable
  /// of its own whose value follows the variables' in Bind's result.
  void AddProducts();
  /// `extent` with each product that occurs in it replaced by its variable.
  arith::SizeExpr WithProducts(const arith::SizeExpr& extent) const;
  /// The value of variable `i` for which its source's extent is `extent`, the variables before
  /// it taking `values`: exact for extents linear in it; otherwise a guess the caller's check
  /// of every extent refutes.
  int64_t Solve(size_t i, const std::vector<int64_t>& values, int64_t extent) const;
  /// Variable i as errors name it: its name, or the product it stands for.
  std::string SizeName(size_t i) const;
  std::string DescribeValues(const std::vector<int64_t>& values) const;

  std::vector<SymbolicShape> args_;
  std::vector<std::string> names_;
  std::vector<std::string> variables_;
  std::vector<Source> sources_;
  /// Extents read whole: the expression, and the variable standing for it (also in
  /// variables_ and sources_, after the sizes).
  std::vector<std::pair<arith::SizeExpr, arith::SizeVar>> products_;
  bool all_static_ = true;
  int64_t min_size_ = 1;
};

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_SHAPE_SIGNATURE_H_
