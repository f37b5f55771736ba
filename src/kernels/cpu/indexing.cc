// Indexing kernels: gather_elements, scatter_elements, gather_nd, scatter_nd. Index values
// count from the end when negative; any other out-of-range value is a ValueError naming the
// kernel. These ops are small in the models that use them (losses, embeddings' updates), so the
// loops are plain and single-threaded: scatters must apply duplicates in order anyway.
#include <cstring>
#include <string>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

/// Index `value` along an axis of `extent`, negative ones counted from the end; ValueError
/// naming the kernel when outside.
int64_t CheckedIndex(const KernelCall& call, int64_t value, int64_t extent) {
  const int64_t index = value < 0 ? value + extent : value;
  KILN_CHECK(index >= 0 && index < extent, ValueError)
      << call.Prefix() << "index " << value << " is out of range for extent " << extent;
  return index;
}

/// Calls `visit(get)` where `get(i)` reads element i of the int32/int64 tensor `indices` as
/// int64.
template <typename Visit>
void WithIndices(const KernelCall& call, const Tensor& indices, Visit&& visit) {
  DispatchDType<kI32 | kI64>(call, indices.dtype(), [&](auto tag) {
    using Index = decltype(tag);
    const Index* values = Data<const Index>(indices);
    visit([values](int64_t i) { return static_cast<int64_t>(values[i]); });
  });
}

/// For each element of a tensor of `shape` (row-major), the element offset in a tensor with
/// `strides` of the same multi-index with the coordinate along `axis` left out (0): the
/// positions gather_elements and scatter_elements start from.
std::vector<int64_t> OffsetsWithoutAxis(const std::vector<int64_t>& shape,
                                        const std::vector<int64_t>& strides, int64_t axis) {
  int64_t count = 1;
  for (int64_t extent : shape) count *= extent;
  std::vector<int64_t> offsets(count);
  std::vector<int64_t> position(shape.size(), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    offsets[i] = offset;
    // Odometer step: the last dim moves fastest.
    for (auto d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      const int64_t step = d == axis ? 0 : strides[d];
      if (++position[d] < shape[d]) {
        offset += step;
        break;
      }
      offset -= step * (shape[d] - 1);
      position[d] = 0;
    }
  }
  return offsets;
}

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

/// The call's "reduction", read once per call: Reduce runs per element.
ScatterReduction ReadReduction(const KernelCall& call) {
  const std::string name = call.Str("reduction");
  if (name == "none") return ScatterReduction::kNone;
  if (name == "add") return ScatterReduction::kAdd;
  if (name == "mul") return ScatterReduction::kMul;
  if (name == "max") return ScatterReduction::kMax;
  KILN_CHECK(name == "min", ValueError)
      << call.Prefix() << "unknown reduction '" << name << "' (none, add, mul, max, min)";
  return ScatterReduction::kMin;
}

/// One position's update under scatter's `reduction`.
template <typename T>
T Reduce(ScatterReduction reduction, T current, T update) {
  switch (reduction) {
    case ScatterReduction::kAdd: return static_cast<T>(current + update);
    case ScatterReduction::kMul: return static_cast<T>(current * update);
    case ScatterReduction::kMax: return current > update ? current : update;
    case ScatterReduction::kMin: return current < update ? current : update;
    case ScatterReduction::kNone: break;
  }
  return update;
}

/// ValueError naming the kernel unless `updates` has `data`'s dtype.
void RequireUpdatesLikeData(const KernelCall& call, const Tensor& data, const Tensor& updates) {
  KILN_CHECK(DataTypeEqual(data.dtype(), updates.dtype()), ValueError)
      << call.Prefix() << "updates are " << DataTypeToString(updates.dtype()) << ", data "
      << DataTypeToString(data.dtype());
}

/// Calls `f(T{})` for scatter's element type: any 1-8 byte dtype moved as bits when nothing is
/// reduced, the numeric dtypes otherwise.
template <typename F>
void DispatchScatter(const KernelCall& call, ScatterReduction reduction, DLDataType dtype, F&& f) {
  if (reduction == ScatterReduction::kNone) {
    DispatchElementBytes(call, dtype, f);
  } else {
    DispatchDType<kNumericTypes>(call, dtype, f);
  }
}

/// gather_elements (ONNX GatherElements): out[i] = data[i with i[axis] = indices[i]].
void GatherElements(const KernelCall& call) {
  const Tensor data = call.input(0);
  const Tensor indices = call.input(1);
  const Tensor out = call.output(0);
  const std::vector<int64_t> data_shape = ShapeOf(data);
  const int64_t axis = call.NormalizeAxis(call.Int("axis"), data.ndim());
  const std::vector<int64_t> strides = CompactStrides(data_shape);
  const std::vector<int64_t> offsets = OffsetsWithoutAxis(ShapeOf(indices), strides, axis);
  DispatchElementBytes(call, data.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U* src = Data<const U>(data);
    U* dst = Data<U>(out);
    WithIndices(call, indices, [&](const auto& index) {
      for (size_t i = 0; i < offsets.size(); ++i) {
        const int64_t j = CheckedIndex(call, index(static_cast<int64_t>(i)), data_shape[axis]);
        dst[i] = src[offsets[i] + j * strides[axis]];
      }
    });
  });
}
KILN_CPU_KERNEL("gather_elements", GatherElements);

/// scatter_elements (ONNX ScatterElements): out = data, then for each i of `indices`, in order,
/// out[i with i[axis] = indices[i]] = reduction(that, updates[i]).
void ScatterElements(const KernelCall& call) {
  const Tensor data = call.input(0);
  const Tensor indices = call.input(1);
  const Tensor updates = call.input(2);
  const Tensor out = call.output(0);
  const std::vector<int64_t> data_shape = ShapeOf(data);
  const int64_t axis = call.NormalizeAxis(call.Int("axis"), data.ndim());
  const std::vector<int64_t> strides = CompactStrides(data_shape);
  const std::vector<int64_t> offsets = OffsetsWithoutAxis(ShapeOf(indices), strides, axis);
  const ScatterReduction reduction = ReadReduction(call);
  RequireUpdatesLikeData(call, data, updates);
  if (data.NumBytes() > 0) std::memcpy(out.data(), data.data(), data.NumBytes());
  DispatchScatter(call, reduction, data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* from = Data<const T>(updates);
    T* dst = Data<T>(out);
    WithIndices(call, indices, [&](const auto& index) {
      for (size_t i = 0; i < offsets.size(); ++i) {
        const int64_t j = CheckedIndex(call, index(static_cast<int64_t>(i)), data_shape[axis]);
        T& target = dst[offsets[i] + j * strides[axis]];
        target = Reduce(reduction, target, from[i]);
      }
    });
  });
}
KILN_CPU_KERNEL("scatter_elements", ScatterElements);

/// Where gather_nd and scatter_nd find each index tuple's slice: `tuples` tuples of `k`
/// elements, slices of `slice` elements, and the element strides of the addressed dims.
struct NdPlan {
  int64_t tuples = 1;
  int64_t k = 0;
  int64_t slice = 1;
  int64_t batches = 1;
  int64_t batch_stride = 0;  ///< elements of data per batch
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
};

NdPlan PlanNd(const Tensor& data, const Tensor& indices, int64_t batch_dims) {
  const std::vector<int64_t> data_shape = ShapeOf(data);
  const std::vector<int64_t> index_shape = ShapeOf(indices);
  const std::vector<int64_t> data_strides = CompactStrides(data_shape);
  NdPlan plan;
  plan.k = index_shape.back();
  for (size_t d = 0; d + 1 < index_shape.size(); ++d) plan.tuples *= index_shape[d];
  for (int64_t d = 0; d < batch_dims; ++d) plan.batches *= data_shape[d];
  plan.batch_stride =
      batch_dims < data.ndim() ? data_strides[batch_dims] * data_shape[batch_dims] : 1;
  for (int64_t d = batch_dims + plan.k; d < data.ndim(); ++d) plan.slice *= data_shape[d];
  for (int64_t j = 0; j < plan.k; ++j) {
    plan.dims.push_back(data_shape[batch_dims + j]);
    plan.strides.push_back(data_strides[batch_dims + j]);
  }
  return plan;
}

/// The element offset in data of tuple `t`'s slice.
template <typename Get>
int64_t SliceOffset(const KernelCall& call, const NdPlan& plan, const Get& index, int64_t t) {
  const int64_t per_batch = plan.tuples / plan.batches;
  int64_t offset = (t / per_batch) * plan.batch_stride;
  for (int64_t j = 0; j < plan.k; ++j) {
    offset += CheckedIndex(call, index(t * plan.k + j), plan.dims[j]) * plan.strides[j];
  }
  return offset;
}

/// gather_nd (ONNX GatherND): each index tuple picks a slice of data (within its batch).
void GatherND(const KernelCall& call) {
  const Tensor data = call.input(0);
  const Tensor indices = call.input(1);
  const Tensor out = call.output(0);
  const NdPlan plan = PlanNd(data, indices, call.Int("batch_dims"));
  const int64_t slice_bytes = plan.slice * ElementBytes(data.dtype());
  const auto* src = static_cast<const char*>(data.data());
  auto* dst = static_cast<char*>(out.data());
  WithIndices(call, indices, [&](const auto& index) {
    for (int64_t t = 0; t < plan.tuples && slice_bytes > 0; ++t) {
      const int64_t offset = SliceOffset(call, plan, index, t);
      std::memcpy(dst + t * slice_bytes, src + offset * ElementBytes(data.dtype()), slice_bytes);
    }
  });
}
KILN_CPU_KERNEL("gather_nd", GatherND);

/// scatter_nd (ONNX ScatterND): out = data, then each index tuple's slice, in order, becomes
/// reduction(that slice, the tuple's slice of updates).
void ScatterND(const KernelCall& call) {
  const Tensor data = call.input(0);
  const Tensor indices = call.input(1);
  const Tensor updates = call.input(2);
  const Tensor out = call.output(0);
  const NdPlan plan = PlanNd(data, indices, 0);
  const ScatterReduction reduction = ReadReduction(call);
  RequireUpdatesLikeData(call, data, updates);
  if (data.NumBytes() > 0) std::memcpy(out.data(), data.data(), data.NumBytes());
  DispatchScatter(call, reduction, data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* from = Data<const T>(updates);
    T* dst = Data<T>(out);
    WithIndices(call, indices, [&](const auto& index) {
      for (int64_t t = 0; t < plan.tuples; ++t) {
        T* slice = dst + SliceOffset(call, plan, index, t);
        const T* update = from + t * plan.slice;
        for (int64_t s = 0; s < plan.slice; ++s) slice[s] = Reduce(reduction, slice[s], update[s]);
      }
    });
  });
}
KILN_CPU_KERNEL("scatter_nd", ScatterND);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
