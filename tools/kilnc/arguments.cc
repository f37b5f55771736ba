#include "arguments.h"

#include <charconv>
#include <sstream>

namespace kilnc {

bool SplitAssignment(const std::string& text, std::string* name, std::string* value) {
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0) return false;
  *name = text.substr(0, equals);
  *value = text.substr(equals + 1);
  return true;
}

bool ParseShape(const std::string& text, kiln::frontend::InputShapes* shapes) {
  std::string name;
  std::string dims_text;
  if (!SplitAssignment(text, &name, &dims_text)) return false;
  kiln::Array<int64_t> dims;
  const char* cursor = dims_text.data();
  const char* const end = dims_text.data() + dims_text.size();
  while (cursor < end) {
    int64_t dim = 0;
    auto [next, error] = std::from_chars(cursor, end, dim);
    if (error != std::errc() || dim < 0 || (next != end && *next != ',')) return false;
    dims.push_back(dim);
    cursor = next == end ? end : next + 1;
  }
  shapes->Set(kiln::String(name), dims);
  return true;
}

std::vector<std::string> SplitNames(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream items(text);
  for (std::string name; std::getline(items, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

}  // namespace kilnc
