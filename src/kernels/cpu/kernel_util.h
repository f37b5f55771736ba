// Shared by the CPU kernels: the call's arguments and attributes, registration as
// `kernel.cpu.<op>`, dispatch from a runtime dtype to a C++ type, and broadcast iteration.
#ifndef KILN_SRC_KERNELS_CPU_KERNEL_UTIL_H_
#define KILN_SRC_KERNELS_CPU_KERNEL_UTIL_H_

#include <kiln/ffi/array.h>
#include <kiln/ffi/map.h>
#include <kiln/ffi/registry.h>
#include <kiln/ffi/string.h>
#include <kiln/ffi/tensor.h>
#include <kiln/runtime/kernel_program.h>
#include <kiln/runtime/narrow_float.h>
#include <kiln/runtime/thread_pool.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu_features.h"

namespace kiln {
namespace kernels {
namespace cpu {

/// One kernel invocation: FKernel's (inputs, outputs, attrs) plus the op name for errors.
class KernelCall {
 public:
  KernelCall(std::string op, const Array<Tensor>& inputs, const Array<Tensor>& outputs,
             const Map<String, Any>& attrs)
      : op_(std::move(op)), inputs_(inputs), outputs_(outputs), attrs_(attrs) {}

  const std::string& op() const { return op_; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  /// Input/output `i`; ValueError naming the kernel when it is missing or not a compact CPU
  /// tensor.
  Tensor input(size_t i) const { return Checked(inputs_, i, "input"); }
  Tensor output(size_t i) const { return Checked(outputs_, i, "output"); }

  int64_t Int(const char* name) const { return Attr(name).cast<int64_t>(); }
  double Float(const char* name) const { return Attr(name).cast<double>(); }
  /// An attribute, or `fallback` when it is absent.
  int64_t IntOr(const char* name, int64_t fallback) const;
  double FloatOr(const char* name, double fallback) const;
  bool BoolOr(const char* name, bool fallback) const;
  bool Bool(const char* name) const { return Attr(name).cast<bool>(); }
  std::string Str(const char* name) const { return Attr(name).cast<String>().str(); }
  std::vector<int64_t> Ints(const char* name) const;
  std::vector<double> Floats(const char* name) const;
  /// An ints attribute that may be absent or None (transpose's axes, ...).
  std::optional<std::vector<int64_t>> OptionalInts(const char* name) const;
  std::optional<std::vector<double>> OptionalFloats(const char* name) const;

  /// The data of input `i` as the op's prepack hook packed it when its program loaded (an
  /// attribute the kernel program adds, see KILN_CPU_PREPACK), or nullptr: pack at each call.
  const float* Prepacked(size_t i) const;
  /// The same as a tensor (its shape as the hook made it), or nullopt.
  std::optional<Tensor> PrepackedTensor(size_t i) const;

  /// "kernel.cpu.<op>: " for error messages.
  std::string Prefix() const { return "kernel.cpu." + op_ + ": "; }
  /// ValueError: `dtype` is not one this kernel implements.
  [[noreturn]] void UnsupportedDType(DLDataType dtype) const;
  /// `axis` counted from the end when negative; ValueError when outside [0, rank).
  int64_t NormalizeAxis(int64_t axis, int64_t rank) const;

 private:
  Any Attr(const char* name) const;
  Tensor Checked(const Array<Tensor>& tensors, size_t i, const char* what) const;

  std::string op_;
  const Array<Tensor>& inputs_;
  const Array<Tensor>& outputs_;
  const Map<String, Any>& attrs_;
};

using KernelBody = void (*)(const KernelCall&);

/// Registers `body` as the global function `kernel.cpu.<op>` with FKernel's signature.
bool RegisterKernel(const char* op, KernelBody body);

#define KILN_CPU_KERNEL(OpName, Body)                                     \
  [[maybe_unused]] static const bool KILN_UNIQUE_NAME(kiln_cpu_kernel_) = \
      ::kiln::kernels::cpu::RegisterKernel(OpName, Body)

/// Prepares a constant input of `op` once, when a kernel program loads: body(i, constant, call)
/// returns what the kernel then reads through call.Prepacked(i) (its weights packed for the
/// GEMM), or nullopt to leave input i alone. `call` has the step's attributes and no tensors.
using PrepackBody = std::optional<Tensor> (*)(size_t, const Tensor&, const KernelCall&);

/// Registers `body` as the global function `kernel_prepack.cpu.<op>`, whose signature
/// (index, constant, attrs) -> Tensor or None is the kernel program's (kernel_program.cc).
bool RegisterPrepack(const char* op, PrepackBody body);

#define KILN_CPU_PREPACK(OpName, Body)                                     \
  [[maybe_unused]] static const bool KILN_UNIQUE_NAME(kiln_cpu_prepack_) = \
      ::kiln::kernels::cpu::RegisterPrepack(OpName, Body)

template <typename T>
T* Data(const Tensor& tensor) {
  return static_cast<T*>(tensor.data());
}

std::vector<int64_t> ShapeOf(const Tensor& tensor);

/// Whether `dtype` is a floating-point type (bfloat16 included).
inline bool IsFloatCode(DLDataType dtype) {
  return dtype.code == kDLFloat || dtype.code == kDLBfloat;
}

/// Whether an element read as the unsigned integer `bits` of its width is not zero; a float's
/// -0.0 is zero too, whose bit pattern is not.
template <typename U>
bool IsNonzeroBits(U bits, bool is_float) {
  return is_float ? static_cast<U>(bits << 1) != 0 : bits != 0;
}

/// value / divisor rounded up (value >= 0, divisor > 0).
inline int64_t CeilDiv(int64_t value, int64_t divisor) { return (value + divisor - 1) / divisor; }

/// The elements of an int64 tensor (shape values read at run time: starts, axes, ...).
inline std::vector<int64_t> Int64Values(const Tensor& tensor) {
  const auto* data = Data<const int64_t>(tensor);
  return std::vector<int64_t>(data, data + NumElements(tensor.dl_tensor()));
}

/// Compiles a hot loop's function for the x86-64 baseline the library targets (design §15) and
/// for AVX-512 (x86-64-v4), picking one when the library loads (GCC's target_clones); other
/// compilers (Clang, the sanitizer build) get the baseline only, as the GEMM does.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define KILN_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "default")))
#else
#define KILN_CPU_CLONES
#endif

/// clip and relu as the merged epilogues compute them: NaN becomes `low`.
__attribute__((always_inline)) inline float Clamped(float value, float low, float high) {
  return std::min(high, std::max(low, value));
}

/// Clamp bounds, infinite where there is none.
struct ClampBounds {
  float low = -INFINITY;
  float high = INFINITY;
  bool clamps() const { return low != -INFINITY || high != INFINITY; }
};

/// The clamp a kernel program merged into the call's step (kEpilogueMinAttr, kEpilogueMaxAttr;
/// kiln/runtime/kernel_program.h).
inline ClampBounds ReadMergedClamp(const KernelCall& call) {
  return {static_cast<float>(call.FloatOr(runtime::kEpilogueMinAttr, -INFINITY)),
          static_cast<float>(call.FloatOr(runtime::kEpilogueMaxAttr, INFINITY))};
}

/// Copies the first `count` floats (fewer than kLanes) from `from` to `to` in at most one move
/// per power of two: a loop copying them compiles to `rep movs`, whose start-up took a fifth of
/// the time of a 5x5 window over 20 x 20 planes (design §37).
template <int64_t kLanes>
__attribute__((always_inline)) inline void CopyFirstLanes(float* to, const float* from,
                                                          int64_t count) {
  int64_t done = 0;
#pragma GCC unroll 8
  for (int64_t chunk = kLanes / 2; chunk > 0; chunk /= 2) {
    if ((count & chunk) != 0) {
      std::memcpy(to + done, from + done, chunk * sizeof(float));
      done += chunk;
    }
  }
}

/// The first `count` lanes of the vector `v` (fewer than all) to `to`...
template <typename Vec>
__attribute__((always_inline)) inline void StoreFirstLanes(float* to, const Vec& v, int64_t count) {
  constexpr int64_t kLanes = sizeof(Vec) / sizeof(float);
  float lanes[kLanes];
  std::memcpy(lanes, &v, sizeof(Vec));
  CopyFirstLanes<kLanes>(to, lanes, count);
}
/// ... and the first `count` floats from `from` into `v`, its other lanes zero.
template <typename Vec>
__attribute__((always_inline)) inline void LoadFirstLanes(Vec& v, const float* from,
                                                          int64_t count) {
  constexpr int64_t kLanes = sizeof(Vec) / sizeof(float);
  float lanes[kLanes] = {};
  CopyFirstLanes<kLanes>(lanes, from, count);
  std::memcpy(&v, lanes, sizeof(Vec));
}

/// Elements per grain of ParallelFor for cheap per-element work (a copy, an add): below this
/// threads cost more than they save. bench/kernels/run.py's relu rows at 2 threads: 128K
/// elements split in two took 12-15 us against 11.4 on one thread; with a 16K grain, 32K split
/// in two took 6.2 us against 3.3.
constexpr int64_t kElementGrain = 1 << 16;

// ---- dtype dispatch ------------------------------------------------------------------------

/// Bit sets of dtypes a kernel implements; a template argument so only those are instantiated.
constexpr unsigned kF32 = 1U << 0;
constexpr unsigned kF64 = 1U << 1;
constexpr unsigned kI32 = 1U << 2;
constexpr unsigned kI64 = 1U << 3;
constexpr unsigned kBoolBit = 1U << 4;
constexpr unsigned kU8 = 1U << 5;
constexpr unsigned kI8 = 1U << 6;
constexpr unsigned kF16 = 1U << 7;
constexpr unsigned kBF16 = 1U << 8;
constexpr unsigned kI16 = 1U << 9;
constexpr unsigned kU16 = 1U << 10;
constexpr unsigned kU32 = 1U << 11;
constexpr unsigned kU64 = 1U << 12;
constexpr unsigned kFloatTypes = kF32 | kF64;
constexpr unsigned kNumericTypes = kFloatTypes | kI32 | kI64;
/// The integers ONNX has besides int32 and int64 (quantized models, bit fields, indices).
constexpr unsigned kOtherIntegerTypes = kI8 | kU8 | kI16 | kU16 | kU32 | kU64;
constexpr unsigned kNarrowFloatTypes = kF16 | kBF16;
constexpr unsigned kAllTypes = kNumericTypes | kBoolBit | kOtherIntegerTypes | kNarrowFloatTypes;

/// The bit (kF32, ...) of `dtype`; 0 for a dtype no kernel implements.
unsigned DTypeBit(DLDataType dtype);

/// ValueError naming the kernel unless inputs `first`.. `last` share one dtype.
void RequireSameDType(const KernelCall& call, size_t first, size_t last);

/// ValueError naming the kernel unless every input is float32 (GEMM-based kernels).
void RequireFloat32Inputs(const KernelCall& call);

/// Calls `f(T{})` with T the C++ type of `dtype` (bool for bool, Float16 and BFloat16 for the
/// 16-bit floats) when `dtype` is in `Allowed`, else ValueError naming the kernel and the dtype.
template <unsigned Allowed, typename F>
void DispatchDType(const KernelCall& call, DLDataType dtype, F&& f) {
  const unsigned bit = DTypeBit(dtype) & Allowed;
  if constexpr ((Allowed & kF32) != 0) {
    if (bit == kF32) return f(float{});
  }
  if constexpr ((Allowed & kF64) != 0) {
    if (bit == kF64) return f(double{});
  }
  if constexpr ((Allowed & kI32) != 0) {
    if (bit == kI32) return f(int32_t{});
  }
  if constexpr ((Allowed & kI64) != 0) {
    if (bit == kI64) return f(int64_t{});
  }
  if constexpr ((Allowed & kBoolBit) != 0) {
    if (bit == kBoolBit) return f(bool{});
  }
  if constexpr ((Allowed & kU8) != 0) {
    if (bit == kU8) return f(uint8_t{});
  }
  if constexpr ((Allowed & kI8) != 0) {
    if (bit == kI8) return f(int8_t{});
  }
  if constexpr ((Allowed & kF16) != 0) {
    if (bit == kF16) return f(Float16{});
  }
  if constexpr ((Allowed & kBF16) != 0) {
    if (bit == kBF16) return f(BFloat16{});
  }
  if constexpr ((Allowed & kI16) != 0) {
    if (bit == kI16) return f(int16_t{});
  }
  if constexpr ((Allowed & kU16) != 0) {
    if (bit == kU16) return f(uint16_t{});
  }
  if constexpr ((Allowed & kU32) != 0) {
    if (bit == kU32) return f(uint32_t{});
  }
  if constexpr ((Allowed & kU64) != 0) {
    if (bit == kU64) return f(uint64_t{});
  }
  call.UnsupportedDType(dtype);
}

/// The type a kernel computes elements of type T in: float for Float16 and BFloat16, which have
/// no C++ arithmetic (results are rounded back once per element), T itself otherwise.
template <typename T>
using ComputeType = std::conditional_t<kIsNarrowFloat<T>, float, T>;

/// Calls `f(U{})` with U an unsigned integer as wide as one element of `dtype`: copies and
/// gathers move elements without looking at them, so they work for every dtype of 1-8 bytes.
template <typename F>
void DispatchElementBytes(const KernelCall& call, DLDataType dtype, F&& f) {
  switch (ElementBytes(dtype) * (dtype.lanes == 1 ? 1 : 0)) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
    default: call.UnsupportedDType(dtype);
  }
}

// ---- broadcasting --------------------------------------------------------------------------

/// Output shape and, per operand, element strides along each output dim (0 where the operand
/// broadcasts), with adjacent dims merged where every operand allows it, so the innermost loop
/// is as long as possible.
struct BroadcastPlan {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;

  int64_t inner() const { return shape.empty() ? 1 : shape.back(); }
  int64_t rows() const;
  /// Element offset of row `row` (a multi-index over all dims but the last) in operand `i`.
  int64_t RowOffset(size_t i, int64_t row) const;
  int64_t InnerStride(size_t i) const { return shape.empty() ? 0 : strides[i].back(); }
};

/// The plan of operands read with arbitrary element `strides` (one list per operand, one
/// stride per dim of `shape`): extent-1 dims dropped, mergeable neighbours merged.
BroadcastPlan PlanStrided(const std::vector<int64_t>& shape,
                          const std::vector<std::vector<int64_t>>& strides);

/// The plan of operands of `operand_shapes` broadcast to `out_shape` (numpy rules).
BroadcastPlan PlanBroadcast(const std::vector<int64_t>& out_shape,
                            const std::vector<std::vector<int64_t>>& operand_shapes);

/// Row-major element strides of `shape`.
std::vector<int64_t> CompactStrides(const std::vector<int64_t>& shape);

/// dst (compact, `plan.shape`) = src read through operand 0 of `plan`, rows split over the
/// thread pool.
template <typename U>
void CopyStrided(const BroadcastPlan& plan, const U* src, U* dst) {
  const int64_t inner = plan.inner();
  const int64_t stride = plan.InnerStride(0);
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(inner, 1));
  runtime::ParallelFor(0, plan.rows(), grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const U* __restrict__ from = src + plan.RowOffset(0, row);
      U* __restrict__ to = dst + row * inner;
      if (stride == 1) {
        std::copy_n(from, inner, to);
      } else {
        for (int64_t j = 0; j < inner; ++j) to[j] = from[j * stride];
      }
    }
  });
}

/// Runs `row_body(out_offset, offsets_of_operands, inner, inner_strides)` over every row of
/// the broadcast of `operands` into `out`, rows split over the thread pool.
template <size_t N, typename RowBody>
void ForEachBroadcastRow(const Tensor& out, const std::array<Tensor, N>& operands,
                         const RowBody& row_body) {
  std::vector<std::vector<int64_t>> shapes;
  shapes.reserve(N);
  for (const Tensor& operand : operands) shapes.push_back(ShapeOf(operand));
  const BroadcastPlan plan = PlanBroadcast(ShapeOf(out), shapes);
  const int64_t inner = plan.inner();
  std::array<int64_t, N> inner_strides{};
  for (size_t i = 0; i < N; ++i) inner_strides[i] = plan.InnerStride(i);
  // Consecutive rows step along the axis before the last by its strides; RowOffset's divisions
  // run once per run of them (rows of 16, a channel-blocked tensor times one value per lane,
  // spent most of their time there).
  const size_t rank = plan.shape.size();
  const int64_t run_extent = rank >= 2 ? plan.shape[rank - 2] : 1;
  std::array<int64_t, N> run_strides{};
  for (size_t i = 0; i < N && rank >= 2; ++i) run_strides[i] = plan.strides[i][rank - 2];
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(inner, 1));
  runtime::ParallelFor(0, plan.rows(), grain, [&](int64_t begin, int64_t end) {
    std::array<int64_t, N> offsets{};
    for (int64_t row = begin; row < end;) {
      for (size_t i = 0; i < N; ++i) offsets[i] = plan.RowOffset(i, row);
      const int64_t run_end = std::min(end, row + run_extent - row % run_extent);
      for (; row < run_end; ++row) {
        row_body(row * inner, offsets, inner, inner_strides);
        for (size_t i = 0; i < N; ++i) offsets[i] += run_strides[i];
      }
    }
  });
}

/// [outer, axis extent, inner] of `shape` around `axis`.
struct AxisSplit {
  int64_t outer = 1;
  int64_t extent = 1;
  int64_t inner = 1;
};
AxisSplit SplitAtAxis(const std::vector<int64_t>& shape, int64_t axis);

/// Sum of f(x[i]) over a row in double, 16 lanes wide: independent lanes vectorize without
/// reassociating the sum (inlined, so it vectorizes for the caller's KILN_CPU_CLONES target).
template <typename Fn>
__attribute__((always_inline)) inline double LaneSum(const float* __restrict__ x, int64_t n, Fn f) {
  constexpr int64_t kLanes = 16;
  double lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += f(static_cast<double>(x[i + l]));
  }
  double sum = 0;
  for (; i < n; ++i) sum += f(static_cast<double>(x[i]));
  for (double lane : lanes) sum += lane;
  return sum;
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_KERNEL_UTIL_H_
