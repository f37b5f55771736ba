// Pipeline strings ("transform.A,my_ext.transform.B") and the transform.* global functions
// that let Python and kilnc run passes.
#include <kiln/ffi/plugin.h>
#include <kiln/transform/pass.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace transform {
namespace {

std::string Trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t\n") - first + 1);
}

/// The items of a comma-separated list, trimmed, empty ones dropped; commas inside
/// parentheses do not split. ValueError on unbalanced parentheses.
std::vector<std::string> SplitTopLevel(const std::string& text) {
  std::vector<std::string> items;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    KILN_CHECK(depth >= 0, ValueError) << "unbalanced ')' in '" << text << "'";
    if (c == ',' && depth == 0) {
      items.push_back(Trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  KILN_CHECK(depth == 0, ValueError) << "unbalanced '(' in '" << text << "'";
  items.push_back(Trim(current));
  items.erase(std::remove(items.begin(), items.end(), std::string()), items.end());
  return items;
}

/// A pipeline item, `Name` or `Name(arg, ...)`.
struct PassItem {
  std::string name;
  std::optional<Array<String>> args;
};

PassItem ParseItem(const std::string& item) {
  const size_t open = item.find('(');
  if (open == std::string::npos) return {item, std::nullopt};
  KILN_CHECK(item.back() == ')', ValueError)
      << "'" << item << "': nothing may follow the closing ')' of a pass's arguments";
  Array<String> args;
  for (const std::string& arg : SplitTopLevel(item.substr(open + 1, item.size() - open - 2))) {
    args.push_back(String(arg));
  }
  return {Trim(item.substr(0, open)), args};
}

Pass LookupPass(const PassItem& item) {
  const std::string& name = item.name;
  // A bare name means a built-in; a dotted name is taken as written (plugins choose their own
  // namespace, e.g. "my_ext.transform.Foo").
  const bool dotted = name.find('.') != std::string::npos;
  std::optional<Function> factory = Function::GetGlobal(("transform." + name).c_str());
  if (dotted || !factory.has_value()) {
    std::optional<Function> as_written = Function::GetGlobal(name.c_str());
    if (as_written.has_value() || dotted) factory = as_written;
  }
  if (!factory.has_value()) {
    // Raises the registry's KeyError with its suggestions of close names.
    factory = Function::GetGlobalRequired((dotted ? name : "transform." + name).c_str());
  }
  Any result;
  try {
    result = item.args.has_value() ? (*factory)(*item.args) : (*factory)();
  } catch (const Error& error) {
    if (error.kind() != "TypeError") throw;
    KILN_THROW(TypeError) << "'" << name << "' is not a pass: calling it with "
                          << (item.args.has_value() ? "an array of strings" : "no arguments")
                          << " failed (" << error.message() << ")";
  }
  std::optional<Pass> pass = result.as<Pass>();
  KILN_CHECK(pass.has_value() && pass->defined(), TypeError)
      << "'" << name << "' is not a pass: it returned a " << result.type_str()
      << " instead of a kiln.transform.Pass";
  return *pass;
}

}  // namespace

Pass ParsePipeline(const std::string& pipeline) {
  EnsurePluginsDiscovered();  // passes of installed plugins are named like built-in ones
  std::vector<Pass> passes;
  try {
    for (const std::string& item : SplitTopLevel(pipeline)) {
      passes.push_back(LookupPass(ParseItem(item)));
    }
  } catch (const Error& error) {
    throw error.WithContext("while parsing the pass pipeline '" + pipeline + "'");
  }
  return Sequential(std::move(passes), "pipeline");
}

std::string PassNameWithArgs(const std::string& name, const std::vector<std::string>& args) {
  if (args.empty()) return name;
  std::string joined;
  for (const std::string& arg : args) joined += (joined.empty() ? "" : ", ") + arg;
  return name + "(" + joined + ")";
}

ir::IRModule RunPipeline(const ir::IRModule& mod, const std::string& pipeline,
                         const Map<String, Any>& settings) {
  return ParsePipeline(pipeline)(mod, PassContext::FromMap(settings));
}

KILN_REGISTER_GLOBAL("transform.RunPipeline")
    .set_body_typed([](const ir::IRModule& mod, const String& pipeline,
                       const Map<String, Any>& settings) {
      return RunPipeline(mod, pipeline.str(), settings);
    });

KILN_REGISTER_GLOBAL("transform.ParsePipeline").set_body_typed([](const String& pipeline) {
  return ParsePipeline(pipeline.str());
});

KILN_REGISTER_GLOBAL("transform.Sequential")
    .set_body_typed([](const Array<Pass>& passes, const String& name) {
      return Sequential(std::vector<Pass>(passes.begin(), passes.end()), name.str());
    });

KILN_REGISTER_GLOBAL("transform.RunPass")
    .set_body_typed([](const Pass& pass, const ir::IRModule& mod,
                       const Map<String, Any>& settings) {
      return pass(mod, PassContext::FromMap(settings));
    });

// Passes written in another language (Python's @kiln.transform.module_pass and function_pass):
// `func` is (IRModule, PassContext) -> IRModule, or (Function, IRModule, PassContext) ->
// Function for each function of the module.
KILN_REGISTER_GLOBAL("transform.CreateModulePass")
    .set_body_typed([](const Function& func, const String& name, int64_t opt_level) {
      return CreateModulePass(
          [func](const ir::IRModule& mod, const PassContext& ctx) {
            return func(mod, ctx).cast<ir::IRModule>();
          },
          PassInfo{name.str(), opt_level, false});
    });

KILN_REGISTER_GLOBAL("transform.CreateFunctionPass")
    .set_body_typed([](const Function& func, const String& name, int64_t opt_level) {
      return CreateFunctionPass(
          [func](const ir::Function& function, const ir::IRModule& mod, const PassContext& ctx) {
            return func(function, mod, ctx).cast<ir::Function>();
          },
          PassInfo{name.str(), opt_level, false});
    });

KILN_REGISTER_GLOBAL("transform.PassInfo").set_body_typed([](const Pass& pass) {
  Map<String, Any> info;
  info.Set("name", String(pass.info().name));
  info.Set("opt_level", pass.info().opt_level);
  info.Set("required", pass.info().required);
  return info;
});

}  // namespace transform
}  // namespace kiln
