//===- RATrainAttrs.cpp - ratrain attributes ------------------------------===//

#include "RATrain/RATrainAttrs.h"
#include "RATrain/RATrainDialect.h"
#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/Limits.h"
#include "ratrain/Model/ModelConfig.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace ratrain;

#include "RATrain/RATrainEnums.cpp.inc"

/// The plan's trailing fields that keep their defaults unless printed:
/// `, offload = <o>`, `, schedule = <s>`, `, virtual_stages = <v>`,
/// `, weight_partition = <L>`, `, grad_partition = <L>`,
/// `, weight_wire = <w>`, `, grad_wire = <w>`, in this order; then the
/// closing `>`.
static ParseResult parsePlanExtras(
    AsmParser &parser, Offload &offload, PipelineScheduleKind &schedule,
    int64_t &virtualStages, int64_t &weightPartition, int64_t &gradPartition,
    std::optional<WireType> &weightWire, std::optional<WireType> &gradWire,
    FloatAttr &maxGradNorm, TransferMode &transfers, int64_t &syncPeriod,
    SmallVector<int64_t> &actOffload, SmallVector<int64_t> &dpShares,
    RankOrder &rankOrder) {
  offload = Offload::None;
  schedule = PipelineScheduleKind::OneFOneB;
  virtualStages = 1;
  weightPartition = -1;
  gradPartition = -1;
  weightWire = std::nullopt;
  gradWire = std::nullopt;
  maxGradNorm = FloatAttr();
  transfers = TransferMode::TwoSided;
  syncPeriod = 1;
  actOffload.clear();
  dpShares.clear();
  rankOrder = RankOrder::StageMajor;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    SMLoc loc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return failure();
    if (key == "virtual_stages") {
      if (parser.parseInteger(virtualStages))
        return failure();
      continue;
    }
    if (key == "weight_partition" || key == "grad_partition") {
      if (parser.parseInteger(key == "weight_partition" ? weightPartition
                                                        : gradPartition))
        return failure();
      continue;
    }
    if (key == "sync_period") {
      if (parser.parseInteger(syncPeriod))
        return failure();
      continue;
    }
    if (key == "act_offload" || key == "dp_shares") {
      SmallVector<int64_t> &list = key == "act_offload" ? actOffload : dpShares;
      if (parser.parseCommaSeparatedList(
              AsmParser::Delimiter::Square, [&]() -> ParseResult {
                return parser.parseInteger(list.emplace_back());
              }))
        return failure();
      continue;
    }
    if (key == "max_grad_norm") {
      double value;
      if (parser.parseFloat(value))
        return failure();
      maxGradNorm = parser.getBuilder().getF64FloatAttr(value);
      continue;
    }
    StringRef value;
    SMLoc valueLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&value))
      return failure();
    if (key == "offload") {
      std::optional<Offload> parsed = symbolizeOffload(value);
      if (!parsed)
        return parser.emitError(valueLoc, "unknown offload '") << value << "'";
      offload = *parsed;
    } else if (key == "schedule") {
      std::optional<PipelineScheduleKind> parsed =
          symbolizePipelineScheduleKind(value);
      if (!parsed)
        return parser.emitError(valueLoc, "unknown schedule '")
               << value
               << "'; expected one_f_one_b, interleaved_1f1b, zb_h1, zbv or "
                  "custom";
      schedule = *parsed;
    } else if (key == "weight_wire" || key == "grad_wire") {
      std::optional<WireType> parsed = symbolizeWireType(value);
      if (!parsed)
        return parser.emitError(valueLoc, "unknown wire type '")
               << value << "'; expected int8 or int4";
      (key == "weight_wire" ? weightWire : gradWire) = *parsed;
    } else if (key == "transfers") {
      std::optional<TransferMode> parsed = symbolizeTransferMode(value);
      if (!parsed)
        return parser.emitError(valueLoc, "unknown transfer mode '")
               << value << "'; expected two_sided or one_sided";
      transfers = *parsed;
    } else if (key == "rank_order") {
      std::optional<RankOrder> parsed = symbolizeRankOrder(value);
      if (!parsed)
        return parser.emitError(valueLoc, "unknown rank order '")
               << value << "'; expected stage_major or replica_major";
      rankOrder = *parsed;
    } else {
      return parser.emitError(loc, "unknown plan field '")
             << key
             << "'; expected offload, schedule, virtual_stages, "
                "weight_partition, grad_partition, weight_wire, grad_wire, "
                "max_grad_norm, transfers, sync_period, act_offload, dp_shares "
                "or "
                "rank_order";
    }
  }
  return parser.parseGreater();
}

static void printPlanExtras(AsmPrinter &printer, Offload offload,
                            PipelineScheduleKind schedule,
                            int64_t virtualStages, int64_t weightPartition,
                            int64_t gradPartition,
                            std::optional<WireType> weightWire,
                            std::optional<WireType> gradWire,
                            FloatAttr maxGradNorm, TransferMode transfers,
                            int64_t syncPeriod, ArrayRef<int64_t> actOffload,
                            ArrayRef<int64_t> dpShares, RankOrder rankOrder) {
  if (offload != Offload::None)
    printer << ", offload = " << stringifyOffload(offload);
  if (schedule != PipelineScheduleKind::OneFOneB)
    printer << ", schedule = " << stringifyPipelineScheduleKind(schedule);
  if (virtualStages != 1)
    printer << ", virtual_stages = " << virtualStages;
  if (weightPartition != -1)
    printer << ", weight_partition = " << weightPartition;
  if (gradPartition != -1)
    printer << ", grad_partition = " << gradPartition;
  if (weightWire)
    printer << ", weight_wire = " << stringifyWireType(*weightWire);
  if (gradWire)
    printer << ", grad_wire = " << stringifyWireType(*gradWire);
  if (maxGradNorm && !maxGradNorm.getValue().isZero()) {
    printer << ", max_grad_norm = ";
    printer.printFloat(maxGradNorm.getValue());
  }
  if (transfers != TransferMode::TwoSided)
    printer << ", transfers = " << stringifyTransferMode(transfers);
  if (syncPeriod != 1)
    printer << ", sync_period = " << syncPeriod;
  if (llvm::any_of(actOffload, [](int64_t k) { return k != 0; })) {
    printer << ", act_offload = [";
    llvm::interleaveComma(actOffload, printer);
    printer << "]";
  }
  if (!dpShares.empty()) {
    printer << ", dp_shares = [";
    llvm::interleaveComma(dpShares, printer);
    printer << "]";
  }
  if (rankOrder != RankOrder::StageMajor)
    printer << ", rank_order = " << stringifyRankOrder(rankOrder);
  printer << ">";
}

#define GET_ATTRDEF_CLASSES
#include "RATrain/RATrainAttrs.cpp.inc"

void RATrainDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "RATrain/RATrainAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// RopeScalingAttr
//===----------------------------------------------------------------------===//

/// The model description's scaling of the attribute's fields.
static llvm::Expected<ratrain::RopeScaling>
ropeScalingOf(RopeScalingMethod method, const APFloat &factor,
              const APFloat &lowFreqFactor, const APFloat &highFreqFactor,
              int64_t originalMaxPositions) {
  return ratrain::RopeScaling::fromFields(
      method == RopeScalingMethod::Linear ? ratrain::RopeScalingKind::Linear
                                          : ratrain::RopeScalingKind::Llama3,
      factor.convertToDouble(), lowFreqFactor.convertToDouble(),
      highFreqFactor.convertToDouble(), originalMaxPositions);
}

ratrain::RopeScaling RopeScalingAttr::getScaling() const {
  // The attribute verified, so the fields make a valid scaling.
  return llvm::cantFail(ropeScalingOf(getMethod(), getFactor(),
                                      getLowFreqFactor(), getHighFreqFactor(),
                                      getOriginalMaxPositions()));
}

LogicalResult
RopeScalingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                        RopeScalingMethod method, APFloat factor,
                        APFloat lowFreqFactor, APFloat highFreqFactor,
                        int64_t originalMaxPositions) {
  llvm::Expected<ratrain::RopeScaling> scaling = ropeScalingOf(
      method, factor, lowFreqFactor, highFreqFactor, originalMaxPositions);
  if (!scaling)
    return emitError() << llvm::toString(scaling.takeError());
  return success();
}

LogicalResult PlanAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t clusters, int64_t pp,
    int64_t dp, int64_t microBatchSize, int64_t microBatches, int64_t zero,
    ArrayRef<int64_t> stageLayers, ArrayRef<Recompute> recompute,
    int64_t stepMicros, int64_t peakBytes, Offload offload,
    PipelineScheduleKind schedule, int64_t virtualStages,
    int64_t weightPartition, int64_t gradPartition,
    std::optional<WireType> weightWire, std::optional<WireType> gradWire,
    FloatAttr maxGradNormAttr, TransferMode transfers, int64_t syncPeriod,
    ArrayRef<int64_t> actOffload, ArrayRef<int64_t> dpShares,
    RankOrder rankOrder) {
  double maxGradNorm = maxGradNormAttr ? maxGradNormAttr.getValueAsDouble() : 0;
  if (!std::isfinite(maxGradNorm) || maxGradNorm < 0)
    return emitError() << "plan max_grad_norm = " << maxGradNorm
                       << " must be a finite number >= 0 (0: no clipping)";
  if (pp < 1 || dp < 1 || microBatchSize < 1 || microBatches < 1)
    return emitError() << "plan needs pp, dp, micro_batch_size and "
                          "micro_batches >= 1";
  // Bounds (ratrain/Model/Limits.h): the schedule has work per micro-batch
  // and layer, and pp * dp must not overflow.
  struct {
    const char *name;
    int64_t value, limit;
  } bounded[] = {{"clusters", clusters, limits::kMaxClusters},
                 {"pp", pp, limits::kMaxModelLayers},
                 {"dp", dp, limits::kMaxClusters},
                 {"micro_batch_size", microBatchSize, limits::kMaxGlobalBatch},
                 {"micro_batches", microBatches, limits::kMaxMicroBatches}};
  for (auto &b : bounded)
    if (b.value > b.limit)
      return emitError() << "plan " << b.name << " = " << b.value
                         << " exceeds the limit of " << b.limit;
  if (pp * dp > clusters)
    return emitError() << "plan uses pp * dp = " << pp * dp
                       << " clusters but only " << clusters << " are given";
  if (zero < 0 || zero > 3)
    return emitError() << "plan zero stage must be 0, 1, 2 or 3, got " << zero;
  // The sharding policy (docs/schedule.md, "Partitioning"). Whether the
  // levels exist is a property of the machine (checked by --ratrain-plan and
  // the lifecycle pass); here they must be a level index at all.
  for (auto [name, level] :
       {std::pair<const char *, int64_t>{"weight_partition", weightPartition},
        {"grad_partition", gradPartition}})
    if (level < -1 || level >= int64_t(kMaxNetworkLevels))
      return emitError() << "plan " << name << " = " << level
                         << " must be -1 (none) or a network level 0 to "
                         << int64_t(kMaxNetworkLevels) - 1;
  if (weightPartition >= 0 && zero != 3)
    return emitError() << "plan weight_partition = " << weightPartition
                       << " needs zero = 3 (the views are sharded), got zero = "
                       << zero;
  if (gradPartition >= 0 && zero < 2)
    return emitError() << "plan grad_partition = " << gradPartition
                       << " needs zero >= 2 (the gradients are sharded), got "
                          "zero = "
                       << zero;
  if (weightWire && zero < 1)
    return emitError() << "plan weight_wire = "
                       << stringifyWireType(*weightWire)
                       << " needs zero >= 1 (weight all-gathers), got zero = "
                       << zero;
  if (gradWire && zero < 2)
    return emitError() << "plan grad_wire = " << stringifyWireType(*gradWire)
                       << " needs zero >= 2 (gradient reduce-scatters), got "
                          "zero = "
                       << zero;
  if (virtualStages < 1 || virtualStages > limits::kMaxModelLayers / pp)
    return emitError() << "plan virtual_stages = " << virtualStages
                       << " must be 1 to " << limits::kMaxModelLayers / pp
                       << " (pp * virtual_stages model chunks of at least one "
                          "layer each, up to the limit of "
                       << limits::kMaxModelLayers << " layers)";
  switch (schedule) {
  case PipelineScheduleKind::OneFOneB:
  case PipelineScheduleKind::ZBH1:
    if (virtualStages != 1)
      return emitError() << "plan schedule " << stringifyEnum(schedule)
                         << " runs one virtual stage per rank, not "
                         << virtualStages;
    break;
  case PipelineScheduleKind::Interleaved1F1B:
    if (virtualStages < 2)
      return emitError() << "plan schedule interleaved_1f1b needs "
                            "virtual_stages >= 2, got "
                         << virtualStages;
    break;
  case PipelineScheduleKind::ZBV:
    if (virtualStages != 2)
      return emitError() << "plan schedule zbv runs 2 virtual stages per "
                            "rank, not "
                         << virtualStages;
    break;
  case PipelineScheduleKind::Custom:
    break;
  }
  int64_t chunks = pp * virtualStages;
  if (int64_t(stageLayers.size()) != chunks)
    return emitError() << "plan has " << stageLayers.size()
                       << " stage_layers entries for pp * virtual_stages = "
                       << chunks;
  if (int64_t(recompute.size()) != chunks)
    return emitError() << "plan has " << recompute.size()
                       << " recompute entries for pp * virtual_stages = "
                       << chunks;
  int64_t totalLayers = 0;
  for (int64_t count : stageLayers) {
    if (count < 1 || count > limits::kMaxModelLayers)
      return emitError() << "plan gives a stage " << count
                         << " layers (1 to the limit of "
                         << limits::kMaxModelLayers << ")";
    if (count * microBatches > limits::kMaxStageScheduleSize)
      return emitError() << "plan schedules " << count << " layers x "
                         << microBatches
                         << " micro-batches on one stage, more than the limit "
                            "of "
                         << limits::kMaxStageScheduleSize;
    totalLayers += count;
  }
  if (totalLayers * microBatches > limits::kMaxScheduleSize)
    return emitError() << "plan schedules " << totalLayers << " layers x "
                       << microBatches
                       << " micro-batches, more than the limit of "
                       << limits::kMaxScheduleSize;
  if (stepMicros < 0 || peakBytes < 0)
    return emitError() << "plan predictions must not be negative";
  // Layer-wise partial synchronization (DreamDDP; docs/schedule.md,
  // "Partial synchronization"): each replica updates with its own gradient
  // and a layer's fp32 masters are averaged every sync_period steps.
  if (syncPeriod < 1 || syncPeriod > limits::kMaxSyncPeriod)
    return emitError() << "plan sync_period = " << syncPeriod
                       << " must be 1 (every step) to "
                       << limits::kMaxSyncPeriod;
  if (syncPeriod > 1) {
    if (zero != 0)
      return emitError() << "plan sync_period = " << syncPeriod
                         << " needs zero = 0 (each replica keeps and updates "
                            "whole masters), got zero = "
                         << zero;
    if (maxGradNorm > 0)
      return emitError() << "plan sync_period = " << syncPeriod
                         << " cannot clip gradients (max_grad_norm = "
                         << maxGradNorm
                         << "): there is no global gradient to take the norm "
                            "of";
    if (offload == Offload::Master)
      return emitError() << "plan sync_period = " << syncPeriod
                         << " averages the masters in DDR: they cannot be "
                            "offloaded (offload = master); offload = "
                            "optimizer keeps them in DDR";
  }
  // Activation offload (docs/schedule.md, "Activation offload"): the first
  // k decoder layers of a virtual stage; whether the machine has a tier is
  // checked by the planner and the lifecycle pass.
  if (llvm::any_of(actOffload, [](int64_t k) { return k != 0; }) &&
      (schedule == PipelineScheduleKind::ZBH1 ||
       schedule == PipelineScheduleKind::ZBV))
    return emitError() << "plan act_offload needs a schedule whose backward "
                          "is not split (one_f_one_b, interleaved_1f1b or "
                          "custom), got "
                       << stringifyEnum(schedule)
                       << ": a reloaded activation would stay in DDR until "
                          "the deferred weight part";
  if (!actOffload.empty()) {
    if (int64_t(actOffload.size()) != chunks)
      return emitError() << "plan has " << actOffload.size()
                         << " act_offload entries for pp * virtual_stages = "
                         << chunks;
    for (auto [stage, k] : llvm::enumerate(actOffload)) {
      int64_t decoders = stageLayers[stage] - (stage == 0 ? 1 : 0) -
                         (int64_t(stage) == chunks - 1 ? 1 : 0);
      if (k < 0 || k > decoders)
        return emitError() << "plan act_offload = " << k << " for stage "
                           << stage << " must be 0 to its " << decoders
                           << " decoder layers";
    }
  }
  // Uneven data-parallel shares (docs/schedule.md, "Uneven data-parallel
  // shares"): the schedule is expanded for the largest.
  if (!dpShares.empty()) {
    if (int64_t(dpShares.size()) != dp)
      return emitError() << "plan has " << dpShares.size()
                         << " dp_shares entries for dp = " << dp;
    int64_t largest = 0;
    for (auto [replica, m] : llvm::enumerate(dpShares)) {
      if (m < 1 || m > microBatches)
        return emitError() << "plan dp_shares = " << m << " for replica "
                           << replica
                           << " must be 1 to micro_batches = " << microBatches;
      largest = std::max(largest, m);
    }
    if (largest != microBatches)
      return emitError() << "plan micro_batches = " << microBatches
                         << " must be the largest of dp_shares (" << largest
                         << "): the schedule is expanded for it";
    if (schedule != PipelineScheduleKind::OneFOneB)
      return emitError() << "plan dp_shares needs schedule one_f_one_b, got "
                         << stringifyEnum(schedule);
    if (syncPeriod != 1)
      return emitError() << "plan dp_shares needs sync_period = 1: replicas "
                            "of uneven shares average gradients, not masters";
  }
  // Partition levels group consecutive clusters of a stage's replicas.
  if (rankOrder == RankOrder::ReplicaMajor &&
      (weightPartition >= 0 || gradPartition >= 0))
    return emitError() << "plan rank_order = replica_major cannot partition "
                          "(weight_partition = "
                       << weightPartition
                       << ", grad_partition = " << gradPartition
                       << "): a level's groups are consecutive clusters of a "
                          "stage, which replica-major ranks are not";
  return success();
}

int64_t PlanAttr::getTotalMicroBatches() const {
  if (getDpShares().empty())
    return getMicroBatches() * getDp();
  int64_t total = 0;
  for (int64_t m : getDpShares())
    total += m;
  return total;
}

bool PlanAttr::offloadsActivations(int64_t layer) const {
  if (getActOffload().empty())
    return false;
  int64_t stage = getVirtualStageOfLayer(layer);
  int64_t k = getActOffload()[stage];
  if (k <= 0)
    return false;
  // Model layer 0 (the embedding) is on virtual stage 0.
  int64_t firstDecoder = getFirstLayer(stage) + (stage == 0 ? 1 : 0);
  return layer >= firstDecoder && layer < firstDecoder + k;
}

int64_t PlanAttr::getFirstLayer(int64_t stage) const {
  int64_t first = 0;
  for (int64_t i = 0; i < stage; ++i)
    first += getStageLayers()[i];
  return first;
}

int64_t PlanAttr::getVirtualStageOfLayer(int64_t layer) const {
  ArrayRef<int64_t> counts = getStageLayers();
  int64_t end = 0;
  for (auto [stage, count] : llvm::enumerate(counts)) {
    end += count;
    if (layer < end)
      return int64_t(stage);
  }
  return int64_t(counts.size()) - 1;
}
