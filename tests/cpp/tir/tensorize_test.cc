// Tensorize: a loop nest matched against a tensor intrinsic's description and replaced by its
// implementation, compared with the expected function written out by hand; then compiled and
// run against the same product computed in the test; and the errors that name the difference.
#include <kiln/ffi/function.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/module.h>
#include <kiln/tir/schedule.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/expect_error.h"

namespace kiln {
namespace tir {
namespace {

/// y[i, j] = sum over r of x[i + 1, r] * w[r, j] for a 2 x 3 y: x's region starts at row 1.
const char* kShiftedMatmul = R"tir(prim_func(name=mm, params=[
    buffer(name=x, dtype=float32, shape=[3, 4]), buffer(name=w, dtype=float32, shape=[4, 3]),
    buffer(name=y, dtype=float32, shape=[2, 3])], body=
  for(var=i, extent=2, kind=serial, body=
    for(var=j, extent=3, kind=serial, body=
      seq(stmts=[
        store(buffer=%y, indices=[i, j], value=float(value=0.0, dtype=float32)),
        for(var=r, extent=4, kind=serial, body=
          store(buffer=%y, indices=[i, j], value=add(a=load(buffer=%y, indices=[i, j]),
            b=mul(a=load(buffer=%x, indices=[i + 1, r]), b=load(buffer=%w, indices=[r, j]))))),
      ])))))tir";

TEST(TensorizeTest, AMatchedNestBecomesTheMicroKernelCallOnItsRegions) {
  const Node tensorized = Tensorize(ParseText(kShiftedMatmul), "i", "sgemm");
  const Node expected = ParseText(R"tir(prim_func(name=mm, params=[
      buffer(name=x, dtype=float32, shape=[3, 4]), buffer(name=w, dtype=float32, shape=[4, 3]),
      buffer(name=y, dtype=float32, shape=[2, 3])], body=
    evaluate(value=call_packed(name="tir.micro_kernel.sgemm", args=[
      address(buffer=%x, indices=[1, 0]), address(buffer=%w, indices=[0, 0]),
      address(buffer=%y, indices=[0, 0]),
      index(index=2, dtype=int64), index(index=3, dtype=int64), index(index=4, dtype=int64),
      index(index=4, dtype=int64), index(index=3, dtype=int64), index(index=3, dtype=int64)]))))tir");
  EXPECT_TRUE(StructuralEqual(tensorized, expected)) << AsText(tensorized);

  const DLDataType f32{kDLFloat, 32, 1};
  Tensor x = runtime::Empty({3, 4}, f32, DLDevice{kDLCPU, 0});
  Tensor w = runtime::Empty({4, 3}, f32, DLDevice{kDLCPU, 0});
  Tensor y = runtime::Empty({2, 3}, f32, DLDevice{kDLCPU, 0});
  auto* xs = static_cast<float*>(x.data());
  auto* ws = static_cast<float*>(w.data());
  for (int k = 0; k < 12; ++k) xs[k] = static_cast<float>(k) * 0.5f - 2.0f;
  for (int k = 0; k < 12; ++k) ws[k] = static_cast<float>(k % 5) - 1.0f;
  const auto module = Function::GetGlobalRequired("tir.BuildC")(tensorized).cast<runtime::Module>();
  module.GetFunctionRequired("mm")(x, w, y);
  const auto* ys = static_cast<const float*>(y.data());
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      float sum = 0.0f;
      for (int r = 0; r < 4; ++r) sum += xs[(i + 1) * 4 + r] * ws[r * 3 + j];
      EXPECT_FLOAT_EQ(ys[i * 3 + j], sum) << i << ", " << j;
    }
  }
}

TEST(TensorizeTest, TheGemmCallsBackOnEachTileOnceWhenItIsDone) {
  // y = x * w^T (x: 37 x 5, w: 70 x 5), then y = 2 y + 1 by a callback over each finished tile:
  // a tile visited twice, or before its product is complete, gives another value.
  const Node func = ParseText(R"tir(prim_func(name=f, params=[
      buffer(name=x, dtype=float32, shape=[37, 5]), buffer(name=w, dtype=float32, shape=[70, 5]),
      buffer(name=y, dtype=float32, shape=[37, 70])], body=
    evaluate(value=call_packed(name="tir.micro_kernel.sgemm_bt", args=[
      address(buffer=%x, indices=[0, 0]), address(buffer=%w, indices=[0, 0]),
      address(buffer=%y, indices=[0, 0]),
      index(index=37, dtype=int64), index(index=70, dtype=int64), index(index=5, dtype=int64),
      index(index=5, dtype=int64), index(index=5, dtype=int64), index(index=70, dtype=int64),
      callback(params=[r0, rows, c0, cols], body=
        for(var=i, extent=rows, kind=serial, body=
          for(var=j, extent=cols, kind=vectorized, body=
            store(buffer=%y, indices=[r0 + i, c0 + j], value=add(
              a=mul(a=load(buffer=%y, indices=[r0 + i, c0 + j]), b=float(value=2.0, dtype=float32)),
              b=float(value=1.0, dtype=float32))))))]))))tir");
  const DLDataType f32{kDLFloat, 32, 1};
  const DLDevice cpu{kDLCPU, 0};
  Tensor x = runtime::Empty({37, 5}, f32, cpu);
  Tensor w = runtime::Empty({70, 5}, f32, cpu);
  Tensor y = runtime::Empty({37, 70}, f32, cpu);
  auto* xs = static_cast<float*>(x.data());
  auto* ws = static_cast<float*>(w.data());
  for (int k = 0; k < 37 * 5; ++k) xs[k] = static_cast<float>(k % 7) - 3.0f;
  for (int k = 0; k < 70 * 5; ++k) ws[k] = static_cast<float>(k % 3) * 0.5f;
  Function::GetGlobalRequired("tir.BuildC")(func).cast<runtime::Module>().GetFunctionRequired("f")(
      x, w, y);
  const auto* ys = static_cast<const float*>(y.data());
  for (int i = 0; i < 37; ++i) {
    for (int j = 0; j < 70; ++j) {
      float dot = 0.0f;
      for (int r = 0; r < 5; ++r) dot += xs[i * 5 + r] * ws[j * 5 + r];
      ASSERT_FLOAT_EQ(ys[i * 70 + j], 2.0f * dot + 1.0f) << i << ", " << j;
    }
  }
}

TEST(TensorizeTest, ANestThatDiffersIsAValueErrorNamingTheLoopAndTheDifference) {
  const Node func = ParseText(kShiftedMatmul);
  test_util::ExpectError([&] { Tensorize(func, "i", "sgemm_bt"); }, "ValueError",
                         {"loop 'i' of mm does not compute what intrinsic 'sgemm_bt' describes",
                          "buffer 'w'", "index r of axis 0"});
  test_util::ExpectError([&] { Tensorize(func, "j", "sgemm"); }, "ValueError",
                         {"loop 'j' of mm", "the description has 'for' where the nest has 'seq'"});
  test_util::ExpectError([&] { Tensorize(func, "i", "no_such_intrin"); }, "ValueError",
                         {"no tensor intrinsic 'no_such_intrin'", "sgemm", "sgemm_bt"});
  test_util::ExpectError(
      [&] {
        RegisterTensorIntrin("no_loop", func.field_as<Array<Any>>("params")[0].cast<Node>(),
                             Function::FromTyped([]() {}));
      },
      "ValueError", {"RegisterTensorIntrin('no_loop')", "must be a prim_func"});
}

}  // namespace
}  // namespace tir
}  // namespace kiln
