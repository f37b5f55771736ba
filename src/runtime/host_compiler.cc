// The system C compiler, run without a shell (no quoting issues) on host code that follows the
// Kiln calling convention (include/kiln/ffi/c_api.h).
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>

#include <kiln/ffi/error.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "host_compiler_internal.h"

namespace kiln {
namespace runtime {
namespace {

namespace fs = std::filesystem;

std::string ReadTail(const fs::path& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > max_bytes ? "..." + text.substr(text.size() - max_bytes) : text;
}

/// Runs `argv` with its output to `log`; throws a RuntimeError starting with `caller` on failure.
void Run(const std::vector<std::string>& argv, const fs::path& log, const std::string& caller) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  KILN_CHECK(pid >= 0, RuntimeError) << caller << ": cannot start the C compiler " << argv[0];
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
  KILN_THROW(RuntimeError) << caller << ": the C compiler '" << argv[0] << "' failed: `" << command
                           << "`"
                           << (WIFEXITED(status) && WEXITSTATUS(status) == 127
                                   ? " (is a C compiler installed? set CC to choose one)"
                                   : "")
                           << ":\n"
                           << ReadTail(log, 4000);
}

/// The folder of libkiln_runtime.so, where libkiln_ffi.so also lives.
fs::path LibraryDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&CompileSharedLibrary), &info) == 0) return {};
  return fs::path(info.dli_fname).parent_path();
}

/// Kiln's headers for compiling host code: <prefix>/include next to <prefix>/lib, in an
/// installed prefix as in a build folder (where <build>/include links to the source tree's), so
/// that no absolute path is built into the library and a moved prefix still works.
fs::path IncludeDirectory() {
  fs::path include = LibraryDirectory().parent_path() / "include";
  KILN_CHECK(fs::exists(include / "kiln" / "ffi" / "c_api.h"), FileNotFoundError)
      << "Kiln's headers are not in " << include
      << ", next to the folder of libkiln_runtime.so: compiling host code needs them (install "
         "Kiln's include/ with its lib/)";
  return include;
}

}  // namespace

TempDir::TempDir(const std::string& purpose) {
  std::string pattern = (fs::temp_directory_path() / ("kiln-" + purpose + "-XXXXXX")).string();
  KILN_CHECK(mkdtemp(pattern.data()) != nullptr, RuntimeError)
      << "cannot create a temporary folder in " << fs::temp_directory_path();
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

void WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  KILN_CHECK(out.good(), RuntimeError) << "cannot write " << path;
}

void CompileSharedLibrary(const std::vector<fs::path>& inputs, const fs::path& output,
                          const std::string& caller) {
  const char* cc = std::getenv("CC");
  // -fno-math-errno: no host code Kiln compiles reads errno, and without it GCC keeps a branch
  // to set it after every sqrt, which leaves the loop around it scalar (a function's optimize
  // attribute does not lift that).
  std::vector<std::string> command = {cc != nullptr && *cc != '\0' ? cc : "cc",
                                      "-shared",
                                      "-fPIC",
                                      "-O2",
                                      "-fno-math-errno",
                                      "-std=c11",
                                      "-I" + IncludeDirectory().string()};
  for (const fs::path& input : inputs) command.push_back(input.string());
  // -lm: generated code (the ccompiler plugin's, say) calls <math.h>.
  command.insert(command.end(),
                 {"-o", output.string(), "-L" + LibraryDirectory().string(), "-lkiln_ffi", "-lm"});
  Run(command, output.string() + ".log", caller);
}

}  // namespace runtime
}  // namespace kiln
