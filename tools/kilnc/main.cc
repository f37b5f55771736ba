// kilnc: Kiln's command-line compiler and runner. `kilnc <command> [args]`; `kilnc --help`.
#include <kiln/ffi/error.h>

#include <cstring>
#include <iostream>

#include "command.h"

namespace kilnc {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"inspect", "show a model's inputs, output, ops and (--ir) its typed IR",
       "kilnc inspect model.onnx [--shape name=d0,d1,...]... [--ir]\n\n"
       "Imports the model, infers its types and prints its inputs, output and how often each\n"
       "op occurs. --shape fixes an input's shape (needed for dynamic dimensions); --ir also\n"
       "prints the IR with each value's type as a comment.\n",
       RunInspect},
      {"plugins", "list the compiler plugins and runtime backends found, with their status",
       "kilnc plugins\n\n"
       "Loads the compiler plugins of <libdir>/kiln/plugins and KILN_PLUGIN_PATH and the\n"
       "runtime backends next to libkiln_runtime.so and on KILN_RUNTIME_PATH, and prints each\n"
       "with its status; a plugin or backend that failed to load is shown with the reason.\n",
       RunPlugins},
  };
  return commands;
}

namespace {

void PrintHelp(std::ostream& out) {
  out << "usage: kilnc <command> [args]\n\ncommands:\n";
  for (const Command& command : Commands()) {
    out << "  " << command.name << std::string(10 - std::strlen(command.name), ' ')
        << command.summary << "\n";
  }
  out << "\n`kilnc <command> --help` describes a command.\n";
}

const Command* Find(const std::string& name) {
  for (const Command& command : Commands()) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

int Main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    PrintHelp(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  const Command* command = Find(argv[1]);
  if (command == nullptr) {
    std::cerr << "kilnc: unknown command '" << argv[1] << "'\n\n";
    PrintHelp(std::cerr);
    return kExitUsage;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const std::string& arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: " << command->usage;
      return kExitOk;
    }
  }
  try {
    return command->run(args);
  } catch (const kiln::Error& error) {
    std::cerr << "kilnc " << command->name << ": " << error.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace
}  // namespace kilnc

int main(int argc, char** argv) { return kilnc::Main(argc, argv); }
