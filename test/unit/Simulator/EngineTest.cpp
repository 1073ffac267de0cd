//===- EngineTest.cpp - Schedules, sharing, tokens, errors ----------------===//

#include "TestMachine.h"

#include "ratrain/Simulator/Simulator.h"
#include "ratrain/Simulator/Synthetic1F1B.h"

#include "gtest/gtest.h"

using namespace ratrain;
using namespace ratrain::sim;
using namespace ratrain::sim::testing;

namespace {

unsigned comm(CommKind kind) { return static_cast<unsigned>(kind); }
unsigned compute(ComputeKind kind) { return static_cast<unsigned>(kind); }

/// A machine whose links have no latency and 2 B/s, so that a 1-byte message
/// takes exactly 0.5 s.
MachineModel makeHalfSecondMachine() {
  MachineModel machine = makeTestMachine();
  machine.network.intraNode = {2.0, 0.0};
  return machine;
}

/// The 1F1B schedule of 2 stages and 2 micro-batches written out by hand:
/// forward 1 s, backward 2 s per micro-batch, activation and gradient
/// messages of `bytes` bytes over the intra-node link (two-sided under the
/// rendezvous protocol with `rendezvous`, else moving when sent).
SimProgram handWritten1F1B(int64_t bytes, bool rendezvous = false) {
  SimProgram program;
  program.name = "hand 1F1B";
  program.stages.emplace_back("first");
  program.stages.emplace_back("last");
  StageProgram &s0 = program.stages[0];
  StageProgram &s1 = program.stages[1];
  const LinkClass link = LinkClass::IntraNode;
  // Stage 0: F0 F1 B0 B1 (one warm-up forward).
  s0.addCompute(ComputeKind::Forward, 1, 10, "F0");
  s0.addSend(1, bytes, 0, link, "act0", rendezvous);
  s0.addCompute(ComputeKind::Forward, 1, 10, "F1");
  s0.addSend(1, bytes, 2, link, "act1", rendezvous);
  s0.addRecv(1, bytes, 1, "grad0");
  s0.addCompute(ComputeKind::Backward, 2, 20, "B0");
  s0.addRecv(1, bytes, 3, "grad1");
  s0.addCompute(ComputeKind::Backward, 2, 20, "B1");
  // Stage 1: F0 B0 F1 B1.
  s1.addRecv(0, bytes, 0, "act0");
  s1.addCompute(ComputeKind::Forward, 1, 10, "F0");
  s1.addCompute(ComputeKind::Backward, 2, 20, "B0");
  s1.addSend(0, bytes, 1, link, "grad0", rendezvous);
  s1.addRecv(0, bytes, 2, "act1");
  s1.addCompute(ComputeKind::Forward, 1, 10, "F1");
  s1.addCompute(ComputeKind::Backward, 2, 20, "B1");
  s1.addSend(0, bytes, 3, link, "grad1", rendezvous);
  program.tokensPerIteration = 90;
  program.modelFlopsPerIteration = 120;
  return program;
}

/// handWritten1F1B(1, rendezvous) from the synthetic generator.
SimProgram synthetic1F1B(bool rendezvous) {
  Synthetic1F1BConfig config;
  config.stages = 2;
  config.microBatches = 2;
  config.forwardSeconds = 1;
  config.backwardSeconds = 2;
  config.activationBytes = 1;
  config.pipelineLink = LinkClass::IntraNode;
  config.rendezvousMessages = rendezvous;
  return buildSynthetic1F1B(config);
}

TEST(Pipeline, HandComputedTwoStageTwoMicroBatchWithoutCommunicationCost) {
  // Stage 0: F0 [0,1] F1 [1,2] B0 [4,6] B1 [7,9];
  // stage 1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7].
  // Step = (m + p - 1)(F + B) = 9; bubble = (p-1)/(m+p-1) = 1/3.
  MachineModel machine = makeTestMachine();
  machine.network.intraNode.latency = 0;
  SimOptions options;
  options.iterations = 3;
  SimReport report = expectOk(simulate(handWritten1F1B(0), machine, options));
  EXPECT_DOUBLE_EQ(report.firstIterationTime, 9.0);
  EXPECT_DOUBLE_EQ(report.stepTime, 9.0);
  ASSERT_EQ(report.iterationEnd.size(), 3u);
  EXPECT_DOUBLE_EQ(report.iterationEnd[2], 27.0);
  for (const StageReport &stage : report.stageReports) {
    EXPECT_DOUBLE_EQ(stage.totalBusy(), 6.0);
    EXPECT_DOUBLE_EQ(stage.bubbleFraction, 1.0 / 3.0);
    EXPECT_DOUBLE_EQ(stage.totalExposed(), 0.0);
  }
  EXPECT_DOUBLE_EQ(report.tokensPerSecond, 10.0);
  // 120 FLOPs / (9 s * 2 clusters * 100 FLOP/s).
  EXPECT_DOUBLE_EQ(report.mfu, 120.0 / 1800.0);
}

TEST(Pipeline, HandComputedTwoStageTwoMicroBatchWithMessages) {
  // Every message takes 0.5 s. Stage 0: F0 [0,1] F1 [1,2], grad0 arrives at
  // 5 -> B0 [5,7], grad1 at 8 -> B1 [8,10]. Stage 1: act0 at 1.5 -> F0
  // [1.5,2.5] B0 [2.5,4.5], F1 [4.5,5.5] B1 [5.5,7.5]. Step = 9 + 2 * 0.5.
  SimOptions options;
  options.iterations = 3;
  SimReport report =
      expectOk(simulate(handWritten1F1B(1), makeHalfSecondMachine(), options));
  EXPECT_DOUBLE_EQ(report.firstIterationTime, 10.0);
  EXPECT_DOUBLE_EQ(report.stepTime, 10.0);
  // Stage 0 is blocked [2,5] and [7,8]; the last 0.5 s of each is the
  // transfer (exposed p2p), the rest waiting for stage 1's backward (bubble).
  const StageReport &first = report.stageReports[0];
  EXPECT_DOUBLE_EQ(first.exposed[comm(CommKind::P2P)], 1.0);
  EXPECT_DOUBLE_EQ(first.bubbleFraction, 0.3);
  // Stage 1 waits for act0 of the next iteration: sent at 11, arrives 11.5.
  const StageReport &last = report.stageReports[1];
  EXPECT_DOUBLE_EQ(last.exposed[comm(CommKind::P2P)], 0.5);
  EXPECT_DOUBLE_EQ(last.bubbleFraction, 1.0 - 6.0 / 10.0 - 0.05);
}

TEST(Pipeline, StageOfRankFollowsTheRankOrder) {
  SimProgram program;
  program.stages.resize(2);
  program.dataParallel = 3;
  // Stage-major: ranks 0-2 run stage 0, 3-5 stage 1.
  for (int64_t rank = 0; rank < 6; ++rank)
    EXPECT_EQ(program.stageOfRank(rank), rank / 3);
  // Replica-major: the stages alternate.
  program.replicaMajor = true;
  for (int64_t rank = 0; rank < 6; ++rank)
    EXPECT_EQ(program.stageOfRank(rank), rank % 2);
}

TEST(Pipeline, ScaledComputeKeepsTheMessages) {
  // ratrain-sim's step at the measured kernel speed: the program above with
  // every compute task twice as fast (F 0.5 s, B 1 s) and the same 0.5 s
  // messages. Stage 1: act0 at 1 -> F0 [1,1.5] B0 [1.5,2.5], act1 at 1.5 ->
  // F1 [2.5,3] B1 [3,4]; stage 0: F0 [0,0.5] F1 [0.5,1], grad0 at 3 -> B0
  // [3,4], grad1 at 4.5 -> B1 [4.5,5.5]. Step = 4.5 + 2 x 0.5.
  SimProgram program = handWritten1F1B(1);
  program.scaleCompute(0.5);
  SimOptions options;
  options.iterations = 3;
  SimReport report =
      expectOk(simulate(program, makeHalfSecondMachine(), options));
  EXPECT_DOUBLE_EQ(report.stepTime, 5.5);
  for (const StageReport &stage : report.stageReports)
    EXPECT_DOUBLE_EQ(stage.totalBusy(), 3.0);
  EXPECT_DOUBLE_EQ(report.stageReports[0].exposed[comm(CommKind::P2P)], 1.0);
}

TEST(Pipeline, TwoSidedMessagesWaitForTheReceiversRecv) {
  // The same schedule with rendezvous messages: a message's 0.5 s start only
  // once the receiver has reached its recv. act1, sent at 2, starts when
  // stage 1 posts its recv after B0 and the send of grad0 (4.5) and arrives
  // at 5: stage 1 runs F1 [5,6] B1 [6,8] instead of [4.5,7.5], grad1 (sent
  // at 8, posted at 7) arrives at 8.5 and stage 0's B1 ends at 10.5 instead
  // of 10.
  SimOptions options;
  options.iterations = 3;
  SimReport report = expectOk(simulate(handWritten1F1B(1, /*rendezvous=*/true),
                                       makeHalfSecondMachine(), options));
  EXPECT_DOUBLE_EQ(report.firstIterationTime, 10.5);
  EXPECT_DOUBLE_EQ(report.stepTime, 10.5);
  // Stage 1 now waits for both activations in full: 0.5 s each.
  EXPECT_DOUBLE_EQ(report.stageReports[1].exposed[comm(CommKind::P2P)], 1.0);
  EXPECT_DOUBLE_EQ(report.stageReports[0].exposed[comm(CommKind::P2P)], 1.0);

  // The synthetic generator's two-sided messages give the same step.
  report = expectOk(
      simulate(synthetic1F1B(/*rendezvous=*/true), makeHalfSecondMachine()));
  EXPECT_DOUBLE_EQ(report.stepTime, 10.5);
}

/// One node of one physical cluster split into two virtual clusters
/// (virtual_clusters_per_cluster 2), messages without latency.
static MachineModel makeOneSplitClusterMachine() {
  MachineModel machine = makeTestMachine();
  machine.nodes = 1;
  machine.clustersPerNode = 2;
  machine.virtualClustersPerCluster = 2;
  machine.network.intraNode.latency = 0;
  return machine;
}

TEST(SharedCores, VirtualClustersShareTheirPhysicalClusterWorkConserving) {
  // The hand-written 1F1B on two virtual clusters of one physical cluster
  // (virtual_clusters_per_cluster 2): F = 1 s and B = 2 s at the split rate;
  // a stage computing alone gets the whole cluster (twice the split rate),
  // both computing share it. Stage 0: F0 [0, 0.5] alone; F1 and stage 1's F0
  // together [0.5, 1.5]; stage 1's B0 alone [1.5, 2.5]; stage 0's B0 and
  // stage 1's F1 together until F1 ends at 3.5; B0 (1 s left) and stage 1's
  // B1 together until 4.5; B1 (1 s left) alone until 5; stage 0's B1 alone
  // [5, 6]. The step is 6 s, the 12 s of work at the split rate on one
  // cluster, against 9 s with each stage on its own half cluster.
  MachineModel machine = makeOneSplitClusterMachine();
  SimOptions options;
  options.iterations = 3;
  options.recordTrace = true;
  SimReport report = expectOk(simulate(handWritten1F1B(0), machine, options));
  EXPECT_DOUBLE_EQ(report.firstIterationTime, 6.0);
  EXPECT_DOUBLE_EQ(report.stepTime, 6.0);
  // Busy is the wall time of the compute tasks.
  ASSERT_EQ(report.stageReports.size(), 2u);
  EXPECT_DOUBLE_EQ(report.stageReports[0].totalBusy(), 4.5);
  EXPECT_DOUBLE_EQ(report.stageReports[1].totalBusy(), 4.5);
  // The trace shows each task from its start to its shared end.
  bool sawFirstForward = false;
  for (const TraceInterval &interval : report.trace)
    if (interval.stage == 0 && interval.iteration == 0 &&
        interval.lane == Lane::Compute && interval.task == 0) {
      sawFirstForward = true;
      EXPECT_DOUBLE_EQ(interval.start, 0.0);
      EXPECT_DOUBLE_EQ(interval.end, 0.5);
    }
  EXPECT_TRUE(sawFirstForward);

  // Physical clusters enough for every rank: each computes at the whole
  // cluster's rate, twice the split rate (the 9 s step halved).
  machine.clustersPerNode = 4;
  report = expectOk(simulate(handWritten1F1B(0), machine, options));
  EXPECT_DOUBLE_EQ(report.stepTime, 4.5);
}

TEST(SharedCores, APollingProgressThreadTakesItsShareOfTheCores) {
  // Two virtual clusters of one physical cluster: stage 0 computes 2 s at
  // the split rate (1 s with the cluster to itself), then sends; stage 1
  // waits in the recv from the start, so its progress thread polls and takes
  // a quarter of a core (network.progress_core_share): the compute runs at
  // 2 x 1 / 1.25 of the split rate and ends at 1.25 s.
  SimProgram program;
  program.stages.emplace_back("a");
  program.stages.emplace_back("b");
  program.stages[0].addCompute(ComputeKind::Forward, 2.0, 0, "F");
  program.stages[0].addSend(1, 0, 0, LinkClass::IntraNode, "x");
  program.stages[1].addRecv(0, 0, 0, "x");
  MachineModel machine = makeOneSplitClusterMachine();
  SimOptions options;
  options.iterations = 1;
  EXPECT_DOUBLE_EQ(expectOk(simulate(program, machine, options)).stepTime, 1.0);
  machine.network.progressCoreShare = 0.25;
  SimReport report = expectOk(simulate(program, machine, options));
  EXPECT_DOUBLE_EQ(report.stepTime, 1.25);
  // Stage 1 polled for 1.25 s at a quarter of a core; stage 0's send went
  // at once.
  ASSERT_EQ(report.stageReports.size(), 2u);
  EXPECT_DOUBLE_EQ(report.stageReports[1].progressCpu, 0.3125);
  EXPECT_DOUBLE_EQ(report.stageReports[0].progressCpu, 0.0);
  // A core for each rank: the polling takes nothing from the compute.
  machine.clustersPerNode = 4;
  EXPECT_DOUBLE_EQ(expectOk(simulate(program, machine, options)).stepTime, 1.0);
}

TEST(SharedCores, CollectivesTakeCoreTimeWhereTheCoresMoveTheirData) {
  // A 2-member ring all-reduce of 8 B (a reduce-scatter step and an
  // all-gather step of 4 B each, 2 s each on a 2 B/s link) issued before a
  // 1 s compute and waited for after it. Without core copies the compute
  // hides 1 s of the 4 s collective. With network.core_copy_bandwidth 4 B/s
  // and DDR at 8 B/s, the rank's core copies 8 B (2 s) and reduces the 4 B
  // of the reduction step (3 x 4 B of DDR, 1.5 s) before the compute: it
  // ends at 4.5 s, after the collective.
  MachineModel machine = makeTestMachine();
  machine.network.intraNode = {2.0, 0.0};
  machine.cluster.ddrBandwidth = 8.0;
  SimProgram program;
  program.stages.emplace_back("only");
  StageProgram &s = program.stages[0];
  CollectiveSpec spec;
  spec.kind = CollectiveKind::AllReduce;
  spec.bytes = 8;
  spec.groupSize = 2;
  spec.membersPerNode = 2;
  Token token = s.addCollective(spec, "sync");
  s.addCompute(ComputeKind::Forward, 1, 0, "work");
  s.addWait(token);
  SimOptions options;
  options.iterations = 1;
  SimReport plain = expectOk(simulate(program, machine, options));
  EXPECT_DOUBLE_EQ(plain.stepTime, 4.0);
  EXPECT_DOUBLE_EQ(plain.stageReports[0].coreCopy, 0.0);
  machine.network.coreCopyBandwidth = 4.0;
  SimReport copied = expectOk(simulate(program, machine, options));
  EXPECT_DOUBLE_EQ(copied.stepTime, 4.5);
  const StageReport &stage = copied.stageReports[0];
  EXPECT_DOUBLE_EQ(stage.coreCopy, 3.5);
  // The copies are neither kernel time nor idle time.
  EXPECT_DOUBLE_EQ(stage.totalBusy(), 1.0);
  EXPECT_DOUBLE_EQ(stage.idleFraction, 0.0);
  // On a core split into two virtual clusters the copies are core seconds:
  // the lone computing rank runs them at the whole core's rate.
  MachineModel split = makeOneSplitClusterMachine();
  split.network.intraNode = {2.0, 0.0};
  split.cluster.ddrBandwidth = 8.0;
  split.network.coreCopyBandwidth = 4.0;
  SimProgram one;
  one.stages.emplace_back("only");
  Token alone = one.stages[0].addCollective(spec, "sync");
  one.stages[0].addCompute(ComputeKind::Forward, 2, 0, "work");
  one.stages[0].addWait(alone);
  SimReport shared = expectOk(simulate(one, split, options));
  EXPECT_DOUBLE_EQ(shared.stageReports[0].coreCopy, 3.5);
}

/// One node of two clusters with 4 B/s of DDR each when both stream and
/// 6 B/s for one streaming alone (ddr_bandwidth_alone): the node's DDR is
/// 8 B/s.
static MachineModel makeSharedDdrMachine() {
  MachineModel machine = makeTestMachine();
  machine.nodes = 1;
  machine.clustersPerNode = 2;
  machine.cluster.ddrBandwidth = 4;
  machine.cluster.ddrBandwidthAlone = 6;
  return machine;
}

TEST(SharedDdr, MemoryBoundTasksShareTheNodesDdr) {
  // Two stages whose updates (priced at ddr_bandwidth: 1 s each) either
  // overlap or each run while the other stage computes a forward. Together
  // both stream and each gets its share (asks of 6 B/s over 8 B/s of DDR:
  // 4 B/s each), so they take their priced second; alone an update gets
  // 6 B/s and takes 2/3 s.
  auto run = [](bool overlapping, const MachineModel &machine) {
    SimProgram program;
    program.stages.emplace_back("a");
    program.stages.emplace_back("b");
    program.stages[0].addCompute(ComputeKind::Update, 1, 0, "update");
    program.stages[0].addCompute(ComputeKind::Forward, 1, 0, "forward");
    if (overlapping)
      program.stages[1].addCompute(ComputeKind::Update, 1, 0, "update");
    program.stages[1].addCompute(ComputeKind::Forward, 1, 0, "forward");
    if (!overlapping)
      program.stages[1].addCompute(ComputeKind::Update, 1, 0, "update");
    SimOptions options;
    options.iterations = 1;
    return expectOk(simulate(program, machine, options));
  };
  MachineModel machine = makeSharedDdrMachine();
  EXPECT_DOUBLE_EQ(run(true, machine).stepTime, 2.0);
  // Stage a: update [0, 2/3], forward to 5/3; stage b: forward [0, 1],
  // update to 5/3.
  SimReport apart = run(false, machine);
  EXPECT_NEAR(apart.stepTime, 5.0 / 3.0, 1e-12);
  EXPECT_NEAR(apart.stageReports[0].busy[compute(ComputeKind::Update)],
              2.0 / 3.0, 1e-12);
  // Without ddr_bandwidth_alone every cluster has its ddr_bandwidth to
  // itself: each task takes its own seconds.
  machine.cluster.ddrBandwidthAlone = 0;
  EXPECT_DOUBLE_EQ(run(false, machine).stepTime, 2.0);

  // The same node split into 4 virtual clusters (2 B/s of DDR and 3 B/s
  // alone each, tasks priced at the split rate): a computing rank alone on
  // its core runs twice as fast, so the overlapping updates take 1/2 s, the
  // node's 8 B/s between the two cores; an update alone 1/3 s (6 B/s).
  MachineModel split = makeSharedDdrMachine();
  split.clustersPerNode = 4;
  split.virtualClustersPerCluster = 2;
  split.cluster.ddrBandwidth = 2;
  split.cluster.ddrBandwidthAlone = 3;
  EXPECT_DOUBLE_EQ(run(true, split).stepTime, 1.0);
  EXPECT_NEAR(run(false, split).stepTime, 5.0 / 6.0, 1e-12);
}

TEST(SharedDdr, UpdatesRunAtTheOptimizersOwnRates) {
  // The node of makeSharedDdrMachine (8 B/s of DDR, 4 B/s a cluster with
  // both streaming) with an update that streams 12 B/s alone and 2 B/s a
  // cluster with both updating (priced at 2 B/s: 1 s each, 2 B). Its
  // stream asks 12 x 4 / 2 = 24 B/s of the triad's bytes: alone it gets
  // min(1, 8 / 24) of its 12 B/s, 4 B/s, 1/2 s; both at once ask 48 and
  // get 1/6 each: 2 B/s, their priced second. A view cast (priced at
  // ddr_bandwidth x memory_bound) still asks ddr_bandwidth_alone.
  auto run = [](bool overlapping, bool sixteenBit) {
    MachineModel machine = makeSharedDdrMachine();
    machine.cluster.optimizerBandwidth = 2;
    machine.cluster.optimizerBandwidthAlone = 12;
    machine.cluster.optimizerBandwidthF16 = 1;
    machine.cluster.optimizerBandwidthAloneF16 = 1;
    SimProgram program;
    program.sixteenBitGradients = sixteenBit;
    program.stages.emplace_back("a");
    program.stages.emplace_back("b");
    program.stages[0].addCompute(ComputeKind::Update, 1, 0, "update",
                                 /*optimizerStream=*/true);
    program.stages[0].addCompute(ComputeKind::Forward, 1, 0, "forward");
    if (overlapping)
      program.stages[1].addCompute(ComputeKind::Update, 1, 0, "update",
                                   /*optimizerStream=*/true);
    program.stages[1].addCompute(ComputeKind::Forward, 1, 0, "forward");
    if (!overlapping)
      program.stages[1].addCompute(ComputeKind::Update, 1, 0, "update",
                                   /*optimizerStream=*/true);
    SimOptions options;
    options.iterations = 1;
    return expectOk(simulate(program, machine, options));
  };
  EXPECT_DOUBLE_EQ(run(true, false).stepTime, 2.0);
  // Stage a: update [0, 1/2], forward to 3/2; stage b: forward [0, 1],
  // update to 3/2.
  SimReport apart = run(false, false);
  EXPECT_NEAR(apart.stepTime, 1.5, 1e-12);
  EXPECT_NEAR(apart.stageReports[0].busy[compute(ComputeKind::Update)], 0.5,
              1e-12);
  // A 16-bit model's update at its own pair (1 B/s alone and together, asks
  // 4 B/s of the triad's bytes): its priced second alone or together.
  EXPECT_DOUBLE_EQ(run(false, true).stepTime, 2.0);
  EXPECT_DOUBLE_EQ(run(true, true).stepTime, 2.0);
  // An update not priced by the optimizer's rates (the view written on the
  // cores) is a plain memory-bound task: 2/3 s alone, as before.
  MachineModel machine = makeSharedDdrMachine();
  machine.cluster.optimizerBandwidth = 2;
  machine.cluster.optimizerBandwidthAlone = 12;
  SimProgram program;
  program.stages.emplace_back("a");
  program.stages[0].addCompute(ComputeKind::Update, 1, 0, "view write");
  SimOptions options;
  options.iterations = 1;
  EXPECT_NEAR(expectOk(simulate(program, machine, options)).stepTime, 2.0 / 3.0,
              1e-12);
}

TEST(SharedDdr, FlowsThroughTheDdrTakeTheirPart) {
  // One stage on the node of makeSharedDdrMachine: a DMA of 8 B (4 B/s, 2 s)
  // runs while an update priced at 1 s streams; the update asks 6 B/s, the
  // DMA takes 4 of the node's 8 B/s: the asks (10 B/s) are scaled by 0.8
  // and the update gets 4.8 B/s, 5/6 s; a forward of 10 s follows it.
  auto run = [](bool withDma) {
    SimProgram program;
    program.stages.emplace_back("only");
    StageProgram &s = program.stages[0];
    Token dma;
    if (withDma)
      dma = s.addDma(8, 0, "dma");
    s.addCompute(ComputeKind::Update, 1, 0, "update");
    s.addCompute(ComputeKind::Forward, 10, 0, "forward");
    if (withDma)
      s.addWait(dma);
    SimOptions options;
    options.iterations = 1;
    return expectOk(simulate(program, makeSharedDdrMachine(), options));
  };
  EXPECT_NEAR(run(true).stepTime, 10.0 + 5.0 / 6.0, 1e-12);
  EXPECT_NEAR(run(false).stepTime, 10.0 + 2.0 / 3.0, 1e-12);
}

TEST(Pipeline, SyntheticGeneratorReproducesTheHandWrittenSchedule) {
  SimReport report = expectOk(
      simulate(synthetic1F1B(/*rendezvous=*/false), makeHalfSecondMachine()));
  EXPECT_DOUBLE_EQ(report.stepTime, 10.0);
}

TEST(Pipeline, BubbleMatchesTheOneFOneBFormula) {
  // Without communication cost every stage idles (p-1)/(m+p-1) of the step.
  Synthetic1F1BConfig config;
  config.stages = 4;
  config.microBatches = 8;
  config.layersPerStage = 2;
  config.forwardSeconds = 1;
  config.backwardSeconds = 2;
  config.pipelineLink = LinkClass::IntraNode;
  MachineModel machine = makeTestMachine();
  machine.network.intraNode.latency = 0;
  SimReport report = expectOk(simulate(buildSynthetic1F1B(config), machine));
  const double p = 4, m = 8, perMicroBatch = 2 * (1 + 2);
  EXPECT_DOUBLE_EQ(report.stepTime, (m + p - 1) * perMicroBatch);
  for (const StageReport &stage : report.stageReports)
    EXPECT_NEAR(stage.bubbleFraction, (p - 1) / (m + p - 1), 1e-12);
}

TEST(LinkSharing, TwoConcurrentSendsTakeTwiceAsLong) {
  // Two 10-byte sends leave stage 0 at t=0 on one 2 B/s link: each gets
  // 1 B/s and both arrive at 10 s (one alone would take 5 s).
  SimProgram program;
  program.stages.emplace_back("a");
  program.stages.emplace_back("b");
  program.stages[0].addSend(1, 10, 0, LinkClass::IntraNode, "x");
  program.stages[0].addSend(1, 10, 1, LinkClass::IntraNode, "y");
  program.stages[1].addRecv(0, 10, 0, "x");
  program.stages[1].addRecv(0, 10, 1, "y");
  SimOptions options;
  options.iterations = 1;
  options.recordTrace = true;
  SimReport report =
      expectOk(simulate(program, makeHalfSecondMachine(), options));
  EXPECT_DOUBLE_EQ(report.stepTime, 10.0);
  int sends = 0;
  for (const TraceInterval &interval : report.trace)
    if (interval.lane == Lane::Network) {
      EXPECT_DOUBLE_EQ(interval.start, 0.0);
      EXPECT_DOUBLE_EQ(interval.end, 10.0);
      ++sends;
    }
  EXPECT_EQ(sends, 2);
}

TEST(LinkSharing, RatesAreRecomputedWhenATransferStarts) {
  // x (10 B) starts at 0 alone at 2 B/s; y (10 B) joins at t=2 when x has 6 B
  // left: both at 1 B/s, x ends at 8, then y (4 B left) runs alone: ends 10.
  SimProgram program;
  program.stages.emplace_back("a");
  program.stages.emplace_back("b");
  StageProgram &a = program.stages[0];
  a.addSend(1, 10, 0, LinkClass::IntraNode, "x");
  a.addCompute(ComputeKind::Other, 2, 0, "delay");
  a.addSend(1, 10, 1, LinkClass::IntraNode, "y");
  StageProgram &b = program.stages[1];
  b.addRecv(0, 10, 0, "x");
  b.addCompute(ComputeKind::Other, 100, 0, "after x");
  b.addRecv(0, 10, 1, "y");
  SimOptions options;
  options.iterations = 1;
  SimReport report =
      expectOk(simulate(program, makeHalfSecondMachine(), options));
  // b starts its compute when x arrives at 8.
  EXPECT_DOUBLE_EQ(report.stepTime, 108.0);
  EXPECT_DOUBLE_EQ(report.stageReports[0].iterationEnd[0], 10.0);
}

TEST(LinkSharing, ReceiverLinkIsSharedToo) {
  // Stages 0 and 2 both send 10 B to stage 1: different outgoing links, one
  // incoming link at 2 B/s -> both arrive at 10 s.
  SimProgram program;
  for (const char *name : {"a", "b", "c"})
    program.stages.emplace_back(name);
  program.stages[0].addSend(1, 10, 0, LinkClass::IntraNode, "x");
  program.stages[2].addSend(1, 10, 0, LinkClass::IntraNode, "z");
  program.stages[1].addRecv(0, 10, 0, "x");
  program.stages[1].addRecv(2, 10, 0, "z");
  SimOptions options;
  options.iterations = 1;
  SimReport report =
      expectOk(simulate(program, makeHalfSecondMachine(), options));
  EXPECT_DOUBLE_EQ(report.stepTime, 10.0);
  EXPECT_DOUBLE_EQ(report.stageReports[0].iterationEnd[0], 10.0);
}

TEST(LinkSharing, SymmetricReplicasShareTheNodeInjection) {
  // Inter-node link 2 B/s, node injection 4 B/s: with 4 replicas of each
  // stage per node all sending at once, a 10 B message gets 1 B/s.
  MachineModel machine = makeTestMachine();
  machine.network.interNode = {2.0, 0.0};
  machine.network.nodeInjectionBandwidth = 4;
  SimProgram program;
  program.stages.emplace_back("a");
  program.stages.emplace_back("b");
  program.stages[0].addSend(1, 10, 0, LinkClass::InterNode, "x");
  program.stages[1].addRecv(0, 10, 0, "x");
  SimOptions options;
  options.iterations = 1;
  program.stageReplicasPerNode = 4;
  EXPECT_DOUBLE_EQ(expectOk(simulate(program, machine, options)).stepTime,
                   10.0);
  // One replica per node: the cluster's own link limits (5 s).
  program.stageReplicasPerNode = 1;
  EXPECT_DOUBLE_EQ(expectOk(simulate(program, machine, options)).stepTime, 5.0);
}

TEST(Dma, ChannelsShareBandwidthAndOneChannelIsFifo) {
  // 8 B at 4 B/s: 2 s alone.
  auto run = [](uint32_t secondChannel) {
    SimProgram program;
    program.stages.emplace_back("s");
    StageProgram &s = program.stages[0];
    Token first = s.addDma(8, 0, "first");
    s.addDma(8, secondChannel, "second");
    s.addWait(first);
    s.addCompute(ComputeKind::Other, 100, 0, "after first");
    SimOptions options;
    options.iterations = 1;
    return expectOk(simulate(program, makeTestMachine(), options));
  };
  // Same channel: the first runs alone (done at 2), the second queues.
  SimReport fifo = run(0);
  EXPECT_DOUBLE_EQ(fifo.stepTime, 102.0);
  EXPECT_DOUBLE_EQ(fifo.stageReports[0].exposed[comm(CommKind::Dma)], 2.0);
  // Two channels: both at 2 B/s, the first is done at 4.
  SimReport shared = run(1);
  EXPECT_DOUBLE_EQ(shared.stepTime, 104.0);
}

TEST(Offload, TransfersPayALatencyPerChunkAndRunInOrder) {
  // 100 B in chunks of 30 B: 4 chunks of 0.5 s latency + 100 B at 10 B/s.
  MachineModel machine = makeTestMachine();
  machine.offload.bytesPerNode = 1000;
  machine.offload.bandwidth = 10;
  machine.offload.latency = 0.5;
  machine.offload.chunkBytes = 30;
  SimProgram program;
  program.stages.emplace_back("s");
  StageProgram &s = program.stages[0];
  Token reload = s.addOffloadTransfer(100, "reload");
  Token writeBack = s.addOffloadTransfer(100, "write back");
  s.addWait(reload);
  s.addCompute(ComputeKind::Update, 1, 0, "update");
  s.addWait(writeBack);
  SimOptions options;
  options.iterations = 1;
  options.recordTrace = true;
  SimReport report = expectOk(simulate(program, machine, options));
  // The reload ends at 12 (exposed), the update runs [12, 13], the queued
  // write-back ends at 24 (11 s exposed).
  EXPECT_DOUBLE_EQ(report.stepTime, 24.0);
  EXPECT_DOUBLE_EQ(report.stageReports[0].exposed[comm(CommKind::Offload)],
                   23.0);
  int transfers = 0;
  for (const TraceInterval &interval : report.trace)
    if (interval.lane == Lane::Offload)
      ++transfers;
  EXPECT_EQ(transfers, 2);

  machine.offload.bytesPerNode = 0;
  EXPECT_NE(expectError(simulate(program, machine, options))
                .find("has no offload tier"),
            std::string::npos);
}

TEST(Offload, PerLayerPlacementDoubleBuffersReloads) {
  Synthetic1F1BConfig config;
  config.stages = 2;
  config.microBatches = 4;
  config.layersPerStage = 4;
  config.dataParallel = 2;
  config.dpMembersPerNode = 2;
  config.updateSeconds = 0.5;
  config.gradientBytesPerLayer = 10;
  config.pipelineLink = LinkClass::IntraNode;
  MachineModel machine = makeTestMachine();
  machine.offload.bytesPerNode = 1000;
  machine.offload.bandwidth = 10;
  for (SyntheticStage &stage : (config.perStage = config.resolveStages()))
    stage.offloadBytesPerLayer = 20; // 2 s each way
  SimReport whole = expectOk(simulate(buildSynthetic1F1B(config), machine));
  config.placement = LifecyclePlacement::PerLayer;
  SimReport perLayer = expectOk(simulate(buildSynthetic1F1B(config), machine));
  unsigned offload = comm(CommKind::Offload);
  EXPECT_GT(whole.maxExposed[offload], 0.0);
  EXPECT_LT(perLayer.maxExposed[offload], whole.maxExposed[offload]);
  EXPECT_LT(perLayer.stepTime, whole.stepTime);
}

TEST(Tokens, WaitBlocksOnlyForTheNonOverlappedPart) {
  // DMA of 40 B (10 s) overlapped by 4 s of compute: 6 s exposed.
  SimProgram program;
  program.stages.emplace_back("s");
  StageProgram &s = program.stages[0];
  Token token = s.addDma(40, 1, "load");
  s.addCompute(ComputeKind::Forward, 4, 0, "work");
  s.addWait(token);
  s.addCompute(ComputeKind::Forward, 1, 0, "use");
  SimOptions options;
  options.iterations = 1;
  SimReport report = expectOk(simulate(program, makeTestMachine(), options));
  EXPECT_DOUBLE_EQ(report.stepTime, 11.0);
  const StageReport &stage = report.stageReports[0];
  EXPECT_DOUBLE_EQ(stage.exposed[comm(CommKind::Dma)], 6.0);
  EXPECT_DOUBLE_EQ(stage.busy[compute(ComputeKind::Forward)], 5.0);
  EXPECT_DOUBLE_EQ(stage.bubbleFraction, 0.0);
}

TEST(Tokens, WaitOnACompletedTokenCostsNothing) {
  SimProgram program;
  program.stages.emplace_back("s");
  StageProgram &s = program.stages[0];
  Token token = s.addDma(4, 0, "load"); // 1 s
  s.addCompute(ComputeKind::Forward, 3, 0, "work");
  s.addWait(token);
  SimOptions options;
  options.iterations = 1;
  SimReport report = expectOk(simulate(program, makeTestMachine(), options));
  EXPECT_DOUBLE_EQ(report.stepTime, 3.0);
  EXPECT_DOUBLE_EQ(report.stageReports[0].totalExposed(), 0.0);
}

TEST(Tokens, LoopCarriedWaitOverlapsTheNextIteration) {
  // wait(previous collective); compute 1 s; all-reduce of 5 s issued at the
  // end. Iteration 1: compute [0,1], collective [1,6]. Iteration 2 blocks
  // until 6, computes [6,7], collective [7,12]; the step is 6 s with 5 s of
  // exposed all-reduce. The collective of the last iteration counts towards
  // its end.
  MachineModel machine = makeTestMachine();
  machine.network.intraNode = {1.0, 0.0};
  SimProgram program;
  program.stages.emplace_back("s");
  StageProgram &s = program.stages[0];
  s.addWait(Token(), true, "wait last sync");
  s.addCompute(ComputeKind::Forward, 1, 0, "work");
  CollectiveSpec spec;
  spec.kind = CollectiveKind::AllReduce;
  spec.bytes = 5; // 2 steps of 2.5 B at 1 B/s
  spec.groupSize = 2;
  spec.membersPerNode = 2;
  Token token = s.addCollective(spec, "sync");
  s.setWaitTarget(0, token, true);
  SimOptions options;
  options.iterations = 3;
  SimReport report = expectOk(simulate(program, machine, options));
  EXPECT_DOUBLE_EQ(report.firstIterationTime, 6.0);
  EXPECT_DOUBLE_EQ(report.stepTime, 6.0);
  EXPECT_DOUBLE_EQ(report.iterationEnd[2], 18.0);
  EXPECT_DOUBLE_EQ(report.stageReports[0].exposed[comm(CommKind::AllReduce)],
                   5.0);
}

TEST(Tokens, CollectiveSharesTheLinkWithPipelineTraffic) {
  // A 2-member ring all-reduce of 20 B (2 steps of 10 B, 5 s each alone on a
  // 2 B/s link) while a 10 B send uses the same outgoing link: the first step
  // and the send share it (both done at 10), the second step runs alone (5 s).
  SimProgram program;
  program.stages.emplace_back("a");
  program.stages.emplace_back("b");
  CollectiveSpec spec;
  spec.bytes = 20;
  spec.groupSize = 2;
  spec.membersPerNode = 2;
  Token sync = program.stages[0].addCollective(spec, "sync");
  program.stages[0].addSend(1, 10, 0, LinkClass::IntraNode, "act");
  program.stages[0].addWait(sync);
  program.stages[1].addRecv(0, 10, 0, "act");
  SimOptions options;
  options.iterations = 1;
  SimReport report =
      expectOk(simulate(program, makeHalfSecondMachine(), options));
  EXPECT_DOUBLE_EQ(report.stageReports[0].iterationEnd[0], 15.0);
  EXPECT_DOUBLE_EQ(report.stageReports[1].iterationEnd[0], 10.0);
}

TEST(Tokens, PeriodicCollectiveRunsOnlyInItsPhase) {
  // Partial synchronization: a 2-member ring all-reduce of 20 B (2 steps of
  // 10 B, 5 s each on a 2 B/s link) every 2 iterations in phase 1 (the
  // runtime's steps 1, 3, ...: iterations 0 and 2), after 1 s of compute
  // and waited at once; then an all-reduce of every iteration on the same
  // stream, which must not queue behind the skipped one.
  SimProgram program;
  program.stages.emplace_back("s");
  StageProgram &s = program.stages[0];
  CollectiveSpec spec;
  spec.bytes = 20;
  spec.groupSize = 2;
  spec.membersPerNode = 2;
  s.addCompute(ComputeKind::Update, 1, 0, "update");
  Token average = s.addCollective(spec, "average", 0, /*period=*/2,
                                  /*phase=*/1);
  Token every = s.addCollective(spec, "every");
  s.addWait(average);
  s.addWait(every);
  EXPECT_EQ(program.longestPeriod(), 2u);
  SimOptions options;
  options.iterations = 4;
  SimReport report =
      expectOk(simulate(program, makeHalfSecondMachine(), options));
  // Running: 1 + 10 + 10 s; skipped: 1 + 10 s.
  const std::vector<double> &ends = report.stageReports[0].iterationEnd;
  ASSERT_EQ(ends.size(), 4u);
  EXPECT_DOUBLE_EQ(ends[0], 21.0);
  EXPECT_DOUBLE_EQ(ends[1], 32.0);
  EXPECT_DOUBLE_EQ(ends[2], 53.0);
  EXPECT_DOUBLE_EQ(ends[3], 64.0);
  // The steady state (iterations 2..4) is the mean over both phases,
  // (11 + 21 + 11) / 3 s.
  EXPECT_DOUBLE_EQ(report.stepTime, (64.0 - 21.0) / 3);
}

TEST(Errors, RecvWithoutSendIsReportedNotHung) {
  SimProgram program;
  program.stages.emplace_back("producer");
  program.stages.emplace_back("consumer");
  program.stages[0].addCompute(ComputeKind::Forward, 1, 0, "F0");
  program.stages[1].addRecv(0, 8, 42, "act mb0");
  std::string message = expectError(simulate(program, makeTestMachine()));
  EXPECT_NE(message.find("stage 1 'consumer'"), std::string::npos) << message;
  EXPECT_NE(message.find("task 0 (recv 'act mb0')"), std::string::npos)
      << message;
  EXPECT_NE(message.find("no matching send"), std::string::npos) << message;
}

TEST(Errors, CyclicRecvsAreADeadlockNamingEveryBlockedStage) {
  // Each stage receives before it sends.
  SimProgram program;
  program.stages.emplace_back("a");
  program.stages.emplace_back("b");
  program.stages[0].addRecv(1, 4, 0, "from b");
  program.stages[0].addSend(1, 4, 0, LinkClass::IntraNode, "to b");
  program.stages[1].addRecv(0, 4, 0, "from a");
  program.stages[1].addSend(0, 4, 0, LinkClass::IntraNode, "to a");
  std::string message = expectError(simulate(program, makeTestMachine()));
  EXPECT_NE(message.find("deadlock"), std::string::npos) << message;
  EXPECT_NE(message.find("stage 0 'a', task 0 (recv 'from b')"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("stage 1 'b', task 0 (recv 'from a')"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("is never issued"), std::string::npos) << message;
}

TEST(Errors, InvalidWaitsAndGroups) {
  SimProgram forward;
  forward.stages.emplace_back("s");
  forward.stages[0].addWait(Token{1});
  forward.stages[0].addDma(4, 0, "later");
  EXPECT_NE(expectError(simulate(forward, makeTestMachine()))
                .find("issued later in the iteration"),
            std::string::npos);

  SimProgram onCompute;
  onCompute.stages.emplace_back("s");
  onCompute.stages[0].addCompute(ComputeKind::Forward, 1, 0, "F");
  onCompute.stages[0].addWait(Token{0});
  EXPECT_NE(expectError(simulate(onCompute, makeTestMachine()))
                .find("not asynchronous"),
            std::string::npos);

  SimProgram group;
  group.stages.emplace_back("s");
  CollectiveSpec spec;
  spec.groupSize = 6;
  spec.membersPerNode = 4;
  group.stages[0].addCollective(spec, "odd");
  EXPECT_NE(expectError(simulate(group, makeTestMachine()))
                .find("invalid collective group"),
            std::string::npos);

  SimProgram channel;
  channel.stages.emplace_back("s");
  channel.stages[0].addDma(4, 7, "far channel");
  EXPECT_NE(
      expectError(simulate(channel, makeTestMachine())).find("DMA channel 7"),
      std::string::npos);

  SimProgram noLink;
  noLink.stages.emplace_back("a");
  noLink.stages.emplace_back("b");
  noLink.stages[0].addSend(1, 4, 0, LinkClass::InterNode, "x");
  noLink.stages[1].addRecv(0, 4, 0, "x");
  MachineModel machine = makeTestMachine();
  machine.network.interNode.bandwidth = 0;
  EXPECT_NE(
      expectError(simulate(noLink, machine)).find("no inter-node bandwidth"),
      std::string::npos);
}

TEST(Memory, PeakDdrFollowsAllocAndFree) {
  SimProgram program;
  program.stages.emplace_back("s");
  StageProgram &s = program.stages[0];
  s.residentBytes = 900;
  s.addAlloc(60, "a");
  s.addAlloc(50, "b");
  s.addFree(60, "a");
  s.addAlloc(30, "c");
  s.addFree(50, "b");
  s.addFree(30, "c");
  SimReport report = expectOk(simulate(program, makeTestMachine()));
  EXPECT_EQ(report.stageReports[0].peakDdrBytes, 1010);
  EXPECT_TRUE(report.stageReports[0].exceedsDdr); // machine has 1000 B
  EXPECT_EQ(report.maxPeakDdrBytes, 1010);
}

TEST(Memory, ActivationsOfTheFirstStagePeakAtPMicroBatches) {
  // In 1F1B, stage i holds at most p - i micro-batches of activations.
  Synthetic1F1BConfig config;
  config.stages = 4;
  config.microBatches = 8;
  config.layersPerStage = 2;
  config.storedActivationBytesPerLayer = 10;
  config.residentBytes = 100;
  config.pipelineLink = LinkClass::IntraNode;
  SimReport report =
      expectOk(simulate(buildSynthetic1F1B(config), makeTestMachine()));
  for (int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(report.stageReports[i].peakDdrBytes, 100 + (4 - i) * 2 * 10)
        << "stage " << i;
}

TEST(Lifecycle, PerLayerPlacementHidesGradientSync) {
  Synthetic1F1BConfig config;
  config.stages = 4;
  config.microBatches = 8;
  config.layersPerStage = 4;
  config.dataParallel = 4;
  config.dpMembersPerNode = 4;
  config.forwardSeconds = 1;
  config.backwardSeconds = 2;
  config.updateSeconds = 0.5;
  config.gradientBytesPerLayer = 40;
  config.pipelineLink = LinkClass::IntraNode;
  MachineModel machine = makeTestMachine();
  SimReport gpuStyle = expectOk(simulate(buildSynthetic1F1B(config), machine));
  config.placement = LifecyclePlacement::PerLayer;
  SimReport perLayer = expectOk(simulate(buildSynthetic1F1B(config), machine));
  EXPECT_LT(perLayer.stepTime, gpuStyle.stepTime);
  EXPECT_LT(perLayer.maxExposed[comm(CommKind::AllReduce)],
            gpuStyle.maxExposed[comm(CommKind::AllReduce)]);
  // The whole-model sync of 4 layers (160 B over 4 members) is fully exposed.
  CollectiveSpec whole;
  whole.bytes = 160;
  whole.groupSize = 4;
  whole.membersPerNode = 4;
  EXPECT_NEAR(gpuStyle.maxExposed[comm(CommKind::AllReduce)],
              collectiveTime(whole, machine), 1e-9);
}

TEST(Lifecycle, ZeroShardedSyncGathersTheViews) {
  // Per-stage costs with a reduce-scatter sync and a parameter all-gather.
  Synthetic1F1BConfig config;
  config.microBatches = 4;
  config.dataParallel = 2;
  config.dpMembersPerNode = 2;
  config.syncKind = CollectiveKind::ReduceScatter;
  config.pipelineLink = LinkClass::IntraNode;
  for (int64_t s = 0; s < 3; ++s) {
    SyntheticStage stage;
    stage.layers = 2;
    stage.firstLayer = 2 * s;
    stage.gradientBytesPerLayer = 20;
    stage.gatherBytesPerLayer = 10;
    stage.updateSeconds = 0.5;
    stage.extraForwardSeconds = s == 0 || s == 2 ? 0.5 : 0;
    config.perStage.push_back(stage);
  }
  MachineModel machine = makeTestMachine();
  for (LifecyclePlacement placement :
       {LifecyclePlacement::WholeModel, LifecyclePlacement::PerLayer}) {
    config.placement = placement;
    SimProgram program = buildSynthetic1F1B(config);
    ASSERT_EQ(program.stages.size(), 3u);
    SimReport report = expectOk(simulate(program, machine));
    EXPECT_GT(report.maxExposed[comm(CommKind::AllGather)], 0.0);
    size_t gathers = 0;
    for (const Task &task : program.stages[1].getTasks())
      if (task.kind == TaskKind::Collective &&
          task.collective.kind == CollectiveKind::AllGather)
        ++gathers;
    EXPECT_EQ(gathers, placement == LifecyclePlacement::PerLayer ? 2u : 1u);
  }
}

TEST(Determinism, EqualInputsGiveIdenticalRuns) {
  Synthetic1F1BConfig config;
  config.stages = 6;
  config.microBatches = 12;
  config.layersPerStage = 3;
  config.dataParallel = 8;
  config.dpMembersPerNode = 2;
  config.syncAlgorithm = CollectiveAlgorithm::Hierarchical;
  config.activationBytes = 3;
  config.gradientBytesPerLayer = 17;
  config.placement = LifecyclePlacement::PerLayer;
  SimProgram program = buildSynthetic1F1B(config);
  SimOptions options;
  options.recordTrace = true;
  SimReport a = expectOk(simulate(program, makeTestMachine(), options));
  SimReport b = expectOk(simulate(program, makeTestMachine(), options));
  EXPECT_EQ(a.stepTime, b.stepTime);
  EXPECT_EQ(a.events, b.events);
  ASSERT_EQ(a.trace.size(), b.trace.size());
  for (size_t i = 0; i < a.trace.size(); ++i) {
    EXPECT_EQ(a.trace[i].start, b.trace[i].start);
    EXPECT_EQ(a.trace[i].end, b.trace[i].end);
  }
}

TEST(Report, PrintsTheSummaryFields) {
  SimReport report =
      expectOk(simulate(handWritten1F1B(1), makeHalfSecondMachine()));
  std::string text;
  llvm::raw_string_ostream os(text);
  report.print(os);
  for (const char *field :
       {"step-time-s: 10\n", "tokens-per-s: 9.00\n", "mfu-percent: 6.00\n",
        "bubble-max-percent: 35.00\n", "exposed-p2p-s: 1\n",
        "exposed-all-reduce-s: 0\n", "peak-ddr-max-gib: 0.000\n",
        "stage 1: name='last'"})
    EXPECT_NE(text.find(field), std::string::npos) << field << "\n" << text;
  EXPECT_DOUBLE_EQ(stepTimeErrorPercent(10.5, 10.0), 5.0);
}

} // namespace
