// C code generation for the tensor-level IR: prim_funcs compiled by the host compiler and run on
// tensors, checked against the same arithmetic written out in the test.
#include <kiln/ffi/function.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/module.h>
#include <kiln/tir/node.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "testing/expect_error.h"

namespace kiln {
namespace tir {
namespace {

constexpr DLDevice kCpu{kDLCPU, 0};

runtime::Module BuildC(const std::string& text) {
  return Function::GetGlobalRequired("tir.BuildC")(ParseText(text)).cast<runtime::Module>();
}

template <typename T>
Tensor Filled(const std::vector<int64_t>& shape, DLDataType dtype, const std::vector<T>& values) {
  Tensor tensor = runtime::Empty(shape, dtype, kCpu);
  std::copy(values.begin(), values.end(), static_cast<T*>(tensor.data()));
  return tensor;
}

const char* kAddRelu = R"(prim_func(name=add_relu, params=[
    buffer(name=a, dtype=float32, shape=[n, 4]), buffer(name=b, dtype=float32, shape=[4]),
    buffer(name=out, dtype=float32, shape=[n, 4])], body=
  for(var=i, extent=n, kind=parallel, body=
    for(var=j, extent=4, kind=vectorized, body=
      store(buffer=%out, indices=[i, j], value=max(
        a=add(a=load(buffer=%a, indices=[i, j]), b=load(buffer=%b, indices=[j])),
        b=float(value=0.0, dtype=float32)))))))";

TEST(TirCodegenCTest, AFunctionWithASymbolicSizeRunsOnTensorsOfAnySize) {
  const runtime::Module module = BuildC(kAddRelu);
  const Function add_relu = module.GetFunctionRequired("add_relu");
  const DLDataType f32{kDLFloat, 32, 1};
  const std::vector<float> b{0.5f, -1.0f, 2.0f, -3.0f};
  for (int64_t n : {1, 3}) {
    std::vector<float> a(static_cast<size_t>(n * 4));
    for (size_t k = 0; k < a.size(); ++k) a[k] = static_cast<float>(k) - 4.5f;
    Tensor out = runtime::Empty({n, 4}, f32, kCpu);
    add_relu(Filled({n, 4}, f32, a), Filled<float>({4}, f32, b), out);
    const auto* y = static_cast<const float*>(out.data());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(y[k], std::max(a[k] + b[k % 4], 0.0f)) << k;
  }
  test_util::ExpectError(
      [&] {
        add_relu(runtime::Empty({2, 4}, f32, kCpu), runtime::Empty({5}, f32, kCpu),
                 runtime::Empty({2, 4}, f32, kCpu));
      },
      "ValueError", {"add_relu: argument 'b' has the wrong extent at axis 0", "needs 4"});
  test_util::ExpectError(
      [&] {
        add_relu(runtime::Empty({2, 4}, DLDataType{kDLInt, 32, 1}, kCpu),
                 runtime::Empty({4}, f32, kCpu), runtime::Empty({2, 4}, f32, kCpu));
      },
      "ValueError", {"argument 0 ('a') must be a compact CPU float32 tensor of rank 2"});
}

TEST(TirCodegenCTest, IntegerArithmeticFloorsAndBranchesAsTheIrSays) {
  // out[i] = i < 3 ? (x[i] % 4) * min(x[i], 2) : floordiv(i - 7, 2) as an int64 index value.
  const runtime::Module module = BuildC(R"(prim_func(name=ints, params=[
      buffer(name=x, dtype=int32, shape=[m]), buffer(name=out, dtype=int64, shape=[m])], body=
    for(var=i, extent=m, kind=serial, body=
      if(cond=lt(a=index(index=i, dtype=int64), b=int(value=3, dtype=int64)),
         then=store(buffer=%out, indices=[i], value=cast(value=mul(
           a=mod(a=load(buffer=%x, indices=[i]), b=int(value=4, dtype=int32)),
           b=min(a=load(buffer=%x, indices=[i]), b=int(value=2, dtype=int32))), dtype=int64)),
         else=store(buffer=%out, indices=[i], value=index(index=floordiv(i - 7, 2), dtype=int64))))))");
  const std::vector<int32_t> x{-5, 6, 1, 9, 0};
  Tensor out = runtime::Empty({5}, DLDataType{kDLInt, 64, 1}, kCpu);
  module.GetFunctionRequired("ints")(Filled<int32_t>({5}, DLDataType{kDLInt, 32, 1}, x), out);
  const auto* y = static_cast<const int64_t*>(out.data());
  for (int64_t i = 0; i < 5; ++i) {
    const int64_t expected =
        i < 3 ? (x[i] % 4) * std::min(x[i], 2) : static_cast<int64_t>(std::floor((i - 7) / 2.0));
    EXPECT_EQ(y[i], expected) << i;
  }
}

TEST(TirCodegenCTest, AllocatedBuffersHoldIntermediatesOnTheStackOrTheHeap) {
  // out[i, j] = 2 * a[i, j] + 1 through a temporary row: of 4 elements (on the stack), or of a
  // symbolic m (on the heap).
  for (const char* row : {"4", "m"}) {
    const std::string text = std::string(R"(prim_func(name=twice, params=[
        buffer(name=a, dtype=float32, shape=[n, m]), buffer(name=out, dtype=float32, shape=[n, m])],
      body=for(var=i, extent=n, kind=serial, body=
        allocate(buffer=buffer(name=t, dtype=float32, shape=[)") +
                             row + R"(]), scope=local, body=
          seq(stmts=[
            for(var=j, extent=m, kind=serial, body=store(buffer=%t, indices=[j],
              value=mul(a=load(buffer=%a, indices=[i, j]), b=float(value=2.0, dtype=float32)))),
            for(var=j, extent=m, kind=serial, body=store(buffer=%out, indices=[i, j],
              value=add(a=load(buffer=%t, indices=[j]), b=float(value=1.0, dtype=float32)))),
          ])))))";
    const DLDataType f32{kDLFloat, 32, 1};
    const std::vector<float> a{1, 2, 3, 4, -1, -2, -3, -4};
    Tensor out = runtime::Empty({2, 4}, f32, kCpu);
    BuildC(text).GetFunctionRequired("twice")(Filled<float>({2, 4}, f32, a), out);
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(static_cast<const float*>(out.data())[k], 2 * a[k] + 1) << row << " " << k;
    }
  }
}

TEST(TirCodegenCTest, NodesWithoutCAreNamedAndTheSourceCanBeRead) {
  const std::string source =
      Function::GetGlobalRequired("tir.GenerateC")(ParseText(kAddRelu)).cast<std::string>();
  EXPECT_NE(source.find("int add_relu(void* self, const KilnAny* args"), std::string::npos);
  EXPECT_NE(source.find("#pragma GCC ivdep"), std::string::npos);
  test_util::ExpectError(
      [] {
        Function::GetGlobalRequired("tir.GenerateC")(ParseText(R"(prim_func(name=f, params=[],
            body=allocate(buffer=buffer(name=t, dtype=float32, shape=[4]), scope=shared,
                          body=evaluate(value=int(value=0, dtype=int32)))))"));
      },
      "NotImplementedError", {"no C for an allocation in scope 'shared'"});
}

}  // namespace
}  // namespace tir
}  // namespace kiln
