// CUDA C++ source to PTX with NVRTC, for the kernels Kiln generates (kiln/tir/codegen_c.h's
// GenerateCuda):
//
//   runtime.cuda.CompileToPtx(source: str, options: Array<String>) -> Bytes   (PTX text)
//
// NVRTC is part of the CUDA toolkit, not of the driver, so it is opened (dlopen) when first
// asked for, like the driver: the backend still loads on a machine without it, and a compile
// there is a RuntimeError saying which library to install. It is looked for on the library path
// (libnvrtc.so.<major>, then libnvrtc.so), then in the toolkit this backend was built with.
#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <kiln/ffi/registry.h>

#include <mutex>
#include <string>
#include <vector>

namespace kiln {
namespace cuda {
namespace {

/// The NVRTC entry points this file calls, from the library opened once.
struct Nvrtc {
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&nvrtcGetPTX) ptx = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
  decltype(&nvrtcGetErrorString) error_string = nullptr;
  std::string problem;  ///< why NVRTC cannot be used, or ""
};

template <typename F>
void Bind(void* library, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(library, name));  // NOLINT: a C function from dlsym
}

const Nvrtc& Library() {
  static const Nvrtc nvrtc = [] {
    Nvrtc found;
    const std::vector<std::string> candidates = {
        "libnvrtc.so." + std::to_string(CUDA_VERSION / 1000), "libnvrtc.so",
        std::string(KILN_CUDA_TOOLKIT_LIBRARY_DIR) + "/libnvrtc.so"};
    void* library = nullptr;
    std::string tried;
    for (const std::string& candidate : candidates) {
      library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (library != nullptr) break;
      tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
    }
    if (library == nullptr) {
      found.problem =
          "NVRTC, the CUDA toolkit's runtime compiler, is not installed (install the "
          "CUDA toolkit's libnvrtc, or put it on LD_LIBRARY_PATH): " +
          tried;
      return found;
    }
    Bind(library, "nvrtcCreateProgram", &found.create);
    Bind(library, "nvrtcCompileProgram", &found.compile);
    Bind(library, "nvrtcGetProgramLogSize", &found.log_size);
    Bind(library, "nvrtcGetProgramLog", &found.log);
    Bind(library, "nvrtcGetPTXSize", &found.ptx_size);
    Bind(library, "nvrtcGetPTX", &found.ptx);
    Bind(library, "nvrtcDestroyProgram", &found.destroy);
    Bind(library, "nvrtcGetErrorString", &found.error_string);
    if (found.create == nullptr || found.compile == nullptr || found.log_size == nullptr ||
        found.log == nullptr || found.ptx_size == nullptr || found.ptx == nullptr ||
        found.destroy == nullptr || found.error_string == nullptr) {
      found.problem = "the NVRTC library found lacks an entry point this backend calls";
    }
    return found;
  }();
  return nvrtc;
}

/// Throws RuntimeError naming the NVRTC call that failed.
void Check(const Nvrtc& nvrtc, nvrtcResult result, const char* what) {
  KILN_CHECK(result == NVRTC_SUCCESS, RuntimeError)
      << "NVRTC " << what << " failed: " << nvrtc.error_string(result);
}

std::string CompileToPtx(const std::string& source, const std::vector<std::string>& options) {
  const Nvrtc& nvrtc = Library();
  KILN_CHECK(nvrtc.problem.empty(), RuntimeError) << nvrtc.problem;
  nvrtcProgram program = nullptr;
  Check(nvrtc, nvrtc.create(&program, source.c_str(), "kiln_generated.cu", 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  struct Destroy {
    const Nvrtc& nvrtc;
    nvrtcProgram* program;
    ~Destroy() { nvrtc.destroy(program); }
  } destroy{nvrtc, &program};
  std::vector<const char*> argv;
  argv.reserve(options.size());
  for (const std::string& option : options) argv.push_back(option.c_str());
  const nvrtcResult compiled = nvrtc.compile(program, static_cast<int>(argv.size()), argv.data());
  if (compiled != NVRTC_SUCCESS) {
    size_t size = 0;
    Check(nvrtc, nvrtc.log_size(program, &size), "nvrtcGetProgramLogSize");
    std::string log(size, '\0');
    Check(nvrtc, nvrtc.log(program, log.data()), "nvrtcGetProgramLog");
    KILN_THROW(RuntimeError) << "NVRTC could not compile the generated CUDA source ("
                             << nvrtc.error_string(compiled) << "):\n"
                             << log.c_str();
  }
  size_t size = 0;
  Check(nvrtc, nvrtc.ptx_size(program, &size), "nvrtcGetPTXSize");
  std::string ptx(size, '\0');
  Check(nvrtc, nvrtc.ptx(program, ptx.data()), "nvrtcGetPTX");
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

KILN_REGISTER_GLOBAL("runtime.cuda.CompileToPtx")
    .set_body_typed([](const String& source, const Array<String>& options) {
      std::vector<std::string> list;
      list.reserve(static_cast<size_t>(options.size()));
      for (const String& option : options) list.push_back(option.str());
      return Bytes(CompileToPtx(source.str(), list));
    });

}  // namespace
}  // namespace cuda
}  // namespace kiln
