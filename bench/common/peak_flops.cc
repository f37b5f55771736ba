// Measured peak fp32 throughput of this machine: independent fused multiply-adds on the widest
// vectors the compiler was allowed (-march=native), on T threads, one per physical core first
// and each pinned to its CPU. bench/models/run.py runs it before the models and reports every
// GFLOP/s figure as a share of it.
//
//   kiln_peak_flops [--seconds S] T ...     T: a thread count, or "cores" (one per core);
//                                           none: 1 and cores
//
// Prints one JSON line per T: {"threads": T, "cpus": [...], "isa": "...", "vector_bits": N,
// "gflops": G}, G being the best of several repetitions (the peak, not a typical speed).

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <immintrin.h>

namespace {

// Enough independent accumulators to cover FMA latency x FMA units (4 x 2 on current x86
// cores) with room to spare; 16 vectors plus 2 constants still fit in the register file.
constexpr int kAccumulators = 16;
constexpr int kRepetitions = 5;

#if defined(__AVX512F__)
using Vector = __m512;
constexpr int kLanes = 16;
constexpr const char* kIsa = "AVX-512 FMA";
Vector Splat(float value) { return _mm512_set1_ps(value); }
Vector Fma(Vector a, Vector b, Vector c) { return _mm512_fmadd_ps(a, b, c); }
#elif defined(__AVX__) && defined(__FMA__)
using Vector = __m256;
constexpr int kLanes = 8;
constexpr const char* kIsa = "AVX2 FMA";
Vector Splat(float value) { return _mm256_set1_ps(value); }
Vector Fma(Vector a, Vector b, Vector c) { return _mm256_fmadd_ps(a, b, c); }
#else
// No FMA: a multiply and an add, which is also what the peak is made of on such a CPU.
using Vector = __m128;
constexpr int kLanes = 4;
constexpr const char* kIsa = "SSE mul+add";
Vector Splat(float value) { return _mm_set1_ps(value); }
Vector Fma(Vector a, Vector b, Vector c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
#endif

constexpr double kFlopsPerIteration = 2.0 * kAccumulators * kLanes;

float Sum(Vector v) {
  float lanes[kLanes];
  std::memcpy(lanes, &v, sizeof(v));
  float total = 0;
  for (float lane : lanes) total += lane;
  return total;
}

// Where the threads leave their results, so that the compiler cannot drop the loops.
std::atomic<float> g_sink{0};

// `iterations` rounds of kAccumulators independent FMAs. acc = acc * b + c converges to
// c / (1 - b), so the values never overflow nor turn denormal.
float FmaLoop(std::int64_t iterations) {
  const Vector b = Splat(0.999F);
  const Vector c = Splat(1e-3F);
  Vector acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i) acc[i] = Splat(static_cast<float>(i));
  for (std::int64_t n = 0; n < iterations; ++n) {
    for (auto& a : acc) a = Fma(a, b, c);
  }
  float total = 0;
  for (const auto& a : acc) total += Sum(a);
  return total;
}

// (package, core) of a CPU from sysfs; without sysfs every CPU counts as its own core.
std::pair<int, int> CoreOf(int cpu) {
  const std::string topology = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
  int package = -1;
  int core = cpu;
  std::ifstream(topology + "physical_package_id") >> package;
  std::ifstream(topology + "core_id") >> core;
  return {package, core};
}

// The CPUs this process may run on, one per physical core first, then their hyperthread
// siblings: T threads pinned to the first T entries use T cores when there are that many.
std::vector<int> CpusOnePerCoreFirst() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    throw std::runtime_error("sched_getaffinity failed");
  }
  std::vector<int> first;
  std::vector<int> siblings;
  std::set<std::pair<int, int>> cores_seen;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed) == 0) continue;
    (cores_seen.insert(CoreOf(cpu)).second ? first : siblings).push_back(cpu);
  }
  first.insert(first.end(), siblings.begin(), siblings.end());
  return first;
}

int PhysicalCores(const std::vector<int>& cpus) {
  std::set<std::pair<int, int>> cores;
  for (int cpu : cpus) cores.insert(CoreOf(cpu));
  return static_cast<int>(cores.size());
}

void PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // Pinning only steadies the numbers; unpinned threads still measure the peak.
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// Seconds for `threads` threads to each run FmaLoop(iterations), started together.
double TimeThreads(const std::vector<int>& cpus, std::int64_t iterations) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> workers;
  workers.reserve(cpus.size());
  for (int cpu : cpus) {
    workers.emplace_back([&, cpu] {
      PinTo(cpu);
      ready.fetch_add(1);
      // Yielding, so that more threads than CPUs still all get to the start line.
      while (!go.load()) std::this_thread::yield();
      const float total = FmaLoop(iterations);
      float expected = g_sink.load();
      while (!g_sink.compare_exchange_weak(expected, expected + total)) {
      }
    });
  }
  while (ready.load() < static_cast<int>(cpus.size())) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true);
  for (auto& worker : workers) worker.join();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count();
}

// GFLOP/s of `threads` threads: calibrated so one repetition lasts about `seconds`, best of
// kRepetitions after a warm-up that lets the clock settle (AVX-512 frequency licences).
double PeakGflops(const std::vector<int>& cpus, double seconds) {
  std::int64_t iterations = 1 << 16;
  while (TimeThreads(cpus, iterations) < seconds / 4) iterations *= 2;
  const double per_call = TimeThreads(cpus, iterations);
  iterations = std::max<std::int64_t>(
      1, static_cast<std::int64_t>(static_cast<double>(iterations) * seconds / per_call));
  double best = 0;
  for (int r = 0; r < kRepetitions; ++r) {
    const double elapsed = TimeThreads(cpus, iterations);
    const double flops =
        kFlopsPerIteration * static_cast<double>(iterations) * static_cast<double>(cpus.size());
    best = std::max(best, flops / elapsed / 1e9);
  }
  return best;
}

std::string Json(const std::vector<int>& cpus, double gflops) {
  std::ostringstream out;
  out << R"({"threads": )" << cpus.size() << R"(, "cpus": [)";
  for (std::size_t i = 0; i < cpus.size(); ++i) out << (i != 0 ? ", " : "") << cpus[i];
  out << R"(], "isa": ")" << kIsa << R"(", "vector_bits": )" << kLanes * 32 << R"(, "gflops": )"
      << gflops << "}";
  return out.str();
}

int ParseThreads(const std::string& arg, const std::vector<int>& cpus) {
  if (arg == "cores") return PhysicalCores(cpus);
  std::size_t used = 0;
  int threads = 0;
  try {
    threads = std::stoi(arg, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != arg.size() || threads < 1) {
    throw std::invalid_argument("thread count must be a positive integer or \"cores\", not \"" +
                                arg + "\"");
  }
  return threads;
}

double ParseSeconds(const std::string& arg) {
  std::size_t used = 0;
  double seconds = 0;
  try {
    seconds = std::stod(arg, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != arg.size() || !(seconds > 0)) {
    throw std::invalid_argument("--seconds must be a positive number, not \"" + arg + "\"");
  }
  return seconds;
}

int Run(int argc, char** argv) {
  const std::vector<int> cpus = CpusOnePerCoreFirst();
  double seconds = 0.2;
  std::vector<std::string> counts;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      seconds = ParseSeconds(argv[++i]);
    } else {
      counts.push_back(arg);
    }
  }
  if (counts.empty()) counts = {"1", "cores"};
  std::vector<int> thread_counts;
  for (const std::string& count : counts) {
    const int threads = ParseThreads(count, cpus);
    // "1 2 cores" on two cores measures 2 threads once.
    if (std::find(thread_counts.begin(), thread_counts.end(), threads) == thread_counts.end()) {
      thread_counts.push_back(threads);
    }
  }
  for (int threads : thread_counts) {
    // More threads than CPUs wrap around: the peak cannot grow past one thread per CPU.
    std::vector<int> pinned(threads);
    for (int t = 0; t < threads; ++t) pinned[t] = cpus[t % cpus.size()];
    std::cout << Json(pinned, PeakGflops(pinned, seconds)) << std::endl;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& error) {
    std::cerr << "kiln_peak_flops: " << error.what() << "\n";
    return 2;
  }
}
