//===- QuantizedCollectives.cpp - ZeRO++ qwZ / qgZ collectives ------------===//
//
// qwZ all-gather over levels 0..L-1 (innermost first) of sizes k_l:
//   quantize this rank's block once (payload = scales | codes), then for
//   l = L-1 down to 0 all-gather the payloads gathered so far among the k_l
//   members of level l; payload e of the result belongs to group rank
//   d(e) (e's digits are index_0 slowest ... index_{L-1} fastest), and is
//   decoded straight into block d(e) of `recv`.
// qgZ reduce-scatter (ZeRO++'s hierarchical all-to-all), for l = 0..L-1:
//   the buffer (the input, then the fp32 partial sums) holds R_l = prod_{j>=l}
//   k_j blocks of `count` elements, index_l fastest; chunk j (the blocks
//   with index_l = j) is quantized for member j, the k_l chunks go
//   all-to-all, and the k_l received chunks are decoded and summed in fp32
//   (in member order, so every rank adds in the same order). After the last
//   level the sum is this rank's block.
// With level-order group ranks (QuantizedSpec::levelOrderRanks, the partition
// groups) payload e is group rank e, and chunk j of a level is contiguous.
//
//===----------------------------------------------------------------------===//

#include "QuantizedCollectives.h"
#include "CommEngine.h"
#include "ratrain/runtime/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <climits>
#include <cstring>

#ifdef RATRAIN_RUNTIME_HAS_KERNELS
#include "ratrain/kernels/Quantize.h"
#endif

using namespace ratrain::rt;

llvm::StringRef ratrain::rt::stringifyWireType(WireType wire) {
  switch (wire) {
  case WireType::Native:
    return "native";
  case WireType::Int8:
    return "int8";
  case WireType::Int4:
    return "int4";
  }
  return "?";
}

namespace {
uint64_t codeBytes(WireType wire, uint64_t n) {
  return wire == WireType::Int8 ? n : (n + 1) / 2;
}
uint64_t blockCount(uint64_t n, uint64_t block) {
  return (n + block - 1) / block;
}
/// Bytes of the payload of n elements: scales, then codes.
uint64_t payloadBytes(WireType wire, uint64_t n, uint64_t block) {
  return blockCount(n, block) * sizeof(float) + codeBytes(wire, n);
}
} // namespace

void ratrain::rt::countWireBytes(WireCounters &counters,
                                 const QuantizedSpec &spec) {
  llvm::ArrayRef<int> sizes = spec.sizes;
  uint64_t(&bytes)[kMaxWireLevels] =
      counters.bytes[unsigned(spec.kind)][spec.wire == WireType::Int4];
  uint64_t payload = payloadBytes(spec.wire, spec.count, spec.blockSize);
  if (spec.kind == CollectiveKind::AllGather) {
    // Level l sends its (k_l - 1) peers everything gathered at the outer
    // levels: prod_{j > l} k_j payloads.
    uint64_t gathered = 1;
    for (int l = int(sizes.size()) - 1; l >= 0; --l) {
      bytes[spec.networkLevels[l]] +=
          uint64_t(sizes[l] - 1) * gathered * payload;
      gathered *= uint64_t(sizes[l]);
    }
    return;
  }
  // Level l sends k_l - 1 chunks of count * prod_{j > l} k_j elements.
  for (size_t l = 0; l < sizes.size(); ++l) {
    uint64_t outer = 1;
    for (size_t j = l + 1; j < sizes.size(); ++j)
      outer *= uint64_t(sizes[j]);
    bytes[spec.networkLevels[l]] +=
        uint64_t(sizes[l] - 1) *
        payloadBytes(spec.wire, spec.count * outer, spec.blockSize);
  }
}

QuantizedCollectives::QuantizedCollectives(CommEngine &engine, uint32_t slots,
                                           unsigned laneCount)
    : engine(engine), ops(slots), lanes(laneCount) {}

QuantizedCollectives::~QuantizedCollectives() {
  for (Lane &lane : lanes)
    for (MPI_Comm &comm : lane.dups)
      if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
}

void QuantizedCollectives::prepare(uint32_t index, const QuantizedSpec &spec) {
  Lane &lane = lanes[spec.lane];
  if (!lane.registered) {
    lane.parents = spec.levels;
    lane.sizes = spec.sizes;
    lane.registered = true;
  }
  ops[index].spec = spec;
  ops[index].step = 0;
  ops[index].gathered = 0;
}

void QuantizedCollectives::post(uint32_t index) {
  Lane &lane = laneOf(index);
  if (!lane.dupsPosted) {
    // The duplicates are made when the lane is first used, in issue order
    // with the program's collectives on the parents.
    lane.dupsPosted = true;
    lane.dups.assign(lane.parents.size(), MPI_COMM_NULL);
    for (size_t l = 0; l < lane.parents.size(); ++l) {
      MPI_Request request = MPI_REQUEST_NULL;
      checkMPI(MPI_Comm_idup(lane.parents[l], &lane.dups[l], &request),
               "MPI_Comm_idup (quantized collectives)");
      engine.track(index, request);
      ++lane.dupsPending;
    }
  }
  lane.queue.push_back(index);
  if (lane.queue.size() == 1 && lane.dupsPending == 0)
    startQueue(lane);
}

void QuantizedCollectives::startQueue(Lane &lane) {
  while (!lane.queue.empty()) {
    uint32_t front = lane.queue.front();
    if (postStep(front))
      return;
    finish(front);
    lane.queue.pop_front();
    engine.complete(front);
  }
}

bool QuantizedCollectives::advance(uint32_t index) {
  Lane &lane = laneOf(index);
  if (lane.dupsPending > 0) {
    if (--lane.dupsPending == 0) {
      for (MPI_Comm comm : lane.dups)
        checkMPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
                 "MPI_Comm_set_errhandler");
      // The operation that posted the duplicates is at the front.
      startQueue(lane);
    }
    return false;
  }
  finishStep(index);
  ++ops[index].step;
  if (postStep(index))
    return false;
  finish(index);
  lane.queue.pop_front();
  startQueue(lane);
  return true;
}

#ifdef RATRAIN_RUNTIME_HAS_KERNELS

namespace {
namespace k = ratrain::kernels;

k::CodeWidth widthOf(WireType wire) {
  return wire == WireType::Int4 ? k::CodeWidth::Int4 : k::CodeWidth::Int8;
}

k::ValueType valueTypeOf(ElemType type) {
  switch (type) {
  case ElemType::BF16:
    return k::ValueType::BF16;
  case ElemType::F16:
    return k::ValueType::F16;
  default:
    return k::ValueType::F32;
  }
}

void checkKernel(int code, const char *what) {
  if (code != 0)
    fatal(llvm::formatv("quantized collective: {0} failed (error {1})", what,
                        code));
}

/// Quantizes n values of `type` at `x` into the payload at `out` (scales,
/// then codes); `scales` is aligned scratch.
void pack(const QuantizedSpec &spec, ElemType type, uint64_t n, const void *x,
          std::byte *out, std::vector<float> &scales) {
  uint64_t blocks = blockCount(n, spec.blockSize);
  scales.resize(blocks);
  checkKernel(k::quantizeBlocks(widthOf(spec.wire), valueTypeOf(type),
                                int64_t(n), int64_t(spec.blockSize), x,
                                reinterpret_cast<uint8_t *>(out) +
                                    blocks * sizeof(float),
                                scales.data()),
              "quantizeBlocks");
  std::memcpy(out, scales.data(), blocks * sizeof(float));
}

/// Decodes the payload of n values at `in` into `y` (of `type`), or adds it
/// to the fp32 `y` (accumulate).
void unpack(const QuantizedSpec &spec, ElemType type, uint64_t n,
            const std::byte *in, void *y, bool accumulate,
            std::vector<float> &scales) {
  uint64_t blocks = blockCount(n, spec.blockSize);
  scales.resize(blocks);
  std::memcpy(scales.data(), in, blocks * sizeof(float));
  const auto *codes =
      reinterpret_cast<const uint8_t *>(in) + blocks * sizeof(float);
  if (accumulate)
    checkKernel(k::dequantizeAccumulate(widthOf(spec.wire), int64_t(n),
                                        int64_t(spec.blockSize), codes,
                                        scales.data(), static_cast<float *>(y)),
                "dequantizeAccumulate");
  else
    checkKernel(k::dequantizeBlocks(widthOf(spec.wire), valueTypeOf(type),
                                    int64_t(n), int64_t(spec.blockSize), codes,
                                    scales.data(), y),
                "dequantizeBlocks");
}

/// Product of sizes[from, end).
uint64_t product(llvm::ArrayRef<int> sizes, size_t from) {
  uint64_t p = 1;
  for (size_t l = from; l < sizes.size(); ++l)
    p *= uint64_t(sizes[l]);
  return p;
}
} // namespace

bool QuantizedCollectives::postStep(uint32_t index) {
  Running &op = ops[index];
  const QuantizedSpec &spec = op.spec;
  Lane &lane = laneOf(index);
  int levels = int(lane.sizes.size());
  if (op.step >= levels)
    return false;
  MPI_Request request = MPI_REQUEST_NULL;
  if (spec.kind == CollectiveKind::AllGather) {
    uint64_t payload = payloadBytes(spec.wire, spec.count, spec.blockSize);
    if (op.step == 0) {
      lane.sendBuf.resize(payload);
      pack(spec, spec.type, spec.count, spec.send, lane.sendBuf.data(),
           lane.scales);
      op.gathered = 1;
    }
    int l = levels - 1 - op.step; // outermost first
    uint64_t bytes = op.gathered * payload;
    lane.recvBuf.resize(bytes * uint64_t(lane.sizes[l]));
    checkMPI(MPI_Iallgather(lane.sendBuf.data(), int(bytes), MPI_BYTE,
                            lane.recvBuf.data(), int(bytes), MPI_BYTE,
                            lane.dups[l], &request),
             "MPI_Iallgather (quantized all-gather)");
  } else {
    int l = op.step; // innermost first
    int members = lane.sizes[l];
    uint64_t perChunk = product(lane.sizes, l + 1); // blocks of a chunk
    uint64_t n = spec.count * perChunk;             // elements of a chunk
    uint64_t payload = payloadBytes(spec.wire, n, spec.blockSize);
    // The input: the caller's buffer, then the fp32 partial sums.
    ElemType type = l == 0 ? spec.type : ElemType::F32;
    const auto *input =
        l == 0 ? static_cast<const std::byte *>(spec.send)
               : reinterpret_cast<const std::byte *>(lane.acc.data());
    uint64_t blockBytes = spec.count * getElemBytes(type);
    lane.sendBuf.resize(payload * uint64_t(members));
    lane.recvBuf.resize(payload * uint64_t(members));
    for (int j = 0; j < members; ++j) {
      const std::byte *chunk = input + uint64_t(j) * blockBytes;
      if (spec.levelOrderRanks) {
        // Level-order ranks: member j's blocks are contiguous.
        chunk = input + uint64_t(j) * perChunk * blockBytes;
      } else if (perChunk > 1) {
        // Blocks j, j + k_l, j + 2 k_l, ... side by side.
        lane.stage.resize(n * getElemBytes(type));
        for (uint64_t b = 0; b < perChunk; ++b)
          std::memcpy(lane.stage.data() + b * blockBytes,
                      input +
                          (b * uint64_t(members) + uint64_t(j)) * blockBytes,
                      blockBytes);
        chunk = lane.stage.data();
      }
      pack(spec, type, n, chunk, lane.sendBuf.data() + uint64_t(j) * payload,
           lane.scales);
    }
    checkMPI(MPI_Ialltoall(lane.sendBuf.data(), int(payload), MPI_BYTE,
                           lane.recvBuf.data(), int(payload), MPI_BYTE,
                           lane.dups[l], &request),
             "MPI_Ialltoall (quantized reduce-scatter)");
  }
  engine.track(index, request);
  return true;
}

void QuantizedCollectives::finishStep(uint32_t index) {
  Running &op = ops[index];
  const QuantizedSpec &spec = op.spec;
  Lane &lane = laneOf(index);
  if (spec.kind == CollectiveKind::AllGather) {
    int l = int(lane.sizes.size()) - 1 - op.step;
    op.gathered *= uint64_t(lane.sizes[l]);
    std::swap(lane.sendBuf, lane.recvBuf);
    return;
  }
  int l = op.step;
  uint64_t n = spec.count * product(lane.sizes, l + 1);
  uint64_t payload = payloadBytes(spec.wire, n, spec.blockSize);
  lane.accNext.resize(n);
  for (int j = 0; j < lane.sizes[l]; ++j)
    unpack(spec, ElemType::F32, n, lane.recvBuf.data() + uint64_t(j) * payload,
           lane.accNext.data(), /*accumulate=*/j > 0, lane.scales);
  std::swap(lane.acc, lane.accNext);
}

void QuantizedCollectives::finish(uint32_t index) {
  Running &op = ops[index];
  const QuantizedSpec &spec = op.spec;
  Lane &lane = laneOf(index);
  unsigned elemBytes = getElemBytes(spec.type);
  if (lane.sizes.empty()) {
    // One member: nothing to send; the result is the input.
    std::memmove(spec.recv, spec.send, spec.count * elemBytes);
    return;
  }
  if (spec.kind == CollectiveKind::AllGather) {
    // Payload e: digits index_0 (slowest) ... index_{L-1} (fastest); the
    // group rank is sum_l index_l * prod_{j < l} k_j.
    uint64_t payload = payloadBytes(spec.wire, spec.count, spec.blockSize);
    int levels = int(lane.sizes.size());
    for (uint64_t e = 0; e < op.gathered; ++e) {
      uint64_t rest = e, rank = 0, stride = 1;
      llvm::SmallVector<uint64_t, kMaxWireLevels> digits(levels);
      for (int l = levels - 1; l >= 0; --l) {
        digits[l] = rest % uint64_t(lane.sizes[l]);
        rest /= uint64_t(lane.sizes[l]);
      }
      for (int l = 0; l < levels; ++l) {
        rank += digits[l] * stride;
        stride *= uint64_t(lane.sizes[l]);
      }
      // Level-order ranks: the group rank is e itself.
      if (spec.levelOrderRanks)
        rank = e;
      unpack(spec, spec.type, spec.count, lane.sendBuf.data() + e * payload,
             static_cast<std::byte *>(spec.recv) +
                 rank * spec.count * elemBytes,
             /*accumulate=*/false, lane.scales);
    }
    return;
  }
  // Reduce-scatter: lane.acc holds this rank's block in fp32.
  float *sum = lane.acc.data();
  if (spec.average) {
    float members = float(product(lane.sizes, 0));
    for (uint64_t i = 0; i < spec.count; ++i)
      sum[i] /= members;
  }
  if (spec.type == ElemType::F32)
    std::memcpy(spec.recv, sum, spec.count * sizeof(float));
  else
    checkKernel(
        k::toHalf(spec.type == ElemType::BF16 ? k::Half::BF16 : k::Half::F16,
                  int64_t(spec.count), sum, static_cast<uint16_t *>(spec.recv)),
        "toHalf");
}

#else // !RATRAIN_RUNTIME_HAS_KERNELS

bool QuantizedCollectives::postStep(uint32_t) {
  fatal("quantized collectives need the Halide kernels "
        "(RATRAIN_ENABLE_KERNELS=ON)");
}
void QuantizedCollectives::finishStep(uint32_t) {}
void QuantizedCollectives::finish(uint32_t) {}

#endif // RATRAIN_RUNTIME_HAS_KERNELS

Token Runtime::submitQuantized(const QuantizedSpec &spec, const char *what) {
#ifndef RATRAIN_RUNTIME_HAS_KERNELS
  fatal(llvm::formatv("{0}: quantized collectives need the Halide kernels "
                      "(RATRAIN_ENABLE_KERNELS=ON)",
                      what));
#endif
  if (spec.type != ElemType::F32 && spec.type != ElemType::BF16 &&
      spec.type != ElemType::F16)
    fatal(llvm::formatv("{0}: a {1} wire quantizes f32, bf16 or f16 "
                        "elements, not {2}",
                        what, stringifyWireType(spec.wire),
                        stringifyElemType(spec.type)));
  if (spec.levels.size() > kMaxWireLevels)
    fatal(llvm::formatv("{0}: {1} levels exceed the {2} a quantized "
                        "collective supports",
                        what, spec.levels.size(), kMaxWireLevels));
  if (spec.blockSize < 1 || spec.blockSize > uint64_t(INT_MAX))
    fatal(llvm::formatv("{0}: quantization block size {1} is not in [1, {2}] "
                        "(RATRAIN_QUANT_BLOCK)",
                        what, spec.blockSize, INT_MAX));
  uint64_t members = 1;
  for (int size : spec.sizes)
    members *= uint64_t(size);
  // Every MPI count and kernel extent must fit an int: the largest is a
  // level's whole exchange.
  uint64_t largest =
      payloadBytes(spec.wire, spec.count * members, spec.blockSize);
  if (spec.count * members >= uint64_t(INT_MAX) || largest >= uint64_t(INT_MAX))
    fatal(llvm::formatv("{0}: {1} elements exceed the {2} a quantized "
                        "collective handles at once; split the buffer into "
                        "buckets",
                        what, spec.count * members, INT_MAX));
  countWireBytes(wireCounters, spec);
  Token token = pool->acquire(what, issueTimeout);
  quantized->prepare(token.index, spec);
  CommEngine::Op request{};
  request.kind = CommEngine::Kind::Quantized;
  comm->submit(token, request);
  return token;
}
