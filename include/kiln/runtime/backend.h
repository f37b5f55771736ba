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

/// Loads `file_name` ("libkiln_kernels_cpu.so"), a runtime-side library that registers module
/// loaders but is not a backend, from the first folder of the backend search path holding it.
/// Used when an artifact needs a module kind whose loader is not registered yet. Returns false
/// when no folder has it; a RuntimeError with dlerror's reason when it is there but fails to load.
KILN_API bool LoadRuntimeLibrary(const std::string& file_name);

/// Loads `file_name` ("libkiln_runtime_my_ext.so"), a runtime-side plugin (a backend, or the
/// runtime half of a compiler plugin: its kernels), from the first folder of the backend search
/// path holding it, through the plugin loader (ABI check, then its registrations) as backend
/// discovery would; a no-op when that file is loaded already. Returns nullopt once it is
/// loaded, else why not, in DescribeMissingBackend's words (not found, and where it looked; or
/// found but failed to load, and why). Never throws for a missing or broken library.
KILN_API std::optional<std::string> LoadRuntimePlugin(const std::string& file_name);

/// Why the backend library `file_name` ("libkiln_runtime_opencl.so") is not loaded: its
/// failure reason, or a note that it was not found and where discovery looked.
KILN_API std::string DescribeMissingBackend(const std::string& file_name);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_BACKEND_H_
