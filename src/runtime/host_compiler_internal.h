// The system C compiler as Kiln's runtime uses it: ExportLibrary compiles an artifact with it,
// and a "c_source" module compiles itself with it when called before export, so that both
// build host code with the same command.
#ifndef KILN_SRC_RUNTIME_HOST_COMPILER_INTERNAL_H_
#define KILN_SRC_RUNTIME_HOST_COMPILER_INTERNAL_H_

#include <filesystem>
#include <string>
#include <vector>

namespace kiln {
namespace runtime {

/// A private temporary folder `kiln-<purpose>-XXXXXX`, removed with everything in it when this
/// goes out of scope.
class TempDir {
 public:
  explicit TempDir(const std::string& purpose);
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// Writes `bytes` to `path`; RuntimeError naming the file when it cannot.
void WriteFile(const std::filesystem::path& path, const std::string& bytes);

/// Compiles and links `inputs` (C sources, assembly) into the shared library `output` with the
/// system C compiler ($CC, else cc), Kiln's C headers and libkiln_ffi; the compiler's output
/// goes to a log next to `output`. On failure a RuntimeError that starts with `caller` names
/// the command and shows the end of the log.
void CompileSharedLibrary(const std::vector<std::filesystem::path>& inputs,
                          const std::filesystem::path& output, const std::string& caller);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_SRC_RUNTIME_HOST_COMPILER_INTERNAL_H_
