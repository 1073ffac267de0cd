//===- CostModel.cpp - Seconds of compute and communication --------------===//
//
// See CostModel.h for the contract and docs/planner.md for the formulas.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Planner/CostModel.h"

#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

using namespace ratrain;

llvm::StringRef ratrain::stringifyLifecyclePolicy(LifecyclePolicy policy) {
  return policy == LifecyclePolicy::GpuStyle ? "gpu-style" : "ratrain";
}

std::optional<LifecyclePolicy>
ratrain::parseLifecyclePolicy(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<LifecyclePolicy>>(name)
      .Cases({"gpu-style", "gpu"}, LifecyclePolicy::GpuStyle)
      .Case("ratrain", LifecyclePolicy::RATrain)
      .Default(std::nullopt);
}

//===----------------------------------------------------------------------===//
// Compute
//===----------------------------------------------------------------------===//

double CostModel::memoryBoundSeconds(double bytes) const {
  const ClusterSpec &c = machine.cluster;
  return bytes / (c.ddrBandwidth * c.efficiency.memoryBound);
}

/// Peak FLOP/s of the model's compute type.
static double peakFlops(const ModelConfig &model, const MachineModel &m) {
  return model.dtype == DType::F32 ? m.cluster.peakFlopsF32
                                   : m.cluster.peakFlopsF16;
}

/// FLOP/s the attention kernels reach for the model (`backward`: the
/// backward's): the compute type's peak times its efficiency; a 16-bit
/// model's at peak_flops_f16 times the `_f16` efficiency where the machine
/// file has one, or at fp32's peak on a machine whose attention kernels
/// compute in fp32 (`attention_peak: f32`).
static double attentionFlops(const ModelConfig &model, const MachineModel &m,
                             bool backward) {
  const KernelEfficiency &e = m.cluster.efficiency;
  double fp32 = backward ? e.attentionBackward : e.attentionForward;
  if (model.dtype == DType::F32 || m.cluster.attentionAtF32Peak)
    return m.cluster.peakFlopsF32 * fp32;
  double f16 = backward ? e.attentionBackwardF16 : e.attentionForwardF16;
  return m.cluster.peakFlopsF16 * (f16 > 0 ? f16 : fp32);
}

double CostModel::gemmSeconds(double m, double n, double k,
                              GemmForm form) const {
  bool f16 = model.dtype != DType::F32;
  // A call measured on this machine costs what it took there.
  auto whole = [](double x) { return x >= 1 && x == std::floor(x); };
  if (!machine.cluster.gemmMeasured.empty() && whole(m) && whole(n) && whole(k))
    if (std::optional<double> measured = machine.cluster.gemmMeasured.find(
            f16, form, int64_t(m), int64_t(n), int64_t(k)))
      return *measured;
  double w = getDTypeBytes(model.dtype);
  double flops = 2.0 * m * n * k;
  double elements = m * k + k * n + m * n;
  const KernelTimeFits &fits = machine.cluster.gemmFit;
  const KernelTimeFit &fit = f16 ? fits.f16 : fits.f32;
  // A measured fit includes what the packing, the epilogue and the call
  // cost; without one, a roofline of a fraction of peak and DDR traffic.
  if (fit.present())
    return fit.seconds(flops, elements, peakFlops(model, machine));
  double compute =
      flops / (peakFlops(model, machine) * machine.cluster.efficiency.gemm);
  return std::max(compute, memoryBoundSeconds(w * elements));
}

double CostModel::gemmSeconds(llvm::ArrayRef<GemmCall> calls) const {
  double seconds = 0;
  for (const GemmCall &call : calls)
    seconds += double(call.count) * gemmSeconds(double(call.m), double(call.n),
                                                double(call.k), call.form);
  return seconds;
}

/// The machine's measured attention time fit for the model (`backward`:
/// the backward's) and the peak it applies to: the fp32 fit for an fp32
/// model or on a machine whose attention kernels compute in fp32
/// (`attention_peak: f32`); otherwise the 16-bit fit at peak_flops_f16.
/// Null when the machine file has no such fit.
static const KernelTimeFit *attentionFit(const ModelConfig &model,
                                         const MachineModel &m, bool backward,
                                         double &peak) {
  const ClusterSpec &c = m.cluster;
  const KernelTimeFits &fits =
      backward ? c.attentionBackwardFit : c.attentionForwardFit;
  bool fp32 = model.dtype == DType::F32 || c.attentionAtF32Peak;
  const KernelTimeFit &fit = fp32 ? fits.f32 : fits.f16;
  peak = fp32 ? c.peakFlopsF32 : c.peakFlopsF16;
  return fit.present() ? &fit : nullptr;
}

double CostModel::attentionSeconds(int64_t microBatchSize,
                                   bool backward) const {
  double tokens = double(model.seqLen) * microBatchSize;
  double w = getDTypeBytes(model.dtype);
  // The backward runs five s x s x d products (QK^T again, dV, dP, dQ, dK)
  // against the forward's two.
  double flops =
      (backward ? 2.5 : 1.0) * model.attentionFlopsPerToken() * tokens;
  double peak = 0;
  if (const KernelTimeFit *fit = attentionFit(model, machine, backward, peak))
    return fit->seconds(flops, model.attentionScoresPerToken() * tokens, peak,
                        /*rows=*/double(model.numHeads) * tokens);
  // A fused (flash-style) forward reads q, k, v and writes o once; the
  // backward reads q, k, v, o, dO and writes dq, dk, dv.
  double bytes = w * tokens *
                 (backward ? 4.0 * model.qDim() + 4.0 * model.kvDim()
                           : 2.0 * model.qDim() + 2.0 * model.kvDim());
  double compute = flops / attentionFlops(model, machine, backward);
  return std::max(compute, memoryBoundSeconds(bytes));
}

double CostModel::attentionForward(int64_t microBatchSize) const {
  return attentionSeconds(microBatchSize, /*backward=*/false);
}

double CostModel::attentionBackward(int64_t microBatchSize) const {
  return attentionSeconds(microBatchSize, /*backward=*/true);
}

double ratrain::layerElementwiseBytes(const ModelConfig &model,
                                      int64_t microBatchSize, bool backward) {
  double tokens = double(model.seqLen) * microBatchSize;
  double w = getDTypeBytes(model.dtype);
  double h = model.hidden, ffn = model.ffnHidden;
  // Rotary on q and k where the model rotates them (not with ALiBi).
  double qk = model.positions == PositionEncoding::Rope
                  ? model.qDim() + model.kvDim()
                  : 0;
  if (!backward)
    return w * tokens * (2 * 2 * h + 2 * qk + 3 * ffn);
  return w * tokens * (2 * 3 * h + 2 * qk + 5 * ffn + 2 * 3 * h);
}

double CostModel::layerElementwiseSeconds(int64_t microBatchSize,
                                          bool backward) const {
  double bytes = layerElementwiseBytes(microBatchSize, backward);
  double rate =
      machine.cluster.elementwiseBandwidthFor(model.dtype != DType::F32);
  return rate > 0 ? bytes / rate : memoryBoundSeconds(bytes);
}

double CostModel::layerForward(int64_t microBatchSize) const {
  double gemms =
      gemmSeconds(layerGemmCalls(model, microBatchSize, GemmPass::Forward));
  return gemms + attentionForward(microBatchSize) +
         layerElementwiseSeconds(microBatchSize, /*backward=*/false);
}

double CostModel::layerBackward(int64_t microBatchSize) const {
  // Input gradients dX = dY W (NN) and weight gradients dW = dY^T X (TN) of
  // each linear layer Y = X W^T.
  double gemms = gemmSeconds(layerGemmCalls(model, microBatchSize,
                                            GemmPass::BackwardInput)) +
                 layerBackwardWeight(microBatchSize);
  return gemms + attentionBackward(microBatchSize) +
         layerElementwiseSeconds(microBatchSize, /*backward=*/true);
}

double CostModel::layerBackwardWeight(int64_t microBatchSize) const {
  return gemmSeconds(
      layerGemmCalls(model, microBatchSize, GemmPass::BackwardWeight));
}

double CostModel::layerBackwardInput(int64_t microBatchSize) const {
  return layerBackward(microBatchSize) - layerBackwardWeight(microBatchSize);
}

double CostModel::layerRecompute(int64_t microBatchSize,
                                 RecomputePolicy policy) const {
  switch (policy) {
  case RecomputePolicy::None:
    return 0;
  case RecomputePolicy::Selective:
    return attentionForward(microBatchSize);
  case RecomputePolicy::Full:
    return layerForward(microBatchSize);
  }
  llvm_unreachable("unknown recompute policy");
}

double CostModel::embeddingForward(int64_t microBatchSize) const {
  double t = double(model.seqLen) * microBatchSize;
  double w = getDTypeBytes(model.dtype);
  // Read token ids and the selected rows, write the output.
  return memoryBoundSeconds(t * (4 + 2 * w * model.hidden));
}

double CostModel::embeddingBackward(int64_t microBatchSize) const {
  double t = double(model.seqLen) * microBatchSize;
  double w = getDTypeBytes(model.dtype);
  // Read the output gradient, read-modify-write the gradient rows.
  return memoryBoundSeconds(t * (4 + 3 * w * model.hidden));
}

double CostModel::headForward(int64_t microBatchSize) const {
  double t = double(model.seqLen) * microBatchSize;
  double w = getDTypeBytes(model.dtype);
  double h = model.hidden, v = model.vocab;
  return memoryBoundSeconds(w * t * 2 * h) // final RMSNorm
         + gemmSeconds(headGemmCall(model, microBatchSize,
                                    GemmPass::Forward)) // logits
         + memoryBoundSeconds(t * v * (w + 4));         // FP32 softmax + loss
}

double CostModel::headBackward(int64_t microBatchSize) const {
  double t = double(model.seqLen) * microBatchSize;
  double w = getDTypeBytes(model.dtype);
  double h = model.hidden, v = model.vocab;
  return memoryBoundSeconds(t * v * (4 + w)) // dlogits
         + gemmSeconds(headGemmCall(model, microBatchSize,
                                    GemmPass::BackwardInput)) // dX
         + headBackwardWeight(microBatchSize)                 // dW
         + memoryBoundSeconds(w * t * 3 * h); // RMSNorm backward
}

double CostModel::headBackwardWeight(int64_t microBatchSize) const {
  return gemmSeconds(
      headGemmCall(model, microBatchSize, GemmPass::BackwardWeight));
}

double CostModel::headBackwardInput(int64_t microBatchSize) const {
  return headBackward(microBatchSize) - headBackwardWeight(microBatchSize);
}

double CostModel::optimizerUpdate(int64_t params, bool ownPart) const {
  bool lowPrecision = getDTypeBytes(model.dtype) < 4;
  // Low precision: read master 4, m 4, v 4, grad 2; write master, m, v.
  // FP32: read param, grad, m, v; write param, m, v.
  double bytesPerParam = lowPrecision ? 26 : 28;
  if (ownPart)
    bytesPerParam += getDTypeBytes(model.dtype);
  // The update's own measured rate, with every cluster updating (the
  // simulator gives one updating alone cluster.optimizer_bandwidth_alone).
  if (double rate = machine.cluster.optimizerBandwidths(lowPrecision).first;
      rate > 0)
    return bytesPerParam * double(params) / rate;
  return memoryBoundSeconds(bytesPerParam * double(params));
}

bool CostModel::syncsOnRing(bool spansNodes) const {
  return syncAlgorithm(machine.network.collective, spansNodes) ==
         CollectiveAlgorithm::Ring;
}

bool CostModel::averagesInUpdate(const ParallelConfig &config,
                                 int64_t stage) const {
  bool spansNodes = dataParallelGroupSpansNodes(stage, config.dataParallel,
                                                machine.clustersPerNode);
  return ratrain::averagesInUpdate(config, model.dtype,
                                   syncsOnRing(spansNodes));
}

double CostModel::viewCast(int64_t params) const {
  if (getDTypeBytes(model.dtype) >= 4)
    return 0; // FP32 training computes on the master copy.
  return memoryBoundSeconds((4.0 + getDTypeBytes(model.dtype)) * params);
}

double CostModel::gradSquares(int64_t elements) const {
  return memoryBoundSeconds(double(getDTypeBytes(model.dtype)) *
                            double(elements));
}

double CostModel::globalNormAllReduce(int64_t clusters) const {
  return collective(CollectiveKind::AllReduce, CollectiveAlgorithm::Tree, 4,
                    clusters);
}

double CostModel::offloadTransfer(int64_t bytes) const {
  if (bytes <= 0)
    return 0;
  const OffloadTierSpec &tier = machine.offload;
  if (!tier.present())
    return std::numeric_limits<double>::infinity();
  double transfers = tier.chunkBytes > 0
                         ? std::ceil(double(bytes) / double(tier.chunkBytes))
                         : 1.0;
  return transfers * tier.latency + double(bytes) / tier.bandwidth;
}

double CostModel::offloadTransfer(int64_t bytes, double cached) const {
  if (cached <= 0 || !machine.offload.hasHostCache())
    return offloadTransfer(bytes);
  cached = std::min(cached, 1.0);
  int64_t stored = int64_t(std::llround(double(bytes) * (1 - cached)));
  return double(bytes - stored) / machine.offload.hostCacheBandwidth +
         offloadTransfer(stored);
}

double CostModel::activationTransfer(int64_t microBatchSize,
                                     double cached) const {
  return offloadTransfer(
      layerActivationBytes(model, microBatchSize, RecomputePolicy::None,
                           MemoryOptions::forMachine(machine)),
      cached);
}

TierCacheShares ratrain::tierCacheShares(const CostModel &costs,
                                         const ParallelConfig &config,
                                         int64_t stage) {
  const MachineModel &machine = costs.getMachine();
  const ModelConfig &model = costs.getModel();
  // A rank's cache serves all its chunks: each gets its share.
  double cache = double(machine.offloadHostCacheBytesPerCluster()) /
                 double(std::max<int64_t>(1, config.virtualStages));
  TierCacheShares shares;
  if (cache <= 0)
    return shares;
  // The stage's states in the tier (its ZeRO shard of them).
  int64_t params = stageParams(model, config, stage);
  if (config.zero >= ZeroStage::Optimizer && config.dataParallel > 1)
    params = (params + config.dataParallel - 1) / config.dataParallel;
  double states =
      double(offloadedBytesPerParam(model, config.offload)) * double(params);
  // Its offloaded activations: a key per offloaded layer and micro-batch
  // (act.layer<L>.mb<M>), each offloaded once per step.
  double activations =
      double(config.offloadedLayers(stage)) * double(config.numMicroBatches) *
      double(layerActivationBytes(model, config.microBatchSize,
                                  RecomputePolicy::None,
                                  MemoryOptions::forMachine(machine)));
  shares.states = states > 0 ? std::min(1.0, cache / states) : 0;
  double left = std::max(0.0, cache - states);
  shares.activations = activations > 0 ? std::min(1.0, left / activations) : 0;
  return shares;
}

//===----------------------------------------------------------------------===//
// Communication
//===----------------------------------------------------------------------===//

CostModel::CostModel(const ModelConfig &model, const MachineModel &machine)
    : model(model), machine(machine), levels(machine.networkLevels()),
      levelClusters(levelGroupClusters(machine)) {}

double CostModel::pointToPoint(int64_t bytes, LinkClass link) const {
  const LinkSpec &spec = link == LinkClass::IntraNode
                             ? machine.network.intraNode
                             : machine.network.interNode;
  return spec.latency + double(bytes) / spec.bandwidth;
}

LinkClass CostModel::pipelineLink(const ParallelConfig &config) const {
  return config.clusters() <= machine.clustersPerNode ? LinkClass::IntraNode
                                                      : LinkClass::InterNode;
}

int64_t CostModel::pipelineMessageBytes(int64_t microBatchSize) const {
  return model.seqLen * microBatchSize * model.hidden *
         int64_t(getDTypeBytes(model.dtype));
}

InNetworkCollectives CostModel::inNetworkOn(bool intraNode) const {
  const InNetworkCollectives &in = machine.network.inNetwork;
  auto inside = int64_t(machine.nodeLevels());
  bool capable =
      in.present() && (intraNode ? in.level < inside : in.level == inside);
  return capable ? in : InNetworkCollectives();
}

double CostModel::ringSeconds(CollectiveKind kind, double bytes,
                              int64_t groupSize, double alpha, double bandwidth,
                              const InNetworkCollectives &in) const {
  if (groupSize <= 1)
    return 0;
  double k = groupSize;
  // k - 1 reduce-scatter steps, k - 1 all-gather steps.
  double phase = (k - 1) * (alpha + bytes / k / bandwidth);
  double reduce = kind == CollectiveKind::AllGather ? 0 : phase;
  double gather = kind == CollectiveKind::ReduceScatter ? 0 : phase;
  return reduce / in.reduceSpeedup + gather / in.multicastSpeedup;
}

double CostModel::treeSeconds(CollectiveKind kind, double bytes,
                              int64_t groupSize, double alpha, double bandwidth,
                              const InNetworkCollectives &in) const {
  if (groupSize <= 1)
    return 0;
  double k = groupSize;
  double depth = std::ceil(std::log2(k));
  // Binomial-tree reduce / broadcast move the whole buffer at each level;
  // scatter / gather move (k-1)/k of it in total.
  double whole = depth * (alpha + bytes / bandwidth);
  double reduce = whole / in.reduceSpeedup;
  double broadcast = whole / in.multicastSpeedup;
  double scatter = depth * alpha + (k - 1) / k * bytes / bandwidth;
  switch (kind) {
  case CollectiveKind::AllReduce:
    return reduce + broadcast;
  case CollectiveKind::ReduceScatter:
    return reduce + scatter;
  case CollectiveKind::AllGather:
    return scatter + broadcast; // gather + broadcast
  }
  llvm_unreachable("unknown collective");
}

double CostModel::collective(CollectiveKind kind, CollectiveAlgorithm algorithm,
                             int64_t bytes, int64_t groupSize) const {
  if (groupSize <= 1 || bytes <= 0)
    return 0;
  const NetworkSpec &net = machine.network;
  int64_t perNode = std::min(groupSize, machine.clustersPerNode);
  int64_t nodes = (groupSize + perNode - 1) / perNode;
  double b = double(bytes);

  const InNetworkCollectives intraIn = inNetworkOn(/*intraNode=*/true);
  const InNetworkCollectives interIn = inNetworkOn(/*intraNode=*/false);
  if (nodes == 1) {
    // Inside one node every algorithm uses the intra-node links.
    if (algorithm == CollectiveAlgorithm::Tree)
      return treeSeconds(kind, b, groupSize, net.intraNode.latency,
                         net.intraNode.bandwidth, intraIn);
    return ringSeconds(kind, b, groupSize, net.intraNode.latency,
                       net.intraNode.bandwidth, intraIn);
  }

  // Flat algorithms over several nodes: every step waits for the slowest
  // hop; one cluster per node talks to the next node at a time. Their steps
  // count as inter-node ones (the simulator places them at the outermost
  // level the group spans).
  double flatAlpha = std::max(net.intraNode.latency, net.interNode.latency);
  double flatBandwidth =
      std::min(net.intraNode.bandwidth, machine.interNodeStreamBandwidth(1));
  switch (algorithm) {
  case CollectiveAlgorithm::Ring:
    return ringSeconds(kind, b, groupSize, flatAlpha, flatBandwidth, interIn);
  case CollectiveAlgorithm::Tree:
    return treeSeconds(kind, b, groupSize, flatAlpha, flatBandwidth, interIn);
  case CollectiveAlgorithm::Hierarchical: {
    // Intra-node reduce-scatter, inter-node collective of each 1/perNode
    // shard by perNode concurrent rings sharing the node's injection
    // bandwidth, intra-node all-gather.
    double interBandwidth = machine.interNodeStreamBandwidth(perNode);
    double intraRS =
        ringSeconds(CollectiveKind::ReduceScatter, b, perNode,
                    net.intraNode.latency, net.intraNode.bandwidth, intraIn);
    double intraAG =
        ringSeconds(CollectiveKind::AllGather, b, perNode,
                    net.intraNode.latency, net.intraNode.bandwidth, intraIn);
    double inter = ringSeconds(kind, b / perNode, nodes, net.interNode.latency,
                               interBandwidth, interIn);
    switch (kind) {
    case CollectiveKind::AllReduce:
      return intraRS + inter + intraAG;
    case CollectiveKind::ReduceScatter:
      return intraRS + inter;
    case CollectiveKind::AllGather:
      return inter + intraAG;
    }
    llvm_unreachable("unknown collective");
  }
  }
  llvm_unreachable("unknown collective algorithm");
}

llvm::SmallVector<int64_t, 4>
CostModel::dataParallelLevels(int64_t dataParallel, int64_t level,
                              bool inside) const {
  llvm::SmallVector<int64_t, 4> members(levels.size(), 1);
  int64_t below = 1;
  for (int64_t l = 0; l < int64_t(levels.size()); ++l) {
    int64_t shared = partitionGroupMembers(levelClusters, dataParallel, l);
    int64_t here = std::max<int64_t>(shared / below, 1);
    below = std::max(below, shared);
    if (level < 0 || (inside ? l <= level : l > level))
      members[l] = here;
  }
  return members;
}

double CostModel::levelCollective(CollectiveKind kind, int64_t bytes,
                                  llvm::ArrayRef<int64_t> members,
                                  WireFormat wire,
                                  int64_t parallelGroups) const {
  if (bytes <= 0)
    return 0;
  const int64_t numLevels =
      std::min<int64_t>(int64_t(members.size()), int64_t(levels.size()));
  const double w = getDTypeBytes(model.dtype);
  const double q = wireBytesPerElement(wire, int64_t(w));
  const double ratio = q / w;
  const bool quantized = wire != WireFormat::Native;
  // Bandwidth of one member's transfers at level l.
  auto bandwidth = [&](int64_t l) {
    double bw = levels[l].link.bandwidth;
    if (l > 0 && levels[l - 1].injectionBandwidth > 0) {
      double senders = double(std::max<int64_t>(parallelGroups, 1));
      for (int64_t j = 0; j < l; ++j)
        senders *= double(members[j]);
      bw = std::min(bw, levels[l - 1].injectionBandwidth / senders);
    }
    return bw;
  };
  // Full buffer of the level-l part: the input of its reduce-scatter, the
  // output of its all-gather.
  llvm::SmallVector<double, 4> buffer(numLevels, 0);
  double b = double(bytes);
  for (int64_t l = 0; l < numLevels; ++l) {
    buffer[l] = b;
    b /= double(std::max<int64_t>(members[l], 1));
  }
  double reduceScatter = 0, allGather = 0;
  bool any = false;
  for (int64_t l = 0; l < numLevels; ++l) {
    int64_t k = members[l];
    if (k <= 1)
      continue;
    any = true;
    const LinkSpec &link = levels[l].link;
    // In-network reduction and multicast at its level; quantized payloads
    // are summed in fp32 by the members, not in the network.
    const InNetworkCollectives &capable = machine.network.inNetwork;
    InNetworkCollectives in =
        !quantized && capable.level == l ? capable : InNetworkCollectives();
    reduceScatter +=
        ringSeconds(CollectiveKind::ReduceScatter, buffer[l] * ratio, k,
                    link.latency, bandwidth(l), in);
    allGather += ringSeconds(CollectiveKind::AllGather, buffer[l] * ratio, k,
                             link.latency, bandwidth(l), in);
    // qgZ: quantize the level's input, dequantize what arrives and reduce
    // it into FP32, at every level.
    if (quantized)
      reduceScatter += memoryBoundSeconds(buffer[l] / w * (w + 2 * q + 4));
  }
  if (!any)
    return 0;
  // qwZ: quantize the input shard, dequantize the gathered output.
  if (quantized)
    allGather += memoryBoundSeconds(b / w * (w + q)) +
                 memoryBoundSeconds(double(bytes) / w * (q + w));
  switch (kind) {
  case CollectiveKind::AllReduce:
    return reduceScatter + allGather;
  case CollectiveKind::ReduceScatter:
    return reduceScatter;
  case CollectiveKind::AllGather:
    return allGather;
  }
  llvm_unreachable("unknown collective");
}

//===----------------------------------------------------------------------===//
// Step time
//===----------------------------------------------------------------------===//

namespace {
/// A unit of gradient synchronization: a decoder layer, the embedding or the
/// head, in the order its gradient becomes ready in the last backward sweep.
struct SyncItem {
  int64_t params;
  double readyOffset;   ///< from the start of the stage's last backward
  double forwardOffset; ///< from the start of the stage's first forward
};
} // namespace

ItemCommunication ratrain::itemCommunication(const CostModel &costs,
                                             const ParallelConfig &config,
                                             int64_t params) {
  ItemCommunication result;
  const int64_t d = config.dataParallel;
  if (d <= 1)
    return result;
  const ShardingPolicy &policy = config.sharding;
  const int64_t w = getDTypeBytes(costs.getModel().dtype);
  const int64_t bytes = params * w;
  llvm::ArrayRef<int64_t> levelClusters = costs.getLevelClusters();
  const int64_t outermost = int64_t(levelClusters.size()) - 1;

  // Partial synchronization (DreamDDP): no gradient sync; the item's fp32
  // masters are averaged once every syncPeriod steps, priced here as the
  // mean over the period (the simulator runs each phase's step).
  if (config.syncPeriod > 1 && config.zero == ZeroStage::None) {
    result.gradSync =
        costs.collective(CollectiveKind::AllReduce, params * 4, d) /
        double(config.syncPeriod);
    return result;
  }

  if (config.zero >= ZeroStage::Parameters) {
    int64_t L = policy.weightLevel;
    int64_t g = partitionGroupMembers(levelClusters, d, L);
    if (L < 0 || L >= outermost || g >= d) {
      // Every gather spans the whole group.
      result.gatherRepeat =
          policy.weightWire == WireFormat::Native
              ? costs.collective(CollectiveKind::AllGather, bytes, d)
              : costs.levelCollective(CollectiveKind::AllGather, bytes,
                                      costs.dataParallelLevels(d),
                                      policy.weightWire);
      result.gatherFirst = result.gatherRepeat;
    } else {
      result.gatherRepeat = costs.levelCollective(
          CollectiveKind::AllGather, bytes,
          costs.dataParallelLevels(d, L, /*inside=*/true), policy.weightWire);
      // The g members of a level-L group gather their secondary shards
      // across the groups at once.
      double across = costs.levelCollective(
          CollectiveKind::AllGather, (bytes + g - 1) / g,
          costs.dataParallelLevels(d, L, /*inside=*/false), policy.weightWire,
          /*parallelGroups=*/g);
      result.gatherFirst = across + result.gatherRepeat;
    }
  }

  bool sharded = config.zero >= ZeroStage::Optimizer;
  int64_t L = policy.gradLevel;
  if (config.zero >= ZeroStage::Gradients && L >= 0) {
    int64_t g = partitionGroupMembers(levelClusters, d, L);
    result.gradSync = costs.levelCollective(
        CollectiveKind::ReduceScatter, bytes,
        costs.dataParallelLevels(d, L, /*inside=*/true), policy.gradWire);
    if (g < d)
      result.gradSync += costs.levelCollective(
          CollectiveKind::ReduceScatter, (bytes + g - 1) / g,
          costs.dataParallelLevels(d, L, /*inside=*/false), policy.gradWire,
          /*parallelGroups=*/g);
  } else if (sharded && policy.gradWire != WireFormat::Native) {
    result.gradSync =
        costs.levelCollective(CollectiveKind::ReduceScatter, bytes,
                              costs.dataParallelLevels(d), policy.gradWire);
  } else {
    result.gradSync = costs.collective(sharded ? CollectiveKind::ReduceScatter
                                               : CollectiveKind::AllReduce,
                                       bytes, d);
  }
  return result;
}

double ratrain::parameterGatherSeconds(const CostModel &costs,
                                       const ParallelConfig &config,
                                       int64_t params) {
  if (config.zero < ZeroStage::Parameters || config.dataParallel <= 1)
    return 0;
  return itemCommunication(costs, config, params).gatherRepeat;
}

double ratrain::exposedActivationTransfer(const CostModel &costs,
                                          const ParallelConfig &config,
                                          int64_t stage, double compute) {
  int64_t k = config.offloadedLayers(stage);
  if (k <= 0)
    return 0;
  double stream = 2.0 * double(k) *
                  costs.activationTransfer(
                      config.microBatchSize,
                      tierCacheShares(costs, config, stage).activations);
  return std::max(0.0, stream - compute);
}

StepTime ratrain::predictStepTime(const CostModel &costs,
                                  const ParallelConfig &config,
                                  LifecyclePolicy policy) {
  if (config.schedule != schedule::ScheduleKind::OneFOneB ||
      config.virtualStages != 1) {
    llvm::Expected<schedule::PipelineSchedule> generated =
        schedule::generateSchedule(config.schedule, config.pipelineStages,
                                   config.virtualStages,
                                   config.numMicroBatches);
    if (generated)
      return predictStepTime(costs, config, policy, *generated);
    llvm::consumeError(generated.takeError());
    StepTime invalid;
    invalid.total = invalid.pipeline = std::numeric_limits<double>::infinity();
    return invalid;
  }
  const ModelConfig &model = costs.getModel();
  int64_t p = config.pipelineStages, d = config.dataParallel,
          b = config.microBatchSize, m = config.numMicroBatches;
  int64_t w = getDTypeBytes(model.dtype);
  bool sharded = config.zero >= ZeroStage::Optimizer && d > 1;
  // The all-gather of the updated view after the update. ZeRO-3 keeps the
  // shard and its next use gathers it (counted in the forward above), so
  // this overcounts ZeRO-3 by one flat gather per item and step; kept
  // until the plans the planner picks with it are re-baselined (docs/
  // planner.md, "Step time").
  bool regather = sharded;
  int64_t offloadPerParam = offloadedBytesPerParam(model, config.offload);
  // Offloaded bytes of an update item of `params` parameters on one cluster
  // (the ZeRO shard it updates).
  auto offloadedBytes = [&](int64_t params) {
    int64_t updated =
        config.zero >= ZeroStage::Optimizer ? (params + d - 1) / d : params;
    return offloadPerParam * updated;
  };

  // ZeRO-3: every compute waits for the gather of its item's view, issued
  // one compute ahead on the communication stream (parameterGatherSeconds).
  // A tied embedding is updated once, by the embedding (its owner).
  int64_t headItem = model.headParams();
  ItemCommunication layerComm =
      itemCommunication(costs, config, model.paramsPerLayer());
  ItemCommunication embComm =
      itemCommunication(costs, config, model.embeddingParams());
  ItemCommunication headComm = itemCommunication(costs, config, headItem);
  double layerGather = layerComm.gatherRepeat;
  double layerGradComm = layerGather;
  double f = std::max(costs.layerForward(b), layerGather),
         bw = costs.layerBackward(b);
  double embF = std::max(costs.embeddingForward(b), embComm.gatherRepeat),
         embB = std::max(costs.embeddingBackward(b), embComm.gatherRepeat);
  double headF = std::max(costs.headForward(b), headComm.gatherRepeat),
         headB = std::max(costs.headBackward(b), headComm.gatherRepeat);
  // A secondary weight partition makes an item's first gather of the step
  // (across the level-L groups, then inside) longer than the others: the
  // first micro-batch's forward passes every stage once with it.
  auto firstExtra = [](double compute, const ItemCommunication &comm) {
    return std::max(compute, comm.gatherFirst) -
           std::max(compute, comm.gatherRepeat);
  };
  double firstGatherExtra = 0;
  double c = p > 1 ? costs.pointToPoint(costs.pipelineMessageBytes(b),
                                        costs.pipelineLink(config))
                   : 0;

  StepTime result;
  result.stages.resize(p);
  double sumSlots = 0, maxSlot = 0;
  int64_t slowest = 0;
  for (int64_t i = 0; i < p; ++i) {
    StageTiming &t = result.stages[i];
    int64_t n = config.stages[i].numLayers;
    double r = costs.layerRecompute(b, config.recompute[i]);
    // Offloaded layers keep their full activations: no recompute.
    int64_t k = config.offloadedLayers(i);
    t.forward = n * f + (i == 0 ? embF : 0) + (i == p - 1 ? headF : 0);
    t.recompute = double(n - k) * r;
    t.backward = double(n - k) * std::max(bw + r, layerGradComm) +
                 double(k) * std::max(bw, layerGradComm) + (i == 0 ? embB : 0) +
                 (i == p - 1 ? headB : 0);
    t.backward +=
        exposedActivationTransfer(costs, config, i, t.forward + t.backward);
    firstGatherExtra +=
        n * firstExtra(costs.layerForward(b), layerComm) +
        (i == 0 ? firstExtra(costs.embeddingForward(b), embComm) : 0) +
        (i == p - 1 ? firstExtra(costs.headForward(b), headComm) : 0);
    t.p2p = c;
    double slot = t.forward + t.backward + 2 * c;
    sumSlots += slot;
    if (slot > maxSlot) {
      maxSlot = slot;
      slowest = i;
    }
    // Whole-stage lifecycle costs.
    int64_t params = stageParams(model, config, i);
    int64_t updated = sharded ? (params + d - 1) / d : params;
    t.syncSeconds = itemCommunication(costs, config, params).gradSync;
    // Not the own part's read of an update that averages (ScheduleTime and
    // the simulator count it): the reduction its reduce-scatter then skips
    // is not priced (collectives cost their transfers), and counting one
    // side alone made ZeRO-2 win ZeRO-1's ties (the tiny LLaMA on MT-3000,
    // pp 2 x dp 4), though averaging in the update is the faster of the two
    // on the host.
    t.updateSeconds = costs.optimizerUpdate(updated);
    t.castSeconds = costs.viewCast(updated);
    t.allGatherSeconds =
        regather ? costs.collective(CollectiveKind::AllGather, params * w, d)
                 : 0;
    if (offloadPerParam > 0) {
      // Reload + write-back of each update item: the decoder layers, the
      // embedding (stage 0), the head (+ tied embedding copy, last stage).
      double cached = tierCacheShares(costs, config, i).states;
      double item =
          costs.offloadTransfer(offloadedBytes(model.paramsPerLayer()), cached);
      t.offloadSeconds = 2 * n * item;
      if (i == 0)
        t.offloadSeconds +=
            2 * costs.offloadTransfer(offloadedBytes(model.embeddingParams()),
                                      cached);
      if (i == p - 1)
        t.offloadSeconds += 2 * costs.offloadTransfer(
                                    offloadedBytes(model.headParams()), cached);
      result.offload = std::max(result.offload, t.offloadSeconds);
    }
  }
  result.pipeline = sumSlots + double(m - 1) * maxSlot + firstGatherExtra;
  // Tied embeddings on several stages (docs/lowering.md, "Tied
  // embeddings"): stage 0 sends the step's view after its first embedding
  // forward and the last stage's first head forward waits for it; the LM
  // head's gradient goes back when the head's is ready and joins the
  // embedding's before its sync (tiedGradArrival, below).
  double tiedTransfer = model.tieEmbeddings && p > 1
                            ? costs.pointToPoint(getDTypeBytes(model.dtype) *
                                                     model.vocab * model.hidden,
                                                 costs.pipelineLink(config))
                            : 0;
  double tiedGradArrival = 0;
  if (tiedTransfer > 0) {
    double headFirstForward = double(config.stages[p - 1].numLayers) * f;
    double drainToHead = 0;
    for (int64_t j = 0; j + 1 < p; ++j) {
      headFirstForward += result.stages[j].forward + c;
      drainToHead += result.stages[j].backward + c;
    }
    result.pipeline += std::max(0.0, embF + tiedTransfer - headFirstForward);
    tiedGradArrival = result.pipeline - drainToHead -
                      result.stages[p - 1].backward + headB + tiedTransfer;
  }
  result.bubble = result.pipeline - double(m) * maxSlot;
  result.recompute = double(m) * result.stages[slowest].recompute;

  if (policy == LifecyclePolicy::GpuStyle) {
    double tail = 0;
    for (const StageTiming &t : result.stages)
      tail = std::max(tail, t.syncSeconds + t.updateSeconds + t.castSeconds +
                                t.allGatherSeconds + t.offloadSeconds);
    // Stage 0's syncs wait for a tied LM-head gradient still in flight.
    const StageTiming &first = result.stages.front();
    tail = std::max(tail, std::max(0.0, tiedGradArrival - result.pipeline) +
                              first.syncSeconds + first.updateSeconds +
                              first.castSeconds + first.allGatherSeconds +
                              first.offloadSeconds);
    if (config.maxGradNorm > 0) {
      // Every stage syncs, then the global norm, then the updates.
      double syncs = 0, updates = 0;
      int64_t largest = 0;
      for (int64_t i = 0; i < p; ++i) {
        const StageTiming &t = result.stages[static_cast<size_t>(i)];
        syncs = std::max(syncs, t.syncSeconds);
        updates = std::max(updates, t.updateSeconds + t.castSeconds +
                                        t.allGatherSeconds + t.offloadSeconds);
        largest = std::max(largest, stageParams(model, config, i));
      }
      tail = std::max(
          tail,
          syncs + costs.gradSquares(sharded ? (largest + d - 1) / d : largest) +
              costs.globalNormAllReduce(config.clusters()) + updates);
    }
    result.exposedLifecycle = tail;
    result.total = result.pipeline + tail;
    return withCoreCopies(costs, config, std::move(result));
  }

  // Layer-level lifecycle. Stage i's last backward ends when the last
  // micro-batch's gradient has flowed back from the last stage to it.
  // First every stage's syncs (communication stream, readiness order), then
  // its updates; under gradient clipping no update starts before the global
  // norm: every stage's last sync, its sum of squares and the norm's
  // all-reduce over all clusters.
  double iteration = result.pipeline;
  struct StageLifecycle {
    std::vector<SyncItem> items;
    std::vector<double> syncEnd;
    double sweepStart = 0, lastBackwardEnd = 0, commFree = 0;
    double fillOffset = 0; ///< start of the stage's first forward
  };
  std::vector<StageLifecycle> lifecycles(static_cast<size_t>(p));
  double fillOffset = 0;  // start of stage i's first forward after iteration
  double drainBefore = 0; // sum_{j<i} (B_j + c)
  double normReady = 0;
  for (int64_t i = 0; i < p; ++i) {
    const StageTiming &t = result.stages[i];
    int64_t n = config.stages[i].numLayers;
    StageLifecycle &life = lifecycles[static_cast<size_t>(i)];
    std::vector<SyncItem> &items = life.items;
    double lastBackwardEnd = result.pipeline - drainBefore;
    double sweepStart = lastBackwardEnd - t.backward;
    life.lastBackwardEnd = lastBackwardEnd;
    life.sweepStart = sweepStart;
    life.fillOffset = fillOffset;
    double layerB = std::max(bw + costs.layerRecompute(b, config.recompute[i]),
                             layerGradComm);
    // The first offloadedLayers keep their activations (no recompute).
    double offloadedB = std::max(bw, layerGradComm);
    int64_t offloadedLayers = config.offloadedLayers(i);

    // Readiness order of the backward sweep: head, layers last to first,
    // embedding.
    items.clear();
    double elapsed = 0;
    double layersForwardStart = i == 0 ? embF : 0;
    if (i == p - 1) {
      elapsed += headB;
      items.push_back(
          {model.headParams(), elapsed, layersForwardStart + n * f});
    }
    for (int64_t l = n - 1; l >= 0; --l) {
      elapsed += l < offloadedLayers ? offloadedB : layerB;
      items.push_back(
          {model.paramsPerLayer(), elapsed, layersForwardStart + l * f});
    }
    if (i == 0) {
      elapsed += embB;
      // A tied embedding's gradient is complete once the LM head's arrives.
      double ready = std::max(elapsed, tiedGradArrival - sweepStart);
      items.push_back({model.embeddingParams(), ready, 0});
    }

    // Communication stream: syncs in readiness order.
    std::vector<double> &syncEnd = life.syncEnd;
    syncEnd.assign(items.size(), 0);
    double commFree = 0;
    int64_t stageParams = 0;
    for (size_t k = 0; k < items.size(); ++k) {
      double ready = sweepStart + items[k].readyOffset;
      double start = std::max(ready, commFree);
      commFree =
          start + itemCommunication(costs, config, items[k].params).gradSync;
      syncEnd[k] = commFree;
      stageParams += items[k].params;
    }
    life.commFree = commFree;
    if (config.maxGradNorm > 0)
      normReady = std::max(
          normReady, std::max(commFree, lastBackwardEnd) +
                         costs.gradSquares(sharded ? (stageParams + d - 1) / d
                                                   : stageParams));
    fillOffset += t.forward + c;
    drainBefore += t.backward + c;
  }
  if (config.maxGradNorm > 0)
    normReady += costs.globalNormAllReduce(config.clusters());

  for (int64_t i = 0; i < p; ++i) {
    StageLifecycle &life = lifecycles[static_cast<size_t>(i)];
    const std::vector<SyncItem> &items = life.items;
    const std::vector<double> &syncEnd = life.syncEnd;
    double sweepStart = life.sweepStart;
    double commFree = life.commFree;
    double fillOffset = life.fillOffset;
    // Offload stream (DDR <-> tier), double-buffered: the reloads of the
    // first two items start with the sweep; after item k's update its
    // write-back frees its window slot for the reload of item k + 2.
    std::vector<double> reloadEnd(items.size(), sweepStart);
    double offloadFree = sweepStart;
    double cached = tierCacheShares(costs, config, i).states;
    auto reload = [&](size_t k) {
      offloadFree = offloadFree + costs.offloadTransfer(
                                      offloadedBytes(items[k].params), cached);
      reloadEnd[k] = offloadFree;
    };
    if (offloadPerParam > 0)
      for (size_t k = 0; k < std::min<size_t>(2, items.size()); ++k)
        reload(k);
    // Compute stream: updates and casts after the stage's backward work
    // (and after the global norm when the step clips).
    double computeFree = std::max(life.lastBackwardEnd, normReady);
    for (size_t k = 0; k < items.size(); ++k) {
      int64_t updated =
          sharded ? (items[k].params + d - 1) / d : items[k].params;
      double start = std::max({syncEnd[k], computeFree, reloadEnd[k]});
      double updateEnd = start + costs.optimizerUpdate(updated);
      computeFree = updateEnd + costs.viewCast(updated);
      if (offloadPerParam > 0) {
        // Write back the updated states, then reload item k + 2 into the
        // freed slot.
        offloadFree =
            std::max(offloadFree, updateEnd) +
            costs.offloadTransfer(offloadedBytes(items[k].params), cached);
        if (k + 2 < items.size())
          reload(k + 2);
        // The window must be free again when the next iteration's sweep
        // starts its reloads.
        iteration = std::max(iteration, offloadFree - sweepStart);
      }
      double viewReady = computeFree;
      if (regather) {
        // ZeRO: gather the updated view shards (after the syncs on the
        // communication stream; see `regather`).
        double agStart = std::max(viewReady, commFree);
        commFree = agStart + costs.collective(CollectiveKind::AllGather,
                                              items[k].params * w, d);
        viewReady = commFree;
      }
      // The next iteration's forward of this item on stage i starts at
      // iteration + fillOffset + forwardOffset.
      iteration =
          std::max(iteration, viewReady - fillOffset - items[k].forwardOffset);
    }
  }
  result.total = iteration;
  result.exposedLifecycle = iteration - result.pipeline;
  return withCoreCopies(costs, config, std::move(result));
}
