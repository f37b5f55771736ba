// libFuzzer target for the IR text parser (kiln/ir/text_format.h): any byte string must parse or
// raise a kiln::Error; never crash, hang or read out of bounds (run under ASan/UBSan). What parses
// must print and parse back to a module that prints the same text, because the printer and the
// parser are documented to round-trip (docs/ir-text-format.md): a difference, or an error on the
// printed text, is a bug in one of them and is reported as a crash. Seeds:
// tests/fuzz/corpus/ir_text.
#include <kiln/ffi/error.h>
#include <kiln/ir/op.h>
#include <kiln/ir/text_format.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

// The ops of tests/ir/text/*.kiln (which tests/cpp/ir/text_format_test.cc registers the same way):
// ops without a schema take attributes of every kind, so the seeds copied from there parse.
KILN_REGISTER_OP("test.text.unary");
KILN_REGISTER_OP("test.text.binary");
KILN_REGISTER_OP("test.text.split");
KILN_REGISTER_OP("test.text.conv2d");

/// Reports a round trip that does not print the same text and aborts (a crash for libFuzzer).
[[noreturn]] void FailRoundTrip(const std::string& printed, const std::string& again) {
  std::fprintf(stderr, "IR text round trip differs.\n--- printed:\n%s\n--- printed again:\n%s\n",
               printed.c_str(), again.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::ir::IRModule module;
  try {
    module = kiln::ir::ParseModule(text);
  } catch (const kiln::Error&) {  // rejecting input is expected
    return 0;
  }
  // Outside the try: an Error from printing or re-parsing what parsed is a bug, not bad input,
  // so it escapes and terminates. Large constants go to a side table, as kilnc writes them.
  kiln::Array<kiln::Tensor> constants;
  const std::string printed = kiln::ir::AsText(module, &constants);
  kiln::Array<kiln::Tensor> constants_again;
  const std::string again =
      kiln::ir::AsText(kiln::ir::ParseModule(printed, constants), &constants_again);
  if (again != printed) FailRoundTrip(printed, again);
  return 0;
}
