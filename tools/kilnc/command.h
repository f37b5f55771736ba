// A kilnc subcommand: its name, what it does, and its entry point.
#ifndef KILN_TOOLS_KILNC_COMMAND_H_
#define KILN_TOOLS_KILNC_COMMAND_H_

#include <kiln/runtime/module.h>

#include <cstddef>
#include <string>
#include <vector>

namespace kilnc {

/// Exit codes every subcommand uses.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  ///< the command ran and failed (bad model, error raised)
constexpr int kExitUsage = 2;    ///< the command line is wrong

struct Command {
  const char* name;
  const char* summary;
  const char* usage;  ///< printed by `kilnc <name> --help`
  int (*run)(const std::vector<std::string>& args);
};

/// Every subcommand, in the order `kilnc --help` lists them.
const std::vector<Command>& Commands();

int RunCompile(const std::vector<std::string>& args);
/// `kilnc inspect model.so`, which RunInspect hands artifacts to.
int InspectArtifact(const std::string& path);
/// How many nodes the graph executor `executor` runs (fused CPU groups and external regions).
size_t GraphNodeCount(const kiln::runtime::Module& executor);
int RunInspect(const std::vector<std::string>& args);
int RunPlugins(const std::vector<std::string>& args);
int RunRun(const std::vector<std::string>& args);

}  // namespace kilnc

#endif  // KILN_TOOLS_KILNC_COMMAND_H_
