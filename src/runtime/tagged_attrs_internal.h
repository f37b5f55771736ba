// Attribute values as tagged JSON, so that their kind survives a round trip through JSON:
// {"int": 3}, {"float": 0.5} (or "inf", "-inf", "nan"), {"bool": true}, {"str": "linear"},
// {"ints": [1, 1]}, {"floats": [0.5]}, or null for None (kiln/runtime/kernel_program.h);
// symbolic extents (attribute kinds size and sizes) as {"size": "seq"} and
// {"sizes": [0, "seq * 4", 16]}, expressions written as their text.
//
// The one codec of the kernel program (written by the compiler's lowering, read by
// libkiln_kernels_cpu) and the JSON graph runtime (written by kiln/codegen/json_graph.h, read by
// libkiln_json_runtime). Header-only rather than exported: its interface is nlohmann::json,
// a header-only library whose types must not cross Kiln's library boundaries (each library
// links it privately, in whatever version it was built with), and an exported string-based
// version would make every reader re-parse attribute snippets out of its own document.
#ifndef KILN_RUNTIME_TAGGED_ATTRS_INTERNAL_H_
#define KILN_RUNTIME_TAGGED_ATTRS_INTERNAL_H_

#include <kiln/arith/size_expr.h>
#include <kiln/ffi/array.h>
#include <kiln/ffi/error.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/string.h>
#include <kiln/runtime/shape_signature.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>

namespace kiln {
namespace runtime {
namespace tagged_attrs {

using Json = nlohmann::json;

inline Json FloatToJson(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

/// `value` tagged; ValueError naming attribute `name` of `owner` ("op 'nn.conv2d'") when its
/// type has no encoding.
inline Json Encode(const Any& value, const std::string& name, const std::string& owner) {
  switch (value.type_index()) {
    case kKilnTypeNone: return nullptr;
    case kKilnTypeInt: return Json{{"int", value.cast<int64_t>()}};
    case kKilnTypeFloat: return Json{{"float", FloatToJson(value.cast<double>())}};
    case kKilnTypeBool: return Json{{"bool", value.cast<bool>()}};
    default: break;
  }
  if (std::optional<String> text = value.as<String>()) return Json{{"str", text->str()}};
  if (std::optional<arith::SizeExpr> extent = value.as<arith::SizeExpr>()) {
    return Json{{"size", extent->ToString()}};
  }
  if (std::optional<Array<Any>> items = value.as<Array<Any>>()) {
    const bool symbolic = std::any_of(items->begin(), items->end(), [](const Any& item) {
      return item.as<arith::SizeExpr>().has_value();
    });
    if (symbolic) {
      Json list = Json::array();
      for (const Any& item : *items) {
        std::optional<arith::SizeExpr> extent = item.as<arith::SizeExpr>();
        list.push_back(extent.has_value() ? Json(extent->ToString()) : Json(item.cast<int64_t>()));
      }
      return Json{{"sizes", list}};
    }
    const bool floats = std::any_of(items->begin(), items->end(), [](const Any& item) {
      return item.type_index() == kKilnTypeFloat;
    });
    Json list = Json::array();
    for (const Any& item : *items) {
      list.push_back(floats ? FloatToJson(item.cast<double>()) : Json(item.cast<int64_t>()));
    }
    return Json{{floats ? "floats" : "ints", list}};
  }
  KILN_THROW(ValueError) << "cannot encode attribute '" << name << "' of " << owner
                         << ": a value of type " << value.type_str()
                         << " has no tagged JSON encoding";
  return nullptr;  // not reached; KILN_THROW throws from a destructor the compiler cannot see
}

/// Every attribute of `attrs` tagged, in the map's order.
inline Json EncodeAll(const Map<String, Any>& attrs, const std::string& owner) {
  Json result = Json::object();
  for (const auto& [key, value] : attrs) result[key.str()] = Encode(value, key.str(), owner);
  return result;
}

/// A float as FloatToJson writes it; ValueError starting with `context` otherwise.
inline double DecodeFloat(const Json& value, std::string_view context) {
  if (!value.is_string()) return value.get<double>();
  const auto text = value.get<std::string>();
  if (text == "inf") return std::numeric_limits<double>::infinity();
  if (text == "-inf") return -std::numeric_limits<double>::infinity();
  KILN_CHECK(text == "nan", ValueError) << context << "'" << text << "' is not a float";
  return std::numeric_limits<double>::quiet_NaN();
}

/// An extent of a size or sizes attribute: an int, or a size expression's text.
inline Any DecodeExtent(const Json& value, std::string_view context) {
  if (!value.is_string()) return value.get<int64_t>();
  const arith::SizeExpr extent = ParseExtent(value.get<std::string>(), std::string(context));
  if (std::optional<int64_t> constant = extent.as_int()) return *constant;
  return extent;
}

/// One tagged value back; ValueError starting with `context` for anything Encode cannot write.
/// JSON type mismatches (a string where an int is tagged) throw nlohmann's exceptions, which
/// callers turn into their "malformed" error.
inline Any Decode(const Json& value, std::string_view context) {
  if (value.is_null()) return Any();
  KILN_CHECK(value.is_object() && value.size() == 1, ValueError)
      << context << "an attribute value must be null or an object with one tag";
  const std::string& tag = value.begin().key();
  const Json& item = value.begin().value();
  if (tag == "int") return item.get<int64_t>();
  if (tag == "float") return DecodeFloat(item, context);
  if (tag == "bool") return item.get<bool>();
  if (tag == "str") return String(item.get<std::string>());
  if (tag == "size") return DecodeExtent(item, context);
  KILN_CHECK((tag == "ints" || tag == "floats" || tag == "sizes") && item.is_array(), ValueError)
      << context << "unknown attribute tag '" << tag << "'";
  Array<Any> items;
  for (const Json& element : item) {
    items.push_back(tag == "ints"    ? Any(element.get<int64_t>())
                    : tag == "sizes" ? DecodeExtent(element, context)
                                     : Any(DecodeFloat(element, context)));
  }
  return items;
}

/// An object of tagged values back (in key order: nlohmann::json keeps objects sorted).
inline Map<String, Any> DecodeAll(const Json& attrs, std::string_view context) {
  KILN_CHECK(attrs.is_object(), ValueError) << context << "attributes must be a JSON object";
  Map<String, Any> result;
  for (const auto& attr : attrs.items()) {
    result.Set(String(attr.key()), Decode(attr.value(), context));
  }
  return result;
}

}  // namespace tagged_attrs
}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_TAGGED_ATTRS_INTERNAL_H_
