/// Where each op of a compiled model runs, and why: the placement report of `kilnc compile
/// --report` and `kiln.build(..., report=True)`, and the Graphviz view of `kilnc inspect --dot`.
///
/// Both read the module as built (after partitioning and fusion), so they cannot disagree with
/// what runs: an op call inside a function tagged `Compiler=<name>` went to that compiler; any
/// other op call runs on Kiln's CPU path, and the report asks each compiler's predicate again
/// (transform::AskCompilers) to say why it declined.
#ifndef KILN_DRIVER_PLACEMENT_H_
#define KILN_DRIVER_PLACEMENT_H_

#include <kiln/driver/measured_placement.h>
#include <kiln/ir/module.h>
#include <kiln/transform/byoc.h>

#include <string>
#include <vector>

namespace kiln {

/// The target of an op that no compiler took: Kiln's CPU path.
constexpr const char* kHostTarget = "host";

/// One op call of the model.
struct OpPlacement {
  /// The op's name, "nn.conv2d".
  std::string op;
  /// The compiler that took it, or kHostTarget.
  std::string target;
  /// The external function holding it ("kiln_dnnl_0"); empty on the host.
  std::string function;
  /// The pattern it was matched in ("dnnl.conv2d_bias_relu"), or empty.
  std::string composite;
  /// On the host: every compiler's answer, in priority order. Empty otherwise.
  std::vector<transform::PredicateAnswer> answers;
};

struct PlacementReport {
  /// The compilers asked, in priority order.
  std::vector<std::string> compilers;
  /// Every op call, external functions first (by symbol), then the host's, each in post-order.
  std::vector<OpPlacement> ops;
  /// With placement "measured": each region's costs and whether its compiler kept it.
  std::vector<RegionCost> region_costs;

  /// A summary per target, then each distinct (op, target, pattern) with its count, then each
  /// region's costs when they were measured, then each op left on the host with every
  /// compiler's answer.
  KILN_API std::string ToText() const;
};

/// The report for `built`, a module as kiln::Build lowers it (typed, partitioned for
/// `compilers`).
KILN_API PlacementReport ReportPlacement(const ir::IRModule& built,
                                         const std::vector<std::string>& compilers);

/// @main of `built` as a Graphviz digraph: one box per call (an external function, labelled
/// with its symbol and op count, filled with its compiler's colour; a fused CPU group, labelled
/// with its ops, in grey), ellipses for inputs, edges along the data flow, and a legend.
KILN_API std::string PlacementDot(const ir::IRModule& built);

}  // namespace kiln

#endif  // KILN_DRIVER_PLACEMENT_H_
