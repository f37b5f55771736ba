// The built-in pass instruments: timing, IR dump before/after, well-formedness check.
#include <kiln/ffi/function.h>
#include <kiln/tir/node.h>
#include <kiln/transform/instrument.h>
#include <kiln/transform/well_formed.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "ir_text_internal.h"

namespace kiln {
namespace transform {

namespace detail {
void WriteTextFile(const std::string& path, const std::string& text) {
  const std::filesystem::path file(path);
  std::error_code error;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), error);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  KILN_CHECK(out.good(), RuntimeError) << "cannot write IR dump file '" << path << "'";
}
}  // namespace detail

std::string ModuleTextForDump(const ir::IRModule& mod) {
  // The printer lives in another part of the compiler that may not be built or loaded; looking
  // it up by name keeps the pass manager usable without it.
  std::ostringstream text;
  if (std::optional<Function> printer = Function::GetGlobal("ir.AsText")) {
    // A dump must not stop the pipeline: IR the printer rejects is exactly what one debugs.
    try {
      return (*printer)(mod).cast<String>().str();
    } catch (const Error& error) {
      text << "// ir.AsText failed on this module: " << error.message() << "\n";
    }
  } else {
    text << "// no IR printer is loaded (the global function ir.AsText is not registered)\n";
  }
  text << "// functions:";
  for (const auto& [gvar, func] : mod->functions()) text << " @" << gvar->name_hint().str();
  text << "\n";
  return text.str();
}

void TimingInstrumentObj::Start() const { starts_.push_back(std::chrono::steady_clock::now()); }

void TimingInstrumentObj::Stop(const PassInfo& info) const {
  KILN_ICHECK(!starts_.empty()) << "TimingInstrument: a pass ended that did not start";
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - starts_.back();
  starts_.pop_back();
  timings_.push_back(PassTiming{info.name, elapsed.count()});
}

void TimingInstrumentObj::RunBeforePass(const ir::IRModule& /*mod*/,
                                        const PassInfo& /*info*/) const {
  Start();
}
void TimingInstrumentObj::RunAfterPass(const ir::IRModule& /*mod*/, const PassInfo& info) const {
  Stop(info);
}
void TimingInstrumentObj::RunBeforeLoopPass(const ObjectRef& /*func*/,
                                            const PassInfo& /*info*/) const {
  Start();
}
void TimingInstrumentObj::RunAfterLoopPass(const ObjectRef& /*func*/, const PassInfo& info) const {
  Stop(info);
}

TimingInstrument TimingInstrument::Create() {
  return TimingInstrument(make_object<TimingInstrumentObj>());
}

std::string TimingInstrument::Report() const {
  std::vector<PassTiming> sorted = get()->timings();
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const PassTiming& a, const PassTiming& b) { return a.seconds > b.seconds; });
  std::ostringstream report;
  report << std::fixed << std::setprecision(3);
  for (const PassTiming& timing : sorted) {
    report << std::setw(10) << timing.seconds * 1e3 << " ms  " << timing.pass_name << "\n";
  }
  return report.str();
}

namespace {
std::string DumpPath(const std::string& dir, int64_t index, const std::string& name,
                     const char* when, const std::string& extension) {
  char number[32];
  std::snprintf(number, sizeof(number), "%02lld", static_cast<long long>(index));
  return (std::filesystem::path(dir) / (std::string(number) + "_" + name + "_" + when + extension))
      .string();
}

/// What a loop-level pass handed its instruments, as a node (null when it is not one).
tir::Node AsLoopLevel(const ObjectRef& func) {
  return func.Is<tir::Node>() ? tir::Node::FromUnchecked(func.data()) : tir::Node();
}

/// A loop-level pass's dump name: the pass and the function it ran on.
std::string LoopPassDumpName(const ObjectRef& func, const PassInfo& info) {
  const tir::Node node = AsLoopLevel(func);
  if (!node.is("prim_func")) return info.name;
  return info.name + "_" + node.field_as<String>("name").str();
}

std::string LoopLevelText(const ObjectRef& func) {
  const tir::Node node = AsLoopLevel(func);
  return node.defined() ? tir::AsText(node) + "\n" : "// not a node of the tensor-level IR\n";
}
}  // namespace

void DumpIRInstrumentObj::Open(const std::string& name, const std::string& extension,
                               const std::string& text) const {
  const int64_t index = next_index_++;
  open_indices_.push_back(index);
  detail::WriteTextFile(DumpPath(dir_, index, name, "before", extension), text);
}

void DumpIRInstrumentObj::Close(const std::string& name, const std::string& extension,
                                const std::string& text) const {
  KILN_ICHECK(!open_indices_.empty()) << "DumpIRInstrument: a pass ended that did not start";
  const int64_t index = open_indices_.back();
  open_indices_.pop_back();
  detail::WriteTextFile(DumpPath(dir_, index, name, "after", extension), text);
}

void DumpIRInstrumentObj::RunBeforePass(const ir::IRModule& mod, const PassInfo& info) const {
  Open(info.name, ".kiln", ModuleTextForDump(mod));
}
void DumpIRInstrumentObj::RunAfterPass(const ir::IRModule& mod, const PassInfo& info) const {
  Close(info.name, ".kiln", ModuleTextForDump(mod));
}
void DumpIRInstrumentObj::RunBeforeLoopPass(const ObjectRef& func, const PassInfo& info) const {
  Open(LoopPassDumpName(func, info), ".tir", LoopLevelText(func));
}
void DumpIRInstrumentObj::RunAfterLoopPass(const ObjectRef& func, const PassInfo& info) const {
  Close(LoopPassDumpName(func, info), ".tir", LoopLevelText(func));
}

DumpIRInstrument DumpIRInstrument::Create(std::string dir) {
  return DumpIRInstrument(make_object<DumpIRInstrumentObj>(std::move(dir)));
}

void WellFormedInstrumentObj::RunAfterPass(const ir::IRModule& mod, const PassInfo& info) const {
  std::string reason;
  KILN_CHECK(WellFormed(mod, &reason), ValueError)
      << "the IR after " << info.name << " is not well-formed: " << reason;
}

void WellFormedInstrumentObj::RunAfterLoopPass(const ObjectRef& func, const PassInfo& info) const {
  const tir::Node output = AsLoopLevel(func);
  KILN_CHECK(output.defined(), ValueError)
      << "the output of " << info.name << " is not a node of the tensor-level IR";
  const std::string text = tir::AsText(output);
  try {
    KILN_CHECK(tir::StructuralEqual(tir::ParseText(text), output), ValueError)
        << "it prints as text that parses to a different function:\n"
        << text;
  } catch (const Error& error) {
    KILN_THROW(ValueError) << "the loop-level IR after " << info.name
                           << " is not well-formed: " << error.message();
  }
}

WellFormedInstrument WellFormedInstrument::Create() {
  return WellFormedInstrument(make_object<WellFormedInstrumentObj>());
}

}  // namespace transform
}  // namespace kiln
