//===- GradNorm.cpp - The global gradient norm of a clipped step ----------===//
//
// Gradient clipping needs the L2 norm over every rank's gradients before any
// update (docs/schedule.md, "Gradient clipping"). The runtime all-reduces
// one f32 over MPI_COMM_WORLD; the simulator's programs stand for one rank
// per pipeline stage, so the norm is an all-reduce over the stage's
// data-parallel group followed by a binomial-tree all-reduce over the
// stages through point-to-point messages, which also makes every stage
// wait for the slowest.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Simulator/Synthetic1F1B.h"

#include "llvm/Support/FormatVariadic.h"

using namespace ratrain;
using namespace ratrain::sim;

void sim::appendGlobalNorm(StageProgram &program, int64_t rank, int64_t ranks,
                           const CollectiveSpec &dataParallel,
                           double squaresSeconds, LinkClass link) {
  constexpr uint64_t kTagBase = uint64_t(1) << 40;
  constexpr int64_t kNormBytes = 4;
  if (squaresSeconds > 0)
    program.addCompute(ComputeKind::Other, squaresSeconds, 0,
                       "grad norm: sum of squares");
  if (dataParallel.groupSize > 1) {
    CollectiveSpec spec = dataParallel;
    spec.kind = CollectiveKind::AllReduce;
    spec.bytes = kNormBytes;
    spec.algorithm = CollectiveAlgorithm::Tree;
    Token token = program.addCollective(spec, "grad norm all-reduce (dp)");
    program.addWait(token, false, "wait grad norm (dp)");
  }
  if (ranks <= 1)
    return;
  // Reduce into rank 0: in round k a rank whose bit k is set sends to the
  // rank k below and is done; the others receive from the rank k above.
  auto reduceTag = [&](int64_t k) { return kTagBase + uint64_t(2 * k); };
  auto broadcastTag = [&](int64_t k) { return kTagBase + uint64_t(2 * k + 1); };
  int64_t parentStep = 0;
  for (int64_t k = 1; k < ranks; k <<= 1) {
    if (rank & k) {
      program.addSend(uint32_t(rank - k), kNormBytes, reduceTag(k), link,
                      "grad norm: partial sum up");
      parentStep = k;
      break;
    }
    if (rank + k < ranks)
      program.addRecv(uint32_t(rank + k), kNormBytes, reduceTag(k),
                      "grad norm: partial sum");
  }
  // Broadcast back down the same tree.
  int64_t top = 1;
  while (top < ranks)
    top <<= 1;
  if (parentStep)
    program.addRecv(uint32_t(rank - parentStep), kNormBytes,
                    broadcastTag(parentStep), "grad norm");
  for (int64_t k = (parentStep ? parentStep : top) >> 1; k >= 1; k >>= 1)
    if (rank + k < ranks)
      program.addSend(uint32_t(rank + k), kNormBytes, broadcastTag(k), link,
                      "grad norm down");
}
