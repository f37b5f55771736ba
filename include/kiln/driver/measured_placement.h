/// Cost-aware BYOC placement (docs/design.md §26): an external compiler keeps a region only
/// where it runs faster than Kiln's own CPU path, so adding a plugin never makes a model slower.
///
///   kiln::BuildOptions options;
///   options.compilers = {"dnnl"};
///   options.placement = "measured";      // kiln.build(mod, plugins=["dnnl"],
///   placement="measured")
///
/// After PartitionGraph, each function tagged `Compiler=<name>` (a region) gets two costs, in
/// seconds per run: its compiler's and the CPU path's. They come from the compiler's estimate,
/// the global `kiln.ext.<name>.estimate_seconds(function) -> float | None`, when it gives one,
/// and otherwise from a measurement made at build time: the region compiled both ways and run
/// on random inputs, interleaved, the median of several runs each. Measurements are cached by
/// the region's structure, the compiler and the machine, in `$KILN_CACHE_DIR` (default
/// `~/.cache/kiln`) `/placement_costs.json`, so a model is measured once. A region stays with
/// its compiler when that is cheaper (or when it could not be measured: a symbolic shape, an
/// error, which the report gives as the reason); otherwise its calls return to @main and run on
/// the CPU path. The costs and choices are kept on @main (attribute `kiln.placement_costs`) and
/// shown by the placement report.
#ifndef KILN_DRIVER_MEASURED_PLACEMENT_H_
#define KILN_DRIVER_MEASURED_PLACEMENT_H_

#include <kiln/ir/module.h>
#include <kiln/transform/pass.h>

#include <string>
#include <vector>

namespace kiln {

/// What the measured placement decided for one region.
struct RegionCost {
  std::string function;  ///< the region's symbol, "kiln_dnnl_0"
  std::string compiler;
  double compiler_seconds = -1;  ///< per run; -1 when unknown
  double host_seconds = -1;
  std::string source;  ///< "estimate", "measured", "cached", or "" when there are no costs
  bool kept = true;    ///< whether the compiler keeps the region
  std::string note;    ///< why it was not measured, when it was not
};

/// The pass: regions of `compilers` stay only where they are cheaper than the CPU path.
/// `codegen_options` go to each compiler's codegen when a region is measured.
KILN_API transform::Pass MeasuredPlacement(const std::vector<std::string>& compilers,
                                           const Map<String, Any>& codegen_options);

/// The decisions MeasuredPlacement recorded on @main of `mod`; empty when it did not run.
KILN_API std::vector<RegionCost> RegionCosts(const ir::IRModule& mod);

}  // namespace kiln

#endif  // KILN_DRIVER_MEASURED_PLACEMENT_H_
