// LoadModule: opens an artifact, validates its embedded manifest and rebuilds the module tree
// through the loaders registered by the runtime libraries.
#include <dlfcn.h>
#include <elf.h>
#include <unistd.h>
#include <sys/mman.h>

#include <kiln/ffi/registry.h>
#include <kiln/runtime/artifact.h>
#include <kiln/runtime/backend.h>
#include <kiln/runtime/memory.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "host_library_module_internal.h"

namespace kiln {
namespace runtime {
namespace {

namespace fs = std::filesystem;

/// Refuses a file the dynamic loader would map past its end: a truncated library passes
/// dlopen and then dies with SIGBUS on first access to the missing pages.
void CheckElfIsComplete(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const auto file_size = static_cast<uint64_t>(fs::file_size(path));
  Elf64_Ehdr header{};
  in.read(reinterpret_cast<char*>(&header), sizeof(header));
  KILN_CHECK(in.gcount() == sizeof(header) && std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
                 header.e_ident[EI_CLASS] == ELFCLASS64,
             ValueError)
      << "cannot load artifact '" << path << "': not a 64-bit ELF shared library";
  KILN_CHECK(header.e_phentsize == sizeof(Elf64_Phdr) &&
                 header.e_phoff + uint64_t{header.e_phnum} * sizeof(Elf64_Phdr) <= file_size,
             ValueError)
      << "cannot load artifact '" << path << "': truncated or corrupt program headers";
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  in.seekg(static_cast<std::streamoff>(header.e_phoff));
  in.read(reinterpret_cast<char*>(segments.data()),
          static_cast<std::streamsize>(segments.size() * sizeof(Elf64_Phdr)));
  for (const Elf64_Phdr& segment : segments) {
    KILN_CHECK(segment.p_type != PT_LOAD || segment.p_offset + segment.p_filesz <= file_size,
               ValueError)
        << "cannot load artifact '" << path << "': the file is truncated (" << file_size
        << " bytes, a segment ends at byte " << segment.p_offset + segment.p_filesz << ")";
  }
}

/// The loader of `kind`. When it is not registered yet: discovers the backends, then loads
/// `runtime_library`, the library the artifact says implements the kind; `why_missing`
/// receives why when there is still none.
std::optional<Function> FindLoader(const std::string& kind, const std::string& runtime_library,
                                   std::string& why_missing) {
  const std::string name = "runtime.module.load_bytes." + kind;
  if (std::optional<Function> loader = Function::GetGlobal(name.c_str())) return loader;
  DiscoverBackends();
  if (std::optional<Function> loader = Function::GetGlobal(name.c_str())) return loader;
  why_missing = LoadRuntimeLibrary(runtime_library)
                    .value_or(runtime_library + " is loaded but does not register " + name);
  return Function::GetGlobal(name.c_str());
}

/// Loads `entry`, whose blob lies at `data + entry.blob_offset` in the loaded library, which
/// stays mapped for the process's life. A kind whose runtime registers
/// `runtime.module.load_mapped.<kind>(data: void*, size: int)` uses the blob there, in place;
/// any other is given a copy (`runtime.module.load_bytes.<kind>`).
Module LoadOne(const ArtifactModule& entry, const uint8_t* data, void* handle,
               const std::string& path) {
  if (entry.kind == kHostLibraryKind) {
    return HostLibraryModuleCreate(handle, path, entry.functions);
  }
  std::string why_missing;
  std::optional<Function> loader = FindLoader(entry.kind, entry.runtime_library, why_missing);
  KILN_CHECK(loader.has_value(), RuntimeError)
      << "artifact '" << path << "' contains a module of kind '" << entry.kind << "', which needs "
      << entry.runtime_library << ": " << why_missing;
  const uint8_t* blob = data + entry.blob_offset;
  const std::string mapped_loader = "runtime.module.load_mapped." + entry.kind;
  Module module;
  if (std::optional<Function> in_place = Function::GetGlobal(mapped_loader.c_str())) {
    module = (*in_place)(static_cast<void*>(const_cast<uint8_t*>(blob)),
                         static_cast<int64_t>(entry.blob_size))
                 .cast<Module>();
  } else {
    module = (*loader)(Bytes(reinterpret_cast<const char*>(blob), entry.blob_size)).cast<Module>();
  }
  KILN_CHECK(module->compatibility() == entry.compatibility, RuntimeError)
      << "artifact '" << path << "' has a '" << entry.kind << "' module made for '"
      << entry.compatibility << "', but the installed " << entry.runtime_library << " reads '"
      << module->compatibility() << "'; rebuild the artifact with this Kiln";
  return module;
}

KILN_REGISTER_GLOBAL("runtime.LoadModule").set_body_typed([](const String& path) {
  return LoadModule(path.str());
});

KILN_REGISTER_GLOBAL("runtime.ModuleGetFunction")
    .set_body_typed([](const Module& module, const String& name, bool query_imports) {
      return module.GetFunction(name.str(), query_imports);
    });

KILN_REGISTER_GLOBAL("runtime.ModuleKind").set_body_typed([](const Module& module) {
  return String(module->kind());
});

KILN_REGISTER_GLOBAL("runtime.ModuleListFunctions").set_body_typed([](const Module& module) {
  std::vector<std::string> names = module->ListFunctions();
  return Array<String>(names.begin(), names.end());
});

KILN_REGISTER_GLOBAL("runtime.ModuleImports").set_body_typed([](const Module& module) {
  std::vector<Module> imports = module.imports();
  return Array<Module>(imports.begin(), imports.end());
});

KILN_REGISTER_GLOBAL("runtime.ModuleImport")
    .set_body_typed([](const Module& module, const Module& child) { module.Import(child); });

}  // namespace

Module LoadModule(const std::string& path) {
  std::error_code error;
  KILN_CHECK(fs::is_regular_file(path, error), ValueError)
      << "cannot load module: '" << path << "' does not exist or is not a file";
  const std::string absolute = fs::absolute(path).string();
  CheckElfIsComplete(absolute);
  // Artifacts are never unloaded: functions and objects they made may outlive any handle.
  void* handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  KILN_CHECK(handle != nullptr, ValueError)
      << "cannot load artifact '" << path << "' (a truncated or corrupt file?): " << dlerror();
  const auto* data = static_cast<const uint8_t*>(dlsym(handle, "kiln_artifact_data"));
  const auto* size = static_cast<const uint64_t*>(dlsym(handle, "kiln_artifact_size"));
  KILN_CHECK(data != nullptr && size != nullptr, ValueError)
      << "'" << path << "' is a shared library but not a Kiln artifact (no kiln_artifact_data)";

  ArtifactContents contents;
  try {
    contents = ParseArtifact(data, *size, /*copy_blobs=*/false);
  } catch (const Error& failure) {
    throw failure.WithContext("while loading artifact '" + path + "'");
  }
  KILN_CHECK(contents.abi_major == KILN_ABI_VERSION_MAJOR, RuntimeError)
      << "artifact '" << path << "' was built by Kiln " << contents.kiln_version << " for ABI "
      << contents.abi_major << ", but this runtime has ABI " << KILN_ABI_VERSION_MAJOR
      << "; rebuild the artifact";

  // Parsing read every page (the checksum); the modules read back what they use.
  ReleaseMappedPages(data, *size);
  std::vector<Module> modules;
  for (const ArtifactModule& entry : contents.modules) {
    modules.push_back(LoadOne(entry, data, handle, path));
  }
  for (size_t i = 0; i < modules.size(); ++i) {
    for (uint32_t child : contents.modules[i].imports) modules[i].Import(modules[child]);
  }
  return modules[0];
}

}  // namespace runtime
}  // namespace kiln
