// The "opencl" module kind: kernels built from source and launched through module functions,
// saved and loaded back, and the errors a user meets (build log, unknown kernel, bad arguments).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <kiln/runtime/module.h>

#include <string>
#include <vector>

#include "opencl_test_util.h"

namespace kiln {
namespace opencl_test {
namespace {

using runtime::Module;
using ::testing::AllOf;
using ::testing::HasSubstr;

// c = alpha * a + b over the first n elements; the global size may be rounded up past n.
constexpr const char* kSaxpySource = R"(
__kernel void saxpy(__global const float* a, __global const float* b, __global float* c,
                    float alpha, int n) {
  int i = get_global_id(0);
  if (i < n) c[i] = alpha * a[i] + b[i];
}
__kernel void fill(__global long* out, long value, uint count) {
  size_t i = get_global_id(0);
  if (i < count) out[i] = value;
}
)";

Module CreateModule(const std::string& source, const std::vector<std::string>& kernels) {
  Array<String> names;
  for (const std::string& kernel : kernels) names.push_back(String(kernel));
  return Function::GetGlobalRequired("runtime.opencl.ModuleCreate")(source, names).cast<Module>();
}

/// Device buffers for saxpy over `n` elements, filled from the host.
class SaxpyBuffers {
 public:
  SaxpyBuffers(runtime::DeviceApiRef api, int64_t n) : api_(api), n_(n), a_(n), b_(n) {
    for (int64_t i = 0; i < n; ++i) {
      a_[i] = 0.25f * static_cast<float>(i);
      b_[i] = 1000.0f - static_cast<float>(i);
    }
    for (int i = 0; i < 3; ++i) {
      buffers_[i] = api_.Alloc(0, n * sizeof(float), 64);
      views_[i].tensor.data = buffers_[i];
    }
    Upload(a_, buffers_[0]);
    Upload(b_, buffers_[1]);
  }
  ~SaxpyBuffers() {
    try {
      for (void* buffer : buffers_) api_.Free(0, buffer);
    } catch (const Error& error) {
      ADD_FAILURE() << "freeing the saxpy buffers: " << error.what();
    }
  }
  SaxpyBuffers(const SaxpyBuffers&) = delete;
  SaxpyBuffers& operator=(const SaxpyBuffers&) = delete;

  DLTensor* a() { return &views_[0].tensor; }
  DLTensor* b() { return &views_[1].tensor; }
  DLTensor* c() { return &views_[2].tensor; }

  /// Checks c against alpha * a + b computed on the host.
  void ExpectResult(float alpha) {
    std::vector<float> c(n_, 0.0f);
    TensorView host(c.data(), n_, kCPU, kFloat32);
    api_.Copy(views_[2].tensor, host.tensor);
    api_.Sync(0);
    for (int64_t i = 0; i < n_; ++i) ASSERT_FLOAT_EQ(c[i], alpha * a_[i] + b_[i]) << "at " << i;
  }

 private:
  void Upload(std::vector<float>& values, void* buffer) {
    TensorView host(values.data(), n_, kCPU, kFloat32);
    TensorView device(buffer, n_, kOpenCL0, kFloat32);
    api_.Copy(host.tensor, device.tensor);
  }

  runtime::DeviceApiRef api_;
  int64_t n_;
  std::vector<float> a_, b_;
  void* buffers_[3] = {};
  TensorView views_[3] = {{nullptr, n_, kOpenCL0, kFloat32},
                          {nullptr, n_, kOpenCL0, kFloat32},
                          {nullptr, n_, kOpenCL0, kFloat32}};
};

TEST_F(OpenCLTest, RunsAKernelThroughTheModuleFunction) {
  Module module = CreateModule(kSaxpySource, {"saxpy", "fill"});
  EXPECT_EQ(module->kind(), "opencl");
  EXPECT_EQ(module->compatibility(), "opencl/1");
  EXPECT_EQ(module->runtime_library(), "libkiln_runtime_opencl.so");

  constexpr int64_t kN = 1000;
  SaxpyBuffers buffers(Api(), kN);
  // The global size is rounded up to a multiple of 64; the kernel ignores the excess.
  module.GetFunctionRequired("saxpy")(buffers.a(), buffers.b(), buffers.c(), 2.5, kN, 1024);
  buffers.ExpectResult(2.5f);
}

TEST_F(OpenCLTest, ConvertsScalarsToTheDeclaredTypes) {
  Module module = CreateModule(kSaxpySource, {"saxpy", "fill"});
  constexpr int64_t kN = 16;
  void* buffer = Api().Alloc(0, kN * sizeof(int64_t), 64);
  TensorView device(buffer, kN, kOpenCL0, {kDLInt, 64, 1});
  // `long value` takes all 64 bits; `uint count` takes an int in range.
  const int64_t big = (int64_t{1} << 40) + 7;
  module.GetFunctionRequired("fill")(&device.tensor, big, kN, kN);
  std::vector<int64_t> result(kN, 0);
  TensorView host(result.data(), kN, kCPU, {kDLInt, 64, 1});
  Api().Copy(device.tensor, host.tensor);
  Api().Sync(0);
  EXPECT_EQ(result, std::vector<int64_t>(kN, big));
  Api().Free(0, buffer);
}

TEST_F(OpenCLTest, PassesATensorWithByteOffsetAsASubBuffer) {
  Module module = CreateModule(kSaxpySource, {"fill"});
  // 4096 is a multiple of every device's base address alignment.
  constexpr int64_t kN = 8;
  constexpr uint64_t kOffset = 4096;
  void* buffer = Api().Alloc(0, kOffset + kN * sizeof(int64_t), 64);
  std::vector<int64_t> zeros(kOffset / sizeof(int64_t) + kN, 0);
  TensorView whole_host(zeros.data(), static_cast<int64_t>(zeros.size()), kCPU, {kDLInt, 64, 1});
  TensorView whole(buffer, static_cast<int64_t>(zeros.size()), kOpenCL0, {kDLInt, 64, 1});
  Api().Copy(whole_host.tensor, whole.tensor);

  TensorView tail(buffer, kN, kOpenCL0, {kDLInt, 64, 1}, kOffset);
  module.GetFunctionRequired("fill")(&tail.tensor, int64_t{-3}, kN, kN);
  std::vector<int64_t> result(zeros.size(), 1);
  TensorView result_view(result.data(), static_cast<int64_t>(result.size()), kCPU, {kDLInt, 64, 1});
  Api().Copy(whole.tensor, result_view.tensor);
  Api().Sync(0);
  for (size_t i = 0; i < result.size(); ++i) {
    ASSERT_EQ(result[i], i < kOffset / sizeof(int64_t) ? 0 : -3) << "at " << i;
  }
  Api().Free(0, buffer);
}

TEST_F(OpenCLTest, SavedModuleLoadsAndRunsAgain) {
  Module original = CreateModule(kSaxpySource, {"saxpy", "fill"});
  std::optional<Bytes> saved = original->SaveToBytes();
  ASSERT_TRUE(saved.has_value());
  Module loaded =
      Function::GetGlobalRequired("runtime.module.load_bytes.opencl")(*saved).cast<Module>();
  EXPECT_EQ(loaded->ListFunctions(), (std::vector<std::string>{"saxpy", "fill"}));
  EXPECT_TRUE(loaded->SaveToBytes()->view() == saved->view());

  constexpr int64_t kN = 300;
  SaxpyBuffers buffers(Api(), kN);
  loaded.GetFunctionRequired("saxpy")(buffers.a(), buffers.b(), buffers.c(), -1.5, kN, kN);
  buffers.ExpectResult(-1.5f);
}

TEST(OpenCLModuleLoaderTest, RejectsTruncatedAndNewerModules) {
  ASSERT_NO_THROW(LoadPlugin(KILN_OPENCL_BACKEND));
  // Saving needs no device: nothing is compiled until a kernel runs.
  Module module = CreateModule(kSaxpySource, {"saxpy"});
  const std::string saved(module->SaveToBytes()->view());
  Function load = Function::GetGlobalRequired("runtime.module.load_bytes.opencl");

  const Bytes truncated(std::string_view(saved).substr(0, saved.size() - 3));
  EXPECT_THAT(ErrorMessage("ValueError", [&] { load(truncated); }),
              AllOf(HasSubstr("the saved OpenCL module is truncated"), HasSubstr("kernel name")));
  std::string newer = saved;
  newer[0] = 2;  // the version comes first, little-endian
  EXPECT_THAT(ErrorMessage("ValueError", [&] { load(Bytes(std::string_view(newer))); }),
              HasSubstr("format version 2, but this libkiln_runtime_opencl.so reads version 1"));
  EXPECT_THAT(ErrorMessage("ValueError", [&] { load(Bytes(std::string_view(saved + "x"))); }),
              HasSubstr("1 unexpected bytes"));
}

TEST_F(OpenCLTest, BuildErrorCarriesTheBuildLog) {
  Module module = CreateModule(
      "__kernel void broken(__global float* x) { x[0] = undeclared_name; }", {"broken"});
  void* buffer = Api().Alloc(0, sizeof(float), 64);
  TensorView device(buffer, 1, kOpenCL0, kFloat32);
  const std::string message = ErrorMessage(
      "RuntimeError", [&] { module.GetFunctionRequired("broken")(&device.tensor, 1); });
  EXPECT_THAT(message, AllOf(HasSubstr("cannot build the OpenCL module with kernels broken"),
                             HasSubstr("CL_BUILD_PROGRAM_FAILURE"), HasSubstr("build log:"),
                             HasSubstr("undeclared_name")));
  Api().Free(0, buffer);
}

TEST_F(OpenCLTest, UnknownKernelsAreNamed) {
  Module module = CreateModule(kSaxpySource, {"saxpy", "fill", "missing"});
  EXPECT_THAT(ErrorMessage("AttributeError", [&] { module.GetFunctionRequired("nope"); }),
              HasSubstr("has no function 'nope' (it has: saxpy, fill, missing)"));
  // Listed, but not in the source: found out when the program is built.
  EXPECT_THAT(
      ErrorMessage("AttributeError", [&] { module.GetFunctionRequired("missing")(1); }),
      AllOf(HasSubstr("kernel 'missing' is listed"), HasSubstr("saxpy"), HasSubstr("fill")));
  EXPECT_THAT(ErrorMessage("ValueError",
                           [&] {
                             CreateModule(kSaxpySource, {"saxpy", "saxpy"});
                           }),
              HasSubstr("kernel 'saxpy' is listed twice"));
}

TEST_F(OpenCLTest, BadArgumentsAreNamedByIndex) {
  Module module = CreateModule(kSaxpySource, {"saxpy", "fill"});
  Function saxpy = module.GetFunctionRequired("saxpy");
  SaxpyBuffers buffers(Api(), 4);
  EXPECT_THAT(ErrorMessage("TypeError", [&] { saxpy(buffers.a(), buffers.b(), buffers.c()); }),
              HasSubstr("OpenCL kernel `saxpy(float* a, float* b, float* c, float alpha, int n)` "
                        "takes 5 arguments followed by 1 to 3 global work sizes, but 3 values"));
  EXPECT_THAT(ErrorMessage("TypeError", [&] { saxpy(buffers.a(), 7, buffers.c(), 1.0, 4, 4); }),
              HasSubstr("argument #1 (`float* b`) of OpenCL kernel 'saxpy' expects a tensor on an "
                        "OpenCL device, got int"));
  EXPECT_THAT(
      ErrorMessage("TypeError", [&] { saxpy(buffers.a(), buffers.b(), buffers.c(), 1.0, 2.5, 4); }),
      HasSubstr("argument #4 (`int n`) of OpenCL kernel 'saxpy' expects an int, got float"));
  EXPECT_THAT(
      ErrorMessage("ValueError",
                   [&] { saxpy(buffers.a(), buffers.b(), buffers.c(), 1.0, int64_t{1} << 40, 4); }),
      HasSubstr("argument #4 (`int n`) of OpenCL kernel 'saxpy': 1099511627776 does not "
                "fit in int"));
  EXPECT_THAT(
      ErrorMessage("TypeError", [&] { saxpy(buffers.a(), buffers.b(), buffers.c(), 1.0, 4, 4.0); }),
      HasSubstr("is global work size 0 and must be an int, got float"));

  std::vector<float> host(4, 0.0f);
  TensorView on_cpu(host.data(), 4, kCPU, kFloat32);
  EXPECT_THAT(ErrorMessage("ValueError",
                           [&] { saxpy(buffers.a(), &on_cpu.tensor, buffers.c(), 1.0, 4, 4); }),
              HasSubstr("argument #1 of OpenCL kernel 'saxpy' is float32[4] on cpu:0"));
}

}  // namespace
}  // namespace opencl_test
}  // namespace kiln
