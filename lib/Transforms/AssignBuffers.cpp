//===- AssignBuffers.cpp - --ratrain-assign-buffers -----------------------===//
//
// DDR-capacity-aware buffer assignment of every stage: live ranges from the
// program (StageBufferAnalysis), sizes from the planner's memory model, offsets
// from an interval-packing allocator, a check against the usable DDR per
// cluster, and a memory-over-time report.
//
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/BufferSizes.h"
#include "ratrain/Analysis/ModelAndPlan.h"
#include "ratrain/Analysis/PutLanding.h"
#include "ratrain/Analysis/ScheduleActions.h"
#include "ratrain/Analysis/StageBufferAnalysis.h"
#include "ratrain/Planner/Planner.h"
#include "ratrain/Transforms/PassUtils.h"
#include "ratrain/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <numeric>

namespace ratrain {
#define GEN_PASS_DEF_RATRAINASSIGNBUFFERS
#include "ratrain/Transforms/Passes.h.inc"
} // namespace ratrain

using namespace mlir;
using namespace ratrain;

namespace ratrain {

/// Assigns offsets to `buffers`: persistent buffers (live over the whole
/// step) stacked from 0 in order; the others, largest first (ties: earlier
/// start), at the lowest offset above the persistent ones that does not
/// overlap any already placed buffer live at the same time (first fit over
/// the free address ranges). Zero-byte buffers get offset 0. Returns the
/// arena size.
int64_t packStageBuffers(MutableArrayRef<StageBuffer> buffers,
                         int64_t stepEnd) {
  int64_t base = 0;
  SmallVector<unsigned> transient;
  for (auto [index, buffer] : llvm::enumerate(buffers)) {
    buffer.offset = 0;
    if (buffer.bytes == 0)
      continue;
    if (buffer.isPersistent(stepEnd)) {
      buffer.offset = base;
      base += buffer.bytes;
    } else {
      transient.push_back(index);
    }
  }
  llvm::stable_sort(transient, [&](unsigned a, unsigned b) {
    if (buffers[a].bytes != buffers[b].bytes)
      return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].start < buffers[b].start;
  });
  int64_t arena = base;
  SmallVector<unsigned> placed;
  SmallVector<std::pair<int64_t, int64_t>> busy; // [offset, end) ranges
  for (unsigned index : transient) {
    StageBuffer &buffer = buffers[index];
    busy.clear();
    for (unsigned other : placed) {
      const StageBuffer &o = buffers[other];
      if (o.start <= buffer.end && buffer.start <= o.end)
        busy.push_back({o.offset, o.offset + o.bytes});
    }
    llvm::sort(busy);
    int64_t offset = base;
    for (auto [begin, end] : busy) {
      if (begin - offset >= buffer.bytes)
        break;
      offset = std::max(offset, end);
    }
    buffer.offset = offset;
    arena = std::max(arena, offset + buffer.bytes);
    placed.push_back(index);
  }
  return arena;
}

} // namespace ratrain

namespace {

/// Reserves the buffer of each one-sided receive of the stage from the first
/// position its put may land at: the whole step when that is in the previous
/// step (docs/schedule.md, "One-sided transfers").
void reservePutLandings(StageBufferAnalysis &buffers,
                        const PutLandingAnalysis &landings) {
  for (Operation *op : buffers.getOps()) {
    const PutLanding *landing = landings.lookup(op);
    if (!landing)
      continue;
    std::optional<unsigned> index = buffers.lookupTransferBuffer(op);
    if (!index)
      continue;
    StageBuffer &buffer = buffers.getBuffers()[*index];
    if (landing->fromPreviousStep) {
      buffer.start = -1;
      buffer.end = buffers.getStepEnd();
    } else {
      buffer.start = std::min(buffer.start, landing->from);
    }
  }
}

/// Writes the buffers of a stage into its IR.
void recordBuffers(StageOp stage, const StageBufferAnalysis &buffers) {
  MLIRContext *context = stage.getContext();
  Builder builder(context);
  RATrainDialect::BuffersAttrHelper buffersAttr(context);
  auto triple = [&](std::optional<unsigned> index) {
    if (!index)
      return SmallVector<int64_t, 3>{-1, 0, 0};
    const StageBuffer &b = buffers.getBuffer(*index);
    return SmallVector<int64_t, 3>{int64_t(*index), b.offset, b.bytes};
  };

  SmallVector<int64_t> args;
  for (BlockArgument arg : stage.getBody().getArguments())
    llvm::append_range(args, triple(buffers.lookupBuffer(arg)));
  RATrainDialect::ArgBuffersAttrHelper(context).setAttr(
      stage, builder.getDenseI64ArrayAttr(args));

  for (Operation *op : buffers.getOps()) {
    if (std::optional<unsigned> transfer = buffers.lookupTransferBuffer(op)) {
      buffersAttr.setAttr(op, builder.getDenseI64ArrayAttr(triple(transfer)));
      continue;
    }
    if (op->getNumResults() == 0)
      continue;
    SmallVector<int64_t> values;
    for (Value result : op->getResults())
      llvm::append_range(values, triple(buffers.lookupBuffer(result)));
    buffersAttr.setAttr(op, builder.getDenseI64ArrayAttr(values));
  }

  SmallVector<NamedAttribute> scratch;
  for (auto [index, buffer] : llvm::enumerate(buffers.getBuffers()))
    if (!buffer.scratchName.empty())
      scratch.push_back(builder.getNamedAttr(
          buffer.scratchName,
          builder.getDenseI64ArrayAttr(
              {int64_t(index), buffer.offset, buffer.bytes})));
  RATrainDialect::ScratchBuffersAttrHelper(context).setAttr(
      stage, builder.getDictionaryAttr(scratch));
}

struct AssignBuffersPass
    : public ratrain::impl::RATrainAssignBuffersBase<AssignBuffersPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto pipelines = llvm::to_vector(module.getOps<PipelineOp>());
    if (pipelines.empty())
      return;
    // The machine gives the capacity and the kernel properties the sizes
    // depend on; an explicit capacity makes it optional.
    int64_t capacityBytes = capacity;
    // A machine with classes of clusters: each stage's ranks' least DDR.
    std::optional<MachineModel> classed;
    MemoryOptions memoryOptions;
    if (capacityBytes <= 0 || !machineFile.empty() ||
        RATrainDialect::MachineAttrHelper(module->getContext())
            .isAttrPresent(module)) {
      FailureOr<MachineModel> machine = loadPassMachine(module, machineFile);
      if (failed(machine))
        return signalPassFailure();
      if (capacityBytes <= 0) {
        capacityBytes = machine->cluster.ddrBytes;
        if (machine->heterogeneous())
          classed = *machine;
      }
      memoryOptions = MemoryOptions::forMachine(*machine);
    }

    std::string report = "pipeline,stage,position,op,live_bytes\n";
    llvm::raw_string_ostream reportStream(report);
    bool failedAny = false;
    for (PipelineOp pipeline : pipelines) {
      FailureOr<ModelOp> model = pipeline.lookupModel();
      if (failed(model))
        return signalPassFailure();
      BufferSizes sizes(*model, pipeline.getPlan(), memoryOptions);
      Builder builder(&getContext());
      RATrainDialect::CapacityBytesAttrHelper(&getContext())
          .setAttr(pipeline, builder.getI64IntegerAttr(capacityBytes));
      // Where one-sided puts may land (from the IR alone: positions and
      // consumers).
      SmallVector<const StageBufferAnalysis *> stageBuffers;
      for (StageOp stage : pipeline.getStages())
        stageBuffers.push_back(&getChildAnalysis<StageBufferAnalysis>(stage));
      PutLandingAnalysis landings(pipeline, stageBuffers);
      for (StageOp stage : pipeline.getStages()) {
        auto &buffers = getChildAnalysis<StageBufferAnalysis>(stage);
        buffers.size(sizes);
        if (landings.isValid())
          reservePutLandings(buffers, landings);
        int64_t arena =
            packStageBuffers(buffers.getBuffers(), buffers.getStepEnd());
        SmallVector<int64_t> live = buffers.computeLiveBytes();
        auto peakIt = std::max_element(live.begin(), live.end());
        int64_t peak = *peakIt;
        int64_t peakPosition = int64_t(peakIt - live.begin()) - 1;

        recordBuffers(stage, buffers);
        MLIRContext *context = &getContext();
        RATrainDialect::PeakBytesAttrHelper(context).setAttr(
            stage, builder.getI64IntegerAttr(peak));
        RATrainDialect::PeakPositionAttrHelper(context).setAttr(
            stage, builder.getI64IntegerAttr(peakPosition));
        RATrainDialect::ArenaBytesAttrHelper(context).setAttr(
            stage, builder.getI64IntegerAttr(arena));

        for (auto [index, bytes] : llvm::enumerate(live)) {
          int64_t position = int64_t(index) - 1;
          reportStream << pipeline.getSymName() << "," << stage.getStage()
                       << "," << position << ","
                       << (position < 0 ? std::string("start")
                                        : buffers.describeOp(position))
                       << "," << bytes << "\n";
        }

        int64_t stageCapacity =
            classed
                ? stageDdrBytes(*classed, pipeline.getPlan(), stage.getStage())
                : capacityBytes;
        if (arena > stageCapacity) {
          failedAny = true;
          reportOverCapacity(stage, buffers, peak, peakPosition, arena,
                             stageCapacity);
        }
      }
    }

    if (!reportFile.empty()) {
      if (reportFile == "-") {
        llvm::outs() << report;
      } else {
        std::error_code error;
        llvm::raw_fd_ostream os(reportFile, error, llvm::sys::fs::OF_Text);
        if (error) {
          module.emitError("cannot write the memory report '")
              << reportFile << "': " << error.message();
          return signalPassFailure();
        }
        os << report;
      }
    }
    if (failedAny)
      signalPassFailure();
  }

  /// The over-capacity error: the stage, its peak position and op, the
  /// bytes of its persistent states, and the largest other buffers live
  /// there.
  static void reportOverCapacity(StageOp stage,
                                 const StageBufferAnalysis &buffers,
                                 int64_t peak, int64_t peakPosition,
                                 int64_t arena, int64_t capacityBytes) {
    int64_t stepEnd = buffers.getStepEnd();
    int64_t persistent = 0;
    SmallVector<unsigned> liveAtPeak;
    for (auto [index, buffer] : llvm::enumerate(buffers.getBuffers())) {
      if (buffer.bytes == 0 || !buffer.liveAt(peakPosition))
        continue;
      if (buffer.isPersistent(stepEnd))
        persistent += buffer.bytes;
      else
        liveAtPeak.push_back(index);
    }
    llvm::stable_sort(liveAtPeak, [&](unsigned a, unsigned b) {
      return buffers.getBuffer(a).bytes > buffers.getBuffer(b).bytes;
    });
    std::string where = peakPosition < 0
                            ? std::string("at the step start")
                            : "at position " + std::to_string(peakPosition) +
                                  " (" + buffers.describeOp(peakPosition) + ")";
    // The schedule action the peak falls in (docs/pipeline-schedules.md).
    if (peakPosition >= 0)
      if (std::optional<schedule::Action> action =
              getEnclosingAction(stage, buffers.getOp(peakPosition)))
        where += " in action " + action->str();
    InFlightDiagnostic diag =
        stage.emitOpError("stage ")
        << stage.getStage() << " needs " << formatBytes(arena)
        << " of DDR but a cluster has " << formatBytes(capacityBytes)
        << "; peak " << formatBytes(peak) << " " << where << ": "
        << formatBytes(persistent) << " of persistent states and scratch, and "
        << liveAtPeak.size() << " other live buffers";
    for (auto [rank, index] :
         llvm::enumerate(ArrayRef(liveAtPeak).take_front(4))) {
      const StageBuffer &buffer = buffers.getBuffer(index);
      diag << (rank ? ", " : ", the largest: ") << buffer.describe() << " "
           << formatBytes(buffer.bytes);
    }
    if (arena > peak)
      diag << "; fragmentation adds " << formatBytes(arena - peak);
    if (peakPosition >= 0)
      diag.attachNote(buffers.getOp(peakPosition)->getLoc())
          << "the peak is at this op";
  }
};

} // namespace
