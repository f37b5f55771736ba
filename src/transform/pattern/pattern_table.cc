// Pattern tables: each compiler's table is the global function
// `kiln.ext.<compiler>.pattern_table`, so a plugin in C++ or a user in Python provides one the
// same way, and it is read each time a pass asks (a plugin loaded later is seen).
#include <kiln/transform/pattern.h>

#include <string>

namespace kiln {
namespace transform {

Array<PatternEntry> GetPatternTable(const std::string& compiler) {
  const std::string name = "kiln.ext." + compiler + ".pattern_table";
  std::optional<kiln::Function> provider = kiln::Function::GetGlobal(name.c_str());
  if (!provider.has_value()) return {};
  const Any result = (*provider)();
  std::optional<Array<Any>> items = result.as<Array<Any>>();
  KILN_CHECK(items.has_value(), TypeError)
      << name << " returned a " << result.type_str() << "; expected an Array of PatternEntry";
  const std::string prefix = compiler + ".";
  Array<PatternEntry> table;
  for (int64_t i = 0; i < items->size(); ++i) {
    const Any item = (*items)[i];
    std::optional<PatternEntry> entry = item.as<PatternEntry>();
    KILN_CHECK(entry.has_value() && entry->defined(), TypeError)
        << name << ": entry " << i << " is a " << item.type_str()
        << "; expected a kiln.transform.PatternEntry";
    // AnnotateTarget gives a composite to the compiler named before the first dot.
    KILN_CHECK((*entry)->name().view().substr(0, prefix.size()) == prefix, ValueError)
        << name << ": entry " << i << " is named '" << (*entry)->name().str()
        << "'; the patterns of compiler '" << compiler << "' must be named '" << prefix
        << "<pattern>'";
    table.push_back(*entry);
  }
  return table;
}

}  // namespace transform
}  // namespace kiln
