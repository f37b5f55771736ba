/// The "opencl" module kind: OpenCL C source and the names of the kernels it defines, built for
/// a device the first time one of its kernels runs there.
///
/// Reached by name (libkiln_runtime_opencl.so exports only its plugin entry point):
///   runtime.opencl.ModuleCreate(String source, Array<String> kernel_names) -> Module
///   runtime.module.load_bytes.opencl(Bytes) -> Module     (the loader of SaveToBytes' output)
///
/// Launch convention of `module.GetFunction("<kernel>")`:
///
///   f(arg_0, ..., arg_{n-1}, global_0 [, global_1 [, global_2]])
///
/// - `n` is the kernel's parameter count, read from the built program; the values after them
///   are the global work size, one int per dimension (1 to 3 dimensions). The work-group size
///   is left to the driver. A global size of 0 in any dimension launches nothing.
/// - A `global`/`constant` pointer parameter takes a tensor (DLTensor* or Tensor) on an OpenCL
///   device; its cl_mem is passed, as a sub-buffer when byte_offset is not 0 (which then must be
///   a multiple of the device's CL_DEVICE_MEM_BASE_ADDR_ALIGN).
/// - A scalar parameter takes an int (char, uchar, short, ushort, int, uint, long, ulong; range
///   checked) or a float or int (float, double), converted to the parameter's declared type
///   (read with -cl-kernel-arg-info). Where a driver gives no argument info, an int is passed as
///   a 32-bit `int` and a float as a 32-bit `float`.
/// - The kernel runs on the device of its tensor arguments (all on one device; device 0 when
///   there are none), enqueued on that device's default queue: it is ordered after earlier
///   copies and kernels there, and `Sync(device_id)` waits for it.
/// - `__local` pointer parameters are not supported (their size cannot be given).
///
/// SaveToBytes layout: see common/kernel_module.h: u32 format version (1), str source, u32 kernel
/// count, str kernel name per kernel.
#ifndef KILN_BACKENDS_OPENCL_OPENCL_MODULE_H_
#define KILN_BACKENDS_OPENCL_OPENCL_MODULE_H_

#include <kiln/runtime/module.h>

#include <string>
#include <vector>

namespace kiln {
namespace opencl {

/// A module over `source` whose functions are `kernel_names`. Nothing is compiled yet: a
/// syntax error surfaces, with the build log, at the first launch.
runtime::Module ModuleCreate(std::string source, std::vector<std::string> kernel_names);

/// The module saved by SaveToBytes; ValueError naming the field when `bytes` is truncated,
/// corrupt, or of a newer format version.
runtime::Module ModuleLoadFromBytes(std::string_view bytes);

}  // namespace opencl
}  // namespace kiln

#endif  // KILN_BACKENDS_OPENCL_OPENCL_MODULE_H_
