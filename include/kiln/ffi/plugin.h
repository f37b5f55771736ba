/// Plugins: the KILN_PLUGIN entry point and loading from C++.
///
/// A plugin DSO exports exactly one symbol, kiln_plugin_init. The host calls it to learn the
/// plugin's ABI version, refuses a different major version, and only then calls register_all,
/// which flushes the registrations the plugin's static initializers collected.
#ifndef KILN_FFI_PLUGIN_H_
#define KILN_FFI_PLUGIN_H_

#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>

#include <cstddef>
#include <string>

namespace kiln {
namespace detail {

/// Runs this DSO's pending registrations; the C boundary of a plugin's registration phase.
KILN_DSO_LOCAL inline int FlushPendingRegistrations() {
  try {
    std::vector<std::function<void()>>& pending = PendingRegistrations();
    for (const std::function<void()>& action : pending) action();
    pending.clear();
    return 0;
  } catch (...) {
    SetRaisedFromCurrentException();
    return -1;
  }
}

/// Fills the plugin's half of the handshake; registers nothing.
KILN_DSO_LOCAL inline int FillPluginInfo(const KilnHostApi* /*host*/, KilnPluginInfo* info,
                                         const char* name, const char* version) {
  constexpr size_t kKnownSize = offsetof(KilnPluginInfo, register_all) + sizeof(info->register_all);
  if (info == nullptr || info->struct_size < kKnownSize) {
    return kiln_error_set_raised_from_cstr(
        "RuntimeError", "the host's KilnPluginInfo is smaller than this plugin expects");
  }
  info->abi_major = KILN_ABI_VERSION_MAJOR;
  info->abi_minor = KILN_ABI_VERSION_MINOR;
  info->name = name;
  info->version = version;
  info->register_all = &FlushPendingRegistrations;
  return 0;
}

}  // namespace detail

/// What is known of a plugin: keys "path", "name", "version", "abi_major", "abi_minor",
/// "status" ("loaded" or "failed"), "reason" (why it failed, else empty), "functions" (the
/// global names it registered).
using PluginInfo = Map<String, Any>;

/// Loads a plugin DSO; a second load of the same file is a no-op returning the first result.
/// Throws the plugin's error (ABI mismatch, failing registration, missing entry point).
inline PluginInfo LoadPlugin(const std::string& path) {
  KilnObjectHandle handle = nullptr;
  if (kiln_plugin_load(path.c_str(), &handle) != 0) detail::ThrowRaised();
  return PluginInfo::FromUnchecked(
      ObjectPtr<Object>::FromOwned(detail::ObjectUnsafe::FromHeader(handle)));
}

/// Loads the plugin named `name` ("dnnl" or "libkiln_dnnl.so"), looked for in each entry of
/// KILN_PLUGIN_PATH, then in `<libdir>/kiln/plugins`. FileNotFoundError listing the folders
/// searched when it is nowhere; otherwise as LoadPlugin.
inline PluginInfo LoadPluginByName(const std::string& name) {
  return Function::GetGlobalRequired("ffi.LoadPluginByName")(String(name)).cast<PluginInfo>();
}

/// Loads every plugin found in `<libdir>/kiln/plugins` and on KILN_PLUGIN_PATH, scanning again
/// each time it is called. Failures are recorded in the result (status "failed"), never thrown.
inline Array<PluginInfo> DiscoverPlugins() {
  return Function::GetGlobalRequired("ffi.DiscoverPlugins")().cast<Array<PluginInfo>>();
}

/// Runs DiscoverPlugins once per process, unless a discovery has run already; thread-safe (a
/// second thread waits for the scan in progress). Nothing discovers plugins when a library
/// loads: the compiler's entry points (kiln::Build, the ONNX import, pass names, Op::Get of an
/// unknown op, external codegen lookup) call this first, so a process that only runs compiled
/// models never maps a compiler plugin, nor through it libkiln.so.
inline void EnsurePluginsDiscovered() {
  Function::GetGlobalRequired("ffi.EnsurePluginsDiscovered")();
}

/// Every plugin load attempted in this process, in order.
inline Array<PluginInfo> ListPlugins() {
  return Function::GetGlobalRequired("ffi.ListPlugins")().cast<Array<PluginInfo>>();
}

}  // namespace kiln

/// Defines a plugin's one exported entry point. kiln_add_plugin() generates it for you.
#define KILN_PLUGIN(Name, Version)                                                                 \
  extern "C" KILN_API_EXPORT int kiln_plugin_init(const KilnHostApi* host, KilnPluginInfo* info) { \
    return ::kiln::detail::FillPluginInfo(host, info, Name, Version);                              \
  }

#endif  // KILN_FFI_PLUGIN_H_
