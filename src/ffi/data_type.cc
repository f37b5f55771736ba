// Data type names: the one parser of DataTypeToString's spellings, shared by the graph JSON
// reader, the IR text format and attribute validation.
#include <kiln/ffi/tensor.h>

#include <charconv>
#include <utility>

namespace kiln {

std::optional<DLDataType> ParseDataType(std::string_view text) {
  if (text == "bool") return DLDataType{kDLUInt, 1, 1};
  constexpr std::pair<const char*, uint8_t> kCodes[] = {
      {"bfloat", kDLBfloat}, {"float", kDLFloat}, {"uint", kDLUInt}, {"int", kDLInt}};
  for (const auto& [prefix, code] : kCodes) {
    const std::string_view name(prefix);
    if (text.substr(0, name.size()) != name) continue;
    const char* cursor = text.data() + name.size();
    const char* const end = text.data() + text.size();
    unsigned bits = 0;
    unsigned lanes = 1;
    cursor = std::from_chars(cursor, end, bits).ptr;
    if (cursor != end && *cursor == 'x') cursor = std::from_chars(cursor + 1, end, lanes).ptr;
    if (cursor != end || bits == 0 || bits > 255 || lanes == 0 || lanes > 65535) {
      return std::nullopt;
    }
    const DLDataType dtype{code, static_cast<uint8_t>(bits), static_cast<uint16_t>(lanes)};
    // One spelling per type: "float032", "int8x1" and "uint1" (which is "bool") are refused.
    if (DataTypeToString(dtype) != text) return std::nullopt;
    return dtype;
  }
  return std::nullopt;
}

}  // namespace kiln
