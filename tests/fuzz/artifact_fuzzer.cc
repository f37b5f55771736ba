// libFuzzer target for the artifact reader: any byte string must either parse or raise a
// kiln::Error; never crash, hang or read out of bounds (run under ASan/UBSan).
#include <kiln/ffi/error.h>
#include <kiln/runtime/artifact.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kiln::runtime::ArtifactContents contents = kiln::runtime::ParseArtifact(data, size);
    // What parses must serialize back to the same bytes.
    const std::string again = kiln::runtime::SerializeArtifact(contents);
    if (again.size() != size) __builtin_trap();
  } catch (const kiln::Error&) {  // NOLINT(bugprone-empty-catch): rejecting input is expected
  }
  return 0;
}
