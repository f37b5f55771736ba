// Discovery of runtime backends (libkiln_runtime_<name>.so): first the folder of
// libkiln_runtime.so, then each entry of KILN_RUNTIME_PATH. A backend found twice is loaded from
// the first place only. Loading uses the plugin loader (RTLD_LOCAL, ABI check, rollback).
// The prefix is reserved for backends and the runtime sides of compiler plugins: Kiln's own
// libraries never take it (the JSON graph runtime they link is libkiln_json_runtime.so), so
// every file that matches is meant as a plugin, and one that does not load is a failure.
#include <dlfcn.h>

#include <kiln/ffi/plugin.h>
#include <kiln/runtime/backend.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <vector>

namespace kiln {
namespace runtime {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBackendPrefix = "libkiln_runtime_";

fs::path RuntimeLibraryDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&DiscoverBackends), &info) == 0) return {};
  return fs::path(info.dli_fname).parent_path();
}

/// The folders to scan, in order, each once (KILN_RUNTIME_PATH may repeat the library's).
std::vector<fs::path> SearchDirectories() {
  std::vector<fs::path> dirs = {RuntimeLibraryDirectory()};
  if (const char* env = std::getenv("KILN_RUNTIME_PATH")) {
    std::stringstream entries(env);
    for (std::string entry; std::getline(entries, entry, ':');) {
      if (!entry.empty()) dirs.emplace_back(entry);
    }
  }
  std::vector<fs::path> unique;
  for (const fs::path& dir : dirs) {
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(dir, error);
    if (std::find(unique.begin(), unique.end(), canonical) == unique.end()) {
      unique.push_back(canonical);
    }
  }
  return unique;
}

/// "libkiln_runtime_opencl.so" -> "opencl"; empty for other files.
std::string BackendName(const fs::path& file) {
  const std::string name = file.filename().string();
  if (name.rfind(kBackendPrefix, 0) != 0 || file.extension() != ".so") return "";
  return name.substr(std::string(kBackendPrefix).size(),
                     name.size() - std::string(kBackendPrefix).size() - 3);
}

BackendInfo Describe(const std::string& name, const fs::path& path, const std::string& status,
                     const std::string& reason, const std::string& version = "") {
  return BackendInfo{{"name", String(name)},
                     {"path", String(path.string())},
                     {"version", String(version)},
                     {"status", String(status)},
                     {"reason", String(reason)}};
}

BackendInfo Load(const std::string& name, const fs::path& path) {
  try {
    PluginInfo plugin = LoadPlugin(path.string());
    return Describe(name, path, "loaded", "", plugin.at("version").cast<String>().str());
  } catch (const Error& error) {
    return Describe(name, path, "failed", error.message());
  }
}

class BackendTable {
 public:
  static BackendTable& Global() {
    static BackendTable* table = new BackendTable();
    return *table;
  }

  Array<BackendInfo> Discover() {
    std::call_once(discovered_, [this] { Scan(); });
    std::lock_guard<std::mutex> lock(mutex_);
    return backends_;
  }

 private:
  void Scan() {
    Array<BackendInfo> found;
    found.push_back(
        Describe("cpu", RuntimeLibraryDirectory() / "libkiln_runtime.so", "builtin", ""));
    std::vector<std::string> seen;
    for (const fs::path& dir : SearchDirectories()) {
      std::error_code error;
      std::vector<fs::path> files;
      for (const auto& entry : fs::directory_iterator(dir, error)) {
        if (!BackendName(entry.path()).empty()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      for (const fs::path& file : files) {
        const std::string name = BackendName(file);
        auto first = std::find(seen.begin(), seen.end(), name);
        if (first != seen.end()) {
          found.push_back(
              Describe(name, file, "shadowed", "a backend of the same name was found first"));
          continue;
        }
        seen.push_back(name);
        found.push_back(Load(name, file));
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    backends_ = found;
  }

  std::once_flag discovered_;
  std::mutex mutex_;
  Array<BackendInfo> backends_;
};

KILN_REGISTER_GLOBAL("runtime.DiscoverBackends").set_body_typed([]() {
  return DiscoverBackends();
});

}  // namespace

Array<BackendInfo> DiscoverBackends() { return BackendTable::Global().Discover(); }

std::optional<std::string> LoadRuntimeLibrary(const std::string& file_name) {
  // The name comes from an artifact: only a Kiln library's plain file name is looked for, never
  // a path that could lead out of the search folders.
  if (file_name.rfind("libkiln_", 0) != 0 || file_name.find('/') != std::string::npos) {
    return file_name + " is not the file name of a Kiln runtime library (libkiln_<name>.so)";
  }
  for (const fs::path& dir : SearchDirectories()) {
    const fs::path path = dir / file_name;
    std::error_code error;
    if (!fs::is_regular_file(path, error)) continue;
    try {
      if (file_name.rfind(kBackendPrefix, 0) == 0) {
        LoadPlugin(path.string());
      } else {
        // Never unloaded: the loaders and kernels it registers live as long as the process.
        KILN_CHECK(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) != nullptr, RuntimeError)
            << dlerror();
      }
      return std::nullopt;
    } catch (const Error& failure) {
      return file_name + " was found at " + path.string() +
             " but failed to load: " + failure.message();
    }
  }
  std::string places;
  for (const fs::path& dir : SearchDirectories()) {
    places += (places.empty() ? "" : ", ") + dir.string();
  }
  return file_name + " was not found (searched " + places +
         "); install it next to libkiln_runtime.so or add its folder to KILN_RUNTIME_PATH";
}

}  // namespace runtime
}  // namespace kiln
