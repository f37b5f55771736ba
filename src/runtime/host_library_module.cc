// Host code in modules: "c_source" (C code, compiled into the artifact at export, or into a
// temporary library when called before) and "host_library" (the compiled functions of a loaded
// artifact).
#include <dlfcn.h>

#include <kiln/ffi/registry.h>
#include <kiln/runtime/artifact.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "host_compiler_internal.h"
#include "host_library_module_internal.h"

namespace kiln {
namespace runtime {
namespace {

/// The function `name` of the loaded library `handle` (described by `where` in errors) as a
/// Function that holds `keep_alive` (may be null) until it is freed.
Function FunctionFromSymbol(void* handle, const std::string& name, const std::string& where,
                            const std::shared_ptr<void>& keep_alive) {
  auto* symbol = reinterpret_cast<KilnSafeCall>(dlsym(handle, name.c_str()));
  KILN_CHECK(symbol != nullptr, RuntimeError)
      << where << " promises function '" << name << "' but does not define it";
  using Holder = std::shared_ptr<void>;
  // The generated function ignores `self`, which is this resource.
  void* resource = keep_alive ? new Holder(keep_alive) : nullptr;
  void (*deleter)(void*) = [](void* holder) { delete static_cast<Holder*>(holder); };
  KilnObjectHandle func = nullptr;
  if (kiln_function_create(resource, symbol, resource != nullptr ? deleter : nullptr, &func) != 0) {
    if (resource != nullptr) deleter(resource);
    detail::ThrowRaised();
  }
  return Function::FromUnchecked(
      ObjectPtr<Object>::FromOwned(detail::ObjectUnsafe::FromHeader(func)));
}

bool Lists(const std::vector<std::string>& functions, const std::string& name) {
  return std::find(functions.begin(), functions.end(), name) != functions.end();
}

/// A library compiled from a c_source module; closed once the module and every Function taken
/// from it are gone.
class CompiledLibrary {
 public:
  explicit CompiledLibrary(void* handle) : handle_(handle) {}
  CompiledLibrary(const CompiledLibrary&) = delete;
  CompiledLibrary& operator=(const CompiledLibrary&) = delete;
  ~CompiledLibrary() { dlclose(handle_); }
  void* handle() const { return handle_; }

 private:
  void* handle_;
};

class CSourceModuleObj : public ModuleObj {
 public:
  CSourceModuleObj(std::string code, std::vector<std::string> functions)
      : code_(std::move(code)), functions_(std::move(functions)) {}

  std::string kind() const override { return kCSourceKind; }
  std::optional<Function> GetFunction(const std::string& name) override {
    if (!Lists(functions_, name)) return std::nullopt;
    // Each Function keeps the library open: it may outlive this module.
    const std::shared_ptr<CompiledLibrary> library = Library();
    return FunctionFromSymbol(library->handle(), name, Describe(), library);
  }
  std::vector<std::string> ListFunctions() const override { return functions_; }
  const std::string& code() const { return code_; }

 private:
  std::string Describe() const {
    std::string names;
    for (const std::string& name : functions_) names += (names.empty() ? "" : ", ") + name;
    return "c_source module (" + names + ")";
  }

  /// Compiles the code with the command ExportLibrary uses, once, so that the module runs
  /// before export (kiln.build runs models in-process). The files are removed right away: the
  /// loaded library stays mapped. A failed compilation is retried on the next call.
  std::shared_ptr<CompiledLibrary> Library() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (library_) return library_;
    TempDir work("c-source");
    const std::filesystem::path source = work.path() / "module.c";
    const std::filesystem::path built = work.path() / "module.so";
    WriteFile(source, code_);
    CompileSharedLibrary({source}, built, Describe());
    void* handle = dlopen(built.c_str(), RTLD_NOW | RTLD_LOCAL);
    KILN_CHECK(handle != nullptr, RuntimeError)
        << Describe() << ": cannot load the compiled code: " << dlerror();
    library_ = std::make_shared<CompiledLibrary>(handle);
    return library_;
  }

  std::string code_;
  std::vector<std::string> functions_;
  std::mutex mutex_;
  std::shared_ptr<CompiledLibrary> library_;
};

class HostLibraryModuleObj : public ModuleObj {
 public:
  HostLibraryModuleObj(void* handle, std::string path, std::vector<std::string> functions)
      : handle_(handle), path_(std::move(path)), functions_(std::move(functions)) {}

  std::string kind() const override { return kHostLibraryKind; }
  std::optional<Function> GetFunction(const std::string& name) override {
    if (!Lists(functions_, name)) return std::nullopt;
    // The artifact is never unloaded: nothing to keep alive.
    return FunctionFromSymbol(handle_, name, "artifact '" + path_ + "'", nullptr);
  }
  std::vector<std::string> ListFunctions() const override { return functions_; }

 private:
  void* handle_;
  std::string path_;
  std::vector<std::string> functions_;
};

KILN_REGISTER_GLOBAL("runtime.CSourceModuleCreate")
    .set_body_typed([](const String& code, const Array<String>& function_names) {
      std::vector<std::string> names;
      for (const String& name : function_names) names.push_back(name.str());
      return CSourceModuleCreate(code.str(), names);
    });

}  // namespace

Module CSourceModuleCreate(std::string code, std::vector<std::string> function_names) {
  return Module(make_object<CSourceModuleObj>(std::move(code), std::move(function_names)));
}

Module HostLibraryModuleCreate(void* dso_handle, std::string path,
                               std::vector<std::string> function_names) {
  return Module(
      make_object<HostLibraryModuleObj>(dso_handle, std::move(path), std::move(function_names)));
}

const std::string& CSourceModuleCode(const Module& module) {
  KILN_ICHECK(module->kind() == kCSourceKind);
  return static_cast<const CSourceModuleObj*>(module.get())->code();
}

}  // namespace runtime
}  // namespace kiln
