/// Where a model's time goes: the graph executor's "profile" function runs it a number of times
/// and returns, per graph node, its median seconds (kiln::Executable::profile, Python's
/// Executable.profile, `kilnc run --profile`). FormatProfile prints that as tables.
#ifndef KILN_RUNTIME_PROFILE_H_
#define KILN_RUNTIME_PROFILE_H_

#include <kiln/ffi/any.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/string.h>

#include <cstdint>
#include <string>

namespace kiln {
namespace runtime {

/// `profile` ({"names", "funcs", "shapes", "seconds" per node; "run_seconds", "repeat"}, as the
/// graph executor's "profile" returns it) as text: the median run, then the `top` slowest
/// nodes with their shapes, then the time of each kind of function (its name without the
/// numeric suffix: every fused_nn_conv2d_add_nn_relu_<n> together), slowest first.
KILN_API std::string FormatProfile(const Map<String, Any>& profile, int64_t top = 15);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_PROFILE_H_
