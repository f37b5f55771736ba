// libFuzzer target for the artifact reader: any byte string must either parse or raise a
// kiln::Error; never crash, hang or read out of bounds (run under ASan/UBSan).
#include <kiln/ffi/error.h>
#include <kiln/runtime/artifact.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// The first byte picks the target: odd fuzzes the whole file (header checks), even frames the
// rest as a payload with a valid header, so mutations reach the manifest parser past the
// checksum: of format 2 (blobs aligned) for a multiple of 4, else of format 1.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string framed;
  if (data[0] % 2 == 0) {
    framed = kiln::runtime::FrameArtifactPayload(
        std::string_view(reinterpret_cast<const char*>(data + 1), size - 1),
        data[0] % 4 == 0 ? 2 : 1);
    data = reinterpret_cast<const uint8_t*>(framed.data());
    size = framed.size();
  } else {
    ++data;
    --size;
  }
  try {
    kiln::runtime::ArtifactContents contents = kiln::runtime::ParseArtifact(data, size);
    // What parses must serialize back to the same bytes.
    if (kiln::runtime::SerializeArtifact(contents) !=
        std::string_view(reinterpret_cast<const char*>(data), size)) {
      __builtin_trap();
    }
  } catch (const kiln::Error&) {  // NOLINT(bugprone-empty-catch): rejecting input is expected
  }
  return 0;
}
