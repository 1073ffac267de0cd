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
                        double bytes, LinkClass link, int64_t streams = 1) {
  for (int64_t i = 0; i < count; ++i)
    steps.push_back({bytes, link, streams});
}

/// Ring over k members of an n-byte buffer.
static void appendRing(std::vector<CollectiveStep> &steps, CollectiveKind kind,
                       double n, int64_t k, LinkClass link,
                       int64_t streams = 1) {
  if (k <= 1)
    return;
  int64_t count = kind == CollectiveKind::AllReduce ? 2 * (k - 1) : k - 1;
  appendSteps(steps, count, n / static_cast<double>(k), link, streams);
}

/// Binomial scatter (or, reversed, gather) of an n-byte buffer over k members
/// in `levels` steps: each level forwards half of what the previous one did,
/// scaled so that (k-1)/k * n move in total (exactly n/2, n/4, ... when k is a
/// power of two).
static void appendScatter(std::vector<CollectiveStep> &steps, double n,
                          int64_t k, int64_t levels, LinkClass link,
                          bool gather) {
  if (levels == 0)
    return;
  double total = (static_cast<double>(k) - 1) / static_cast<double>(k) * n;
  double halves = 1 - std::ldexp(1.0, static_cast<int>(-levels));
  std::vector<CollectiveStep> scatter;
  for (int64_t j = 1; j <= levels; ++j)
    scatter.push_back(
        {std::ldexp(total / halves, static_cast<int>(-j)), link, 1});
  if (gather)
    steps.insert(steps.end(), scatter.rbegin(), scatter.rend());
  else
    steps.insert(steps.end(), scatter.begin(), scatter.end());
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
    appendScatter(steps, n, k, levels, link, /*gather=*/false);
    return;
  case CollectiveKind::AllGather:
    // Gather to the root (each level doubles), then broadcast.
    appendScatter(steps, n, k, levels, link, /*gather=*/true);
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
    appendRing(steps, CollectiveKind::AllReduce, shard, g, LinkClass::InterNode,
               c);
    appendRing(steps, CollectiveKind::AllGather, n, c, LinkClass::IntraNode);
    break;
  case CollectiveKind::ReduceScatter:
    appendRing(steps, CollectiveKind::ReduceScatter, n, c,
               LinkClass::IntraNode);
    appendRing(steps, CollectiveKind::ReduceScatter, shard, g,
               LinkClass::InterNode, c);
    break;
  case CollectiveKind::AllGather:
    appendRing(steps, CollectiveKind::AllGather, shard, g, LinkClass::InterNode,
               c);
    appendRing(steps, CollectiveKind::AllGather, n, c, LinkClass::IntraNode);
    break;
  }
  return steps;
}

double sim::collectiveTime(const CollectiveSpec &spec,
                           const MachineModel &machine) {
  double total = 0;
  for (const CollectiveStep &step : planCollective(spec)) {
    bool intra = step.link == LinkClass::IntraNode;
    double latency = intra ? machine.network.intraNode.latency
                           : machine.network.interNode.latency;
    double bandwidth = intra ? machine.network.intraNode.bandwidth
                             : machine.interNodeStreamBandwidth(step.streams);
    total += latency + (step.bytes > 0 ? step.bytes / bandwidth : 0);
  }
  return total;
}

double sim::stepTimeErrorPercent(double simulated, double measured) {
  return (simulated - measured) / measured * 100.0;
}
