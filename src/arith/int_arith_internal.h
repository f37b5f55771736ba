// Checked int64 arithmetic shared by the builders, Evaluate and the simplifier.
#ifndef KILN_SRC_ARITH_INT_ARITH_INTERNAL_H_
#define KILN_SRC_ARITH_INT_ARITH_INTERNAL_H_

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <optional>

namespace kiln {
namespace arith {
namespace internal {

inline std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<int64_t> CheckedSub(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_sub_overflow(a, b, &out)) return std::nullopt;
  return out;
}

inline std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

/// floor(a / b) for b != 0; nullopt only for INT64_MIN / -1.
inline std::optional<int64_t> CheckedFloorDiv(int64_t a, int64_t b) {
  if (b == -1) return CheckedSub(0, a);
  const int64_t quotient = a / b;
  // C++ truncates toward zero; step down when the exact quotient is negative and not whole.
  return (a % b != 0 && ((a < 0) != (b < 0))) ? quotient - 1 : quotient;
}

/// a - b * floor(a / b) for b != 0, of the sign of b; never overflows.
inline int64_t FloorModOf(int64_t a, int64_t b) {
  if (b == -1) return 0;  // INT64_MIN % -1 is undefined behaviour in C++
  const int64_t remainder = a % b;
  return (remainder != 0 && ((remainder < 0) != (b < 0))) ? remainder + b : remainder;
}

/// gcd(|a|, positive), in [1, positive]; computed unsigned so that |INT64_MIN| is fine.
inline int64_t GcdWithPositive(int64_t a, int64_t positive) {
  const uint64_t magnitude = a < 0 ? 0 - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  return static_cast<int64_t>(std::gcd(magnitude, static_cast<uint64_t>(positive)));
}

}  // namespace internal
}  // namespace arith
}  // namespace kiln

#endif  // KILN_SRC_ARITH_INT_ARITH_INTERNAL_H_
