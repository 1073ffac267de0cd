//===- SharedResources.cpp - Compute rates on a node's shared resources ---===//
//
// The engine's compute tasks on resources a node's clusters share
// (docs/simulator.md, "Shared cores" and "Shared DDR"):
//  - cores: on a machine of virtual clusters (virtual_clusters_per_cluster K
//    > 1) the computing virtual clusters of a node, and the progress threads
//    that poll, share its physical clusters; a task's work is seconds at the
//    split rate, and it runs at K x its share of a physical cluster (a whole
//    one at most);
//  - DDR: with cluster.ddr_bandwidth_alone the memory-bound tasks (updates
//    and view casts, priced at ddr_bandwidth, the cluster's share while every
//    cluster of the node streams) share the node's DDR, clusters_per_node x
//    ddr_bandwidth, with each other and with the DMA, offload and message
//    flows that move through it. Each physical cluster's stream asks for
//    ddr_bandwidth_alone and each flow for its rate; when the asks exceed
//    the node's DDR the streams get their ask scaled by DDR / asks (the
//    flows keep their link rates: the DMA engines and the NICs are not
//    slowed). An update on a machine that gives the optimizer's own rates
//    (optimizer_bandwidth, _alone) is priced at optimizer_bandwidth, asks
//    optimizer_bandwidth_alone x ddr_bandwidth / optimizer_bandwidth of the
//    DDR (its stream in the triad's bytes) and runs at
//    optimizer_bandwidth_alone scaled the same way.
// A task's rate is recomputed whenever a compute task, a progress thread or
// (for the memory-bound ones) a DDR flow starts or ends.
//
//===----------------------------------------------------------------------===//

#include "Engine.h"

#include <algorithm>

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::detail;

void Engine::startSharedCompute(uint32_t s, const Task &task) {
  StageState &st = stages[s];
  settleCompute();
  st.computing = true;
  // Work here is in seconds at the split rate (a virtual cluster alone on
  // its core runs virtualPerCluster times faster); the copies are seconds of
  // a whole core.
  st.computeCoreCopy = st.coreCopyDebt * virtualPerCluster;
  st.coreCopyDebt = 0;
  st.computeRemaining = task.seconds + st.computeCoreCopy;
  st.computeTotal = st.computeRemaining;
  st.computeLast = now;
  st.computeStart = now;
  st.computeKind = static_cast<uint8_t>(task.computeKind);
  st.computeMemoryBound = task.computeKind == ComputeKind::Update ||
                          task.computeKind == ComputeKind::ViewCast;
  st.computeOptimizer =
      st.computeMemoryBound && task.optimizerStream && optimizerPriced > 0;
  // The end is set when the task ends.
  st.computeTrace =
      recordStageInterval(s, Lane::Compute, st.computeKind, now, now);
  rerateCompute();
}

void Engine::finishSharedCompute(uint32_t s, uint32_t version) {
  StageState &st = stages[s];
  if (!st.computing || version != st.computeVersion)
    return; // a completion the last rerate replaced
  settleCompute();
  st.computing = false;
  // The part of the task that was the collectives' core copies.
  double elapsed = now - st.computeStart;
  double copies =
      st.computeTotal > 0 ? elapsed * st.computeCoreCopy / st.computeTotal : 0;
  st.stats[st.iteration].busy[st.computeKind] += elapsed - copies;
  st.stats[st.iteration].coreCopy += copies;
  if (st.computeTrace != ~size_t(0))
    trace[st.computeTrace].end = now;
  rerateCompute();
  advance(s);
}

void Engine::settleCompute() {
  for (StageState &st : stages) {
    if (!st.computing)
      continue;
    st.computeRemaining = std::max(
        0.0, st.computeRemaining - st.computeRate * (now - st.computeLast));
    st.computeLast = now;
  }
}

void Engine::addOutstanding(uint32_t s, int delta) {
  bool wasProgressing = stages[s].progressing();
  stages[s].commOutstanding += delta;
  progressChanged(s, wasProgressing);
}

void Engine::progressChanged(uint32_t s, bool wasProgressing) {
  StageState &st = stages[s];
  if (progressShare <= 0 || sharedCores <= 0 ||
      st.progressing() == wasProgressing)
    return;
  if (wasProgressing) {
    // (A send may complete after the stage's last iteration ended.)
    uint32_t iteration = std::min<uint32_t>(
        st.iteration, static_cast<uint32_t>(st.stats.size()) - 1);
    st.stats[iteration].progressCpu += progressShare * (now - st.progressSince);
  } else {
    st.progressSince = now;
  }
  settleCompute();
  rerateCompute();
}

double Engine::flowDdrShare(const FlowLinks &route) const {
  if (route.count == 0)
    return 0;
  const uint32_t first = route.links[0];
  const uint32_t stage = first / slotsPerStage;
  const uint32_t slotIndex = first % slotsPerStage;
  // A DMA or an offload moves its bytes through the cluster's DDR once (the
  // other side is GSM/AM or the tier); a message inside the node copies out
  // of one cluster's DDR into another's, both in the node's memory; a
  // message between nodes reads this node's DDR (the other node's write is
  // that node's).
  double bytesPerByte = 1;
  if (slotIndex >= FirstLevelLink) {
    unsigned level = (slotIndex - FirstLevelLink) / NumLevelLinks;
    if (level < machine.nodeLevels())
      bytesPerByte = 2;
  }
  return bytesPerByte * stageWeight[stage];
}

double Engine::ddrFlowLoad() const {
  double load = 0;
  for (const Flow &flow : flows)
    if (flow.active)
      load += flow.rate * flow.ddrShare;
  return load;
}

void Engine::ddrLoadChanged() {
  if (!sharedDdr)
    return;
  for (const StageState &st : stages)
    if (st.computing && st.computeMemoryBound) {
      settleCompute();
      rerateCompute();
      return;
    }
}

void Engine::rerateCompute() {
  double active = 0, memoryActive = 0, optimizerActive = 0;
  for (uint32_t s = 0; s < stages.size(); ++s) {
    if (stages[s].computing) {
      active += stageWeight[s];
      if (stages[s].computeOptimizer)
        optimizerActive += stageWeight[s];
      else if (stages[s].computeMemoryBound)
        memoryActive += stageWeight[s];
    }
    // A progress thread that polls takes its share of the cores too.
    if (stages[s].progressing())
      active += progressShare * stageWeight[s];
  }
  if (active <= 0)
    return;
  // Each computing virtual cluster gets an equal share of the cores, at
  // most one whole core: its rate is K x that share of its split rate.
  double coreShare =
      sharedCores > 0 ? std::min(1.0, sharedCores / active) : 1.0;
  double rate = virtualPerCluster * coreShare;
  // A memory-bound task streams for its share of a physical cluster; the
  // node's streams (in physical clusters) and flows share its DDR. Its rate
  // is what its stream gets over the bandwidth it was priced at. An update
  // with the optimizer's own rates asks optimizerDemand (the triad's bytes)
  // and gets optimizerAlone scaled as the others are.
  double memoryRate = rate, optimizerRate = rate;
  if (sharedDdr && memoryActive + optimizerActive > 0) {
    double asked =
        ddrFlowLoad() + coreShare * (memoryActive * ddrAlone +
                                     optimizerActive * optimizerDemand);
    double granted = std::min(1.0, ddrNode / asked);
    memoryRate = coreShare * ddrAlone * granted / machine.cluster.ddrBandwidth;
    if (optimizerPriced > 0)
      optimizerRate = coreShare * optimizerAlone * granted / optimizerPriced;
  }
  for (uint32_t s = 0; s < stages.size(); ++s) {
    StageState &st = stages[s];
    if (!st.computing)
      continue;
    st.computeRate = st.computeOptimizer     ? optimizerRate
                     : st.computeMemoryBound ? memoryRate
                                             : rate;
    schedule(now + st.computeRemaining / st.computeRate, EventType::ComputeDone,
             s, ++st.computeVersion);
  }
}
