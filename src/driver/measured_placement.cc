// Cost-aware BYOC placement (kiln/driver/measured_placement.h): each region an external
// compiler took is timed against Kiln's CPU path, and returns to the CPU path when that is
// faster.
#include <unistd.h>
#include <kiln/codegen/external_codegen.h>
#include <kiln/driver/build.h>
#include <kiln/driver/measured_placement.h>
#include <kiln/ir/expr_functor.h>
#include <kiln/ir/function.h>
#include <kiln/ir/structural_equal.h>
#include <kiln/runtime/device_api.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/thread_pool.h>
#include <kiln/transform/passes.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../runtime/timing_internal.h"

namespace kiln {
namespace {

constexpr const char* kCostsAttr = "kiln.placement_costs";
/// Timed runs of each variant, after one untimed run: enough for a stable median of runs that
/// take milliseconds; a variant slower than kLongRunSeconds gets kLongRuns.
constexpr int kRuns = 7;
constexpr int kLongRuns = 3;
constexpr double kLongRunSeconds = 0.25;

// ---- the IR: inlining regions and composites back -------------------------------------------

/// `func`'s body with its parameters bound to `args`.
ir::Expr BodyAt(const ir::Function& func, const Array<ir::Expr>& args) {
  std::unordered_map<const Object*, ir::Expr> values;
  for (int64_t i = 0; i < func->params().size(); ++i) values[func->params()[i].get()] = args[i];
  return ir::SubstituteVars(func->body(), values);
}

/// Inlines calls of composite functions (MergeComposite's) and of the global functions in
/// `regions`: what the CPU path runs instead of a region.
class RegionInliner : public ir::ExprMutator {
 public:
  explicit RegionInliner(std::unordered_map<std::string, ir::Function> regions = {})
      : regions_(std::move(regions)) {}

 protected:
  ir::Expr VisitCall(const ir::Call& pre, const ir::Call& post) override {
    if (const auto* local = post->op().as<ir::FunctionObj>()) {
      if (local->attrs().Get(String(ir::attr::kComposite)).has_value()) {
        return BodyAt(Downcast<ir::Function>(post->op()), post->args());
      }
    }
    if (const auto* gvar = post->op().as<ir::GlobalVarObj>()) {
      auto region = regions_.find(gvar->name_hint().str());
      if (region != regions_.end()) {
        return BodyAt(region->second, post->args());
      }
    }
    return ExprMutator::VisitCall(pre, post);
  }

 private:
  std::unordered_map<std::string, ir::Function> regions_;  // with their composites inlined
};

ir::Function WithoutComposites(const ir::Function& region) {
  return ir::Function(region->params(), RegionInliner().Mutate(region->body()), region->ret_type());
}

// ---- tensors for a measurement ----------------------------------------------------------------

std::optional<std::vector<int64_t>> StaticShape(const ir::Type& type) {
  const auto* tensor = type.as<ir::TensorTypeObj>();
  if (tensor == nullptr) return std::nullopt;
  std::vector<int64_t> shape;
  for (const ir::Dim& dim : tensor->shape()) {
    std::optional<int64_t> extent = dim.as_static();
    if (!extent.has_value()) return std::nullopt;
    shape.push_back(*extent);
  }
  return shape;
}

/// A tensor of `type` (float: uniform in [-1, 1]; other dtypes zero), or nullopt with `*why`.
std::optional<Tensor> TensorFor(const ir::Type& type, const std::string& what, std::mt19937* rng,
                                std::string* why) {
  std::optional<std::vector<int64_t>> shape = StaticShape(type);
  if (!shape.has_value()) {
    *why = what + " has no static shape";
    return std::nullopt;
  }
  const DLDataType dtype = type.as<ir::TensorTypeObj>()->dtype();
  Tensor tensor = runtime::Empty(*shape, dtype, DLDevice{kDLCPU, 0});
  int64_t count = 1;
  for (int64_t extent : *shape) count *= extent;
  if (dtype.code == kDLFloat && dtype.bits == 32) {
    std::uniform_real_distribution<float> uniform(-1.F, 1.F);
    auto* data = static_cast<float*>(tensor.data());
    for (int64_t i = 0; i < count; ++i) data[i] = uniform(*rng);
  } else {
    std::fill_n(static_cast<char*>(tensor.data()), count * ((dtype.bits * dtype.lanes + 7) / 8), 0);
  }
  return tensor;
}

// ---- timing ---------------------------------------------------------------------------------

double Seconds(const std::function<void()>& run) {
  const runtime::internal::Clock::time_point start = runtime::internal::Clock::now();
  run();
  return runtime::internal::SecondsSince(start);
}

/// The median seconds of each variant, run in turns (the order reversed every turn) after one
/// untimed run each, so that all see the same machine.
std::vector<double> TimeInTurns(const std::vector<std::function<void()>>& variants) {
  double first = 0;
  for (const auto& variant : variants) first = std::max(first, Seconds(variant));
  const int runs = first > kLongRunSeconds ? kLongRuns : kRuns;
  std::vector<std::vector<double>> times(variants.size());
  for (int run = 0; run < runs; ++run) {
    for (size_t k = 0; k < variants.size(); ++k) {
      const size_t v = run % 2 == 0 ? k : variants.size() - 1 - k;
      times[v].push_back(Seconds(variants[v]));
    }
  }
  std::vector<double> medians(variants.size());
  for (size_t v = 0; v < variants.size(); ++v)
    medians[v] = runtime::internal::Median(std::move(times[v]));
  return medians;
}

// ---- the cache --------------------------------------------------------------------------------

std::filesystem::path CachePath() {
  if (const char* dir = std::getenv("KILN_CACHE_DIR"); dir != nullptr && *dir != '\0') {
    return std::filesystem::path(dir) / "placement_costs.json";
  }
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return {};
  return std::filesystem::path(home) / ".cache" / "kiln" / "placement_costs.json";
}

/// This machine as the cache tells machines apart: the CPU and the threads a run uses.
std::string MachineKey() {
  const Any name = runtime::DeviceApiRef::Get(kDLCPU).GetAttr(0, kKilnDeviceAttrName);
  return (name.is_none() ? std::string("cpu") : name.cast<String>().str()) + ", " +
         std::to_string(runtime::NumThreads()) + " threads";
}

std::string CacheKey(const std::string& compiler, const ir::Function& region) {
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(ir::StructuralHash(region)));
  return MachineKey() + "|" + compiler + "|" + hash;
}

/// Builds share the file, so reads and writes of it are serialized in the process; another
/// process's write replaces it whole (a rename), so a reader never sees half a file.
std::mutex& CacheMutex() {
  static std::mutex mutex;
  return mutex;
}

nlohmann::json ReadCache(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::object();
  nlohmann::json cache = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return cache.is_object() ? cache : nlohmann::json::object();  // a damaged cache is ignored
}

std::optional<std::pair<double, double>> CachedCosts(const std::string& key) {
  const std::filesystem::path path = CachePath();
  if (path.empty()) return std::nullopt;
  std::lock_guard<std::mutex> lock(CacheMutex());
  const nlohmann::json cache = ReadCache(path);
  auto entry = cache.find(key);
  if (entry == cache.end() || !entry->is_array() || entry->size() != 2 ||
      !(*entry)[0].is_number() || !(*entry)[1].is_number()) {
    return std::nullopt;
  }
  return std::make_pair((*entry)[0].get<double>(), (*entry)[1].get<double>());
}

void StoreCosts(const std::string& key, double compiler_seconds, double host_seconds) {
  const std::filesystem::path path = CachePath();
  if (path.empty()) return;
  std::lock_guard<std::mutex> lock(CacheMutex());
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  nlohmann::json cache = ReadCache(path);
  cache[key] = {compiler_seconds, host_seconds};
  const std::filesystem::path partial =
      path.string() + ".partial." + std::to_string(static_cast<long long>(getpid()));
  {
    std::ofstream out(partial, std::ios::trunc);
    out << cache.dump(1) << "\n";
    if (!out.good()) return;  // an unwritable cache costs a measurement next time, no more
  }
  std::filesystem::rename(partial, path, error);
  if (error) std::filesystem::remove(partial, error);
}

// ---- one region -------------------------------------------------------------------------------

struct Measurer {
  const Map<String, Any>& codegen_options;

  /// The region's cost on the CPU path and, with `on_compiler`, on its compiler, by
  /// measurement: {host} or {host, compiler}.
  std::vector<double> Measure(const std::string& symbol, const ir::Function& region,
                              bool on_compiler) const {
    std::mt19937 rng(1);
    std::vector<Tensor> inputs;
    std::string why;
    for (const ir::Var& param : region->params()) {
      std::optional<Tensor> input =
          TensorFor(param->checked_type(), "input '" + param->name_hint().str() + "'", &rng, &why);
      if (!input.has_value()) throw std::runtime_error(why);
      inputs.push_back(*input);
    }
    std::vector<Tensor> outputs;
    const ir::Type& result = region->body()->checked_type();
    std::vector<ir::Type> result_types;
    if (const auto* tuple = result.as<ir::TupleTypeObj>()) {
      result_types.assign(tuple->fields().begin(), tuple->fields().end());
    } else {
      result_types.push_back(result);
    }
    for (const ir::Type& type : result_types) {
      std::optional<Tensor> output = TensorFor(type, "an output", &rng, &why);
      if (!output.has_value()) throw std::runtime_error(why);
      outputs.push_back(*output);
    }
    const Executable host = CompileHost(region);
    for (size_t i = 0; i < inputs.size(); ++i) host.set_input(static_cast<int64_t>(i), inputs[i]);
    std::vector<std::function<void()>> variants{[&] { host.run(); }};
    std::vector<AnyView> packed(inputs.begin(), inputs.end());
    packed.insert(packed.end(), outputs.begin(), outputs.end());
    std::optional<Function> external;
    if (on_compiler) {
      external = CompileExternal(symbol, region);
      variants.emplace_back(
          [&] { external->CallPacked(packed.data(), static_cast<int32_t>(packed.size())); });
    }
    return TimeInTurns(variants);
  }

  Function CompileExternal(const std::string& symbol, const ir::Function& region) const {
    ir::IRModule alone = ir::IRModule::Create();
    alone.Add(ir::GlobalVar(String(symbol)), region);
    std::optional<Function> function;
    for (const runtime::Module& module : codegen::RunExternalCodegen(alone, codegen_options)) {
      if (!function.has_value()) function = module.GetFunction(symbol);
    }
    KILN_CHECK(function.has_value(), RuntimeError)
        << "the codegen made no function '" << symbol << "'";
    return *function;
  }

  static Executable CompileHost(const ir::Function& region) {
    ir::IRModule alone = ir::IRModule::Create();
    alone.Add(ir::GlobalVar("main"), WithoutComposites(region));
    return Build(alone);
  }
};

RegionCost Decide(const std::string& symbol, const ir::Function& region,
                  const Map<String, Any>& codegen_options) {
  RegionCost cost;
  cost.function = symbol;
  cost.compiler = region.GetAttr<String>(ir::attr::kCompiler)->str();
  const std::string key = CacheKey(cost.compiler, region);
  try {
    std::optional<Function> estimate =
        Function::GetGlobal(("kiln.ext." + cost.compiler + ".estimate_seconds").c_str());
    std::optional<double> estimated;
    if (estimate.has_value()) {
      const Any answer = (*estimate)(region);
      if (!answer.is_none()) estimated = answer.cast<double>();
    }
    const Measurer measurer{codegen_options};
    if (std::optional<std::pair<double, double>> cached = CachedCosts(key)) {
      std::tie(cost.compiler_seconds, cost.host_seconds) = *cached;
      cost.source = "cached";
    } else if (!estimated.has_value()) {
      const std::vector<double> measured = measurer.Measure(symbol, region, true);
      cost.host_seconds = measured[0];
      cost.compiler_seconds = measured[1];
      cost.source = "measured";
      StoreCosts(key, cost.compiler_seconds, cost.host_seconds);
    } else {
      // The compiler's cost is its estimate: only the CPU path is built and run.
      cost.host_seconds = measurer.Measure(symbol, region, false)[0];
    }
    if (estimated.has_value()) {
      cost.compiler_seconds = *estimated;
      cost.source = "estimate";
    }
    cost.kept = cost.compiler_seconds <= cost.host_seconds;
  } catch (const std::exception& error) {
    // A region that cannot be measured stays where the predicates put it; the report says why.
    cost.kept = true;
    cost.source = "";
    // The error's first line: a Python estimate's traceback would not fit a report line.
    const std::string what = error.what();
    cost.note = "not measured: " + what.substr(0, what.find('\n'));
  }
  return cost;
}

Map<String, Any> CostToMap(const RegionCost& cost) {
  Map<String, Any> map;
  map.Set("function", String(cost.function));
  map.Set("compiler", String(cost.compiler));
  map.Set("compiler_seconds", cost.compiler_seconds);
  map.Set("host_seconds", cost.host_seconds);
  map.Set("source", String(cost.source));
  map.Set("kept", cost.kept);
  map.Set("note", String(cost.note));
  return map;
}

ir::IRModule PlaceByCost(const ir::IRModule& mod, const std::vector<std::string>& compilers,
                         const Map<String, Any>& codegen_options) {
  std::vector<RegionCost> costs;
  std::unordered_map<std::string, ir::Function> returned;
  for (const auto& [gvar, func] : mod->functions()) {
    std::optional<String> compiler = func.GetAttr<String>(ir::attr::kCompiler);
    if (!compiler.has_value() ||
        std::find(compilers.begin(), compilers.end(), compiler->str()) == compilers.end()) {
      continue;
    }
    costs.push_back(Decide(gvar->name_hint().str(), func, codegen_options));
    if (!costs.back().kept) returned.emplace(gvar->name_hint().str(), WithoutComposites(func));
  }
  if (costs.empty()) return mod;
  Array<Any> recorded;
  for (const RegionCost& cost : costs) recorded.push_back(CostToMap(cost));
  ir::IRModule placed = ir::IRModule::Create();
  for (const auto& [gvar, func] : mod->functions()) {
    if (returned.count(gvar->name_hint().str()) != 0) continue;
    if (gvar->name_hint() != "main") {
      placed.Add(gvar, func);
      continue;
    }
    const ir::Expr body = RegionInliner(returned).Mutate(func->body());
    placed.Add(gvar, ir::Function(func->params(), body, func->ret_type(), func->attrs())
                         .WithAttr(kCostsAttr, recorded));
  }
  return transform::InferType()(placed);
}

}  // namespace

transform::Pass MeasuredPlacement(const std::vector<std::string>& compilers,
                                  const Map<String, Any>& codegen_options) {
  return transform::CreateModulePass(
      [compilers, codegen_options](const ir::IRModule& mod, const transform::PassContext&) {
        return PlaceByCost(mod, compilers, codegen_options);
      },
      transform::PassInfo{"driver.MeasuredPlacement", 0, false});
}

std::vector<RegionCost> RegionCosts(const ir::IRModule& mod) {
  std::vector<RegionCost> costs;
  std::optional<Array<Any>> recorded = mod.Lookup("main").GetAttr<Array<Any>>(kCostsAttr);
  if (!recorded.has_value()) return costs;
  for (const Any& item : *recorded) {
    const auto map = item.cast<Map<String, Any>>();
    RegionCost cost;
    cost.function = map.at("function").cast<String>().str();
    cost.compiler = map.at("compiler").cast<String>().str();
    cost.compiler_seconds = map.at("compiler_seconds").cast<double>();
    cost.host_seconds = map.at("host_seconds").cast<double>();
    cost.source = map.at("source").cast<String>().str();
    cost.kept = map.at("kept").cast<bool>();
    cost.note = map.at("note").cast<String>().str();
    costs.push_back(cost);
  }
  return costs;
}

}  // namespace kiln
