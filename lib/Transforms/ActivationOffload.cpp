//===- ActivationOffload.cpp - Offloaded activations of a stage -----------===//

#include "ratrain/Transforms/ActivationOffload.h"
#include "ratrain/Planner/MemoryModel.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace ratrain;

static bool isCompute(Operation *op) {
  return isa<ForwardOp, RecomputeOp, BackwardOp, BackwardInputOp,
             BackwardWeightOp>(op);
}

ActivationOffloadSummary ratrain::placeActivationOffloads(
    StageOp stage, PlanAttr plan, StorageTier tier,
    function_ref<double(Operation *)> computeSeconds, double reloadSeconds) {
  ActivationOffloadSummary summary;
  if (!plan.offloadsAnyActivations())
    return summary;
  Block &body = stage.getBody().front();
  SmallVector<Operation *> computes;
  DenseMap<Operation *, int64_t> indexOf;
  for (Operation &op : body)
    if (isCompute(&op)) {
      indexOf[&op] = int64_t(computes.size());
      computes.push_back(&op);
    }
  int64_t n = int64_t(computes.size());

  struct Candidate {
    ForwardOp forward;
    /// Computes: the forward, the first and the last reader (the weight
    /// part of a split backward reads the activation too).
    int64_t produced = 0, firstRead = 0, lastRead = 0;
  };
  SmallVector<Candidate> candidates;
  // Offloaded layers' activations in DDR during each compute.
  SmallVector<int64_t> resident(n + 1, 0);
  auto occupy = [&](int64_t from, int64_t to) {
    for (int64_t t = std::max<int64_t>(from, 0); t <= std::min(to, n - 1); ++t)
      ++resident[t];
  };
  for (int64_t i = 0; i < n; ++i) {
    auto forward = dyn_cast<ForwardOp>(computes[i]);
    if (!forward ||
        !plan.offloadsActivations(forward.getActivation().getType().getLayer()))
      continue;
    int64_t firstRead = -1, lastRead = -1;
    for (Operation *user : forward.getActivation().getUsers()) {
      auto it = indexOf.find(user);
      if (it == indexOf.end())
        continue;
      if (firstRead < 0 || it->second < firstRead)
        firstRead = it->second;
      lastRead = std::max(lastRead, it->second);
    }
    if (firstRead < 0)
      continue;
    if (firstRead - i <= kMaxActivationPrefetch + 2) {
      occupy(i, lastRead);
      ++summary.kept;
      continue;
    }
    // Written by compute i, offloaded during compute i + 1.
    occupy(i, i + 1);
    candidates.push_back({forward, i, firstRead, lastRead});
  }

  OpBuilder builder(stage.getContext());
  MLIRContext *context = stage.getContext();
  Location loc = stage.getLoc();
  // Reloads in the order of their readers, so the residency count of the
  // earlier ones bounds the prefetch of the later ones.
  llvm::sort(candidates, [](const Candidate &a, const Candidate &b) {
    return a.firstRead < b.firstRead;
  });
  for (Candidate &c : candidates) {
    Value act = c.forward.getActivation();
    builder.setInsertionPointAfter(c.forward);
    auto offloadedType = OffloadedType::get(context, act.getType());
    Value pending =
        OffloadOp::create(builder, loc, AsyncType::get(context, offloadedType),
                          act, tier)
            .getPending();
    builder.setInsertionPoint(computes[c.produced + 2]);
    Value offloaded =
        WaitOp::create(builder, loc, offloadedType, pending).getValue();

    // The prefetch distance: the computes before the reader that hide the
    // reload, within the residency bound.
    int64_t distance = 1;
    double hidden = computeSeconds(computes[c.firstRead - 1]);
    while (distance < kMaxActivationPrefetch && hidden < reloadSeconds) {
      hidden += computeSeconds(computes[c.firstRead - distance - 1]);
      ++distance;
    }
    while (distance > 1) {
      bool fits = true;
      for (int64_t t = c.firstRead - distance; t < c.firstRead; ++t)
        fits &= resident[t] < kActivationOffloadResident;
      if (fits)
        break;
      --distance;
    }
    occupy(c.firstRead - distance, c.lastRead);
    builder.setInsertionPoint(computes[c.firstRead - distance]);
    Value reloading =
        ReloadOp::create(builder, loc, AsyncType::get(context, act.getType()),
                         offloaded)
            .getPending();
    Operation *reader = computes[c.firstRead];
    builder.setInsertionPoint(reader);
    Value reloaded =
        WaitOp::create(builder, loc, act.getType(), reloading).getValue();
    act.replaceUsesWithIf(reloaded, [&](OpOperand &use) {
      auto it = indexOf.find(use.getOwner());
      return it != indexOf.end() && it->second >= c.firstRead;
    });
    ++summary.offloaded;
  }
  return summary;
}
