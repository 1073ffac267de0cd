//===- Simulator.cpp - The discrete-event engine
//---------------------------===//
//
// State: per stage a program counter, the current iteration, and the
// completion time of every asynchronous task instance (iteration x task).
// Events (a binary heap ordered by time, then by insertion order, so runs are
// deterministic): a compute task ends, a transfer's latency elapses, a flow
// finishes. Flows carry bytes over one or two links at the rate
// min over their links of (link bandwidth / weight of the flows on the link)
// (weight 1 on a cluster's own links; on a node's shared injection link a flow
// weighs as many as the symmetric clusters of the node that send the same
// way at the same time); whenever a
// flow starts or ends, the flows sharing its links are settled (bytes moved so
// far subtracted) and get new rates and completion events. Stale completion
// events are recognised by a version number.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Simulator/Simulator.h"
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

namespace {

constexpr double kPending = std::numeric_limits<double>::quiet_NaN();
constexpr uint32_t kNone = ~0u;

/// Links of one stage's representative cluster.
enum LinkSlot : uint32_t {
  DmaLink = 0,
  IntraTx,
  IntraRx,
  InterTx,
  InterRx,
  NodeTx, ///< The node's injection into the inter-node network (shared).
  NodeRx,
  OffloadLink, ///< DDR <-> offload tier, reads and writes.
  NumLinkSlots
};

struct Link {
  double bandwidth = 0;
  double weight = 0; ///< Sum of the weights of the flows on the link.
  llvm::SmallVector<uint32_t, 4> flows;
};

/// The links a flow crosses, with its weight on each.
struct FlowLinks {
  uint32_t links[4] = {kNone, kNone, kNone, kNone};
  double weights[4] = {1, 1, 1, 1};
  unsigned count = 0;
  void add(uint32_t link, double weight) {
    if (link == kNone)
      return;
    links[count] = link;
    weights[count] = weight;
    ++count;
  }
};

struct Flow {
  double remaining = 0;
  double rate = 0;
  double last = 0;
  static constexpr unsigned kMaxLinks = 4;
  uint32_t links[kMaxLinks] = {kNone, kNone, kNone, kNone};
  double weights[kMaxLinks] = {1, 1, 1, 1};
  uint32_t version = 0;
  uint32_t op = kNone;
  bool active = false;
};

/// An asynchronous task instance in flight.
struct Op {
  uint32_t stage = 0;
  uint32_t iteration = 0;
  uint32_t task = 0;
  uint32_t plan = kNone; ///< Collectives: index into the plan table.
  uint32_t step = 0;
  uint32_t numSteps = 1;
  uint32_t flow = kNone;
  double start = 0; ///< When the first byte could move (after any queueing).
};

enum class EventType : uint8_t { ComputeDone, LatencyDone, FlowDone, StepDone };

struct Event {
  double time;
  uint64_t seq;
  uint32_t id;
  uint32_t version;
  EventType type;
};

struct EventLater {
  bool operator()(const Event &a, const Event &b) const {
    if (a.time != b.time)
      return a.time > b.time;
    return a.seq > b.seq;
  }
};

struct IterationStats {
  std::array<double, kNumComputeKinds> busy{};
  std::array<double, kNumCommKinds> exposed{};
  double streamEnd = 0;
  double lastAsyncDone = 0;
};

struct StageState {
  uint32_t pc = 0;
  uint32_t iteration = 0;
  bool finished = false;
  // Blocking state.
  bool blocked = false;
  bool blockedOnRecv = false;
  uint32_t blockStage = 0, blockIteration = 0, blockTask = 0;
  CommKind blockKind = CommKind::P2P;
  double blockSince = 0;
  // Per (iteration, task): completion and issue time of async tasks.
  std::vector<double> done;
  std::vector<double> issued;
  /// Recv task -> index of the matching send in the peer stage.
  std::vector<uint32_t> matchedSend;
  /// Collective task -> plan index.
  std::vector<uint32_t> plan;
  std::vector<IterationStats> stats;
  int64_t memory = 0;
  int64_t peakMemory = 0;
  std::vector<std::deque<uint32_t>> dmaQueue;
  std::vector<bool> dmaBusy;
  /// Collectives queued on each communication stream, and whether one runs.
  std::vector<std::deque<uint32_t>> commQueue;
  std::vector<bool> commBusy;
  /// Offload-tier transfers queued on the cluster's offload stream.
  std::deque<uint32_t> offloadQueue;
  bool offloadBusy = false;
};

class Engine {
public:
  Engine(const SimProgram &program, const MachineModel &machine,
         const SimOptions &options)
      : program(program), machine(machine), options(options) {}

  llvm::Error run();
  SimReport makeReport() const;

private:
  llvm::Error prepare();
  void advance(uint32_t stage);
  void block(uint32_t stage, uint32_t onStage, uint32_t onIteration,
             uint32_t onTask, CommKind kind, bool isRecv);
  void resume(uint32_t stage);
  void issueAsync(uint32_t stage, const Task &task);
  void startDma(uint32_t opIndex);
  void startCollective(uint32_t opIndex);
  void startOffload(uint32_t opIndex);
  void startStep(uint32_t opIndex);
  void startFlow(uint32_t opIndex, double bytes, uint32_t linkA,
                 uint32_t linkB);
  void startFlow(uint32_t opIndex, double bytes, const FlowLinks &route);
  /// A transfer over the network from `from`'s cluster to `to`'s; inter-node
  /// transfers also cross both nodes' injection links with weight `streams`.
  void startNetworkFlow(uint32_t opIndex, double bytes, uint32_t from,
                        uint32_t to, LinkClass cls, int64_t streams);
  void finishFlow(uint32_t flowIndex);
  void stepDone(uint32_t opIndex);
  void completeOp(uint32_t opIndex);
  void rerate(uint32_t link);
  void settle(Flow &flow);
  void schedule(double time, EventType type, uint32_t id, uint32_t version = 0);
  uint32_t linkIndex(uint32_t stage, LinkSlot slot) const {
    return stage * NumLinkSlots + slot;
  }
  uint32_t networkLink(uint32_t stage, LinkClass cls, bool rx) const {
    return linkIndex(stage, cls == LinkClass::IntraNode
                                ? (rx ? IntraRx : IntraTx)
                                : (rx ? InterRx : InterTx));
  }
  double latency(LinkClass cls) const {
    return cls == LinkClass::IntraNode ? machine.network.intraNode.latency
                                       : machine.network.interNode.latency;
  }
  bool recording(uint32_t iteration) const {
    return options.recordTrace &&
           (options.traceIterations == 0 ||
            iteration + options.traceIterations >= options.iterations);
  }
  size_t slot(uint32_t stage, uint32_t iteration, uint32_t task) const {
    return static_cast<size_t>(iteration) * program.stages[stage].size() + task;
  }
  std::string describeBlock(uint32_t stage) const;

  const SimProgram &program;
  const MachineModel &machine;
  const SimOptions &options;

  std::vector<StageState> stages;
  std::vector<Link> links;
  std::vector<Flow> flows;
  std::vector<uint32_t> freeFlows;
  std::vector<Op> ops;
  std::vector<uint32_t> freeOps;
  std::vector<std::vector<CollectiveStep>> plans;
  std::priority_queue<Event, std::vector<Event>, EventLater> events;
  uint64_t nextSeq = 0;
  uint64_t processed = 0;
  double now = 0;
  std::vector<TraceInterval> trace;
};

} // namespace

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

  links.resize(static_cast<size_t>(numStages) * NumLinkSlots);
  for (uint32_t s = 0; s < numStages; ++s) {
    links[linkIndex(s, DmaLink)].bandwidth = machine.cluster.dmaBandwidth;
    links[linkIndex(s, IntraTx)].bandwidth =
        machine.network.intraNode.bandwidth;
    links[linkIndex(s, IntraRx)].bandwidth =
        machine.network.intraNode.bandwidth;
    links[linkIndex(s, InterTx)].bandwidth =
        machine.network.interNode.bandwidth;
    links[linkIndex(s, InterRx)].bandwidth =
        machine.network.interNode.bandwidth;
    links[linkIndex(s, NodeTx)].bandwidth =
        machine.network.nodeInjectionBandwidth;
    links[linkIndex(s, NodeRx)].bandwidth =
        machine.network.nodeInjectionBandwidth;
    links[linkIndex(s, OffloadLink)].bandwidth = machine.offload.bandwidth;
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

  std::map<std::tuple<int, int, int64_t, int64_t, int64_t>, uint32_t> planIndex;
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
                  needBandwidth(s, i,
                                t.link == LinkClass::IntraNode
                                    ? machine.network.intraNode.bandwidth
                                    : machine.network.interNode.bandwidth,
                                stringifyLinkClass(t.link)))
            return e;
        break;
      case TaskKind::Collective: {
        const CollectiveSpec &c = t.collective;
        auto key = std::make_tuple(static_cast<int>(c.kind),
                                   static_cast<int>(c.algorithm), c.bytes,
                                   c.groupSize, c.membersPerNode);
        auto [it, inserted] =
            planIndex.emplace(key, static_cast<uint32_t>(plans.size()));
        if (inserted) {
          plans.push_back(planCollective(c));
          for (const CollectiveStep &step : plans.back())
            if (step.bytes > 0)
              if (llvm::Error e =
                      needBandwidth(s, i,
                                    step.link == LinkClass::IntraNode
                                        ? machine.network.intraNode.bandwidth
                                        : machine.network.interNode.bandwidth,
                                    stringifyLinkClass(step.link)))
                return e;
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

void Engine::startNetworkFlow(uint32_t opIndex, double bytes, uint32_t from,
                              uint32_t to, LinkClass cls, int64_t streams) {
  FlowLinks route;
  route.add(networkLink(from, cls, /*rx=*/false), 1);
  route.add(networkLink(to, cls, /*rx=*/true), 1);
  if (cls == LinkClass::InterNode &&
      machine.network.nodeInjectionBandwidth > 0) {
    double weight = static_cast<double>(std::max<int64_t>(1, streams));
    route.add(linkIndex(from, NodeTx), weight);
    route.add(linkIndex(to, NodeRx), weight);
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
  case TaskKind::Send:
    schedule(now + latency(task.link), EventType::LatencyDone, opIndex);
    return;
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

void Engine::startCollective(uint32_t opIndex) {
  Op &op = ops[opIndex];
  op.start = now;
  if (op.numSteps == 0) {
    schedule(now, EventType::StepDone, opIndex);
    return;
  }
  schedule(now + latency(plans[op.plan][0].link), EventType::LatencyDone,
           opIndex);
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
    startNetworkFlow(opIndex, static_cast<double>(task.bytes), op.stage,
                     task.peer, task.link, program.stageReplicasPerNode);
    return;
  }
  const CollectiveStep &step = plans[op.plan][op.step];
  startNetworkFlow(opIndex, step.bytes, op.stage, op.stage, step.link,
                   step.streams);
}

void Engine::stepDone(uint32_t opIndex) {
  Op &op = ops[opIndex];
  const Task &task = program.stages[op.stage].getTask(op.task);
  if (task.kind == TaskKind::Collective && ++op.step < op.numSteps) {
    schedule(now + latency(plans[op.plan][op.step].link),
             EventType::LatencyDone, opIndex);
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
  IterationStats &stats = st.stats[op.iteration];
  stats.lastAsyncDone = std::max(stats.lastAsyncDone, now);

  if (recording(op.iteration)) {
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
  } else if (task.kind == TaskKind::Collective) {
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
  st.blocked = true;
  st.blockedOnRecv = isRecv;
  st.blockStage = onStage;
  st.blockIteration = onIteration;
  st.blockTask = onTask;
  st.blockKind = kind;
  st.blockSince = now;
}

void Engine::resume(uint32_t s) {
  StageState &st = stages[s];
  st.blocked = false;
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
    if (recording(st.iteration)) {
      TraceInterval interval;
      interval.stage = s;
      interval.task = st.pc;
      interval.iteration = st.iteration;
      interval.lane = Lane::Blocked;
      interval.kind = static_cast<uint8_t>(st.blockKind);
      interval.start = exposedFrom;
      interval.end = now;
      trace.push_back(interval);
    }
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
      st.stats[st.iteration].busy[static_cast<unsigned>(task.computeKind)] +=
          task.seconds;
      if (task.seconds <= 0) {
        ++st.pc;
        continue;
      }
      if (recording(st.iteration)) {
        TraceInterval interval;
        interval.stage = s;
        interval.task = st.pc;
        interval.iteration = st.iteration;
        interval.lane = Lane::Compute;
        interval.kind = static_cast<uint8_t>(task.computeKind);
        interval.start = now;
        interval.end = now + task.seconds;
        trace.push_back(interval);
      }
      ++st.pc;
      schedule(now + task.seconds, EventType::ComputeDone, s);
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

//===----------------------------------------------------------------------===//
// Report
//===----------------------------------------------------------------------===//

SimReport Engine::makeReport() const {
  SimReport report;
  report.programName = program.name;
  report.machineName = machine.name;
  report.iterations = options.iterations;
  report.stages = static_cast<int64_t>(program.stages.size());
  report.clusters = program.totalClusters();
  report.tasksPerIteration = program.totalTasks();
  report.events = processed;
  report.dmaChannels =
      static_cast<uint32_t>(std::max<int64_t>(1, machine.cluster.dmaChannels));
  const unsigned n = options.iterations;
  report.iterationEnd.assign(n, 0);
  for (const StageState &st : stages)
    for (unsigned i = 0; i < n; ++i)
      report.iterationEnd[i] =
          std::max({report.iterationEnd[i], st.stats[i].streamEnd,
                    st.stats[i].lastAsyncDone});
  report.firstIterationTime = report.iterationEnd[0];
  report.stepTime =
      n >= 2 ? (report.iterationEnd[n - 1] - report.iterationEnd[0]) /
                   static_cast<double>(n - 1)
             : report.iterationEnd[0];
  const unsigned firstMeasured = n >= 2 ? 1 : 0;
  const double measured = static_cast<double>(n - firstMeasured);

  report.tokensPerIteration = program.tokensPerIteration;
  report.modelFlopsPerIteration = program.modelFlopsPerIteration;
  if (report.stepTime > 0) {
    report.tokensPerSecond = program.tokensPerIteration / report.stepTime;
    double peak =
        machine.cluster.peakFlopsF16 * static_cast<double>(report.clusters);
    if (peak > 0)
      report.mfu = program.modelFlopsPerIteration / (report.stepTime * peak);
  }

  for (uint32_t s = 0; s < stages.size(); ++s) {
    const StageState &st = stages[s];
    const StageProgram &sp = program.stages[s];
    StageReport stage;
    stage.name =
        sp.name.empty() ? llvm::formatv("stage {0}", s).str() : sp.name;
    for (unsigned i = firstMeasured; i < n; ++i) {
      for (unsigned k = 0; k < kNumComputeKinds; ++k)
        stage.busy[k] += st.stats[i].busy[k] / measured;
      for (unsigned k = 0; k < kNumCommKinds; ++k)
        stage.exposed[k] += st.stats[i].exposed[k] / measured;
    }
    for (unsigned i = 0; i < n; ++i)
      stage.iterationEnd.push_back(
          std::max(st.stats[i].streamEnd, st.stats[i].lastAsyncDone));
    if (report.stepTime > 0) {
      stage.idleFraction =
          std::max(0.0, 1.0 - stage.totalBusy() / report.stepTime);
      stage.bubbleFraction = std::max(
          0.0, stage.idleFraction - stage.totalExposed() / report.stepTime);
    }
    stage.peakDdrBytes = sp.residentBytes + std::max<int64_t>(0, st.peakMemory);
    stage.assignedPeakBytes = sp.assignedPeakBytes;
    stage.exceedsDdr = machine.cluster.ddrBytes > 0 &&
                       std::max(stage.peakDdrBytes, stage.assignedPeakBytes) >
                           machine.cluster.ddrBytes;
    report.meanBubbleFraction += stage.bubbleFraction;
    report.maxBubbleFraction =
        std::max(report.maxBubbleFraction, stage.bubbleFraction);
    for (unsigned k = 0; k < kNumCommKinds; ++k) {
      report.maxExposed[k] = std::max(report.maxExposed[k], stage.exposed[k]);
      report.meanExposed[k] += stage.exposed[k];
    }
    report.maxPeakDdrBytes = std::max(
        {report.maxPeakDdrBytes, stage.peakDdrBytes, stage.assignedPeakBytes});
    report.stageReports.push_back(std::move(stage));
  }
  const double numStages = static_cast<double>(stages.size());
  report.meanBubbleFraction /= numStages;
  for (unsigned k = 0; k < kNumCommKinds; ++k)
    report.meanExposed[k] /= numStages;
  report.trace = trace;
  return report;
}

double StageReport::totalBusy() const {
  double total = 0;
  for (double seconds : busy)
    total += seconds;
  return total;
}

double StageReport::totalExposed() const {
  double total = 0;
  for (double seconds : exposed)
    total += seconds;
  return total;
}

llvm::Expected<SimReport> sim::simulate(const SimProgram &program,
                                        const MachineModel &machine,
                                        const SimOptions &options) {
  Engine engine(program, machine, options);
  if (llvm::Error error = engine.run())
    return std::move(error);
  return engine.makeReport();
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

std::string sim::formatNumber(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

static std::string gib(int64_t bytes) {
  return llvm::formatv("{0:f3}",
                       static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0))
      .str();
}

void SimReport::print(llvm::raw_ostream &os) const {
  auto g = [](double value) { return formatNumber(value); };
  os << "program: " << programName << "\n";
  os << "machine: " << machineName << "\n";
  os << "stages: " << stages << "\n";
  os << "clusters: " << clusters << "\n";
  os << "tasks-per-iteration: " << tasksPerIteration << "\n";
  os << "iterations: " << iterations << "\n";
  os << "events: " << events << "\n";
  os << "first-iteration-s: " << g(firstIterationTime) << "\n";
  os << "step-time-s: " << g(stepTime) << "\n";
  os << "tokens-per-iteration: " << g(tokensPerIteration) << "\n";
  os << "tokens-per-s: " << llvm::formatv("{0:f2}", tokensPerSecond) << "\n";
  os << "mfu-percent: " << llvm::formatv("{0:f2}", mfu * 100) << "\n";
  os << "bubble-mean-percent: "
     << llvm::formatv("{0:f2}", meanBubbleFraction * 100) << "\n";
  os << "bubble-max-percent: "
     << llvm::formatv("{0:f2}", maxBubbleFraction * 100) << "\n";
  for (unsigned k = 0; k < kNumCommKinds; ++k)
    os << "exposed-" << stringifyCommKind(static_cast<CommKind>(k))
       << "-s: " << g(maxExposed[k]) << "\n";
  os << "peak-ddr-max-gib: " << gib(maxPeakDdrBytes) << "\n";
  for (size_t s = 0; s < stageReports.size(); ++s) {
    const StageReport &r = stageReports[s];
    os << "stage " << s << ": name='" << r.name
       << "' busy-s=" << g(r.totalBusy())
       << " bubble-percent=" << llvm::formatv("{0:f2}", r.bubbleFraction * 100)
       << " exposed-comm-s=" << g(r.totalExposed())
       << " peak-ddr-gib=" << gib(r.peakDdrBytes);
    if (r.assignedPeakBytes > 0)
      os << " assigned-ddr-gib=" << gib(r.assignedPeakBytes);
    if (r.exceedsDdr)
      os << " EXCEEDS-DDR";
    os << "\n";
  }
}
