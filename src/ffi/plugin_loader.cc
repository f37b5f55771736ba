// Loading plugin DSOs: dlopen with RTLD_LOCAL, the ABI handshake, registration with rollback,
// and discovery of compiler plugins in <libdir>/kiln/plugins and KILN_PLUGIN_PATH.
#include <dlfcn.h>

#include <kiln/ffi/plugin.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "c_api_guard_internal.h"
#include "registry_internal.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

/// Everything attempted so far; a file already loaded is not loaded again.
class PluginTable {
 public:
  static PluginTable& Global() {
    static PluginTable* table = new PluginTable();
    return *table;
  }

  PluginInfo Load(const std::string& requested_path) {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    std::error_code error;
    const fs::path path = fs::canonical(requested_path, error);
    KILN_CHECK(!error, ValueError)
        << "cannot load plugin '" << requested_path << "': " << error.message();
    auto it = by_path_.find(path.string());
    if (it != by_path_.end() && records_[it->second].at("status").cast<String>() == "loaded") {
      return records_[it->second];
    }
    try {
      PluginInfo info = LoadNew(path.string());
      Remember(path.string(), info);
      return info;
    } catch (const Error& failure) {
      PluginInfo info{{"path", String(path.string())},
                      {"status", String("failed")},
                      {"reason", String(failure.message())}};
      Remember(path.string(), info);
      throw;
    }
  }

  Array<PluginInfo> List() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    return Array<PluginInfo>(records_.begin(), records_.end());
  }

 private:
  void Remember(const std::string& path, const PluginInfo& info) {
    auto it = by_path_.find(path);
    if (it != by_path_.end()) {
      records_[it->second] = info;
    } else {
      by_path_.emplace(path, records_.size());
      records_.push_back(info);
    }
  }

  static PluginInfo LoadNew(const std::string& path) {
    // RTLD_LOCAL: two plugins may define the same internal symbols without clashing.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    KILN_CHECK(handle != nullptr, RuntimeError)
        << "cannot load plugin '" << path << "': " << dlerror();
    auto init = reinterpret_cast<KilnPluginInitFn>(dlsym(handle, KILN_PLUGIN_ENTRY_SYMBOL));
    KILN_CHECK(init != nullptr, RuntimeError)
        << "'" << path << "' is not a Kiln plugin: it does not export " KILN_PLUGIN_ENTRY_SYMBOL;

    KilnHostApi host{sizeof(KilnHostApi), KILN_ABI_VERSION_MAJOR, KILN_ABI_VERSION_MINOR,
                     path.c_str()};
    KilnPluginInfo plugin{};
    plugin.struct_size = sizeof(KilnPluginInfo);
    if (init(&host, &plugin) != 0) {
      throw detail::TakeRaised().WithContext("while initializing plugin '" + path + "'");
    }
    CheckAbi(path, plugin);

    detail::RegistrationScope scope(path);
    if (plugin.register_all() != 0) {
      Error cause = detail::TakeRaised();
      scope.RollBack();
      throw cause.WithContext("while registering plugin '" + path +
                              "' (its registrations were rolled back)");
    }
    std::vector<std::string> names = scope.RegisteredNames();
    return PluginInfo{{"path", String(path)},
                      {"name", String(plugin.name ? plugin.name : "")},
                      {"version", String(plugin.version ? plugin.version : "")},
                      {"abi_major", plugin.abi_major},
                      {"abi_minor", plugin.abi_minor},
                      {"status", String("loaded")},
                      {"reason", String("")},
                      {"functions", Array<String>(names.begin(), names.end())}};
  }

  static void CheckAbi(const std::string& path, const KilnPluginInfo& plugin) {
    KILN_CHECK(plugin.abi_major == KILN_ABI_VERSION_MAJOR, RuntimeError)
        << "plugin '" << path << "' was built for Kiln ABI " << plugin.abi_major << "."
        << plugin.abi_minor << ", but this Kiln has ABI " << KILN_ABI_VERSION_MAJOR << "."
        << KILN_ABI_VERSION_MINOR << "; rebuild the plugin against this Kiln";
    KILN_CHECK(plugin.abi_minor <= KILN_ABI_VERSION_MINOR, RuntimeError)
        << "plugin '" << path << "' needs Kiln ABI " << plugin.abi_major << "." << plugin.abi_minor
        << ", but this Kiln only has ABI " << KILN_ABI_VERSION_MAJOR << "."
        << KILN_ABI_VERSION_MINOR << "; upgrade Kiln";
  }

  std::recursive_mutex mutex_;
  std::vector<PluginInfo> records_;
  std::unordered_map<std::string, size_t> by_path_;
};

/// The folder holding libkiln_ffi.so: the prefix's lib folder once installed.
fs::path LibraryDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&kiln_abi_version), &info) == 0) return {};
  return fs::path(info.dli_fname).parent_path();
}

bool IsCompilerPluginFile(const fs::path& file) {
  const std::string name = file.filename().string();
  return name.rfind("libkiln_", 0) == 0 && name.rfind("libkiln_runtime", 0) != 0 &&
         file.extension() == ".so";
}

/// The non-empty entries of KILN_PLUGIN_PATH, in order.
std::vector<fs::path> PluginPathEntries() {
  std::vector<fs::path> entries;
  if (const char* env = std::getenv("KILN_PLUGIN_PATH")) {
    std::stringstream items(env);
    for (std::string item; std::getline(items, item, ':');) {
      if (!item.empty()) entries.emplace_back(item);
    }
  }
  return entries;
}

/// Plugin files in discovery order: <libdir>/kiln/plugins first, then KILN_PLUGIN_PATH.
std::vector<fs::path> FindPluginFiles() {
  std::vector<fs::path> places = {LibraryDirectory() / "kiln" / "plugins"};
  for (fs::path& entry : PluginPathEntries()) places.push_back(std::move(entry));
  std::vector<fs::path> files;
  for (const fs::path& place : places) {
    std::error_code error;
    if (fs::is_regular_file(place, error)) {
      files.push_back(place);
      continue;
    }
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(place, error)) {
      if (entry.is_regular_file() && IsCompilerPluginFile(entry.path())) {
        found.push_back(entry.path());
      }
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

/// Where a plugin given by name is looked for, in order: each entry of KILN_PLUGIN_PATH, then
/// <libdir>/kiln/plugins (an explicit setting wins over what is installed).
std::vector<fs::path> NamedPluginDirectories() {
  std::vector<fs::path> dirs = PluginPathEntries();
  dirs.push_back(LibraryDirectory() / "kiln" / "plugins");
  return dirs;
}

std::string FindPluginFileByName(const std::string& name) {
  KILN_CHECK(!name.empty() && name.find('/') == std::string::npos, ValueError)
      << "a plugin name is a bare name like 'dnnl' or a file name, not '" << name << "'";
  const bool is_file_name = name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0;
  const std::string file_name = is_file_name ? name : "libkiln_" + name + ".so";
  std::string looked;
  for (const fs::path& dir : NamedPluginDirectories()) {
    std::error_code error;
    if (fs::is_regular_file(dir / file_name, error)) return (dir / file_name).string();
    looked += "\n  " + dir.string();
  }
  KILN_THROW(FileNotFoundError) << "plugin '" << name << "': no " << file_name << " in" << looked
                                << "\n(install the Kiln " << name
                                << " plugin there, or add its folder to KILN_PLUGIN_PATH)";
}

KILN_REGISTER_GLOBAL("ffi.PluginSearchDirs").set_body_typed([]() {
  Array<String> dirs;
  for (const fs::path& dir : NamedPluginDirectories()) dirs.push_back(String(dir.string()));
  return dirs;
});

KILN_REGISTER_GLOBAL("ffi.FindPluginFile").set_body_typed([](const String& name) {
  return String(FindPluginFileByName(name.str()));
});

KILN_REGISTER_GLOBAL("ffi.LoadPluginByName").set_body_typed([](const String& name) {
  return PluginTable::Global().Load(FindPluginFileByName(name.str()));
});

KILN_REGISTER_GLOBAL("ffi.ListPlugins").set_body_typed([]() {
  return PluginTable::Global().List();
});

/// Loads every plugin FindPluginFiles finds; never throws: a broken plugin is recorded with its
/// reason and skipped.
Array<PluginInfo> LoadFoundPlugins() {
  Array<PluginInfo> found;
  for (const fs::path& file : FindPluginFiles()) {
    try {
      found.push_back(PluginTable::Global().Load(file.string()));
    } catch (const Error& error) {
      found.push_back(PluginInfo{{"path", String(file.string())},
                                 {"status", String("failed")},
                                 {"reason", String(error.message())}});
    }
  }
  return found;
}

/// Discovery runs on first need (EnsurePluginsDiscovered), not when a library loads: a compiler
/// plugin maps libkiln.so, which a process that only runs compiled models must not do.
class Discovery {
 public:
  static Discovery& Global() {
    static auto* discovery = new Discovery();
    return *discovery;
  }

  /// Scans now, whether or not a scan ran before.
  Array<PluginInfo> Run() {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    scanning_ = true;
    Array<PluginInfo> found;
    try {
      found = LoadFoundPlugins();
    } catch (...) {
      scanning_ = false;
      throw;
    }
    scanning_ = false;
    done_.store(true, std::memory_order_release);
    return found;
  }

  /// Scans unless a scan has run. Other threads wait for a scan in progress; the scanning
  /// thread itself returns at once when a plugin it loads needs a name (Op::Get on a miss). So
  /// does any thread inside a plugin's registration: it holds the plugin table's lock, which a
  /// scan would take after this one (a deadlock with a scan on another thread).
  void Ensure() {
    if (done_.load(std::memory_order_acquire) || detail::RegistrationScope::Current() != nullptr) {
      return;
    }
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    if (done_.load(std::memory_order_acquire) || scanning_) return;
    Run();
  }

 private:
  std::recursive_mutex mutex_;
  bool scanning_ = false;  ///< guarded by mutex_
  std::atomic<bool> done_{false};
};

KILN_REGISTER_GLOBAL("ffi.DiscoverPlugins").set_body_typed([]() {
  return Discovery::Global().Run();
});

KILN_REGISTER_GLOBAL("ffi.EnsurePluginsDiscovered").set_body_typed([]() {
  Discovery::Global().Ensure();
});

}  // namespace
}  // namespace kiln

extern "C" {

void kiln_abi_version(int32_t* out_major, int32_t* out_minor) {
  *out_major = KILN_ABI_VERSION_MAJOR;
  *out_minor = KILN_ABI_VERSION_MINOR;
}

int kiln_plugin_load(const char* path, KilnObjectHandle* out_info) {
  KILN_C_API_BEGIN();
  KILN_CHECK(path != nullptr && *path != '\0', ValueError) << "kiln_plugin_load needs a path";
  kiln::PluginInfo info = kiln::PluginTable::Global().Load(path);
  if (out_info != nullptr) {
    *out_info = kiln::detail::ObjectUnsafe::Header(std::move(info).ReleaseData().release());
  }
  KILN_C_API_END();
}

}  // extern "C"
