/// The runtime's one thread pool, shared by Kiln's CPU kernels.
#ifndef KILN_RUNTIME_THREAD_POOL_H_
#define KILN_RUNTIME_THREAD_POOL_H_

#include <kiln/ffi/base.h>

#include <cstdint>
#include <functional>

namespace kiln {
namespace runtime {

/// Threads the pool runs work on (the caller included): KILN_NUM_THREADS when set, else the
/// cores available to this process (affinity mask and cgroup CPU quota).
KILN_API int NumThreads();

/// Splits [begin, end) into chunks of at least `grain` iterations and runs
/// `body(chunk_begin, chunk_end)` on the pool; returns when all are done. The first exception
/// thrown by a chunk is rethrown here. Nested calls run serially on the calling thread.
KILN_API void ParallelFor(int64_t begin, int64_t end, int64_t grain,
                          const std::function<void(int64_t, int64_t)>& body);

/// Runs `body(step, block)` for every step in [0, num_steps), in order, and every block in
/// [0, num_blocks): the blocks of one step in parallel, a step begun only once every block of the
/// step before it has finished. For a recurrence split into blocks of its state (a recurrent
/// layer's hidden units): one barrier per step, spun on by the threads of one region, where a
/// ParallelFor per step would pay a region's wake-up and join each time. A thread takes the same
/// block at every step when it can, so what that block reads stays in its core's cache. No thread
/// waits for a block that no thread has taken, so it finishes on however many threads join (the
/// caller alone when nested in a region). The first exception thrown by a block is rethrown
/// here; the blocks after it are skipped.
KILN_API void ParallelSteps(int64_t num_steps, int64_t num_blocks,
                            const std::function<void(int64_t step, int64_t block)>& body);

/// Tells the pool's idle workers to sleep now rather than poll for a next region: for the end
/// of a burst of regions (the graph executor calls it after each run), so that other threads of
/// the process, another library's pool say, find the cores free. The next ParallelFor wakes
/// them, which costs a wake-up that polling would have saved.
KILN_API void StopSpinning();

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_THREAD_POOL_H_
