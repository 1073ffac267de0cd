//===- EmittedProgram.cpp - Memory, communication, checkpoints, main ------===//
//
// The non-compute helpers of EmittedProgram.h: arena buffers, parameter
// initialization, asynchronous operations, checkpoint registration, and
// runProgram(), the main() of every emitted program.
//
//===----------------------------------------------------------------------===//

#include "ratrain/runtime/EmittedProgram.h"
#include "ratrain/runtime/EmittedProgramStaging.h"

#include "ratrain/kernels/Kernels.h"
#include "ratrain/runtime/Error.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace ratrain::rt::emit {
namespace k = ratrain::kernels;

//===--- memory -----------------------------------------------------------===//
Tensor ddr(Runtime &r, uint64_t offset, uint64_t bytes, ElemType type) {
  return {r.ddr().buffer(offset, bytes), type};
}
Tensor gsm(Runtime &r, uint64_t offset, uint64_t bytes, ElemType type) {
  return {r.gsm().buffer(offset, bytes), type};
}
Tensor am(Runtime &r, uint64_t offset, uint64_t bytes, ElemType type) {
  return {r.amBuffer(0, offset, bytes), type};
}
Tensor view(const Tensor &source, uint64_t byteOffset, uint64_t bytes,
            ElemType type) {
  return {source.buf.slice(byteOffset, bytes), type};
}

Tensor groupSlot(Runtime &r, Group group, const Tensor &source, uint64_t bytes,
                 ElemType type) {
  const int size = r.groupSize(group), rank = r.groupRank(group);
  if (source.buf.bytes != uint64_t(size) * bytes)
    fatal(llvm::formatv("group slot: the source holds {0} bytes, not {1} "
                        "blocks of {2} (one per rank of the group)",
                        source.buf.bytes, size, bytes));
  // AdamW updates block shardIndex() of a layer; the all-gather puts this
  // rank's block at its group index: the two must be the same block.
  if (group == Group::Data && rank != r.shardIndex())
    fatal(llvm::formatv("group slot: data-parallel rank {0} owns ZeRO shard "
                        "{1}, not the block at its index (partitioned "
                        "shards cannot be gathered in place)",
                        rank, r.shardIndex()));
  return {source.buf.slice(uint64_t(rank) * bytes, bytes), type};
}

//===--- prologue ---------------------------------------------------------===//
void initParam(const Tensor &t, InitKind kind, const char *param, double std,
               uint64_t elementOffset) {
  rt::initParam(t.buf, t.type, kind, param, std, elementOffset);
}

ShardRange intersectShard(uint64_t begin, uint64_t end, uint64_t tensorOffset,
                          uint64_t numel) {
  return {std::max(begin, tensorOffset), std::min(end, tensorOffset + numel)};
}

void initShardTensor(Runtime &r, const Tensor &shard, const char *name,
                     uint64_t tensorOffset, uint64_t numel, InitKind kind,
                     double std, uint64_t shardElements, uint64_t pieceOffset) {
  uint64_t begin = uint64_t(r.shardIndex()) * shardElements + pieceOffset;
  ShardRange range =
      intersectShard(begin, begin + shard.numel(), tensorOffset, numel);
  if (range.empty())
    return;
  uint64_t bytes = getElemBytes(shard.type);
  rt::initParam(shard.buf.slice((range.lo - begin) * bytes,
                                (range.hi - range.lo) * bytes),
                shard.type, kind, name, std, range.lo - tensorOffset);
}

void initShard(Runtime &r, const Tensor &shard, InitKind kind,
               const char *param, double std, uint64_t shardElements,
               uint64_t pieceOffset) {
  rt::initParam(shard.buf, shard.type, kind, param, std,
                uint64_t(r.shardIndex()) * shardElements + pieceOffset);
}

//===--- asynchronous operations ------------------------------------------===//
namespace {
Buffer onCore(Runtime &r, const Tensor &t, int core) {
  if (t.buf.space != MemorySpace::AM || core <= 0)
    return t.buf;
  return r.amBuffer(core, t.buf.offset, t.buf.bytes);
}
} // namespace

Token dma(Runtime &r, const Tensor &src, const Tensor &dst, int core,
          int channel) {
  return r.dma(onCore(r, dst, core), onCore(r, src, core), channel);
}
Token allReduce(Runtime &r, Group g, const Tensor &src, const Tensor &dst,
                ReduceOp op, CollectiveAlgorithm algorithm) {
  return r.allReduce(g, src.buf, dst.buf, src.type, op, algorithm);
}
Token periodicAllReduce(Runtime &r, Session &s, Group g, const Tensor &src,
                        const Tensor &dst, ReduceOp op,
                        CollectiveAlgorithm algorithm, int64_t period,
                        int64_t phase) {
  if (period < 1 || phase < 0 || phase >= period)
    fatal(llvm::formatv("periodic all-reduce: phase {0} of period {1} (the "
                        "phase must be 0 to period - 1)",
                        phase, period));
  if (s.evaluating() || int64_t(s.step() % uint64_t(period)) != phase)
    return Token{};
  return r.allReduce(g, src.buf, dst.buf, src.type, op, algorithm);
}
Token reduceScatter(Runtime &r, Group g, const Tensor &src, const Tensor &dst,
                    ReduceOp op, CollectiveAlgorithm algorithm, WireType wire) {
  return r.reduceScatter(g, src.buf, dst.buf, src.type, op, algorithm, wire);
}
Token reduceScatterLeavingOwn(Runtime &r, Group g, const Tensor &src,
                              const Tensor &dst, ReduceOp op,
                              CollectiveAlgorithm algorithm) {
  return r.reduceScatter(g, src.buf, dst.buf, src.type, op, algorithm,
                         WireType::Native, /*leaveOwn=*/true);
}
Token allGather(Runtime &r, Group g, const Tensor &src, const Tensor &dst,
                CollectiveAlgorithm algorithm, WireType wire) {
  if (wire != WireType::Native)
    return r.allGather(g, src.buf, dst.buf, src.type, algorithm, wire);
  return r.allGather(g, src.buf, dst.buf, algorithm);
}
Token broadcast(Runtime &r, Group g, const Tensor &t, int root) {
  return r.broadcast(g, t.buf, root);
}
Token send(Runtime &r, Group g, int peer, int tag, const Tensor &t) {
  return r.send(g, peer, tag, t.buf);
}
Token recv(Runtime &r, Group g, int peer, int tag, const Tensor &t) {
  return r.recv(g, peer, tag, t.buf);
}
Token put(Runtime &r, Group g, int peer, int tag, const Tensor &t,
          int64_t targetOffset) {
  if (g != Group::Pipeline || targetOffset < 0)
    fatal(llvm::formatv("one-sided put to rank {0} with tag {1}: puts go to "
                        "the pipeline group at a non-negative offset",
                        peer, tag));
  return r.putToStage(peer, tag, t.buf, uint64_t(targetOffset));
}
Token arrival(Runtime &r, Group g, int peer, int tag, const Tensor &t) {
  if (g != Group::Pipeline)
    fatal(llvm::formatv("one-sided receive from rank {0} with tag {1}: puts "
                        "arrive on the pipeline group only",
                        peer, tag));
  return r.arrivalFromStage(peer, tag, t.buf);
}
void barrier(Runtime &r, Group g) {
  Token token = r.barrier(g);
  StepTimers::Scope timed(r.stepTimers(), StepTimers::Sum::Wait);
  r.wait(token);
}
Token offload(Runtime &r, const Tensor &t, StorageTier tier, const char *key) {
  return r.offload(t.buf, tier, key);
}
Token reload(Runtime &r, const Tensor &t, StorageTier tier, const char *key) {
  return r.reload(t.buf, tier, key);
}
Tensor offloaded(Runtime &r, Session &s, const Tensor &window, StorageTier tier,
                 const char *key, uint64_t byteOffset, uint64_t bytes) {
  // A storage-tier state has a host copy only when checkpoints or
  // --init-from need one (Runtime::stageOffloadedStates): otherwise it lives
  // in its file alone.
  if (tier == StorageTier::Storage && s.options().checkpointDir.empty() &&
      s.options().initFrom.empty())
    return window;
  return Tensor{r.offloadedCopy(tier, key).slice(
                    byteOffset, bytes ? bytes : window.buf.bytes),
                window.type};
}
void waitAll(Runtime &r, std::initializer_list<Token> tokens) {
  if (!r.tracer().recording()) {
    StepTimers::Scope timed(r.stepTimers(), StepTimers::Sum::Wait);
    r.waitAll(tokens);
    return;
  }
  // Traced: the wait is named after the first operation still in flight
  // (none: it costs only the check, and is not recorded).
  const char *what = nullptr;
  for (Token token : tokens)
    if ((what = r.tokenPool().pendingWhat(token)))
      break;
  std::string pending = what ? what : "";
  StepTimers::Clock::time_point start = StepTimers::Clock::now();
  r.waitAll(tokens);
  StepTimers::Clock::time_point end = StepTimers::Clock::now();
  r.stepTimers().addWait(end - start);
  if (!pending.empty())
    r.tracer().wait(pending, start, end);
}

void traceBegin(Runtime &r, const char *label, TracePhase phase) {
  r.beginEmulatedSpan();
  if (r.tracer().recording())
    r.tracer().beginSpan(label, phase);
}

void traceEnd(Runtime &r) {
  // The emulated slowdown belongs to the span (the trace shows it).
  r.endEmulatedSpan();
  if (r.tracer().recording())
    r.tracer().endSpan();
}

//===--- session ----------------------------------------------------------===//
namespace {
/// 16-bit parameter views to re-derive from their masters after a resume.
struct ViewOfMaster {
  Buffer master;
  Tensor view;
};
std::vector<ViewOfMaster> &viewsOfMasters() {
  static std::vector<ViewOfMaster> views;
  return views;
}
} // namespace

void addParam(Session &s, const char *name, std::vector<int64_t> shape,
              const Tensor &master, const Tensor &m, const Tensor &v,
              const Tensor &view) {
  ParamSlot slot;
  slot.name = name;
  slot.shape = std::move(shape);
  slot.master = master.buf;
  slot.expAvg = m.buf;
  slot.expAvgSq = v.buf;
  if (isHalf(view.type)) {
    slot.view = view.buf;
    slot.viewType = view.type;
    viewsOfMasters().push_back({master.buf, view});
  }
  s.addParam(slot);
}

void addShardParam(Session &s, Runtime &r, const char *name,
                   std::vector<int64_t> shape, uint64_t tensorOffset,
                   uint64_t numel, uint64_t shardElements, const Tensor &master,
                   const Tensor &m, const Tensor &v, const Tensor &view) {
  uint64_t begin = uint64_t(r.shardIndex()) * shardElements;
  ShardRange range =
      intersectShard(begin, begin + shardElements, tensorOffset, numel);
  if (range.empty()) // None of the tensor is in this rank's shard.
    range.lo = range.hi = begin;
  ParamSlot slot;
  slot.name = name;
  slot.shape = std::move(shape);
  slot.zeroShard = true;
  slot.shardOffset = range.empty() ? 0 : range.lo - tensorOffset;
  slot.shardElements = range.hi - range.lo;
  auto piece = [&](const Tensor &t) {
    return t.buf.slice((range.lo - begin) * 4, (range.hi - range.lo) * 4);
  };
  slot.master = piece(master);
  slot.expAvg = piece(m);
  slot.expAvgSq = piece(v);
  slot.view = view.buf;
  slot.viewType = view.type;
  s.addParam(slot);
}

uint64_t start(Session &s) {
  uint64_t first = s.start();
  // Loaded masters (resume, --init-from): the 16-bit views from them.
  if (s.options().resume || !s.options().initFrom.empty())
    for (const ViewOfMaster &p : viewsOfMasters())
      check(k::toHalf(half(p.view.type), int64_t(p.view.numel()),
                      p.master.as<float>(), p.view.buf.as<uint16_t>()),
            "toHalf");
  s.saveInitialCheckpoint();
  return first;
}
void loadBatch(Session &s, BatchField field, const Tensor &t,
               int64_t microBatch) {
  s.loadBatch(field, t.buf, microBatch);
}
void reportLoss(Session &s, const Tensor &t, int64_t microBatch) {
  s.reportLoss(t.buf, microBatch);
}

//===--- the program ------------------------------------------------------===//
namespace {
/// RATRAIN_COUNTERS=<file>: rank 0's collective counters (runProgram).
void writeCounters(Runtime &rt) {
  const char *path = std::getenv("RATRAIN_COUNTERS");
  if (!path || !*path || rt.rank() != 0)
    return;
  static const char *kinds[] = {"all_reduce", "reduce_scatter", "all_gather"};
  CollectiveCounters native = rt.collectiveCounters();
  WireCounters wire = rt.quantizedCounters();
  uint64_t perLevel[kMaxLevels] = {};
  std::string text;
  llvm::raw_string_ostream os(text);
  for (unsigned k = 0; k < kNumCollectiveKinds; ++k)
    for (unsigned a = 0; a < kNumAlgorithms; ++a)
      for (unsigned l = 0; l < kMaxLevels; ++l)
        if (uint64_t bytes = native.bytes[k][a][l]) {
          os << "native " << kinds[k] << " "
             << stringifyCollectiveAlgorithm(CollectiveAlgorithm(a)) << " " << l
             << " " << bytes << "\n";
          perLevel[l] += bytes;
        }
  for (unsigned k = 0; k < kNumCollectiveKinds; ++k)
    for (unsigned w = 0; w < 2; ++w)
      for (unsigned l = 0; l < kMaxWireLevels && l < kMaxLevels; ++l)
        if (uint64_t bytes = wire.bytes[k][w][l]) {
          os << "wire " << kinds[k] << " " << (w ? "int4" : "int8") << " " << l
             << " " << bytes << "\n";
          perLevel[l] += bytes;
        }
  for (unsigned l = 0; l < unsigned(rt.numLevels()) && l < kMaxLevels; ++l)
    os << "level " << l << " " << perLevel[l] << "\n";
  std::FILE *file = std::fopen(path, "w");
  if (!file || std::fwrite(text.data(), 1, text.size(), file) != text.size() ||
      std::fclose(file) != 0)
    fatal(llvm::formatv("cannot write the collective counters to '{0}' "
                        "(RATRAIN_COUNTERS)",
                        path));
}
} // namespace

/// An emitted program's --help: what it was compiled for and its flags.
/// Printed before MPI starts, so it works without mpirun and whatever the
/// rank count (under mpirun only the first rank prints).
static void printHelp(const char *argv0, const ProgramDescription &program) {
  for (const char *var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char *rank = std::getenv(var); rank && std::atoi(rank) != 0)
      return;
  int64_t ranks = program.pp * program.dp;
  std::printf("usage: mpirun -np %lld %s --data FILE --steps N [flags]\n\n",
              (long long)ranks, argv0);
  std::printf("A training program compiled by RATrain");
  if (program.model)
    std::printf(" for %s", program.model->name);
  std::printf(": pp %lld x dp %lld = %lld ranks, %lld micro-batch%s of %lld "
              "x %lld tokens a step.\n\nflags:\n%s",
              (long long)program.pp, (long long)program.dp, (long long)ranks,
              (long long)program.microBatches,
              program.microBatches == 1 ? "" : "es",
              (long long)program.microBatch, (long long)program.seqLen,
              SessionOptions::flagsHelp());
}

int runProgram(int argc, char **argv, const ProgramDescription &program) {
  if (SessionOptions::wantsHelp(argc, argv)) {
    printHelp(argc > 0 ? argv[0] : "program", program);
    return 0;
  }
  RuntimeOptions options;
  options.pp = program.pp;
  options.dp = program.dp;
  options.ddrBytes = program.ddrBytes;
  options.gsmBytes = program.gsmBytes;
  options.amBytes = program.amBytes;
  options.cores = program.cores;
  options.dmaChannels = program.dmaChannels;
  options.arenaAlignment = program.arenaAlignment;
  options.partitionedShards = program.partitionedShards;
  options.oneSidedPipeline = program.oneSidedTransfers;
  if (program.replicaMajor)
    options.rankOrder = RankOrder::ReplicaMajor;
  options.offloadHostCacheBytes = program.offloadHostCacheBytes;
  Runtime rt(argc, argv, options);
  // A rank is one cluster: its kernels run on the cluster's cores, not on
  // every core of the host (Halide's default), which the other ranks of the
  // node compute on too. HL_NUM_THREADS, when set, still decides.
  if (!std::getenv("HL_NUM_THREADS"))
    k::setNumThreads(int(program.cores));
  // The bf16 product path is chosen once, before the first kernel; an
  // invalid RATRAIN_BF16_PRODUCTS stops the job here.
  if (const char *value = std::getenv("RATRAIN_BF16_PRODUCTS"))
    if (!k::parseBf16Products(value))
      fatal(llvm::formatv("RATRAIN_BF16_PRODUCTS={0}: {1}", value,
                          k::kBf16ProductsExpected));
  (void)k::bf16Products();
  // Uneven shares and classes of clusters follow the compiled rank order:
  // RATRAIN_RANK_ORDER may not change it under them.
  RankOrder compiled =
      program.replicaMajor ? RankOrder::ReplicaMajor : RankOrder::StageMajor;
  if ((program.replicaMicroBatches || program.rankSlowdown) &&
      rt.options().rankOrder != compiled)
    fatal(llvm::formatv("RATRAIN_RANK_ORDER={0}: the program was compiled "
                        "for {1} ranks, which its dp shares and classes of "
                        "clusters follow",
                        stringifyRankOrder(rt.options().rankOrder),
                        stringifyRankOrder(compiled)));

  ModelConfig model;
  if (const ProgramModel *m = program.model) {
    model.name = m->name;
    model.family = m->family;
    model.numLayers = m->numLayers;
    model.hidden = m->hidden;
    model.numHeads = m->numHeads;
    model.numKVHeads = m->numKVHeads;
    model.ffnHidden = m->ffnHidden;
    model.vocab = m->vocab;
    model.seqLen = m->seqLen;
    model.maxPositions = m->maxPositions;
    model.dtype = m->dtype;
    model.qkvBias = m->qkvBias;
    model.rmsNormEps = m->rmsNormEps;
    model.ropeTheta = m->ropeTheta;
    model.tieEmbeddings = m->tieEmbeddings;
    model.headDimension = m->headDimension;
  }
  StagePartition partition;
  if (program.partition) {
    partition.firstLayer.assign(program.partition,
                                program.partition + program.partitionSize);
    if (program.stageRanks)
      partition.chunkRank.assign(program.stageRanks,
                                 program.stageRanks + program.stageRanksSize);
  } else
    partition = StagePartition::even(model.numLayers, program.pp);
  SessionOptions defaults;
  defaults.seqLen = program.seqLen;
  defaults.microBatch = program.microBatch;
  defaults.microBatches = program.microBatches;
  if (program.replicaMicroBatches)
    defaults.replicaMicroBatches.assign(program.replicaMicroBatches,
                                        program.replicaMicroBatches +
                                            program.replicaMicroBatchesSize);
  SessionOptions flags =
      exitOnError(SessionOptions::parse(argc, argv, defaults));
  if (flags.emulateClasses) {
    if (!program.rankSlowdown)
      fatal("--emulate-classes: the program was not compiled for a machine "
            "with classes of clusters");
    if (size_t(rt.rank()) >= program.rankSlowdownSize)
      fatal(llvm::formatv("--emulate-classes: rank {0} has no class (the "
                          "program knows {1} ranks)",
                          rt.rank(), program.rankSlowdownSize));
    rt.setEmulatedSlowdown(program.rankSlowdown[rt.rank()]);
  }
  setInitSeed(flags.initSeed);
  Session session(rt, model, partition, std::move(flags));
  for (size_t i = 0; i < program.numStages; ++i) {
    if (program.stages[i].stage != rt.stage())
      continue;
    program.stages[i].run(rt, session);
    writeCounters(rt);
    return 0;
  }
  fatal("no mt3k.program for this rank's stage");
}

} // namespace ratrain::rt::emit
