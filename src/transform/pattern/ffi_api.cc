// The pattern language's global functions, `transform.pattern.<Builder>`, behind kiln.pattern in
// Python: one per builder of pattern.h, with the same arguments.
#include <kiln/ffi/registry.h>
#include <kiln/transform/pattern.h>

namespace kiln {
namespace transform {
namespace {

KILN_REGISTER_GLOBAL("transform.pattern.Wildcard").set_body_typed([]() { return Wildcard(); });
KILN_REGISTER_GLOBAL("transform.pattern.IsConstant").set_body_typed([]() { return IsConstant(); });
KILN_REGISTER_GLOBAL("transform.pattern.IsVar").set_body_typed([]() { return IsVar(); });
KILN_REGISTER_GLOBAL("transform.pattern.IsOp").set_body_typed([](const std::string& name) {
  return IsOp(name);
});
KILN_REGISTER_GLOBAL("transform.pattern.IsTuple").set_body_typed([](Array<Pattern> fields) {
  return IsTuple(std::move(fields));
});
KILN_REGISTER_GLOBAL("transform.pattern.IsTupleGetItem")
    .set_body_typed([](Pattern tuple, int64_t index) {
      return IsTupleGetItem(std::move(tuple), index);
    });
KILN_REGISTER_GLOBAL("transform.pattern.Call")
    .set_body_typed([](const Pattern& callee, Array<Pattern> args) {
      return callee(std::move(args));
    });
KILN_REGISTER_GLOBAL("transform.pattern.Alt")
    .set_body_typed([](const Pattern& left, const Pattern& right) { return left | right; });
KILN_REGISTER_GLOBAL("transform.pattern.HasAttr")
    .set_body_typed([](const Pattern& pattern, Map<String, Any> attrs) {
      return pattern.HasAttr(std::move(attrs));
    });
KILN_REGISTER_GLOBAL("transform.pattern.HasDType")
    .set_body_typed([](const Pattern& pattern, const std::string& dtype) {
      return pattern.HasDType(dtype);
    });
KILN_REGISTER_GLOBAL("transform.pattern.HasShape")
    .set_body_typed([](const Pattern& pattern, const Array<int64_t>& shape) {
      return pattern.HasShape(std::vector<int64_t>(shape.begin(), shape.end()));
    });
KILN_REGISTER_GLOBAL("transform.pattern.HasRank")
    .set_body_typed([](const Pattern& pattern, int64_t rank) { return pattern.HasRank(rank); });
KILN_REGISTER_GLOBAL("transform.pattern.ToString").set_body_typed([](const Pattern& pattern) {
  return pattern.ToString();
});
/// The binding as a Map from pattern node to expression, or None when there is no match.
KILN_REGISTER_GLOBAL("transform.pattern.Match")
    .set_body_typed([](const Pattern& pattern, const ir::Expr& expr) -> Any {
      std::optional<PatternBinding> binding = MatchPattern(pattern, expr);
      return binding.has_value() ? Any(*binding) : Any();
    });
KILN_REGISTER_GLOBAL("transform.pattern.PatternEntry")
    .set_body_typed([](String name, Pattern pattern, std::optional<kiln::Function> check) {
      return PatternEntry(std::move(name), std::move(pattern),
                          check.has_value() ? *std::move(check) : kiln::Function());
    });
/// `{"name": str, "pattern": Pattern, "check": Function | None}`.
KILN_REGISTER_GLOBAL("transform.pattern.PatternEntryFields")
    .set_body_typed([](const PatternEntry& entry) {
      Map<String, Any> fields;
      fields.Set("name", entry->name());
      fields.Set("pattern", entry->pattern());
      fields.Set("check", entry->check());
      return fields;
    });
KILN_REGISTER_GLOBAL("transform.pattern.GetPatternTable")
    .set_body_typed([](const std::string& compiler) { return GetPatternTable(compiler); });

}  // namespace
}  // namespace transform
}  // namespace kiln
