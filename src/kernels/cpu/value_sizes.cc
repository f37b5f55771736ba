// Kernels of the ops that compute sizes from tensor values (src/ops/tensor/value_sizes.cc):
// each writes one int64 per size into its output, which define_sizes makes the values of size
// variables (docs/design.md §22); and of size_values, which writes sizes as values. Errors name the
// input value at fault: these are where a model fed a bad shape at run time says so.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernel_util.h"
#include "slice_bounds.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

/// ONNX Reshape's target: 0 copies the input's extent (unless allowzero), -1 is inferred.
void ReshapeSizes(const KernelCall& call) {
  const std::vector<int64_t> data = ShapeOf(call.input(0));
  const Tensor shape_tensor = call.input(1);
  const std::vector<int64_t> requested = Int64Values(shape_tensor);
  const size_t rank = requested.size();
  const bool allowzero = call.Bool("allowzero");
  int64_t elements = 1;
  for (int64_t extent : data) elements *= extent;
  std::vector<int64_t> sizes(rank);
  int64_t known = 1;
  int64_t inferred = -1;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t value = requested[i];
    if (value == -1) {
      KILN_CHECK(inferred < 0, ValueError)
          << call.Prefix() << "the shape " << ShapeText(requested) << " has more than one -1";
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (value == 0 && !allowzero) {
      KILN_CHECK(i < data.size(), ValueError)
          << call.Prefix() << "the shape " << ShapeText(requested) << " copies dimension " << i
          << " (0) of an input of shape " << ShapeText(data) << ", which has no such dimension";
      sizes[i] = data[i];
    } else {
      KILN_CHECK(value >= 0, ValueError) << call.Prefix() << "the shape " << ShapeText(requested)
                                         << " has the invalid extent " << value;
      sizes[i] = value;
    }
    KILN_CHECK(!__builtin_mul_overflow(known, sizes[i], &known), ValueError)
        << call.Prefix() << "the shape " << ShapeText(requested) << " has too many elements";
  }
  if (inferred >= 0) {
    KILN_CHECK(known != 0 && elements % known == 0, ValueError)
        << call.Prefix() << "the shape " << ShapeText(requested) << " cannot hold the " << elements
        << " elements of an input of shape " << ShapeText(data);
    sizes[inferred] = elements / known;
  } else {
    KILN_CHECK(known == elements, ValueError)
        << call.Prefix() << "the shape " << ShapeText(requested) << " has " << known
        << " elements, the input of shape " << ShapeText(data) << " has " << elements;
  }
  std::copy(sizes.begin(), sizes.end(), Data<int64_t>(call.output(0)));
}
KILN_CPU_KERNEL("reshape_sizes", ReshapeSizes);

/// size_values: the sizes attribute, evaluated for the call by the kernel program.
void SizeValues(const KernelCall& call) {
  const std::vector<int64_t> sizes = call.Ints("sizes");
  std::copy(sizes.begin(), sizes.end(), Data<int64_t>(call.output(0)));
}
KILN_CPU_KERNEL("size_values", SizeValues);

void WriteSizes(const KernelCall& call, const std::vector<int64_t>& sizes) {
  std::copy(sizes.begin(), sizes.end(), Data<int64_t>(call.output(0)));
}

/// Each of `axes` normalized against `rank`; ValueError for one out of range or repeated.
std::vector<int64_t> DistinctAxes(const KernelCall& call, const std::vector<int64_t>& axes,
                                  int64_t rank) {
  std::vector<int64_t> normalized;
  for (int64_t axis : axes) {
    normalized.push_back(call.NormalizeAxis(axis, rank));
    KILN_CHECK(std::count(normalized.begin(), normalized.end(), normalized.back()) == 1, ValueError)
        << call.Prefix() << "the axes " << ShapeText(axes) << " repeat axis " << axis;
  }
  return normalized;
}

void SqueezeSizes(const KernelCall& call) {
  const std::vector<int64_t> data = ShapeOf(call.input(0));
  const std::vector<int64_t> axes =
      DistinctAxes(call, Int64Values(call.input(1)), static_cast<int64_t>(data.size()));
  std::vector<int64_t> sizes;
  for (size_t d = 0; d < data.size(); ++d) {
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end()) {
      sizes.push_back(data[d]);
      continue;
    }
    KILN_CHECK(data[d] == 1, ValueError)
        << call.Prefix() << "cannot squeeze axis " << d << " of extent " << data[d] << " (shape "
        << ShapeText(data) << ")";
  }
  WriteSizes(call, sizes);
}
KILN_CPU_KERNEL("squeeze_sizes", SqueezeSizes);

void UnsqueezeSizes(const KernelCall& call) {
  const std::vector<int64_t> data = ShapeOf(call.input(0));
  const std::vector<int64_t> values = Int64Values(call.input(1));
  const auto rank = static_cast<int64_t>(data.size() + values.size());
  const std::vector<int64_t> axes = DistinctAxes(call, values, rank);
  std::vector<int64_t> sizes;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d) {
    const bool inserted = std::find(axes.begin(), axes.end(), d) != axes.end();
    sizes.push_back(inserted ? 1 : data[next++]);
  }
  WriteSizes(call, sizes);
}
KILN_CPU_KERNEL("unsqueeze_sizes", UnsqueezeSizes);

/// The broadcast of the input's shape and the values of 'shape', aligned from the right.
void ExpandSizes(const KernelCall& call) {
  const std::vector<int64_t> data = ShapeOf(call.input(0));
  const std::vector<int64_t> shape = Int64Values(call.input(1));
  const size_t rank = std::max(data.size(), shape.size());
  std::vector<int64_t> sizes(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t a = i < rank - data.size() ? 1 : data[i - (rank - data.size())];
    const int64_t b = i < rank - shape.size() ? 1 : shape[i - (rank - shape.size())];
    KILN_CHECK(a == b || a == 1 || b == 1, ValueError)
        << call.Prefix() << "an input of shape " << ShapeText(data)
        << " does not broadcast to the shape " << ShapeText(shape);
    KILN_CHECK(b >= 0, ValueError)
        << call.Prefix() << "the shape " << ShapeText(shape) << " has the negative extent " << b;
    sizes[i] = a == 1 ? b : a;
  }
  WriteSizes(call, sizes);
}
KILN_CPU_KERNEL("expand_sizes", ExpandSizes);

void NonzeroCount(const KernelCall& call) {
  const Tensor in = call.input(0);
  int64_t count = 0;
  DispatchElementBytes(call, in.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U* data = Data<const U>(in);
    const bool is_float = IsFloatCode(in.dtype());
    for (int64_t i = 0; i < NumElements(in.dl_tensor()); ++i) {
      count += IsNonzeroBits(data[i], is_float) ? 1 : 0;
    }
  });
  WriteSizes(call, {count});
}
KILN_CPU_KERNEL("nonzero_count", NonzeroCount);

void SliceSizes(const KernelCall& call) {
  std::vector<int64_t> sizes = ShapeOf(call.input(0));
  const std::vector<int64_t> starts = Int64Values(call.input(1));
  const std::vector<int64_t> ends = Int64Values(call.input(2));
  const std::vector<int64_t> axes =
      DistinctAxes(call, Int64Values(call.input(3)), static_cast<int64_t>(sizes.size()));
  const std::vector<int64_t> steps = Int64Values(call.input(4));
  for (size_t i = 0; i < axes.size(); ++i) {
    KILN_CHECK(steps[i] != 0, ValueError) << call.Prefix() << "a slice step cannot be 0";
    sizes[axes[i]] = SliceCount(starts[i], ends[i], sizes[axes[i]], steps[i]);
  }
  WriteSizes(call, sizes);
}
KILN_CPU_KERNEL("slice_sizes", SliceSizes);

void AsSizes(const KernelCall& call) {
  const Tensor in = call.input(0);
  std::vector<int64_t> sizes;
  DispatchDType<kNumericTypes>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* data = Data<const T>(in);
    for (int64_t i = 0; i < NumElements(in.dl_tensor()); ++i) {
      const auto value = static_cast<double>(data[i]);
      KILN_CHECK(std::isfinite(value) && std::abs(value) < 9.2e18, ValueError)
          << call.Prefix() << "the size " << value << " is not a representable integer";
      sizes.push_back(static_cast<int64_t>(data[i]));
    }
  });
  WriteSizes(call, sizes);
}
KILN_CPU_KERNEL("as_sizes", AsSizes);

void RangeSizes(const KernelCall& call) {
  int64_t count = 0;
  DispatchDType<kNumericTypes>(call, call.input(0).dtype(), [&](auto tag) {
    using T = decltype(tag);
    const auto start = static_cast<double>(*Data<const T>(call.input(0)));
    const auto limit = static_cast<double>(*Data<const T>(call.input(1)));
    const auto delta = static_cast<double>(*Data<const T>(call.input(2)));
    KILN_CHECK(delta != 0, ValueError) << call.Prefix() << "the delta of a range cannot be 0";
    const double length = std::ceil((limit - start) / delta);
    KILN_CHECK(std::isfinite(length) && length < 9.2e18, ValueError)
        << call.Prefix() << "a range from " << start << " to " << limit << " by " << delta
        << " has too many elements";
    count = std::max<int64_t>(static_cast<int64_t>(length), 0);
  });
  WriteSizes(call, {count});
}
KILN_CPU_KERNEL("range_sizes", RangeSizes);

void PadSizes(const KernelCall& call) {
  std::vector<int64_t> sizes = ShapeOf(call.input(0));
  const std::vector<int64_t> pads = Int64Values(call.input(1));
  const size_t rank = sizes.size();
  for (size_t d = 0; d < rank; ++d) {
    sizes[d] += pads[d] + pads[d + rank];
    KILN_CHECK(sizes[d] >= 0, ValueError)
        << call.Prefix() << "the pads " << ShapeText(pads) << " crop dimension " << d << " below 0";
  }
  WriteSizes(call, sizes);
}
KILN_CPU_KERNEL("pad_sizes", PadSizes);

void ReduceSizes(const KernelCall& call) {
  const std::vector<int64_t> data = ShapeOf(call.input(0));
  const auto rank = static_cast<int64_t>(data.size());
  const std::vector<int64_t> axes = DistinctAxes(call, Int64Values(call.input(1)), rank);
  const bool all = axes.empty() && !call.Bool("noop_with_empty_axes");
  const bool keepdims = call.Bool("keepdims");
  std::vector<int64_t> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    const bool reduced = all || std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced) {
      sizes.push_back(data[d]);
    } else if (keepdims) {
      sizes.push_back(1);
    }
  }
  WriteSizes(call, sizes);
}
KILN_CPU_KERNEL("reduce_sizes", ReduceSizes);

void ResizeSizes(const KernelCall& call) {
  const std::vector<int64_t> data = ShapeOf(call.input(0));
  std::vector<int64_t> sizes(4);
  if (call.Str("from") == "sizes") {
    sizes = Int64Values(call.input(1));
  } else {
    const float* scales = Data<const float>(call.input(1));
    for (size_t d = 0; d < 4; ++d) {
      const double extent = std::floor(static_cast<double>(data[d]) * scales[d]);
      KILN_CHECK(std::isfinite(extent) && scales[d] > 0 && extent < 1e12, ValueError)
          << call.Prefix() << "the scale " << scales[d] << " of dimension " << d
          << " is not usable: a scale must be positive and finite and give an extent below 1e12";
      sizes[d] = static_cast<int64_t>(extent);
    }
  }
  KILN_CHECK(sizes[0] == data[0] && sizes[1] == data[1], ValueError)
      << call.Prefix() << "resizing " << ShapeText(data) << " to " << ShapeText(sizes)
      << " changes the batch or channel dimension, which is not supported";
  KILN_CHECK(sizes[2] >= 1 && sizes[3] >= 1, ValueError)
      << call.Prefix() << "resizing " << ShapeText(data) << " to " << ShapeText(sizes)
      << " leaves no pixels";
  WriteSizes(call, {sizes[2], sizes[3]});
}
KILN_CPU_KERNEL("resize_sizes", ResizeSizes);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
