//===- PutLanding.cpp - Where a one-sided put may land
//---------------------===//

#include "ratrain/Analysis/PutLanding.h"
#include "ratrain/Analysis/StageBufferAnalysis.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace ratrain;

namespace {

/// A message between two ranks: (sender, receiver, payload, micro-batch,
/// receiving virtual stage).
using MessageKey = std::tuple<int64_t, int64_t, int, int64_t, int64_t>;

/// The matched send of a receive, by stage index and program position.
struct Edge {
  unsigned sender;
  int64_t sendPosition;
};

} // namespace

PutLandingAnalysis::PutLandingAnalysis(
    PipelineOp pipeline, ArrayRef<const StageBufferAnalysis *> buffers) {
  SmallVector<StageOp, 8> stages = pipeline.getStages();
  unsigned numStages = stages.size();
  DenseMap<int64_t, unsigned> indexOfRank;
  for (auto [index, stage] : llvm::enumerate(stages))
    indexOfRank[stage.getStage()] = index;

  // The sends between ranks, by message.
  std::map<MessageKey, std::pair<unsigned, int64_t>> sends;
  SmallVector<int64_t> length(numStages);
  for (auto [index, stage] : llvm::enumerate(stages)) {
    const StageBufferAnalysis &b = *buffers[index];
    length[index] = int64_t(b.getOps().size());
    int64_t self = stage.getStage();
    for (Operation *op : b.getOps())
      if (auto send = dyn_cast<SendOp>(op); send && send.getPeer() != self)
        sends[{self, int64_t(send.getPeer()), int(send.getPayload()),
               int64_t(send.getMicroBatch()), send.getPeerVirtualStage()}] = {
            unsigned(index), b.getPosition(op)};
  }

  // Message edges into each stage, by the consumer's position; the one-sided
  // receives with their matched sends.
  SmallVector<std::multimap<int64_t, Edge>> incoming(numStages);
  SmallVector<std::tuple<RecvOp, unsigned, int64_t, Edge>> oneSided;
  for (auto [index, stage] : llvm::enumerate(stages)) {
    const StageBufferAnalysis &b = *buffers[index];
    int64_t self = stage.getStage();
    for (Operation *op : b.getOps()) {
      auto recv = dyn_cast<RecvOp>(op);
      if (!recv || recv.getPeer() == self)
        continue;
      auto it =
          sends.find({int64_t(recv.getPeer()), self, int(recv.getPayload()),
                      int64_t(recv.getMicroBatch()), recv.getVirtualStage()});
      if (it == sends.end() || !indexOfRank.count(recv.getPeer()))
        return; // unmatched: verify-schedule reports it
      int64_t consumer = b.getPosition(op);
      if (std::optional<unsigned> message = b.lookupTransferBuffer(op))
        consumer = std::max(consumer, b.getBuffer(*message).end);
      Edge edge{it->second.first, it->second.second};
      incoming[index].insert({consumer, edge});
      if (recv.getOneSided())
        oneSided.push_back({recv, unsigned(index), consumer, edge});
    }
  }

  // Without one-sided receives there is nothing to place.
  if (oneSided.empty()) {
    valid = true;
    return;
  }

  // Run two steps of every stage together. clock[s][t]: how many of stage
  // t's ops (in the two-step numbering) are known to precede stage s's
  // current op; at each send the sender's clock is kept for its receiver.
  SmallVector<SmallVector<int64_t>> clock(numStages,
                                          SmallVector<int64_t>(numStages, 0));
  std::map<std::pair<unsigned, int64_t>, SmallVector<int64_t>> atSend;
  SmallVector<int64_t> pc(numStages, 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (unsigned s = 0; s < numStages; ++s) {
      while (pc[s] < 2 * length[s]) {
        int64_t step = pc[s] / length[s], position = pc[s] % length[s];
        auto [begin, end] = incoming[s].equal_range(position);
        bool ready = true;
        for (auto it = begin; it != end && ready; ++it)
          ready = pc[it->second.sender] >
                  step * length[it->second.sender] + it->second.sendPosition;
        if (!ready)
          break;
        for (auto it = begin; it != end; ++it) {
          const SmallVector<int64_t> &sent =
              atSend.at({it->second.sender, step * length[it->second.sender] +
                                                it->second.sendPosition});
          for (unsigned t = 0; t < numStages; ++t)
            clock[s][t] = std::max(clock[s][t], sent[t]);
        }
        clock[s][s] = pc[s] + 1;
        if (isa<SendOp>(buffers[s]->getOp(position)))
          atSend[{s, pc[s]}] = clock[s];
        ++pc[s];
        progress = true;
      }
    }
  }
  for (unsigned s = 0; s < numStages; ++s)
    if (pc[s] < 2 * length[s])
      return; // a deadlock: verify-schedule reports it

  for (auto [recv, receiver, consumer, edge] : oneSided) {
    // The put of the second step.
    const SmallVector<int64_t> &sent =
        atSend.at({edge.sender, length[edge.sender] + edge.sendPosition});
    int64_t known = sent[receiver], n = length[receiver];
    PutLanding landing;
    landing.recv = recv;
    landing.send = cast<SendOp>(buffers[edge.sender]->getOp(edge.sendPosition));
    landing.receiver = stages[receiver].getStage();
    landing.consumer = consumer;
    if (known >= n) {
      landing.from = known - n;
    } else {
      landing.from = 0;
      landing.fromPreviousStep = known;
    }
    byRecv[recv] = landings.size();
    landings.push_back(landing);
  }
  valid = true;
}

const PutLanding *PutLandingAnalysis::lookup(Operation *recv) const {
  auto it = byRecv.find(recv);
  return it == byRecv.end() ? nullptr : &landings[it->second];
}
