/// The deployable artifact: one shared library holding the compiled host code, the serialized
/// module tree and a manifest. See docs/design.md ("The artifact format") for the byte layout
/// and how it evolves.
#ifndef KILN_RUNTIME_ARTIFACT_H_
#define KILN_RUNTIME_ARTIFACT_H_

#include <kiln/runtime/module.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {
namespace runtime {

/// Current version of the byte layout; a reader refuses versions it does not know. Version 2
/// starts each module's blob at a multiple of kArtifactBlobAlignment from the start of the
/// artifact's bytes (version 1 packed them), so a loaded module can use its data in place.
constexpr uint32_t kArtifactFormatVersion = 2;
constexpr uint32_t kArtifactBlobAlignment = 64;

/// One module of the serialized tree. Module 0 is the root.
struct ArtifactModule {
  std::string kind;
  std::string compatibility;
  std::string runtime_library;    ///< the library that implements `kind`
  std::vector<uint32_t> imports;  ///< indices of the imported modules
  std::vector<std::string> functions;
  std::string blob;  ///< SaveToBytes() of the module (empty for host_library)
  /// Where the blob lies in the bytes ParseArtifact read (offset from their start, and size),
  /// also when ParseArtifact was asked not to copy it into `blob`.
  uint64_t blob_offset = 0;
  uint64_t blob_size = 0;
};

/// The decoded contents of an artifact's embedded data.
struct ArtifactContents {
  uint32_t format_version = kArtifactFormatVersion;
  std::string kiln_version;
  int32_t abi_major = 0;
  int32_t abi_minor = 0;
  std::vector<ArtifactModule> modules;
};

/// Encodes `contents` (magic, version, size, checksum, payload) in its format_version's layout.
KILN_API std::string SerializeArtifact(const ArtifactContents& contents);
/// Puts the fixed header (magic, version, size, checksum) in front of an encoded payload. Used by
/// SerializeArtifact, and by the fuzzer to reach the payload parser past the checksum.
KILN_API std::string FrameArtifactPayload(std::string_view payload,
                                          uint32_t format_version = kArtifactFormatVersion);

/// Decodes and validates bytes made by SerializeArtifact (format 1 or 2); a ValueError says what
/// is wrong (bad magic, unknown version, truncation, checksum, nonzero padding, out-of-range
/// index, import cycle). Never reads outside [data, data + size). With `copy_blobs` false the
/// modules' `blob` stay empty: the caller reads them at blob_offset, in place.
KILN_API ArtifactContents ParseArtifact(const uint8_t* data, size_t size, bool copy_blobs = true);

/// Flattens a module tree into ArtifactContents (each module's SaveToBytes). Modules of kind
/// "c_source" become "host_library" entries; their code is returned in `host_sources`.
KILN_API ArtifactContents CollectModuleTree(const Module& root,
                                            std::vector<std::string>* host_sources);

/// A module of C source whose functions follow the Kiln calling convention; export_library
/// compiles it into the artifact, which reloads as a "host_library" module. Before export, the
/// first lookup of one of its functions compiles the code with the same command into a
/// temporary library (removed from disk at once, unloaded with the module and its functions);
/// a compiler failure is a RuntimeError naming the compiler and showing its output. Thread-safe.
KILN_API Module CSourceModuleCreate(std::string code, std::vector<std::string> function_names);

/// Writes `root` and its imports as one shared library at `path`: compiles host code with the
/// system C compiler ($CC, else cc), embeds the serialized tree, and renames into place only on
/// success (nothing half-written).
KILN_API void ExportLibrary(const Module& root, const std::string& path);

/// Loads an artifact written by ExportLibrary: checks the manifest, rebuilds the tree through
/// the loaders "runtime.module.load_bytes.<kind>", and names the runtime library to install
/// when a loader is missing.
KILN_API Module LoadModule(const std::string& path);

}  // namespace runtime
}  // namespace kiln

#endif  // KILN_RUNTIME_ARTIFACT_H_
