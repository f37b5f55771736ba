// Running loop-level passes by name (kiln/tir/passes.h).
#include <kiln/ffi/plugin.h>
#include <kiln/ffi/registry.h>
#include <kiln/tir/passes.h>

#include <optional>
#include <string>

namespace kiln {
namespace tir {
namespace {

/// The pass `name`, looking in the plugins not loaded yet when it is not registered.
Function FindPass(const std::string& name) {
  const std::string global = kPassPrefix + name;
  std::optional<Function> pass = Function::GetGlobal(global.c_str());
  if (!pass.has_value()) {
    EnsurePluginsDiscovered();
    pass = Function::GetGlobal(global.c_str());
  }
  if (pass.has_value()) return *pass;
  std::string known;
  for (const std::string& registered : Function::ListGlobalNames()) {
    if (registered.rfind(kPassPrefix, 0) == 0) {
      known += (known.empty() ? "" : ", ") + registered.substr(std::string(kPassPrefix).size());
    }
  }
  KILN_THROW(KeyError) << "tir: no loop-level pass '" << name << "' (passes: " << known << ")";
}

}  // namespace

Node RunPasses(const Node& func, const std::string& names, const transform::PassContext& context) {
  Node result = func;
  size_t start = 0;
  while (start <= names.size()) {
    size_t comma = names.find(',', start);
    if (comma == std::string::npos) comma = names.size();
    const std::string name = names.substr(start, comma - start);
    start = comma + 1;
    if (name.empty()) continue;
    const Function pass = FindPass(name);
    const transform::PassInfo info{kPassPrefix + name};
    if (!context.PassEnabled(info)) continue;
    try {
      for (const auto& instrument : context->instruments)
        instrument->RunBeforeLoopPass(result, info);
      result = pass(result).cast<Node>();
      for (const auto& instrument : context->instruments)
        instrument->RunAfterLoopPass(result, info);
    } catch (const Error& error) {
      throw error.WithContext("in the loop-level pass '" + name + "'");
    }
  }
  return result;
}

KILN_REGISTER_GLOBAL("tir.RunPasses").set_body_typed([](const Node& func, const String& names) {
  return RunPasses(func, names.str());
});

/// `settings` is a PassContext or the settings map transform.RunPipeline takes.
KILN_REGISTER_GLOBAL("tir.RunPassesUnder")
    .set_body_typed([](const Node& func, const String& names, const Any& settings) {
      transform::PassContext context = transform::PassContext::Create();
      if (auto given = settings.as<transform::PassContext>()) context = *given;
      if (auto map = settings.as<Map<String, Any>>())
        context = transform::PassContext::FromMap(*map);
      return RunPasses(func, names.str(), context);
    });

}  // namespace tir
}  // namespace kiln
