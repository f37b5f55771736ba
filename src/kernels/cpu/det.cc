// det (ONNX Det): per matrix, LU decomposition with partial pivoting in double precision; the
// determinant is the product of the pivots, negated once per row swap.
#include <cmath>
#include <utility>
#include <vector>

#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

double Determinant(std::vector<double>& a, int64_t m) {
  double det = 1.0;
  for (int64_t k = 0; k < m; ++k) {
    int64_t pivot = k;
    for (int64_t i = k + 1; i < m; ++i) {
      if (std::fabs(a[i * m + k]) > std::fabs(a[pivot * m + k])) pivot = i;
    }
    if (a[pivot * m + k] == 0.0) return 0.0;
    if (pivot != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[pivot * m + j]);
      det = -det;
    }
    det *= a[k * m + k];
    for (int64_t i = k + 1; i < m; ++i) {
      const double factor = a[i * m + k] / a[k * m + k];
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= factor * a[k * m + j];
    }
  }
  return det;
}

void Det(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const int64_t m = in.ndim() >= 2 ? in.shape(in.ndim() - 1) : 0;
  const int64_t matrices = out.NumElements();
  DispatchDType<kFloatTypes>(call, in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = Data<const T>(in);
    T* y = Data<T>(out);
    runtime::ParallelFor(0, matrices, 1, [&](int64_t begin, int64_t end) {
      std::vector<double> a(static_cast<size_t>(m * m));
      for (int64_t b = begin; b < end; ++b) {
        for (int64_t i = 0; i < m * m; ++i) a[i] = static_cast<double>(x[b * m * m + i]);
        y[b] = static_cast<T>(Determinant(a, m));
      }
    });
  });
}
KILN_CPU_KERNEL("det", Det);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
