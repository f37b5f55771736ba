// Op schemas: the kinds of attribute values, and the check every Call of an op goes through.
#include <kiln/arith/size_expr.h>
#include <kiln/ffi/close_names.h>
#include <kiln/ffi/tensor.h>

#include <sstream>
#include <vector>

#include "op_schema_internal.h"

namespace kiln {
namespace ir {
namespace {

bool IsInt(const Any& value) { return value.type_index() == kKilnTypeInt; }

/// `value` as an extent's stored form (an int, or a size expression that is not constant), or
/// nullopt when it is neither an int nor a size expression.
std::optional<Any> AsExtent(const Any& value) {
  if (IsInt(value)) return value;
  std::optional<arith::SizeExpr> expr = value.as<arith::SizeExpr>();
  if (!expr.has_value() || !expr->defined()) return std::nullopt;
  if (std::optional<int64_t> constant = expr->as_int()) return Any(*constant);
  return value;
}
bool IsNumber(const Any& value) {
  return value.type_index() == kKilnTypeInt || value.type_index() == kKilnTypeFloat;
}

/// The array in `value` with every element passing `is_element`, or nullopt.
template <typename IsElement>
std::optional<Array<Any>> ArrayOf(const Any& value, IsElement is_element) {
  std::optional<Array<Any>> array = value.as<Array<Any>>();
  if (!array.has_value()) return std::nullopt;
  for (const Any& item : *array) {
    if (!is_element(item)) return std::nullopt;
  }
  return array;
}

/// The value converted to `kind`'s stored form, or nullopt when it is not of that kind.
std::optional<Any> ConvertToKind(AttrKind kind, const Any& value) {
  switch (kind) {
    case AttrKind::kInt: return IsInt(value) ? std::optional<Any>(value) : std::nullopt;
    case AttrKind::kFloat:
      return IsNumber(value) ? std::optional<Any>(value.cast<double>()) : std::nullopt;
    case AttrKind::kBool:
      return value.type_index() == kKilnTypeBool ? std::optional<Any>(value) : std::nullopt;
    case AttrKind::kString:
      return value.as<String>().has_value() ? std::optional<Any>(value) : std::nullopt;
    case AttrKind::kDType: {
      std::optional<String> text = value.as<String>();
      if (!text.has_value() || !ParseDataType(text->str()).has_value()) return std::nullopt;
      return value;
    }
    case AttrKind::kInts:
      if (!ArrayOf(value, IsInt).has_value()) return std::nullopt;
      return value;
    case AttrKind::kFloats: {
      std::optional<Array<Any>> numbers = ArrayOf(value, IsNumber);
      if (!numbers.has_value()) return std::nullopt;
      Array<Any> floats;
      for (const Any& item : *numbers) floats.push_back(item.cast<double>());
      return Any(floats);
    }
    case AttrKind::kSize: return AsExtent(value);
    case AttrKind::kSizes: {
      std::optional<Array<Any>> items = value.as<Array<Any>>();
      if (!items.has_value()) return std::nullopt;
      Array<Any> extents;
      for (const Any& item : *items) {
        std::optional<Any> extent = AsExtent(item);
        if (!extent.has_value()) return std::nullopt;
        extents.push_back(*extent);
      }
      return Any(extents);
    }
  }
  return std::nullopt;
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::vector<std::string> AttrNames(const OpSchema& schema) {
  std::vector<std::string> names;
  for (const AttrField& field : schema.attrs) names.push_back(field.name);
  return names;
}

[[noreturn]] void ThrowUnknownAttr(const std::string& op_name, const OpSchema& schema,
                                   const std::string& attr) {
  const std::vector<std::string> names = AttrNames(schema);
  std::ostringstream message;
  message << "op '" << op_name << "' has no attribute '" << attr << "'";
  const std::vector<std::string> close = CloseNames(attr, names);
  if (!close.empty()) message << "; did you mean '" << close[0] << "'?";
  message << " (its attributes: " << (names.empty() ? "none" : Join(names)) << ")";
  KILN_THROW(ValueError) << message.str();
}

/// The value of `values` whose name is `name`; ValueError naming `what` and listing the names.
template <typename Enum, size_t N, typename NameOf>
Enum ParseEnumName(const std::string& name, const Enum (&values)[N], NameOf name_of,
                   const char* what) {
  std::vector<std::string> names;
  for (Enum value : values) {
    if (name == name_of(value)) return value;
    names.emplace_back(name_of(value));
  }
  KILN_THROW(ValueError) << "unknown " << what << " '" << name << "' (one of: " << Join(names)
                         << ")";
}

}  // namespace

const char* OpPatternName(OpPattern pattern) {
  switch (pattern) {
    case OpPattern::kElemWise: return "elemwise";
    case OpPattern::kBroadcast: return "broadcast";
    case OpPattern::kInjective: return "injective";
    case OpPattern::kCommReduce: return "reduce";
    case OpPattern::kOutEWiseFusable: return "out_elemwise_fusable";
    case OpPattern::kTuple: return "tuple";
    case OpPattern::kOpaque: return "opaque";
  }
  return "unknown";
}

const char* AttrKindName(AttrKind kind) {
  switch (kind) {
    case AttrKind::kInt: return "int";
    case AttrKind::kFloat: return "float";
    case AttrKind::kBool: return "bool";
    case AttrKind::kString: return "str";
    case AttrKind::kDType: return "dtype";
    case AttrKind::kInts: return "ints";
    case AttrKind::kFloats: return "floats";
    case AttrKind::kSize: return "size";
    case AttrKind::kSizes: return "sizes";
  }
  return "unknown";
}

OpPattern ParseOpPattern(const std::string& name) {
  static constexpr OpPattern kPatterns[] = {OpPattern::kElemWise,        OpPattern::kBroadcast,
                                            OpPattern::kInjective,       OpPattern::kCommReduce,
                                            OpPattern::kOutEWiseFusable, OpPattern::kTuple,
                                            OpPattern::kOpaque};
  return ParseEnumName(name, kPatterns, OpPatternName, "op pattern");
}

AttrKind ParseAttrKind(const std::string& name) {
  static constexpr AttrKind kKinds[] = {AttrKind::kInt,    AttrKind::kFloat, AttrKind::kBool,
                                        AttrKind::kString, AttrKind::kDType, AttrKind::kInts,
                                        AttrKind::kFloats, AttrKind::kSize,  AttrKind::kSizes};
  return ParseEnumName(name, kKinds, AttrKindName, "attribute kind");
}

Any CheckAttrValue(const std::string& op_name, const AttrField& field, const Any& value) {
  const bool none_allowed = field.default_value.has_value() && field.default_value->is_none();
  if (value.is_none() && none_allowed) return value;
  std::optional<Any> converted = ConvertToKind(field.kind, value);
  KILN_CHECK(converted.has_value(), TypeError)
      << "op '" << op_name << "': attribute '" << field.name << "' must be "
      << AttrKindName(field.kind) << (none_allowed ? " or None" : "") << ", got a "
      << value.type_str();
  return *converted;
}

Map<String, Any> NormalizeCallAttrs(const Op& op, int64_t num_args, const Map<String, Any>& attrs) {
  const std::shared_ptr<const OpSchema> schema = op.schema();
  if (schema == nullptr) return attrs;
  const std::string& op_name = op->name().str();
  KILN_CHECK(num_args == static_cast<int64_t>(schema->inputs.size()), ValueError)
      << "op '" << op_name << "' takes " << schema->inputs.size() << " argument"
      << (schema->inputs.size() == 1 ? "" : "s") << " (" << Join(schema->inputs) << "), got "
      << num_args;
  for (const auto& [key, value] : attrs) {
    if (schema->FindAttr(key.str()) == nullptr) ThrowUnknownAttr(op_name, *schema, key.str());
  }
  Map<String, Any> normalized;
  for (const AttrField& field : schema->attrs) {
    std::optional<Any> given = attrs.Get(String(field.name));
    if (given.has_value()) {
      normalized.Set(String(field.name), CheckAttrValue(op_name, field, *given));
      continue;
    }
    KILN_CHECK(field.default_value.has_value(), ValueError)
        << "op '" << op_name << "' needs attribute '" << field.name << "' ("
        << AttrKindName(field.kind) << ")";
    normalized.Set(String(field.name), *field.default_value);
  }
  return normalized;
}

}  // namespace ir
}  // namespace kiln
