// MergeRegions: greedy merging of same-label regions of a DAG that never creates a cycle.
//
// Merging two regions A and B is safe exactly when no path of the graph of regions goes from
// one to the other through a third region C: after the merge, C would have to run both after
// and before A∪B. Regions run atomically, so the walk is over regions, not nodes: reaching any
// node of C makes every successor of C reachable, even when C's nodes are only weakly connected.
// A merge can make an earlier refused one safe (the third region on the path may itself have
// joined A or B), so the sweep repeats until a whole sweep merges nothing.
//
// The walk only visits regions ranked between A and B in a topological order of the regions,
// kept up to date at each merge (Rerank): without that bound, each check walks everything
// downstream and 20,000 nodes took 14 s instead of 0.13 s; with it the results are the same
// (checked on 20,000 random DAGs against the unbounded walk).
//
// Which merges win depends on the order: sweeping from the inputs, a producer joins its first
// consumer and may then block that consumer's merges with its own consumers; sweeping from the
// outputs, the opposite; and merging one compiler's calls may block merges of another's. So
// MergeRegions tries both directions, each with no label first and with each label first, and
// keeps the result with the fewest regions: on random DAGs of up to 9 nodes it missed the
// fewest possible 76 times in 30,000 graphs with one forward sweep, once with both directions,
// 3 times in 200,000 with every order (region_merge_property_test.cc shows one). The cost is
// (2 + 2 * labels) sweeps.
#include "region_merge.h"

#include <kiln/ffi/error.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <set>
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
    rank_ = parent_;  // node order is a topological order of the singleton regions
    out_edges_.resize(n);
    in_edges_.resize(n);
    seen_in_walk_.assign(n, 0);
    for (int node = 0; node < n; ++node) {
      for (int input : dag.inputs[node]) {
        KILN_CHECK(input >= 0 && input < node, ValueError)
            << "node " << node << " reads node " << input
            << ": nodes must be numbered in a topological order (inputs below the node)";
        out_edges_[input].push_back(node);
        in_edges_[node].push_back(input);
      }
    }
  }

  /// Sweeps over the nodes (in topological order, or in reverse with `from_outputs`), merging
  /// each with its inputs where safe, until a sweep merges nothing; with `first_label` not
  /// kHostLabel, first for that label alone, then for all.
  std::vector<int> Run(bool from_outputs, int first_label) {
    if (first_label != kHostLabel) Sweep(from_outputs, first_label);
    Sweep(from_outputs, kHostLabel);
    return Numbered();
  }

 private:
  /// Sweeps until nothing merges; only nodes labeled `only_label` unless it is kHostLabel.
  void Sweep(bool from_outputs, int only_label) {
    bool merged = true;
    const int n = static_cast<int>(parent_.size());
    while (merged) {
      merged = false;
      for (int i = 0; i < n; ++i) {
        const int node = from_outputs ? n - 1 - i : i;
        if (only_label != kHostLabel && dag_.labels[node] != only_label) continue;
        for (int input : dag_.inputs[node]) merged = TryMerge(input, node) || merged;
      }
    }
  }

  int Find(int node) {
    while (parent_[node] != node) node = parent_[node] = parent_[parent_[node]];
    return node;
  }

  bool TryMerge(int producer, int consumer) {
    const int label = dag_.labels[consumer];
    if (label == kHostLabel || dag_.labels[producer] != label) return false;
    const int a = Find(producer);
    const int b = Find(consumer);
    if (a == b) return false;
    // The edge goes from a to b, so rank_[a] < rank_[b] and no path goes back from b to a:
    // only paths from a need checking. The walk also collects what a reaches below b's rank.
    std::vector<int> after_a;
    if (Walk(a, b, out_edges_, &after_a)) return false;
    std::vector<int> before_b;
    Walk(b, a, in_edges_, &before_b);
    Rerank(a, b, after_a, before_b);
    parent_[a] = b;
    Absorb(&out_edges_, a, b);
    Absorb(&in_edges_, a, b);
    return true;
  }

  /// Walks from region `from` along `edges` (out_edges_: forwards; in_edges_: backwards),
  /// through regions whose rank lies strictly between the two regions' ranks (others cannot
  /// lie on a path between them), collecting them in `visited`. True when the walk reaches
  /// `other` through a third region.
  bool Walk(int from, int other, std::vector<std::vector<int>>& edges, std::vector<int>* visited) {
    const int low = std::min(rank_[from], rank_[other]);
    const int high = std::max(rank_[from], rank_[other]);
    ++walk_;  // a mark per walk instead of a fresh visited set: walks are many and short
    stack_.assign(1, from);
    while (!stack_.empty()) {
      const int region = stack_.back();
      stack_.pop_back();
      for (int next : Neighbours(&edges[region], region)) {
        if (next == other) {
          if (region != from) return true;
          continue;
        }
        if (rank_[next] <= low || rank_[next] >= high || seen_in_walk_[next] == walk_) continue;
        seen_in_walk_[next] = walk_;
        visited->push_back(next);
        stack_.push_back(next);
      }
    }
    return false;
  }

  /// The regions `*edges` (of region `root`) lead to, dropping the edges merges made internal.
  std::vector<int> Neighbours(std::vector<int>* edges, int root) {
    std::vector<int> regions;
    size_t kept = 0;
    for (int node : *edges) {
      const int region = Find(node);
      if (region == root) continue;
      (*edges)[kept++] = node;
      regions.push_back(region);
    }
    edges->resize(kept);
    return regions;
  }

  /// Keeps rank_ a topological order of the regions once a and b merge (Pearce and Kelly's
  /// dynamic topological order, 2006): within the ranks of a, b, the regions a reaches below
  /// b (`after_a`) and those reaching b above a (`before_b`), the latter come first, then the
  /// merged region, then the former. No region is in both, or the merge would be unsafe.
  void Rerank(int a, int b, std::vector<int> after_a, std::vector<int> before_b) {
    auto by_rank = [this](int x, int y) { return rank_[x] < rank_[y]; };
    std::sort(after_a.begin(), after_a.end(), by_rank);
    std::sort(before_b.begin(), before_b.end(), by_rank);
    std::vector<int> pool = {rank_[a], rank_[b]};
    for (int region : after_a) pool.push_back(rank_[region]);
    for (int region : before_b) pool.push_back(rank_[region]);
    std::sort(pool.begin(), pool.end());
    size_t next = 0;
    for (int region : before_b) rank_[region] = pool[next++];
    rank_[b] = pool[next++];
    for (int region : after_a) rank_[region] = pool[next++];
  }

  /// Moves region `from`'s edge list into region `into`'s; the larger list absorbs the smaller,
  /// so each edge moves O(log n) times.
  static void Absorb(std::vector<std::vector<int>>* edges, int from, int into) {
    std::vector<int>& source = (*edges)[from];
    std::vector<int>& target = (*edges)[into];
    if (source.size() > target.size()) std::swap(source, target);
    target.insert(target.end(), source.begin(), source.end());
    source.clear();
    source.shrink_to_fit();
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
  std::vector<int> rank_;                    // per root: a topological order of the regions
  std::vector<std::vector<int>> out_edges_;  // per root: consumers of its nodes, some stale
  std::vector<std::vector<int>> in_edges_;   // per root: producers of its nodes, some stale
  std::vector<int64_t> seen_in_walk_;        // per root: the last walk that reached it
  int64_t walk_ = 0;
  std::vector<int> stack_;
};

}  // namespace

std::vector<int> MergeRegions(const LabeledDag& dag) {
  // Which merges win depends on the order (see the file comment): each order is tried, the
  // first with the fewest regions is kept. Regions are numbered from 0, so the largest number
  // says how many there are.
  std::set<int> labels(dag.labels.begin(), dag.labels.end());
  labels.insert(kHostLabel);  // kHostLabel as first_label: no label goes first
  std::vector<int> best;
  for (bool from_outputs : {false, true}) {
    for (int first_label : labels) {
      std::vector<int> regions = RegionMerger(dag).Run(from_outputs, first_label);
      if (best.empty() || *std::max_element(regions.begin(), regions.end()) <
                              *std::max_element(best.begin(), best.end())) {
        best = std::move(regions);
      }
    }
  }
  return best;
}

}  // namespace byoc
}  // namespace transform
}  // namespace kiln
