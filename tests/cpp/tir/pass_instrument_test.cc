// Loop-level passes run under the graph passes' instruments (kiln/transform/instrument.h):
// timed, dumped before and after, checked for well-formedness, and skipped when disabled.
#include <unistd.h>
#include <kiln/ffi/registry.h>
#include <kiln/tir/builtin_nodes.h>
#include <kiln/tir/passes.h>
#include <kiln/transform/instrument.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "testing/expect_error.h"

namespace kiln {
namespace tir {
namespace {

const char* kUnrolledCopy = R"(prim_func(name=copy3, params=[
    buffer(name=a, dtype=float32, shape=[3]), buffer(name=b, dtype=float32, shape=[3])], body=
  for(var=i, extent=3, kind=unrolled, body=
    store(buffer=%b, indices=[i], value=load(buffer=%a, indices=[i])))))";

// A broken pass: it makes the store write a buffer that no one declared.
KILN_REGISTER_GLOBAL("tir.pass.test_dangling_buffer").set_body_typed([](const Node& func) {
  const Node stray = Buffer("stray", DLDataType{kDLFloat, 32, 1}, {arith::IntImm(3)});
  return Mutate(func, [&](const Node& node) -> std::optional<Node> {
    if (!node.is("store")) return std::nullopt;
    return Store(stray, {arith::IntImm(0)}, node.field_as<Node>("value"));
  });
});

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(LoopPassInstrumentTest, TimingRecordsEachLoopLevelPassByItsGlobalName) {
  const transform::TimingInstrument timing = transform::TimingInstrument::Create();
  RunPasses(ParseText(kUnrolledCopy), "unroll,simplify",
            transform::PassContext::Create().AddInstrument(timing));
  std::vector<std::string> timed;
  for (const transform::PassTiming& entry : timing->timings()) timed.push_back(entry.pass_name);
  EXPECT_EQ(timed, (std::vector<std::string>{"tir.pass.unroll", "tir.pass.simplify"}));
}

TEST(LoopPassInstrumentTest, DumpsTheFunctionBeforeAndAfterEachPass) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kiln_tir_dump_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const Node input = ParseText(kUnrolledCopy);
  const Node output = RunPasses(
      input, "unroll",
      transform::PassContext::Create().AddInstrument(transform::DumpIRInstrument::Create(dir)));
  EXPECT_TRUE(
      StructuralEqual(ParseText(ReadFile(dir / "00_tir.pass.unroll_copy3_before.tir")), input));
  EXPECT_TRUE(
      StructuralEqual(ParseText(ReadFile(dir / "00_tir.pass.unroll_copy3_after.tir")), output));
  EXPECT_FALSE(StructuralEqual(input, output));
  std::filesystem::remove_all(dir);
}

TEST(LoopPassInstrumentTest, TheWellFormedCheckNamesThePassThatBrokeTheFunction) {
  transform::PassContext context = transform::PassContext::Create();
  context.AddInstrument(transform::WellFormedInstrument::Create());
  test_util::ExpectError(
      [&] { RunPasses(ParseText(kUnrolledCopy), "simplify,test_dangling_buffer", context); },
      "ValueError", {"after tir.pass.test_dangling_buffer is not well-formed", "stray"});
  // Without the instrument the same pipeline runs: the check is what caught it.
  EXPECT_NO_THROW(RunPasses(ParseText(kUnrolledCopy), "simplify,test_dangling_buffer"));
}

TEST(LoopPassInstrumentTest, ADisabledPassIsSkipped) {
  const Node input = ParseText(kUnrolledCopy);
  const Node output =
      RunPasses(input, "unroll", transform::PassContext::Create().Disable("tir.pass.unroll"));
  EXPECT_TRUE(output.same_as(input));
}

}  // namespace
}  // namespace tir
}  // namespace kiln
