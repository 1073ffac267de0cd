//===- Collectives.cpp - Decomposition of collectives into link steps -----===//

#include "ratrain/Simulator/Simulator.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace ratrain;
using namespace ratrain::sim;

/// ceil(log2 k) for k >= 1.
static int64_t ceilLog2(int64_t k) {
  int64_t levels = 0;
  while ((int64_t(1) << levels) < k)
    ++levels;
  return levels;
}

/// Where a step runs: its level and the injection weights of the levels
/// below it.
struct StepPlace {
  unsigned level = 0;
  std::array<int64_t, kMaxNetworkLevels> streams{1, 1, 1, 1};
};

static void appendSteps(std::vector<CollectiveStep> &steps, int64_t count,
                        double bytes, const StepPlace &place, StepRole role) {
  for (int64_t i = 0; i < count; ++i)
    steps.push_back({bytes, place.level, place.streams, 0, role});
}

/// Ring over k members of an n-byte buffer: reduce-scatter steps, then
/// all-gather steps.
static void appendRing(std::vector<CollectiveStep> &steps, CollectiveKind kind,
                       double n, int64_t k, const StepPlace &place) {
  if (k <= 1)
    return;
  double block = n / static_cast<double>(k);
  if (kind != CollectiveKind::AllGather)
    appendSteps(steps, k - 1, block, place, StepRole::Reduce);
  if (kind != CollectiveKind::ReduceScatter)
    appendSteps(steps, k - 1, block, place, StepRole::Multicast);
}

/// Binomial scatter (or, reversed, gather) of an n-byte buffer over k members
/// in `levels` steps: each level forwards half of what the previous one did,
/// scaled so that (k-1)/k * n move in total (exactly n/2, n/4, ... when k is a
/// power of two).
static void appendScatter(std::vector<CollectiveStep> &steps, double n,
                          int64_t k, int64_t levels, const StepPlace &place,
                          bool gather) {
  if (levels == 0)
    return;
  double total = (static_cast<double>(k) - 1) / static_cast<double>(k) * n;
  double halves = 1 - std::ldexp(1.0, static_cast<int>(-levels));
  std::vector<CollectiveStep> scatter;
  for (int64_t j = 1; j <= levels; ++j)
    scatter.push_back({std::ldexp(total / halves, static_cast<int>(-j)),
                       place.level, place.streams});
  if (gather)
    steps.insert(steps.end(), scatter.rbegin(), scatter.rend());
  else
    steps.insert(steps.end(), scatter.begin(), scatter.end());
}

/// Binomial-tree algorithms (whole messages through a root).
static void appendTree(std::vector<CollectiveStep> &steps, CollectiveKind kind,
                       double n, int64_t k, const StepPlace &place) {
  int64_t levels = ceilLog2(k);
  switch (kind) {
  case CollectiveKind::AllReduce:
    // Reduce to the root, then broadcast from it.
    appendSteps(steps, levels, n, place, StepRole::Reduce);
    appendSteps(steps, levels, n, place, StepRole::Multicast);
    return;
  case CollectiveKind::ReduceScatter:
    // Reduce to the root, then scatter: each level halves what is forwarded.
    appendSteps(steps, levels, n, place, StepRole::Reduce);
    appendScatter(steps, n, k, levels, place, /*gather=*/false);
    return;
  case CollectiveKind::AllGather:
    // Gather to the root (each level doubles), then broadcast.
    appendScatter(steps, n, k, levels, place, /*gather=*/true);
    appendSteps(steps, levels, n, place, StepRole::Multicast);
    return;
  }
}

/// The spec's members per level: membersPerLevel, or the two-level
/// shorthand (membersPerNode at level 0, the nodes at level 1).
static std::array<int64_t, kMaxNetworkLevels>
membersOf(const CollectiveSpec &spec) {
  if (spec.hasLevels())
    return spec.membersPerLevel;
  int64_t c = std::max<int64_t>(1, spec.membersPerNode);
  return {c, std::max<int64_t>(1, spec.groupSize / c), 1, 1};
}

double sim::wirePayloadBytes(WireFormat wire, int64_t elements,
                             int64_t elementBytes, int64_t block) {
  const int64_t n = std::max<int64_t>(0, elements);
  if (wire == WireFormat::Native)
    return static_cast<double>(n) * static_cast<double>(elementBytes);
  const int64_t b = std::max<int64_t>(1, block);
  const int64_t codes = wire == WireFormat::Int8 ? n : (n + 1) / 2;
  return static_cast<double>((n + b - 1) / b * 4 + codes);
}

double sim::codecBandwidth(const MachineModel &machine) {
  double efficiency = machine.cluster.efficiency.memoryBound > 0
                          ? machine.cluster.efficiency.memoryBound
                          : 1.0;
  return machine.cluster.ddrBandwidth * efficiency;
}

/// A quantized all-gather (qwZ) or reduce-scatter (qgZ) over `sizes[i]`
/// members at `places[i]` (innermost first), as the runtime runs it.
static void appendQuantized(std::vector<CollectiveStep> &steps,
                            const CollectiveSpec &spec,
                            llvm::ArrayRef<int64_t> sizes,
                            llvm::ArrayRef<StepPlace> places) {
  const int64_t k = spec.groupSize;
  const int64_t eb = std::max<int64_t>(1, spec.elementBytes);
  const int64_t count = spec.bytes / eb / k; // elements of a member's shard
  auto payload = [&](int64_t elements) {
    return wirePayloadBytes(spec.wire, elements, eb, spec.wireBlock);
  };
  const size_t phases = sizes.size();
  if (spec.kind == CollectiveKind::AllGather) {
    // Quantize the shard once, decode the k payloads at the end (charged
    // before the first step).
    double codec = static_cast<double>(count * eb) + payload(count) +
                   static_cast<double>(k) *
                       (payload(count) + static_cast<double>(count * eb));
    int64_t gathered = 1;
    for (size_t i = phases; i-- > 0;) {
      for (int64_t s = 0; s + 1 < sizes[i]; ++s) {
        steps.push_back({static_cast<double>(gathered) * payload(count),
                         places[i].level, places[i].streams, codec});
        codec = 0;
      }
      gathered *= sizes[i];
    }
    return;
  }
  for (size_t i = 0; i < phases; ++i) {
    int64_t outer = 1;
    for (size_t j = i + 1; j < phases; ++j)
      outer *= sizes[j];
    const int64_t chunk = count * outer; // elements per member of the phase
    // Quantize the phase's input (the caller's elements, then fp32 partial
    // sums) into k_i payloads; decode and add the k_i received ones in fp32.
    const double in = static_cast<double>(chunk * sizes[i]) *
                      static_cast<double>(i == 0 ? eb : 4);
    double codec =
        in + 2 * static_cast<double>(sizes[i]) * payload(chunk) +
        static_cast<double>(sizes[i]) * 8.0 * static_cast<double>(chunk);
    for (int64_t s = 0; s + 1 < sizes[i]; ++s) {
      steps.push_back(
          {payload(chunk), places[i].level, places[i].streams, codec});
      codec = 0;
    }
  }
}

/// The steps of `spec` without its concurrent copies.
static std::vector<CollectiveStep> planAlone(const CollectiveSpec &spec);

std::vector<CollectiveStep> sim::planCollective(const CollectiveSpec &spec) {
  std::vector<CollectiveStep> steps = planAlone(spec);
  for (CollectiveStep &step : steps)
    for (unsigned l = 0; l < step.level; ++l)
      step.streams[l] *= std::max<int64_t>(1, spec.concurrentGroups[l]);
  return steps;
}

static std::vector<CollectiveStep> planAlone(const CollectiveSpec &spec) {
  std::vector<CollectiveStep> steps;
  const int64_t k = spec.groupSize;
  if (k <= 1)
    return steps;
  const double n = static_cast<double>(spec.bytes);
  const std::array<int64_t, kMaxNetworkLevels> members = membersOf(spec);
  // The levels the group spans (more than one member), innermost first.
  llvm::SmallVector<unsigned, kMaxNetworkLevels> spanned;
  for (unsigned l = 0; l < kMaxNetworkLevels; ++l)
    if (members[l] > 1)
      spanned.push_back(l);
  if (spanned.empty()) // An inconsistent spec: k > 1 on no level.
    spanned.push_back(0);
  StepPlace outer;
  outer.level = spanned.back();
  // Every member takes part in every phase: at level L, the members of one
  // level-l group (l < L) all inject at once.
  auto place = [&](unsigned level) {
    StepPlace p;
    p.level = level;
    int64_t inside = 1;
    for (unsigned l = 0; l < level; ++l) {
      inside *= members[l];
      p.streams[l] = inside;
    }
    return p;
  };
  if (spec.quantized()) {
    llvm::SmallVector<int64_t, kMaxNetworkLevels> sizes;
    llvm::SmallVector<StepPlace, kMaxNetworkLevels> places;
    if (spec.algorithm == CollectiveAlgorithm::Hierarchical &&
        spanned.size() > 1) {
      for (unsigned level : spanned) {
        sizes.push_back(members[level]);
        places.push_back(place(level));
      }
    } else {
      // One phase over the whole group (an all-to-all or all-gather in
      // which every member sends) at its outermost level.
      sizes.push_back(k);
      places.push_back(place(spanned.back()));
    }
    appendQuantized(steps, spec, sizes, places);
    return steps;
  }
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
  if (spanned.size() == 1) {
    // One level only: a ring inside it.
    appendRing(steps, spec.kind, n, k, outer);
    return steps;
  }
  // shards[i]: the bytes the i-th spanned level's phase works on.
  llvm::SmallVector<double, kMaxNetworkLevels> shards;
  double shard = n;
  for (unsigned level : spanned) {
    shards.push_back(shard);
    shard /= static_cast<double>(members[level]);
  }
  const size_t last = spanned.size() - 1;
  switch (spec.kind) {
  case CollectiveKind::AllReduce:
    for (size_t i = 0; i < last; ++i)
      appendRing(steps, CollectiveKind::ReduceScatter, shards[i],
                 members[spanned[i]], place(spanned[i]));
    appendRing(steps, CollectiveKind::AllReduce, shards[last],
               members[spanned[last]], place(spanned[last]));
    for (size_t i = last; i-- > 0;)
      appendRing(steps, CollectiveKind::AllGather, shards[i],
                 members[spanned[i]], place(spanned[i]));
    break;
  case CollectiveKind::ReduceScatter:
    for (size_t i = 0; i <= last; ++i)
      appendRing(steps, CollectiveKind::ReduceScatter, shards[i],
                 members[spanned[i]], place(spanned[i]));
    break;
  case CollectiveKind::AllGather:
    for (size_t i = last + 1; i-- > 0;)
      appendRing(steps, CollectiveKind::AllGather, shards[i],
                 members[spanned[i]], place(spanned[i]));
    break;
  }
  return steps;
}

std::array<int64_t, kMaxNetworkLevels>
sim::groupLevels(const MachineModel &machine, int64_t groupSize,
                 int64_t stride) {
  const unsigned outermost =
      static_cast<unsigned>(machine.networkLevels().size()) - 1;
  const int64_t k = std::max<int64_t>(1, groupSize);
  stride = std::max<int64_t>(1, stride);
  std::array<int64_t, kMaxNetworkLevels> members{1, 1, 1, 1};
  // shared: members in one level-l group (members `stride` clusters apart,
  // groups of k * stride clusters placed one after the other from cluster
  // 0); members[l] = shared(l) / shared(l - 1).
  const int64_t span = k * stride;
  int64_t below = 1;
  for (unsigned l = 0; l <= outermost; ++l) {
    int64_t group = l == outermost ? 0 : machine.clustersPerGroup(l);
    int64_t shared = k;
    // A level's groups must hold whole groups, or whole groups be made of
    // them; otherwise some groups straddle the level's boundaries.
    bool regular = l == outermost || group % span == 0 || span % group == 0;
    if (regular && l < outermost) {
      if (stride >= group)
        regular = stride % group == 0, shared = 1;
      else if (group % stride != 0)
        regular = false;
      else
        shared = std::min(k, group / stride);
    }
    if (!regular || shared % below != 0 || k % shared != 0) {
      // Uneven from here on: the rest at the first level whose groups hold
      // whole groups, else the outermost.
      unsigned level = outermost;
      for (unsigned j = l; j < outermost; ++j)
        if (machine.clustersPerGroup(j) % span == 0) {
          level = j;
          break;
        }
      members[level] = k / below;
      return members;
    }
    members[l] = shared / below;
    below = shared;
  }
  return members;
}

CollectiveSpec sim::resolveLevels(const CollectiveSpec &spec,
                                  const MachineModel &machine) {
  if (spec.hasLevels())
    return spec;
  CollectiveSpec resolved = spec;
  resolved.membersPerLevel = {1, 1, 1, 1};
  unsigned inside = machine.nodeLevels();
  int64_t c = std::max<int64_t>(1, spec.membersPerNode);
  int64_t nodes = std::max<int64_t>(1, spec.groupSize / c);
  if (inside == 0) {
    resolved.membersPerLevel[0] = c * nodes;
    return resolved;
  }
  resolved.membersPerLevel[inside - 1] = c;
  resolved.membersPerLevel[inside] *= nodes;
  return resolved;
}

double sim::stepBandwidth(const CollectiveStep &step,
                          llvm::ArrayRef<NetworkLevel> levels) {
  double bandwidth = levels[step.level].link.bandwidth;
  for (unsigned l = 0; l < step.level; ++l)
    if (levels[l].injectionBandwidth > 0)
      bandwidth = std::min(bandwidth, levels[l].injectionBandwidth /
                                          static_cast<double>(std::max<int64_t>(
                                              1, step.streams[l])));
  return bandwidth;
}

double sim::inNetworkSpeedup(const CollectiveStep &step,
                             const MachineModel &machine) {
  if (step.role == StepRole::Plain)
    return 1;
  return machine.network.inNetwork.speedup(int64_t(step.level),
                                           step.role == StepRole::Reduce);
}

double sim::collectiveTime(const CollectiveSpec &spec,
                           const MachineModel &machine) {
  std::vector<NetworkLevel> levels = machine.networkLevels();
  double total = 0;
  for (const CollectiveStep &step :
       planCollective(resolveLevels(spec, machine))) {
    if (step.level >= levels.size())
      return std::numeric_limits<double>::infinity();
    total += (levels[step.level].link.latency +
              (step.bytes > 0 ? step.bytes / stepBandwidth(step, levels) : 0)) /
                 inNetworkSpeedup(step, machine) +
             (step.codecBytes > 0 && codecBandwidth(machine) > 0
                  ? step.codecBytes / codecBandwidth(machine)
                  : 0);
  }
  return total;
}

double sim::stepTimeErrorPercent(double simulated, double measured) {
  return (simulated - measured) / measured * 100.0;
}
