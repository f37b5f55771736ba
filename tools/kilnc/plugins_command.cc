// `kilnc plugins`: what this Kiln finds to extend itself, and why anything failed to load.
#include <kiln/ffi/plugin.h>
#include <kiln/runtime/backend.h>

#include <filesystem>
#include <iostream>

#include "command.h"

namespace kilnc {
namespace {

std::string Field(const kiln::Map<kiln::String, kiln::Any>& info, const char* key) {
  std::optional<kiln::Any> value = info.Get(kiln::String(key));
  if (!value.has_value()) return "";
  std::optional<kiln::String> text = value->as<kiln::String>();
  return text.has_value() ? text->str() : "";
}

/// `  name  status  path` then, for a failure, the reason on the next line.
void PrintEntry(const kiln::Map<kiln::String, kiln::Any>& info, const std::string& name) {
  std::cout << "  " << name << "  " << Field(info, "status") << "  " << Field(info, "path") << "\n";
  const std::string reason = Field(info, "reason");
  if (!reason.empty()) std::cout << "      reason: " << reason << "\n";
}

}  // namespace

int RunPlugins(const std::vector<std::string>& args) {
  if (!args.empty()) {
    std::cerr << "kilnc plugins: takes no arguments, got '" << args.front() << "'\n";
    return kExitUsage;
  }
  const kiln::Array<kiln::PluginInfo> plugins = kiln::DiscoverPlugins();
  std::cout << "compiler plugins (" << plugins.size() << "):\n";
  for (const kiln::PluginInfo& plugin : plugins) {
    // A plugin that failed before its handshake has no name of its own: show its file's.
    const std::string name = Field(plugin, "name");
    PrintEntry(plugin,
               name.empty() ? std::filesystem::path(Field(plugin, "path")).stem().string() : name);
  }
  const kiln::Array<kiln::runtime::BackendInfo> backends = kiln::runtime::DiscoverBackends();
  std::cout << "runtime backends (" << backends.size() << "):\n";
  for (const kiln::runtime::BackendInfo& backend : backends) {
    PrintEntry(backend, Field(backend, "name"));
  }
  return kExitOk;
}

}  // namespace kilnc
