// A kernel program's saved bytes (runtime.module.load_bytes / load_mapped.kernel_program):
// constants at 64-byte offsets behind a magic, the older packed layout still read, and a program
// loaded in place using its constants where they lie.
#include <kiln/ffi/function.h>
#include <kiln/ffi/string.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/module.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace kiln {
namespace runtime {
namespace {

// out = x + c0 and out2 = c1 copied: one constant read by a kernel, one copied.
const char* kDescription =
    R"({"version": 1, "constants": [{"shape": [4], "dtype": "float32"},)"
    R"( {"shape": [3], "dtype": "float32"}], "functions": [{"name": "f", "num_inputs": 1,)"
    R"( "num_outputs": 2, "temps": [], "steps": [{"kernel": "add", "attrs": {},)"
    R"( "inputs": ["i0", "c0"], "outputs": ["o0"]}, {"copy": "c1", "to": "o1"}]}]})";

Tensor Floats(std::initializer_list<float> values) {
  Tensor tensor = Empty({static_cast<int64_t>(values.size())}, DLDataType{kDLFloat, 32, 1},
                        DLDevice{kDLCPU, 0});
  std::memcpy(tensor.data(), values.begin(), values.size() * sizeof(float));
  return tensor;
}

Module Program() {
  return Function::GetGlobalRequired("runtime.KernelProgramCreate")(
             String(kDescription), Array<Tensor>{Floats({1, 2, 3, 4}), Floats({7, 8, 9})})
      .cast<Module>();
}

/// Runs f on x = (10, 20, 30, 40); returns out[0..3], out2[0..2].
std::vector<float> RunF(const Module& program) {
  const Tensor x = Floats({10, 20, 30, 40});
  const Tensor out = Floats({0, 0, 0, 0});
  const Tensor out2 = Floats({0, 0, 0});
  program.GetFunctionRequired("f")(x, out, out2);
  std::vector<float> values(static_cast<const float*>(out.data()),
                            static_cast<const float*>(out.data()) + 4);
  values.insert(values.end(), static_cast<const float*>(out2.data()),
                static_cast<const float*>(out2.data()) + 3);
  return values;
}

std::string Saved(const Module& program) { return std::string(program->SaveToBytes()->view()); }

TEST(SavedProgramTest, ConstantsStartAt64ByteOffsetsBehindAMagic) {
  const std::string bytes = Saved(Program());
  ASSERT_EQ(bytes.compare(0, 8, "KILNPRG2"), 0);
  const float first[] = {1, 2, 3, 4};
  const float second[] = {7, 8, 9};
  const size_t at_first = bytes.find(std::string(reinterpret_cast<const char*>(first), 16));
  const size_t at_second = bytes.find(std::string(reinterpret_cast<const char*>(second), 12));
  ASSERT_NE(at_first, std::string::npos);
  ASSERT_NE(at_second, std::string::npos);
  EXPECT_EQ(at_first % 64, 0u);
  EXPECT_EQ(at_second, at_first + 64);
  const Module loaded =
      Function::GetGlobalRequired("runtime.module.load_bytes.kernel_program")(Bytes(bytes))
          .cast<Module>();
  EXPECT_EQ(RunF(loaded), (std::vector<float>{11, 22, 33, 44, 7, 8, 9}));
  EXPECT_EQ(Saved(loaded), bytes);
}

TEST(SavedProgramTest, TheOlderPackedLayoutStillLoads) {
  std::string bytes(8, '\0');
  const uint64_t length = std::strlen(kDescription);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  bytes += kDescription;
  const float constants[] = {1, 2, 3, 4, 7, 8, 9};
  bytes.append(reinterpret_cast<const char*>(constants), sizeof(constants));
  const Module loaded =
      Function::GetGlobalRequired("runtime.module.load_bytes.kernel_program")(Bytes(bytes))
          .cast<Module>();
  EXPECT_EQ(RunF(loaded), (std::vector<float>{11, 22, 33, 44, 7, 8, 9}));
  EXPECT_EQ(Saved(loaded).compare(0, 8, "KILNPRG2"), 0);  // saved again in today's layout
}

TEST(SavedProgramTest, LoadedInPlaceTheConstantsAreTheBytesThemselves) {
  const std::string bytes = Saved(Program());
  // Memory that outlives the program, as an artifact's mapping does; aligned as an artifact
  // places a blob.
  static char* const memory = static_cast<char*>(std::aligned_alloc(64, 4096));
  ASSERT_LE(bytes.size(), 4096u);
  std::memcpy(memory, bytes.data(), bytes.size());
  const Module loaded = Function::GetGlobalRequired("runtime.module.load_mapped.kernel_program")(
                            static_cast<void*>(memory), static_cast<int64_t>(bytes.size()))
                            .cast<Module>();
  EXPECT_EQ(RunF(loaded), (std::vector<float>{11, 22, 33, 44, 7, 8, 9}));
  // Changing the bytes changes the constants: the program did not copy them.
  const size_t at_second = bytes.find(std::string("\0\0\xe0\x40", 4));  // 7.0f
  ASSERT_NE(at_second, std::string::npos);
  const float changed = 70;
  std::memcpy(memory + at_second, &changed, sizeof(changed));
  EXPECT_EQ(RunF(loaded)[4], 70);
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
