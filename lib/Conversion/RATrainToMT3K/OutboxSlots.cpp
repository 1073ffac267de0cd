//===- OutboxSlots.cpp - How many outbox slots each rank needs ------------===//
//
// A send reads its tensor from an outbox slot in the scratch area; a rank
// reuses a slot for a later send of the same direction once the send that
// used it has completed, and with MPI's rendezvous protocol a send completes
// only when its peer has reached the matching receive. Two slots per
// direction suffice for 1F1B (docs/lowering.md, "Messages"); interleaved and
// zero-bubble schedules may run further ahead of their peers. This finds the
// fewest slots (at least two) with which all ranks' transfers still run to
// the end: the verifier's buffered-send run of all stages, where a send
// additionally waits until the receive of the send `slots` earlier of its
// rank and direction has happened.
//
//===----------------------------------------------------------------------===//

#include "StageLowering.h"

#include <map>
#include <set>

using namespace mlir;
using namespace ratrain;
using namespace ratrain::lowering;

namespace {

/// One send or receive of a rank, in program order.
struct Transfer {
  bool send;
  int dir; ///< 0 activation, 1 gradient
  int64_t peer;
  int64_t mb;
  int64_t receiver; ///< the receiving virtual stage
  int64_t index;    ///< of the rank's sends in this direction
};

} // namespace

OutboxSlotCounts ratrain::lowering::planOutboxSlots(PipelineOp pipeline) {
  SmallVector<StageOp, 8> stages = pipeline.getStages();
  size_t numRanks = stages.size();
  SmallVector<SmallVector<Transfer>> programs(numRanks);
  for (auto [rank, stage] : llvm::enumerate(stages)) {
    int64_t sends[2] = {0, 0};
    for (Operation &op : stage.getBody().front()) {
      auto transfer = dyn_cast<TransferOpInterface>(&op);
      // A transfer between two chunks of one rank is received at once.
      if (!transfer || int64_t(transfer.getPeer()) == int64_t(rank))
        continue;
      bool send = isa<SendOp>(op);
      int dir = transfer.getPayload() == Payload::Gradient ? 1 : 0;
      programs[rank].push_back(
          {send, dir, int64_t(transfer.getPeer()),
           int64_t(transfer.getMicroBatch()),
           send ? transfer.getPeerVirtualStage() : transfer.getVirtualStage(),
           send ? sends[dir]++ : -1});
    }
  }

  OutboxSlotCounts slots;
  auto slotsOf = [&](int64_t rank, int dir) -> int64_t & {
    auto [it, inserted] = slots.try_emplace({rank, dir}, 2);
    return it->second;
  };
  // Terminates: each round that does not finish adds a slot to a blocked
  // send's direction, and with as many slots as sends no send waits.
  while (true) {
    // In flight: (sender, receiver, dir, mb, receiving chunk) -> send index.
    std::map<std::tuple<int64_t, int64_t, int, int64_t, int64_t>, int64_t>
        inFlight;
    // Received sends: (sender, dir, index).
    std::set<std::tuple<int64_t, int, int64_t>> received;
    SmallVector<size_t> pc(numRanks, 0);
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t rank = 0; rank < numRanks; ++rank) {
        while (pc[rank] < programs[rank].size()) {
          const Transfer &t = programs[rank][pc[rank]];
          if (t.send) {
            int64_t k = slotsOf(rank, t.dir);
            if (t.index >= k &&
                !received.count({int64_t(rank), t.dir, t.index - k}))
              break;
            inFlight[{int64_t(rank), t.peer, t.dir, t.mb, t.receiver}] =
                t.index;
          } else {
            auto it =
                inFlight.find({t.peer, int64_t(rank), t.dir, t.mb, t.receiver});
            if (it == inFlight.end())
              break;
            received.insert({t.peer, t.dir, it->second});
            inFlight.erase(it);
          }
          ++pc[rank];
          progress = true;
        }
      }
    }
    bool blocked = false;
    for (size_t rank = 0; rank < numRanks; ++rank) {
      if (pc[rank] >= programs[rank].size())
        continue;
      const Transfer &t = programs[rank][pc[rank]];
      // A receive that never matches is the verifier's deadlock, not ours.
      if (t.send && t.index < int64_t(programs[rank].size())) {
        ++slotsOf(rank, t.dir);
        blocked = true;
      }
    }
    if (!blocked)
      return slots;
  }
}
