// The runtime's thread pool: NumThreads and ParallelFor (kiln/runtime/thread_pool.h).
//
// One pool per process, started on the first parallel region with NumThreads() - 1 workers
// (the calling thread is the last one). A region is published as a Job; threads take chunks
// from it with one atomic increment each, so uneven chunks balance themselves. Between regions
// workers spin for a short while and then sleep on a condition variable: back-to-back regions
// (one per operator of a model) find them awake, an idle process costs no CPU.
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <kiln/ffi/array.h>
#include <kiln/ffi/registry.h>
#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "thread_pool_internal.h"

namespace kiln {
namespace runtime {
namespace {

// ---------------------------------------------------------------------------------------------
// How many threads: KILN_NUM_THREADS, else the affinity mask capped by the cgroup CPU quota
// ---------------------------------------------------------------------------------------------

/// The CPUs this process may run on, in order; empty when the mask cannot be read. CPU_ALLOC
/// sizes the mask for machines with more CPUs than the fixed cpu_set_t holds (1024).
std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  for (int max_cpus = CPU_SETSIZE; max_cpus <= (1 << 16); max_cpus *= 2) {
    cpu_set_t* set = CPU_ALLOC(max_cpus);
    if (set == nullptr) break;
    const size_t size = CPU_ALLOC_SIZE(max_cpus);
    const bool ok = sched_getaffinity(0, size, set) == 0;
    const int error = errno;
    for (int cpu = 0; ok && cpu < max_cpus; ++cpu) {
      if (CPU_ISSET_S(cpu, size, set)) cpus.push_back(cpu);
    }
    CPU_FREE(set);
    if (ok || error != EINVAL) break;  // EINVAL: the mask was too small, try a larger one
  }
  return cpus;
}

int AffinityCpuCount() {
  const auto allowed = static_cast<int>(AllowedCpus().size());
  if (allowed > 0) return allowed;
  return static_cast<int>(std::max(std::thread::hardware_concurrency(), 1u));
}

/// Restricts `thread` to `cpu`; false when the system refuses.
bool PinThread(pthread_t thread, int cpu) {
  cpu_set_t* set = CPU_ALLOC(cpu + 1);
  if (set == nullptr) return false;
  const size_t size = CPU_ALLOC_SIZE(cpu + 1);
  CPU_ZERO_S(size, set);
  CPU_SET_S(cpu, size, set);
  const bool ok = pthread_setaffinity_np(thread, size, set) == 0;
  CPU_FREE(set);
  return ok;
}

std::optional<std::string> ReadFirstLine(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  if (!file || !std::getline(file, line)) return std::nullopt;
  return line;
}

bool IsDirectory(const std::string& path) { return access((path + "/.").c_str(), F_OK) == 0; }

/// This process's cgroup path for a v1 controller ("cpu"), or for v2 when `controller` is
/// empty, from /proc/self/cgroup lines "<id>:<controller,...>:<path>".
std::string OwnCgroupPath(const std::string& controller) {
  std::ifstream file("/proc/self/cgroup");
  for (std::string line; std::getline(file, line);) {
    const size_t first = line.find(':');
    const size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    const bool match = controller.empty()
                           ? controllers == ",,"
                           : controllers.find("," + controller + ",") != std::string::npos;
    if (match) return line.substr(second + 1);
  }
  return "/";
}

/// The cgroup folders whose CPU limits apply to us, innermost first: our own cgroup under
/// `mount` and each ancestor up to the mount. Inside a container with its own cgroup namespace
/// the path may not exist under the mount, whose root is then our cgroup.
std::vector<std::string> CgroupDirs(const std::string& mount, const std::string& own_path) {
  std::vector<std::string> dirs;
  std::string path = own_path == "/" ? "" : own_path;
  if (!IsDirectory(mount + path)) path.clear();
  for (;;) {
    dirs.push_back(mount + path);
    if (path.empty()) return dirs;
    path.erase(path.rfind('/'));
  }
}

std::optional<int64_t> ReadWholeNumber(const std::string& path) {
  std::optional<std::string> line = ReadFirstLine(path);
  if (!line.has_value()) return std::nullopt;
  return internal::ParseWholeNumber<int64_t>(internal::TrimSpaces(*line));
}

std::optional<int> Tighter(std::optional<int> limit, std::optional<int> cpus) {
  if (!cpus.has_value()) return limit;
  return limit.has_value() ? std::min(*limit, *cpus) : *cpus;
}

/// cgroup v2: the tightest cpu.max of our cgroup and its ancestors.
std::optional<int> CgroupV2CpuLimit() {
  std::optional<int> limit;
  for (const std::string& dir : CgroupDirs("/sys/fs/cgroup", OwnCgroupPath(""))) {
    if (std::optional<std::string> line = ReadFirstLine(dir + "/cpu.max")) {
      limit = Tighter(limit, internal::CpusFromCgroupV2CpuMax(*line));
    }
  }
  return limit;
}

/// cgroup v1: the tightest CFS quota of our cgroup and its ancestors under `mount`.
std::optional<int> CgroupV1CpuLimit(const std::string& mount) {
  std::optional<int> limit;
  for (const std::string& dir : CgroupDirs(mount, OwnCgroupPath("cpu"))) {
    const std::optional<int64_t> quota = ReadWholeNumber(dir + "/cpu.cfs_quota_us");
    const std::optional<int64_t> period = ReadWholeNumber(dir + "/cpu.cfs_period_us");
    if (quota.has_value() && period.has_value()) {
      limit = Tighter(limit, internal::CpusFromCfsQuota(*quota, *period));
    }
  }
  return limit;
}

/// The CPUs our cgroup's quota allows; nullopt without a quota (or without cgroups).
std::optional<int> CgroupCpuLimit() {
  if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) return CgroupV2CpuLimit();
  // v1 mounts the cpu controller alone or together with cpuacct, depending on the system.
  for (const char* mount : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
    if (IsDirectory(mount)) return CgroupV1CpuLimit(mount);
  }
  return std::nullopt;
}

int ComputeNumThreads() {
  if (std::optional<int> requested =
          internal::ParseNumThreadsEnv(std::getenv("KILN_NUM_THREADS"))) {
    return *requested;
  }
  const int cores = AffinityCpuCount();
  const std::optional<int> quota = CgroupCpuLimit();
  return quota.has_value() ? std::min(cores, *quota) : cores;
}

// ---------------------------------------------------------------------------------------------
// The pool
// ---------------------------------------------------------------------------------------------

/// Set on workers for their whole life and on a caller while it runs a region: a ParallelFor
/// seen with it set is nested and runs serially, which cannot deadlock or oversubscribe.
thread_local bool t_in_parallel_region = false;

class ParallelRegionGuard {
 public:
  ParallelRegionGuard() { t_in_parallel_region = true; }
  ~ParallelRegionGuard() { t_in_parallel_region = false; }
  ParallelRegionGuard(const ParallelRegionGuard&) = delete;
  ParallelRegionGuard& operator=(const ParallelRegionGuard&) = delete;
};

/// Regions are cut into up to this many chunks per thread, so that a thread that started late
/// or ran slow chunks still finds work left.
constexpr int64_t kChunksPerThread = 4;

/// How long an idle worker keeps polling for the next region before it sleeps, and how long a
/// caller polls for the workers to leave its region before it sleeps. Long enough to bridge the
/// gap between two operators, short enough not to burn a shared machine's cores: a sleep costs a
/// futex wake-up on the other side, tens of microseconds in a VM, and a transformer layer runs
/// dozens of small regions. Measured with bench/models at 2 threads: the caller's polling took
/// the BERT encoder from 11.4 to 7.8 ms; polling 300 us instead of 50 made ResNets slower when
/// other thread pools (oneDNN's, PyTorch's) share the process.
constexpr std::chrono::microseconds kSpinTime(50);

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Polls `done` until it holds or kSpinTime has passed; the caller then sleeps if it must.
template <typename Predicate>
void SpinUntil(Predicate done) {
  const auto until = std::chrono::steady_clock::now() + kSpinTime;
  while (!done() && std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 64; ++i) CpuRelax();
  }
}

/// One ParallelFor region, as its threads see it. It lives on the caller's stack: the caller
/// does not return before every worker that joined the job has left it.
class Job {
 public:
  Job(int64_t begin, int64_t size, int64_t num_chunks,
      const std::function<void(int64_t, int64_t)>& body)
      : body_(body),
        begin_(begin),
        num_chunks_(num_chunks),
        chunk_size_(size / num_chunks),
        remainder_(size % num_chunks) {}

  /// Runs chunks until none is left or one has thrown.
  void RunChunks() {
    for (int64_t i = next_.fetch_add(1, std::memory_order_relaxed); i < num_chunks_;
         i = next_.fetch_add(1, std::memory_order_relaxed)) {
      if (failed_.load(std::memory_order_relaxed)) return;
      try {
        body_(ChunkBegin(i), ChunkBegin(i + 1));
      } catch (...) {
        RecordError(std::current_exception());
      }
    }
  }
  void RethrowIfFailed() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  /// Equal chunks, the first `remainder_` one iteration longer: each has at least
  /// size / num_chunks >= grain iterations (see ParallelFor), none is a short leftover.
  int64_t ChunkBegin(int64_t i) const { return begin_ + i * chunk_size_ + std::min(i, remainder_); }
  void RecordError(std::exception_ptr error) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (!error_) error_ = std::move(error);
    failed_.store(true, std::memory_order_relaxed);
  }

  const std::function<void(int64_t, int64_t)>& body_;
  const int64_t begin_;
  const int64_t num_chunks_;
  const int64_t chunk_size_;
  const int64_t remainder_;
  std::atomic<int64_t> next_{0};
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

/// Keeps each worker on a CPU of its own, away from the thread that calls ParallelFor, when the
/// pool has exactly one thread per CPU the process may use (and KILN_BIND_THREADS is not 0).
///
/// Why: a worker that slept (another library's threads ran meanwhile, say PyTorch's) is woken
/// onto the CPU of the thread that woke it when the scheduler sees no idle CPU sharing a cache
/// with it; the two then share one core until load balancing moves one, milliseconds later.
/// bench/models at 2 threads (resnet50 interleaved with PyTorch): Kiln's median was 43-67 ms
/// in four runs with floating workers (KILN_BIND_THREADS=0), 36-38 ms in seven pinned. The caller
/// is never pinned (it is the user's thread); when it turns up on a worker's CPU, that worker moves
/// to the CPU the caller left.
class WorkerPlacement {
 public:
  explicit WorkerPlacement(int num_threads) {
    const char* bind = std::getenv("KILN_BIND_THREADS");
    if (bind != nullptr && std::string(bind) == "0") return;
    cpus_ = AllowedCpus();
    // The calling thread may have been bound to fewer CPUs than the process has (an OpenMP
    // runtime with OMP_PROC_BIND binds its main thread): then the online CPUs, when the pool
    // has one thread for each.
    if (static_cast<int>(cpus_.size()) < num_threads &&
        static_cast<int>(std::thread::hardware_concurrency()) == num_threads) {
      cpus_.resize(num_threads);
      std::iota(cpus_.begin(), cpus_.end(), 0);
    }
    if (static_cast<int>(cpus_.size()) != num_threads) cpus_.clear();
  }

  /// Pins the workers (their handles) on the CPUs the caller is not on.
  void Start(const std::vector<pthread_t>& workers) {
    if (cpus_.empty()) return;
    workers_ = workers;
    caller_cpu_ = sched_getcpu();
    size_t next = 0;
    for (pthread_t worker : workers_) {
      if (cpus_[next] == caller_cpu_) ++next;
      worker_cpus_.push_back(cpus_[next++]);
      PinThread(worker, worker_cpus_.back());
    }
  }

  /// Called by the caller before each region: moves the worker on its CPU, if any.
  void KeepOffCaller() {
    if (workers_.empty()) return;
    const int cpu = sched_getcpu();
    if (cpu == caller_cpu_) return;
    caller_cpu_ = cpu;
    auto taken = std::find(worker_cpus_.begin(), worker_cpus_.end(), cpu);
    if (taken == worker_cpus_.end()) return;
    for (int free_cpu : cpus_) {
      if (free_cpu == cpu ||
          std::find(worker_cpus_.begin(), worker_cpus_.end(), free_cpu) != worker_cpus_.end()) {
        continue;
      }
      *taken = free_cpu;
      PinThread(workers_[taken - worker_cpus_.begin()], free_cpu);
      return;
    }
  }

 private:
  std::vector<int> cpus_;  ///< allowed CPUs; empty when workers float
  std::vector<pthread_t> workers_;
  std::vector<int> worker_cpus_;
  int caller_cpu_ = -1;
};

class ThreadPool {
 public:
  explicit ThreadPool(int num_workers)
      : num_workers_(num_workers), placement_(num_workers + 1), worker_ids_(num_workers, 0) {
    std::vector<pthread_t> handles;
    for (int i = 0; i < num_workers; ++i) {
      std::thread worker([this, i] { WorkerLoop(i); });
      handles.push_back(worker.native_handle());
      worker.detach();  // the pool is never destroyed (see Pool())
    }
    placement_.Start(handles);
    // Once started, every worker is named and has its id: what WorkerThreadIds reports (and
    // /proc shows) never depends on how fast the workers got going.
    std::unique_lock<std::mutex> lock(mutex_);
    started_.wait(lock, [this] { return num_started_ == num_workers_; });
  }

  /// The kernel thread ids (as /proc/self/task lists them) of the workers.
  const std::vector<int64_t>& WorkerThreadIds() const { return worker_ids_; }

  /// Runs `job` on the caller and the workers. False, with nothing run, when another thread's
  /// job holds the pool: running alone then beats waiting behind it.
  bool TryRun(Job& job, int64_t num_chunks) {
    std::unique_lock<std::mutex> running(run_mutex_, std::try_to_lock);
    if (!running.owns_lock()) return false;
    placement_.KeepOffCaller();
    spinning_allowed_.store(true, std::memory_order_relaxed);
    Publish(&job);
    WakeWorkers(num_chunks - 1);
    job.RunChunks();
    // Every chunk is now taken; the ones still running belong to workers counted in active_.
    SpinUntil([this] { return active_.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> lock(mutex_);
    job_ = nullptr;
    left_.wait(lock, [this] { return active_.load(std::memory_order_relaxed) == 0; });
    return true;
  }

  /// Idle workers sleep now instead of polling until kSpinTime has passed.
  void StopSpinning() { spinning_allowed_.store(false, std::memory_order_relaxed); }

 private:
  void Publish(Job* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    generation_.fetch_add(1, std::memory_order_release);
  }
  void WakeWorkers(int64_t wanted) {
    if (wanted >= num_workers_) {
      wake_.notify_all();
    } else {
      for (int64_t i = 0; i < wanted; ++i) wake_.notify_one();
    }
  }

  void WorkerLoop(int index) {
    const std::string name = "kiln-worker-" + std::to_string(index);
    pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
    t_in_parallel_region = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      worker_ids_[index] = static_cast<int64_t>(syscall(SYS_gettid));
      if (++num_started_ == num_workers_) started_.notify_one();
    }
    uint64_t seen = 0;
    for (;;) {
      if (Job* job = WaitForJob(seen)) {
        job->RunChunks();
        Leave();
      }
    }
  }

  /// Waits for a generation after `seen` and joins its job; nullptr when the job was over by
  /// the time this worker looked.
  Job* WaitForJob(uint64_t& seen) {
    SpinUntil([&] {
      return generation_.load(std::memory_order_acquire) != seen ||
             !spinning_allowed_.load(std::memory_order_relaxed);
    });
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
    seen = generation_.load(std::memory_order_relaxed);
    if (job_ == nullptr) return nullptr;
    ++active_;
    return job_;
  }

  void Leave() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (active_.fetch_sub(1, std::memory_order_release) == 1) left_.notify_one();
  }

  const int num_workers_;
  std::mutex run_mutex_;  // one job at a time; also guards placement_
  WorkerPlacement placement_;
  std::mutex mutex_;  // guards job_ and changes of active_ and of the generation
  std::condition_variable wake_;
  std::condition_variable left_;
  std::atomic<uint64_t> generation_{0};
  Job* job_ = nullptr;
  std::atomic<int> active_{0};  // workers in job_; also read unlocked by the caller's polling
  std::atomic<bool> spinning_allowed_{true};  // cleared by StopSpinning until the next region
  std::vector<int64_t> worker_ids_;           // written once by each worker, under mutex_
  int num_started_ = 0;                       // guarded by mutex_
  std::condition_variable started_;
};

std::atomic<ThreadPool*> g_pool{nullptr};
std::mutex g_pool_mutex;

/// The pool, started on first use and never destroyed: joining workers from a static
/// destructor races with other libraries' teardown, and the OS reclaims the threads anyway.
/// A forked child has none of the parent's threads, so it starts a pool of its own.
ThreadPool& Pool() {
  if (ThreadPool* pool = g_pool.load(std::memory_order_acquire)) return *pool;
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  if (g_pool.load(std::memory_order_relaxed) == nullptr) {
    [[maybe_unused]] static const bool at_fork_registered = [] {
      pthread_atfork(nullptr, nullptr, [] { g_pool.store(nullptr, std::memory_order_relaxed); });
      return true;
    }();
    g_pool.store(new ThreadPool(NumThreads() - 1), std::memory_order_release);
  }
  return *g_pool.load(std::memory_order_relaxed);
}

}  // namespace

int NumThreads() {
  // Computed once: the thread count must not change under a pool that is already running.
  // A bad KILN_NUM_THREADS throws here, and again on every later call.
  static const int num_threads = ComputeNumThreads();
  return num_threads;
}

void ParallelFor(int64_t begin, int64_t end, int64_t grain,
                 const std::function<void(int64_t, int64_t)>& body) {
  int64_t size = 0;
  if (end <= begin) return;
  KILN_CHECK(!__builtin_sub_overflow(end, begin, &size), ValueError)
      << "ParallelFor range [" << begin << ", " << end << ") has more than 2^63 iterations";
  const int64_t threads = NumThreads();
  const int64_t num_chunks =
      std::min(size / std::max<int64_t>(grain, 1), threads * kChunksPerThread);
  if (t_in_parallel_region || threads == 1 || num_chunks <= 1) {
    body(begin, end);
    return;
  }
  Job job(begin, size, num_chunks, body);
  {
    ParallelRegionGuard guard;
    if (!Pool().TryRun(job, num_chunks)) {
      body(begin, end);
      return;
    }
  }
  job.RethrowIfFailed();
}

namespace {

/// What the threads of one ParallelSteps share: the step each block is to run next, how many
/// blocks have finished over all steps, and the step under way. A block of step s is taken by
/// the thread that moves its `next` from s to s + 1, so each runs exactly once.
class StepSchedule {
 public:
  StepSchedule(int64_t num_steps, int64_t num_blocks,
               const std::function<void(int64_t, int64_t)>& body)
      : num_steps_(num_steps), num_blocks_(num_blocks), body_(body), next_(num_blocks) {}

  /// Participant p's part: every step it finds under way, trying block p first.
  void Run(int64_t p) {
    for (int64_t step = current_.load(std::memory_order_acquire); step < num_steps_;
         step = current_.load(std::memory_order_acquire)) {
      for (int64_t i = 0; i < num_blocks_; ++i) TryBlock(step, (p + i) % num_blocks_);
      // Every block of `step` is taken; the ones still running belong to threads that are.
      for (int64_t spins = 0; current_.load(std::memory_order_acquire) == step; ++spins) {
        if (spins < kSpinsBeforeYield) {
          CpuRelax();
        } else {
          std::this_thread::yield();  // the thread running the last block may be descheduled
        }
      }
    }
  }

  void RethrowIfFailed() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static constexpr int64_t kSpinsBeforeYield = int64_t{1} << 14;

  /// Padded: the blocks' counters are written by different threads at every step.
  struct alignas(64) NextStep {
    std::atomic<int64_t> step{0};
  };

  void TryBlock(int64_t step, int64_t block) {
    int64_t expected = step;
    if (!next_[static_cast<size_t>(block)].step.compare_exchange_strong(
            expected, step + 1, std::memory_order_acq_rel)) {
      return;
    }
    if (!failed_.load(std::memory_order_relaxed)) {
      try {
        body_(step, block);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
      }
    }
    // The last block of a step publishes every block's writes with the next step's number.
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == (step + 1) * num_blocks_) {
      current_.store(step + 1, std::memory_order_release);
    }
  }

  const int64_t num_steps_;
  const int64_t num_blocks_;
  const std::function<void(int64_t, int64_t)>& body_;
  std::vector<NextStep> next_;
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<int64_t> current_{0};
  std::atomic<bool> failed_{false};
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

}  // namespace

void ParallelSteps(int64_t num_steps, int64_t num_blocks,
                   const std::function<void(int64_t, int64_t)>& body) {
  if (num_steps <= 0 || num_blocks <= 0) return;
  StepSchedule schedule(num_steps, num_blocks, body);
  const int64_t participants = std::min<int64_t>(NumThreads(), num_blocks);
  ParallelFor(0, participants, 1, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) schedule.Run(p);
  });
  schedule.RethrowIfFailed();
}

void StopSpinning() {
  if (ThreadPool* pool = g_pool.load(std::memory_order_acquire)) pool->StopSpinning();
}

KILN_REGISTER_GLOBAL("runtime.NumThreads").set_body_typed([]() -> int64_t { return NumThreads(); });

// ParallelFor for C code (the loops the tensor-level IR's C codegen makes parallel): `body` is
// `int (*)(int64_t begin, int64_t end, void* closure)`, returning 0, or -1 with an error raised
// on its thread, which is rethrown on the caller's.
KILN_REGISTER_GLOBAL("runtime.ParallelForC")
    .set_body_typed([](int64_t begin, int64_t end, int64_t grain, void* body, void* closure) {
      using Body = int (*)(int64_t, int64_t, void*);
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): a C function pointer
      const auto call = reinterpret_cast<Body>(body);
      ParallelFor(begin, end, std::max<int64_t>(grain, 1),
                  [&](int64_t chunk_begin, int64_t chunk_end) {
                    if (call(chunk_begin, chunk_end, closure) != 0) detail::ThrowRaised();
                  });
    });

// Starts the pool when it has not started yet, and lists its workers' thread ids.
KILN_REGISTER_GLOBAL("runtime.ThreadPoolWorkerThreadIds").set_body_typed([]() {
  return Array<int64_t>(Pool().WorkerThreadIds());
});

}  // namespace runtime
}  // namespace kiln
