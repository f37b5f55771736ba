// What this CPU can run, asked by the kernels that have ISA-specific builds and by the passes
// that choose work for them (the compiler does not link the kernels, hence inline).
#ifndef KILN_SRC_KERNELS_CPU_CPU_FEATURES_H_
#define KILN_SRC_KERNELS_CPU_CPU_FEATURES_H_

namespace kiln {
namespace kernels {
namespace cpu {

/// Whether this CPU runs code built for x86-64-v4 (AVX-512 F, VL, BW and DQ): what a kernel
/// with a `target("arch=x86-64-v4")` variant asks before taking it.
inline bool CpuHasX86_64V4() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_CPU_FEATURES_H_
