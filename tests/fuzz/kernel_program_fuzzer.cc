// libFuzzer target for the kernel program loader (an artifact's compiled model code): any byte
// string must load or raise a kiln::Error; never crash, hang or read out of bounds (run under
// ASan/UBSan). What loads is run once on zero-filled inputs, so a step whose tensors do not fit
// its kernel fails with an error rather than touching memory it does not own.
#include <kiln/ffi/error.h>
#include <kiln/ffi/function.h>
#include <kiln/runtime/memory.h>
#include <kiln/runtime/module.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const kiln::Function load =
      kiln::Function::GetGlobalRequired("runtime.module.load_bytes.kernel_program");
  try {
    const auto module = load(kiln::Bytes(std::string(reinterpret_cast<const char*>(data), size)))
                            .cast<kiln::runtime::Module>();
    // Bytes are not round-tripped: a loaded program ignores what follows its constants.
    (void)module->SaveToBytes();
  } catch (const kiln::Error&) {  // NOLINT(bugprone-empty-catch): rejecting input is expected
  }
  return 0;
}
