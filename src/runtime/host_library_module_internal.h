// Host-library modules: an artifact's own compiled functions, looked up with dlsym.
#ifndef KILN_SRC_RUNTIME_HOST_LIBRARY_MODULE_INTERNAL_H_
#define KILN_SRC_RUNTIME_HOST_LIBRARY_MODULE_INTERNAL_H_

#include <kiln/runtime/module.h>

#include <string>
#include <vector>

namespace kiln {
namespace runtime {

/// The kind under which compiled host code appears in an artifact.
constexpr const char* kHostLibraryKind = "host_library";
/// The kind of C source: ExportLibrary compiles it into the artifact, and the module compiles it
/// into a temporary library when called before export.
constexpr const char* kCSourceKind = "c_source";

/// A module over the functions `function_names` of the loaded library `dso_handle` (the
/// artifact itself). Each follows the Kiln calling convention.
Module HostLibraryModuleCreate(void* dso_handle, std::string path,
                               std::vector<std::string> function_names);

/// The C code of a "c_source" module.
const std::string& CSourceModuleCode(const Module& module);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_HOST_LIBRARY_MODULE_INTERNAL_H_
