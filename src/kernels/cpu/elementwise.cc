// Elementwise kernels: unary math and activations, clip and cast (one input), broadcasting
// binary arithmetic, logic and comparisons, and where. Each op is a small functor; the loops
// that apply them are shared templates, so every op gets the same contiguous fast paths.
#include <cmath>
#include <limits>
#include <type_traits>

#include <kiln/runtime/fast_math.h>
#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

// ---- one input -----------------------------------------------------------------------------

/// Applies `Fn` (constructed from the call, so it can read attributes) to every element.
/// y[i] = fn(x[i]) for i < n. Restrict-qualified parameters, not a lambda's captures (which lose
/// the qualifier, so the loop vectorizes only behind an overlap check that in-place calls fail);
/// an AVX-512 clone beside the baseline one.
template <typename T, typename Fn>
KILN_CPU_CLONES void MapElements(const T* __restrict__ x, T* __restrict__ y, int64_t n,
                                 const Fn& fn) {
  for (int64_t i = 0; i < n; ++i) y[i] = fn(x[i]);
}

template <unsigned Allowed, typename Fn>
void Unary(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const Fn fn(call);
  DispatchDType<Allowed>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x_base = Data<const T>(in);
    T* y_base = Data<T>(out);
    runtime::ParallelFor(0, in.NumElements(), kElementGrain, [&](int64_t begin, int64_t end) {
      MapElements(x_base + begin, y_base + begin, end - begin, fn);
    });
  });
}

// float32 through kiln/runtime/fast_math.h, whose loops vectorize (libm's calls do not), as
// the generated C computes them; float64 through libm.
float ErfOf(float x) { return kiln_fast_erff(x); }
double ErfOf(double x) { return std::erf(x); }
float ExpOf(float x) { return kiln_fast_expf(x); }
double ExpOf(double x) { return std::exp(x); }
float TanhOf(float x) { return kiln_fast_tanhf(x); }
double TanhOf(double x) { return std::tanh(x); }

/// Base of functors without attributes.
struct NoAttrs {
  explicit NoAttrs(const KernelCall& /*call*/) {}
};

#define KILN_UNARY_FN(Name, Expr)  \
  struct Name : NoAttrs {          \
    using NoAttrs::NoAttrs;        \
    template <typename T>          \
    T operator()(T x) const {      \
      return static_cast<T>(Expr); \
    }                              \
  }

KILN_UNARY_FN(Negative, -x);
KILN_UNARY_FN(Abs, x < 0 ? -x : x);
KILN_UNARY_FN(Sign, (x > T(0)) - (x < T(0)));
KILN_UNARY_FN(Relu, x > T(0) ? x : T(0));
KILN_UNARY_FN(Exp, ExpOf(x));
KILN_UNARY_FN(Log, std::log(x));
KILN_UNARY_FN(Sqrt, std::sqrt(x));
KILN_UNARY_FN(Reciprocal, T(1) / x);
KILN_UNARY_FN(Erf, ErfOf(x));
KILN_UNARY_FN(Floor, std::floor(x));
KILN_UNARY_FN(Ceil, std::ceil(x));
KILN_UNARY_FN(Round, std::nearbyint(x));  // halves to even, as ONNX Round
KILN_UNARY_FN(Sin, std::sin(x));
KILN_UNARY_FN(Cos, std::cos(x));
KILN_UNARY_FN(Tan, std::tan(x));
KILN_UNARY_FN(Asin, std::asin(x));
KILN_UNARY_FN(Acos, std::acos(x));
KILN_UNARY_FN(Atan, std::atan(x));
KILN_UNARY_FN(Sinh, std::sinh(x));
KILN_UNARY_FN(Cosh, std::cosh(x));
KILN_UNARY_FN(Asinh, std::asinh(x));
KILN_UNARY_FN(Acosh, std::acosh(x));
KILN_UNARY_FN(Atanh, std::atanh(x));
KILN_UNARY_FN(Tanh, TanhOf(x));
KILN_UNARY_FN(Sigmoid, T(1) / (T(1) + ExpOf(-x)));
KILN_UNARY_FN(LogicalNot, !x);
// ONNX Gelu with approximate = "none".
KILN_UNARY_FN(Gelu, T(0.5) * x * (T(1) + ErfOf(x * T(M_SQRT1_2))));
KILN_UNARY_FN(Silu, x / (T(1) + ExpOf(-x)));
KILN_UNARY_FN(HardSwish, x* std::min(T(1), std::max(T(0), x / T(6) + T(0.5))));
// log(1 + e^x) without overflow for large x.
KILN_UNARY_FN(Softplus, x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)));

#undef KILN_UNARY_FN

struct LeakyRelu {
  explicit LeakyRelu(const KernelCall& call) : alpha(call.Float("alpha")) {}
  template <typename T>
  T operator()(T x) const {
    return x >= T(0) ? x : static_cast<T>(alpha) * x;
  }
  double alpha;
};

struct Elu {
  explicit Elu(const KernelCall& call) : alpha(call.Float("alpha")) {}
  template <typename T>
  T operator()(T x) const {
    return x >= T(0) ? x : static_cast<T>(alpha) * std::expm1(x);
  }
  double alpha;
};

struct HardSigmoid {
  explicit HardSigmoid(const KernelCall& call)
      : alpha(call.Float("alpha")), beta(call.Float("beta")) {}
  template <typename T>
  T operator()(T x) const {
    const T y = static_cast<T>(alpha) * x + static_cast<T>(beta);
    return std::min(T(1), std::max(T(0), y));
  }
  double alpha;
  double beta;
};

/// `bound` in T's range (clip's default bounds are infinities, which no integer holds).
template <typename T>
T ClampToType(double bound) {
  const auto lowest = static_cast<double>(std::numeric_limits<T>::lowest());
  const auto highest = static_cast<double>(std::numeric_limits<T>::max());
  return static_cast<T>(std::min(highest, std::max(lowest, bound)));
}

struct Clip {
  explicit Clip(const KernelCall& call) : low(call.Float("a_min")), high(call.Float("a_max")) {}
  template <typename T>
  T operator()(T x) const {
    return std::min(ClampToType<T>(high), std::max(ClampToType<T>(low), x));
  }
  double low;
  double high;
};

constexpr unsigned kSigned = kNumericTypes;

KILN_CPU_KERNEL("negative", (Unary<kSigned, Negative>));
KILN_CPU_KERNEL("abs", (Unary<kSigned, Abs>));
KILN_CPU_KERNEL("sign", (Unary<kSigned, Sign>));
KILN_CPU_KERNEL("nn.relu", (Unary<kSigned, Relu>));
KILN_CPU_KERNEL("clip", (Unary<kNumericTypes | kU8 | kI8, Clip>));
KILN_CPU_KERNEL("exp", (Unary<kFloatTypes, Exp>));
KILN_CPU_KERNEL("log", (Unary<kFloatTypes, Log>));
KILN_CPU_KERNEL("sqrt", (Unary<kFloatTypes, Sqrt>));
KILN_CPU_KERNEL("reciprocal", (Unary<kFloatTypes, Reciprocal>));
KILN_CPU_KERNEL("erf", (Unary<kFloatTypes, Erf>));
KILN_CPU_KERNEL("floor", (Unary<kFloatTypes, Floor>));
KILN_CPU_KERNEL("ceil", (Unary<kFloatTypes, Ceil>));
KILN_CPU_KERNEL("round", (Unary<kFloatTypes, Round>));
KILN_CPU_KERNEL("sin", (Unary<kFloatTypes, Sin>));
KILN_CPU_KERNEL("cos", (Unary<kFloatTypes, Cos>));
KILN_CPU_KERNEL("tan", (Unary<kFloatTypes, Tan>));
KILN_CPU_KERNEL("asin", (Unary<kFloatTypes, Asin>));
KILN_CPU_KERNEL("acos", (Unary<kFloatTypes, Acos>));
KILN_CPU_KERNEL("atan", (Unary<kFloatTypes, Atan>));
KILN_CPU_KERNEL("sinh", (Unary<kFloatTypes, Sinh>));
KILN_CPU_KERNEL("cosh", (Unary<kFloatTypes, Cosh>));
KILN_CPU_KERNEL("asinh", (Unary<kFloatTypes, Asinh>));
KILN_CPU_KERNEL("acosh", (Unary<kFloatTypes, Acosh>));
KILN_CPU_KERNEL("atanh", (Unary<kFloatTypes, Atanh>));
KILN_CPU_KERNEL("tanh", (Unary<kFloatTypes, Tanh>));
KILN_CPU_KERNEL("sigmoid", (Unary<kFloatTypes, Sigmoid>));
KILN_CPU_KERNEL("nn.gelu", (Unary<kFloatTypes, Gelu>));
KILN_CPU_KERNEL("nn.silu", (Unary<kFloatTypes, Silu>));
KILN_CPU_KERNEL("nn.hardswish", (Unary<kFloatTypes, HardSwish>));
KILN_CPU_KERNEL("nn.softplus", (Unary<kFloatTypes, Softplus>));
KILN_CPU_KERNEL("nn.leaky_relu", (Unary<kFloatTypes, LeakyRelu>));
KILN_CPU_KERNEL("nn.elu", (Unary<kFloatTypes, Elu>));
KILN_CPU_KERNEL("nn.hard_sigmoid", (Unary<kFloatTypes, HardSigmoid>));
KILN_CPU_KERNEL("logical_not", (Unary<kBoolBit, LogicalNot>));

/// cast: every pair of the supported dtypes, C++ conversion semantics (floats truncate toward
/// zero into integers; anything non-zero is true); into float16 and bfloat16 to nearest, ties
/// to even (NarrowFloat).
void Cast(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  DispatchDType<kAllTypes>(call, in.dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    DispatchDType<kAllTypes>(call, out.dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      const From* __restrict__ x = Data<const From>(in);
      To* __restrict__ y = Data<To>(out);
      runtime::ParallelFor(0, in.NumElements(), kElementGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          // NOLINTNEXTLINE(bugprone-signed-char-misuse): int8 is a number; widening keeps sign
          y[i] = static_cast<To>(x[i]);
        }
      });
    });
  });
}
KILN_CPU_KERNEL("cast", Cast);

// ---- two inputs, broadcast -----------------------------------------------------------------

/// Applies `Fn` to lhs and rhs broadcast together; the output dtype is what `Fn` returns (T,
/// or bool for comparisons). Float16 and BFloat16 elements are computed in float and rounded
/// back. Each broadcast row is one MapPairs.
/// y[j] = fn(a[j * a_stride], b[j * b_stride]) for j < n, the stride patterns that occur (both
/// contiguous, one a scalar) spelled out so that they vectorize; an AVX-512 clone beside the
/// baseline one.
template <typename T, typename Out, typename Fn>
KILN_CPU_CLONES void MapPairs(const T* __restrict__ a, int64_t a_stride, const T* __restrict__ b,
                              int64_t b_stride, Out* __restrict__ y, int64_t n, const Fn& fn) {
  if (a_stride == 1 && b_stride == 1) {
    for (int64_t j = 0; j < n; ++j) y[j] = fn(a[j], b[j]);
  } else if (a_stride == 1 && b_stride == 0) {
    const T b0 = *b;
    for (int64_t j = 0; j < n; ++j) y[j] = fn(a[j], b0);
  } else if (a_stride == 0 && b_stride == 1) {
    const T a0 = *a;
    for (int64_t j = 0; j < n; ++j) y[j] = fn(a0, b[j]);
  } else {
    for (int64_t j = 0; j < n; ++j) y[j] = fn(a[j * a_stride], b[j * b_stride]);
  }
}

template <unsigned Allowed, typename Fn>
void Binary(const KernelCall& call) {
  const Tensor lhs = call.input(0);
  const Tensor rhs = call.input(1);
  const Tensor out = call.output(0);
  RequireSameDType(call, 0, 1);
  DispatchDType<Allowed>(call, lhs.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Compute = ComputeType<T>;
    using Result = decltype(Fn{}(Compute{}, Compute{}));
    using Out = std::conditional_t<std::is_same_v<Result, Compute>, T, Result>;
    const auto fn = [](T a, T b) {
      return static_cast<Out>(Fn{}(static_cast<Compute>(a), static_cast<Compute>(b)));
    };
    const T* a_base = Data<const T>(lhs);
    const T* b_base = Data<const T>(rhs);
    Out* y_base = Data<Out>(out);
    ForEachBroadcastRow<2>(
        out, {lhs, rhs},
        [&](int64_t out_offset, const auto& offsets, int64_t n, const auto& strides) {
          MapPairs(a_base + offsets[0], strides[0], b_base + offsets[1], strides[1],
                   y_base + out_offset, n, fn);
        });
  });
}

/// uint16 operands promote to (signed) int, whose product may overflow: unsigned ones multiply
/// as at least unsigned int, which wraps as ONNX's unsigned arithmetic does.
struct Multiply {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_unsigned_v<T>) {
      using Wide = std::common_type_t<T, unsigned>;
      return static_cast<T>(static_cast<Wide>(a) * static_cast<Wide>(b));
    } else {
      return static_cast<T>(a * b);
    }
  }
};

#define KILN_BINARY_FN(Name, Expr)    \
  struct Name {                       \
    template <typename T>             \
    auto operator()(T a, T b) const { \
      return Expr;                    \
    }                                 \
  }

KILN_BINARY_FN(Add, static_cast<T>(a + b));
KILN_BINARY_FN(Subtract, static_cast<T>(a - b));
KILN_BINARY_FN(Maximum, std::max(a, b));
KILN_BINARY_FN(Minimum, std::min(a, b));
KILN_BINARY_FN(Power, static_cast<T>(std::pow(a, b)));
KILN_BINARY_FN(LogicalAnd, static_cast<bool>(a&& b));
KILN_BINARY_FN(LogicalOr, static_cast<bool>(a || b));
KILN_BINARY_FN(LogicalXor, static_cast<bool>(a != b));
KILN_BINARY_FN(Equal, static_cast<bool>(a == b));
KILN_BINARY_FN(NotEqual, static_cast<bool>(a != b));
KILN_BINARY_FN(Less, static_cast<bool>(a < b));
KILN_BINARY_FN(LessEqual, static_cast<bool>(a <= b));
KILN_BINARY_FN(Greater, static_cast<bool>(a > b));
KILN_BINARY_FN(GreaterEqual, static_cast<bool>(a >= b));

#undef KILN_BINARY_FN

/// Integer division by zero is undefined behaviour in C++; report it instead.
template <typename T>
void CheckDivisor(T b) {
  if constexpr (std::is_integral_v<T>) {
    KILN_CHECK(b != 0, ValueError) << "kernel.cpu: integer division by zero";
  }
}

/// ONNX Div: integers truncate toward zero.
struct Divide {
  template <typename T>
  T operator()(T a, T b) const {
    CheckDivisor(b);
    return static_cast<T>(a / b);
  }
};

/// ONNX Mod with fmod = 1 (C fmod): the result takes the dividend's sign.
struct FMod {
  template <typename T>
  T operator()(T a, T b) const {
    CheckDivisor(b);
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};

/// ONNX Mod with fmod = 0 (numpy's mod): the result takes the divisor's sign.
struct Mod {
  template <typename T>
  T operator()(T a, T b) const {
    const T r = FMod{}(a, b);
    if constexpr (std::is_unsigned_v<T>) {
      return r;  // no signs to reconcile
    } else {
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
    }
  }
};

/// ONNX's arithmetic takes every integer and float type it has (the 8-bit integers for
/// quantized models' bookkeeping, the 16-bit floats for half-precision models).
constexpr unsigned kArithmeticTypes = kNumericTypes | kOtherIntegerTypes | kNarrowFloatTypes;
/// ONNX's BitShift is defined for the unsigned integers; Kiln's shifts also take int32/int64.
constexpr unsigned kShiftTypes = kU8 | kU16 | kU32 | kU64 | kI32 | kI64;

void ModKernel(const KernelCall& call) {
  if (call.Bool("fmod")) {
    Binary<kArithmeticTypes, FMod>(call);
  } else {
    Binary<kArithmeticTypes, Mod>(call);
  }
}

/// Shifts by a count outside [0, bit width) are undefined in C++; ONNX's unsigned shifts then
/// have no bits left, so they give 0.
template <bool kLeft>
struct Shift {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      constexpr auto kBits = static_cast<int64_t>(sizeof(T) * 8);
      const auto count = static_cast<int64_t>(b);
      if (count < 0 || count >= kBits) return T(0);
      using U = std::make_unsigned_t<T>;
      const auto bits = static_cast<U>(a);
      return static_cast<T>(kLeft ? static_cast<U>(bits << count) : static_cast<U>(bits >> count));
    } else {
      return a;  // never instantiated: the kernels take integer dtypes only
    }
  }
};

KILN_CPU_KERNEL("add", (Binary<kArithmeticTypes, Add>));
KILN_CPU_KERNEL("subtract", (Binary<kArithmeticTypes, Subtract>));
KILN_CPU_KERNEL("multiply", (Binary<kArithmeticTypes, Multiply>));
KILN_CPU_KERNEL("divide", (Binary<kArithmeticTypes, Divide>));
KILN_CPU_KERNEL("power", (Binary<kNumericTypes, Power>));
KILN_CPU_KERNEL("maximum", (Binary<kArithmeticTypes, Maximum>));
KILN_CPU_KERNEL("minimum", (Binary<kArithmeticTypes, Minimum>));
KILN_CPU_KERNEL("mod", ModKernel);
KILN_CPU_KERNEL("left_shift", (Binary<kShiftTypes, Shift<true>>));
KILN_CPU_KERNEL("right_shift", (Binary<kShiftTypes, Shift<false>>));
KILN_CPU_KERNEL("logical_and", (Binary<kBoolBit, LogicalAnd>));
KILN_CPU_KERNEL("logical_or", (Binary<kBoolBit, LogicalOr>));
KILN_CPU_KERNEL("logical_xor", (Binary<kBoolBit, LogicalXor>));
KILN_CPU_KERNEL("equal", (Binary<kNumericTypes | kBoolBit, Equal>));
KILN_CPU_KERNEL("not_equal", (Binary<kNumericTypes | kBoolBit, NotEqual>));
KILN_CPU_KERNEL("less", (Binary<kNumericTypes, Less>));
KILN_CPU_KERNEL("less_equal", (Binary<kNumericTypes, LessEqual>));
KILN_CPU_KERNEL("greater", (Binary<kNumericTypes, Greater>));
KILN_CPU_KERNEL("greater_equal", (Binary<kNumericTypes, GreaterEqual>));

// ---- where ---------------------------------------------------------------------------------

void Where(const KernelCall& call) {
  const Tensor cond = call.input(0);
  const Tensor x = call.input(1);
  const Tensor y = call.input(2);
  const Tensor out = call.output(0);
  RequireSameDType(call, 1, 2);
  DispatchElementBytes(call, x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* c_base = Data<const bool>(cond);
    const T* x_base = Data<const T>(x);
    const T* y_base = Data<const T>(y);
    T* out_base = Data<T>(out);
    ForEachBroadcastRow<3>(
        out, {cond, x, y},
        [&](int64_t out_offset, const auto& offsets, int64_t n, const auto& strides) {
          const bool* __restrict__ c = c_base + offsets[0];
          const T* __restrict__ a = x_base + offsets[1];
          const T* __restrict__ b = y_base + offsets[2];
          T* __restrict__ o = out_base + out_offset;
          for (int64_t j = 0; j < n; ++j) {
            o[j] = c[j * strides[0]] ? a[j * strides[1]] : b[j * strides[2]];
          }
        });
  });
}
KILN_CPU_KERNEL("where", Where);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
