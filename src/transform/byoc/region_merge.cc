// MergeRegions: greedy merging of same-label regions of a DAG that never creates a cycle.
//
// Merging two regions A and B is safe exactly when no path of the graph of regions goes from
// one to the other through a third region C: after the merge, C would have to run both after
// and before A∪B. Regions run atomically, so the walk is over regions, not nodes: reaching any
// node of C makes every successor of C reachable, even when C's nodes are only weakly connected.
// A merge can make an earlier refused one safe (the third region on the path may itself have
// joined A or B), so the sweep repeats until a whole sweep merges nothing.
#include "region_merge.h"

#include <kiln/ffi/error.h>

#include <numeric>
#include <string>

namespace kiln {
namespace transform {
namespace byoc {
namespace {

class RegionMerger {
 public:
  explicit RegionMerger(const LabeledDag& dag) : dag_(dag), parent_(dag.labels.size()) {
    const int n = static_cast<int>(dag.labels.size());
    KILN_CHECK(dag.inputs.size() == dag.labels.size(), ValueError)
        << "a labeled DAG needs one input list per node: " << dag.inputs.size() << " lists for "
        << n << " nodes";
    std::iota(parent_.begin(), parent_.end(), 0);
    members_.resize(n);
    outputs_.resize(n);
    for (int node = 0; node < n; ++node) {
      members_[node] = {node};
      for (int input : dag.inputs[node]) {
        KILN_CHECK(input >= 0 && input < node, ValueError)
            << "node " << node << " reads node " << input
            << ": nodes must be numbered in a topological order (inputs below the node)";
        outputs_[input].push_back(node);
      }
    }
  }

  std::vector<int> Run() {
    bool merged = true;
    while (merged) {
      merged = false;
      for (int node = 0; node < static_cast<int>(parent_.size()); ++node) {
        for (int input : dag_.inputs[node]) merged = TryMerge(input, node) || merged;
      }
    }
    return Numbered();
  }

 private:
  int Find(int node) {
    while (parent_[node] != node) node = parent_[node] = parent_[parent_[node]];
    return node;
  }

  bool TryMerge(int producer, int consumer) {
    const int label = dag_.labels[consumer];
    if (label == kHostLabel || dag_.labels[producer] != label) return false;
    const int a = Find(producer);
    const int b = Find(consumer);
    if (a == b || ReachesThroughThirdRegion(a, b) || ReachesThroughThirdRegion(b, a)) {
      return false;
    }
    parent_[a] = b;
    members_[b].insert(members_[b].end(), members_[a].begin(), members_[a].end());
    members_[a].clear();
    return true;
  }

  /// Whether a path leaves region `from` and reaches region `to` through some other region.
  bool ReachesThroughThirdRegion(int from, int to) {
    std::vector<char> seen(parent_.size(), 0);
    std::vector<int> stack = {from};
    while (!stack.empty()) {
      const int region = stack.back();
      stack.pop_back();
      for (int member : members_[region]) {
        for (int output : outputs_[member]) {
          const int next = Find(output);
          if (next == to && region != from) return true;
          if (next == to || next == from || seen[next]) continue;
          seen[next] = 1;
          stack.push_back(next);
        }
      }
    }
    return false;
  }

  std::vector<int> Numbered() {
    std::vector<int> number(parent_.size(), -1);
    std::vector<int> regions(parent_.size());
    int next = 0;
    for (int node = 0; node < static_cast<int>(parent_.size()); ++node) {
      const int root = Find(node);
      if (number[root] < 0) number[root] = next++;
      regions[node] = number[root];
    }
    return regions;
  }

  const LabeledDag& dag_;
  std::vector<int> parent_;
  std::vector<std::vector<int>> members_;  // of each root
  std::vector<std::vector<int>> outputs_;  // consumers of each node
};

}  // namespace

std::vector<int> MergeRegions(const LabeledDag& dag) { return RegionMerger(dag).Run(); }

}  // namespace byoc
}  // namespace transform
}  // namespace kiln
