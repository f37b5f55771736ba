// `kilnc inspect model.so`: what a compiled model holds, read from its serialized modules: the
// inputs and outputs, the memory plan, and each graph node with the kernels it runs.
#include <kiln/ffi/tensor.h>
#include <kiln/runtime/artifact.h>
#include <kiln/runtime/graph_executor.h>
#include <kiln/runtime/kernel_program.h>

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <string>

#include "command.h"

namespace kilnc {
namespace {

using Json = nlohmann::json;

/// The graph executor's JSON.
Json GraphJson(const kiln::runtime::Module& executor) {
  const std::optional<kiln::Bytes> bytes = executor->SaveToBytes();
  KILN_CHECK(bytes.has_value(), ValueError) << "a graph executor that cannot be inspected";
  return Json::parse(bytes->view());
}

/// A kernel program's description (kiln/runtime/kernel_program.h).
Json ProgramJson(const kiln::runtime::Module& program) {
  return Json::parse(kiln::Function::GetGlobalRequired("runtime.KernelProgramDescription")(program)
                         .cast<kiln::String>()
                         .str());
}

std::string EntryText(const Json& entries, int64_t id) {
  const Json& entry = entries.at(id);
  std::string shape;
  for (const Json& extent : entry.at("shape")) {
    // A symbolic extent is the text of its size expression ("batch").
    shape +=
        (shape.empty() ? "" : ", ") +
        (extent.is_string() ? extent.get<std::string>() : std::to_string(extent.get<int64_t>()));
  }
  return "%" + std::to_string(id) + " " + entry.at("dtype").get<std::string>() + " (" + shape + ")";
}

/// Each program function's kernels ("kernel.cpu.nn.conv2d", "copy"), by function name.
std::map<std::string, std::vector<std::string>> KernelsByFunction(const Json& program) {
  std::map<std::string, std::vector<std::string>> kernels;
  for (const Json& func : program.at("functions")) {
    std::vector<std::string>& list = kernels[func.at("name").get<std::string>()];
    for (const Json& step : func.at("steps")) {
      list.push_back(step.contains("kernel") ? "kernel.cpu." + step["kernel"].get<std::string>()
                                             : "copy");
    }
  }
  return kernels;
}

void PrintEntries(const char* title, const Json& list, const Json& entries) {
  std::cout << title << ":\n";
  for (const Json& item : list) {
    if (item.is_object()) {
      std::cout << "  " << item.at("name").get<std::string>() << ": "
                << EntryText(entries, item.at("entry").get<int64_t>()) << "\n";
    } else {
      std::cout << "  " << EntryText(entries, item.get<int64_t>()) << "\n";
    }
  }
}

}  // namespace

size_t GraphNodeCount(const kiln::runtime::Module& executor) {
  return GraphJson(executor).at("nodes").size();
}

int InspectArtifact(const std::string& path) {
  const kiln::runtime::Module root = kiln::runtime::LoadModule(path);
  KILN_CHECK(root->kind() == kiln::runtime::kGraphExecutorKind && root.imports().size() == 1 &&
                 root.imports()[0]->kind() == kiln::runtime::kKernelProgramKind,
             ValueError)
      << "'" << path << "' is an artifact but not a model compiled by kiln::Build (its root is a '"
      << root->kind() << "' module)";
  const Json graph = GraphJson(root);
  const Json program = ProgramJson(root.imports()[0]);
  const Json& entries = graph.at("entries");
  PrintEntries("inputs", graph.at("inputs"), entries);
  PrintEntries("outputs", graph.at("outputs"), entries);

  int64_t constants = 0;
  for (const Json& constant : program.at("constants")) {
    int64_t bytes =
        kiln::ElementBytes(*kiln::ParseDataType(constant.at("dtype").get<std::string>()));
    for (const Json& extent : constant.at("shape")) bytes *= extent.get<int64_t>();
    constants += bytes;
  }
  if (graph.contains("storages")) {
    int64_t planned = 0;
    for (const Json& storage : graph["storages"]) planned += storage.at("bytes").get<int64_t>();
    std::cout << "memory: " << planned << " bytes of activations in " << graph["storages"].size()
              << " storages, " << constants << " bytes of constants\n";
  } else {
    std::cout << "memory: activations planned per input shape (the shapes are symbolic), "
              << constants << " bytes of constants\n";
  }

  const std::map<std::string, std::vector<std::string>> kernels = KernelsByFunction(program);
  std::cout << "nodes (" << graph.at("nodes").size() << "):\n";
  for (const Json& node : graph.at("nodes")) {
    const auto func = node.at("func").get<std::string>();
    std::cout << "  " << func << "\n    in: ";
    for (const Json& id : node.at("inputs"))
      std::cout << EntryText(entries, id.get<int64_t>()) << "  ";
    std::cout << "\n    out: ";
    for (const Json& id : node.at("outputs"))
      std::cout << EntryText(entries, id.get<int64_t>()) << "  ";
    std::cout << "\n    kernels:";
    auto found = kernels.find(func);
    if (found != kernels.end()) {
      for (const std::string& kernel : found->second) std::cout << " " << kernel;
    }
    std::cout << "\n";
  }
  return kExitOk;
}

}  // namespace kilnc
