// The global function registry: name -> Function, with the owner of each name.
#include <dlfcn.h>

#include <kiln/ffi/array.h>
#include <kiln/ffi/close_names.h>
#include <kiln/ffi/function.h>
#include <kiln/ffi/registry.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <sstream>

#include "c_api_guard_internal.h"
#include "registry_internal.h"

namespace kiln {
namespace detail {
namespace {

class GlobalRegistry {
 public:
  static GlobalRegistry& Global() {
    static GlobalRegistry* registry = new GlobalRegistry();  // outlives static destructors
    return *registry;
  }

  /// Returns the entry that was replaced, if any.
  std::optional<RegistryEntry> Set(const std::string& name, ObjectPtr<Object> func,
                                   bool allow_override, const std::string& owner) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      entries_.emplace(name, RegistryEntry{std::move(func), owner});
      return std::nullopt;
    }
    KILN_CHECK(allow_override, KeyError)
        << "global function '" << name << "' is already registered by " << it->second.owner << "; "
        << owner << " tried to register it again (pass the override flag to replace it)";
    RegistryEntry previous = std::move(it->second);
    it->second = RegistryEntry{std::move(func), owner};
    return previous;
  }

  std::optional<RegistryEntry> Get(const std::string& name) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }

  /// Removes `name`, or restores `previous` in its place.
  bool Reset(const std::string& name, std::optional<RegistryEntry> previous) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return false;
    if (previous.has_value()) {
      it->second = *std::move(previous);
    } else {
      entries_.erase(it);
    }
    return true;
  }

  /// True when some registered name starts with `prefix` (a std::map keeps this O(log n)).
  bool HasPrefix(const std::string& prefix) const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = entries_.lower_bound(prefix);
    return it != entries_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
  }

  std::vector<std::string> Names() const {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    std::vector<std::string> names;
    names.reserve(entries_.size());
    for (const auto& [name, entry] : entries_) names.push_back(name);
    return names;  // std::map keeps them sorted
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, RegistryEntry> entries_;
};

/// The file of the DSO that contains `address`, e.g. the caller of kiln_func_set_global.
std::string DsoContaining(const void* address) {
  Dl_info info;
  if (dladdr(address, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return "<unknown library>";
}

thread_local RegistrationScope* current_scope = nullptr;

// Lets bindings tell a namespace ("testing" below "testing.add") from a typo without listing
// the whole registry on every attribute access.
KILN_REGISTER_GLOBAL("ffi.HasGlobalPrefix").set_body_typed([](const std::string& prefix) {
  return GlobalRegistry::Global().HasPrefix(prefix);
});

}  // namespace

RegistrationScope::RegistrationScope(std::string owner)
    : owner_(std::move(owner)), outer_(current_scope) {
  current_scope = this;
}
RegistrationScope::~RegistrationScope() { current_scope = outer_; }
RegistrationScope* RegistrationScope::Current() { return current_scope; }

std::vector<std::string> RegistrationScope::RegisteredNames() const {
  std::vector<std::string> names;
  for (const Change& change : changes_) names.push_back(change.name);
  return names;
}

void RegistrationScope::Record(const std::string& name, std::optional<RegistryEntry> previous) {
  changes_.push_back({name, std::move(previous)});
}

void RegistrationScope::RollBack() {
  for (auto it = changes_.rbegin(); it != changes_.rend(); ++it) {
    GlobalRegistry::Global().Reset(it->name, std::move(it->previous));
  }
  changes_.clear();
  for (auto it = undo_actions_.rbegin(); it != undo_actions_.rend(); ++it) (*it)();
  undo_actions_.clear();
}

void OnRegistrationRollback(std::function<void()> undo) {
  if (RegistrationScope* scope = RegistrationScope::Current()) scope->RecordUndo(std::move(undo));
}

}  // namespace detail
}  // namespace kiln

extern "C" {

int kiln_func_set_global(const char* name, KilnObjectHandle func, int32_t flags,
                         const char* owner) {
  const void* caller = __builtin_return_address(0);
  KILN_C_API_BEGIN();
  using kiln::detail::RegistrationScope;
  KILN_CHECK(name != nullptr && *name != '\0', ValueError) << "a global function needs a name";
  KILN_CHECK(func != nullptr && func->type_index == kKilnTypeFunction, TypeError)
      << "global '" << name << "' must be registered with a Function object";
  RegistrationScope* scope = RegistrationScope::Current();
  std::string owner_name = owner != nullptr   ? owner
                           : scope != nullptr ? scope->owner()
                                              : kiln::detail::DsoContaining(caller);
  auto previous = kiln::detail::GlobalRegistry::Global().Set(
      name,
      kiln::ObjectPtr<kiln::Object>::FromBorrowed(kiln::detail::ObjectUnsafe::FromHeader(func)),
      (flags & KILN_FUNC_OVERRIDE) != 0, owner_name);
  if (scope != nullptr) scope->Record(name, std::move(previous));
  KILN_C_API_END();
}

int kiln_func_get_global(const char* name, KilnObjectHandle* out_func) {
  KILN_C_API_BEGIN();
  auto entry = kiln::detail::GlobalRegistry::Global().Get(name);
  *out_func = entry.has_value()
                  ? kiln::detail::ObjectUnsafe::Header(std::move(entry->func).release())
                  : nullptr;
  KILN_C_API_END();
}

int kiln_func_get_global_required(const char* name, KilnObjectHandle* out_func) {
  KILN_C_API_BEGIN();
  auto entry = kiln::detail::GlobalRegistry::Global().Get(name);
  if (!entry.has_value()) {
    std::ostringstream message;
    message << "no global function is registered as '" << name << "'";
    std::vector<std::string> close =
        kiln::CloseNames(name, kiln::detail::GlobalRegistry::Global().Names());
    if (!close.empty()) {
      message << "; did you mean ";
      for (size_t i = 0; i < close.size(); ++i) message << (i ? ", '" : "'") << close[i] << "'";
      message << "?";
    } else {
      message << " (is the plugin that provides it loaded?)";
    }
    throw kiln::Error("KeyError", message.str());
  }
  *out_func = kiln::detail::ObjectUnsafe::Header(std::move(entry->func).release());
  KILN_C_API_END();
}

int kiln_func_get_global_owner(const char* name, const char** out_owner) {
  KILN_C_API_BEGIN();
  // Owners are interned so the borrowed pointer stays valid after the entry changes.
  static std::mutex mutex;
  static std::map<std::string, std::string>* interned = new std::map<std::string, std::string>();
  auto entry = kiln::detail::GlobalRegistry::Global().Get(name);
  if (!entry.has_value()) {
    *out_owner = nullptr;
  } else {
    std::lock_guard<std::mutex> lock(mutex);
    *out_owner = interned->try_emplace(entry->owner, entry->owner).first->second.c_str();
  }
  KILN_C_API_END();
}

int kiln_func_remove_global(const char* name) {
  KILN_C_API_BEGIN();
  KILN_CHECK(kiln::detail::GlobalRegistry::Global().Reset(name, std::nullopt), KeyError)
      << "cannot remove global function '" << name << "': it is not registered";
  KILN_C_API_END();
}

int kiln_func_list_global(KilnObjectHandle* out_array) {
  KILN_C_API_BEGIN();
  std::vector<std::string> names = kiln::detail::GlobalRegistry::Global().Names();
  kiln::Array<kiln::String> array(names.begin(), names.end());
  *out_array = kiln::detail::ObjectUnsafe::Header(std::move(array).ReleaseData().release());
  KILN_C_API_END();
}

}  // extern "C"
