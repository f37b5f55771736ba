// float32 erf and exp as plain arithmetic (polynomials and a bit cast), so that the loops
// calling them vectorize; the libm calls they replace do not.
#ifndef KILN_SRC_KERNELS_CPU_FAST_MATH_H_
#define KILN_SRC_KERNELS_CPU_FAST_MATH_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace kiln {
namespace kernels {
namespace cpu {

/// erf as the odd rational function of Eigen's and XLA's fast erf (x clamped to [-4, 4],
/// beyond which erf is +-1 in float32): within 4.2e-7 of erf.
inline float FastErf(float x) {
  const float z = std::min(4.F, std::max(-4.F, x));
  const float z2 = z * z;
  float p = z2 * -2.72614225801306e-10F + 2.77068142495902e-08F;
  p = p * z2 + -2.10102402082508e-06F;
  p = p * z2 + -5.69250639462346e-05F;
  p = p * z2 + -7.34990630326855e-04F;
  p = p * z2 + -2.95459980854025e-03F;
  p = p * z2 + -1.60960333262415e-02F;
  float q = z2 * -1.45660718464996e-05F + -2.13374055278905e-04F;
  q = q * z2 + -1.68282697438203e-03F;
  q = q * z2 + -7.37332916720468e-03F;
  q = q * z2 + -1.42647390514189e-02F;
  return z * p / q;
}

/// e^x for x <= 0 (softmax's inputs less their maximum), Cephes' expf: x = n ln 2 + r with
/// |r| <= ln 2 / 2, e^r by a degree-7 polynomial, 2^n from the exponent bits; within 1.5 ulp.
/// Below ln(FLT_MIN) it returns FLT_MIN-sized values instead of 0 or subnormals; NaN stays NaN.
inline float FastExpNonPositive(float x) {
  constexpr float kLog2E = 1.44269504088896341F;
  const float z = x < -87.3F ? -87.3F : x;        // keeps NaN
  const float t = std::max(-126.F, z * kLog2E);   // turns NaN into a finite n
  const auto n = static_cast<int32_t>(t - 0.5F);  // t <= 0: truncating t - 0.5 rounds t
  const auto nf = static_cast<float>(n);
  const float r = z - nf * 0.693359375F - nf * -2.12194440e-4F;
  float p = 1.9875691500E-4F * r + 1.3981999507E-3F;
  p = p * r + 8.3334519073E-3F;
  p = p * r + 4.1665795894E-2F;
  p = p * r + 1.6666665459E-1F;
  p = p * r + 5.0000001201E-1F;
  p = p * (r * r) + r + 1.F;
  const uint32_t bits = static_cast<uint32_t>(n + 127) << 23;
  float scale = 0.F;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

}  // namespace cpu
}  // namespace kernels
}  // namespace kiln

#endif  // KILN_SRC_KERNELS_CPU_FAST_MATH_H_
