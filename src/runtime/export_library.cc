// ExportLibrary: one shared library per module tree. Host code is compiled by the system C
// compiler; the serialized tree is embedded with the assembler's .incbin (fast and exact for
// blobs of any size, unlike a C array); the result is renamed into place only when complete.
#include <unistd.h>

#include <kiln/ffi/registry.h>
#include <kiln/runtime/artifact.h>

#include <filesystem>
#include <sstream>

#include "host_compiler_internal.h"
#include "host_library_module_internal.h"

namespace kiln {
namespace runtime {
namespace {

namespace fs = std::filesystem;

std::string AssemblyEmbedding(const fs::path& blob, size_t size) {
  std::ostringstream s;
  s << "  .section .rodata.kiln_artifact,\"a\"\n"
    << "  .globl kiln_artifact_data\n  .type kiln_artifact_data, @object\n  .balign 64\n"
    << "kiln_artifact_data:\n  .incbin \"" << blob.string() << "\"\n"
    << "  .globl kiln_artifact_size\n  .type kiln_artifact_size, @object\n  .balign 8\n"
    << "kiln_artifact_size:\n  .quad " << size << "\n"
    << "  .section .note.GNU-stack,\"\",@progbits\n";
  return s.str();
}

void Collect(const Module& module, ArtifactContents* contents, std::vector<std::string>* sources) {
  const size_t index = contents->modules.size();
  contents->modules.emplace_back();
  ArtifactModule entry;
  entry.functions = module->ListFunctions();
  if (module->kind() == kCSourceKind) {
    entry.kind = kHostLibraryKind;
    entry.compatibility = std::string(kHostLibraryKind) + "/1";
    entry.runtime_library = "libkiln_runtime.so";
    sources->push_back(CSourceModuleCode(module));
  } else {
    std::optional<Bytes> bytes = module->SaveToBytes();
    KILN_CHECK(bytes.has_value(), ValueError)
        << "module of kind '" << module->kind() << "' cannot be exported: it has no serialized "
        << "form (SaveToBytes)";
    entry.kind = module->kind();
    entry.compatibility = module->compatibility();
    entry.runtime_library = module->runtime_library();
    entry.blob = bytes->view();
  }
  for (const Module& child : module.imports()) {
    entry.imports.push_back(static_cast<uint32_t>(contents->modules.size()));
    Collect(child, contents, sources);
  }
  contents->modules[index] = std::move(entry);
}

KILN_REGISTER_GLOBAL("runtime.ExportLibrary")
    .set_body_typed([](const Module& module, const String& path) {
      ExportLibrary(module, path.str());
    });

}  // namespace

ArtifactContents CollectModuleTree(const Module& root, std::vector<std::string>* host_sources) {
  ArtifactContents contents;
  contents.kiln_version = KILN_VERSION;
  contents.abi_major = KILN_ABI_VERSION_MAJOR;
  contents.abi_minor = KILN_ABI_VERSION_MINOR;
  Collect(root, &contents, host_sources);
  return contents;
}

void ExportLibrary(const Module& root, const std::string& path) {
  KILN_CHECK(root.defined(), ValueError) << "export_library needs a module";
  std::vector<std::string> sources;
  const std::string blob = SerializeArtifact(CollectModuleTree(root, &sources));

  TempDir work("export");
  WriteFile(work.path() / "artifact.bin", blob);
  std::vector<fs::path> inputs;
  for (size_t i = 0; i < sources.size(); ++i) {
    inputs.push_back(work.path() / ("host_" + std::to_string(i) + ".c"));
    WriteFile(inputs.back(), sources[i]);
  }
  inputs.push_back(work.path() / "artifact.S");
  WriteFile(inputs.back(), AssemblyEmbedding(work.path() / "artifact.bin", blob.size()));
  const fs::path built = work.path() / "artifact.so";
  CompileSharedLibrary(inputs, built, "export_library");

  // Copy next to the destination, then rename: readers never see a partial file.
  const fs::path destination = fs::absolute(path);
  const fs::path partial = destination.string() + ".partial-" + std::to_string(getpid());
  std::error_code error;
  fs::copy_file(built, partial, fs::copy_options::overwrite_existing, error);
  KILN_CHECK(!error, RuntimeError) << "cannot write " << partial << ": " << error.message();
  fs::rename(partial, destination, error);
  if (error) {
    std::error_code ignored;
    fs::remove(partial, ignored);
    KILN_THROW(RuntimeError) << "cannot write " << destination << ": " << error.message();
  }
}

}  // namespace runtime
}  // namespace kiln
