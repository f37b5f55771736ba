// nonzero: the positions of the non-zero elements, column j holding the index of the j-th one
// in row-major order. The output was sized by nonzero_count over the same input.
#include "kernel_util.h"

namespace kiln {
namespace kernels {
namespace cpu {
namespace {

void Nonzero(const KernelCall& call) {
  const Tensor in = call.input(0);
  const Tensor out = call.output(0);
  const std::vector<int64_t> shape = ShapeOf(in);
  const auto rank = static_cast<int64_t>(shape.size());
  const int64_t count = out.shape(1);
  auto* positions = Data<int64_t>(out);
  int64_t found = 0;
  DispatchElementBytes(call, in.dtype(), [&](auto tag) {
    using U = decltype(tag);
    const U* data = Data<const U>(in);
    const bool is_float = IsFloatCode(in.dtype());
    std::vector<int64_t> index(shape.size(), 0);
    for (int64_t i = 0; i < NumElements(in.dl_tensor()); ++i) {
      if (IsNonzeroBits(data[i], is_float)) {
        KILN_CHECK(found < count, ValueError)
            << call.Prefix() << "the output holds " << count << " positions, the input has more";
        for (int64_t d = 0; d < rank; ++d) positions[d * count + found] = index[d];
        ++found;
      }
      for (int64_t d = rank - 1; d >= 0 && ++index[d] == shape[d]; --d) index[d] = 0;
    }
  });
  KILN_CHECK(found == count, ValueError)
      << call.Prefix() << "the output holds " << count << " positions, the input has " << found;
}
KILN_CPU_KERNEL("nonzero", Nonzero);

}  // namespace
}  // namespace cpu
}  // namespace kernels
}  // namespace kiln
