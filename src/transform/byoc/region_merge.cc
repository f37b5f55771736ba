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

#include <algorithm>
#include <cstdint>
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
    out_edges_.resize(n);
    seen_in_walk_.assign(n, 0);
    first_.resize(n);
    std::iota(first_.begin(), first_.end(), 0);
    last_ = first_;
    for (int node = 0; node < n; ++node) {
      for (int input : dag.inputs[node]) {
        KILN_CHECK(input >= 0 && input < node, ValueError)
            << "node " << node << " reads node " << input
            << ": nodes must be numbered in a topological order (inputs below the node)";
        out_edges_[input].push_back(node);
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
    // The larger list absorbs the smaller, so each edge moves O(log n) times.
    if (out_edges_[a].size() > out_edges_[b].size()) std::swap(out_edges_[a], out_edges_[b]);
    out_edges_[b].insert(out_edges_[b].end(), out_edges_[a].begin(), out_edges_[a].end());
    out_edges_[a].clear();
    out_edges_[a].shrink_to_fit();
    first_[b] = std::min(first_[a], first_[b]);
    last_[b] = std::max(last_[a], last_[b]);
    parent_[a] = b;
    return true;
  }

  /// Whether a path leaves region `from` and reaches region `to` through some other region.
  /// Nodes are numbered topologically, so a region whose first node comes after `to`'s last
  /// cannot lead to `to`: the walk skips it, which keeps merging a long chain linear.
  bool ReachesThroughThirdRegion(int from, int to) {
    // A mark per walk instead of a fresh visited set: walks are many, most stop at once.
    ++walk_;
    stack_.assign(1, from);
    while (!stack_.empty()) {
      const int region = stack_.back();
      stack_.pop_back();
      // Edges that merges made internal are dropped from the list here, once.
      std::vector<int>& edges = out_edges_[region];
      size_t kept = 0;
      for (int output : edges) {
        const int next = Find(output);
        if (next == region) continue;
        edges[kept++] = output;
        if (next == to && region != from) return true;
        if (next == to || next == from || first_[next] > last_[to]) continue;
        if (seen_in_walk_[next] == walk_) continue;
        seen_in_walk_[next] = walk_;
        stack_.push_back(next);
      }
      edges.resize(kept);
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
  std::vector<std::vector<int>> out_edges_;  // per root: consumers of its nodes, some stale
  std::vector<int> first_;                   // per root: its lowest node
  std::vector<int> last_;                    // per root: its highest node
  std::vector<int64_t> seen_in_walk_;        // per root: the last walk that reached it
  int64_t walk_ = 0;
  std::vector<int> stack_;
};

}  // namespace

std::vector<int> MergeRegions(const LabeledDag& dag) { return RegionMerger(dag).Run(); }

}  // namespace byoc
}  // namespace transform
}  // namespace kiln
