//===- RuntimeE2E.cpp - End-to-end checks of the MPI runtime --------------===//
//
// Run under mpirun (see CMakeLists.txt):
//   ratrain-runtime-e2e comm --pp P --dp D   groups, pipeline exchange,
//                                            collectives, DMA: checks values
//   ratrain-runtime-e2e kill --pp P --dp D   the last rank dies mid-step
//   ratrain-runtime-e2e hang --pp P --dp D   the last rank stops mid-step
//   ratrain-runtime-e2e overflow             a plan larger than the DDR limit
//   ratrain-runtime-e2e bounds               an access past the arena
// Every failed check is fatal: a message and a non-zero exit.
//
//===----------------------------------------------------------------------===//

#include "E2ECommon.h"
#include "ratrain/runtime/Error.h"
#include "ratrain/runtime/Half.h"
#include "ratrain/runtime/ReduceLoops.h"
#include "ratrain/runtime/Runtime.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

using namespace ratrain::rt;
using namespace ratrain::rt::e2e;

namespace {

constexpr const char *kUsage =
    "ratrain-runtime-e2e <comm|kill|hang|overflow|bounds> [--pp P] [--dp D]";

struct Args {
  std::string mode;
  Dims dims;
};

Args parseArgs(int argc, char **argv) {
  Args args;
  if (argc < 2)
    fatal(llvm::Twine("usage: ") + kUsage);
  args.mode = argv[1];
  args.dims = parseDims(argc, argv, 2, kUsage);
  return args;
}

float activationValue(int rank, int microBatch, uint64_t i) {
  return float(rank * 1000 + microBatch * 10) + float(i % 7);
}

/// The highest nice value among this process's threads other than the main
/// one (/proc/self/task/<tid>/stat, field 19), or -1 where none is readable.
int highestHelperNice() {
  int highest = -1;
  std::error_code ec;
  for (const auto &entry :
       std::filesystem::directory_iterator("/proc/self/task", ec)) {
    if (entry.path().filename() == std::to_string(getpid()))
      continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    // Fields after the command name, which is in parentheses: state is 3.
    size_t close = text.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream fields(text.substr(close + 1));
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i)
      if (i == 19)
        highest = std::max(highest, std::atoi(field.c_str()));
  }
  return highest;
}

/// Stage s sends micro-batch activations to stage s + 1, which checks them.
void exchangeActivations(Runtime &rt, int microBatches, uint64_t bytes) {
  Arena &ddr = rt.ddr();
  uint64_t floats = bytes / 4;
  std::vector<Token> tokens;
  for (int mb = 0; mb < microBatches; ++mb) {
    Buffer out = ddr.buffer(uint64_t(mb) * bytes, bytes);
    Buffer in = ddr.buffer(uint64_t(microBatches + mb) * bytes, bytes);
    for (uint64_t i = 0; i < floats; ++i)
      out.as<float>()[i] = activationValue(rt.rank(), mb, i);
    if (!rt.isLastStage())
      tokens.push_back(rt.sendToStage(rt.stage() + 1, mb, out));
    if (!rt.isFirstStage())
      tokens.push_back(rt.recvFromStage(rt.stage() - 1, mb, in));
  }
  rt.waitAll(tokens);
  if (rt.isFirstStage())
    return;
  int sender = rt.layout().rankOf(rt.stage() - 1, rt.dpIndex());
  for (int mb = 0; mb < microBatches; ++mb) {
    float *in = ddr.get<float>(uint64_t(microBatches + mb) * bytes, floats);
    for (uint64_t i = 0; i < floats; ++i)
      CHECK(in[i] == activationValue(sender, mb, i),
            "micro-batch {0} element {1}: got {2}, want {3}", mb, i, in[i],
            activationValue(sender, mb, i));
  }
}

void runComm(Runtime &rt) {
  const Layout &grid = rt.layout();
  CHECK(rt.groupSize(Group::Pipeline) == grid.pp, "pipeline size {0}",
        rt.groupSize(Group::Pipeline));
  CHECK(rt.groupSize(Group::Data) == grid.dp, "data size {0}",
        rt.groupSize(Group::Data));
  CHECK(rt.groupRank(Group::Pipeline) == rt.stage(), "pipeline rank");
  CHECK(rt.groupRank(Group::Data) == rt.dpIndex(), "data rank");
  CHECK(grid.rankOf(rt.stage(), rt.dpIndex()) == rt.rank(), "layout");
  // Nodes: the machine, or blocks of RATRAIN_RANKS_PER_NODE ranks.
  int perNode = rt.options().ranksPerNode > 0 ? rt.options().ranksPerNode
                                              : rt.worldSize();
  int nodes = rt.worldSize() / perNode;
  CHECK(rt.groupSize(Group::NodeLocal) == perNode, "node size {0}",
        rt.groupSize(Group::NodeLocal));
  // The data group's members on each node, in dp order.
  std::vector<std::vector<int>> dataByNode(static_cast<size_t>(nodes));
  for (int d = 0; d < grid.dp; ++d) {
    int r = grid.rankOf(rt.stage(), d);
    dataByNode[size_t(r / perNode)].push_back(r);
  }
  const std::vector<int> &mine = dataByNode[size_t(rt.rank() / perNode)];
  int localIndex =
      int(std::find(mine.begin(), mine.end(), rt.rank()) - mine.begin());
  int crossSize = 0;
  for (const std::vector<int> &members : dataByNode)
    crossSize += int(members.size()) > localIndex ? 1 : 0;
  CHECK(rt.groupSize(Group::DataNodeLocal) == int(mine.size()),
        "data.node size {0}, want {1}", rt.groupSize(Group::DataNodeLocal),
        mine.size());
  CHECK(rt.groupSize(Group::DataCrossNode) == crossSize,
        "data.cross size {0}, want {1}", rt.groupSize(Group::DataCrossNode),
        crossSize);

  // 1. Pipeline activations, 4 micro-batches of 64 KiB.
  exchangeActivations(rt, 4, 64 << 10);
  // 1b. Synchronization tokens down the pipeline and back.
  if (!rt.isFirstStage())
    rt.wait(rt.awaitSignal(Group::Pipeline, rt.stage() - 1, 100));
  if (!rt.isLastStage())
    rt.wait(rt.signal(Group::Pipeline, rt.stage() + 1, 100));
  if (!rt.isLastStage())
    rt.wait(rt.awaitSignal(Group::Pipeline, rt.stage() + 1, 101));
  if (!rt.isFirstStage())
    rt.wait(rt.signal(Group::Pipeline, rt.stage() - 1, 101));

  Arena &ddr = rt.ddr();
  const uint64_t base = 1 << 20;
  const uint64_t n = 4096;
  // 2. f32 gradient all-reduce on the data group, overlapped with "compute".
  Buffer grad = ddr.buffer(base, n * 4);
  for (uint64_t i = 0; i < n; ++i)
    grad.as<float>()[i] = float((rt.dpIndex() + 1) * (i % 100 + 1));
  Token reduce = rt.allReduce(Group::Data, grad, ElemType::F32);
  double busy = 0;
  for (int i = 0; i < 100000; ++i) {
    busy += std::sqrt(double(i));
    if (i % 10000 == 0)
      rt.poll();
  }
  CHECK(busy > 0, "compute");
  rt.wait(reduce);
  float dpSum = float(grid.dp * (grid.dp + 1) / 2);
  for (uint64_t i = 0; i < n; ++i)
    CHECK(grad.as<float>()[i] == dpSum * float(i % 100 + 1),
          "all-reduce element {0}: {1}", i, grad.as<float>()[i]);

  // 2b. Out-of-place average, and the explicit algorithms (hierarchical,
  // ring, binomial tree), in f32 and bf16.
  Buffer src = ddr.buffer(base + 8 * n * 4, n * 4);
  Buffer dst = ddr.buffer(base + 9 * n * 4, n * 4);
  for (uint64_t i = 0; i < n; ++i)
    src.as<float>()[i] = float(rt.dpIndex() * 2 + i % 3);
  rt.wait(rt.allReduce(Group::Data, src, dst, ElemType::F32, ReduceOp::Avg));
  for (uint64_t i = 0; i < n; ++i)
    CHECK(dst.as<float>()[i] == float(grid.dp - 1) + float(i % 3),
          "avg all-reduce element {0}: {1}", i, dst.as<float>()[i]);
  CHECK(src.as<float>()[1] == float(rt.dpIndex() * 2 + 1), "source changed");
  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::Hierarchical, CollectiveAlgorithm::Ring,
        CollectiveAlgorithm::Tree}) {
    for (uint64_t i = 0; i < n; ++i)
      dst.as<float>()[i] = float(rt.dpIndex() + 1) * float(i % 11);
    rt.wait(rt.allReduce(Group::Data, dst, dst, ElemType::F32, ReduceOp::Sum,
                         algorithm));
    for (uint64_t i = 0; i < n; ++i)
      CHECK(dst.as<float>()[i] == dpSum * float(i % 11),
            "all-reduce (algorithm {0}) element {1}: {2}", int(algorithm), i,
            dst.as<float>()[i]);
    // Out of place, bf16.
    for (uint64_t i = 0; i < n; ++i)
      src.as<uint16_t>()[i] = floatToBF16(float(rt.dpIndex() + i % 4));
    rt.wait(rt.allReduce(Group::Data, src.slice(0, n * 2), dst.slice(0, n * 2),
                         ElemType::BF16, ReduceOp::Sum, algorithm));
    for (uint64_t i = 0; i < n; ++i) {
      float want = float(grid.dp * (grid.dp - 1) / 2 + grid.dp * int(i % 4));
      CHECK(bf16ToFloat(dst.as<uint16_t>()[i]) == want,
            "bf16 all-reduce (algorithm {0}) element {1}", int(algorithm), i);
    }
  }

  // 2c. Gradient buckets: many all-reduces of every algorithm in flight at
  // once, waited in reverse order. Their rounds complete in different orders
  // on different ranks; they must still match.
  {
    const int buckets = 8;
    std::vector<Token> tokens;
    for (int b = 0; b < buckets; ++b) {
      uint64_t count = 256 * uint64_t(b + 1);
      Buffer bucket = ddr.buffer(base + 11 * n * 4 + b * 8192 * 4, count * 4);
      for (uint64_t i = 0; i < count; ++i)
        bucket.as<float>()[i] = float((rt.dpIndex() + 1) * (b + 1));
      tokens.push_back(rt.allReduce(
          Group::Data, bucket, bucket, ElemType::F32, ReduceOp::Sum,
          b % 4 == 0   ? CollectiveAlgorithm::Auto
          : b % 4 == 1 ? CollectiveAlgorithm::Hierarchical
          : b % 4 == 2 ? CollectiveAlgorithm::Ring
                       : CollectiveAlgorithm::Tree));
    }
    for (int b = buckets - 1; b >= 0; --b)
      rt.wait(tokens[b]);
    for (int b = 0; b < buckets; ++b) {
      uint64_t count = 256 * uint64_t(b + 1);
      const float *bucket =
          ddr.get<float>(base + 11 * n * 4 + b * 8192 * 4, count);
      for (uint64_t i = 0; i < count; ++i)
        CHECK(bucket[i] == dpSum * float(b + 1), "bucket {0} element {1}: {2}",
              b, i, bucket[i]);
    }
  }

  // 3. bf16 all-reduce (exact for small integers).
  Buffer half = ddr.buffer(base + n * 4, n * 2);
  for (uint64_t i = 0; i < n; ++i)
    half.as<uint16_t>()[i] = floatToBF16(float(rt.dpIndex() + i % 5));
  rt.wait(rt.allReduce(Group::Data, half, ElemType::BF16));
  for (uint64_t i = 0; i < n; ++i) {
    float want = float(grid.dp * (grid.dp - 1) / 2 + grid.dp * int(i % 5));
    CHECK(bf16ToFloat(half.as<uint16_t>()[i]) == want,
          "bf16 all-reduce element {0}: {1}, want {2}", i,
          bf16ToFloat(half.as<uint16_t>()[i]), want);
  }

  // 4. Reduce-scatter on the data group, then all-gather it back (ZeRO),
  // with every algorithm.
  uint64_t block = 256;
  Buffer full = ddr.buffer(base + 2 * n * 4, block * grid.dp * 4);
  Buffer part = ddr.buffer(base + 3 * n * 4, block * 4);
  for (CollectiveAlgorithm algorithm :
       {CollectiveAlgorithm::Auto, CollectiveAlgorithm::Hierarchical,
        CollectiveAlgorithm::Ring, CollectiveAlgorithm::Tree}) {
    for (uint64_t i = 0; i < block * grid.dp; ++i)
      full.as<float>()[i] = float(i + rt.dpIndex());
    rt.wait(rt.reduceScatter(Group::Data, full, part, ElemType::F32,
                             ReduceOp::Sum, algorithm));
    for (uint64_t i = 0; i < block; ++i) {
      uint64_t global = rt.dpIndex() * block + i;
      float want = float(grid.dp * global + grid.dp * (grid.dp - 1) / 2);
      CHECK(part.as<float>()[i] == want,
            "reduce-scatter (algorithm {0}) element {1}: {2}", int(algorithm),
            i, part.as<float>()[i]);
    }
    Buffer gathered = ddr.buffer(base + 4 * n * 4, block * grid.dp * 4);
    rt.wait(rt.allGather(Group::Data, part, gathered, algorithm));
    for (uint64_t i = 0; i < block * grid.dp; ++i) {
      float want = float(grid.dp * i + grid.dp * (grid.dp - 1) / 2);
      CHECK(gathered.as<float>()[i] == want,
            "all-gather (algorithm {0}) element {1}: {2}", int(algorithm), i,
            gathered.as<float>()[i]);
    }
    // In place (mt3k.group_slot): the contribution is this rank's block of
    // the result; the other blocks start as garbage.
    Buffer own = gathered.slice(uint64_t(rt.groupRank(Group::Data)) * block * 4,
                                block * 4);
    std::fill(gathered.as<float>(), gathered.as<float>() + block * grid.dp,
              -7.0f);
    std::memcpy(own.data, part.data, block * 4);
    rt.wait(rt.allGather(Group::Data, own, gathered, algorithm));
    for (uint64_t i = 0; i < block * grid.dp; ++i) {
      float want = float(grid.dp * i + grid.dp * (grid.dp - 1) / 2);
      CHECK(gathered.as<float>()[i] == want,
            "all-gather in place (algorithm {0}) element {1}: {2}",
            int(algorithm), i, gathered.as<float>()[i]);
    }
  }

  // 4b. A ring reduce-scatter that leaves its own contribution to the
  // consumer: the result holds the other members' sum (undivided, also for
  // avg), and adding the own block as the runtime's average does gives the
  // plain average's bits (bf16 values that round at every sum). (A group of
  // one rank has nothing to leave.)
  if (grid.dp > 1) {
    std::vector<uint16_t> values(block * grid.dp);
    for (uint64_t i = 0; i < values.size(); ++i)
      values[i] = floatToBF16(
          1.0f + float((i * 7919 + rt.dpIndex() * 104729) % 1000) / 997.0f);
    Buffer full16 = ddr.buffer(base + 2 * n * 4, block * grid.dp * 2);
    Buffer averaged = ddr.buffer(base + 3 * n * 4, block * 2);
    Buffer others = ddr.buffer(base + 4 * n * 4, block * 2);
    std::memcpy(full16.data, values.data(), values.size() * 2);
    rt.wait(rt.reduceScatter(Group::Data, full16, averaged, ElemType::BF16,
                             ReduceOp::Avg, CollectiveAlgorithm::Ring));
    std::memcpy(full16.data, values.data(), values.size() * 2);
    rt.wait(rt.reduceScatter(Group::Data, full16, others, ElemType::BF16,
                             ReduceOp::Avg, CollectiveAlgorithm::Ring,
                             WireType::Native, /*leaveOwn=*/true));
    const uint64_t me = uint64_t(rt.groupRank(Group::Data));
    std::vector<uint16_t> completed(block);
    averageFrom(completed.data(), values.data() + me * block,
                others.as<uint16_t>(), block, ElemType::BF16, grid.dp);
    for (uint64_t i = 0; i < block; ++i)
      CHECK(completed[i] == averaged.as<uint16_t>()[i],
            "reduce-scatter leaving its own contribution, element {0}: the "
            "completed average {1:x} is not the plain one {2:x}",
            i, completed[i], averaged.as<uint16_t>()[i]);
    // fp32 sums of small integers are exact: the other members' sum itself.
    for (uint64_t i = 0; i < block * grid.dp; ++i)
      full.as<float>()[i] = float(i + rt.dpIndex());
    rt.wait(rt.reduceScatter(Group::Data, full, part, ElemType::F32,
                             ReduceOp::Sum, CollectiveAlgorithm::Ring,
                             WireType::Native, /*leaveOwn=*/true));
    for (uint64_t i = 0; i < block; ++i) {
      uint64_t global = me * block + i;
      float want = float(grid.dp * global + grid.dp * (grid.dp - 1) / 2) -
                   float(global + rt.dpIndex());
      CHECK(part.as<float>()[i] == want,
            "reduce-scatter leaving its own contribution, element {0}: {1}, "
            "want {2}",
            i, part.as<float>()[i], want);
    }
  }

  // 5. Broadcast over the pipeline group from the last stage, world barrier,
  // world min.
  Buffer flag = ddr.buffer(base + 5 * n * 4, 8);
  flag.as<int64_t>()[0] = rt.isLastStage() ? 4242 + rt.dpIndex() : -1;
  rt.wait(rt.broadcast(Group::Pipeline, flag, grid.pp - 1));
  CHECK(flag.as<int64_t>()[0] == 4242 + rt.dpIndex(), "broadcast: {0}",
        flag.as<int64_t>()[0]);
  rt.wait(rt.barrier(Group::World));
  CHECK(rt.allReduceMin(100 + rt.rank()) == 100, "world min");

  // 6. DMA: DDR -> GSM -> AM (2-D tile) -> DDR.
  Buffer matrix = ddr.buffer(base + 6 * n * 4, 64 * 64);
  for (uint64_t i = 0; i < 64 * 64; ++i)
    matrix.as<uint8_t>()[i] = uint8_t(i * 7 + rt.rank());
  Buffer staged = rt.gsm().buffer(0, 64 * 64);
  rt.wait(rt.dma(staged, matrix));
  Buffer tile = rt.am().buffer(0, 16 * 16);
  // The 16 x 16 tile at row 8, column 32 of the 64 x 64 matrix.
  rt.wait(
      rt.dma2d(tile, 16, staged.slice(8 * 64 + 32, 64 * 56 - 32), 64, 16, 16));
  Buffer back = ddr.buffer(base + 7 * n * 4, 16 * 16);
  Token t1 = rt.dma(back, tile);
  rt.wait(t1);
  rt.wait(t1); // Waiting twice is fine.
  for (uint64_t r = 0; r < 16; ++r)
    for (uint64_t c = 0; c < 16; ++c)
      CHECK(back.as<uint8_t>()[r * 16 + c] ==
                uint8_t(((8 + r) * 64 + 32 + c) * 7 + rt.rank()),
            "dma2d element ({0}, {1})", r, c);

  // 7. Per-core AM and DMA channels.
  Buffer core1 = rt.amBuffer(1, 0, 256);
  CHECK(core1.offset == 16 << 10, "core 1's AM starts at {0}", core1.offset);
  rt.wait(rt.dma(core1, back, /*channel=*/3));
  CHECK(std::memcmp(core1.data, back.data, 256) == 0, "dma to core 1");

  // 8. Offload to host and storage and reload.
  for (StorageTier tier : {StorageTier::Host, StorageTier::Storage}) {
    Buffer act = ddr.buffer(base + 10 * n * 4, n * 4);
    for (uint64_t i = 0; i < n; ++i)
      act.as<float>()[i] = float(i * 3 + rt.rank());
    rt.wait(rt.offload(act, tier, "act.layer3.mb1"));
    std::memset(act.data, 0, act.bytes);
    Token reloaded = rt.reload(act, tier, "act.layer3.mb1");
    rt.wait(reloaded);
    for (uint64_t i = 0; i < n; ++i)
      CHECK(act.as<float>()[i] == float(i * 3 + rt.rank()),
            "reload from tier {0} element {1}", int(tier), i);
  }

  CHECK(rt.ddr().peakBytes() == base + 11 * n * 4 + 7 * 8192 * 4 + 2048 * 4,
        "ddr peak {0}", rt.ddr().peakBytes());
  CHECK(rt.gsm().peakBytes() == 64 * 64, "gsm peak {0}", rt.gsm().peakBytes());
  rt.wait(rt.barrier(Group::World));

  // 9. The progress thread runs at RATRAIN_PROGRESS_NICE, or at the automatic
  // value for this node's ranks and CPUs (the tests run on one node). It has
  // carried the collectives above, so it has set its priority by now.
  if (rt.options().progress == ProgressMode::Thread) {
    int expected = rt.options().progressNice >= 0
                       ? rt.options().progressNice
                       : automaticProgressNice(rt.worldSize(),
                                               sysconf(_SC_NPROCESSORS_ONLN));
    int nice = highestHelperNice();
    CHECK(nice == expected,
          "the progress thread runs at nice {0}, expected {1}", nice, expected);
  }
  std::printf("rank %d (stage %d, dp %d): ok\n", rt.rank(), rt.stage(),
              rt.dpIndex());
  if (rt.rank() == 0)
    std::printf("e2e comm pp=%d dp=%d: all checks passed\n", grid.pp, grid.dp);
}

/// Progress driven by the compute thread alone: run with a progress thread
/// that polls once in 1000 s (RATRAIN_PROGRESS_POLL_US) and
/// RATRAIN_PROGRESS_ASSIST=1, so that once the thread has posted an
/// operation (it wakes at each submission) only the ranks' poll() calls
/// between their "kernels" (CommEngine::assist) move it. Without assistance
/// the ranks spin in poll() until the test's time limit. Runs a ring
/// all-reduce (explicit rounds, reduced on the polling thread), a
/// reduce-scatter and an all-gather of 512 KiB on the data group, the
/// pipeline's activation sends, and a barrier.
void runAssisted(Runtime &rt) {
  CHECK(rt.options().progress == ProgressMode::Thread &&
            rt.options().progressAssist == 1 &&
            rt.options().pollMicros >= 100000000u,
        "run with RATRAIN_PROGRESS_ASSIST=1 and RATRAIN_PROGRESS_POLL_US of "
        "at least 1e8 (got {0}, {1})",
        rt.options().progressAssist, rt.options().pollMicros);
  double busy = 0;
  auto drive = [&](Token token) {
    while (!rt.test(token)) {
      for (int i = 0; i < 1000; ++i) // a "kernel"
        busy += std::sqrt(double(i));
      rt.poll();
    }
  };
  const int dp = rt.groupSize(Group::Data);
  const uint64_t n = 1 << 17; // 512 KiB of f32
  Arena &ddr = rt.ddr();
  Buffer grad = ddr.buffer(0, n * 4);
  for (uint64_t i = 0; i < n; ++i)
    grad.as<float>()[i] = float((rt.dpIndex() + 1) * (i % 100 + 1));
  drive(rt.allReduce(Group::Data, grad, grad, ElemType::F32, ReduceOp::Sum,
                     CollectiveAlgorithm::Ring));
  const float dpSum = float(dp * (dp + 1) / 2);
  for (uint64_t i = 0; i < n; ++i)
    CHECK(grad.as<float>()[i] == dpSum * float(i % 100 + 1),
          "assisted all-reduce element {0}: {1}", i, grad.as<float>()[i]);
  Buffer block = ddr.buffer(n * 4, n * 4 / uint64_t(dp));
  drive(rt.reduceScatter(Group::Data, grad, block, ElemType::F32));
  const uint64_t first = uint64_t(rt.dpIndex()) * (n / uint64_t(dp));
  for (uint64_t i = 0; i < n / uint64_t(dp); ++i)
    CHECK(block.as<float>()[i] ==
              float(dp) * dpSum * float((first + i) % 100 + 1),
          "assisted reduce-scatter element {0}: {1}", i, block.as<float>()[i]);
  Buffer gathered = ddr.buffer(2 * n * 4, n * 4);
  drive(rt.allGather(Group::Data, block, gathered));
  for (uint64_t i = 0; i < n; ++i)
    CHECK(gathered.as<float>()[i] == float(dp) * dpSum * float(i % 100 + 1),
          "assisted all-gather element {0}: {1}", i, gathered.as<float>()[i]);
  if (rt.groupSize(Group::Pipeline) > 1) {
    Buffer act = ddr.buffer(3 * n * 4, 64 * 1024);
    if (rt.stage() == 0) {
      for (uint64_t i = 0; i < act.bytes / 4; ++i)
        act.as<float>()[i] = float(i + rt.dpIndex());
      drive(rt.sendToStage(1, 0, act));
    } else if (rt.stage() == 1) {
      drive(rt.recvFromStage(0, 0, act));
      for (uint64_t i = 0; i < act.bytes / 4; ++i)
        CHECK(act.as<float>()[i] == float(i + rt.dpIndex()),
              "assisted activation element {0}: {1}", i, act.as<float>()[i]);
    }
  }
  drive(rt.barrier(Group::World));
  CHECK(busy > 0, "compute");
  if (rt.rank() == 0)
    std::printf("e2e assisted progress: all checks passed\n");
}

/// The last rank fails in the middle of a step: it dies (SIGKILL) or stops
/// (SIGSTOP, a hung process the MPI launcher cannot see). The other ranks are
/// blocked on it and must end the job with a clear error.
void runFailure(Runtime &rt, int signal) {
  exchangeActivations(rt, 2, 4096);
  rt.wait(rt.barrier(Group::World));
  if (rt.rank() == rt.worldSize() - 1) {
    std::fprintf(stderr, "rank %d: raising %s mid-step\n", rt.rank(),
                 signal == SIGKILL ? "SIGKILL" : "SIGSTOP");
    std::fflush(stderr);
    std::raise(signal);
  }
  // Every other rank needs the last one: a world all-reduce.
  Buffer buffer = rt.ddr().buffer(0, 4096);
  rt.wait(rt.allReduce(Group::World, buffer, ElemType::F32));
  fatal("unreachable: the all-reduce completed without the failed rank");
}

} // namespace

int main(int argc, char **argv) {
  Args args = parseArgs(argc, argv);
  RuntimeOptions options;
  options.pp = args.dims.pp;
  options.dp = args.dims.dp;
  options.ddrBytes = 2 << 20;
  options.gsmBytes = 64 << 10;
  options.amBytes = 16 << 10;
  options.cores = 4;
  if (args.mode == "overflow") {
    options.ddrBytes = uint64_t(1) << 30;
    options.ddrLimitBytes = 1 << 20;
  }
  Runtime rt(argc, argv, options);
  if (args.mode == "comm")
    runComm(rt);
  else if (args.mode == "assist")
    runAssisted(rt);
  else if (args.mode == "kill")
    runFailure(rt, SIGKILL);
  else if (args.mode == "hang")
    runFailure(rt, SIGSTOP);
  else if (args.mode == "bounds")
    rt.ddr().buffer(options.ddrBytes - 8, 16);
  else if (args.mode == "am-bounds")
    rt.amBuffer(2, (16 << 10) - 64, 128);
  else if (args.mode == "reload-unknown")
    rt.wait(rt.reload(rt.ddr().buffer(0, 64), StorageTier::Host, "nothing"));
  else if (args.mode == "gather-overlap") {
    // The next rank's block of the result as this rank's contribution.
    Buffer full = rt.ddr().buffer(0, 4096);
    uint64_t next = (rt.groupRank(Group::Data) + 1) % rt.groupSize(Group::Data);
    rt.wait(rt.allGather(Group::Data, full.slice(next * 2048, 2048), full));
  } else if (args.mode == "leave-own-tree") {
    Buffer full = rt.ddr().buffer(0, 4096);
    rt.wait(rt.reduceScatter(Group::Data, full, rt.ddr().buffer(4096, 2048),
                             ElemType::F32, ReduceOp::Avg,
                             CollectiveAlgorithm::Tree, WireType::Native,
                             /*leaveOwn=*/true));
  } else if (args.mode == "leave-own-in-place") {
    Buffer full = rt.ddr().buffer(0, 4096);
    Buffer own = full.slice(rt.groupRank(Group::Data) * 2048, 2048);
    rt.wait(rt.reduceScatter(Group::Data, full, own, ElemType::F32,
                             ReduceOp::Avg, CollectiveAlgorithm::Ring,
                             WireType::Native, /*leaveOwn=*/true));
  } else if (args.mode == "quantized-in-place") {
    Buffer full = rt.ddr().buffer(0, 4096);
    Buffer own = full.slice(rt.groupRank(Group::Data) * 2048, 2048);
    rt.wait(rt.allGather(Group::Data, own, full, ElemType::F32,
                         CollectiveAlgorithm::Ring, WireType::Int8));
  } else
    fatal("unknown mode '" + args.mode + "'");
  return 0;
}
