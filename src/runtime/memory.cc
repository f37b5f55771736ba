// Tensor memory (kiln/runtime/memory.h): Empty through the caching allocators, CopyTensor
// through the device APIs, and the "runtime.*" globals the bindings call.
#include <unistd.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/runtime/device_api.h>
#include <kiln/runtime/memory.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "caching_allocator_internal.h"
#include "tensor_util_internal.h"

namespace kiln {
namespace runtime {
namespace {

using internal::CachingAllocator;

std::string Describe(const std::vector<int64_t>& shape, DLDataType dtype, DLDevice device) {
  std::ostringstream os;
  os << "a tensor of shape " << Shape(shape) << " " << DataTypeToString(dtype) << " on "
     << internal::DeviceToString(device);
  return os.str();
}

/// Bytes of a compact tensor; a ValueError naming the shape and dtype when they cannot describe
/// one (a negative extent, an empty dtype, a size past what an address space holds).
size_t CompactBytes(const std::vector<int64_t>& shape, DLDataType dtype) {
  KILN_CHECK(dtype.bits > 0 && dtype.lanes > 0, ValueError)
      << "Empty needs a dtype with bits and lanes, got code " << int{dtype.code} << " bits "
      << int{dtype.bits} << " lanes " << dtype.lanes;
  int64_t bytes = ElementBytes(dtype);
  for (int64_t extent : shape) {
    KILN_CHECK(extent >= 0, ValueError)
        << "Empty: extents cannot be negative, got shape " << Shape(shape);
    KILN_CHECK(!__builtin_mul_overflow(bytes, extent, &bytes), ValueError)
        << "Empty: shape " << Shape(shape) << " of " << DataTypeToString(dtype)
        << " needs more than 2^63 bytes";
  }
  return static_cast<size_t>(bytes);
}

/// The device kind whose API copies between `from` and `to`: the one that is not the CPU (a
/// backend copies to and from host memory), the CPU when both are.
int32_t CopyDeviceType(DLDevice from, DLDevice to) {
  if (from.device_type == kDLCPU) return to.device_type;
  if (to.device_type == kDLCPU || to.device_type == from.device_type) return from.device_type;
  KILN_THROW(ValueError) << "CopyTensor cannot copy from " << internal::DeviceToString(from)
                         << " to " << internal::DeviceToString(to)
                         << " directly; copy through a cpu tensor";
}

void CheckCopyable(const Tensor& from, const Tensor& to) {
  KILN_CHECK(from.defined() && to.defined(), ValueError)
      << "CopyTensor needs two tensors, got an undefined " << (from.defined() ? "to" : "from");
  const DLTensor& src = from.dl_tensor();
  const DLTensor& dst = to.dl_tensor();
  KILN_CHECK(std::equal(src.shape, src.shape + src.ndim, dst.shape, dst.shape + dst.ndim),
             ValueError)
      << "CopyTensor needs equal shapes, got from " << internal::ShapeToString(src) << " to "
      << internal::ShapeToString(dst);
  KILN_CHECK(DataTypeEqual(src.dtype, dst.dtype), ValueError)
      << "CopyTensor needs equal dtypes, got from " << DataTypeToString(src.dtype) << " to "
      << DataTypeToString(dst.dtype);
  const bool on_cpu = src.device.device_type == kDLCPU && dst.device.device_type == kDLCPU;
  for (const auto& [tensor, role] : {std::pair{&src, "from"}, std::pair{&dst, "to"}}) {
    KILN_CHECK(on_cpu || IsCompact(*tensor), ValueError)
        << "CopyTensor copies strided tensors on the cpu only; `" << role << "` of shape "
        << internal::ShapeToString(*tensor) << " on " << internal::DeviceToString(tensor->device)
        << " is strided (copy through a compact cpu tensor)";
  }
}

/// Stride of axis `axis` in elements (DLPack: no strides means compact row-major).
int64_t StrideOf(const DLTensor& tensor, int axis) {
  if (tensor.strides != nullptr) return tensor.strides[axis];
  int64_t stride = 1;
  for (int i = axis + 1; i < tensor.ndim; ++i) stride *= tensor.shape[i];
  return stride;
}

/// Copies the elements of `from` into `to` (both on the cpu, same shape and dtype), whatever
/// their strides: numpy views (transposed, sliced, reversed) arrive like this. Runs of the last
/// axis that are contiguous on both sides are copied whole.
void CopyStridedOnCpu(const DLTensor& from, const DLTensor& to) {
  const auto element = static_cast<int64_t>(ElementBytes(from.dtype));
  const int ndim = from.ndim;
  const int64_t inner = ndim == 0 ? 1 : from.shape[ndim - 1];
  const bool inner_contiguous =
      ndim == 0 || inner == 1 || (StrideOf(from, ndim - 1) == 1 && StrideOf(to, ndim - 1) == 1);
  std::vector<int64_t> index(std::max(ndim - 1, 0), 0);
  const char* src_base = internal::DataStart(from);
  char* dst_base = internal::DataStart(to);
  for (;;) {
    int64_t src_offset = 0;
    int64_t dst_offset = 0;
    for (int axis = 0; axis + 1 < ndim; ++axis) {
      src_offset += index[axis] * StrideOf(from, axis);
      dst_offset += index[axis] * StrideOf(to, axis);
    }
    const char* src = src_base + src_offset * element;
    char* dst = dst_base + dst_offset * element;
    if (inner_contiguous) {
      std::memcpy(dst, src, static_cast<size_t>(inner * element));
    } else {
      const int64_t src_step = StrideOf(from, ndim - 1) * element;
      const int64_t dst_step = StrideOf(to, ndim - 1) * element;
      for (int64_t i = 0; i < inner; ++i) {
        std::memcpy(dst + i * dst_step, src + i * src_step, static_cast<size_t>(element));
      }
    }
    // The next index of the outer axes, last axis fastest; done when it wraps around.
    int axis = ndim - 2;
    for (; axis >= 0; --axis) {
      if (++index[axis] < from.shape[axis]) break;
      index[axis] = 0;
    }
    if (axis < 0) return;
  }
}

}  // namespace

Tensor Empty(const std::vector<int64_t>& shape, DLDataType dtype, DLDevice device) {
  const size_t nbytes = CompactBytes(shape, dtype);
  CachingAllocator::Block* block = nullptr;
  try {
    block = CachingAllocator::Get(device).Allocate(nbytes);
  } catch (const Error& error) {
    throw error.WithContext("while allocating " + Describe(shape, dtype, device));
  }
  try {
    // The callback captures one pointer, which std::function stores without allocating.
    return Tensor::FromMemory(block->ptr, shape, dtype, device,
                              [block] { block->owner->Free(block); });
  } catch (...) {
    block->owner->Free(block);
    throw;
  }
}

void CopyTensor(const Tensor& from, const Tensor& to, KilnStreamHandle stream) {
  CheckCopyable(from, to);
  if (from.NumBytes() == 0) return;
  if (!IsCompact(from.dl_tensor()) || !IsCompact(to.dl_tensor())) {
    CopyStridedOnCpu(from.dl_tensor(), to.dl_tensor());
    return;
  }
  const DeviceApiRef api = DeviceApiRef::Get(CopyDeviceType(from.device(), to.device()));
  // The device API writes the elements `to` points at; its descriptor stays as it is.
  api.Copy(from.dl_tensor(), const_cast<DLTensor&>(to.dl_tensor()), stream);
}

AllocatorStats GetAllocatorStats(DLDevice device) {
  CachingAllocator* allocator = CachingAllocator::Find(device);
  return allocator == nullptr ? AllocatorStats{} : allocator->Stats();
}

void ReleaseCachedMemory() {
  for (CachingAllocator* allocator : CachingAllocator::All()) allocator->ReleaseCached();
}

namespace {

KILN_REGISTER_GLOBAL("runtime.Empty")
    .set_body_typed([](const Shape& shape, DLDataType dtype, DLDevice device) {
      return Empty(std::vector<int64_t>(shape.begin(), shape.end()), dtype, device);
    });

KILN_REGISTER_GLOBAL("runtime.CopyTensor").set_body_typed([](const Tensor& from, const Tensor& to) {
  CopyTensor(from, to);
});

KILN_REGISTER_GLOBAL("runtime.AllocatorStats").set_body_typed([](DLDevice device) {
  const AllocatorStats stats = GetAllocatorStats(device);
  return Map<String, int64_t>{
      {"bytes_in_use", stats.bytes_in_use},
      {"bytes_cached", stats.bytes_cached},
      {"peak_bytes_in_use", stats.peak_bytes_in_use},
      {"allocations", stats.allocations},
      {"cache_hits", stats.cache_hits},
  };
});

KILN_REGISTER_GLOBAL("runtime.ReleaseCachedMemory").set_body_typed([]() { ReleaseCachedMemory(); });

}  // namespace
void ReleaseMappedPages(const void* data, size_t size) {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto start = reinterpret_cast<uintptr_t>(data);
  const uintptr_t begin = (start + page - 1) / page * page;
  const uintptr_t end = (start + size) / page * page;
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the page range of a mapping, for madvise
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace runtime
}  // namespace kiln
