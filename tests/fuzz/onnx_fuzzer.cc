// libFuzzer target for the ONNX importer: any byte string must either import or raise a
// kiln::Error; never crash, hang or read out of bounds (run under ASan/UBSan). Seeds are small
// models in tests/fuzz/corpus/onnx.
#include <kiln/ffi/error.h>
#include <kiln/frontend/onnx.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kiln::frontend::ImportOnnxBytes(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const kiln::Error&) {     // NOLINT(bugprone-empty-catch): rejecting input is expected
  } catch (const std::bad_alloc&) {  // NOLINT(bugprone-empty-catch): a huge ConstantOfShape too
  }
  return 0;
}
