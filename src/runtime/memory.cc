// Tensor memory (kiln/runtime/memory.h): Empty through the caching allocators, CopyTensor
// through the device APIs, and the "runtime.*" globals the bindings call.
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/runtime/device_api.h>
#include <kiln/runtime/memory.h>

#include <algorithm>
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
  for (const auto& [tensor, role] : {std::pair{&src, "from"}, std::pair{&dst, "to"}}) {
    KILN_CHECK(IsCompact(*tensor), ValueError)
        << "CopyTensor needs compact tensors; `" << role << "` of shape "
        << internal::ShapeToString(*tensor) << " is strided";
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
}  // namespace runtime
}  // namespace kiln
