// `kilnc inspect model.onnx`: what Kiln makes of a model before compiling it: its inputs and
// outputs with their types, how often each op occurs, (with --ir) the typed IR and (with --tir)
// the loop-level function each fused group becomes with generated kernels.
#include <kiln/codegen/graph_lowering.h>
#include <kiln/driver/build.h>
#include <kiln/driver/placement.h>
#include <kiln/frontend/onnx.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/text_format.h>
#include <kiln/tir/node.h>
#include <kiln/transform/passes.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "arguments.h"
#include "command.h"

namespace kilnc {
namespace {

struct InspectOptions {
  std::string model;
  kiln::frontend::InputShapes shapes;
  bool print_ir = false;
  bool print_tir = false;
  std::vector<std::string> plugins;
  std::string dot_file;
};

/// The options, or nullopt after printing what is wrong.
std::optional<InspectOptions> ParseOptions(const std::vector<std::string>& args) {
  InspectOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--ir") {
      options.print_ir = true;
    } else if (args[i] == "--tir") {
      options.print_tir = true;
    } else if (args[i] == "--plugins" && i + 1 < args.size()) {
      options.plugins = SplitNames(args[++i]);
    } else if (args[i] == "--dot" && i + 1 < args.size()) {
      options.dot_file = args[++i];
    } else if (args[i] == "--shape" && i + 1 < args.size()) {
      if (!ParseShape(args[++i], &options.shapes)) {
        std::cerr << "kilnc inspect: --shape takes name=d0,d1,..., got '" << args[i] << "'\n";
        return std::nullopt;
      }
    } else if (options.model.empty() && args[i].rfind("--", 0) != 0) {
      options.model = args[i];
    } else {
      std::cerr << "kilnc inspect: unexpected argument '" << args[i] << "'\n";
      return std::nullopt;
    }
  }
  if (options.model.empty()) {
    std::cerr << "kilnc inspect: which model? (kilnc inspect model.onnx)\n";
    return std::nullopt;
  }
  return options;
}

std::string TypeText(const kiln::ir::Type& type) {
  std::string text = kiln::ir::AsText(type);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

void PrintSummary(const kiln::ir::Function& main) {
  std::cout << "inputs:\n";
  for (const kiln::ir::Var& param : main->params()) {
    std::cout << "  " << param->name_hint().str() << ": " << TypeText(param->type_annotation())
              << "\n";
  }
  std::cout << "output: " << TypeText(main->ret_type()) << "\n";
  std::map<std::string, int> op_counts;
  kiln::ir::PostOrderVisit(main->body(), [&](const kiln::ir::Expr& expr) {
    const auto* call = expr.as<kiln::ir::CallObj>();
    if (call == nullptr) return;
    if (const auto* op = call->op().as<kiln::ir::OpObj>()) ++op_counts[op->name().str()];
  });
  std::cout << "ops:\n";
  for (const auto& [name, count] : op_counts) std::cout << "  " << name << " x" << count << "\n";
}

/// Optimizes `mod` as `kilnc compile --plugins` would, then prints the placement report and
/// writes the Graphviz file asked for.
void InspectPlacement(const kiln::ir::IRModule& mod, const InspectOptions& options) {
  kiln::BuildOptions build;
  build.compilers = options.plugins;
  const kiln::ir::IRModule optimized = kiln::Optimize(mod, build);
  std::cout << "\n" << kiln::ReportPlacement(optimized, options.plugins).ToText();
  if (options.dot_file.empty()) return;
  std::ofstream dot(options.dot_file);
  dot << kiln::PlacementDot(optimized);
  KILN_CHECK(dot.good(), RuntimeError) << "could not write " << options.dot_file;
  std::cout << "wrote " << options.dot_file << " (render it with: dot -Tsvg " << options.dot_file
            << " -o graph.svg)\n";
}

/// Optimizes `mod` as `kilnc compile --generated-kernels` would and prints the prim_func each
/// fused group lowers to, then the groups that keep the kernels and why.
void InspectLoopLevel(const kiln::ir::IRModule& mod, const InspectOptions& options) {
  kiln::BuildOptions build;
  build.compilers = options.plugins;
  kiln::codegen::LoweringOptions lowering;
  lowering.generated_kernels = true;
  const kiln::codegen::LoweredGraph lowered =
      kiln::codegen::LowerToGraph(kiln::Optimize(mod, build), lowering);
  std::cout << "\nloop-level functions (" << lowered.prim_funcs.size() << "):\n";
  for (const kiln::tir::Node& func : lowered.prim_funcs) {
    std::cout << "\n" << kiln::tir::AsText(func) << "\n";
  }
  if (lowered.declined.empty()) return;
  std::cout << "\ngroups that keep the kernels (" << lowered.declined.size() << "):\n";
  for (const std::string& why : lowered.declined) std::cout << "  " << why << "\n";
}

}  // namespace

int RunInspect(const std::vector<std::string>& args) {
  const std::optional<InspectOptions> options = ParseOptions(args);
  if (!options.has_value()) return kExitUsage;
  if (std::filesystem::path(options->model).extension() == ".so") {
    return InspectArtifact(options->model);
  }
  const kiln::ir::IRModule mod =
      kiln::transform::InferType()(kiln::frontend::ImportOnnxFile(options->model, options->shapes));
  PrintSummary(mod.Lookup("main"));
  if (options->print_ir) {
    std::cout << "\n" << kiln::ir::AsText(mod, nullptr, /*show_checked_types=*/true);
  }
  if (!options->plugins.empty() || !options->dot_file.empty()) {
    InspectPlacement(mod, *options);
  }
  if (options->print_tir) InspectLoopLevel(mod, *options);
  return kExitOk;
}

}  // namespace kilnc
