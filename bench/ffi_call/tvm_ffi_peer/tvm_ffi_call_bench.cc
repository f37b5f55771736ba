// tvm-ffi's side of the FFI call overhead benchmark: the operations of ../ffi_call_bench.cc, with
// the same benchmark names, through tvm-ffi's C++ API and C ABI. The called functions live in
// libkiln_bench_tvm_ffi_functions.so (peer_functions.cc), loaded with dlopen as Kiln loads
// libkiln_testing.so, so calls cross a DSO boundary on both sides.
//
// A program of its own rather than ffi_call_bench.cc behind a define: it builds against the
// apache-tvm-ffi wheel alone, in a CMake project that bench/ffi_call/run.py configures, and
// keeps tvm-ffi out of Kiln's build. Run through run.py, which alternates it with Kiln's.
#include <tvm/ffi/any.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/memory.h>
#include <tvm/ffi/object.h>

#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

/// The smallest object with a run-time type: a header and one int64.
class BenchObj : public tvm::ffi::Object {
 public:
  explicit BenchObj(int64_t value) : value(value) {}
  int64_t value;
  TVM_FFI_DECLARE_OBJECT_INFO_FINAL("bench.Small", BenchObj, tvm::ffi::Object);
};

// bench.add(int64, int64) -> int64 through tvm::ffi::Function: pack, call, unpack the result.
void BM_TypedCallAdd(benchmark::State& state) {
  tvm::ffi::Function add = tvm::ffi::Function::GetGlobalRequired("bench.add");
  int64_t a = 1;
  for (auto _ : state) {
    int64_t sum = add(a, int64_t{2}).cast<int64_t>();
    benchmark::DoNotOptimize(sum);
    a = sum & 0xff;
  }
}
BENCHMARK(BM_TypedCallAdd);

// bench.nop() through tvm::ffi::Function.
void BM_TypedCallNop(benchmark::State& state) {
  tvm::ffi::Function nop = tvm::ffi::Function::GetGlobalRequired("bench.nop");
  for (auto _ : state) {
    tvm::ffi::Any result = nop();
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_TypedCallNop);

// bench.nop() through the C ABI alone: TVMFFIFunctionCall on the Function handle.
void BM_CAbiCallNop(benchmark::State& state) {
  const char* name = "bench.nop";
  TVMFFIByteArray name_bytes{name, std::strlen(name)};
  TVMFFIObjectHandle nop = nullptr;
  if (TVMFFIFunctionGetGlobal(&name_bytes, &nop) != 0 || nop == nullptr) {
    state.SkipWithError("bench.nop is not registered");
    return;
  }
  for (auto _ : state) {
    TVMFFIAny result{};  // type_index kTVMFFINone (0), as the ABI asks of the caller
    int rc = TVMFFIFunctionCall(nop, nullptr, 0, &result);
    benchmark::DoNotOptimize(rc);
    benchmark::DoNotOptimize(result);
  }
  TVMFFIObjectDecRef(nop);
}
BENCHMARK(BM_CAbiCallNop);

// bench.string_len(String) with a 32-character std::string: it crosses as a borrowed C string
// (kTVMFFIRawStr) and the callee builds its String, so this includes one allocation.
void BM_TypedCallString32(benchmark::State& state) {
  tvm::ffi::Function string_len = tvm::ffi::Function::GetGlobalRequired("bench.string_len");
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
    tvm::ffi::ObjectPtr<BenchObj> obj = tvm::ffi::make_object<BenchObj>(i++);
    benchmark::DoNotOptimize(obj.get());
  }
}
BENCHMARK(BM_ObjectMakeFree);

}  // namespace

int main(int argc, char** argv) {
  // Kept loaded for the whole run: its functions stay registered while the benchmarks call them.
  if (dlopen(PEER_FUNCTIONS_LIBRARY, RTLD_NOW | RTLD_LOCAL) == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", PEER_FUNCTIONS_LIBRARY, dlerror());
    return 1;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    benchmark::RunSpecifiedBenchmarks();
  } catch (const tvm::ffi::Error& error) {
    std::fprintf(stderr, "tvm-ffi error: %s\n", error.what());
    return 1;
  }
  benchmark::Shutdown();
  return 0;
}
