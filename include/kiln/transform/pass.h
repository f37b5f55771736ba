/// Pass: a transformation of an IRModule, with module passes, function passes, Sequential, the
/// pass registry (`transform.<Name>`) and pipeline strings.
///
/// Running a pass goes through Pass::operator(), which skips it when the PassContext says so,
/// calls the context's instruments around it, and on failure adds "while running <pass> on @f"
/// (function passes) or "... on the module" to the error, writing the failing pass's input IR
/// and the pipeline to PassContext::dump_on_error_dir when that is set.
///
///   Pass p = ParsePipeline("transform.DeadCodeElimination,my_ext.transform.Foo");
///   IRModule out = p(mod, PassContext::Create().SetOptLevel(3));
#ifndef KILN_TRANSFORM_PASS_H_
#define KILN_TRANSFORM_PASS_H_

#include <kiln/ffi/registry.h>
#include <kiln/ir/module.h>
#include <kiln/transform/pass_context.h>
#include <kiln/transform/pass_info.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln {
namespace transform {

/// Base of every pass. Subclasses implement Run, the transformation alone; skipping,
/// instruments and error context are the manager's (Pass::operator()). Immutable once built,
/// so one pass object may run in several pipelines and threads if its Run allows it.
class KILN_API PassObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.transform.Pass";
  KILN_DECLARE_OBJECT_INFO(PassObj, Object);

  explicit PassObj(PassInfo info) : info_(std::move(info)) {}
  virtual ~PassObj() = default;
  const PassInfo& info() const { return info_; }
  /// The transformation; returns a new module (or `mod` itself when nothing changed).
  virtual ir::IRModule Run(const ir::IRModule& mod, const PassContext& ctx) const = 0;

 private:
  PassInfo info_;
};

class Pass : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(Pass, ObjectRef, PassObj);

  const PassInfo& info() const { return get()->info(); }
  /// Runs the pass under `ctx` (see the file comment). `mod` is never changed.
  KILN_API ir::IRModule operator()(const ir::IRModule& mod, const PassContext& ctx) const;
  /// Runs the pass under PassContext::Create().
  KILN_API ir::IRModule operator()(const ir::IRModule& mod) const;
  /// The pipeline string that names this pass: its name, or for a Sequential the names of the
  /// passes inside it joined by commas.
  KILN_API std::string PipelineString() const;
};

/// IRModule -> IRModule.
using ModulePassFunc = std::function<ir::IRModule(const ir::IRModule&, const PassContext&)>;
/// Function -> Function, given the whole module for reference.
using FunctionPassFunc =
    std::function<ir::Function(const ir::Function&, const ir::IRModule&, const PassContext&)>;

/// A pass that transforms the whole module.
KILN_API Pass CreateModulePass(ModulePassFunc func, PassInfo info);

/// A pass that transforms each function of the module independently, keeping each function's
/// GlobalVar. Functions with the "Compiler" attribute (taken by an external compiler) are left
/// alone unless `include_external_functions`.
KILN_API Pass CreateFunctionPass(FunctionPassFunc func, PassInfo info,
                                 bool include_external_functions = false);

/// Runs `passes` in order, each under the same context (each one may be skipped on its own).
/// Opt level 0 and not required itself; instruments see the passes inside, not the Sequential.
KILN_API Pass Sequential(std::vector<Pass> passes, std::string name = "Sequential");

class KILN_API SequentialObj : public PassObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.Sequential";
  KILN_DECLARE_OBJECT_INFO(SequentialObj, PassObj);

  SequentialObj(std::vector<Pass> passes, PassInfo info)
      : PassObj(std::move(info)), passes_(std::move(passes)) {}
  const std::vector<Pass>& passes() const { return passes_; }
  KILN_API ir::IRModule Run(const ir::IRModule& mod, const PassContext& ctx) const override;

 private:
  std::vector<Pass> passes_;
};

/// A Sequential of the passes named in `pipeline`, comma-separated (spaces around names are
/// ignored). Each name is looked up as a global function returning a Pass: a name without a
/// dot as `transform.<name>` first, then as written. An unknown name is a KeyError suggesting
/// close registered names; a name that is not a pass factory is a TypeError. A name may take
/// string arguments in parentheses, `AnnotateTarget(dnnl, blas)`: the factory is then called
/// with one Array<String> of them (commas inside parentheses separate arguments, not passes).
KILN_API Pass ParsePipeline(const std::string& pipeline);

/// The name a pass made from string arguments gives itself so that its pipeline string parses
/// back to it: "transform.AnnotateTarget(dnnl, blas)"; just `name` when `args` is empty.
KILN_API std::string PassNameWithArgs(const std::string& name,
                                      const std::vector<std::string>& args);

/// ParsePipeline(pipeline) run on `mod` under PassContext::FromMap(settings). Also registered
/// as the global function `transform.RunPipeline`.
KILN_API ir::IRModule RunPipeline(const ir::IRModule& mod, const std::string& pipeline,
                                  const Map<String, Any>& settings = Map<String, Any>());

}  // namespace transform
}  // namespace kiln

/// Registers `Pass Name()` (in scope) as the global function `transform.<Name>`:
///   KILN_REGISTER_PASS(DeadCodeElimination);
#define KILN_REGISTER_PASS(Name)                                                            \
  KILN_REGISTER_GLOBAL("transform." #Name).set_body_typed([]() -> ::kiln::transform::Pass { \
    return Name();                                                                          \
  })

/// Registers a pass factory under any dotted name: KILN_REGISTER_PASS_AS("my.transform.Foo", Foo);
#define KILN_REGISTER_PASS_AS(RegistryName, Factory)                                  \
  KILN_REGISTER_GLOBAL(RegistryName).set_body_typed([]() -> ::kiln::transform::Pass { \
    return Factory();                                                                 \
  })

#endif  // KILN_TRANSFORM_PASS_H_
