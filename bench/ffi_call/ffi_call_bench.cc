// FFI call overhead: what one call through Kiln's calling convention costs from C++, and what
// making and freeing a small object costs. Calls go to libkiln_testing.so, loaded as a plugin,
// so they cross a DSO boundary exactly as calls into any plugin do.
//
// Run through bench/ffi_call/run.py, which checks that the machine is idle, alternates this
// program with tvm-ffi's (tvm_ffi_peer/tvm_ffi_call_bench.cc: the same benchmark names) and writes
// docs/benchmarks.md.
#include <kiln/ffi/c_api.h>
#include <kiln/ffi/plugin.h>

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

/// The smallest object with a run-time type: a header and one int64.
class BenchObj : public kiln::Object {
 public:
  static constexpr const char* _type_key = "bench.Small";
  static constexpr bool _type_final = true;
  KILN_DECLARE_OBJECT_INFO(BenchObj, kiln::Object);
  explicit BenchObj(int64_t value) : value(value) {}
  int64_t value;
};

// testing.add(int64, int64) -> int64 through kiln::Function: pack, call, unpack the result.
void BM_TypedCallAdd(benchmark::State& state) {
  kiln::Function add = kiln::Function::GetGlobalRequired("testing.add");
  int64_t a = 1;
  for (auto _ : state) {
    int64_t sum = add(a, int64_t{2}).cast<int64_t>();
    benchmark::DoNotOptimize(sum);
    a = sum & 0xff;
  }
}
BENCHMARK(BM_TypedCallAdd);

// testing.nop() through kiln::Function.
void BM_TypedCallNop(benchmark::State& state) {
  kiln::Function nop = kiln::Function::GetGlobalRequired("testing.nop");
  for (auto _ : state) {
    kiln::Any result = nop();
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_TypedCallNop);

// testing.nop() through the C ABI alone: kiln_function_call on the Function handle.
void BM_CAbiCallNop(benchmark::State& state) {
  KilnObjectHandle nop = nullptr;
  if (kiln_func_get_global_required("testing.nop", &nop) != 0) {
    state.SkipWithError("testing.nop is not registered");
    return;
  }
  for (auto _ : state) {
    KilnAny result{};
    int rc = kiln_function_call(nop, nullptr, 0, &result);
    benchmark::DoNotOptimize(rc);
    benchmark::DoNotOptimize(result);
  }
  kiln_object_dec_ref(nop);
}
BENCHMARK(BM_CAbiCallNop);

// testing.string_len(String) with a 32-character std::string: the argument crosses as a borrowed
// C string and the callee builds its String, so this includes one allocation.
void BM_TypedCallString32(benchmark::State& state) {
  kiln::Function string_len = kiln::Function::GetGlobalRequired("testing.string_len");
  const std::string text(32, 'k');
  for (auto _ : state) {
    int64_t n = string_len(text).cast<int64_t>();
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_TypedCallString32);

// make_object of a small object and its release (the last reference frees it).
void BM_ObjectMakeFree(benchmark::State& state) {
  int64_t i = 0;
  for (auto _ : state) {
    kiln::ObjectPtr<BenchObj> obj = kiln::make_object<BenchObj>(i++);
    benchmark::DoNotOptimize(obj.get());
  }
}
BENCHMARK(BM_ObjectMakeFree);

}  // namespace

int main(int argc, char** argv) {
  try {
    kiln::LoadPlugin(KILN_TESTING_PLUGIN);
  } catch (const kiln::Error& error) {
    std::fprintf(stderr, "cannot load %s: %s\n", KILN_TESTING_PLUGIN, error.what());
    return 1;
  }
  benchmark::AddCustomContext("kiln_compiler", KILN_BENCH_COMPILER);
  benchmark::AddCustomContext("kiln_build_type", KILN_BENCH_BUILD_TYPE);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
