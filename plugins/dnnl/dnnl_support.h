// What the dnnl plugin's runtime can run, asked of one typed call: shared by the op predicates
// `target.dnnl` (dnnl_support.cc) and the checks of the pattern table (dnnl_patterns.cc), so a
// fused pattern never takes an op its runtime would refuse alone.
#ifndef KILN_PLUGINS_DNNL_DNNL_SUPPORT_H_
#define KILN_PLUGINS_DNNL_DNNL_SUPPORT_H_

#include <kiln/ir/expr.h>

#include <optional>
#include <string>
#include <vector>

namespace kiln {
namespace dnnl_plugin {

/// Why oneDNN cannot run `call`, a typed call of an op; empty when it can. The sentence is what
/// the placement report prints ("argument 0 is int64, not float32").
std::string WhyNotDnnl(const ir::Call& call);

}  // namespace dnnl_plugin
}  // namespace kiln

#endif  // KILN_PLUGINS_DNNL_DNNL_SUPPORT_H_
