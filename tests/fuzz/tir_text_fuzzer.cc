// libFuzzer target for the tensor-level IR's text parser (kiln/tir/node.h): any byte string must
// parse or raise a kiln::Error; never crash, hang or read out of bounds (run under ASan/UBSan).
// What parses must print and parse back to a node that prints the same text and is structurally
// equal, because the printer and the parser are documented to round-trip: a difference, or an
// error on the printed text, is a bug in one of them and is reported as a crash. Seeds:
// tests/fuzz/corpus/tir_text.
#include <kiln/ffi/error.h>
#include <kiln/tir/node.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kiln::tir::Node node;
  try {
    node = kiln::tir::ParseText(text);
  } catch (const kiln::Error&) {  // rejecting input is expected
    return 0;
  }
  // Outside the try: an Error from printing or re-parsing what parsed is a bug, not bad input.
  const std::string printed = kiln::tir::AsText(node);
  const kiln::tir::Node again = kiln::tir::ParseText(printed);
  if (kiln::tir::AsText(again) != printed || !kiln::tir::StructuralEqual(again, node) ||
      kiln::tir::StructuralHash(again) != kiln::tir::StructuralHash(node)) {
    std::fprintf(stderr, "TIR text round trip differs.\n--- printed:\n%s\n--- again:\n%s\n",
                 printed.c_str(), kiln::tir::AsText(again).c_str());
    std::abort();
  }
  return 0;
}
