// Pattern nodes: the builders of pattern.h and their validation.
#include <kiln/transform/pattern.h>

#include <utility>

#include "../../ir/validate_internal.h"

namespace kiln {
namespace transform {
namespace {

Pattern Wrap(ObjectPtr<PatternObj> node) { return Pattern(std::move(node)); }

void CheckDefined(const Pattern& pattern, const char* builder) {
  KILN_CHECK(pattern.defined(), ValueError) << builder << ": the pattern is null";
}

}  // namespace

Pattern Pattern::operator()(Array<Pattern> args) const {
  CheckDefined(*this, "call pattern");
  ir::CheckNoNullElement(args, "call pattern", "argument");
  return Wrap(make_object<CallPatternObj>(*this, std::move(args)));
}

Pattern Pattern::HasAttr(Map<String, Any> attrs) const {
  CheckDefined(*this, "HasAttr");
  return Wrap(make_object<AttrPatternObj>(*this, std::move(attrs)));
}

Pattern Pattern::HasDType(const std::string& dtype) const {
  CheckDefined(*this, "HasDType");
  std::optional<DLDataType> parsed = ParseDataType(dtype);
  KILN_CHECK(parsed.has_value(), ValueError)
      << "HasDType: '" << dtype << "' is not a data type (e.g. \"float32\", \"int8\", \"bool\")";
  return Wrap(make_object<DTypePatternObj>(*this, *parsed));
}

Pattern Pattern::HasShape(std::vector<int64_t> shape) const {
  CheckDefined(*this, "HasShape");
  for (size_t i = 0; i < shape.size(); ++i) {
    KILN_CHECK(shape[i] >= -1, ValueError)
        << "HasShape: extent " << i << " is " << shape[i] << "; expected >= 0, or -1 for any";
  }
  return Wrap(make_object<ShapePatternObj>(*this, std::move(shape)));
}

Pattern Pattern::HasRank(int64_t rank) const {
  KILN_CHECK(rank >= 0, ValueError) << "HasRank: the rank is " << rank << "; expected >= 0";
  return HasShape(std::vector<int64_t>(static_cast<size_t>(rank), -1));
}

Pattern Pattern::Optional(const std::function<Pattern(const Pattern&)>& wrap) const {
  CheckDefined(*this, "Optional");
  KILN_CHECK(wrap != nullptr, ValueError) << "Optional: the wrapping function is null";
  const Pattern wrapped = wrap(*this);
  KILN_CHECK(wrapped.defined(), ValueError) << "Optional: the wrapping function returned null";
  return wrapped | *this;
}

Pattern operator|(const Pattern& left, const Pattern& right) {
  KILN_CHECK(left.defined() && right.defined(), ValueError) << "'|': an alternative is null";
  return Wrap(make_object<AltPatternObj>(left, right));
}

Pattern Wildcard() { return Wrap(make_object<WildcardPatternObj>()); }
Pattern IsConstant() { return Wrap(make_object<ConstantPatternObj>()); }
Pattern IsVar() { return Wrap(make_object<VarPatternObj>()); }
Pattern IsOp(const std::string& name) { return Wrap(make_object<OpPatternObj>(ir::Op::Get(name))); }

Pattern IsTuple(Array<Pattern> fields) {
  ir::CheckNoNullElement(fields, "IsTuple", "field");
  return Wrap(make_object<TuplePatternObj>(std::move(fields)));
}

Pattern IsTupleGetItem(Pattern tuple, int64_t index) {
  CheckDefined(tuple, "IsTupleGetItem");
  KILN_CHECK(index >= -1, ValueError)
      << "IsTupleGetItem: index " << index << "; expected >= 0, or -1 for any field";
  return Wrap(make_object<TupleGetItemPatternObj>(std::move(tuple), index));
}

PatternEntry::PatternEntry(String name, Pattern pattern, kiln::Function check) {
  KILN_CHECK(!name.empty(), ValueError) << "PatternEntry: the name is empty";
  KILN_CHECK(pattern.defined(), ValueError)
      << "PatternEntry '" << name.str() << "': the pattern is null";
  data_ = make_object<PatternEntryObj>(std::move(name), std::move(pattern), std::move(check));
}

}  // namespace transform
}  // namespace kiln
