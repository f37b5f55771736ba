// The built-in pass instruments: timing, IR dump before/after, well-formedness check.
#include <kiln/ffi/function.h>
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

void TimingInstrumentObj::RunBeforePass(const ir::IRModule& /*mod*/,
                                        const PassInfo& /*info*/) const {
  starts_.push_back(std::chrono::steady_clock::now());
}

void TimingInstrumentObj::RunAfterPass(const ir::IRModule& /*mod*/, const PassInfo& info) const {
  KILN_ICHECK(!starts_.empty()) << "TimingInstrument: RunAfterPass without RunBeforePass";
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - starts_.back();
  starts_.pop_back();
  timings_.push_back(PassTiming{info.name, elapsed.count()});
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
std::string DumpPath(const std::string& dir, int64_t index, const std::string& pass_name,
                     const char* when) {
  char number[32];
  std::snprintf(number, sizeof(number), "%02lld", static_cast<long long>(index));
  return (std::filesystem::path(dir) /
          (std::string(number) + "_" + pass_name + "_" + when + ".kiln"))
      .string();
}
}  // namespace

void DumpIRInstrumentObj::RunBeforePass(const ir::IRModule& mod, const PassInfo& info) const {
  const int64_t index = next_index_++;
  open_indices_.push_back(index);
  detail::WriteTextFile(DumpPath(dir_, index, info.name, "before"), ModuleTextForDump(mod));
}

void DumpIRInstrumentObj::RunAfterPass(const ir::IRModule& mod, const PassInfo& info) const {
  KILN_ICHECK(!open_indices_.empty()) << "DumpIRInstrument: RunAfterPass without RunBeforePass";
  const int64_t index = open_indices_.back();
  open_indices_.pop_back();
  detail::WriteTextFile(DumpPath(dir_, index, info.name, "after"), ModuleTextForDump(mod));
}

DumpIRInstrument DumpIRInstrument::Create(std::string dir) {
  return DumpIRInstrument(make_object<DumpIRInstrumentObj>(std::move(dir)));
}

void WellFormedInstrumentObj::RunAfterPass(const ir::IRModule& mod, const PassInfo& info) const {
  std::string reason;
  KILN_CHECK(WellFormed(mod, &reason), ValueError)
      << "the IR after " << info.name << " is not well-formed: " << reason;
}

WellFormedInstrument WellFormedInstrument::Create() {
  return WellFormedInstrument(make_object<WellFormedInstrumentObj>());
}

}  // namespace transform
}  // namespace kiln
