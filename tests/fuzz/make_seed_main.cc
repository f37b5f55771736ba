// Writes seed inputs for the artifact fuzzer: valid artifacts of a few shapes, as whole files
// and as bare payloads.
#include <kiln/runtime/artifact.h>

#include <fstream>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: kiln_artifact_fuzz_seeds OUTPUT_DIR\n";
    return 2;
  }
  using kiln::runtime::ArtifactContents;
  ArtifactContents one;
  one.kiln_version = "0.1.0";
  one.abi_major = 1;
  one.modules = {{"host_library", "host_library/1", "libkiln_runtime.so", {}, {"f"}, ""}};
  ArtifactContents tree = one;
  tree.modules[0].imports = {1, 2};
  tree.modules.push_back({"opencl", "opencl/1", "libkiln_runtime_opencl.so", {2}, {}, "src"});
  tree.modules.push_back({"testing_blob", "testing_blob/1", "libkiln_testing.so", {}, {}, "x"});
  // The fuzzer's first byte selects its target: odd = whole file, even = payload only.
  constexpr size_t kHeaderSize = 32;
  int index = 0;
  for (const ArtifactContents* contents : {&one, &tree}) {
    const std::string bytes = kiln::runtime::SerializeArtifact(*contents);
    const std::string prefix = std::string(argv[1]) + "/seed" + std::to_string(index++);
    std::ofstream(prefix + "_file", std::ios::binary) << '\x01' << bytes;
    std::ofstream(prefix + "_payload", std::ios::binary) << '\x00' << bytes.substr(kHeaderSize);
  }
  return 0;
}
