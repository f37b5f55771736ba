// kilnc: Kiln's command-line compiler and runner. `kilnc <command> [args]`; `kilnc --help`.
#include <kiln/ffi/error.h>

#include <cstring>
#include <exception>
#include <iostream>

#include "command.h"

namespace kilnc {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"compile", "compile an ONNX model into one shared library",
       "kilnc compile model.onnx -o model.so [--shape name=d0,d1,...]... [--passes P1,P2,...]\n"
       "                    [--dump-ir DIR] [--time-passes] [--plugins NAME,...] "
       "[--no-fallback]\n"
       "                    [--placement greedy|measured]\n"
       "                    [--generated-kernels [--tir-passes P1,P2,...]]\n\n"
       "Imports the model, runs the default pass pipeline (or --passes, comma-separated pass\n"
       "names such as InferType,FoldConstant,FuseOps), lowers it to the CPU runtime and writes\n"
       "the artifact, which `kilnc run` and kiln.load_module load. Progress goes to stderr, one\n"
       "line per step and per pass. --dump-ir writes the IR before and after every pass into\n"
       "DIR; --time-passes prints each pass's time. --shape fixes an input's shape.\n"
       "--plugins hands each op to the first of these external compilers (BYOC plugins such\n"
       "as dnnl, blas, ccompiler; loaded by name) that takes it, the rest to the CPU path;\n"
       "--no-fallback makes an op that no plugin takes an error; --placement measured keeps a\n"
       "plugin's region only where it runs faster than on the CPU path (measured at build time,\n"
       "cached in $KILN_CACHE_DIR, default ~/.cache/kiln); --report prints where each op\n"
       "went and why each op left on the CPU path was declined. --generated-kernels runs each\n"
       "fused group whose ops all have compute rules as one generated C function (the\n"
       "tensor-level IR), after the loop-level passes --tir-passes names (loop_partition,\n"
       "unroll, flatten_buffers, storage_rewrite, remove_dead_code, simplify, a plugin's); with\n"
       "--dump-ir, DIR/tir/ then holds each function (<name>.tir), their C (generated.c) and\n"
       "each function before and after each of those passes; --time-passes times them too.\n",
       RunCompile},
      {"run", "run a compiled model and print its outputs and latency",
       "kilnc run model.so [--input name=file.npy]... [--repeat N] [--warmup N]\n"
       "                [--memory-limit BYTES] [--max-shape SIZE=N]... [--output-dir DIR]\n"
       "                [--profile]\n\n"
       "Loads the artifact (the runtime alone, no compiler), sets each input from its .npy file\n"
       "or, when not given, from seeded random values (said on stderr), runs --warmup times\n"
       "(default 1), then --repeat times (default 1), and prints each output's dtype, shape,\n"
       "min/max/mean and first values, and the latency min/median/max. --output-dir writes\n"
       "the outputs as output_<i>.npy into DIR, created when missing. --memory-limit fails,\n"
       "before allocating, a model whose activation memory is over BYTES. A model compiled with\n"
       "symbolic shapes takes inputs of any shape of its signature (kilnc inspect shows it);\n"
       "--max-shape batch=8 bounds a size, so that memory is planned once for every shape up\n"
       "to the bound. --profile then runs it --repeat times more timing each graph node (a\n"
       "fused group, a BYOC region, a loop) and prints the slowest nodes with their shapes and\n"
       "the time per kind of function, medians over the runs.\n",
       RunRun},
      {"inspect", "show a model's inputs, outputs, ops; for a .so its graph and kernels",
       "kilnc inspect model.onnx [--shape name=d0,d1,...]... [--ir] [--tir] [--plugins NAME,...]\n"
       "                         [--dot FILE]\n"
       "kilnc inspect model.so\n\n"
       "For an ONNX model: imports it, infers its types and prints its inputs, output and how\n"
       "often each op occurs. --shape fixes an input's shape (its symbolic sizes stay symbolic\n"
       "otherwise); --ir also prints the IR with each value's type as a comment. --plugins\n"
       "partitions it among those compilers as `compile` would and prints the placement report;\n"
       "--dot writes the compiled graph as Graphviz, coloured by compiler\n"
       "(render: dot -Tsvg FILE). --tir prints the loop-level function each fused group\n"
       "becomes with `compile --generated-kernels`, and why the other groups keep the kernels.\n"
       "For a compiled model: its inputs and outputs, the memory plan, and each graph node\n"
       "with its tensors and the kernel that runs each of its ops.\n",
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
  } catch (const std::exception& error) {  // a damaged artifact's JSON, a file system error
    std::cerr << "kilnc " << command->name << ": " << error.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace
}  // namespace kilnc

int main(int argc, char** argv) { return kilnc::Main(argc, argv); }
