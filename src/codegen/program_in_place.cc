#include "program_in_place.h"

#include <map>
#include <set>
#include <string>

namespace kiln {
namespace codegen {
namespace {

using Json = nlohmann::json;

/// The kernel program's steps, indexed by what they read and write.
class StepIndex {
 public:
  explicit StepIndex(const Json& steps) : steps_(steps) {
    for (size_t s = 0; s < steps.size(); ++s) {
      if (!steps[s].contains("kernel")) {  // a copy
        readers_[steps[s].at("copy").get<std::string>()].push_back(s);
        continue;
      }
      for (const Json& ref : steps[s].at("inputs")) readers_[ref.get<std::string>()].push_back(s);
      for (const Json& ref : steps[s].at("outputs")) writer_[ref.get<std::string>()] = s;
    }
  }

  /// The one step reading `ref`, or null.
  const Json* OnlyReader(const std::string& ref) const {
    auto it = readers_.find(ref);
    return it != readers_.end() && it->second.size() == 1 ? &steps_[it->second[0]] : nullptr;
  }
  const Json* Writer(const std::string& ref) const {
    auto it = writer_.find(ref);
    return it != writer_.end() ? &steps_[it->second] : nullptr;
  }

 private:
  const Json& steps_;
  std::map<std::string, std::vector<size_t>> readers_;
  std::map<std::string, size_t> writer_;
};

bool IsKernel(const Json* step, std::initializer_list<const char*> kernels) {
  if (step == nullptr || !step->contains("kernel")) return false;
  const std::string kernel = step->at("kernel").get<std::string>();
  for (const char* name : kernels) {
    if (kernel == name) return true;
  }
  return false;
}

/// The operand of a two-input `step` other than `ref`, or "".
std::string OtherOperand(const Json& step, const std::string& ref) {
  const Json& inputs = step.at("inputs");
  if (inputs.size() != 2) return "";
  if (inputs[0] == ref) return inputs[1].get<std::string>();
  return inputs[1] == ref ? inputs[0].get<std::string>() : "";
}

/// Whether `ref` is the product of a GEMM-backed step, or that product plus a constant.
bool IsProduct(const StepIndex& index, const std::string& ref) {
  const Json* writer = index.Writer(ref);
  if (IsKernel(writer, {"nn.conv2d", "nn.conv2d_nchwc", "nn.dense", "matmul"})) return true;
  if (!IsKernel(writer, {"add"})) return false;
  for (const Json& operand : writer->at("inputs")) {
    const std::string other = OtherOperand(*writer, operand.get<std::string>());
    if (operand.get<std::string>()[0] == 'c' && other[0] == 't' &&
        IsKernel(index.Writer(other), {"nn.conv2d", "nn.conv2d_nchwc", "nn.dense", "matmul"})) {
      return true;
    }
  }
  return false;
}

/// The output that `add`'s result reaches, directly or through one activation, or -1.
int64_t OutputOf(const StepIndex& index, const Json& add) {
  std::string result = add.at("outputs")[0].get<std::string>();
  if (result[0] == 't') {
    const Json* activation = index.OnlyReader(result);
    if (!IsKernel(activation, {"nn.relu", "clip", "nn.gelu", "nn.silu"})) return -1;
    result = activation->at("outputs")[0].get<std::string>();
  }
  return result[0] == 'o' ? std::stoll(result.substr(1)) : -1;
}

}  // namespace

std::vector<std::pair<int64_t, int64_t>> OutputsOverInputs(const Json& function) {
  const StepIndex index(function.at("steps"));
  const Json& inputs = function.at("inputs");
  const Json& outputs = function.at("outputs");
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::set<int64_t> placed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string ref = "i" + std::to_string(i);
    const Json* add = index.OnlyReader(ref);
    if (!IsKernel(add, {"add"}) || !IsProduct(index, OtherOperand(*add, ref))) continue;
    const int64_t output = OutputOf(index, *add);
    if (output < 0 || outputs.at(static_cast<size_t>(output)) != inputs[i] ||
        !placed.insert(output).second) {
      continue;
    }
    pairs.emplace_back(output, static_cast<int64_t>(i));
  }
  return pairs;
}

}  // namespace codegen
}  // namespace kiln
