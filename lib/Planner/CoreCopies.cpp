//===- CoreCopies.cpp - A host rank's core moving its collectives' data ---===//
//
// coreCopySeconds and withCoreCopies (CostModel.h): where the machine file
// has network.core_copy_bandwidth, the step time gains the seconds the
// busiest rank's core spends copying and reducing its data-parallel
// collectives' bytes, priced as the simulator charges them
// (docs/planner.md, "Step time").
//
//===----------------------------------------------------------------------===//

#include "ratrain/Planner/CostModel.h"

#include <algorithm>
#include <utility>
#include <vector>

using namespace ratrain;

double ratrain::coreCopySeconds(const CostModel &costs,
                                const ParallelConfig &config) {
  const MachineModel &machine = costs.getMachine();
  const double rate = machine.network.coreCopyBandwidth;
  const int64_t d = config.dataParallel;
  if (rate <= 0 || d <= 1)
    return 0;
  const ModelConfig &model = costs.getModel();
  const double ddr = machine.cluster.ddrBandwidth;
  // A flat ring over d members: d - 1 steps of bytes / d each, per pass.
  auto ring = [&](double bytes, bool reduces, bool gathers) {
    const double chunk = bytes / double(d), steps = double(d - 1);
    double seconds = 0;
    if (reduces)
      seconds += steps * chunk / rate + (ddr > 0 ? steps * 3 * chunk / ddr : 0);
    if (gathers)
      seconds += steps * chunk / rate;
    return seconds;
  };
  const double w = double(getDTypeBytes(model.dtype));
  const bool partialSync =
      config.syncPeriod > 1 && config.zero == ZeroStage::None;
  std::vector<double> perRank(size_t(config.pipelineStages), 0.0);
  for (int64_t c = 0, n = config.numVirtualStages(); c < n; ++c) {
    const double params = double(stageParams(model, config, c));
    double seconds;
    if (partialSync)
      seconds = ring(params * 4, true, true) / double(config.syncPeriod);
    else if (config.zero == ZeroStage::None)
      seconds = ring(params * w, true, true);
    else
      seconds = ring(params * w, true, false);
    if (config.zero == ZeroStage::Optimizer ||
        config.zero == ZeroStage::Gradients)
      seconds += ring(params * w, false, true);
    else if (config.zero >= ZeroStage::Parameters)
      seconds +=
          2 * double(config.numMicroBatches) * ring(params * w, false, true);
    perRank[size_t(chunkRank(config, c))] += seconds;
  }
  return *std::max_element(perRank.begin(), perRank.end());
}

StepTime ratrain::withCoreCopies(const CostModel &costs,
                                 const ParallelConfig &config, StepTime step) {
  step.coreCopy = coreCopySeconds(costs, config);
  step.total += step.coreCopy;
  return step;
}
