#include <kiln/ffi/error.h>
#include <kiln/runtime/artifact.h>
#include <gtest/gtest.h>

#include <random>

namespace kiln {
namespace runtime {
namespace {

ArtifactContents SampleContents() {
  ArtifactContents contents;
  contents.kiln_version = "0.1.0";
  contents.abi_major = 1;
  contents.modules = {
      {"host_library", "host_library/1", "libkiln_runtime.so", {1, 2}, {"add_one"}, ""},
      {"testing_blob", "testing_blob/1", "libkiln_testing.so", {}, {"get"}, "payload"},
      {"opencl", "opencl/1", "libkiln_runtime_opencl.so", {}, {}, std::string("\0\1\2", 3)},
  };
  return contents;
}

ArtifactContents Parse(const std::string& bytes) {
  return ParseArtifact(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

std::string ErrorOf(const std::string& bytes) {
  try {
    Parse(bytes);
  } catch (const Error& error) {
    return error.kind() + ": " + error.message();
  }
  return "<parsed>";
}

TEST(ArtifactFormatTest, RoundTripsEveryField) {
  const ArtifactContents parsed = Parse(SerializeArtifact(SampleContents()));
  const ArtifactContents expected = SampleContents();
  EXPECT_EQ(parsed.kiln_version, "0.1.0");
  ASSERT_EQ(parsed.modules.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(parsed.modules[i].kind, expected.modules[i].kind);
    EXPECT_EQ(parsed.modules[i].compatibility, expected.modules[i].compatibility);
    EXPECT_EQ(parsed.modules[i].runtime_library, expected.modules[i].runtime_library);
    EXPECT_EQ(parsed.modules[i].imports, expected.modules[i].imports);
    EXPECT_EQ(parsed.modules[i].functions, expected.modules[i].functions);
    EXPECT_EQ(parsed.modules[i].blob, expected.modules[i].blob);
  }
}

TEST(ArtifactFormatTest, BlobsStartAtAlignedOffsetsAndCanBeReadInPlace) {
  const std::string bytes = SerializeArtifact(SampleContents());
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const ArtifactContents in_place = ParseArtifact(data, bytes.size(), /*copy_blobs=*/false);
  const ArtifactContents expected = SampleContents();
  ASSERT_EQ(in_place.modules.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const ArtifactModule& module = in_place.modules[i];
    EXPECT_EQ(module.blob_offset % kArtifactBlobAlignment, 0u) << "module " << i;
    EXPECT_TRUE(module.blob.empty());
    EXPECT_EQ(bytes.substr(module.blob_offset, module.blob_size), expected.modules[i].blob);
  }
}

TEST(ArtifactFormatTest, FormatOneIsStillReadAndWritten) {
  ArtifactContents contents = SampleContents();
  contents.format_version = 1;
  const std::string bytes = SerializeArtifact(contents);
  EXPECT_LT(bytes.size(), SerializeArtifact(SampleContents()).size());  // no padding
  const ArtifactContents parsed = Parse(bytes);
  EXPECT_EQ(parsed.format_version, 1u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(parsed.modules[i].blob, contents.modules[i].blob);
  EXPECT_EQ(SerializeArtifact(parsed), bytes);
}

TEST(ArtifactFormatTest, NonzeroPaddingIsCorrupt) {
  std::string bytes = SerializeArtifact(SampleContents());
  const ArtifactContents parsed = Parse(bytes);
  // The byte before the second blob is padding (its blob is 7 bytes, at a multiple of 64).
  const size_t padding = parsed.modules[1].blob_offset - 1;
  bytes[padding] = '\x01';
  // Keep the checksum right, so that the padding check is what fails.
  bytes = FrameArtifactPayload(std::string_view(bytes).substr(32));
  EXPECT_EQ(ErrorOf(bytes),
            "ValueError: the artifact is corrupt: the padding before module data is not zero");
}

TEST(ArtifactFormatTest, EveryTruncationIsAClearError) {
  const std::string bytes = SerializeArtifact(SampleContents());
  for (size_t size = 0; size < bytes.size(); ++size) {
    const std::string message = ErrorOf(bytes.substr(0, size));
    EXPECT_EQ(message.rfind("ValueError: ", 0), 0u) << "size " << size << ": " << message;
  }
}

TEST(ArtifactFormatTest, FlippedBytesAreCaught) {
  const std::string bytes = SerializeArtifact(SampleContents());
  std::mt19937 random(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::string corrupt = bytes;
    corrupt[random() % corrupt.size()] ^= static_cast<char>(1 + random() % 255);
    EXPECT_NE(ErrorOf(corrupt), "<parsed>") << "trial " << trial;
  }
}

TEST(ArtifactFormatTest, UnknownVersionAndBadMagicAreNamed) {
  std::string bytes = SerializeArtifact(SampleContents());
  std::string future = bytes;
  future[8] = 9;
  EXPECT_NE(ErrorOf(future).find("format version 9 is not supported"), std::string::npos);
  std::string not_ours = bytes;
  not_ours[0] = 'X';
  EXPECT_NE(ErrorOf(not_ours).find("bad magic"), std::string::npos);
}

TEST(ArtifactFormatTest, ImportCyclesAndBadIndicesAreRejected) {
  ArtifactContents cyclic = SampleContents();
  cyclic.modules[1].imports = {2};
  cyclic.modules[2].imports = {1};
  EXPECT_NE(ErrorOf(SerializeArtifact(cyclic)).find("imports itself"), std::string::npos);
  ArtifactContents dangling = SampleContents();
  dangling.modules[0].imports = {7};
  EXPECT_NE(ErrorOf(SerializeArtifact(dangling)).find("imports module 7 of 3"), std::string::npos);
}

}  // namespace
}  // namespace runtime
}  // namespace kiln
