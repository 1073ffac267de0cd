//===- ScheduleRandomTest.cpp - Randomized tests of the schedule passes ---===//
//
// Builds models and plans programmatically over many (layers, p, m, dp,
// ZeRO, offload, recompute, policy) combinations, runs expand-1f1b ->
// schedule-lifecycle -> assign-buffers -> verify-schedule, and checks what
// must hold for every schedule: it verifies; each stage runs the 1F1B
// order; no two buffers overlap in both time and address; the recorded
// peak is the maximum of the live bytes, recomputed here from the
// attributes alone. Mutated schedules (a send removed, a wait moved) must
// be rejected by the verifier.
//
//===----------------------------------------------------------------------===//

#include "RATrain/RATrainDialect.h"
#include "RATrain/RATrainOps.h"
#include "ratrain/Analysis/StageBufferAnalysis.h"
#include "ratrain/Target/ImportHFConfig.h"
#include "ratrain/Transforms/Passes.h"
#include "ratrain/Transforms/SchedulePipeline.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

using namespace mlir;
using namespace ratrain;

namespace {

/// A machine of 64 nodes of 4 clusters with plenty of DDR, so every plan
/// fits and data-parallel groups of more than 4 span nodes, and an offload
/// tier streaming in 64 KiB chunks (smaller than most layers' states).
constexpr const char *kMachineYaml = R"(name: test
nodes: 64
clusters_per_node: 4
cluster:
  cores: 4
  ddr_bytes: 1000000000000
  gsm_bytes: 6291456
  am_bytes_per_core: 786432
  ddr_bandwidth: 50e9
  dma_bandwidth: 50e9
  dma_channels: 4
  peak_flops_f16: 10e12
  peak_flops_f32: 5e12
  efficiency:
    gemm: 0.7
    attention_forward: 0.6
    attention_backward: 0.5
    memory_bound: 0.8
network:
  intra_node:
    bandwidth: 50e9
    latency: 2e-6
  inter_node:
    bandwidth: 2e9
    latency: 5e-6
  collective: hierarchical
offload:
  kind: host
  bytes_per_node: 1e12
  bandwidth: 8e9
  latency: 10e-6
  chunk_bytes: 65536
)";

/// One randomly drawn training configuration.
struct Scenario {
  ModelConfig model;
  int64_t pp = 1, dp = 1, microBatchSize = 1, microBatches = 1, zero = 0;
  std::string offload = "none";
  SmallVector<int64_t> stageLayers;
  SmallVector<Recompute> recompute;
  std::string policy;

  std::string describe() const {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "decoders=" << model.numLayers
       << " dtype=" << stringifyDType(model.dtype) << " pp=" << pp
       << " dp=" << dp << " mbs=" << microBatchSize << " m=" << microBatches
       << " zero=" << zero << " offload=" << offload << " policy=" << policy
       << " layers=";
    for (int64_t count : stageLayers)
      os << count << ",";
    os << " recompute=";
    for (Recompute r : recompute)
      os << stringifyRecompute(r) << ",";
    return text;
  }
};

Scenario drawScenario(std::mt19937_64 &rng) {
  auto uniform = [&](int64_t low, int64_t high) {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  };
  Scenario s;
  s.model.name = "random";
  s.model.family = ModelFamily::Llama;
  s.model.numLayers = uniform(1, 10);
  s.model.hidden = 64;
  s.model.numHeads = 4;
  s.model.numKVHeads = uniform(0, 1) ? 4 : 2;
  s.model.ffnHidden = 172;
  s.model.vocab = 128;
  s.model.seqLen = 32;
  s.model.maxPositions = 64;
  const DType dtypes[] = {DType::BF16, DType::F16, DType::F32};
  s.model.dtype = dtypes[uniform(0, 2)];
  s.model.tieEmbeddings = uniform(0, 3) == 0;

  int64_t modelLayers = s.model.numLayers + 2;
  s.pp = uniform(1, std::min<int64_t>(8, modelLayers));
  // A random composition of the model layers into pp non-empty stages.
  SmallVector<int64_t> cuts;
  for (int64_t i = 1; i < modelLayers; ++i)
    cuts.push_back(i);
  std::shuffle(cuts.begin(), cuts.end(), rng);
  cuts.resize(s.pp - 1);
  llvm::sort(cuts);
  int64_t previous = 0;
  for (int64_t cut : cuts) {
    s.stageLayers.push_back(cut - previous);
    previous = cut;
  }
  s.stageLayers.push_back(modelLayers - previous);

  const int64_t dps[] = {1, 2, 3, 4, 8, 16};
  s.dp = dps[uniform(0, 5)];
  s.zero = s.dp > 1 ? uniform(0, 3) : 0;
  s.microBatchSize = uniform(1, 2);
  s.microBatches = uniform(1, 12);
  for (int64_t i = 0; i < s.pp; ++i)
    s.recompute.push_back(static_cast<Recompute>(uniform(0, 2)));
  s.policy = uniform(0, 1) ? "ratrain" : "gpu-style";
  const char *offloads[] = {"none", "none", "optimizer", "master"};
  s.offload = offloads[uniform(0, 3)];
  return s;
}

class ScheduleRandomTest : public ::testing::Test {
protected:
  void SetUp() override {
    context.getOrLoadDialect<RATrainDialect>();
    int fd;
    ASSERT_FALSE(
        llvm::sys::fs::createTemporaryFile("machine", "yaml", fd, machinePath));
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << kMachineYaml;
  }
  void TearDown() override { llvm::sys::fs::remove(machinePath); }

  /// The model module of a scenario with its plan attached.
  OwningOpRef<ModuleOp> buildModule(const Scenario &s) {
    OwningOpRef<ModuleOp> module =
        buildModelModule(s.model, &context, machinePath);
    auto model = *module->getOps<ModelOp>().begin();
    // Parsed from its textual form, which stays stable when the attribute
    // gains defaulted parameters.
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "#ratrain.plan<clusters = " << s.pp * s.dp << ", pp = " << s.pp
       << ", dp = " << s.dp << ", micro_batch_size = " << s.microBatchSize
       << ", micro_batches = " << s.microBatches << ", zero = " << s.zero
       << ", stage_layers = [";
    llvm::interleaveComma(s.stageLayers, os);
    os << "], recompute = [";
    llvm::interleaveComma(s.recompute, os,
                          [&](Recompute r) { os << stringifyRecompute(r); });
    os << "], step_us = 0, peak_bytes = 0";
    if (s.offload != "none")
      os << ", offload = " << s.offload;
    os << ">";
    auto plan = dyn_cast_or_null<PlanAttr>(parseAttribute(text, &context));
    EXPECT_TRUE(plan) << text;
    model.setPlanAttr(plan);
    return module;
  }

  /// Runs the schedule pipeline; returns the diagnostics on failure.
  LogicalResult schedule(ModuleOp module, const std::string &policy,
                         std::string &diagnostics, bool splitBackward = false) {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return success();
    });
    PassManager pm(&context);
    SchedulePipelineOptions options;
    options.policy = policy;
    options.splitBackward = splitBackward;
    buildSchedulePipeline(pm, options);
    return pm.run(module);
  }

  LogicalResult verify(ModuleOp module, std::string &diagnostics) {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      return success();
    });
    PassManager pm(&context);
    pm.addPass(createRATrainVerifySchedule());
    return pm.run(module);
  }

  MLIRContext context;
  llvm::SmallString<128> machinePath;
};

/// A buffer as the attributes describe it.
struct RecordedBuffer {
  int64_t offset = 0, bytes = 0;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
};

/// Recomputes the live ranges of a stage's buffers from the
/// `ratrain.buffers` / `ratrain.arg_buffers` / `ratrain.scratch_buffers`
/// attributes and the documented semantics alone (a buffer lives from the
/// first to the last op that touches a value in it; states and scratch
/// persist; a recv's buffer until the compute of that micro-batch that
/// consumes it, a send's from the compute that produced it), then checks
/// the assignment. Returns the largest sum of live bytes.
int64_t checkStageBuffers(StageOp stage, const std::string &where) {
  Block &body = stage.getBody().front();
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : body) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  int64_t stepEnd = int64_t(ops.size()) - 1;
  std::map<int64_t, RecordedBuffer> buffers;
  auto touch = [&](ArrayRef<int64_t> triple, int64_t at) {
    if (triple[2] == 0)
      return;
    RecordedBuffer &b = buffers[triple[0]];
    if (b.bytes != 0) {
      EXPECT_EQ(b.offset, triple[1]) << where << ": buffer " << triple[0];
      EXPECT_EQ(b.bytes, triple[2]) << where << ": buffer " << triple[0];
    }
    b.offset = triple[1];
    b.bytes = triple[2];
    b.first = std::min(b.first, at);
    b.last = std::max(b.last, at);
  };
  auto args =
      RATrainDialect::ArgBuffersAttrHelper(stage->getContext()).getAttr(stage);
  EXPECT_TRUE(args) << where;
  if (!args)
    return 0;
  auto tripleOf = [&](Value value) -> SmallVector<int64_t, 3> {
    if (auto arg = dyn_cast<BlockArgument>(value))
      return SmallVector<int64_t, 3>(
          args.asArrayRef().slice(3 * arg.getArgNumber(), 3));
    auto result = cast<OpResult>(value);
    auto attr =
        RATrainDialect::BuffersAttrHelper(result.getOwner()->getContext())
            .getAttr(result.getOwner());
    if (!attr)
      return {-1, 0, 0};
    return SmallVector<int64_t, 3>(
        attr.asArrayRef().slice(3 * result.getResultNumber(), 3));
  };
  // Layer states persist over the step (and across steps).
  for (BlockArgument arg : body.getArguments()) {
    touch(tripleOf(arg), -1);
    touch(tripleOf(arg), stepEnd);
  }
  if (auto scratch =
          RATrainDialect::ScratchBuffersAttrHelper(stage->getContext())
              .getAttr(stage))
    for (NamedAttribute entry : scratch) {
      auto triple = cast<DenseI64ArrayAttr>(entry.getValue()).asArrayRef();
      touch(triple, -1);
      touch(triple, stepEnd);
    }
  int64_t firstLayer = stage.getLayers().front();
  int64_t lastLayer = stage.getLayers().back();
  // Pending transfers by (payload, micro-batch).
  std::map<std::pair<int, int64_t>, SmallVector<int64_t, 3>> pendingRecv;
  std::map<std::pair<int, int64_t>, int64_t> producer;
  // Asynchronous readers: a view prefetch reads its master, an offload its
  // state, until waited. States whose offload completed are in the tier.
  DenseMap<Value, Value> asyncSource;
  DenseSet<Value> writtenBack;
  for (auto [at, op] : llvm::enumerate(ops)) {
    int64_t pos = at;
    for (Value operand : op->getOperands())
      if (!isa<YieldOp>(op) || !writtenBack.contains(operand))
        touch(tripleOf(operand), pos);
    for (Value result : op->getResults())
      touch(tripleOf(result), pos);
    if (auto prefetch = dyn_cast<ViewPrefetchOp>(op))
      asyncSource[prefetch.getPending()] = prefetch.getMaster();
    if (auto offload = dyn_cast<OffloadOp>(op))
      asyncSource[offload.getPending()] = offload.getState();
    if (auto wait = dyn_cast<WaitOp>(op)) {
      if (Value source = asyncSource.lookup(wait.getPending())) {
        touch(tripleOf(source), pos);
        if (isa<OffloadOp>(wait.getPending().getDefiningOp()))
          writtenBack.insert(source);
      }
      // A ZeRO-2 gradient shard persists over the step.
      auto sync = dyn_cast<SyncOp>(wait.getPending().getDefiningOp());
      if (sync && sync.getKind() == SyncKind::ReduceScatter &&
          stage->getParentOfType<PipelineOp>().getPlan().getDp() > 1) {
        touch(tripleOf(wait.getValue()), -1);
        touch(tripleOf(wait.getValue()), stepEnd);
      }
    }
    auto attr = RATrainDialect::BuffersAttrHelper(op->getContext()).getAttr(op);
    if (auto recv = dyn_cast<RecvOp>(op)) {
      EXPECT_TRUE(attr) << where;
      touch(attr.asArrayRef(), pos);
      pendingRecv[{int(recv.getPayload()), int64_t(recv.getMicroBatch())}] =
          SmallVector<int64_t, 3>(attr.asArrayRef());
    } else if (auto send = dyn_cast<SendOp>(op)) {
      EXPECT_TRUE(attr) << where;
      touch(attr.asArrayRef(), pos);
      auto key =
          std::make_pair(int(send.getPayload()), int64_t(send.getMicroBatch()));
      if (producer.count(key))
        touch(attr.asArrayRef(), producer[key]);
    } else if (auto forward = dyn_cast<ForwardOp>(op)) {
      int64_t layer = forward.getView().getType().getLayer();
      auto key = std::make_pair(int(Payload::Activation),
                                int64_t(forward.getMicroBatch()));
      if (layer == firstLayer && pendingRecv.count(key)) {
        touch(pendingRecv[key], pos);
        pendingRecv.erase(key);
      }
      if (layer == lastLayer)
        producer[key] = pos;
    } else if (isa<BackwardOp, BackwardInputOp>(op)) {
      // The gradient flows through a fused backward or an input part.
      int64_t layer = *getStateLayer(op->getOperand(0).getType());
      int64_t mb = op->getAttrOfType<IntegerAttr>("micro_batch").getInt();
      auto key = std::make_pair(int(Payload::Gradient), mb);
      if (layer == lastLayer && pendingRecv.count(key)) {
        touch(pendingRecv[key], pos);
        pendingRecv.erase(key);
      }
      if (layer == firstLayer)
        producer[key] = pos;
    }
  }

  // No two buffers share an address while both are live.
  SmallVector<const RecordedBuffer *> list;
  int64_t arena = 0;
  for (auto &[id, b] : buffers) {
    list.push_back(&b);
    arena = std::max(arena, b.offset + b.bytes);
  }
  for (size_t i = 0; i < list.size(); ++i)
    for (size_t j = i + 1; j < list.size(); ++j) {
      const RecordedBuffer &a = *list[i], &b = *list[j];
      bool time = a.first <= b.last && b.first <= a.last;
      bool space =
          a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      EXPECT_FALSE(time && space)
          << where << ": buffers at [" << a.offset << ", " << a.offset + a.bytes
          << ") and [" << b.offset << ", " << b.offset + b.bytes
          << ") overlap while live over [" << a.first << ", " << a.last
          << "] and [" << b.first << ", " << b.last << "]";
    }

  // The largest sum of live bytes over the positions.
  int64_t peak = 0;
  for (int64_t pos = -1; pos <= stepEnd; ++pos) {
    int64_t live = 0;
    for (const RecordedBuffer *b : list)
      if (b->first <= pos && pos <= b->last)
        live += b->bytes;
    peak = std::max(peak, live);
  }
  auto arenaAttr =
      RATrainDialect::ArenaBytesAttrHelper(stage->getContext()).getAttr(stage);
  EXPECT_TRUE(arenaAttr) << where;
  if (arenaAttr) {
    EXPECT_EQ(arenaAttr.getInt(), arena) << where;
    EXPECT_GE(arenaAttr.getInt(), peak) << where;
  }
  return peak;
}

/// Checks the 1F1B shape of a stage: every layer runs m forwards and m
/// backwards (fused, or split: each input part followed at once by its
/// weight part) in micro-batch order, the stage runs min(p - s, m) forwards
/// before its first backward, and (with the lifecycle) one grad_ready,
/// update and view prefetch per layer.
void checkStageProgram(StageOp stage, PlanAttr plan, const std::string &where) {
  int64_t m = plan.getMicroBatches(), p = plan.getPp(), s = stage.getStage();
  std::map<int64_t, int64_t> forwards, backwards;
  int64_t forwardsBeforeBackward = -1, firstLayerForwards = 0;
  int64_t ready = 0, updates = 0, prefetches = 0;
  for (Operation &op : stage.getBody().front()) {
    if (auto forward = dyn_cast<ForwardOp>(op)) {
      int64_t layer = forward.getView().getType().getLayer();
      EXPECT_EQ(int64_t(forward.getMicroBatch()), forwards[layer]) << where;
      ++forwards[layer];
      if (layer == stage.getLayers().front())
        ++firstLayerForwards;
    } else if (auto backward = dyn_cast<BackwardOp>(op)) {
      int64_t layer = backward.getView().getType().getLayer();
      EXPECT_EQ(int64_t(backward.getMicroBatch()), backwards[layer]) << where;
      ++backwards[layer];
      if (forwardsBeforeBackward < 0)
        forwardsBeforeBackward = firstLayerForwards;
    } else if (auto input = dyn_cast<BackwardInputOp>(op)) {
      int64_t layer = input.getView().getType().getLayer();
      EXPECT_EQ(int64_t(input.getMicroBatch()), backwards[layer]) << where;
      // The next compute op is its weight part (lifecycle ops may sit
      // between them).
      Operation *next = input->getNextNode();
      while (next && !isa<ForwardOp, RecomputeOp, BackwardOp, BackwardInputOp,
                          BackwardWeightOp, YieldOp>(next))
        next = next->getNextNode();
      auto weight = dyn_cast_or_null<BackwardWeightOp>(next);
      EXPECT_TRUE(weight && weight.getDeferred() == input.getDeferred())
          << where << ": " << input.describe() << " not followed by its W";
      ++backwards[layer];
      if (forwardsBeforeBackward < 0)
        forwardsBeforeBackward = firstLayerForwards;
    } else if (isa<GradReadyOp>(op)) {
      ++ready;
    } else if (isa<UpdateOp>(op)) {
      ++updates;
    } else if (isa<ViewPrefetchOp>(op)) {
      ++prefetches;
    }
  }
  for (int64_t layer : stage.getLayers()) {
    EXPECT_EQ(forwards[layer], m) << where << ": layer " << layer;
    EXPECT_EQ(backwards[layer], m) << where << ": layer " << layer;
  }
  EXPECT_EQ(forwardsBeforeBackward, std::min(p - s, m)) << where;
  EXPECT_EQ(ready, stage.getNumLayers()) << where;
  EXPECT_EQ(updates, stage.getNumLayers()) << where;
  EXPECT_EQ(prefetches, stage.getNumLayers()) << where;
  if (plan.getZero() < 3)
    return;
  // ZeRO-3: every compute reads a waited all-gather of the step's view
  // shard, and at most two gathered views are live at once.
  StageBufferAnalysis buffers(stage);
  for (Operation &op : stage.getBody().front()) {
    Value view;
    if (auto forward = dyn_cast<ForwardOp>(op))
      view = forward.getView();
    else if (auto recompute = dyn_cast<RecomputeOp>(op))
      view = recompute.getView();
    else if (auto backward = dyn_cast<BackwardOp>(op))
      view = backward.getView();
    else if (auto input = dyn_cast<BackwardInputOp>(op))
      view = input.getView();
    else if (auto weight = dyn_cast<BackwardWeightOp>(op))
      view = weight.getView();
    else
      continue;
    auto wait = view.getDefiningOp<WaitOp>();
    auto gather = wait ? wait.getPending().getDefiningOp<SyncOp>() : SyncOp();
    EXPECT_TRUE(gather && gather.getKind() == SyncKind::AllGather &&
                isa<BlockArgument>(gather.getState()))
        << where << ": " << cast<ScheduleOpInterface>(op).describe()
        << " does not read a gather of the view shard";
  }
  for (int64_t position = 0; position <= buffers.getStepEnd(); ++position) {
    int64_t gathered =
        llvm::count_if(buffers.getBuffers(), [&](const StageBuffer &buffer) {
          return buffer.kind == BufferKind::GatheredView &&
                 buffer.liveAt(position);
        });
    EXPECT_LE(gathered, 2) << where << ": at " << buffers.describeOp(position);
  }
}

TEST_F(ScheduleRandomTest, EverySchedulePassesTheVerifierAndPacksBuffers) {
  std::mt19937_64 rng(20260522);
  constexpr int kScenarios = 300;
  int ratrainRuns = 0, gpuRuns = 0;
  for (int i = 0; i < kScenarios; ++i) {
    Scenario s = drawScenario(rng);
    std::string where =
        "scenario " + std::to_string(i) + " (" + s.describe() + ")";
    OwningOpRef<ModuleOp> module = buildModule(s);
    std::string diagnostics;
    ASSERT_TRUE(succeeded(schedule(*module, s.policy, diagnostics)))
        << where << ":\n"
        << diagnostics;
    (s.policy == "ratrain" ? ratrainRuns : gpuRuns)++;

    auto pipelines = llvm::to_vector(module->getOps<PipelineOp>());
    ASSERT_EQ(pipelines.size(), 1u) << where;
    PipelineOp pipeline = pipelines.front();
    ASSERT_TRUE(pipeline.getPolicy().has_value()) << where;
    EXPECT_EQ(*pipeline.getPolicy(), s.policy == "ratrain"
                                         ? SchedulePolicy::RATrain
                                         : SchedulePolicy::GpuStyle)
        << where;
    for (StageOp stage : pipeline.getStages()) {
      std::string at = where + " stage " + std::to_string(stage.getStage());
      checkStageProgram(stage, pipeline.getPlan(), at);
      // Offload: every layer reloads and writes back each offloaded state
      // (FP32 models keep their master, which is the view).
      int64_t offloaded =
          s.offload == "none"
              ? 0
              : (s.offload == "master" && s.model.dtype != DType::F32 ? 2 : 1);
      int64_t reloads = 0, writeBacks = 0;
      for (Operation &op : stage.getBody().front()) {
        reloads += isa<ReloadOp>(op);
        writeBacks += isa<OffloadOp>(op);
      }
      EXPECT_EQ(reloads, offloaded * stage.getNumLayers()) << at;
      EXPECT_EQ(writeBacks, offloaded * stage.getNumLayers()) << at;
      int64_t peak = checkStageBuffers(stage, at);
      auto recorded = RATrainDialect::PeakBytesAttrHelper(stage->getContext())
                          .getAttr(stage);
      ASSERT_TRUE(recorded) << at;
      EXPECT_EQ(recorded.getInt(), peak) << at;
    }
    if (HasFailure())
      return;
  }
  EXPECT_GT(ratrainRuns, 0);
  EXPECT_GT(gpuRuns, 0);
}

TEST_F(ScheduleRandomTest, EverySplitBackwardSchedulePassesTheVerifier) {
  // The same scenarios with every backward split into its input and weight
  // parts: the schedules verify, keep the 1F1B shape, and pack the deferred
  // buffers (live from each I to its W) without overlap.
  std::mt19937_64 rng(20261124);
  constexpr int kScenarios = 100;
  for (int i = 0; i < kScenarios; ++i) {
    Scenario s = drawScenario(rng);
    std::string where =
        "split scenario " + std::to_string(i) + " (" + s.describe() + ")";
    OwningOpRef<ModuleOp> module = buildModule(s);
    std::string diagnostics;
    ASSERT_TRUE(succeeded(
        schedule(*module, s.policy, diagnostics, /*splitBackward=*/true)))
        << where << ":\n"
        << diagnostics;
    PipelineOp pipeline = *module->getOps<PipelineOp>().begin();
    for (StageOp stage : pipeline.getStages()) {
      std::string at = where + " stage " + std::to_string(stage.getStage());
      checkStageProgram(stage, pipeline.getPlan(), at);
      EXPECT_TRUE(llvm::none_of(stage.getBody().front(), [](Operation &op) {
        return isa<BackwardOp>(op);
      })) << at;
      int64_t peak = checkStageBuffers(stage, at);
      auto recorded = RATrainDialect::PeakBytesAttrHelper(stage->getContext())
                          .getAttr(stage);
      ASSERT_TRUE(recorded) << at;
      EXPECT_EQ(recorded.getInt(), peak) << at;
    }
    if (HasFailure())
      return;
  }
}

TEST_F(ScheduleRandomTest, VerifierRejectsARemovedSend) {
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int i = 0; i < 100 && checked < 20; ++i) {
    Scenario s = drawScenario(rng);
    if (s.pp < 2)
      continue;
    OwningOpRef<ModuleOp> module = buildModule(s);
    std::string diagnostics;
    ASSERT_TRUE(succeeded(schedule(*module, s.policy, diagnostics)))
        << diagnostics;
    SmallVector<SendOp> sends;
    module->walk([&](SendOp send) { sends.push_back(send); });
    ASSERT_FALSE(sends.empty());
    SendOp victim =
        sends[std::uniform_int_distribution<size_t>(0, sends.size() - 1)(rng)];
    victim->erase();
    diagnostics.clear();
    EXPECT_TRUE(failed(verify(*module, diagnostics))) << s.describe();
    EXPECT_NE(diagnostics.find("deadlocks"), std::string::npos)
        << s.describe() << "\n"
        << diagnostics;
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

TEST_F(ScheduleRandomTest, VerifierRejectsAnUpdateBeforeItsGradientIsReady) {
  std::mt19937_64 rng(11);
  int checked = 0;
  for (int i = 0; i < 100 && checked < 20; ++i) {
    Scenario s = drawScenario(rng);
    if (s.microBatches < 2)
      continue;
    OwningOpRef<ModuleOp> module = buildModule(s);
    std::string diagnostics;
    ASSERT_TRUE(succeeded(schedule(*module, s.policy, diagnostics)))
        << diagnostics;
    // Mark a layer's gradient ready after its first micro-batch: the
    // grad_ready takes the first backward's partial gradient.
    GradReadyOp ready;
    module->walk([&](GradReadyOp op) {
      if (!ready)
        ready = op;
    });
    ASSERT_TRUE(ready);
    int64_t layer = ready.getGrad().getType().getLayer();
    BackwardOp first;
    module->walk([&](BackwardOp op) {
      if (!first && op.getGrad().getType().getLayer() == layer &&
          op->getParentOp() == ready->getParentOp())
        first = op;
    });
    ASSERT_TRUE(first);
    ready.getGradMutable().assign(first.getGrad());
    diagnostics.clear();
    EXPECT_TRUE(failed(verify(*module, diagnostics))) << s.describe();
    EXPECT_NE(diagnostics.find("use-before-ready"), std::string::npos)
        << s.describe() << "\n"
        << diagnostics;
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

TEST_F(ScheduleRandomTest, VerifierRejectsAnUpdateOnAnOffloadedState) {
  std::mt19937_64 rng(13);
  int checked = 0;
  for (int i = 0; i < 200 && checked < 20; ++i) {
    Scenario s = drawScenario(rng);
    if (s.offload == "none")
      continue;
    OwningOpRef<ModuleOp> module = buildModule(s);
    std::string diagnostics;
    ASSERT_TRUE(succeeded(schedule(*module, s.policy, diagnostics)))
        << s.describe() << "\n"
        << diagnostics;
    // The update takes the optimizer state of the step start, which is in
    // the tier, instead of its reloaded copy.
    UpdateOp update;
    module->walk([&](UpdateOp op) {
      if (!update)
        update = op;
    });
    ASSERT_TRUE(update) << s.describe();
    auto stage = update->getParentOfType<StageOp>();
    int64_t layer = update.getGrad().getType().getLayer();
    update.getOptStateMutable().assign(stage.getOptStateArg(layer));
    diagnostics.clear();
    EXPECT_TRUE(failed(verify(*module, diagnostics))) << s.describe();
    EXPECT_NE(diagnostics.find("update-on-offloaded-state"), std::string::npos)
        << s.describe() << "\n"
        << diagnostics;
    ++checked;
  }
  EXPECT_EQ(checked, 20);
}

} // namespace
