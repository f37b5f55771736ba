// Type relations shared by several families of core ops.
#include "op_common.h"

#include <kiln/runtime/shape_signature.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace kiln {
namespace op {

Type SameAsInputRelation(const TypeRelationContext& ctx) {
  ctx.Tensor(0);
  return ctx.arg_type(0);
}

namespace {

/// The broadcast of extents `a` and `b`; nullopt when they do not broadcast (static), and a
/// TypeError when that cannot be decided before run time (symbolic).
std::optional<arith::SizeExpr> BroadcastExtents(const TypeRelationContext& ctx,
                                                const arith::SizeExpr& a, const arith::SizeExpr& b,
                                                const std::string& b_name) {
  if (a.as_int() == 1) return b;
  if (b.as_int() == 1 || ctx.analyzer().CanProveEqual(a, b)) return a;
  // Two static extents are decided: they do not broadcast.
  if (a.as_int().has_value() && b.as_int().has_value()) return std::nullopt;
  // Otherwise they are taken to be equal, which each run checks (naming both): a symbolic extent
  // that is 1 at run time is not broadcast against the other.
  KILN_CHECK(!ctx.analyzer().CanProveLT(a, b) && !ctx.analyzer().CanProveGT(a, b), TypeError)
      << ctx.Describe("extent " + b.ToString() + " of " + b_name + " and " + a.ToString() +
                      " differ, and neither is 1");
  ctx.DeferCheck(
      a, "==", b,
      "extent " + b.ToString() + " of " + b_name + " does not broadcast against " + a.ToString());
  return b.as_int().has_value() ? b : a;  // the static one, when there is one
}

}  // namespace

std::optional<std::vector<arith::SizeExpr>> BroadcastTwoShapes(
    const TypeRelationContext& ctx, const std::vector<arith::SizeExpr>& a,
    const std::vector<arith::SizeExpr>& b, const std::string& b_name) {
  const size_t rank = std::max(a.size(), b.size());
  // Aligned from the right; a missing dimension acts as 1.
  const auto extent = [rank](const std::vector<arith::SizeExpr>& dims, size_t axis) {
    return axis < rank - dims.size() ? arith::SizeExpr(arith::IntImm(1))
                                     : dims[axis - (rank - dims.size())];
  };
  std::vector<arith::SizeExpr> broadcast;
  for (size_t axis = 0; axis < rank; ++axis) {
    std::optional<arith::SizeExpr> both =
        BroadcastExtents(ctx, extent(a, axis), extent(b, axis), b_name);
    if (!both.has_value()) return std::nullopt;
    broadcast.push_back(*both);
  }
  return broadcast;
}

std::vector<arith::SizeExpr> BroadcastArgShapes(const TypeRelationContext& ctx, int64_t first_arg) {
  std::vector<arith::SizeExpr> shape = ctx.Shape(first_arg);
  for (int64_t i = first_arg + 1; i < ctx.num_args(); ++i) {
    const std::vector<arith::SizeExpr> other = ctx.Shape(i);
    std::optional<std::vector<arith::SizeExpr>> broadcast =
        BroadcastTwoShapes(ctx, shape, other, ctx.ArgName(i));
    KILN_CHECK(broadcast.has_value(), TypeError)
        << ctx.Describe("shapes " + ir::ShapeToText(shape) + " and " + ir::ShapeToText(other) +
                        " of " + ctx.ArgName(i) + " do not broadcast");
    shape = std::move(*broadcast);
  }
  return shape;
}

Type BroadcastRelation(const TypeRelationContext& ctx) {
  for (int64_t i = 1; i < ctx.num_args(); ++i) ctx.CheckSameDType(0, i);
  return TypeRelationContext::TensorResult(BroadcastArgShapes(ctx, 0), ctx.DType(0));
}

Type CompareRelation(const TypeRelationContext& ctx) {
  for (int64_t i = 1; i < ctx.num_args(); ++i) ctx.CheckSameDType(0, i);
  return TypeRelationContext::TensorResult(BroadcastArgShapes(ctx, 0), kBool);
}

arith::SizeExpr NumElementsExpr(const TypeRelationContext& ctx,
                                const std::vector<arith::SizeExpr>& shape) {
  // The static extents are multiplied here, with the bound checked, in order; the symbolic ones
  // stay a product for the analyzer (whose arithmetic cannot overflow).
  int64_t count = 1;
  arith::SizeExpr symbolic = arith::IntImm(1);
  for (const arith::SizeExpr& extent : shape) {
    const std::optional<int64_t> value = extent.as_int();
    if (!value.has_value()) {
      symbolic = symbolic * extent;
      continue;
    }
    KILN_CHECK(*value == 0 || count <= kMaxElements / *value, TypeError)
        << ctx.Describe("the shape " + ir::ShapeToText(shape) + " has more than 2^62 elements");
    count *= *value;
  }
  return ctx.analyzer().Simplify(symbolic * count);
}

int64_t NumElements(const TypeRelationContext& ctx, const std::vector<int64_t>& shape) {
  return *NumElementsExpr(ctx, runtime::FromStatic(shape)).as_int();
}

std::string SizeFact::Undecided() const {
  if (status_ != Status::kUndecided) return "";
  return " (" + lhs_.ToString() + " " + relation_ + " " + rhs_.ToString() +
         " cannot be proven or disproven before run time: give the sizes a provable relation "
         "or specialize the shapes)";
}

bool SizeFact::Defer(const TypeRelationContext& ctx, const std::string& what) const {
  if (status_ != Status::kUndecided) return false;
  ctx.DeferCheck(lhs_, relation_, rhs_, what);
  return true;
}

namespace {

/// The status of a constraint the analyzer proves by `holds` and refutes by `fails`.
SizeFact::Status StatusOf(bool holds, bool fails) {
  if (holds) return SizeFact::Status::kHolds;
  return fails ? SizeFact::Status::kFails : SizeFact::Status::kUndecided;
}

}  // namespace

SizeFact ProveEqual(const TypeRelationContext& ctx, const arith::SizeExpr& a,
                    const arith::SizeExpr& b) {
  const arith::Analyzer& analyzer = ctx.analyzer();
  const SizeFact::Status status = StatusOf(analyzer.CanProveEqual(a, b),
                                           analyzer.CanProveLT(a, b) || analyzer.CanProveGT(a, b));
  return SizeFact(status, a, "==", b);
}

SizeFact ProveGE(const TypeRelationContext& ctx, const arith::SizeExpr& a,
                 const arith::SizeExpr& b) {
  const arith::Analyzer& analyzer = ctx.analyzer();
  return SizeFact(StatusOf(analyzer.CanProveGE(a, b), analyzer.CanProveLT(a, b)), a, ">=", b);
}

SizeFact ProveLT(const TypeRelationContext& ctx, const arith::SizeExpr& a,
                 const arith::SizeExpr& b) {
  const arith::Analyzer& analyzer = ctx.analyzer();
  return SizeFact(StatusOf(analyzer.CanProveLT(a, b), analyzer.CanProveGE(a, b)), a, "<", b);
}

SizeFact ProveDivisible(const TypeRelationContext& ctx, const arith::SizeExpr& value,
                        const arith::SizeExpr& divisor) {
  return ProveEqual(ctx, arith::FloorMod(value, divisor), arith::IntImm(0));
}

SizeFact ProveSameShape(const TypeRelationContext& ctx, const std::vector<arith::SizeExpr>& a,
                        const std::vector<arith::SizeExpr>& b) {
  if (a.size() != b.size()) {
    // Different ranks: the constraint is on the ranks, which are always known.
    return SizeFact(SizeFact::Status::kFails, arith::IntImm(static_cast<int64_t>(a.size())),
                    "==", arith::IntImm(static_cast<int64_t>(b.size())));
  }
  for (size_t i = 0; i < a.size(); ++i) {
    SizeFact same = ProveEqual(ctx, a[i], b[i]);
    if (!same.holds()) return same;
  }
  return SizeFact(SizeFact::Status::kHolds, arith::IntImm(0), "==", arith::IntImm(0));
}

DLDataType DTypeAttr(const TypeRelationContext& ctx, const char* name) {
  // The schema (AttrKind::kDType) guarantees the string parses.
  return *ParseDataType(ctx.Attr<String>(name).str());
}

std::vector<int64_t> ReadBoundedInts(const TypeRelationContext& ctx, const char* name,
                                     size_t length, int64_t minimum, int64_t maximum) {
  std::vector<int64_t> values = ctx.IntsAttr(name);
  bool ok = values.size() == length;
  for (int64_t value : values) ok = ok && value >= minimum && value <= maximum;
  KILN_CHECK(ok, TypeError) << ctx.Describe(
      std::string("attribute '") + name + "' must be " + std::to_string(length) + " integers in [" +
      std::to_string(minimum) + ", " + std::to_string(maximum) + "], got " +
      ir::ShapeToText(values));
  return values;
}

std::vector<int64_t> NormalizeAxes(const TypeRelationContext& ctx, const std::vector<int64_t>& axes,
                                   int64_t rank, const char* attr) {
  std::vector<int64_t> normalized;
  std::vector<bool> seen(rank, false);
  for (int64_t axis : axes) {
    const int64_t index = ctx.NormalizeAxis(axis, rank, attr);
    KILN_CHECK(!seen[index], TypeError)
        << ctx.Describe(std::string("attribute '") + attr + "' = " + ir::ShapeToText(axes) +
                        " repeats axis " + std::to_string(index));
    seen[index] = true;
    normalized.push_back(index);
  }
  return normalized;
}

std::string StringChoiceAttr(const TypeRelationContext& ctx, const char* name,
                             const std::vector<std::string>& allowed) {
  std::string value = ctx.Attr<String>(name).str();
  std::string choices;
  for (const std::string& choice : allowed)
    choices += (choices.empty() ? "'" : ", '") + choice + "'";
  KILN_CHECK(std::find(allowed.begin(), allowed.end(), value) != allowed.end(), TypeError)
      << ctx.Describe(std::string("attribute '") + name + "' = '" + value + "' is not one of " +
                      choices);
  return value;
}

std::vector<arith::SizeExpr> ShapeOfRank(const TypeRelationContext& ctx, int64_t i, size_t rank,
                                         const std::string& layout) {
  std::vector<arith::SizeExpr> shape = ctx.Shape(i);
  KILN_CHECK(shape.size() == rank, TypeError)
      << ctx.Describe(ctx.ArgName(i) + " must be " + std::to_string(rank) + "-D " + layout +
                      ", got shape " + ir::ShapeToText(shape));
  return shape;
}

int64_t StaticExtent(const TypeRelationContext& ctx, int64_t i,
                     const std::vector<arith::SizeExpr>& shape, size_t axis, const char* what) {
  const std::optional<int64_t> extent = shape[axis].as_int();
  KILN_CHECK(extent.has_value(), TypeError)
      << ctx.Describe(std::string(what) + " (dimension " + std::to_string(axis) + " of " +
                      ctx.ArgName(i) + ") must be static, got " + shape[axis].ToString());
  return *extent;
}

}  // namespace op
}  // namespace kiln
