// Pattern::ToString: the text of a pattern in the Python builders' spelling, for error
// messages and reprs. Patterns are small trees (a shared node prints at each use), so plain
// recursion is fine here.
#include <kiln/transform/pattern.h>

#include <sstream>

namespace kiln {
namespace transform {
namespace {

void PrintAttrValue(std::ostream& out, const Any& value) {
  if (std::optional<String> text = value.as<String>()) {
    out << '"' << text->str() << '"';
  } else if (value.type_index() == kKilnTypeBool) {
    out << (value.cast<bool>() ? "true" : "false");
  } else if (std::optional<int64_t> integer = value.as<int64_t>()) {
    out << *integer;
  } else if (std::optional<double> real = value.as<double>()) {
    out << *real;
  } else {
    out << "<" << value.type_str() << ">";
  }
}

void PrintList(std::ostream& out, const Array<Pattern>& patterns);

void Print(std::ostream& out, const Pattern& pattern) {
  const PatternObj* node = pattern.get();
  if (node->IsInstance<WildcardPatternObj>()) {
    out << "*";
  } else if (node->IsInstance<ConstantPatternObj>()) {
    out << "const";
  } else if (node->IsInstance<VarPatternObj>()) {
    out << "var";
  } else if (const auto* op = pattern.as<OpPatternObj>()) {
    out << op->op()->name().str();
  } else if (const auto* call = pattern.as<CallPatternObj>()) {
    Print(out, call->callee());
    PrintList(out, call->args());
  } else if (const auto* tuple = pattern.as<TuplePatternObj>()) {
    out << "tuple";
    PrintList(out, tuple->fields());
  } else if (const auto* item = pattern.as<TupleGetItemPatternObj>()) {
    Print(out, item->tuple());
    out << "." << (item->index() < 0 ? std::string("*") : std::to_string(item->index()));
  } else if (const auto* alt = pattern.as<AltPatternObj>()) {
    out << "(";
    Print(out, alt->left());
    out << " | ";
    Print(out, alt->right());
    out << ")";
  } else if (const auto* attrs = pattern.as<AttrPatternObj>()) {
    Print(out, attrs->pattern());
    out << ".has_attr({";
    const char* separator = "";
    for (const auto& [key, value] : attrs->attrs()) {
      out << separator << key.str() << "=";
      PrintAttrValue(out, value);
      separator = ", ";
    }
    out << "})";
  } else if (const auto* dtype = pattern.as<DTypePatternObj>()) {
    Print(out, dtype->pattern());
    out << ".has_dtype(" << DataTypeToString(dtype->dtype()) << ")";
  } else if (const auto* shape = pattern.as<ShapePatternObj>()) {
    Print(out, shape->pattern());
    out << ".has_shape((";
    for (size_t i = 0; i < shape->shape().size(); ++i) out << (i ? ", " : "") << shape->shape()[i];
    out << "))";
  } else {
    out << "<" << node->GetTypeKey() << ">";
  }
}

void PrintList(std::ostream& out, const Array<Pattern>& patterns) {
  out << "(";
  for (int64_t i = 0; i < patterns.size(); ++i) {
    if (i > 0) out << ", ";
    Print(out, patterns[i]);
  }
  out << ")";
}

}  // namespace

std::string Pattern::ToString() const {
  if (!defined()) return "<null pattern>";
  std::ostringstream out;
  Print(out, *this);
  return out.str();
}

}  // namespace transform
}  // namespace kiln
