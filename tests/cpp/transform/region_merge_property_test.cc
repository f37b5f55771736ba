// Property tests of MergeRegions (src/transform/byoc/region_merge.h) on random labeled DAGs
// from a fixed seed: the regions form an acyclic graph, hold one label each and are connected;
// running the regions atomically in a topological order of the region graph computes what the
// original graph computes; no two adjacent regions of one label could still merge; and on small
// graphs the region count is compared with a brute-force search over every valid grouping
// (see the comment of the first test for what is asserted there).
#include "transform/byoc/region_merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace kiln {
namespace transform {
namespace byoc {
namespace {

/// A DAG whose node i reads each earlier node with probability `density` (2.5 inputs on
/// average above 9 nodes when `density` is 0), labels uniform over host and `num_labels`.
LabeledDag RandomDag(std::mt19937& rng, int num_nodes, int num_labels, double density = 0) {
  LabeledDag dag;
  std::uniform_int_distribution<int> label(kHostLabel, num_labels - 1);
  if (density == 0) density = num_nodes <= 9 ? 0.4 : 5.0 / num_nodes;
  std::bernoulli_distribution edge(density);
  for (int node = 0; node < num_nodes; ++node) {
    dag.labels.push_back(label(rng));
    dag.inputs.emplace_back();
    for (int input = 0; input < node; ++input) {
      if (edge(rng)) dag.inputs.back().push_back(input);
    }
  }
  return dag;
}

std::string Describe(const LabeledDag& dag, const std::vector<int>& regions = {}) {
  std::ostringstream text;
  for (size_t node = 0; node < dag.labels.size(); ++node) {
    text << node << ": label " << dag.labels[node];
    if (!regions.empty()) text << ", region " << regions[node];
    text << ", inputs [";
    for (int input : dag.inputs[node]) text << " " << input;
    text << " ]\n";
  }
  return text.str();
}

int CountRegions(const std::vector<int>& regions) {
  return static_cast<int>(std::set<int>(regions.begin(), regions.end()).size());
}

/// Edges between distinct regions (regions numbered 0..count-1, every number used).
std::vector<std::set<int>> RegionGraph(const LabeledDag& dag, const std::vector<int>& regions) {
  std::vector<std::set<int>> successors(CountRegions(regions));
  for (size_t node = 0; node < dag.labels.size(); ++node) {
    for (int input : dag.inputs[node]) {
      if (regions[input] != regions[node]) successors[regions[input]].insert(regions[node]);
    }
  }
  return successors;
}

/// A topological order of the region graph (Kahn's algorithm); nullopt when it has a cycle.
std::optional<std::vector<int>> RegionOrder(const LabeledDag& dag,
                                            const std::vector<int>& regions) {
  const std::vector<std::set<int>> successors = RegionGraph(dag, regions);
  std::vector<int> in_degree(successors.size(), 0);
  for (const std::set<int>& next : successors) {
    for (int region : next) ++in_degree[region];
  }
  std::vector<int> ready;
  std::vector<int> order;
  for (size_t region = 0; region < successors.size(); ++region) {
    if (in_degree[region] == 0) ready.push_back(static_cast<int>(region));
  }
  while (!ready.empty()) {
    const int region = ready.back();
    ready.pop_back();
    order.push_back(region);
    for (int next : successors[region]) {
      if (--in_degree[next] == 0) ready.push_back(next);
    }
  }
  if (order.size() != successors.size()) return std::nullopt;
  return order;
}

/// Whether the nodes of each region are connected through edges between them.
bool RegionsConnected(const LabeledDag& dag, const std::vector<int>& regions) {
  const int n = static_cast<int>(dag.labels.size());
  std::vector<int> parent(n);
  for (int node = 0; node < n; ++node) parent[node] = node;
  auto find = [&parent](int node) {
    while (parent[node] != node) node = parent[node];
    return node;
  };
  for (int node = 0; node < n; ++node) {
    for (int input : dag.inputs[node]) {
      if (regions[input] == regions[node]) parent[find(input)] = find(node);
    }
  }
  std::vector<int> root_of_region(CountRegions(regions), -1);
  for (int node = 0; node < n; ++node) {
    int& root = root_of_region[regions[node]];
    if (root < 0) root = find(node);
    if (root != find(node)) return false;
  }
  return true;
}

/// Whether the grouping is one MergeCompilerRegions may produce: one label per region, host
/// nodes alone, regions connected, region graph acyclic.
bool IsValidGrouping(const LabeledDag& dag, const std::vector<int>& regions) {
  std::vector<std::set<int>> labels(CountRegions(regions));
  std::vector<int> sizes(labels.size(), 0);
  for (size_t node = 0; node < dag.labels.size(); ++node) {
    labels[regions[node]].insert(dag.labels[node]);
    ++sizes[regions[node]];
  }
  for (size_t region = 0; region < labels.size(); ++region) {
    if (labels[region].size() != 1) return false;
    if (*labels[region].begin() == kHostLabel && sizes[region] != 1) return false;
  }
  return RegionsConnected(dag, regions) && RegionOrder(dag, regions).has_value();
}

/// A node's value: a fixed random function of its inputs' values.
uint64_t NodeFunction(int node, const std::vector<uint64_t>& inputs) {
  uint64_t value = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(node + 1);
  for (size_t i = 0; i < inputs.size(); ++i) value = (value ^ inputs[i]) * (2 * i + 3) + node;
  return value;
}

std::vector<uint64_t> EvaluateInNodeOrder(const LabeledDag& dag) {
  std::vector<uint64_t> values;
  for (size_t node = 0; node < dag.labels.size(); ++node) {
    std::vector<uint64_t> inputs;
    for (int input : dag.inputs[node]) inputs.push_back(values[input]);
    values.push_back(NodeFunction(static_cast<int>(node), inputs));
  }
  return values;
}

/// Runs each region at once (its nodes in node order), regions in a topological order of the
/// region graph; a node reading a value not computed yet yields nullopt.
std::optional<std::vector<uint64_t>> EvaluateByRegions(const LabeledDag& dag,
                                                       const std::vector<int>& regions) {
  const std::optional<std::vector<int>> order = RegionOrder(dag, regions);
  if (!order.has_value()) return std::nullopt;
  std::vector<std::optional<uint64_t>> values(dag.labels.size());
  for (int region : *order) {
    for (size_t node = 0; node < dag.labels.size(); ++node) {
      if (regions[node] != region) continue;
      std::vector<uint64_t> inputs;
      for (int input : dag.inputs[node]) {
        if (!values[input].has_value()) return std::nullopt;
        inputs.push_back(*values[input]);
      }
      values[node] = NodeFunction(static_cast<int>(node), inputs);
    }
  }
  std::vector<uint64_t> result;
  for (const std::optional<uint64_t>& value : values) result.push_back(*value);
  return result;
}

/// The fewest regions of any valid grouping: every assignment of nodes to same-label groups
/// (host nodes alone), kept when valid. Exponential; for graphs of at most 9 nodes.
class BruteForce {
 public:
  explicit BruteForce(const LabeledDag& dag) : dag_(dag), regions_(dag.labels.size(), -1) {}

  int Fewest() {
    Assign(0, 0);
    return best_;
  }

 private:
  void Assign(size_t node, int count) {
    if (count >= best_) return;
    if (node == dag_.labels.size()) {
      if (IsValidGrouping(dag_, regions_)) best_ = count;
      return;
    }
    if (dag_.labels[node] != kHostLabel) {
      for (int region = 0; region < count; ++region) {
        if (dag_.labels[first_node_[region]] != dag_.labels[node]) continue;
        regions_[node] = region;
        Assign(node + 1, count);
      }
    }
    regions_[node] = count;
    first_node_.push_back(static_cast<int>(node));
    Assign(node + 1, count + 1);
    first_node_.pop_back();
  }

  const LabeledDag& dag_;
  std::vector<int> regions_;
  std::vector<int> first_node_;
  int best_ = 1 << 30;
};

/// Whether two adjacent regions of one label could merge into a valid grouping.
bool HasMergeableNeighbours(const LabeledDag& dag, const std::vector<int>& regions) {
  for (size_t node = 0; node < dag.labels.size(); ++node) {
    for (int input : dag.inputs[node]) {
      if (regions[input] == regions[node] || dag.labels[input] != dag.labels[node] ||
          dag.labels[node] == kHostLabel) {
        continue;
      }
      // Region ids stay dense: the input's region takes the node's id, the last id its place.
      const int last = CountRegions(regions) - 1;
      std::vector<int> merged = regions;
      for (int& region : merged) {
        if (region == regions[input]) region = regions[node];
      }
      for (int& region : merged) {
        if (region == last) region = regions[input] == last ? regions[node] : regions[input];
      }
      if (RegionOrder(dag, merged).has_value()) return true;
    }
  }
  return false;
}

void CheckCheapProperties(const LabeledDag& dag, const std::vector<int>& regions) {
  ASSERT_EQ(regions.size(), dag.labels.size());
  ASSERT_TRUE(IsValidGrouping(dag, regions)) << Describe(dag, regions);
  const std::optional<std::vector<uint64_t>> by_regions = EvaluateByRegions(dag, regions);
  ASSERT_TRUE(by_regions.has_value()) << Describe(dag, regions);
  EXPECT_EQ(*by_regions, EvaluateInNodeOrder(dag)) << Describe(dag, regions);
  EXPECT_FALSE(HasMergeableNeighbours(dag, regions)) << Describe(dag, regions);
}

// MergeRegions is greedy, so it is not always optimal. A case (one of 3 in 200,000 graphs of
// seed 99), one label b besides node 0 (label a) and host node 5:
//   inputs: 2 <- 0; 3 <- 0 2; 4 <- 0 1 3; 5 <- 1 2; 6 <- 3; 7 <- 3 4 5 6; 8 <- 4 5 6.
// Every sweep order gives {1, 2, 3, 4, 6} {7} {8} for b (7 and 8 read the host node 5, which
// reads 1 and 2, so they cannot join that region, and without 6 they are not connected):
// 5 regions, where {1, 2, 3, 4} {6, 7, 8} gives 4. What is asserted instead: every result is
// valid and maximal, never below the brute force (which would mean the checks are wrong), and
// worse than it on at most 1% of the graphs (0 of these 10,000; one forward sweep alone misses
// 76 of 30,000).
TEST(RegionMergePropertyTest, SmallGraphsAreValidMaximalAndRarelyAboveTheFewest) {
  std::mt19937 rng(20261122);
  constexpr int kGraphs = 10000;
  int worse_than_fewest = 0;
  for (int round = 0; round < kGraphs; ++round) {
    const int num_nodes = 4 + static_cast<int>(rng() % 6);
    const int num_labels = 2 + static_cast<int>(rng() % 2);
    const LabeledDag dag = RandomDag(rng, num_nodes, num_labels);
    const std::vector<int> regions = MergeRegions(dag);
    CheckCheapProperties(dag, regions);
    if (HasFailure()) return;
    const int fewest = BruteForce(dag).Fewest();
    ASSERT_GE(CountRegions(regions), fewest) << Describe(dag, regions);
    if (CountRegions(regions) > fewest) ++worse_than_fewest;
  }
  std::cout << worse_than_fewest << " of " << kGraphs
            << " graphs got more regions than the fewest possible\n";
  EXPECT_LE(worse_than_fewest * 100, kGraphs);
}

TEST(RegionMergePropertyTest, LargeGraphsAreValidAndMaximal) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    const int num_nodes = 10 + static_cast<int>(rng() % 120);
    const LabeledDag dag = RandomDag(rng, num_nodes, 2 + static_cast<int>(rng() % 2));
    CheckCheapProperties(dag, MergeRegions(dag));
    if (HasFailure()) return;
  }
}

TEST(RegionMergePropertyTest, DenseMediumGraphsAreValidAndMaximal) {
  // Dense graphs with one label besides the host make long merge chains, and merges that a
  // later sweep finds.
  std::mt19937 rng(11);
  for (int round = 0; round < 2000; ++round) {
    const int num_nodes = 10 + static_cast<int>(rng() % 30);
    const LabeledDag dag = RandomDag(rng, num_nodes, 1 + static_cast<int>(rng() % 3), 0.3);
    CheckCheapProperties(dag, MergeRegions(dag));
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace byoc
}  // namespace transform
}  // namespace kiln
