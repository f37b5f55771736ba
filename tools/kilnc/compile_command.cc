// `kilnc compile model.onnx -o model.so`: import, build (kiln::Build) and export one artifact,
// with a progress line per step and per pass, and a summary of what was made.
#include <kiln/driver/build.h>
#include <kiln/driver/placement.h>
#include <kiln/frontend/onnx.h>
#include <kiln/transform/instrument.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "arguments.h"
#include "command.h"

namespace kilnc {
namespace {

struct CompileOptions {
  std::string model;
  std::string output;
  kiln::frontend::InputShapes shapes;
  std::string passes;
  std::string dump_ir_dir;
  bool time_passes = false;
  std::vector<std::string> plugins;
  bool fallback = true;
  bool report = false;
  bool generated_kernels = false;
  std::string tir_passes;
  std::string placement = "greedy";
};

std::optional<CompileOptions> ParseOptions(const std::vector<std::string>& args) {
  CompileOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if ((arg == "-o" || arg == "--output") && has_value) {
      options.output = args[++i];
    } else if (arg == "--shape" && has_value) {
      if (!ParseShape(args[++i], &options.shapes)) {
        std::cerr << "kilnc compile: --shape takes name=d0,d1,..., got '" << args[i] << "'\n";
        return std::nullopt;
      }
    } else if (arg == "--passes" && has_value) {
      options.passes = args[++i];
    } else if (arg == "--dump-ir" && has_value) {
      options.dump_ir_dir = args[++i];
    } else if (arg == "--time-passes") {
      options.time_passes = true;
    } else if (arg == "--plugins" && has_value) {
      options.plugins = SplitNames(args[++i]);
    } else if (arg == "--no-fallback") {
      options.fallback = false;
    } else if (arg == "--report") {
      options.report = true;
    } else if (arg == "--generated-kernels") {
      options.generated_kernels = true;
    } else if (arg == "--tir-passes" && has_value) {
      options.tir_passes = args[++i];
    } else if (arg == "--placement" && has_value) {
      options.placement = args[++i];
    } else if (options.model.empty() && arg.rfind("--", 0) != 0) {
      options.model = arg;
    } else {
      std::cerr << "kilnc compile: unexpected argument '" << arg << "'\n";
      return std::nullopt;
    }
  }
  if (options.model.empty() || options.output.empty()) {
    std::cerr << "kilnc compile: needs a model and -o (kilnc compile model.onnx -o model.so)\n";
    return std::nullopt;
  }
  return options;
}

/// Prints "  [pass] <name>" to stderr as each pass starts: a long compile shows where it is.
class ProgressInstrumentObj : public kiln::transform::PassInstrumentObj {
 public:
  void RunBeforePass(const kiln::ir::IRModule& /*mod*/,
                     const kiln::transform::PassInfo& info) const override {
    std::cerr << "kilnc compile:   pass " << info.name << "\n";
  }
};

/// Runs `step`, printing its name first and its duration after.
template <typename Step>
auto Timed(const std::string& name, Step step) {
  std::cerr << "kilnc compile: " << name << "...\n";
  const auto start = std::chrono::steady_clock::now();
  auto result = step();
  const std::chrono::duration<double, std::milli> elapsed =
      std::chrono::steady_clock::now() - start;
  std::cerr << "kilnc compile: " << name << " took " << static_cast<int64_t>(elapsed.count())
            << " ms\n";
  return result;
}

void PrintSummary(const kiln::Executable& model, const std::string& output) {
  const kiln::Map<kiln::String, kiln::Any> plan = model.memory_plan();
  std::cout << "wrote " << output << " (" << std::filesystem::file_size(output) << " bytes)\n"
            << "  graph nodes: " << GraphNodeCount(model.module()) << "\n";
  if (plan.at("planned_at_run_time").cast<bool>()) {
    std::string sizes;
    for (const kiln::String& name : plan.at("size_variables").cast<kiln::Array<kiln::String>>()) {
      sizes += (sizes.empty() ? "" : ", ") + name.str();
    }
    std::cout << "  activation memory: planned per input shape (symbolic sizes: " << sizes << ")\n";
    return;
  }
  std::cout << "  planned activation memory: " << plan.at("total_bytes").cast<int64_t>()
            << " bytes (" << plan.at("bytes_without_sharing").cast<int64_t>()
            << " without buffer reuse)\n";
}

}  // namespace

int RunCompile(const std::vector<std::string>& args) {
  const std::optional<CompileOptions> options = ParseOptions(args);
  if (!options.has_value()) return kExitUsage;
  const kiln::ir::IRModule mod = Timed("importing " + options->model, [&] {
    return kiln::frontend::ImportOnnxFile(options->model, options->shapes);
  });
  kiln::BuildOptions build;
  build.pipeline = options->passes;
  build.compilers = options->plugins;
  build.fallback = options->fallback;
  build.generated_kernels = options->generated_kernels;
  build.tir_passes = options->tir_passes;
  build.placement = options->placement;
  build.pass_context.AddInstrument(
      kiln::transform::PassInstrument(kiln::make_object<ProgressInstrumentObj>()));
  const kiln::transform::TimingInstrument timing = kiln::transform::TimingInstrument::Create();
  if (options->time_passes) build.pass_context.AddInstrument(timing);
  if (!options->dump_ir_dir.empty()) {
    build.pass_context.AddInstrument(
        kiln::transform::DumpIRInstrument::Create(options->dump_ir_dir));
  }
  const kiln::ir::IRModule optimized =
      Timed("optimizing", [&] { return kiln::Optimize(mod, build); });
  // Before codegen, so that a --no-fallback failure comes after the report that explains it.
  if (options->report) std::cout << kiln::ReportPlacement(optimized, build.compilers).ToText();
  const kiln::Executable model =
      Timed("generating code", [&] { return kiln::BuildOptimized(optimized, build); });
  if (options->time_passes) std::cerr << "pass times:\n" << timing.Report();
  Timed("writing " + options->output, [&] {
    model.export_library(options->output);
    return 0;
  });
  PrintSummary(model, options->output);
  return kExitOk;
}

}  // namespace kilnc
