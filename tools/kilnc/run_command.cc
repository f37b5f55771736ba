// `kilnc run model.so`: loads an artifact with the runtime alone, sets its inputs (from .npy
// files, else seeded random values), runs it --repeat times and prints each output's summary and
// the latency.
#include <kiln/runtime/executable.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/profile.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <random>

#include "arguments.h"
#include "command.h"
#include "npy.h"

namespace kilnc {
namespace {

struct RunOptions {
  std::string model;
  std::map<std::string, std::string> input_files;  // input name -> .npy path
  int64_t repeat = 1;
  int64_t warmup = 1;
  int64_t memory_limit = 0;                  // bytes of activation memory; 0: none
  std::map<std::string, int64_t> max_shape;  // upper bounds of size variables
  std::string output_dir;
  bool profile = false;  // time each graph node too
};

std::optional<int64_t> ParseCount(const std::string& text) {
  try {
    size_t end = 0;
    const int64_t value = std::stoll(text, &end);
    if (end == text.size() && value >= 0) return value;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::optional<RunOptions> ParseOptions(const std::vector<std::string>& args) {
  RunOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    std::string name;
    std::string value;
    if (arg == "--input" && has_value && SplitAssignment(args[i + 1], &name, &value)) {
      options.input_files[name] = value;
      ++i;
    } else if ((arg == "--repeat" || arg == "--warmup") && has_value &&
               ParseCount(args[i + 1]).has_value()) {
      (arg == "--repeat" ? options.repeat : options.warmup) = *ParseCount(args[++i]);
    } else if (arg == "--memory-limit" && has_value && ParseCount(args[i + 1]).has_value()) {
      options.memory_limit = *ParseCount(args[++i]);
    } else if (arg == "--max-shape" && has_value && SplitAssignment(args[i + 1], &name, &value) &&
               ParseCount(value).has_value()) {
      options.max_shape[name] = *ParseCount(value);
      ++i;
    } else if (arg == "--profile") {
      options.profile = true;
    } else if (arg == "--output-dir" && has_value) {
      options.output_dir = args[++i];
    } else if (options.model.empty() && arg.rfind("--", 0) != 0) {
      options.model = arg;
    } else {
      std::cerr << "kilnc run: unexpected or malformed argument '" << arg << "'\n";
      return std::nullopt;
    }
  }
  if (options.model.empty() || options.repeat < 1) {
    std::cerr << "kilnc run: needs a model (kilnc run model.so) and --repeat of at least 1\n";
    return std::nullopt;
  }
  return options;
}

/// Uniform values in [-1, 1) for float inputs, small integers otherwise; seeded, so two runs of
/// the same command see the same data.
kiln::Tensor RandomInput(const std::vector<int64_t>& shape, DLDataType dtype, uint32_t seed) {
  kiln::Tensor tensor = kiln::runtime::Empty(shape, dtype, DLDevice{kDLCPU, 0});
  std::mt19937 rng(seed);
  const int64_t count = kiln::NumElements(tensor.dl_tensor());
  auto fill = [&](auto* data, auto draw) {
    for (int64_t i = 0; i < count; ++i) data[i] = draw();
  };
  std::uniform_real_distribution<float> real(-1.0F, 1.0F);
  std::uniform_int_distribution<int> small(0, 3);
  if (dtype.code == kDLFloat && dtype.bits == 32) {
    fill(static_cast<float*>(tensor.data()), [&] { return real(rng); });
  } else if (dtype.code == kDLFloat && dtype.bits == 64) {
    fill(static_cast<double*>(tensor.data()), [&] { return static_cast<double>(real(rng)); });
  } else if (dtype.code == kDLInt && dtype.bits == 64) {
    fill(static_cast<int64_t*>(tensor.data()), [&] { return static_cast<int64_t>(small(rng)); });
  } else if (dtype.code == kDLInt && dtype.bits == 32) {
    fill(static_cast<int32_t*>(tensor.data()), [&] { return static_cast<int32_t>(small(rng)); });
  } else {
    std::fill_n(static_cast<char*>(tensor.data()), kiln::CompactBytes(tensor.dl_tensor()), 0);
  }
  return tensor;
}

/// Sets every input of `model` and returns them, in order.
std::vector<kiln::Tensor> SetInputs(const kiln::Executable& model, const RunOptions& options) {
  const kiln::Map<kiln::String, kiln::Any> info = model.input_info();
  const auto names = info.at("names").cast<kiln::Array<kiln::String>>();
  const auto shapes = info.at("shapes").cast<kiln::Array<kiln::Shape>>();
  const auto symbolic = info.at("symbolic_shapes").cast<kiln::Array<kiln::String>>();
  const auto dtypes = info.at("dtypes").cast<kiln::Array<DLDataType>>();
  for (const auto& file : options.input_files) {
    KILN_CHECK(std::any_of(names.begin(), names.end(),
                           [&](const kiln::String& input) { return input.str() == file.first; }),
               ValueError)
        << "--input names '" << file.first << "', which is not an input of " << options.model;
  }
  std::vector<kiln::Tensor> inputs;
  for (int64_t i = 0; i < names.size(); ++i) {
    const std::string name = names[i].str();
    auto file = options.input_files.find(name);
    if (file != options.input_files.end()) {
      inputs.push_back(ReadNpy(file->second));
      model.set_input(name, inputs.back());
      continue;
    }
    const kiln::Shape shape = shapes[i];
    KILN_CHECK(std::none_of(shape.begin(), shape.end(), [](int64_t extent) { return extent < 0; }),
               ValueError)
        << "input '" << name << "' has the symbolic shape " << symbolic[i]
        << ": give it with --input " << name << "=file.npy (any shape of that form)";
    std::cerr << "kilnc run: input '" << name << "' not given (--input " << name
              << "=file.npy): using seeded random values\n";
    inputs.push_back(RandomInput(std::vector<int64_t>(shape.begin(), shape.end()), dtypes[i],
                                 static_cast<uint32_t>(i)));
    model.set_input(name, inputs.back());
  }
  return inputs;
}

/// "output 0: float32 (1, 1000)  min -3.2 max 4.1 mean 0.01  [0.12, -0.5, ...]"
void PrintOutput(int64_t index, const kiln::Tensor& output) {
  std::cout << "output " << index << ": " << kiln::DataTypeToString(output.dtype()) << " "
            << output.shape();
  const DLDataType dtype = output.dtype();
  if (dtype.code != kDLFloat || dtype.bits != 32) {
    std::cout << "\n";
    return;
  }
  const auto* data = static_cast<const float*>(output.data());
  const int64_t count = kiln::NumElements(output.dl_tensor());
  if (count == 0) {
    std::cout << "  (empty)\n";
    return;
  }
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) sum += data[i];
  std::cout << std::setprecision(6) << "  min " << *std::min_element(data, data + count) << " max "
            << *std::max_element(data, data + count) << " mean " << sum / static_cast<double>(count)
            << "  [";
  for (int64_t i = 0; i < std::min<int64_t>(count, 5); ++i) {
    std::cout << (i == 0 ? "" : ", ") << data[i];
  }
  std::cout << (count > 5 ? ", ...]\n" : "]\n");
}

}  // namespace

int RunRun(const std::vector<std::string>& args) {
  const std::optional<RunOptions> options = ParseOptions(args);
  if (!options.has_value()) return kExitUsage;
  const kiln::Executable model = kiln::Executable::Load(options->model);
  model.set_limits(/*max_concurrent_runs=*/0, options->memory_limit);
  if (!options->max_shape.empty()) {
    kiln::Map<kiln::String, int64_t> bounds;
    for (const auto& [name, bound] : options->max_shape) bounds.Set(kiln::String(name), bound);
    model.set_upper_bounds(bounds);
  }
  const std::vector<kiln::Tensor> inputs = SetInputs(model, *options);
  for (int64_t i = 0; i < options->warmup; ++i) model.run();
  std::vector<double> latencies_ms;
  for (int64_t i = 0; i < options->repeat; ++i) {
    const auto start = std::chrono::steady_clock::now();
    model.run();
    latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  for (int64_t i = 0; i < model.num_outputs(); ++i) {
    PrintOutput(i, model.get_output(i));
    if (!options->output_dir.empty()) {
      std::filesystem::create_directories(options->output_dir);
      WriteNpy(options->output_dir + "/output_" + std::to_string(i) + ".npy", model.get_output(i));
    }
  }
  std::sort(latencies_ms.begin(), latencies_ms.end());
  std::cout << std::fixed << std::setprecision(3) << "latency over " << latencies_ms.size()
            << " run(s): min " << latencies_ms.front() << " ms, median "
            << latencies_ms[latencies_ms.size() / 2] << " ms, max " << latencies_ms.back()
            << " ms\n";
  if (options->profile) {
    std::cout << "\nprofile: "
              << kiln::runtime::FormatProfile(model.profile(inputs, options->repeat));
  }
  return kExitOk;
}

}  // namespace kilnc
