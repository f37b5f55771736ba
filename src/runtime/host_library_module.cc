// Host code in modules: "c_source" (C code to be compiled at export) and "host_library" (the
// compiled functions of a loaded artifact).
#include <dlfcn.h>

#include <kiln/ffi/registry.h>
#include <kiln/runtime/artifact.h>

#include <algorithm>

#include "host_library_module_internal.h"

namespace kiln {
namespace runtime {
namespace {

class CSourceModuleObj : public ModuleObj {
 public:
  CSourceModuleObj(std::string code, std::vector<std::string> functions)
      : code_(std::move(code)), functions_(std::move(functions)) {}

  std::string kind() const override { return kCSourceKind; }
  /// C source is not callable until ExportLibrary has compiled it.
  std::optional<Function> GetFunction(const std::string& /*name*/) override { return std::nullopt; }
  std::vector<std::string> ListFunctions() const override { return functions_; }
  const std::string& code() const { return code_; }

 private:
  std::string code_;
  std::vector<std::string> functions_;
};

class HostLibraryModuleObj : public ModuleObj {
 public:
  HostLibraryModuleObj(void* handle, std::string path, std::vector<std::string> functions)
      : handle_(handle), path_(std::move(path)), functions_(std::move(functions)) {}

  std::string kind() const override { return kHostLibraryKind; }
  std::optional<Function> GetFunction(const std::string& name) override {
    if (std::find(functions_.begin(), functions_.end(), name) == functions_.end()) {
      return std::nullopt;
    }
    auto* symbol = reinterpret_cast<KilnSafeCall>(dlsym(handle_, name.c_str()));
    KILN_CHECK(symbol != nullptr, RuntimeError)
        << "artifact '" << path_ << "' promises function '" << name << "' but does not define it";
    // The generated function ignores `self`; the artifact is never unloaded, so no resource.
    KilnObjectHandle func = nullptr;
    if (kiln_function_create(nullptr, symbol, nullptr, &func) != 0) detail::ThrowRaised();
    return Function::FromUnchecked(
        ObjectPtr<Object>::FromOwned(detail::ObjectUnsafe::FromHeader(func)));
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
