/// Module: a named bundle of functions with imports (a tree), the unit that is compiled,
/// exported into an artifact and loaded back.
///
/// Each module kind ("host_library", "opencl", "graph_executor", ...) is a ModuleObj subclass
/// in the library that implements it, and that library registers the kind's loader as
/// "runtime.module.load_bytes.<kind>". The virtual interface below is C++ (Itanium ABI) and uses
/// only Kiln value types, which are themselves layouts of the C ABI; bindings in other
/// languages reach modules through the "runtime.Module*" global functions.
#ifndef KILN_RUNTIME_MODULE_H_
#define KILN_RUNTIME_MODULE_H_

#include <kiln/ffi/array.h>
#include <kiln/ffi/function.h>

#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace runtime {

class Module;

class ModuleObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.Module";
  static constexpr bool _type_final = true;
  KILN_DECLARE_STATIC_OBJECT_INFO(ModuleObj, Object, kKilnTypeModule);

  ModuleObj() = default;
  ModuleObj(const ModuleObj&) = delete;
  ModuleObj& operator=(const ModuleObj&) = delete;
  virtual ~ModuleObj() = default;

  /// Selects the loader on reload: "runtime.module.load_bytes.<kind>".
  virtual std::string kind() const = 0;
  /// This module's own function `name` (imports are searched by Module::GetFunction).
  virtual std::optional<Function> GetFunction(const std::string& name) = 0;
  /// Names of this module's own functions, for error messages and inspection.
  virtual std::vector<std::string> ListFunctions() const { return {}; }
  /// The serialized module for export; nullopt when this kind cannot be exported.
  virtual std::optional<Bytes> SaveToBytes() const { return std::nullopt; }
  /// Producer and format of SaveToBytes ("opencl/1"), checked against the loader on load.
  virtual std::string compatibility() const { return kind() + "/1"; }
  /// The runtime library that implements this kind, named when it is missing at load time.
  virtual std::string runtime_library() const { return "libkiln_runtime.so"; }

 private:
  friend class Module;
  std::vector<ObjectRef> imports_;
};

class Module : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Module, ObjectRef, ModuleObj);

  /// The function `name` of this module or, when `query_imports`, of its imports (depth first).
  std::optional<Function> GetFunction(const std::string& name, bool query_imports = true) const {
    ModuleObj* self = const_cast<ModuleObj*>(get());
    if (std::optional<Function> func = self->GetFunction(name)) return func;
    if (!query_imports) return std::nullopt;
    for (const Module& child : imports()) {
      if (std::optional<Function> func = child.GetFunction(name, true)) return func;
    }
    return std::nullopt;
  }
  /// Like GetFunction, but an error naming the module kind and what it does have.
  Function GetFunctionRequired(const std::string& name) const {
    std::optional<Function> func = GetFunction(name);
    if (!func.has_value()) {
      std::string known;
      for (const std::string& fn : get()->ListFunctions())
        known += (known.empty() ? "" : ", ") + fn;
      KILN_THROW(AttributeError) << "module of kind '" << get()->kind() << "' has no function '"
                                 << name << "'"
                                 << (known.empty() ? "" : " (it has: " + known + ")");
    }
    return *func;
  }

  std::vector<Module> imports() const {
    std::vector<Module> result;
    for (const ObjectRef& ref : get()->imports_) {
      result.push_back(Module::FromUnchecked(ref.data()));
    }
    return result;
  }
  /// Makes `child`'s functions reachable from this module. A module cannot import itself.
  void Import(const Module& child) const {
    KILN_CHECK(!child.same_as(*this), ValueError) << "a module cannot import itself";
    const_cast<ModuleObj*>(get())->imports_.push_back(child);
  }
};

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_MODULE_H_
