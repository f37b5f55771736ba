/// The "cuda" module kind: a PTX, cubin or fatbin image and the names of the kernels it
/// defines, loaded with cudaLibraryLoadData the first time one of its kernels runs.
///
/// Reached by name (libkiln_runtime_cuda.so exports only its plugin entry point):
///   runtime.cuda.ModuleCreate(Bytes image, Array<String> kernel_names) -> Module
///   runtime.module.load_bytes.cuda(Bytes) -> Module      (the loader of SaveToBytes' output)
///
/// Launch convention of `module.GetFunction("<kernel>")`:
///
///   f(arg_0, ..., arg_{n-1}, grid_x, grid_y, grid_z, block_x, block_y, block_z
///     [, dynamic_shared_bytes])
///
/// - `n` is the kernel's parameter count, read from the loaded image (cudaFuncGetParamInfo);
///   the 6 ints after the arguments are the grid and block sizes, and a 7th, if given, the
///   bytes of dynamic shared memory. A grid or block size of 0 launches nothing. Above 48 KiB
///   of dynamic shared memory the kernel is opted in on its device, up to the device's limit
///   (227 KiB on Hopper); more is a ValueError naming that limit.
/// - A pointer parameter takes a tensor (DLTensor* or Tensor) on a CUDA device; its data
///   pointer plus byte_offset is passed.
/// - A scalar parameter is passed by its size in the image, since the image does not say its
///   type: a float value is written as a `float` (4 bytes) or `double` (8 bytes); an int value as
///   an integer of 1, 2, 4 or 8 bytes (range checked). So pass floats to float parameters: an int
///   given for a `float` parameter would be passed as an integer bit pattern.
/// - The kernel runs on the device of its tensor arguments (all on one device; device 0 when
///   there are none), on that device's default stream, ordered after earlier copies there;
///   `Sync(device_id)` waits for it and reports its asynchronous errors.
///
/// SaveToBytes layout: see common/kernel_module.h: u32 format version (1), str image, u32 kernel
/// count, str kernel name per kernel.
#ifndef KILN_BACKENDS_CUDA_CUDA_MODULE_H_
#define KILN_BACKENDS_CUDA_CUDA_MODULE_H_

#include <kiln/runtime/module.h>

#include <string>
#include <string_view>
#include <vector>

namespace kiln {
namespace cuda {

/// A module over `image` (PTX text, a cubin or a fatbin) whose functions are `kernel_names`.
/// Nothing is loaded yet, so this works without a GPU; a bad image is reported, with the JIT's
/// error log, at the first launch.
runtime::Module ModuleCreate(std::string image, std::vector<std::string> kernel_names);

/// The module saved by SaveToBytes; ValueError naming the field when `bytes` is truncated,
/// corrupt, or of a newer format version.
runtime::Module ModuleLoadFromBytes(std::string_view bytes);

}  // namespace cuda
}  // namespace kiln

#endif  // KILN_BACKENDS_CUDA_CUDA_MODULE_H_
