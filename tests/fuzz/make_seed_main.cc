// Writes seed inputs for the artifact fuzzer: valid artifacts of a few shapes.
#include <kiln/runtime/artifact.h>

#include <fstream>
#include <iostream>

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
  int index = 0;
  for (const ArtifactContents* contents : {&one, &tree}) {
    std::ofstream(std::string(argv[1]) + "/seed" + std::to_string(index++), std::ios::binary)
        << kiln::runtime::SerializeArtifact(*contents);
  }
  return 0;
}
