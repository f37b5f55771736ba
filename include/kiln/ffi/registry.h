/// KILN_REGISTER_GLOBAL: static registration of global functions.
///
/// In Kiln's own libraries a registration takes effect while the library initializes. In a
/// plugin (compiled with KILN_PLUGIN_BUILD, which kiln_add_plugin sets) it is only collected in
/// a list private to the plugin's DSO; the host flushes that list after it has checked the
/// plugin's ABI version, so a plugin built for another ABI never touches the registry.
#ifndef KILN_FFI_REGISTRY_H_
#define KILN_FFI_REGISTRY_H_

#include <kiln/ffi/function.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace detail {

/// Registrations waiting for the plugin's ABI check; one list per DSO.
KILN_DSO_LOCAL inline std::vector<std::function<void()>>& PendingRegistrations() {
  static std::vector<std::function<void()>> pending;
  return pending;
}

/// Runs `action` now, or, inside a plugin, once the host has accepted the plugin.
#ifdef KILN_PLUGIN_BUILD
inline void RegisterOrDefer(std::function<void()> action) {
  PendingRegistrations().push_back(std::move(action));
}
#else
inline void RegisterOrDefer(const std::function<void()>& action) { action(); }
#endif

/// For registries of Kiln's own libraries besides the global one (the op registry): while a
/// plugin registers, records `undo`, which runs (latest first) if the plugin's registration
/// fails part way, so a plugin that failed leaves nothing behind. Outside a plugin's
/// registration it does nothing.
KILN_API void OnRegistrationRollback(std::function<void()> undo);

}  // namespace detail

/// Builder behind KILN_REGISTER_GLOBAL("name").set_body_typed(f).
class GlobalFunctionRegisterer {
 public:
  explicit GlobalFunctionRegisterer(const char* name) : name_(name) {}

  /// Replace an existing registration instead of failing on it.
  GlobalFunctionRegisterer& set_override() {
    allow_override_ = true;
    return *this;
  }
  GlobalFunctionRegisterer& set_body(Function func) {
    detail::RegisterOrDefer(
        [name = name_, func = std::move(func), allow_override = allow_override_] {
          Function::SetGlobal(name.c_str(), func, allow_override);
        });
    return *this;
  }
  /// A typed body: arguments are converted and checked, errors name this function.
  template <typename Callable>
  GlobalFunctionRegisterer& set_body_typed(Callable callable) {
    return set_body(Function::FromTyped(std::move(callable), name_));
  }
  /// A packed body: `void(const AnyView* args, int32_t num_args, Any* result)`.
  template <typename Callable>
  GlobalFunctionRegisterer& set_body_packed(Callable callable) {
    return set_body(Function::FromPacked(std::move(callable)));
  }

 private:
  std::string name_;
  bool allow_override_ = false;
};

}  // namespace kiln

/// Runs `fn()` once the library or plugin is accepted: at load time for Kiln's own libraries,
/// after the ABI check for a plugin. A throw fails the plugin's load (and rolls it back).
#define KILN_REGISTER_INITIALIZER(fn)                                      \
  [[maybe_unused]] static const bool KILN_UNIQUE_NAME(kiln_initializer_) = \
      (::kiln::detail::RegisterOrDefer(fn), true)

/// Registers a global function at load time:
///   KILN_REGISTER_GLOBAL("my.add").set_body_typed([](int64_t a, int64_t b) { return a + b; });
#define KILN_REGISTER_GLOBAL(Name)                                                 \
  [[maybe_unused]] static const ::kiln::GlobalFunctionRegisterer KILN_UNIQUE_NAME( \
      kiln_global_registerer_) = ::kiln::GlobalFunctionRegisterer(Name)

#endif  // KILN_FFI_REGISTRY_H_
