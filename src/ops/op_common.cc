// Type relations shared by several families of core ops.
#include "op_common.h"

#include <algorithm>

namespace kiln {
namespace op {

Type SameAsInputRelation(const TypeRelationContext& ctx) {
  ctx.Tensor(0);
  return ctx.arg_type(0);
}

std::vector<int64_t> BroadcastArgShapes(const TypeRelationContext& ctx, int64_t first_arg) {
  std::vector<int64_t> shape = ctx.StaticShape(first_arg);
  for (int64_t i = first_arg + 1; i < ctx.num_args(); ++i) {
    std::optional<std::vector<int64_t>> broadcast = ir::BroadcastShapes(shape, ctx.StaticShape(i));
    KILN_CHECK(broadcast.has_value(), TypeError) << ctx.Describe(
        "shapes " + ir::ShapeToText(shape) + " and " + ir::ShapeToText(ctx.StaticShape(i)) +
        " of " + ctx.ArgName(i) + " do not broadcast");
    shape = *broadcast;
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
