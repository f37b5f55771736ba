// The activations the dnnl patterns fuse as eltwise post-ops, shared by the compiler side
// (which names composites after them) and the runtime side (which reads the names back).
#ifndef KILN_PLUGINS_DNNL_DNNL_ACTIVATIONS_H_
#define KILN_PLUGINS_DNNL_DNNL_ACTIVATIONS_H_

#include <string>
#include <utility>
#include <vector>

namespace kiln {
namespace dnnl_plugin {

/// (the part of a composite's name, the op): "dnnl.conv2d_bias_relu" ends in nn.relu.
inline const std::vector<std::pair<std::string, std::string>>& FusedActivations() {
  static const std::vector<std::pair<std::string, std::string>> activations = {
      {"relu", "nn.relu"},    {"clip", "clip"}, {"gelu", "nn.gelu"},
      {"sigmoid", "sigmoid"}, {"tanh", "tanh"}, {"leaky_relu", "nn.leaky_relu"},
  };
  return activations;
}

}  // namespace dnnl_plugin
}  // namespace kiln

#endif  // KILN_PLUGINS_DNNL_DNNL_ACTIVATIONS_H_
