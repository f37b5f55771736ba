// Allocation cost: runtime::Empty (the caching allocator plus the Tensor object around the
// block) against malloc+free and aligned_alloc+free, for tensors of 64 B to 64 MiB.
// Each iteration allocates and frees one block of the given size; nothing touches the memory,
// so this measures the allocator, not page faults.
#include <kiln/runtime/memory.h>
#include <benchmark/benchmark.h>

#include <cstdlib>

namespace {

constexpr DLDevice kCpu{kDLCPU, 0};
constexpr DLDataType kUInt8{kDLUInt, 8, 1};

void BM_KilnEmpty(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  kiln::runtime::Empty({bytes}, kUInt8, kCpu);  // warm the cache: steady state is what we time
  for (auto _ : state) {
    kiln::Tensor tensor = kiln::runtime::Empty({bytes}, kUInt8, kCpu);
    benchmark::DoNotOptimize(tensor.data());
  }
  state.SetLabel("caching allocator + Tensor object");
}

void BM_Malloc(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* ptr = std::malloc(bytes);
    benchmark::DoNotOptimize(ptr);
    std::free(ptr);
  }
}

void BM_AlignedAlloc(benchmark::State& state) {
  // aligned_alloc wants a size that is a multiple of the alignment; all sizes here are.
  const size_t bytes = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* ptr = std::aligned_alloc(256, bytes);
    benchmark::DoNotOptimize(ptr);
    std::free(ptr);
  }
  state.SetLabel("256-byte alignment, as Empty gives");
}

void Sizes(benchmark::internal::Benchmark* bench) {
  for (int64_t bytes : {int64_t{64}, int64_t{4} << 10, int64_t{1} << 20, int64_t{64} << 20}) {
    bench->Arg(bytes);
  }
}

BENCHMARK(BM_KilnEmpty)->Apply(Sizes);
BENCHMARK(BM_Malloc)->Apply(Sizes);
BENCHMARK(BM_AlignedAlloc)->Apply(Sizes);

}  // namespace

BENCHMARK_MAIN();
