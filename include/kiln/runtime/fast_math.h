/* float32 erf, exp and tanh as plain arithmetic (polynomials and a bit cast), so that the loops
 * calling them vectorize, which libm calls do not. C and C++: Kiln's CPU kernels and the C the
 * tensor-level IR generates (kiln/tir/codegen_c.h) use these same functions, so a fused loop
 * computes what the kernels compute. */
#ifndef KILN_RUNTIME_FAST_MATH_H_
#define KILN_RUNTIME_FAST_MATH_H_

#include <math.h>
#include <stdint.h>
#include <string.h>

/* erf as the odd rational function of Eigen's and XLA's fast erf (x clamped to [-4, 4], beyond
 * which erf is +-1 in float32): within 4.2e-7 of erf. NaN is clamped to -4, as the kernels
 * always did. */
static inline float kiln_fast_erff(float x) {
  const float low = -4.F < x ? x : -4.F;
  const float z = low < 4.F ? low : 4.F;
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

/* e^z for z in [-87.3, 88.73] or NaN, Cephes' expf: z = n ln 2 + r with |r| <= ln 2 / 2, e^r
 * by a degree-7 polynomial, 2^n from the exponent bits; within 1.5 ulp. n reaches 128 only at
 * the top of the range, where e^z overflows to infinity as it should. No division, so a loop of
 * it vectorizes into multiply-adds. */
static inline float kiln_fast_exp_in_range(float z) {
  const float log2e = 1.44269504088896341F;
  /* n = z log2(e) rounded to the nearest integer, read from the bits of it + 1.5 * 2^23, whose
   * low mantissa bits then hold it: no float-to-int conversion, which GCC 12 vectorizes for
   * some x86 targets only. The bits are unsigned so that a NaN's (whose result is NaN anyway)
   * wrap instead of overflowing. No select on the way: GCC's partial redundancy elimination
   * would compute the polynomial once per side of it. */
  const float shifted = z * log2e + 12582912.F;
  uint32_t shifted_bits = 0;
  memcpy(&shifted_bits, &shifted, sizeof(shifted_bits));
  const uint32_t biased = shifted_bits - 0x4B400000U + 127U; /* n + 127 */
  const float nf = shifted - 12582912.F;
  const float r = z - nf * 0.693359375F - nf * -2.12194440e-4F;
  float p = 1.9875691500E-4F * r + 1.3981999507E-3F;
  p = p * r + 8.3334519073E-3F;
  p = p * r + 4.1665795894E-2F;
  p = p * r + 1.6666665459E-1F;
  p = p * r + 5.0000001201E-1F;
  p = p * (r * r) + r + 1.F;
  /* 2^128 has no float exponent: 2^127 times 2. */
  const uint32_t top = biased == 255U;
  const uint32_t bits = (biased - top) << 23;
  const uint32_t factor_bits = (127U + top) << 23;
  float scale = 0.F;
  float factor = 0.F;
  memcpy(&scale, &bits, sizeof(scale));
  memcpy(&factor, &factor_bits, sizeof(factor));
  return p * factor * scale;
}

/* e^x for x <= 0 (softmax's inputs less their maximum). Below -87.3, just above ln(FLT_MIN),
 * it returns 0 rather than a subnormal: a subnormal operand costs Intel CPUs a microcode assist
 * in every multiply-add that reads it, and a softmax's masked entries divided by its sum would
 * all be subnormal (GPT-2's attention probabilities times V ran 60x slower). NaN stays NaN. */
static inline float kiln_fast_exp_nonpositive(float x) {
  const float e = kiln_fast_exp_in_range(x < -87.3F ? -87.3F : x); /* keeps NaN */
  return x < -87.3F ? 0.F : e;
}

/* e^x over the whole float32 range, within 1.5 ulp: infinity above ln(FLT_MAX), 0 below -87.3
 * (as kiln_fast_exp_nonpositive), NaN kept. */
static inline float kiln_fast_expf(float x) {
  const float low = x < -87.3F ? -87.3F : x;                           /* keeps NaN */
  const float e = kiln_fast_exp_in_range(low > 88.73F ? 88.73F : low); /* e^88.73 overflows */
  return x < -87.3F ? 0.F : e;
}

/* tanh through the exp above: (1 - e) / (1 + e) with e = e^(-2|x|) <= 1, and near 0, where
 * that difference loses precision, its Taylor series; within 2e-7 of tanh (absolute). NaN
 * stays NaN. */
static inline float kiln_fast_tanhf(float x) {
  const float a = fabsf(x);
  const float e = kiln_fast_exp_nonpositive(-2.F * a);
  const float x2 = x * x;
  const float series = x * (1.F + x2 * (-1.F / 3 + x2 * (2.F / 15 + x2 * (-17.F / 315))));
  return a < 0.0625F ? series : copysignf((1.F - e) / (1.F + e), x);
}

#endif /* KILN_RUNTIME_FAST_MATH_H_ */
