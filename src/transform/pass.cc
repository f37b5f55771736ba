// The pass manager: module and function passes, Sequential, and Pass::operator(), which skips,
// instruments and adds error context around every pass.
#include <kiln/transform/pass.h>

#include <filesystem>
#include <utility>

#include "ir_text_internal.h"

namespace kiln {
namespace transform {
namespace {

class ModulePassObj : public PassObj {
 public:
  ModulePassObj(ModulePassFunc func, PassInfo info)
      : PassObj(std::move(info)), func_(std::move(func)) {}
  ir::IRModule Run(const ir::IRModule& mod, const PassContext& ctx) const override {
    return func_(mod, ctx);
  }

 private:
  ModulePassFunc func_;
};

std::string RunningOn(const std::string& pass_name, const std::string& target) {
  return "while running " + pass_name + " on " + target;
}

class FunctionPassObj : public PassObj {
 public:
  FunctionPassObj(FunctionPassFunc func, PassInfo info, bool include_external_functions)
      : PassObj(std::move(info)),
        func_(std::move(func)),
        include_external_functions_(include_external_functions) {}

  ir::IRModule Run(const ir::IRModule& mod, const PassContext& ctx) const override {
    ir::IRModule result = ir::IRModule::Create(mod->attrs());
    bool changed = false;
    for (const auto& [gvar, func] : mod->functions()) {
      ir::Function updated = func;
      if (include_external_functions_ || !func->attrs().count(ir::attr::kCompiler)) {
        try {
          updated = func_(func, mod, ctx);
        } catch (const Error& error) {
          throw error.WithContext(RunningOn(info().name, "@" + gvar->name_hint().str()));
        } catch (const std::exception& error) {
          throw Error("RuntimeError", error.what(),
                      RunningOn(info().name, "@" + gvar->name_hint().str()));
        }
        KILN_CHECK(updated.defined(), ValueError)
            << info().name << " returned a null function for @" << gvar->name_hint().str();
      }
      changed = changed || !updated.same_as(func);
      result.Add(gvar, updated);
    }
    return changed ? result : mod;
  }

 private:
  FunctionPassFunc func_;
  bool include_external_functions_;
};

// The pipeline being run on this thread, for the dump-on-error reproducer; set by the outermost
// Pass::operator() only, so a failing pass deep inside a Sequential reports the whole pipeline.
thread_local std::string
    current_pipeline;  // NOLINT(cppcoreguidelines-avoid-non-const-global-variables)

class PipelineScope {
 public:
  explicit PipelineScope(const Pass& pass) : outermost_(current_pipeline.empty()) {
    if (outermost_) current_pipeline = pass.PipelineString();
  }
  ~PipelineScope() {
    if (outermost_) current_pipeline.clear();
  }
  PipelineScope(const PipelineScope&) = delete;
  PipelineScope& operator=(const PipelineScope&) = delete;

 private:
  bool outermost_;
};

constexpr const char* kReproducerNote = "the input IR of the failing pass and the pipeline";

/// Adds "while running <pass> on the module" (a function pass already said which function) and,
/// when asked for, writes a reproducer and says where in the message.
Error AddPassContext(const Error& error, const PassInfo& info, const ir::IRModule& input,
                     const PassContext& ctx) {
  Error result = error;
  const std::string running = "while running " + info.name + " on ";
  if (result.context().find(running) == std::string::npos) {
    result = result.WithContext(running + "the module");
  }
  const std::string& dir = ctx->dump_on_error_dir;
  // A pass that runs passes inside itself sees the error twice; the innermost dump is the one
  // that reproduces the failure.
  if (dir.empty() || result.message().find(kReproducerNote) != std::string::npos) return result;
  const std::string ir_path = (std::filesystem::path(dir) / (info.name + "_input.kiln")).string();
  const std::string pipeline_path = (std::filesystem::path(dir) / "pipeline.txt").string();
  std::string note;
  try {
    detail::WriteTextFile(ir_path, ModuleTextForDump(input));
    detail::WriteTextFile(pipeline_path, current_pipeline + "\n");
    note = std::string("\n") + kReproducerNote + " were written to " + ir_path + " and " +
           pipeline_path;
  } catch (const Error& dump_error) {
    note = std::string("\n") + kReproducerNote + " could not be written to " + dir + ": " +
           dump_error.message();
  }
  return Error(result.kind(), result.message() + note, result.context());
}

}  // namespace

ir::IRModule SequentialObj::Run(const ir::IRModule& mod, const PassContext& ctx) const {
  ir::IRModule current = mod;
  for (const Pass& pass : passes_) current = pass(current, ctx);
  return current;
}

ir::IRModule Pass::operator()(const ir::IRModule& mod, const PassContext& ctx) const {
  KILN_CHECK(defined() && mod.defined() && ctx.defined(), ValueError)
      << "running a pass needs a pass, a module and a context, got a null one";
  PipelineScope pipeline(*this);
  if (get()->IsInstance<SequentialObj>()) return get()->Run(mod, ctx);
  const PassInfo& pass_info = info();
  if (!ctx.PassEnabled(pass_info)) return mod;
  for (const PassInstrument& instrument : ctx->instruments) {
    instrument->RunBeforePass(mod, pass_info);
  }
  ir::IRModule result;
  try {
    result = get()->Run(mod, ctx);
  } catch (const Error& error) {
    throw AddPassContext(error, pass_info, mod, ctx);
  } catch (const std::exception& error) {
    throw AddPassContext(Error("RuntimeError", error.what()), pass_info, mod, ctx);
  }
  KILN_CHECK(result.defined(), ValueError) << pass_info.name << " returned a null module";
  for (const PassInstrument& instrument : ctx->instruments) {
    instrument->RunAfterPass(result, pass_info);
  }
  return result;
}

ir::IRModule Pass::operator()(const ir::IRModule& mod) const {
  return (*this)(mod, PassContext::Create());
}

std::string Pass::PipelineString() const {
  if (!get()->IsInstance<SequentialObj>()) return info().name;
  std::string result;
  for (const Pass& pass : static_cast<const SequentialObj*>(get())->passes()) {
    const std::string inner = pass.PipelineString();
    if (inner.empty()) continue;
    if (!result.empty()) result += ",";
    result += inner;
  }
  return result;
}

Pass CreateModulePass(ModulePassFunc func, PassInfo info) {
  KILN_CHECK(func != nullptr, ValueError) << "CreateModulePass(" << info.name << "): null function";
  return Pass(make_object<ModulePassObj>(std::move(func), std::move(info)));
}

Pass CreateFunctionPass(FunctionPassFunc func, PassInfo info, bool include_external_functions) {
  KILN_CHECK(func != nullptr, ValueError)
      << "CreateFunctionPass(" << info.name << "): null function";
  return Pass(
      make_object<FunctionPassObj>(std::move(func), std::move(info), include_external_functions));
}

Pass Sequential(std::vector<Pass> passes, std::string name) {
  for (const Pass& pass : passes) {
    KILN_CHECK(pass.defined(), ValueError) << "Sequential " << name << ": a pass is null";
  }
  return Pass(make_object<SequentialObj>(std::move(passes), PassInfo{std::move(name), 0, false}));
}

}  // namespace transform
}  // namespace kiln
