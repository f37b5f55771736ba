/* float32 erf and exp as plain arithmetic (polynomials and a bit cast), so that the loops
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

/* e^x for x <= 0 (softmax's inputs less their maximum), Cephes' expf: x = n ln 2 + r with
 * |r| <= ln 2 / 2, e^r by a degree-7 polynomial, 2^n from the exponent bits; within 1.5 ulp.
 * Below ln(FLT_MIN) it returns FLT_MIN-sized values instead of 0 or subnormals; NaN stays
 * NaN. */
static inline float kiln_fast_exp_nonpositive(float x) {
  const float log2e = 1.44269504088896341F;
  const float z = x < -87.3F ? -87.3F : x; /* keeps NaN */
  const float scaled = z * log2e;
  const float t = -126.F < scaled ? scaled : -126.F; /* turns NaN into a finite n */
  /* n = t rounded to the nearest integer, read from the bits of t + 1.5 * 2^23, whose low
   * mantissa bits then hold it: no float-to-int conversion, which GCC 12 vectorizes for some
   * x86 targets only. */
  const float shifted = t + 12582912.F;
  int32_t shifted_bits = 0;
  memcpy(&shifted_bits, &shifted, sizeof(shifted_bits));
  const int32_t n = shifted_bits - 0x4B400000;
  const float nf = shifted - 12582912.F;
  const float r = z - nf * 0.693359375F - nf * -2.12194440e-4F;
  float p = 1.9875691500E-4F * r + 1.3981999507E-3F;
  p = p * r + 8.3334519073E-3F;
  p = p * r + 4.1665795894E-2F;
  p = p * r + 1.6666665459E-1F;
  p = p * r + 5.0000001201E-1F;
  p = p * (r * r) + r + 1.F;
  const uint32_t bits = (uint32_t)(n + 127) << 23;
  float scale = 0.F;
  memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

/* e^x over the whole float32 range: kiln_fast_exp_nonpositive below 0, and above it the square
 * of 1 / e^(-x/2) (within 5 ulp), which overflows to infinity where e^x does: one evaluation
 * per element, and no branch in the loop. */
static inline float kiln_fast_expf(float x) {
  const float e = kiln_fast_exp_nonpositive(x < 0.F ? x : -0.5F * x);
  const float inverse = 1.F / e;
  return x < 0.F ? e : inverse * inverse;
}

#endif /* KILN_RUNTIME_FAST_MATH_H_ */
