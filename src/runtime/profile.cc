// FormatProfile (kiln/runtime/profile.h): a profile's nodes and function kinds as text tables.
#include <kiln/ffi/array.h>
#include <kiln/ffi/registry.h>
#include <kiln/runtime/profile.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace runtime {
namespace {

/// fused_nn_conv2d_add_nn_relu_5 -> fused_nn_conv2d_add_nn_relu: lowering numbers the functions
/// of one kind.
std::string KindOf(const std::string& func) {
  size_t end = func.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(func[end - 1])) != 0) --end;
  if (end < func.size() && end > 0 && func[end - 1] == '_') return func.substr(0, end - 1);
  return func;
}

std::string Row(double ms, double percent, const std::string& rest) {
  char numbers[32];
  std::snprintf(numbers, sizeof(numbers), "%9.3f %6.1f", ms, percent);
  return std::string(numbers) + "  " + rest + "\n";
}

}  // namespace

std::string FormatProfile(const Map<String, Any>& profile, int64_t top) {
  const auto names = profile.at("names").cast<Array<String>>();
  const auto funcs = profile.at("funcs").cast<Array<String>>();
  const auto shapes = profile.at("shapes").cast<Array<String>>();
  const auto seconds = profile.at("seconds").cast<Array<double>>();
  const auto count = static_cast<size_t>(seconds.size());
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return seconds[static_cast<int64_t>(a)] > seconds[static_cast<int64_t>(b)];
  });
  double total = 0;
  for (double s : seconds) total += s;
  const double percent = total > 0 ? 100.0 / total : 0.0;

  std::ostringstream out;
  char summary[160];
  std::snprintf(summary, sizeof(summary),
                "median run %.3f ms over %lld runs; its %zu nodes take %.3f ms (medians of each)\n",
                profile.at("run_seconds").cast<double>() * 1e3,
                static_cast<long long>(profile.at("repeat").cast<int64_t>()), count, total * 1e3);
  out << summary << "\n      ms      %  node (shapes)\n";
  const size_t shown = std::min(count, static_cast<size_t>(std::max<int64_t>(top, 0)));
  for (size_t k = 0; k < shown; ++k) {
    const auto i = static_cast<int64_t>(order[k]);
    out << Row(seconds[i] * 1e3, seconds[i] * percent,
               names[i].str() + "  (" + shapes[i].str() + ")");
  }
  if (shown < count) out << "  ... " << count - shown << " more nodes\n";

  std::map<std::string, std::pair<double, int>> kinds;  // seconds, nodes
  for (size_t i = 0; i < count; ++i) {
    auto& kind = kinds[KindOf(funcs[static_cast<int64_t>(i)].str())];
    kind.first += seconds[static_cast<int64_t>(i)];
    ++kind.second;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> by_time(kinds.begin(), kinds.end());
  std::stable_sort(by_time.begin(), by_time.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  out << "\n      ms      %  function kind (nodes)\n";
  for (const auto& [kind, time] : by_time) {
    out << Row(time.first * 1e3, time.first * percent,
               kind + " (" + std::to_string(time.second) + ")");
  }
  return out.str();
}

namespace {

KILN_REGISTER_GLOBAL("runtime.FormatProfile")
    .set_body_typed([](const Map<String, Any>& profile, int64_t top) {
      return FormatProfile(profile, top);
    });

}  // namespace
}  // namespace runtime
}  // namespace kiln
