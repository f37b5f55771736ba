/// PassInstrument: hooks the pass manager calls around every pass, and the three built-ins
/// (timing, IR dump before/after, well-formedness check). Loop-level passes (kiln/tir/passes.h)
/// run under the same instruments, through hooks of their own that see a prim_func.
///
/// Instruments live in a PassContext; the manager calls RunBeforePass / RunAfterPass around each
/// pass that actually runs (not around skipped passes, and not around a Sequential itself, only
/// around the passes inside it). Instruments keep state across calls, so one instrument must not
/// be used by two pipelines running at the same time.
#ifndef KILN_TRANSFORM_INSTRUMENT_H_
#define KILN_TRANSFORM_INSTRUMENT_H_

#include <kiln/ir/module.h>
#include <kiln/transform/pass_info.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace transform {

/// Base of every instrument. Subclasses override the hooks they need; a hook that throws stops
/// the pipeline with its error.
class KILN_API PassInstrumentObj : public Object {
 public:
  static constexpr const char* _type_key = "kiln.transform.PassInstrument";
  KILN_DECLARE_OBJECT_INFO(PassInstrumentObj, Object);

  virtual ~PassInstrumentObj() = default;
  /// Called with the input of the pass, just before it runs.
  virtual void RunBeforePass(const ir::IRModule& mod, const PassInfo& info) const {}
  /// Called with the output of the pass, just after it returned.
  virtual void RunAfterPass(const ir::IRModule& mod, const PassInfo& info) const {}
  /// The same around a loop-level pass, whose input and output are a prim_func (a tir::Node);
  /// `info.name` is its global's name, "tir.pass.<name>".
  virtual void RunBeforeLoopPass(const ObjectRef& func, const PassInfo& info) const {}
  virtual void RunAfterLoopPass(const ObjectRef& func, const PassInfo& info) const {}
};

class PassInstrument : public ObjectRef {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(PassInstrument, ObjectRef, PassInstrumentObj);
};

/// The wall time of one pass run.
struct PassTiming {
  std::string pass_name;
  double seconds = 0;
};

/// Records the wall time of every pass run, in the order the passes finished.
class KILN_API TimingInstrumentObj : public PassInstrumentObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.TimingInstrument";
  KILN_DECLARE_OBJECT_INFO(TimingInstrumentObj, PassInstrumentObj);

  KILN_API void RunBeforePass(const ir::IRModule& mod, const PassInfo& info) const override;
  KILN_API void RunAfterPass(const ir::IRModule& mod, const PassInfo& info) const override;
  KILN_API void RunBeforeLoopPass(const ObjectRef& func, const PassInfo& info) const override;
  KILN_API void RunAfterLoopPass(const ObjectRef& func, const PassInfo& info) const override;
  const std::vector<PassTiming>& timings() const { return timings_; }

 private:
  void Start() const;
  void Stop(const PassInfo& info) const;

  // A stack, because a pass may run other passes inside itself.
  mutable std::vector<std::chrono::steady_clock::time_point> starts_;
  mutable std::vector<PassTiming> timings_;
};

class TimingInstrument : public PassInstrument {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(TimingInstrument, PassInstrument, TimingInstrumentObj);
  KILN_API static TimingInstrument Create();
  /// One line per pass run, slowest first: "  12.345 ms  transform.FuseOps".
  KILN_API std::string Report() const;
};

/// Writes the IR before and after each pass into a folder (created when missing), as
/// `NN_<pass>_before.kiln` and `NN_<pass>_after.kiln`, NN counting pass runs from 00. The text is
/// that of ModuleTextForDump (below). A loop-level pass writes `NN_<pass>_<function>_before.tir`
/// and `..._after.tir`, counted with the graph's passes.
class KILN_API DumpIRInstrumentObj : public PassInstrumentObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.DumpIRInstrument";
  KILN_DECLARE_OBJECT_INFO(DumpIRInstrumentObj, PassInstrumentObj);

  explicit DumpIRInstrumentObj(std::string dir) : dir_(std::move(dir)) {}
  KILN_API void RunBeforePass(const ir::IRModule& mod, const PassInfo& info) const override;
  KILN_API void RunAfterPass(const ir::IRModule& mod, const PassInfo& info) const override;
  KILN_API void RunBeforeLoopPass(const ObjectRef& func, const PassInfo& info) const override;
  KILN_API void RunAfterLoopPass(const ObjectRef& func, const PassInfo& info) const override;
  const std::string& dir() const { return dir_; }

 private:
  void Open(const std::string& name, const std::string& extension, const std::string& text) const;
  void Close(const std::string& name, const std::string& extension, const std::string& text) const;

  std::string dir_;
  mutable int64_t next_index_ = 0;
  mutable std::vector<int64_t> open_indices_;
};

class DumpIRInstrument : public PassInstrument {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(DumpIRInstrument, PassInstrument, DumpIRInstrumentObj);
  KILN_API static DumpIRInstrument Create(std::string dir);
};

/// Checks the IR after each pass with CheckWellFormed (well_formed.h); a failure is a ValueError
/// that names the pass which produced the bad IR. After a loop-level pass, the prim_func must
/// print and parse back to an equal function: every buffer it accesses declared around the
/// access, every field valid.
class KILN_API WellFormedInstrumentObj : public PassInstrumentObj {
 public:
  static constexpr const char* _type_key = "kiln.transform.WellFormedInstrument";
  KILN_DECLARE_OBJECT_INFO(WellFormedInstrumentObj, PassInstrumentObj);

  KILN_API void RunAfterPass(const ir::IRModule& mod, const PassInfo& info) const override;
  KILN_API void RunAfterLoopPass(const ObjectRef& func, const PassInfo& info) const override;
};

class WellFormedInstrument : public PassInstrument {
 public:
  KILN_DEFINE_OBJECT_REF_METHODS(WellFormedInstrument, PassInstrument, WellFormedInstrumentObj);
  KILN_API static WellFormedInstrument Create();
};

/// The text of `mod` for dumps: `ir.AsText(mod)` when that global function is registered, else
/// (or when it fails) a note saying why and the module's function names.
KILN_API std::string ModuleTextForDump(const ir::IRModule& mod);

}  // namespace transform
}  // namespace kiln

#endif  // KILN_TRANSFORM_INSTRUMENT_H_
