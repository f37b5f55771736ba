/// IRModule: the unit the compiler works on, a set of named functions plus module attributes.
#ifndef KILN_IR_MODULE_H_
#define KILN_IR_MODULE_H_

#include <kiln/ir/function.h>

#include <string>
#include <unordered_map>

namespace kiln {
namespace ir {

/// Functions keyed by GlobalVar (by identity), with a name index so no two share a name.
class IRModuleObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.ir.IRModule";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(IRModuleObj, Object);

  const Map<GlobalVar, Function>& functions() const { return functions_; }
  const Map<String, Any>& attrs() const { return attrs_; }

 private:
  friend class IRModule;
  Map<GlobalVar, Function> functions_;
  Map<String, Any> attrs_;
  std::unordered_map<std::string, GlobalVar> by_name_;
};

/// A module handle. Like Array and Map it is copy-on-write: Add changes only this handle, never
/// a module another handle (or a pass) is already reading.
class IRModule : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(IRModule, ObjectRef, IRModuleObj);
  /// An empty module with the given attributes.
  KILN_API static IRModule Create(Map<String, Any> attrs = Map<String, Any>());

  /// Adds `func` under `gvar`; KeyError when a function of the same name is already present.
  KILN_API void Add(const GlobalVar& gvar, const Function& func);
  /// The function named `name`; KeyError listing the module's functions when there is none.
  KILN_API Function Lookup(const std::string& name) const;
  /// The GlobalVar named `name`; KeyError as for Lookup.
  KILN_API GlobalVar GetGlobalVar(const std::string& name) const;
  KILN_API bool Contains(const std::string& name) const;

 private:
  IRModuleObj* CopyOnWrite();
  [[noreturn]] void ThrowUnknown(const std::string& name) const;
};

}  // namespace ir
}  // namespace kiln

#endif  // KILN_IR_MODULE_H_
