// ExportLibrary: one shared library per module tree. Host code is compiled by the system C
// compiler; the serialized tree is embedded with the assembler's .incbin (fast and exact for
// blobs of any size, unlike a C array); the result is renamed into place only when complete.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>

#include <kiln/ffi/registry.h>
#include <kiln/runtime/artifact.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "host_library_module_internal.h"

namespace kiln {
namespace runtime {
namespace {

namespace fs = std::filesystem;

/// A private temporary folder, removed with everything in it when this goes out of scope.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kiln-export-XXXXXX").string();
    KILN_CHECK(mkdtemp(pattern.data()) != nullptr, RuntimeError)
        << "cannot create a temporary folder in " << fs::temp_directory_path();
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  KILN_CHECK(out.good(), RuntimeError) << "cannot write " << path;
}

std::string ReadTail(const fs::path& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_bytes ? "..." + text.substr(text.size() - max_bytes) : text;
}

/// Runs `argv` without a shell (no quoting issues), output to `log`; throws on failure.
void Run(const std::vector<std::string>& argv, const fs::path& log) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  KILN_CHECK(pid >= 0, RuntimeError) << "cannot start " << argv[0];
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  std::string command;
  for (const std::string& arg : argv) command += (command.empty() ? "" : " ") + arg;
  KILN_THROW(RuntimeError) << "export_library: `" << command << "` failed"
                           << (WIFEXITED(status) && WEXITSTATUS(status) == 127
                                   ? " (is a C compiler installed? set CC to choose one)"
                                   : "")
                           << ":\n"
                           << ReadTail(log, 4000);
}

/// The folder of libkiln_runtime.so, where libkiln_ffi.so also lives.
fs::path LibraryDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&ExportLibrary), &info) == 0) return {};
  return fs::path(info.dli_fname).parent_path();
}

/// Kiln's headers for compiling host code: the installed prefix's include/, or the source
/// tree's when running from a build folder.
fs::path IncludeDirectory() {
  fs::path installed = LibraryDirectory().parent_path() / "include";
  if (fs::exists(installed / "kiln" / "ffi" / "c_api.h")) return installed;
  return KILN_SOURCE_INCLUDE_DIR;
}

std::string AssemblyEmbedding(const fs::path& blob, size_t size) {
  std::ostringstream s;
  s << "  .section .rodata.kiln_artifact,\"a\"\n"
    << "  .globl kiln_artifact_data\n  .type kiln_artifact_data, @object\n  .balign 16\n"
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

  TempDir work;
  WriteFile(work.path() / "artifact.bin", blob);
  WriteFile(work.path() / "artifact.S",
            AssemblyEmbedding(work.path() / "artifact.bin", blob.size()));
  const char* cc = std::getenv("CC");
  std::vector<std::string> command = {
      cc != nullptr && *cc != '\0' ? cc : "cc", "-shared", "-fPIC", "-O2", "-std=c11",
      "-I" + IncludeDirectory().string()};
  for (size_t i = 0; i < sources.size(); ++i) {
    const fs::path source = work.path() / ("host_" + std::to_string(i) + ".c");
    WriteFile(source, sources[i]);
    command.push_back(source.string());
  }
  const fs::path built = work.path() / "artifact.so";
  command.insert(command.end(), {(work.path() / "artifact.S").string(), "-o", built.string(),
                                 "-L" + LibraryDirectory().string(), "-lkiln_ffi"});
  Run(command, work.path() / "compile.log");

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
