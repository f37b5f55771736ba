// Type relations shared by several families of core ops.
#include "op_common.h"

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
                                                int64_t arg) {
  if (a.as_int() == 1) return b;
  if (b.as_int() == 1 || ctx.analyzer().CanProveEqual(a, b)) return a;
  if (a.as_int().has_value() && b.as_int().has_value()) return std::nullopt;
  KILN_THROW(TypeError) << ctx.Describe(
      "extent " + b.ToString() + " of " + ctx.ArgName(arg) + " and " + a.ToString() +
      " cannot be proven to broadcast; Kiln does not check sizes at run time yet, so give them "
      "equal sizes (or specialize the shapes)");
}

}  // namespace

std::vector<arith::SizeExpr> BroadcastArgShapes(const TypeRelationContext& ctx, int64_t first_arg) {
  std::vector<arith::SizeExpr> shape = ctx.Shape(first_arg);
  for (int64_t i = first_arg + 1; i < ctx.num_args(); ++i) {
    const std::vector<arith::SizeExpr> other = ctx.Shape(i);
    const size_t rank = std::max(shape.size(), other.size());
    // Aligned from the right; a missing dimension acts as 1.
    const auto extent = [rank](const std::vector<arith::SizeExpr>& dims, size_t axis) {
      return axis < rank - dims.size() ? arith::SizeExpr(arith::IntImm(1))
                                       : dims[axis - (rank - dims.size())];
    };
    std::vector<arith::SizeExpr> broadcast;
    for (size_t axis = 0; axis < rank; ++axis) {
      std::optional<arith::SizeExpr> both =
          BroadcastExtents(ctx, extent(shape, axis), extent(other, axis), i);
      KILN_CHECK(both.has_value(), TypeError)
          << ctx.Describe("shapes " + ir::ShapeToText(shape) + " and " + ir::ShapeToText(other) +
                          " of " + ctx.ArgName(i) + " do not broadcast");
      broadcast.push_back(*both);
    }
    shape = std::move(broadcast);
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

int64_t NumElements(const TypeRelationContext& ctx, const std::vector<int64_t>& shape) {
  constexpr int64_t kMaxElements = int64_t{1} << 62;
  int64_t count = 1;
  for (int64_t extent : shape) {
    KILN_CHECK(extent == 0 || count <= kMaxElements / extent, TypeError)
        << ctx.Describe("the shape " + ir::ShapeToText(shape) + " has more than 2^62 elements");
    count *= extent;
  }
  return count;
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

std::vector<int64_t> ShapeOfRank(const TypeRelationContext& ctx, int64_t i, size_t rank,
                                 const std::string& layout) {
  std::vector<int64_t> shape = ctx.StaticShape(i);
  KILN_CHECK(shape.size() == rank, TypeError)
      << ctx.Describe(ctx.ArgName(i) + " must be " + std::to_string(rank) + "-D " + layout +
                      ", got shape " + ir::ShapeToText(shape));
  return shape;
}

}  // namespace op
}  // namespace kiln
