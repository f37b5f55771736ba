/// "Did you mean ...?" for unknown names: the registered names closest to a misspelt one.
#ifndef KILN_FFI_CLOSE_NAMES_H_
#define KILN_FFI_CLOSE_NAMES_H_

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// Levenshtein distance (insertions, deletions, substitutions), one row of memory.
inline size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// Up to `limit` of `candidates` close to `name`, closest first: a small edit distance (a third
/// of the name, at least 2), or the same last dotted part ("transform.FuseOps" for "FuseOps").
inline std::vector<std::string> CloseNames(const std::string& name,
                                           const std::vector<std::string>& candidates,
                                           size_t limit = 5) {
  const std::string last_part = name.substr(name.rfind('.') + 1);
  const size_t max_distance = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& candidate : candidates) {
    const size_t distance = EditDistance(name, candidate);
    const bool same_last_part = candidate.substr(candidate.rfind('.') + 1) == last_part;
    if (distance <= max_distance || same_last_part) scored.emplace_back(distance, candidate);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> result;
  for (size_t i = 0; i < scored.size() && i < limit; ++i) result.push_back(scored[i].second);
  return result;
}

}  // namespace kiln

#endif  // KILN_FFI_CLOSE_NAMES_H_
