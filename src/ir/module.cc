// IRModule: named functions with a copy-on-write name index.
#include <kiln/ir/module.h>

#include <algorithm>
#include <sstream>
#include <vector>

namespace kiln {
namespace ir {

IRModule IRModule::Create(Map<String, Any> attrs) {
  auto obj = make_object<IRModuleObj>();
  obj->attrs_ = std::move(attrs);
  return IRModule(std::move(obj));
}

IRModuleObj* IRModule::CopyOnWrite() {
  if (data_->use_count() != 1) data_ = make_object<IRModuleObj>(*get());
  return static_cast<IRModuleObj*>(data_.get());
}

void IRModule::Add(const GlobalVar& gvar, const Function& func) {
  KILN_CHECK(gvar.defined() && func.defined(), ValueError)
      << "IRModule.Add: the GlobalVar and the Function must not be null";
  const std::string name = gvar->name_hint().str();
  KILN_CHECK(!Contains(name), KeyError)
      << "IRModule.Add: the module already has a function named @" << name;
  IRModuleObj* obj = CopyOnWrite();
  obj->functions_.Set(gvar, func);
  obj->by_name_.emplace(name, gvar);
}

bool IRModule::Contains(const std::string& name) const { return get()->by_name_.count(name) > 0; }

GlobalVar IRModule::GetGlobalVar(const std::string& name) const {
  auto it = get()->by_name_.find(name);
  if (it == get()->by_name_.end()) ThrowUnknown(name);
  return it->second;
}

Function IRModule::Lookup(const std::string& name) const {
  return get()->functions_.at(GetGlobalVar(name));
}

void IRModule::ThrowUnknown(const std::string& name) const {
  std::vector<std::string> names;
  for (const auto& [known, gvar] : get()->by_name_) names.push_back("@" + known);
  std::sort(names.begin(), names.end());
  std::ostringstream list;
  for (size_t i = 0; i < names.size(); ++i) list << (i == 0 ? "" : ", ") << names[i];
  KILN_THROW(KeyError) << "the module has no function named @" << name
                       << " (it has: " << (names.empty() ? "none" : list.str()) << ")";
}

}  // namespace ir
}  // namespace kiln
