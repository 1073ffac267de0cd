//===- Engine.cpp - The simulator's discrete-event engine -----------------===//
//
// Setup, the event and flow machinery, asynchronous tasks and the stage
// streams of the engine declared in Engine.h.
//
//===----------------------------------------------------------------------===//

#include "Engine.h"

#include "ratrain/Model/Limits.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <queue>
#include <tuple>

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::detail;

//===----------------------------------------------------------------------===//
// Setup
//===----------------------------------------------------------------------===//

llvm::Error Engine::prepare() {
  if (options.iterations == 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "at least one iteration must be simulated");
  if (llvm::Error error = program.verify())
    return error;
  // State is kept per task and iteration: bound the product (no overflow:
  // iterations < 2^32 and the task count is bounded by memory).
  const uint64_t tasks = program.totalTasks();
  if (tasks > 0 && uint64_t(options.iterations) >
                       uint64_t(limits::kMaxSimulatedTaskRuns) / tasks)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0} iterations of {1} tasks exceed the limit of {2} "
                      "simulated task runs (simulate fewer iterations)",
                      options.iterations, tasks, limits::kMaxSimulatedTaskRuns)
            .str());
  const uint32_t numStages = static_cast<uint32_t>(program.stages.size());
  const uint32_t channels =
      static_cast<uint32_t>(std::max<int64_t>(1, machine.cluster.dmaChannels));

  levels = machine.networkLevels();
  slotsPerStage =
      FirstLevelLink + NumLevelLinks * static_cast<uint32_t>(levels.size());
  links.resize(static_cast<size_t>(numStages) * slotsPerStage);
  for (uint32_t s = 0; s < numStages; ++s) {
    links[linkIndex(s, DmaLink)].bandwidth = machine.cluster.dmaBandwidth;
    links[linkIndex(s, OffloadLink)].bandwidth =
        program.stages[s].offloadBandwidth > 0
            ? program.stages[s].offloadBandwidth
            : machine.offload.bandwidth;
    for (unsigned l = 0; l < levels.size(); ++l) {
      links[levelLink(s, l, LevelTx)].bandwidth = levels[l].link.bandwidth;
      links[levelLink(s, l, LevelRx)].bandwidth = levels[l].link.bandwidth;
      links[levelLink(s, l, GroupTx)].bandwidth = levels[l].injectionBandwidth;
      links[levelLink(s, l, GroupRx)].bandwidth = levels[l].injectionBandwidth;
    }
  }

  // Virtual clusters share their node's physical clusters: with the OS
  // balancing the ranks over the cores (Open MPI binds nothing when it
  // oversubscribes), a rank computing while the others wait gets a whole
  // physical cluster. With ddr_bandwidth_alone the node's clusters share its
  // DDR (SharedResources.cpp). The representative stage s stands for dp x
  // clusters-per-stage clusters, spread evenly over the nodes the job spans.
  if (machine.virtualClustersPerCluster > 1) {
    double k = double(machine.virtualClustersPerCluster);
    virtualPerCluster = k;
    sharedCores = double(machine.clustersPerNode) / k;
    progressShare = machine.network.progressCoreShare;
  }
  if (machine.cluster.ddrBandwidthAlone > 0 &&
      machine.cluster.ddrBandwidth > 0) {
    sharedDdr = true;
    ddrNode = double(machine.clustersPerNode) * machine.cluster.ddrBandwidth;
    ddrAlone = machine.cluster.ddrBandwidthAlone * virtualPerCluster;
    auto [together, alone] =
        machine.cluster.optimizerBandwidths(program.sixteenBitGradients);
    if (together > 0) {
      optimizerPriced = together;
      optimizerAlone = alone * virtualPerCluster;
      optimizerDemand =
          optimizerAlone * machine.cluster.ddrBandwidth / together;
    }
  }
  if (dynamicCompute()) {
    double total = double(program.totalClusters());
    double onNode = std::min(total, double(machine.clustersPerNode));
    stageWeight.assign(numStages, double(program.dataParallel) *
                                      double(program.clustersPerStage) *
                                      onNode / total);
  }

  // Send lookup for recv matching (verify() guarantees a unique match).
  std::map<std::tuple<uint32_t, uint32_t, uint64_t>, uint32_t> sends;
  for (uint32_t s = 0; s < numStages; ++s) {
    const StageProgram &sp = program.stages[s];
    for (uint32_t i = 0, e = static_cast<uint32_t>(sp.size()); i < e; ++i) {
      const Task &t = sp.getTask(i);
      if (t.kind == TaskKind::Send)
        sends[{s, t.peer, t.tag}] = i;
    }
  }

  std::map<std::tuple<int, int, int64_t, int64_t,
                      std::array<int64_t, kMaxNetworkLevels>, int, int64_t,
                      int64_t, std::array<int64_t, kMaxNetworkLevels>>,
           uint32_t>
      planIndex;
  auto needBandwidth = [&](uint32_t s, uint32_t i, double bandwidth,
                           llvm::StringRef what) -> llvm::Error {
    if (bandwidth > 0 && std::isfinite(bandwidth))
      return llvm::Error::success();
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("stage {0}, {1}: machine '{2}' has no {3} bandwidth", s,
                      program.stages[s].describeTask(i), machine.name, what)
            .str());
  };

  stages.resize(numStages);
  for (uint32_t s = 0; s < numStages; ++s)
    stages[s].matchedRecv.assign(program.stages[s].size(), kNone);
  for (uint32_t s = 0; s < numStages; ++s) {
    const StageProgram &sp = program.stages[s];
    StageState &st = stages[s];
    const size_t n = sp.size();
    st.done.assign(n * options.iterations, kPending);
    st.issued.assign(n * options.iterations, kPending);
    st.matchedSend.assign(n, kNone);
    st.plan.assign(n, kNone);
    st.stats.resize(options.iterations);
    st.dmaQueue.resize(channels);
    st.dmaBusy.assign(channels, false);
    uint32_t streams = 1;
    for (const Task &t : sp.getTasks())
      if (t.kind == TaskKind::Collective)
        streams = std::max(streams, t.channel + 1);
    st.commQueue.resize(streams);
    st.commBusy.assign(streams, false);
    for (uint32_t i = 0; i < n; ++i) {
      const Task &t = sp.getTask(i);
      switch (t.kind) {
      case TaskKind::Recv:
        st.matchedSend[i] = sends.at({t.peer, s, t.tag});
        stages[t.peer].matchedRecv[st.matchedSend[i]] = i;
        break;
      case TaskKind::Dma:
        if (t.channel >= channels)
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(),
              llvm::formatv("stage {0}, {1}: DMA channel {2}, but machine "
                            "'{3}' has {4}",
                            s, sp.describeTask(i), t.channel, machine.name,
                            channels)
                  .str());
        if (t.bytes > 0)
          if (llvm::Error e =
                  needBandwidth(s, i, machine.cluster.dmaBandwidth, "DMA"))
            return e;
        break;
      case TaskKind::Offload:
        if (t.bytes > 0 && !machine.offload.present())
          return llvm::createStringError(
              llvm::inconvertibleErrorCode(),
              llvm::formatv("stage {0}, {1}: machine '{2}' has no offload "
                            "tier",
                            s, sp.describeTask(i), machine.name)
                  .str());
        break;
      case TaskKind::Send:
        if (t.bytes > 0)
          if (llvm::Error e =
                  needBandwidth(s, i, levels[levelOf(t.link)].link.bandwidth,
                                stringifyLinkClass(t.link)))
            return e;
        break;
      case TaskKind::Collective: {
        const CollectiveSpec c = resolveLevels(t.collective, machine);
        auto key = std::make_tuple(
            static_cast<int>(c.kind), static_cast<int>(c.algorithm), c.bytes,
            c.groupSize, c.membersPerLevel,
            c.quantized() ? static_cast<int>(c.wire) : 0,
            c.quantized() ? c.elementBytes : 0, c.quantized() ? c.wireBlock : 0,
            c.concurrentGroups);
        auto [it, inserted] =
            planIndex.emplace(key, static_cast<uint32_t>(plans.size()));
        if (inserted) {
          plans.push_back(planCollective(c));
          for (const CollectiveStep &step : plans.back()) {
            if (step.level >= levels.size())
              return llvm::createStringError(
                  llvm::inconvertibleErrorCode(),
                  llvm::formatv("stage {0}, {1}: the collective spans "
                                "network level {2}, but machine '{3}' has {4} "
                                "levels",
                                s, sp.describeTask(i), step.level, machine.name,
                                levels.size())
                      .str());
            if (step.bytes > 0)
              if (llvm::Error e =
                      needBandwidth(s, i, levels[step.level].link.bandwidth,
                                    "'" + levels[step.level].name + "' level"))
                return e;
          }
        }
        st.plan[i] = it->second;
        break;
      }
      default:
        break;
      }
    }
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Event machinery
//===----------------------------------------------------------------------===//

void Engine::schedule(double time, EventType type, uint32_t id,
                      uint32_t version) {
  events.push(Event{time, nextSeq++, id, version, type});
}

void Engine::settle(Flow &flow) {
  if (flow.last < now) {
    flow.remaining -= flow.rate * (now - flow.last);
    if (flow.remaining < 0)
      flow.remaining = 0;
    flow.last = now;
  }
}

/// Gives every flow on `link` its new fair-share rate and completion event.
void Engine::rerate(uint32_t linkId) {
  for (uint32_t flowIndex : links[linkId].flows) {
    Flow &flow = flows[flowIndex];
    settle(flow);
    double rate = std::numeric_limits<double>::infinity();
    for (unsigned i = 0; i < Flow::kMaxLinks; ++i)
      if (flow.links[i] != kNone)
        rate = std::min(rate, links[flow.links[i]].bandwidth /
                                  links[flow.links[i]].weight);
    flow.rate = rate;
    ++flow.version;
    schedule(now + flow.remaining / rate, EventType::FlowDone, flowIndex,
             flow.version);
  }
}

/// A slot of `slots`: a freed one when there is one, else a new one at the
/// end. The caller initializes it.
template <typename T>
static uint32_t allocateSlot(std::vector<T> &slots,
                             std::vector<uint32_t> &freeSlots) {
  if (!freeSlots.empty()) {
    uint32_t index = freeSlots.back();
    freeSlots.pop_back();
    return index;
  }
  slots.emplace_back();
  return static_cast<uint32_t>(slots.size() - 1);
}

void Engine::startFlow(uint32_t opIndex, double bytes, uint32_t linkA,
                       uint32_t linkB) {
  FlowLinks route;
  route.add(linkA, 1);
  route.add(linkB, 1);
  startFlow(opIndex, bytes, route);
}

void Engine::startNetworkFlow(
    uint32_t opIndex, double bytes, uint32_t from, uint32_t to, unsigned level,
    const std::array<int64_t, kMaxNetworkLevels> &streams) {
  FlowLinks route;
  route.add(levelLink(from, level, LevelTx), 1);
  route.add(levelLink(to, level, LevelRx), 1);
  for (unsigned l = 0; l < level; ++l) {
    if (levels[l].injectionBandwidth <= 0)
      continue;
    double weight = static_cast<double>(std::max<int64_t>(1, streams[l]));
    route.add(levelLink(from, l, GroupTx), weight);
    route.add(levelLink(to, l, GroupRx), weight);
  }
  startFlow(opIndex, bytes, route);
}

void Engine::startFlow(uint32_t opIndex, double bytes, const FlowLinks &route) {
  if (bytes <= 0) {
    schedule(now, EventType::StepDone, opIndex);
    return;
  }
  uint32_t flowIndex = allocateSlot(flows, freeFlows);
  Flow &flow = flows[flowIndex];
  flow.remaining = bytes;
  flow.rate = 0;
  flow.last = now;
  for (unsigned i = 0; i < Flow::kMaxLinks; ++i) {
    flow.links[i] = route.links[i];
    flow.weights[i] = route.weights[i];
  }
  flow.op = opIndex;
  flow.active = true;
  flow.ddrShare = sharedDdr ? flowDdrShare(route) : 0;
  ops[opIndex].flow = flowIndex;
  for (unsigned i = 0; i < Flow::kMaxLinks; ++i) {
    if (route.links[i] == kNone)
      continue;
    Link &link = links[route.links[i]];
    link.flows.push_back(flowIndex);
    link.weight += route.weights[i];
  }
  for (unsigned i = 0; i < Flow::kMaxLinks; ++i)
    if (route.links[i] != kNone)
      rerate(route.links[i]);
  ddrLoadChanged();
}

void Engine::finishFlow(uint32_t flowIndex) {
  Flow &flow = flows[flowIndex];
  flow.active = false;
  ++flow.version;
  uint32_t opIndex = flow.op;
  for (unsigned i = 0; i < Flow::kMaxLinks; ++i) {
    if (flow.links[i] == kNone)
      continue;
    Link &link = links[flow.links[i]];
    link.flows.erase(
        std::find(link.flows.begin(), link.flows.end(), flowIndex));
    link.weight -= flow.weights[i];
    if (link.flows.empty())
      link.weight = 0; // no drift from repeated additions
  }
  for (unsigned i = 0; i < Flow::kMaxLinks; ++i)
    if (flow.links[i] != kNone)
      rerate(flow.links[i]);
  ddrLoadChanged();
  freeFlows.push_back(flowIndex);
  ops[opIndex].flow = kNone;
  stepDone(opIndex);
}

//===----------------------------------------------------------------------===//
// Asynchronous tasks
//===----------------------------------------------------------------------===//

void Engine::issueAsync(uint32_t s, const Task &task) {
  StageState &st = stages[s];
  uint32_t opIndex = allocateSlot(ops, freeOps);
  Op &op = ops[opIndex];
  op = Op();
  op.stage = s;
  op.iteration = st.iteration;
  op.task = st.pc;
  op.start = now;
  st.issued[slot(s, st.iteration, st.pc)] = now;
  switch (task.kind) {
  case TaskKind::Dma:
    if (st.dmaBusy[task.channel]) {
      st.dmaQueue[task.channel].push_back(opIndex);
    } else {
      st.dmaBusy[task.channel] = true;
      startDma(opIndex);
    }
    return;
  case TaskKind::Send: {
    addOutstanding(s, +1);
    // Rendezvous: the data waits for the receiver's recv.
    uint32_t recv = st.matchedRecv[st.pc];
    if (task.rendezvous && recv != kNone) {
      size_t posted = slot(task.peer, st.iteration, recv);
      if (std::isnan(stages[task.peer].issued[posted])) {
        rendezvousWaiting[{task.peer, posted}] = opIndex;
        return;
      }
    }
    startSend(opIndex);
    return;
  }
  case TaskKind::Offload:
    if (st.offloadBusy) {
      st.offloadQueue.push_back(opIndex);
    } else {
      st.offloadBusy = true;
      startOffload(opIndex);
    }
    return;
  case TaskKind::Collective:
    op.plan = st.plan[st.pc];
    op.numSteps = static_cast<uint32_t>(plans[op.plan].size());
    if (!task.runsIn(op.iteration)) {
      op.skipped = true;
      op.numSteps = 0;
      op.start = now;
      schedule(now, EventType::StepDone, opIndex);
      return;
    }
    addOutstanding(s, +1);
    if (double rate = machine.network.coreCopyBandwidth; rate > 0) {
      // A host rank's core copies what the collective moves (the bytes each
      // member sends in a step arrive at another) and reduces what a
      // reduction step receives into its block (two reads and a write of
      // DDR): the rank's next compute task takes that time too.
      double seconds = 0;
      double ddr = machine.cluster.ddrBandwidth;
      for (const CollectiveStep &step : plans[op.plan]) {
        seconds += step.bytes / rate;
        if (step.role == StepRole::Reduce && ddr > 0)
          seconds += 3 * step.bytes / ddr;
      }
      st.coreCopyDebt += seconds;
    }
    if (st.commBusy[task.channel]) {
      st.commQueue[task.channel].push_back(opIndex);
    } else {
      st.commBusy[task.channel] = true;
      startCollective(opIndex);
    }
    return;
  default:
    return;
  }
}

void Engine::startSend(uint32_t opIndex) {
  Op &op = ops[opIndex];
  op.start = now;
  const Task &task = program.stages[op.stage].getTask(op.task);
  schedule(now + latency(levelOf(task.link)), EventType::LatencyDone, opIndex);
}

void Engine::startCollective(uint32_t opIndex) {
  Op &op = ops[opIndex];
  op.start = now;
  if (op.numSteps == 0) {
    schedule(now, EventType::StepDone, opIndex);
    return;
  }
  schedule(now + stepDelay(plans[op.plan][0]), EventType::LatencyDone, opIndex);
}

/// Offload transfers: a latency per chunk, then the bytes over the tier link.
void Engine::startOffload(uint32_t opIndex) {
  Op &op = ops[opIndex];
  op.start = now;
  const Task &task = program.stages[op.stage].getTask(op.task);
  const OffloadTierSpec &tier = machine.offload;
  double chunks = tier.chunkBytes > 0 && task.bytes > 0
                      ? std::ceil(static_cast<double>(task.bytes) /
                                  static_cast<double>(tier.chunkBytes))
                      : 1.0;
  schedule(now + chunks * tier.latency, EventType::LatencyDone, opIndex);
}

void Engine::startDma(uint32_t opIndex) {
  Op &op = ops[opIndex];
  op.start = now;
  const Task &task = program.stages[op.stage].getTask(op.task);
  startFlow(opIndex, static_cast<double>(task.bytes),
            linkIndex(op.stage, DmaLink), kNone);
}

/// The latency of the op's current step has elapsed: move its bytes.
void Engine::startStep(uint32_t opIndex) {
  Op &op = ops[opIndex];
  const Task &task = program.stages[op.stage].getTask(op.task);
  if (task.kind == TaskKind::Offload) {
    startFlow(opIndex, static_cast<double>(task.bytes),
              linkIndex(op.stage, OffloadLink), kNone);
    return;
  }
  if (task.kind == TaskKind::Send) {
    // The symmetric replicas of a stage send together: as many per group
    // as the group holds (all of them at the node level and above).
    unsigned level = levelOf(task.link);
    std::array<int64_t, kMaxNetworkLevels> streams{1, 1, 1, 1};
    unsigned inside = machine.nodeLevels();
    for (unsigned l = 0; l < level; ++l)
      streams[l] = l + 1 >= inside ? program.stageReplicasPerNode
                                   : std::min(program.stageReplicasPerNode,
                                              machine.clustersPerGroup(l));
    startNetworkFlow(opIndex, static_cast<double>(task.bytes), op.stage,
                     task.peer, level, streams);
    return;
  }
  // In-network reduction or multicast moves the step's bytes faster.
  const CollectiveStep &step = plans[op.plan][op.step];
  startNetworkFlow(opIndex, step.bytes / inNetworkSpeedup(step, machine),
                   op.stage, op.stage, step.level, step.streams);
}

void Engine::stepDone(uint32_t opIndex) {
  Op &op = ops[opIndex];
  const Task &task = program.stages[op.stage].getTask(op.task);
  if (task.kind == TaskKind::Collective && ++op.step < op.numSteps) {
    schedule(now + stepDelay(plans[op.plan][op.step]), EventType::LatencyDone,
             opIndex);
    return;
  }
  completeOp(opIndex);
}

void Engine::completeOp(uint32_t opIndex) {
  const Op op = ops[opIndex];
  freeOps.push_back(opIndex);
  StageState &st = stages[op.stage];
  const Task &task = program.stages[op.stage].getTask(op.task);
  st.done[slot(op.stage, op.iteration, op.task)] = now;
  if ((task.kind == TaskKind::Send || task.kind == TaskKind::Collective) &&
      !op.skipped)
    addOutstanding(op.stage, -1);
  IterationStats &stats = st.stats[op.iteration];
  stats.lastAsyncDone = std::max(stats.lastAsyncDone, now);

  if (recording(op.iteration) && !op.skipped) {
    TraceInterval interval;
    interval.stage = op.stage;
    interval.task = op.task;
    interval.iteration = op.iteration;
    interval.start = op.start;
    interval.end = now;
    if (task.kind == TaskKind::Dma) {
      interval.lane = Lane::Dma;
      interval.kind = static_cast<uint8_t>(CommKind::Dma);
      interval.channel = task.channel;
    } else if (task.kind == TaskKind::Offload) {
      interval.lane = Lane::Offload;
      interval.kind = static_cast<uint8_t>(CommKind::Offload);
    } else {
      interval.lane = Lane::Network;
      interval.kind = static_cast<uint8_t>(
          task.kind == TaskKind::Send ? CommKind::P2P
                                      : getCommKind(task.collective.kind));
    }
    trace.push_back(interval);
  }

  if (task.kind == TaskKind::Dma) {
    auto &queue = st.dmaQueue[task.channel];
    if (queue.empty()) {
      st.dmaBusy[task.channel] = false;
    } else {
      uint32_t next = queue.front();
      queue.pop_front();
      startDma(next);
    }
  } else if (task.kind == TaskKind::Offload) {
    if (st.offloadQueue.empty()) {
      st.offloadBusy = false;
    } else {
      uint32_t next = st.offloadQueue.front();
      st.offloadQueue.pop_front();
      startOffload(next);
    }
  } else if (task.kind == TaskKind::Collective && !op.skipped) {
    auto &queue = st.commQueue[task.channel];
    if (queue.empty()) {
      st.commBusy[task.channel] = false;
    } else {
      uint32_t next = queue.front();
      queue.pop_front();
      startCollective(next);
    }
  }

  // Wake whoever waits for this instance: the stage itself (a wait) or, for a
  // send, the receiving stage.
  auto wakes = [&](uint32_t s) {
    const StageState &w = stages[s];
    return w.blocked && w.blockStage == op.stage &&
           w.blockIteration == op.iteration && w.blockTask == op.task;
  };
  if (wakes(op.stage))
    resume(op.stage);
  if (task.kind == TaskKind::Send && wakes(task.peer))
    resume(task.peer);
}

//===----------------------------------------------------------------------===//
// Stage streams
//===----------------------------------------------------------------------===//

void Engine::block(uint32_t s, uint32_t onStage, uint32_t onIteration,
                   uint32_t onTask, CommKind kind, bool isRecv) {
  StageState &st = stages[s];
  bool wasProgressing = st.progressing();
  st.blocked = true;
  st.blockedOnRecv = isRecv;
  st.blockStage = onStage;
  st.blockIteration = onIteration;
  st.blockTask = onTask;
  st.blockKind = kind;
  st.blockSince = now;
  progressChanged(s, wasProgressing);
}

void Engine::resume(uint32_t s) {
  StageState &st = stages[s];
  bool wasProgressing = st.progressing();
  st.blocked = false;
  progressChanged(s, wasProgressing);
  double exposedFrom = st.blockSince;
  if (st.blockedOnRecv) {
    // Waiting before the matching send was issued is pipeline bubble; only
    // the transfer itself is exposed communication.
    double issued =
        stages[st.blockStage]
            .issued[slot(st.blockStage, st.blockIteration, st.blockTask)];
    exposedFrom = std::max(exposedFrom, issued);
  }
  if (now > exposedFrom) {
    st.stats[st.iteration].exposed[static_cast<unsigned>(st.blockKind)] +=
        now - exposedFrom;
    recordStageInterval(s, Lane::Blocked, static_cast<uint8_t>(st.blockKind),
                        exposedFrom, now);
  }
  ++st.pc;
  advance(s);
}

void Engine::advance(uint32_t s) {
  StageState &st = stages[s];
  const StageProgram &sp = program.stages[s];
  const uint32_t n = static_cast<uint32_t>(sp.size());
  while (true) {
    if (st.pc == n) {
      st.stats[st.iteration].streamEnd = now;
      st.pc = 0;
      if (++st.iteration == options.iterations) {
        st.finished = true;
        return;
      }
      continue;
    }
    const Task &task = sp.getTask(st.pc);
    switch (task.kind) {
    case TaskKind::Compute: {
      if (dynamicCompute() && task.seconds > 0) {
        startSharedCompute(s, task);
        ++st.pc;
        return;
      }
      st.stats[st.iteration].busy[static_cast<unsigned>(task.computeKind)] +=
          task.seconds;
      // The collectives' core copies since the last task come first.
      double copies = task.seconds > 0 ? st.coreCopyDebt : 0;
      st.coreCopyDebt -= copies;
      st.stats[st.iteration].coreCopy += copies;
      // Every compute task is in the trace, one of no work as an instant
      // (the runtime's trace has a span for each schedule op).
      recordStageInterval(s, Lane::Compute,
                          static_cast<uint8_t>(task.computeKind), now,
                          now + std::max(0.0, task.seconds) + copies);
      if (task.seconds <= 0) {
        ++st.pc;
        continue;
      }
      ++st.pc;
      schedule(now + task.seconds + copies, EventType::ComputeDone, s);
      return;
    }
    case TaskKind::Dma:
    case TaskKind::Send:
    case TaskKind::Collective:
    case TaskKind::Offload:
      issueAsync(s, task);
      ++st.pc;
      continue;
    case TaskKind::Recv: {
      uint32_t send = st.matchedSend[st.pc];
      // Posted now: a rendezvous send that was waiting for it starts.
      size_t posted = slot(s, st.iteration, st.pc);
      if (std::isnan(st.issued[posted])) {
        st.issued[posted] = now;
        auto waiting = rendezvousWaiting.find({s, posted});
        if (waiting != rendezvousWaiting.end()) {
          startSend(waiting->second);
          rendezvousWaiting.erase(waiting);
        }
      }
      if (!std::isnan(
              stages[task.peer].done[slot(task.peer, st.iteration, send)])) {
        ++st.pc;
        continue;
      }
      block(s, task.peer, st.iteration, send, CommKind::P2P, true);
      return;
    }
    case TaskKind::Wait: {
      if (task.previousIteration && st.iteration == 0) {
        ++st.pc;
        continue;
      }
      uint32_t iteration = st.iteration - (task.previousIteration ? 1 : 0);
      if (!std::isnan(st.done[slot(s, iteration, task.waitTask)])) {
        ++st.pc;
        continue;
      }
      const Task &awaited = sp.getTask(task.waitTask);
      CommKind kind;
      switch (awaited.kind) {
      case TaskKind::Dma:
        kind = CommKind::Dma;
        break;
      case TaskKind::Send:
        kind = CommKind::P2P;
        break;
      case TaskKind::Offload:
        kind = CommKind::Offload;
        break;
      default:
        kind = getCommKind(awaited.collective.kind);
        break;
      }
      block(s, s, iteration, task.waitTask, kind, false);
      return;
    }
    case TaskKind::Alloc:
      st.memory += task.bytes;
      st.peakMemory = std::max(st.peakMemory, st.memory);
      ++st.pc;
      continue;
    case TaskKind::Free:
      st.memory -= task.bytes;
      ++st.pc;
      continue;
    }
  }
}

size_t Engine::recordStageInterval(uint32_t s, Lane lane, uint8_t kind,
                                   double start, double end) {
  const StageState &st = stages[s];
  if (!recording(st.iteration))
    return ~size_t(0);
  TraceInterval interval;
  interval.stage = s;
  interval.task = st.pc;
  interval.iteration = st.iteration;
  interval.lane = lane;
  interval.kind = kind;
  interval.start = start;
  interval.end = end;
  trace.push_back(interval);
  return trace.size() - 1;
}

std::string Engine::describeBlock(uint32_t s) const {
  const StageState &st = stages[s];
  const StageProgram &sp = program.stages[s];
  std::string text = llvm::formatv("stage {0}{1}, {2} in iteration {3}", s,
                                   sp.name.empty() ? "" : " '" + sp.name + "'",
                                   sp.describeTask(st.pc), st.iteration + 1)
                         .str();
  const StageProgram &target = program.stages[st.blockStage];
  const StageState &ts = stages[st.blockStage];
  bool issued = !std::isnan(
      ts.issued[slot(st.blockStage, st.blockIteration, st.blockTask)]);
  text += llvm::formatv(" waits for stage {0} {1} of iteration {2}, which "
                        "{3}",
                        st.blockStage, target.describeTask(st.blockTask),
                        st.blockIteration + 1,
                        issued ? "never completes" : "is never issued")
              .str();
  return text;
}

llvm::Error Engine::run() {
  if (llvm::Error error = prepare())
    return error;
  for (uint32_t s = 0; s < stages.size(); ++s)
    advance(s);
  while (!events.empty()) {
    Event event = events.top();
    events.pop();
    now = event.time;
    ++processed;
    switch (event.type) {
    case EventType::ComputeDone:
      if (dynamicCompute())
        finishSharedCompute(event.id, event.version);
      else
        advance(event.id);
      break;
    case EventType::LatencyDone:
      startStep(event.id);
      break;
    case EventType::FlowDone: {
      const Flow &flow = flows[event.id];
      if (flow.active && flow.version == event.version)
        finishFlow(event.id);
      break;
    }
    case EventType::StepDone:
      stepDone(event.id);
      break;
    }
  }
  std::string deadlock;
  for (uint32_t s = 0; s < stages.size(); ++s) {
    if (stages[s].finished)
      continue;
    if (!deadlock.empty())
      deadlock += "; ";
    deadlock += describeBlock(s);
  }
  if (!deadlock.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "deadlock at t=" + formatNumber(now) +
                                       " s: " + deadlock);
  return llvm::Error::success();
}
