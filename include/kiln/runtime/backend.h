/// Runtime backends: the libkiln_runtime_<name>.so files found next to libkiln_runtime.so and on
/// KILN_RUNTIME_PATH, loaded once per process.
#ifndef KILN_RUNTIME_BACKEND_H_
#define KILN_RUNTIME_BACKEND_H_

#include <kiln/ffi/map.h>

#include <optional>
#include <string>

namespace kiln {
namespace runtime {

/// One backend: keys "name", "path", "version", "status" ("loaded", "failed", "shadowed" or
/// "builtin" for the CPU), "reason" (why it is not loaded, else empty).
using BackendInfo = Map<String, Any>;

/// Finds and loads the backends on first call; later calls return the same table. Never throws
/// for a broken backend: it is skipped and its reason kept. Absent backends are not listed.
KILN_API Array<BackendInfo> DiscoverBackends();

/// Loads `file_name`, a runtime-side library named by an artifact, a codegen or a plugin op's
/// kernels, from the first folder of the backend search path holding it, as that path is now
/// (a package may extend KILN_RUNTIME_PATH after discovery ran). A runtime plugin
/// ("libkiln_runtime_my_ext.so": a backend, or the runtime half of a compiler plugin) goes
/// through the plugin loader (ABI check, then its registrations); another Kiln library
/// ("libkiln_kernels_cpu.so") is opened as it is. A no-op for a file loaded already. Returns
/// nullopt once it is loaded, else why not: not found, and where it looked; or found but failed
/// to load, and why. Never throws for a missing or broken library.
KILN_API std::optional<std::string> LoadRuntimeLibrary(const std::string& file_name);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_BACKEND_H_
