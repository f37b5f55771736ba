/// PassContext: the settings a pipeline runs under (opt level, required and disabled passes,
/// typed config keys, instruments, dump-on-error folder), and the registry of config keys.
///
/// Config keys are registered by name with a type and a default, so a typo or a value of the
/// wrong type fails when the context is built, not deep inside a pass:
///
///   KILN_REGISTER_PASS_CONFIG("transform.fold_constant.max_size", int64_t, 1 << 20);
///   ctx.SetConfig("transform.fold_constant.max_size", int64_t{4096});
///   int64_t limit = ctx.GetConfig<int64_t>("transform.fold_constant.max_size");
#ifndef KILN_TRANSFORM_PASS_CONTEXT_H_
#define KILN_TRANSFORM_PASS_CONTEXT_H_

#include <kiln/ffi/registry.h>
#include <kiln/transform/instrument.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln {
namespace transform {

class PassContextObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.transform.PassContext";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(PassContextObj, Object);

  /// Passes with a higher PassInfo::opt_level are skipped (unless required).
  int64_t opt_level = 2;
  /// Names of passes to run whatever their opt_level or the disabled list say.
  Array<String> required_passes;
  /// Names of passes to skip (unless required). A name matches with or without "transform.".
  Array<String> disabled_passes;
  /// Values of registered config keys; a key absent here reads as its registered default.
  Map<String, Any> config;
  /// Called around every pass that runs, in this order.
  Array<PassInstrument> instruments;
  /// When not empty, a pass that fails writes its input IR and the pipeline here.
  std::string dump_on_error_dir;
};

/// A handle to a context; copy-on-write, so a copy can be changed without touching the original.
/// Not thread-safe while being changed.
class PassContext : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(PassContext, ObjectRef, PassContextObj);
  KILN_DEFINE_OBJECT_REF_COW_METHOD(PassContextObj);

  /// Opt level 2, nothing required or disabled, no config, no instruments.
  KILN_API static PassContext Create();
  /// A context from a map of settings, as given to `transform.RunPipeline`: the reserved keys
  /// "opt_level" (int), "required_passes" and "disabled_passes" (list of str),
  /// "dump_on_error_dir" (str) and "instruments" (list of PassInstrument) set those fields;
  /// every other key goes through SetConfig.
  KILN_API static PassContext FromMap(const Map<String, Any>& settings);

  PassContext& SetOptLevel(int64_t opt_level) {
    CopyOnWrite()->opt_level = opt_level;
    return *this;
  }
  PassContext& Require(const String& pass_name) {
    CopyOnWrite()->required_passes.push_back(pass_name);
    return *this;
  }
  PassContext& Disable(const String& pass_name) {
    CopyOnWrite()->disabled_passes.push_back(pass_name);
    return *this;
  }
  PassContext& AddInstrument(const PassInstrument& instrument) {
    CopyOnWrite()->instruments.push_back(instrument);
    return *this;
  }
  PassContext& SetDumpOnErrorDir(std::string dir) {
    CopyOnWrite()->dump_on_error_dir = std::move(dir);
    return *this;
  }
  /// Sets a registered config key. KeyError naming close registered keys when `key` is unknown;
  /// TypeError naming the expected type when `value` is not of the key's type.
  KILN_API PassContext& SetConfig(const String& key, const Any& value);

  /// The value of config key `key` (its registered default when unset), as a T. KeyError for an
  /// unknown key.
  template <typename T>
  T GetConfig(const String& key) const {
    return GetConfigAny(key).cast<T>();
  }
  KILN_API Any GetConfigAny(const String& key) const;

  /// Whether a pass with `info` runs in this context: required (by itself or by this context),
  /// or not disabled and with opt_level at most this context's.
  KILN_API bool PassEnabled(const PassInfo& info) const;

  /// Names of every registered config key, sorted.
  KILN_API static std::vector<std::string> ListConfigKeys();
};

namespace detail {
/// Registers config key `key` of type `type_str` with a default; `accepts` says whether a value
/// has the key's type. KeyError when the key is already registered.
KILN_API void RegisterPassConfig(const std::string& key, const std::string& type_str,
                                 Any default_value, std::function<bool(const Any&)> accepts);

/// Behind KILN_REGISTER_PASS_CONFIG; runs after the ABI check in a plugin.
template <typename T>
struct PassConfigRegisterer {
  PassConfigRegisterer(const char* key, T default_value) {
    ::kiln::detail::RegisterOrDefer([key = std::string(key), default_value] {
      RegisterPassConfig(key, TypeTraits<T>::TypeStr(), Any(default_value),
                         [](const Any& value) { return value.as<T>().has_value(); });
    });
  }
};
}  // namespace detail

}  // namespace transform
}  // namespace kiln

/// Registers a typed pass config key at load time:
///   KILN_REGISTER_PASS_CONFIG("transform.fold_constant.max_size", int64_t, 1 << 20);
#define KILN_REGISTER_PASS_CONFIG(Key, ValueType, Default)                                 \
  [[maybe_unused]] static const ::kiln::transform::detail::PassConfigRegisterer<ValueType> \
  KILN_UNIQUE_NAME(kiln_pass_config_registerer_)(Key, ValueType(Default))

#endif  // KILN_TRANSFORM_PASS_CONTEXT_H_
