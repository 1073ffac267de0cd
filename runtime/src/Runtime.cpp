//===- Runtime.cpp - The API an emitted training program calls ------------===//

#include "ratrain/runtime/Runtime.h"
#include "CommEngine.h"
#include "OffloadStore.h"
#include "QuantizedCollectives.h"
#include "RuntimeInternal.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Half.h"
#include "ratrain/runtime/ReduceLoops.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

using namespace ratrain::rt;
using namespace ratrain::rt::detail;

namespace ratrain::rt::detail {
MPI_Comm communicators[kNumGroups] = {};
MPI_Comm collectiveComms[kNumGroups] = {};
MPI_Comm dataLevelComms[kMaxLevels] = {};
} // namespace ratrain::rt::detail

namespace {
Runtime *currentRuntime = nullptr;
/// One-sided pipeline transfers (RuntimeOptions::oneSidedPipeline): the
/// window over the DDR arena, the window over the completion counters, and
/// the counters themselves (one per tag).
MPI_Win ddrWindow = MPI_WIN_NULL, putCounterWindow = MPI_WIN_NULL;
std::vector<uint64_t> putCounters;
MPI_Op bf16SumOp = MPI_OP_NULL;
MPI_Op f16SumOp = MPI_OP_NULL;

void abortJob(int exitCode) { MPI_Abort(MPI_COMM_WORLD, exitCode); }

void bf16Sum(void *in, void *inout, int *length, MPI_Datatype *) {
  auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  reduceInto(b, a, uint64_t(*length), ElemType::BF16, ReduceOp::Sum);
}

void f16Sum(void *in, void *inout, int *length, MPI_Datatype *) {
  auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = floatToF16(f16ToFloat(a[i]) + f16ToFloat(b[i]));
}

} // namespace

MPI_Datatype detail::mpiType(ElemType type) {
  switch (type) {
  case ElemType::F32:
    return MPI_FLOAT;
  case ElemType::BF16:
  case ElemType::F16:
    return MPI_UINT16_T;
  case ElemType::I32:
    return MPI_INT32_T;
  case ElemType::I64:
    return MPI_INT64_T;
  case ElemType::U8:
    return MPI_UINT8_T;
  }
  return MPI_BYTE;
}

MPI_Op detail::mpiOp(ElemType type, ReduceOp op) {
  if (type == ElemType::BF16 || type == ElemType::F16) {
    if (op != ReduceOp::Sum && op != ReduceOp::Avg)
      fatal(llvm::formatv("reduction '{0}' on {1} is not supported (only "
                          "sum); stage through f32",
                          stringifyReduceOp(op), stringifyElemType(type)));
    return type == ElemType::BF16 ? bf16SumOp : f16SumOp;
  }
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    return MPI_SUM;
  case ReduceOp::Max:
    return MPI_MAX;
  case ReduceOp::Min:
    return MPI_MIN;
  }
  return MPI_SUM;
}

int detail::elementCount(const Buffer &buffer, unsigned elemBytes,
                         const char *what) {
  if (buffer.bytes % elemBytes != 0)
    fatal(llvm::formatv("{0}: buffer {1}[{2}, +{3}) is not a whole number of "
                        "{4}-byte elements",
                        what, stringifyMemorySpace(buffer.space), buffer.offset,
                        buffer.bytes, elemBytes));
  uint64_t count = buffer.bytes / elemBytes;
  if (count > uint64_t(INT_MAX))
    fatal(llvm::formatv("{0}: {1} elements exceed MPI's int count; split the "
                        "buffer into buckets",
                        what, count));
  return int(count);
}

namespace {
std::optional<double> parseEnvNumber(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return std::nullopt;
  char *end = nullptr;
  double value = std::strtod(text, &end);
  if (*end != '\0' || value < 0)
    fatal(llvm::formatv("environment variable {0}='{1}' is not a "
                        "non-negative number",
                        name, text));
  return value;
}
} // namespace

llvm::StringRef
ratrain::rt::stringifyCollectiveAlgorithm(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case CollectiveAlgorithm::Auto:
    return "auto";
  case CollectiveAlgorithm::Ring:
    return "ring";
  case CollectiveAlgorithm::Tree:
    return "tree";
  case CollectiveAlgorithm::Hierarchical:
    return "hierarchical";
  }
  return "?";
}

llvm::StringRef ratrain::rt::stringifyReduceOp(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Avg:
    return "avg";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Min:
    return "min";
  }
  return "?";
}

int ratrain::rt::automaticProgressNice(int nodeRanks, long nodeCpus) {
  return nodeRanks <= nodeCpus ? 19 : 0;
}

void RuntimeOptions::applyEnvironment() {
  if (const char *mode = std::getenv("RATRAIN_PROGRESS")) {
    llvm::StringRef text(mode);
    if (text == "thread")
      progress = ProgressMode::Thread;
    else if (text == "inline")
      progress = ProgressMode::Inline;
    else if (!text.empty())
      fatal(llvm::formatv("environment variable RATRAIN_PROGRESS='{0}' must "
                          "be 'thread' or 'inline'",
                          text));
  }
  if (const char *order = std::getenv("RATRAIN_RANK_ORDER")) {
    if (*order) {
      std::optional<RankOrder> parsed = parseRankOrder(order);
      if (!parsed)
        fatal(llvm::formatv("environment variable RATRAIN_RANK_ORDER='{0}' "
                            "must be 'stage-major' or 'replica-major'",
                            order));
      rankOrder = *parsed;
    }
  }
  if (auto value = parseEnvNumber("RATRAIN_PROGRESS_POLL_US"))
    pollMicros = unsigned(*value);
  if (auto value = parseEnvNumber("RATRAIN_PROGRESS_NICE")) {
    if (*value > 19 || *value != std::floor(*value))
      fatal(llvm::formatv("environment variable RATRAIN_PROGRESS_NICE='{0}' "
                          "must be a whole number from 0 to 19",
                          std::getenv("RATRAIN_PROGRESS_NICE")));
    progressNice = int(*value);
  }
  if (const char *text = std::getenv("RATRAIN_PROGRESS_ASSIST");
      text && *text) {
    llvm::StringRef value(text);
    if (value == "auto")
      progressAssist = -1;
    else if (value == "0" || value == "1")
      progressAssist = value == "1";
    else
      fatal(llvm::formatv("environment variable RATRAIN_PROGRESS_ASSIST='{0}' "
                          "must be 'auto', '0' or '1'",
                          text));
  }
  if (auto value = parseEnvNumber("RATRAIN_COMM_TIMEOUT_S"))
    commTimeoutSeconds = *value;
  if (auto value = parseEnvNumber("RATRAIN_CHECKPOINT_TIMEOUT_S"))
    checkpointTimeoutSeconds = *value;
  if (auto value = parseEnvNumber("RATRAIN_DMA_THREADS"))
    dmaThreads = unsigned(*value);
  if (auto value = parseEnvNumber("RATRAIN_RANKS_PER_NODE"))
    ranksPerNode = int(*value);
  if (const char *text = std::getenv("RATRAIN_LEVELS")) {
    if (*text) {
      llvm::SmallVector<llvm::StringRef, 4> parts;
      llvm::StringRef(text).split(parts, ',');
      levels.clear();
      for (llvm::StringRef part : parts) {
        int size = 0;
        if (part.trim().getAsInteger(10, size) || size < 1)
          fatal(llvm::formatv("environment variable RATRAIN_LEVELS='{0}' must "
                              "be positive group sizes of the inner levels, "
                              "innermost first (e.g. 2,2)",
                              text));
        levels.push_back(size);
      }
      if (levels.size() > kMaxLevels - 1)
        fatal(llvm::formatv("environment variable RATRAIN_LEVELS='{0}' names "
                            "{1} inner levels; at most {2} (the outermost "
                            "level is the rest)",
                            text, levels.size(), kMaxLevels - 1));
    }
  }
  if (auto value = parseEnvNumber("RATRAIN_QUANT_BLOCK"))
    quantBlockSize = uint64_t(*value);
  if (auto value = parseEnvNumber("RATRAIN_DDR_LIMIT_BYTES"))
    ddrLimitBytes = uint64_t(*value);
  if (auto value = parseEnvNumber("RATRAIN_OFFLOAD_HOST_CACHE_BYTES")) {
    if (!std::isfinite(*value) || *value >= 0x1p62)
      fatal(llvm::formatv("environment variable "
                          "RATRAIN_OFFLOAD_HOST_CACHE_BYTES={0} is not a "
                          "byte count below 2^62",
                          *value));
    offloadHostCacheBytes = uint64_t(*value);
  }
  if (const char *directory = std::getenv("RATRAIN_OFFLOAD_DIR"))
    if (*directory)
      offloadDirectory = directory;
}

Runtime *Runtime::current() { return currentRuntime; }

Runtime::Runtime(int &argc, char **&argv, RuntimeOptions options)
    : opts(options) {
  if (currentRuntime)
    fatal("only one ratrain::rt::Runtime may exist per process");
  opts.applyEnvironment();
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = MPI_THREAD_SINGLE;
  if (!initialized) {
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) !=
        MPI_SUCCESS)
      fatal("MPI_Init_thread failed");
  } else {
    MPI_Query_thread(&provided);
  }
  setAbortHook(abortJob);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int size = 0;
  checkMPI(MPI_Comm_rank(MPI_COMM_WORLD, &worldRank), "MPI_Comm_rank");
  checkMPI(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  setFatalPrefix(llvm::formatv("rank {0}", worldRank).str());

  int needed = opts.progress == ProgressMode::Thread ? MPI_THREAD_SERIALIZED
                                                     : MPI_THREAD_FUNNELED;
  if (provided < needed)
    fatal(llvm::formatv(
        "the MPI library provides thread level {0}, the "
        "{1} progress mode needs {2}",
        provided, opts.progress == ProgressMode::Thread ? "thread" : "inline",
        needed));
  if (opts.pp < 1 || opts.dp < 1)
    fatal(llvm::formatv("invalid layout pp={0} x dp={1}", opts.pp, opts.dp));
  grid = Layout{opts.pp, opts.dp, opts.rankOrder};
  if (size != grid.worldSize())
    fatal(llvm::formatv("the job has {0} ranks, but the plan needs pp {1} x "
                        "dp {2} = {3} (mpirun -np {3})",
                        size, grid.pp, grid.dp, grid.worldSize()));
  setFatalPrefix(llvm::formatv("rank {0} (stage {1}, dp {2})", worldRank,
                               stage(), dpIndex())
                     .str());

  // Communicators.
  MPI_Comm world;
  checkMPI(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup");
  communicators[unsigned(Group::World)] = world;
  checkMPI(MPI_Comm_split(world, dpIndex(), stage(),
                          &communicators[unsigned(Group::Pipeline)]),
           "MPI_Comm_split (pipeline group)");
  checkMPI(MPI_Comm_split(world, stage(), dpIndex(),
                          &communicators[unsigned(Group::Data)]),
           "MPI_Comm_split (data-parallel group)");
  MPI_Comm data = communicators[unsigned(Group::Data)];
  // Levels: emulated (RATRAIN_LEVELS, RATRAIN_RANKS_PER_NODE) as blocks of
  // consecutive world ranks, or one inner level, the node MPI reports.
  std::vector<int> inner = opts.levels;
  if (inner.empty() && opts.ranksPerNode > 0)
    inner = {opts.ranksPerNode};
  const bool emulated = !inner.empty();
  levelCount = emulated ? int(inner.size()) + 1 : 2;
  /// ids[l]: this rank's level-l group (l < levelCount - 1).
  int ids[kMaxLevels] = {};
  if (emulated) {
    int block = 1;
    for (size_t l = 0; l < inner.size(); ++l) {
      block *= inner[l];
      ids[l] = worldRank / block;
    }
    int node = ids[levelCount - 2];
    checkMPI(MPI_Comm_split(world, node, worldRank,
                            &communicators[unsigned(Group::NodeLocal)]),
             "MPI_Comm_split (node-local group)");
    checkMPI(MPI_Comm_split(data, node, dpIndex(),
                            &communicators[unsigned(Group::DataNodeLocal)]),
             "MPI_Comm_split (node-local data-parallel group)");
  } else {
    checkMPI(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, worldRank,
                                 MPI_INFO_NULL,
                                 &communicators[unsigned(Group::NodeLocal)]),
             "MPI_Comm_split_type (node-local group)");
    checkMPI(MPI_Comm_split_type(
                 data, MPI_COMM_TYPE_SHARED, dpIndex(), MPI_INFO_NULL,
                 &communicators[unsigned(Group::DataNodeLocal)]),
             "MPI_Comm_split_type (node-local data-parallel group)");
    // A node is named by the lowest world rank on it.
    ids[0] = worldRank;
    checkMPI(MPI_Allreduce(MPI_IN_PLACE, &ids[0], 1, MPI_INT, MPI_MIN,
                           communicators[unsigned(Group::NodeLocal)]),
             "MPI_Allreduce (node id)");
  }
  int localIndex = 0;
  checkMPI(
      MPI_Comm_rank(communicators[unsigned(Group::DataNodeLocal)], &localIndex),
      "MPI_Comm_rank");
  checkMPI(MPI_Comm_split(data, localIndex, dpIndex(),
                          &communicators[unsigned(Group::DataCrossNode)]),
           "MPI_Comm_split (cross-node data-parallel group)");
  // The Data group per level: at level l, the members that share this
  // rank's level-l group and its index inside its level-(l-1) group; those
  // are the level's sub-communicator (ranks ordered by dp index).
  {
    int dataSize = 1;
    checkMPI(MPI_Comm_size(data, &dataSize), "MPI_Comm_size");
    MPI_Comm below = MPI_COMM_NULL;
    int belowRank = 0;
    for (int l = 0; l < levelCount; ++l) {
      MPI_Comm shared = MPI_COMM_NULL;
      bool outermost = l == levelCount - 1;
      checkMPI(MPI_Comm_split(data, outermost ? 0 : ids[l], dpIndex(), &shared),
               "MPI_Comm_split (data-parallel level group)");
      checkMPI(MPI_Comm_split(shared, belowRank, dpIndex(), &dataLevelComms[l]),
               "MPI_Comm_split (data-parallel level)");
      checkMPI(MPI_Comm_set_errhandler(dataLevelComms[l], MPI_ERRORS_RETURN),
               "MPI_Comm_set_errhandler");
      checkMPI(MPI_Comm_size(dataLevelComms[l], &dataMembers[l]),
               "MPI_Comm_size");
      checkMPI(MPI_Comm_rank(dataLevelComms[l], &dataIndex[l]),
               "MPI_Comm_rank");
      if (below != MPI_COMM_NULL)
        MPI_Comm_free(&below);
      below = shared;
      checkMPI(MPI_Comm_rank(below, &belowRank), "MPI_Comm_rank");
    }
    MPI_Comm_free(&below);
    // Hierarchical collectives need the same members per level on every
    // rank and dp index = sum of level index x stride.
    int product = 1, position = 0, stride = 1;
    int extremes[2 * kMaxLevels];
    for (int l = 0; l < levelCount; ++l) {
      position += dataIndex[l] * stride;
      stride *= dataMembers[l];
      product *= dataMembers[l];
      extremes[2 * l] = dataMembers[l];
      extremes[2 * l + 1] = -dataMembers[l];
    }
    checkMPI(MPI_Allreduce(MPI_IN_PLACE, extremes, 2 * levelCount, MPI_INT,
                           MPI_MIN, data),
             "MPI_Allreduce (level sizes)");
    int regular = product == dataSize && position == dpIndex();
    for (int l = 0; l < levelCount; ++l)
      regular &= extremes[2 * l] == -extremes[2 * l + 1];
    checkMPI(MPI_Allreduce(MPI_IN_PLACE, &regular, 1, MPI_INT, MPI_MIN, data),
             "MPI_Allreduce (hierarchy check)");
    hierarchicalData = regular;
  }
  // The partition groups of every level L (docs/runtime.md, "Partition
  // groups"): over the Data group's level digits d_l (members m_l), inside
  // level L the members with this rank's digits above L, across it those
  // with its digits up to L; both ranked by the digit-reversed position
  // sum_l d_l * prod_{j > l} m_j restricted to their digits. Without a
  // regular hierarchy both are the Data group, ranked by dp index (their
  // collectives refuse to run).
  {
    for (int L = 0; L < int(kMaxLevels); ++L) {
      int low = 0, lowKey = 0, high = 0, highKey = 0, stride = 1;
      if (hierarchicalData) {
        for (int l = 0; l < levelCount; ++l) {
          if (l <= L) {
            low += dataIndex[l] * stride;
            lowKey = lowKey * dataMembers[l] + dataIndex[l];
          } else {
            high += dataIndex[l] * stride;
            highKey = highKey * dataMembers[l] + dataIndex[l];
          }
          stride *= dataMembers[l];
        }
        // lowKey and highKey are Horner sums with the innermost digit most
        // significant: sum_l d_l prod_{j > l, same part} m_j.
      } else {
        lowKey = dpIndex();
      }
      checkMPI(MPI_Comm_split(data, high, lowKey,
                              &communicators[unsigned(dataInsideGroup(L))]),
               "MPI_Comm_split (data-parallel inside-level group)");
      checkMPI(MPI_Comm_split(data, hierarchicalData ? low : 0,
                              hierarchicalData ? highKey : dpIndex(),
                              &communicators[unsigned(dataAcrossGroup(L))]),
               "MPI_Comm_split (data-parallel across-level group)");
    }
    // This rank's shard under partitioning: the digit-reversed position.
    int key = 0;
    for (int l = 0; l < levelCount; ++l)
      key = key * dataMembers[l] + dataIndex[l];
    reversedIndex = hierarchicalData ? key : dpIndex();
  }
  for (MPI_Comm comm : communicators)
    checkMPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
             "MPI_Comm_set_errhandler");
  // Private duplicates for explicit collectives, so that their messages
  // never meet the program's own sends and collectives.
  for (unsigned g = 0; g < kNumGroups; ++g)
    checkMPI(MPI_Comm_dup(communicators[g], &collectiveComms[g]),
             "MPI_Comm_dup");
  for (unsigned g = 0; g < kNumGroups; ++g) {
    checkMPI(MPI_Comm_size(communicators[g], &groupSizes[g]), "MPI_Comm_size");
    checkMPI(MPI_Comm_rank(communicators[g], &groupRanks[g]), "MPI_Comm_rank");
  }
  // Which groups span nodes, and the outermost level each spans: the level
  // above the innermost one whose groups it straddles.
  const int nodeLevel = levelCount - 2;
  for (unsigned g = 0; g < kNumGroups; ++g) {
    int range[2 * kMaxLevels];
    for (int l = 0; l < levelCount - 1; ++l) {
      range[2 * l] = ids[l];
      range[2 * l + 1] = -ids[l];
    }
    checkMPI(MPI_Allreduce(MPI_IN_PLACE, range, 2 * (levelCount - 1), MPI_INT,
                           MPI_MIN, communicators[g]),
             "MPI_Allreduce (level range)");
    auto straddles = [&](int l) { return range[2 * l] != -range[2 * l + 1]; };
    groupSpans[g] = straddles(nodeLevel);
    groupOuterLevels[g] = 0;
    for (int l = levelCount - 1; l >= 1; --l)
      if (straddles(l - 1)) {
        groupOuterLevels[g] = l;
        break;
      }
  }
  checkMPI(MPI_Op_create(bf16Sum, /*commute=*/1, &bf16SumOp),
           "MPI_Op_create (bf16 sum)");
  checkMPI(MPI_Op_create(f16Sum, /*commute=*/1, &f16SumOp),
           "MPI_Op_create (f16 sum)");

  // Memory.
  if (opts.ddrLimitBytes && opts.ddrBytes > opts.ddrLimitBytes)
    fatal(llvm::formatv("the plan needs {0} bytes of DDR per rank, but a "
                        "rank has {1} bytes (RATRAIN_DDR_LIMIT_BYTES); "
                        "re-plan with a smaller configuration",
                        opts.ddrBytes, opts.ddrLimitBytes));
  ddrArena = exitOnError(
      Arena::create(MemorySpace::DDR, opts.ddrBytes, opts.arenaAlignment));
  gsmArena = exitOnError(
      Arena::create(MemorySpace::GSM, opts.gsmBytes, opts.arenaAlignment));
  if (opts.cores < 1)
    fatal(llvm::formatv("invalid core count {0}", opts.cores));
  amArena = exitOnError(Arena::create(MemorySpace::AM,
                                      opts.amBytes * uint64_t(opts.cores),
                                      opts.arenaAlignment));

  // Engines. The progress thread starts last: from now on it owns MPI.
  pool =
      std::make_unique<TokenPool>(std::max<uint32_t>(opts.maxOutstanding, 1));
  pool->setTracer(&traceRecorder);
  dmaEngine = std::make_unique<DmaEngine>(*pool, opts.dmaThreads);
  int progressNice = opts.progressNice;
  if (progressNice < 0) {
    // The node as the operating system sees it (not an emulated level).
    MPI_Comm node;
    int nodeRanks = 1;
    checkMPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                                 worldRank, MPI_INFO_NULL, &node),
             "MPI_Comm_split_type (node)");
    checkMPI(MPI_Comm_size(node, &nodeRanks), "MPI_Comm_size");
    MPI_Comm_free(&node);
    progressNice =
        automaticProgressNice(nodeRanks, sysconf(_SC_NPROCESSORS_ONLN));
  }
  // A progress thread below the rank's priority gets no CPU while the rank
  // computes: the rank then drives progress between kernels itself.
  bool assist =
      opts.progressAssist < 0 ? progressNice > 0 : opts.progressAssist > 0;
  comm = std::make_unique<CommEngine>(*pool, opts.progress, opts.pollMicros,
                                      progressNice, assist,
                                      opts.commTimeoutSeconds);
  quantized = std::make_unique<QuantizedCollectives>(*comm, pool->capacity(),
                                                     2 * kNumGroups);
  comm->setQuantized(quantized.get());
  if (opts.oneSidedPipeline) {
    // Collective over the pipeline group; from here on, until shutdown, any
    // stage may put into this rank's arena (MPI_MODE_NOCHECK: no rank takes
    // an exclusive lock).
    MPI_Comm pipeline = communicators[unsigned(Group::Pipeline)];
    putCounters.assign(CommEngine::kPutTags, 0);
    checkMPI(MPI_Win_create(ddrArena->base(), MPI_Aint(opts.ddrBytes), 1,
                            MPI_INFO_NULL, pipeline, &ddrWindow),
             "MPI_Win_create (DDR arena)");
    checkMPI(MPI_Win_create(putCounters.data(),
                            MPI_Aint(putCounters.size() * sizeof(uint64_t)),
                            sizeof(uint64_t), MPI_INFO_NULL, pipeline,
                            &putCounterWindow),
             "MPI_Win_create (put counters)");
    for (MPI_Win window : {ddrWindow, putCounterWindow}) {
      checkMPI(MPI_Win_set_errhandler(window, MPI_ERRORS_RETURN),
               "MPI_Win_set_errhandler");
      checkMPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, window), "MPI_Win_lock_all");
    }
    comm->setPutWindows(ddrWindow, putCounterWindow,
                        groupRank(Group::Pipeline));
  }
  if (opts.offloadDirectory.empty()) {
    const char *tmp = std::getenv("TMPDIR");
    opts.offloadDirectory = llvm::formatv("{0}/ratrain-offload-{1}",
                                          tmp && *tmp ? tmp : "/tmp", getpid())
                                .str();
  }
  offloads = std::make_unique<OffloadStore>(
      *dmaEngine, opts.offloadDirectory, worldRank, opts.offloadHostCacheBytes);
  currentRuntime = this;
}

Runtime::~Runtime() {
  if (uint32_t pending = pool->outstanding())
    fatal(llvm::formatv("{0} asynchronous operations were never waited for "
                        "at shutdown",
                        pending));
  comm->shutdown();
  // Every put of every rank was waited for before its shutdown; freeing is
  // collective over the pipeline group.
  for (MPI_Win *window : {&ddrWindow, &putCounterWindow})
    if (*window != MPI_WIN_NULL) {
      MPI_Win_unlock_all(*window);
      MPI_Win_free(window);
    }
  quantized.reset();
  offloads.reset();
  dmaEngine.reset();
  comm.reset();
  MPI_Op_free(&bf16SumOp);
  MPI_Op_free(&f16SumOp);
  for (MPI_Comm &c : communicators)
    if (c != MPI_COMM_NULL && c != 0)
      MPI_Comm_free(&c);
  for (MPI_Comm &c : collectiveComms)
    if (c != MPI_COMM_NULL && c != 0)
      MPI_Comm_free(&c);
  for (MPI_Comm &c : dataLevelComms)
    if (c != MPI_COMM_NULL && c != 0)
      MPI_Comm_free(&c);
  currentRuntime = nullptr;
  setAbortHook(nullptr);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}

Arena &Runtime::arena(MemorySpace space) {
  switch (space) {
  case MemorySpace::DDR:
    return *ddrArena;
  case MemorySpace::GSM:
    return *gsmArena;
  case MemorySpace::AM:
    return *amArena;
  }
  return *ddrArena;
}

Buffer Runtime::amBuffer(int core, uint64_t offset, uint64_t bytes) {
  if (core < 0 || core >= opts.cores)
    fatal(llvm::formatv("AM of core {0} does not exist ({1} cores)", core,
                        opts.cores));
  if (offset > opts.amBytes || bytes > opts.amBytes - offset)
    fatal(llvm::formatv("am arena capacity exceeded: buffer at offset {0} of "
                        "{1} bytes in the AM of core {2}, but a core's AM "
                        "holds {3} bytes",
                        offset, bytes, core, opts.amBytes));
  return amArena->buffer(uint64_t(core) * opts.amBytes + offset, bytes);
}

void Runtime::checkChannel(int channel) const {
  if (channel >= opts.dmaChannels || channel < -1)
    fatal(llvm::formatv("DMA channel {0} does not exist ({1} channels)",
                        channel, opts.dmaChannels));
}

Token Runtime::offload(Buffer src, StorageTier tier, llvm::StringRef key) {
  return offloads->offload(src, tier, key);
}

Token Runtime::reload(Buffer dst, StorageTier tier, llvm::StringRef key) {
  return offloads->reload(dst, tier, key);
}

Buffer Runtime::offloadedCopy(StorageTier tier, llvm::StringRef key) {
  return offloads->copyOf(tier, key);
}

void Runtime::stageOffloadedStates() {
  waitAll(offloads->storageTransfers());
  offloads->readStaging();
}

void Runtime::waitOffloadedStates() { waitAll(offloads->storageTransfers()); }

void Runtime::unstageOffloadedStates() {
  waitAll(offloads->storageTransfers());
  offloads->writeStaging();
}

int Runtime::groupSize(Group group) const {
  return groupSizes[unsigned(group)];
}

int Runtime::groupRank(Group group) const {
  return groupRanks[unsigned(group)];
}

double Runtime::takeProgressCpuSeconds() {
  int64_t now = comm ? comm->progressCpuNanoseconds() : 0;
  double seconds = double(std::max<int64_t>(0, now - progressCpuTaken)) * 1e-9;
  progressCpuTaken = now;
  return seconds;
}

bool Runtime::test(Token token) {
  if (comm->mode() == ProgressMode::Inline)
    comm->progress();
  return pool->test(token);
}

void Runtime::wait(Token token) {
  if (pool->test(token))
    return;
  // The progress thread enforces the timeout on MPI requests; this deadline
  // is the backstop for everything else (and for inline mode).
  double limit = pool->timeout(token.index, comm->timeoutSeconds());
  auto issued = pool->issued(token);
  for (;;) {
    auto now = TokenPool::Clock::now();
    if (limit > 0 &&
        std::chrono::duration<double>(now - issued).count() > limit + 1.0)
      fatal(llvm::formatv("timed out after {0} s waiting for '{1}'; a peer "
                          "rank is probably dead or hung (limit: "
                          "RATRAIN_COMM_TIMEOUT_S)",
                          limit, pool->what(token)));
    if (comm->mode() == ProgressMode::Inline) {
      comm->progress();
    } else {
      pool->sleepUntilDone(token, now + std::chrono::milliseconds(200));
    }
    if (pool->test(token))
      return;
  }
}

void Runtime::waitAll(llvm::ArrayRef<Token> tokens) {
  for (Token token : tokens)
    wait(token);
}

void Runtime::poll() {
  if (comm->mode() == ProgressMode::Inline) {
    comm->progress();
    return;
  }
  if (comm->wantsAssist()) {
    StepTimers::Scope scope(timers, StepTimers::Sum::Assist);
    comm->assist();
  }
}

int64_t Runtime::allReduceMin(int64_t value) {
  // Control-plane helper: uses memory outside the arenas on purpose (the
  // plan does not reserve room for it).
  int64_t result = value;
  Buffer buffer{reinterpret_cast<std::byte *>(&result), 0, sizeof(result),
                MemorySpace::DDR};
  wait(allReduce(Group::World, buffer, ElemType::I64, ReduceOp::Min));
  return result;
}

std::vector<double> Runtime::allGatherDoubles(double value) {
  std::vector<double> values(static_cast<size_t>(worldSize()));
  Buffer send{reinterpret_cast<std::byte *>(&value), 0, sizeof(double),
              MemorySpace::DDR};
  Buffer recv{reinterpret_cast<std::byte *>(values.data()), 0,
              sizeof(double) * values.size(), MemorySpace::DDR};
  wait(allGather(Group::World, send, recv));
  return values;
}

std::vector<double> Runtime::allGatherDoublePairs(double first, double second) {
  double pair[2] = {first, second};
  return allGatherDoubleTuples(pair);
}

std::vector<double>
Runtime::allGatherDoubleTuples(llvm::ArrayRef<double> values) {
  std::vector<double> send(values.begin(), values.end());
  std::vector<double> gathered(send.size() * static_cast<size_t>(worldSize()));
  Buffer sendBuffer{reinterpret_cast<std::byte *>(send.data()), 0,
                    sizeof(double) * send.size(), MemorySpace::DDR};
  Buffer recvBuffer{reinterpret_cast<std::byte *>(gathered.data()), 0,
                    sizeof(double) * gathered.size(), MemorySpace::DDR};
  wait(allGather(Group::World, sendBuffer, recvBuffer));
  return gathered;
}
