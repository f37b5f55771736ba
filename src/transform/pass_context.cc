// PassContext and the registry of typed pass config keys.
#include <kiln/ffi/close_names.h>
#include <kiln/transform/pass_context.h>

#include <map>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <utility>

namespace kiln {
namespace transform {
namespace {

struct ConfigKey {
  std::string type_str;
  Any default_value;
  std::function<bool(const Any&)> accepts;
};

struct ConfigRegistry {
  std::shared_mutex mutex;
  std::map<std::string, ConfigKey> keys;
};

ConfigRegistry& Registry() {
  // Leaked on purpose: plugins may register keys during static destruction of other DSOs.
  static auto* registry = new ConfigRegistry();
  return *registry;
}

ConfigKey LookupKey(const std::string& key) {
  ConfigRegistry& registry = Registry();
  std::shared_lock<std::shared_mutex> lock(registry.mutex);
  auto it = registry.keys.find(key);
  if (it != registry.keys.end()) return it->second;
  std::vector<std::string> names;
  for (const auto& [name, entry] : registry.keys) names.push_back(name);
  lock.unlock();
  std::ostringstream message;
  message << "unknown pass config key '" << key << "'";
  std::vector<std::string> close = CloseNames(key, names);
  if (!close.empty()) {
    message << "; did you mean ";
    for (size_t i = 0; i < close.size(); ++i) message << (i == 0 ? "'" : ", '") << close[i] << "'";
    message << "?";
  }
  KILN_THROW(KeyError) << message.str();
}

/// Whether `listed` (as a user writes it: "FuseOps", "transform.FuseOps", or with arguments
/// "AnnotateTarget(dnnl)") names the pass `pass_name`. A name without arguments matches the
/// pass whatever its arguments, so "AnnotateTarget" disables "transform.AnnotateTarget(dnnl)".
bool MatchesName(const String& listed, const std::string& pass_name) {
  static const std::string kPrefix = "transform.";
  const std::string name = listed.str();
  if (name == pass_name || kPrefix + name == pass_name) return true;
  const size_t open = pass_name.find('(');
  if (open == std::string::npos || name.find('(') != std::string::npos) return false;
  const std::string bare = pass_name.substr(0, open);
  return name == bare || kPrefix + name == bare;
}

bool Contains(const Array<String>& names, const std::string& pass_name) {
  for (const String& name : names) {
    if (MatchesName(name, pass_name)) return true;
  }
  return false;
}

}  // namespace

namespace detail {
void RegisterPassConfig(const std::string& key, const std::string& type_str, Any default_value,
                        std::function<bool(const Any&)> accepts) {
  ConfigRegistry& registry = Registry();
  std::unique_lock<std::shared_mutex> lock(registry.mutex);
  KILN_CHECK(registry.keys.count(key) == 0, KeyError)
      << "pass config key '" << key << "' is already registered";
  registry.keys.emplace(key, ConfigKey{type_str, std::move(default_value), std::move(accepts)});
}
}  // namespace detail

PassContext PassContext::Create() { return PassContext(make_object<PassContextObj>()); }

PassContext PassContext::FromMap(const Map<String, Any>& settings) {
  PassContext ctx = Create();
  for (const auto& [key, value] : settings) {
    if (key == "opt_level") {
      ctx.SetOptLevel(value.cast<int64_t>());
    } else if (key == "required_passes") {
      for (const String& name : value.cast<Array<String>>()) ctx.Require(name);
    } else if (key == "disabled_passes") {
      for (const String& name : value.cast<Array<String>>()) ctx.Disable(name);
    } else if (key == "dump_on_error_dir") {
      ctx.SetDumpOnErrorDir(value.cast<String>().str());
    } else if (key == "instruments") {
      for (const PassInstrument& instrument : value.cast<Array<PassInstrument>>()) {
        ctx.AddInstrument(instrument);
      }
    } else {
      ctx.SetConfig(key, value);
    }
  }
  return ctx;
}

PassContext& PassContext::SetConfig(const String& key, const Any& value) {
  const ConfigKey entry = LookupKey(key.str());
  KILN_CHECK(entry.accepts(value), TypeError)
      << "pass config key '" << key.str() << "' expects a value of type " << entry.type_str
      << ", got " << value.type_str();
  CopyOnWrite()->config.Set(key, value);
  return *this;
}

Any PassContext::GetConfigAny(const String& key) const {
  const ConfigKey entry = LookupKey(key.str());
  std::optional<Any> value = get()->config.Get(key);
  return value.has_value() ? *value : entry.default_value;
}

bool PassContext::PassEnabled(const PassInfo& info) const {
  if (info.required || Contains(get()->required_passes, info.name)) return true;
  if (Contains(get()->disabled_passes, info.name)) return false;
  return info.opt_level <= get()->opt_level;
}

std::vector<std::string> PassContext::ListConfigKeys() {
  ConfigRegistry& registry = Registry();
  std::shared_lock<std::shared_mutex> lock(registry.mutex);
  std::vector<std::string> names;
  for (const auto& [name, entry] : registry.keys) names.push_back(name);
  return names;
}

}  // namespace transform
}  // namespace kiln
