// Test kernels for the golden tests of FoldConstant: the core ops get their CPU kernels in the
// kernel library, so these tests give two test ops small float32 kernels of their own.
#ifndef KILN_TESTS_CPP_TRANSFORM_GOLDEN_OPS_H_
#define KILN_TESTS_CPP_TRANSFORM_GOLDEN_OPS_H_

namespace kiln {
namespace transform {
namespace testing {

/// Registers (once) `test.golden.add` (same-shape float32 add, with a kernel) and
/// `test.golden.negative_no_kernel` (float32 negation without one), and the predicates
/// `target.test_a` / `target.test_b` on core ops (golden_ops.cc lists them).
void RegisterGoldenOps();

}  // namespace testing
}  // namespace transform
}  // namespace kiln

#endif  // KILN_TESTS_CPP_TRANSFORM_GOLDEN_OPS_H_
