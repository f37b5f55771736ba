/// float16 and bfloat16 elements: C++ has no arithmetic type for them, so tensors of these
/// dtypes are read and written through NarrowFloat, which holds the 16 bits and converts to and
/// from the built-in numbers. Narrowing rounds to nearest, ties to even, as IEEE 754 requires
/// of a conversion; widening is exact; NaN stays NaN (quiet) and infinities stay infinite.
#ifndef KILN_RUNTIME_NARROW_FLOAT_H_
#define KILN_RUNTIME_NARROW_FLOAT_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace kiln {

/// A binary floating-point number of 16 bits: 1 sign bit, `kExponentBits` exponent bits with
/// IEEE 754's bias, `kMantissaBits` stored mantissa bits, subnormals, infinities and NaNs.
template <int kExponentBits, int kMantissaBits>
class NarrowFloat {
  static_assert(1 + kExponentBits + kMantissaBits == 16, "a NarrowFloat is 16 bits wide");

 public:
  NarrowFloat() = default;

  /// `value` rounded to the nearest NarrowFloat, ties to even. Integers go through double, so
  /// those beyond 2^53 are rounded twice.
  template <typename Number, typename = std::enable_if_t<std::is_arithmetic_v<Number>>>
  explicit NarrowFloat(Number value) : bits_(RoundedBits(static_cast<double>(value))) {}

  /// Another format's value, rounded as from its (exact) float.
  template <int kOtherExponentBits, int kOtherMantissaBits>
  explicit NarrowFloat(NarrowFloat<kOtherExponentBits, kOtherMantissaBits> other)
      : NarrowFloat(static_cast<float>(other)) {}

  /// The value as a built-in number: exact for float and double (every NarrowFloat is a
  /// float), C++'s float conversion for the others (integers truncate toward zero).
  template <typename Number, typename = std::enable_if_t<std::is_arithmetic_v<Number>>>
  explicit operator Number() const {
    return static_cast<Number>(ToFloat());
  }

  static NarrowFloat FromBits(uint16_t bits) {
    NarrowFloat value;
    value.bits_ = bits;
    return value;
  }
  uint16_t bits() const { return bits_; }

 private:
  static constexpr int kBias = (1 << (kExponentBits - 1)) - 1;
  /// Exponent of the smallest normal number; subnormals share its scale.
  static constexpr int kMinExponent = 1 - kBias;
  static constexpr uint32_t kSignBit = 1U << 15;
  static constexpr uint32_t kExponentMask = ((1U << kExponentBits) - 1) << kMantissaBits;
  static constexpr uint32_t kMantissaMask = (1U << kMantissaBits) - 1;
  static constexpr uint32_t kQuietBit = 1U << (kMantissaBits - 1);

  static uint16_t RoundedBits(double value) {
    const uint32_t sign = std::signbit(value) ? kSignBit : 0;
    if (std::isnan(value)) {
      // The payload's leading bits, as a hardware conversion keeps them.
      uint64_t wide;
      std::memcpy(&wide, &value, sizeof(wide));
      const auto payload = static_cast<uint32_t>(wide >> (52 - kMantissaBits)) & kMantissaMask;
      return static_cast<uint16_t>(sign | kExponentMask | kQuietBit | payload);
    }
    if (std::isinf(value)) return static_cast<uint16_t>(sign | kExponentMask);
    // The value in units of the last mantissa place at its exponent (at the subnormals' scale
    // below the normals): scaling by a power of two is exact, so only this rounding is done.
    const double magnitude = std::fabs(value);
    const int exponent =
        magnitude == 0 ? kMinExponent : std::max(std::ilogb(magnitude), kMinExponent);
    const double units = std::ldexp(magnitude, kMantissaBits - exponent);
    double whole = std::floor(units);
    const double rest = units - whole;
    if (rest > 0.5 || (rest == 0.5 && std::fmod(whole, 2.0) != 0)) whole += 1;
    // A normal number's units include the implicit leading 1 (2^kMantissaBits), which lands on
    // the exponent field: one below the biased exponent, and the carry of a rounding up to the
    // next power of two lands there too. Subnormals (exponent field 0) come out alike.
    const double field = std::ldexp(exponent + kBias - 1, kMantissaBits) + whole;
    // Past the largest finite number: infinity.
    const auto bits = static_cast<uint32_t>(std::min(field, static_cast<double>(kExponentMask)));
    return static_cast<uint16_t>(sign | bits);
  }

  float ToFloat() const {
    const uint32_t exponent_field = (bits_ & kExponentMask) >> kMantissaBits;
    const uint32_t mantissa = bits_ & kMantissaMask;
    const float sign = (bits_ & kSignBit) != 0 ? -1.0F : 1.0F;
    if ((bits_ & kExponentMask) == kExponentMask) {
      if (mantissa == 0) return sign * INFINITY;
      // float's NaN with the same payload, in its leading bits.
      const uint32_t wide =
          (bits_ & kSignBit ? 1U << 31 : 0U) | 0x7F800000U | (mantissa << (23 - kMantissaBits));
      float nan;
      std::memcpy(&nan, &wide, sizeof(nan));
      return nan;
    }
    if (exponent_field == 0) {
      return sign * std::ldexp(static_cast<float>(mantissa), kMinExponent - kMantissaBits);
    }
    const auto significand = static_cast<float>(mantissa | (1U << kMantissaBits));
    return sign * std::ldexp(significand, static_cast<int>(exponent_field) - kBias - kMantissaBits);
  }

  uint16_t bits_;
};

/// IEEE 754 binary16 (numpy's float16).
using Float16 = NarrowFloat<5, 10>;
/// bfloat16: float's exponent range with 8 significant bits (float's upper half).
using BFloat16 = NarrowFloat<8, 7>;

template <typename T>
inline constexpr bool kIsNarrowFloat = false;
template <int kExponentBits, int kMantissaBits>
inline constexpr bool kIsNarrowFloat<NarrowFloat<kExponentBits, kMantissaBits>> = true;

}  // namespace kiln

#endif  // KILN_RUNTIME_NARROW_FLOAT_H_
