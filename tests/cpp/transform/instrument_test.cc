#include <kiln/transform/instrument.h>
#include <gtest/gtest.h>

#include "transform_test_util.h"

namespace kiln {
namespace transform {
namespace {

using testing::LoggingPass;
using testing::ModuleWithUnusedFunction;

TEST(TimingInstrumentTest, RecordsEveryPassThatRunsAndNoSkippedOne) {
  std::vector<std::string> log;
  const TimingInstrument timing = TimingInstrument::Create();
  const Pass seq =
      Sequential({LoggingPass("transform.A", &log), LoggingPass("transform.Skipped", &log, 5),
                  Sequential({LoggingPass("transform.B", &log)})});
  seq(ModuleWithUnusedFunction(), PassContext::Create().AddInstrument(timing));
  std::vector<std::string> timed;
  for (const PassTiming& entry : timing->timings()) {
    timed.push_back(entry.pass_name);
    EXPECT_GE(entry.seconds, 0);
  }
  EXPECT_EQ(timed, (std::vector<std::string>{"transform.A", "transform.B"}));
  const std::string report = timing.Report();
  EXPECT_NE(report.find("transform.A"), std::string::npos);
  EXPECT_NE(report.find("transform.B"), std::string::npos);
  EXPECT_NE(report.find(" ms  "), std::string::npos);
}

TEST(DumpIRInstrumentTest, WritesBeforeAndAfterFilesNumberedByPassRun) {
  const std::string dir = testing::FreshDir("dump_ir");
  std::vector<std::string> log;
  const Pass seq = Sequential({LoggingPass("transform.A", &log), LoggingPass("transform.B", &log)});
  seq(ModuleWithUnusedFunction(),
      PassContext::Create().AddInstrument(DumpIRInstrument::Create(dir)));
  const std::filesystem::path root(dir);
  for (const char* name : {"00_transform.A_before.kiln", "00_transform.A_after.kiln",
                           "01_transform.B_before.kiln", "01_transform.B_after.kiln"}) {
    ASSERT_TRUE(std::filesystem::exists(root / name)) << name;
    EXPECT_NE(testing::ReadFile(root / name).find("main"), std::string::npos) << name;
  }
  std::filesystem::remove_all(dir);
}

TEST(DumpIRInstrumentTest, WithoutAPrinterWritesANoteAndTheFunctionNames) {
  // Unregister the printer for this test only, and put it back however the test ends.
  Function printer;
  if (std::optional<Function> registered = Function::GetGlobal("ir.AsText")) {
    printer = *registered;
    Function::RemoveGlobal("ir.AsText");
  }
  auto restore = [&printer] {
    if (printer.defined()) Function::SetGlobal("ir.AsText", printer, true);
  };
  const std::string dir = testing::FreshDir("dump_ir_no_printer");
  std::string text;
  try {
    std::vector<std::string> log;
    LoggingPass("transform.A", &log)(
        ModuleWithUnusedFunction(),
        PassContext::Create().AddInstrument(DumpIRInstrument::Create(dir)));
    text = testing::ReadFile(std::filesystem::path(dir) / "00_transform.A_before.kiln");
  } catch (...) {
    restore();
    throw;
  }
  restore();
  EXPECT_NE(text.find("no IR printer is loaded"), std::string::npos) << text;
  EXPECT_NE(text.find("@main"), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

TEST(WellFormedInstrumentTest, NamesThePassThatProducedBadIR) {
  const Pass breaks = CreateModulePass(
      [](const ir::IRModule& mod, const PassContext& /*ctx*/) {
        ir::IRModule result = mod;
        result.Add(ir::GlobalVar("bad"), ir::Function({}, ir::Var("free")));
        return result;
      },
      PassInfo{"transform.Breaks", 0, false});
  try {
    breaks(ModuleWithUnusedFunction(),
           PassContext::Create().AddInstrument(WellFormedInstrument::Create()));
    FAIL() << "expected a ValueError";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), "ValueError");
    EXPECT_NE(error.message().find("after transform.Breaks"), std::string::npos) << error.message();
    EXPECT_NE(error.message().find("in @bad"), std::string::npos) << error.message();
  }
}

}  // namespace
}  // namespace transform
}  // namespace kiln
