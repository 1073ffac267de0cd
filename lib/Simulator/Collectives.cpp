//===- Collectives.cpp - Decomposition of collectives into link steps -----===//

#include "ratrain/Simulator/Simulator.h"

#include <cmath>

using namespace ratrain;
using namespace ratrain::sim;

/// ceil(log2 k) for k >= 1.
static int64_t ceilLog2(int64_t k) {
  int64_t levels = 0;
  while ((int64_t(1) << levels) < k)
    ++levels;
  return levels;
}

static void appendSteps(std::vector<CollectiveStep> &steps, int64_t count,
                        double bytes, LinkClass link) {
  for (int64_t i = 0; i < count; ++i)
    steps.push_back({bytes, link});
}

/// Ring over k members of an n-byte buffer.
static void appendRing(std::vector<CollectiveStep> &steps, CollectiveKind kind,
                       double n, int64_t k, LinkClass link) {
  if (k <= 1)
    return;
  int64_t count = kind == CollectiveKind::AllReduce ? 2 * (k - 1) : k - 1;
  appendSteps(steps, count, n / static_cast<double>(k), link);
}

/// Binomial-tree algorithms (whole messages through a root).
static void appendTree(std::vector<CollectiveStep> &steps, CollectiveKind kind,
                       double n, int64_t k, LinkClass link) {
  int64_t levels = ceilLog2(k);
  switch (kind) {
  case CollectiveKind::AllReduce:
    // Reduce to the root, then broadcast from it.
    appendSteps(steps, 2 * levels, n, link);
    return;
  case CollectiveKind::ReduceScatter:
    // Reduce to the root, then scatter: each level halves what is forwarded.
    appendSteps(steps, levels, n, link);
    for (int64_t j = 1; j <= levels; ++j)
      steps.push_back({std::ldexp(n, static_cast<int>(-j)), link});
    return;
  case CollectiveKind::AllGather:
    // Gather to the root (each level doubles), then broadcast.
    for (int64_t j = levels; j >= 1; --j)
      steps.push_back({std::ldexp(n, static_cast<int>(-j)), link});
    appendSteps(steps, levels, n, link);
    return;
  }
}

std::vector<CollectiveStep> sim::planCollective(const CollectiveSpec &spec) {
  std::vector<CollectiveStep> steps;
  const int64_t k = spec.groupSize;
  if (k <= 1)
    return steps;
  const double n = static_cast<double>(spec.bytes);
  const LinkClass outer =
      spec.spansNodes() ? LinkClass::InterNode : LinkClass::IntraNode;
  switch (spec.algorithm) {
  case CollectiveAlgorithm::Ring:
    appendRing(steps, spec.kind, n, k, outer);
    return steps;
  case CollectiveAlgorithm::Tree:
    appendTree(steps, spec.kind, n, k, outer);
    return steps;
  case CollectiveAlgorithm::Hierarchical:
    break;
  }
  const int64_t c = spec.membersPerNode;
  if (c <= 1 || c >= k) {
    // One level only: a ring inside the node or across the nodes.
    appendRing(steps, spec.kind, n, k, outer);
    return steps;
  }
  const int64_t g = k / c;
  const double shard = n / static_cast<double>(c);
  switch (spec.kind) {
  case CollectiveKind::AllReduce:
    appendRing(steps, CollectiveKind::ReduceScatter, n, c,
               LinkClass::IntraNode);
    appendRing(steps, CollectiveKind::AllReduce, shard, g,
               LinkClass::InterNode);
    appendRing(steps, CollectiveKind::AllGather, n, c, LinkClass::IntraNode);
    break;
  case CollectiveKind::ReduceScatter:
    appendRing(steps, CollectiveKind::ReduceScatter, n, c,
               LinkClass::IntraNode);
    appendRing(steps, CollectiveKind::ReduceScatter, shard, g,
               LinkClass::InterNode);
    break;
  case CollectiveKind::AllGather:
    appendRing(steps, CollectiveKind::AllGather, shard, g,
               LinkClass::InterNode);
    appendRing(steps, CollectiveKind::AllGather, n, c, LinkClass::IntraNode);
    break;
  }
  return steps;
}

double sim::collectiveTime(const CollectiveSpec &spec,
                           const NetworkSpec &network) {
  double total = 0;
  for (const CollectiveStep &step : planCollective(spec)) {
    const LinkSpec &link = step.link == LinkClass::IntraNode
                               ? network.intraNode
                               : network.interNode;
    total += link.latency + (step.bytes > 0 ? step.bytes / link.bandwidth : 0);
  }
  return total;
}

double sim::stepTimeErrorPercent(double simulated, double measured) {
  return (simulated - measured) / measured * 100.0;
}
