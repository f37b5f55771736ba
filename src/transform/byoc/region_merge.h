// The core of MergeCompilerRegions on a plain DAG, without IR (design §17), so that it can be
// checked against a brute-force search on random graphs.
#ifndef KILN_SRC_TRANSFORM_BYOC_REGION_MERGE_H_
#define KILN_SRC_TRANSFORM_BYOC_REGION_MERGE_H_

#include <vector>

namespace kiln {
namespace transform {
namespace byoc {

/// The label of a node no external compiler takes: such nodes are never merged.
constexpr int kHostLabel = -1;

/// A DAG whose nodes are numbered in a topological order: every input of node i is < i.
struct LabeledDag {
  /// The compiler of each node (any value >= 0), or kHostLabel.
  std::vector<int> labels;
  /// The nodes each node reads (its producers), each < the node itself.
  std::vector<std::vector<int>> inputs;
};

/// Groups the nodes of `dag` into regions and returns each node's region, regions numbered by
/// their first node. A region holds nodes of one label, connected through edges between its
/// own nodes; a host node is a region of its own. Regions grow by merging two that an edge
/// joins whenever no path leaves one and reaches the other through a third region (which would
/// make the graph of regions cyclic), until no such merge is left. Sweeps in several orders
/// (region_merge.cc) each give such a result; the first with the fewest regions is kept. It is
/// maximal, not always the fewest regions possible (that search is exponential).
/// ValueError when an input is not below its node.
std::vector<int> MergeRegions(const LabeledDag& dag);

}  // namespace byoc
}  // namespace transform
}  // namespace kiln

#endif  // KILN_SRC_TRANSFORM_BYOC_REGION_MERGE_H_
