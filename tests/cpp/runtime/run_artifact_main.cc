// kiln_run_artifact [--plugin PATH]... ARTIFACT FUNCTION [INT]: loads an artifact in a fresh
// process (runtime only, no compiler), calls one function and prints its result. Used by the
// artifact tests to prove an export reloads elsewhere; exits 1 with the error on failure.
#include <kiln/ffi/plugin.h>
#include <kiln/runtime/artifact.h>

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    size_t i = 0;
    for (; i + 1 < args.size() && args[i] == "--plugin"; i += 2) kiln::LoadPlugin(args[i + 1]);
    if (args.size() - i < 2) {
      std::cerr << "usage: kiln_run_artifact [--plugin PATH]... ARTIFACT FUNCTION [INT]\n";
      return 2;
    }
    kiln::runtime::Module module = kiln::runtime::LoadModule(args[i]);
    kiln::Function func = module.GetFunctionRequired(args[i + 1]);
    kiln::Any result = i + 2 < args.size() ? func(std::stoll(args[i + 2])) : func();
    if (auto text = result.as<std::string>()) {
      std::cout << *text << "\n";
    } else {
      std::cout << result.cast<int64_t>() << "\n";
    }
    return 0;
  } catch (const kiln::Error& error) {
    std::cerr << error.what() << "\n";
    return 1;
  }
}
