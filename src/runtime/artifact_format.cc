// The artifact's byte layout: a fixed header (magic, format version, payload size and checksum)
// followed by a little-endian payload (manifest and module blobs). The reader is fuzzed
// (tests/fuzz/artifact_fuzzer.cc): every count and length is checked against what remains.
#include <kiln/ffi/error.h>
#include <kiln/runtime/artifact.h>
#include <kiln/runtime/byte_stream.h>

#include <cstring>
#include <string_view>

namespace kiln {
namespace runtime {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'T', '\0'};
constexpr size_t kHeaderSize = 8 + 4 + 4 + 8 + 8;

/// FNV-1a, 64 bit: catches flipped or truncated bytes (not an integrity signature).
uint64_t Checksum(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

/// Zero bytes that put a blob starting `position` bytes into the payload at a multiple of
/// kArtifactBlobAlignment from the start of the artifact (the header comes first). None in
/// format 1.
size_t BlobPadding(uint32_t format_version, size_t position) {
  if (format_version < 2) return 0;
  const size_t from_start = kHeaderSize + position;
  return (kArtifactBlobAlignment - from_start % kArtifactBlobAlignment) % kArtifactBlobAlignment;
}

void WriteModule(const ArtifactModule& module, uint32_t format_version, ByteWriter& out) {
  out.Str(module.kind);
  out.Str(module.compatibility);
  out.Str(module.runtime_library);
  out.U32(static_cast<uint32_t>(module.imports.size()));
  for (uint32_t index : module.imports) out.U32(index);
  out.U32(static_cast<uint32_t>(module.functions.size()));
  for (const std::string& name : module.functions) out.Str(name);
  out.U64(module.blob.size());
  out.Zeros(BlobPadding(format_version, out.size()));
  out.Raw(module.blob);
}

ArtifactModule ReadModule(ByteReader& in, uint32_t format_version, bool copy_blob) {
  ArtifactModule module;
  module.kind = in.Str("module kind");
  module.compatibility = in.Str("module compatibility");
  module.runtime_library = in.Str("module runtime library");
  const uint32_t num_imports = in.Count(sizeof(uint32_t), "import count");
  for (uint32_t i = 0; i < num_imports; ++i) module.imports.push_back(in.U32("import index"));
  const uint32_t num_functions = in.Count(sizeof(uint64_t), "function count");
  for (uint32_t i = 0; i < num_functions; ++i) module.functions.push_back(in.Str("function"));
  module.blob_size = in.U64("module data");
  in.Zeros(BlobPadding(format_version, in.position()), "the padding before module data");
  module.blob_offset = kHeaderSize + in.position();
  const std::string_view blob = in.View(module.blob_size, "module data");
  if (copy_blob) module.blob = std::string(blob);
  return module;
}

/// Imports must name existing modules and form no cycle (a tree or a DAG).
void CheckImports(const std::vector<ArtifactModule>& modules) {
  const size_t n = modules.size();
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t child : modules[i].imports) {
      KILN_CHECK(child < n, ValueError)
          << "corrupt artifact: module " << i << " imports module " << child << " of " << n;
    }
  }
  // Iterative three-colour DFS: no recursion, so a long chain cannot overflow the stack.
  std::vector<int> colour(n, 0);
  for (size_t start = 0; start < n; ++start) {
    if (colour[start] != 0) continue;
    std::vector<std::pair<size_t, size_t>> stack = {{start, 0}};
    colour[start] = 1;
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next == modules[node].imports.size()) {
        colour[node] = 2;
        stack.pop_back();
        continue;
      }
      const size_t child = modules[node].imports[next++];
      KILN_CHECK(colour[child] != 1, ValueError)
          << "corrupt artifact: module " << child << " imports itself through its imports";
      if (colour[child] == 0) {
        colour[child] = 1;
        stack.emplace_back(child, 0);
      }
    }
  }
}

}  // namespace

std::string SerializeArtifact(const ArtifactContents& contents) {
  ByteWriter payload;
  payload.Str(contents.kiln_version);
  payload.U32(static_cast<uint32_t>(contents.abi_major));
  payload.U32(static_cast<uint32_t>(contents.abi_minor));
  payload.U32(static_cast<uint32_t>(contents.modules.size()));
  for (const ArtifactModule& module : contents.modules) {
    WriteModule(module, contents.format_version, payload);
  }
  return FrameArtifactPayload(payload.bytes(), contents.format_version);
}

std::string FrameArtifactPayload(std::string_view payload, uint32_t format_version) {
  ByteWriter out;
  out.Raw(std::string_view(kMagic, sizeof(kMagic)));
  out.U32(format_version);
  out.U32(0);  // flags, reserved
  out.U64(payload.size());
  out.U64(Checksum(payload));
  out.Raw(payload);
  return std::move(out).Take();
}

ArtifactContents ParseArtifact(const uint8_t* data, size_t size, bool copy_blobs) {
  KILN_CHECK(data != nullptr && size >= kHeaderSize, ValueError)
      << "not a Kiln artifact: " << size << " bytes is shorter than the " << kHeaderSize
      << "-byte header";
  KILN_CHECK(std::memcmp(data, kMagic, sizeof(kMagic)) == 0, ValueError)
      << "not a Kiln artifact: bad magic bytes";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ByteReader header(bytes.substr(sizeof(kMagic), kHeaderSize - sizeof(kMagic)), "the artifact");
  ArtifactContents contents;
  contents.format_version = header.U32("format version");
  KILN_CHECK(contents.format_version >= 1 && contents.format_version <= kArtifactFormatVersion,
             ValueError)
      << "artifact format version " << contents.format_version
      << " is not supported by this Kiln (it reads versions 1 to " << kArtifactFormatVersion
      << "); rebuild the artifact or upgrade Kiln";
  const uint32_t flags = header.U32("flags");
  KILN_CHECK(flags == 0, ValueError)
      << "artifact sets flags 0x" << std::hex << flags
      << " that this Kiln does not know (a newer writer, or a damaged file)";
  const uint64_t payload_size = header.U64("payload size");
  const uint64_t checksum = header.U64("checksum");
  KILN_CHECK(payload_size == size - kHeaderSize, ValueError)
      << "corrupt artifact: the header promises " << payload_size << " bytes of data but "
      << size - kHeaderSize << " are present (truncated file?)";
  const std::string_view payload = bytes.substr(kHeaderSize);
  KILN_CHECK(Checksum(payload) == checksum, ValueError)
      << "corrupt artifact: checksum mismatch (the file was modified or damaged)";

  ByteReader in(payload, "the artifact");
  contents.kiln_version = in.Str("Kiln version");
  contents.abi_major = static_cast<int32_t>(in.U32("ABI major"));
  contents.abi_minor = static_cast<int32_t>(in.U32("ABI minor"));
  const uint32_t num_modules = in.Count(5 * sizeof(uint64_t), "module count");
  KILN_CHECK(num_modules > 0, ValueError) << "corrupt artifact: it holds no module";
  for (uint32_t i = 0; i < num_modules; ++i) {
    contents.modules.push_back(ReadModule(in, contents.format_version, copy_blobs));
  }
  in.ExpectEnd();
  CheckImports(contents.modules);
  return contents;
}

}  // namespace runtime
}  // namespace kiln
