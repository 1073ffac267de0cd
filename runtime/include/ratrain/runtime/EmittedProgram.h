//===- EmittedProgram.h - What emitted training programs call ---*- C++ -*-===//
//
// The interface between `ratrain-translate --mt3k-to-cpp` and the runtime
// (docs/emitter.md): an emitted program includes only this header. Each mt3k
// op becomes one call of a helper declared here; the helpers adapt the typed
// mt3k operands (a Tensor: a runtime Buffer plus its element type) to the
// fp32 host kernels of runtime/kernels and to the runtime API. The program
// defines one function per pipeline stage and a ProgramDescription, and its
// main() is runProgram().
//
// Implemented in runtime/src/EmittedProgram.cpp (memory, prologue,
// communication, checkpoints, runProgram) and EmittedProgramKernels.cpp (the
// compute kernels and their fp32 staging); part of ratrain_runtime.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_RUNTIME_EMITTEDPROGRAM_H
#define RATRAIN_RUNTIME_EMITTEDPROGRAM_H

#include "ratrain/kernels/Kernels.h"
#include "ratrain/runtime/Runtime.h"
#include "ratrain/runtime/Session.h"

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace ratrain::rt::emit {

/// A runtime buffer with the element type of its mt3k buffer type.
struct Tensor {
  Buffer buf;
  ElemType type = ElemType::U8;
  uint64_t numel() const { return buf.bytes / getElemBytes(type); }
};

//===--- memory -----------------------------------------------------------===//
/// The `bytes` at `offset` of the DDR / GSM arena (fatal beyond its planned
/// capacity).
Tensor ddr(Runtime &r, uint64_t offset, uint64_t bytes, ElemType type);
Tensor gsm(Runtime &r, uint64_t offset, uint64_t bytes, ElemType type);
/// An AM buffer is the same range in every core's AM; kernels see core 0's.
Tensor am(Runtime &r, uint64_t offset, uint64_t bytes, ElemType type);
/// `bytes` at `byteOffset` of `source`, as `type`.
Tensor view(const Tensor &source, uint64_t byteOffset, uint64_t bytes,
            ElemType type);
/// This rank's block of `source`, which holds one block of `bytes` per rank
/// of `group` in rank order (mt3k.group_slot): `bytes` at groupRank(group) x
/// `bytes`, as `type`. Fatal when `source` is not groupSize(group) blocks,
/// or when on the data group the block is not this rank's ZeRO shard.
Tensor groupSlot(Runtime &r, Group group, const Tensor &source, uint64_t bytes,
                 ElemType type);

//===--- kernels (EmittedProgramKernels.cpp) ------------------------------===//
// Each runs one host kernel, adds its time to this rank's kernel seconds of
// the step and checks its status (fatal, naming the kernel). 16-bit operands
// are staged through fp32 (EmittedProgramStaging.h).

/// c (+)= alpha op(a) op(b); M, N, K of the kernel's GemmForm.
void gemm(const Tensor &a, const Tensor &b, const Tensor &c,
          kernels::GemmForm form, int64_t M, int64_t N, int64_t K,
          bool accumulate, double alpha);
/// Causal attention; `alibi`: the scores get the ALiBi bias of Hq heads.
void attentionFwd(const Tensor &q, const Tensor &k, const Tensor &v,
                  const Tensor &o, const Tensor &lse, int64_t B, int64_t S,
                  int64_t Hq, int64_t Hkv, int64_t D, double scale, bool alibi,
                  int64_t window = 0);
void attentionBwd(const Tensor &q, const Tensor &k, const Tensor &v,
                  const Tensor &o, const Tensor &dout, const Tensor &lse,
                  const Tensor &dq, const Tensor &dk, const Tensor &dv,
                  int64_t B, int64_t S, int64_t Hq, int64_t Hkv, int64_t D,
                  double scale, bool alibi, int64_t window = 0);
void rmsnormFwd(const Tensor &x, const Tensor &w, const Tensor &y,
                const Tensor &rstd, int64_t T, int64_t H, double eps);
/// The kernel accumulates dw; without `accumulate` dw is zeroed first.
void rmsnormBwd(const Tensor &x, const Tensor &w, const Tensor &rstd,
                const Tensor &dy, const Tensor &dx, const Tensor &dw, int64_t T,
                int64_t H, bool accumulate);
/// x, y [B, S, heads, D]; in place allowed (the input is copied). Tables and
/// positions (t mod S) are built once per (S, D, theta).
void rope(const Tensor &x, const Tensor &y, int64_t B, int64_t S, int64_t heads,
          int64_t D, double theta, bool backward);
/// The same with the rotary frequencies rescaled (HF rope_scaling).
void rope(const Tensor &x, const Tensor &y, int64_t B, int64_t S, int64_t heads,
          int64_t D, double theta, bool backward,
          const ratrain::RopeScaling &scaling);
void swiglu(const Tensor &g, const Tensor &u, const Tensor &h, int64_t T,
            int64_t F);
void swigluBwd(const Tensor &g, const Tensor &u, const Tensor &dh,
               const Tensor &dg, const Tensor &du, int64_t T, int64_t F);
void residualAdd(const Tensor &a, const Tensor &b, const Tensor &c);
void embedding(const Tensor &table, const Tensor &ids, const Tensor &x,
               int64_t T, int64_t V, int64_t H);
/// Scatter-add into dtable (accumulated).
void embeddingBwd(const Tensor &ids, const Tensor &dx, const Tensor &dtable,
                  int64_t T, int64_t V, int64_t H);
/// loss = the mean token loss over the rows whose label is in [0, V).
void crossEntropy(const Tensor &logits, const Tensor &labels,
                  const Tensor &loss, int64_t T, int64_t V);
/// dlogits = (softmax(logits) - onehot(labels)) * scale; may be logits.
void crossEntropyBwd(const Tensor &logits, const Tensor &labels,
                     const Tensor &dlogits, int64_t T, int64_t V, double scale);
/// Element type conversion or copy (same shape).
void cast(const Tensor &x, const Tensor &y);
void scale(const Tensor &x, const Tensor &y, double factor);
/// The elements of an AdamW call that take no weight decay (mt3k.adamw's
/// no_decay): element i of the call is element firstElement + i of its
/// layer's flat parameters, plus shardIndex() * shardElements when the call
/// updates part of a ZeRO shard (shardElements > 0); `ranges` holds the
/// layer's exempt [begin, end) pairs, ascending. Empty: all decay.
struct NoDecay {
  int64_t firstElement = 0;
  int64_t shardElements = 0;
  std::vector<int64_t> ranges;
};

/// One AdamW step; the step number for bias correction is the session's.
void adamw(Session &session, const Tensor &g, const Tensor &p, const Tensor &m,
           const Tensor &v, const Tensor &viewOut, double lr, double beta1,
           double beta2, double eps, double weightDecay, double gradScale,
           const NoDecay &noDecay = {});
/// AdamW on a gradient a reduce-scatter left in two parts
/// (Runtime::reduceScatter's `leaveOwn`): `others` holds the other members'
/// sum of this rank's shard, `own` this rank's contribution; the update
/// reads their average over `members`, rounded as the reduce-scatter's own
/// average would have been (the same update, bit for bit).
void adamwAveraged(Session &session, const Tensor &others, const Tensor &own,
                   int64_t members, const Tensor &p, const Tensor &m,
                   const Tensor &v, const Tensor &viewOut, double lr,
                   double beta1, double beta2, double eps, double weightDecay,
                   double gradScale, const NoDecay &noDecay = {});
void fill(const Tensor &t, double value);
/// acc (an f32 scalar) += weight * sum of x's squares (summed in float64).
void sumSquares(const Tensor &x, const Tensor &acc, double weight);
/// AdamW on a clipped gradient: `squaredNorm` is the all-reduced sum of
/// squares of the step's gradients; the gradient is multiplied by
/// min(1, maxGradNorm / (sqrt(squaredNorm) + 1e-6)) (PyTorch's
/// clip_grad_norm_) on top of `gradScale`. The norm goes to the step log.
void adamwClipped(Session &session, const Tensor &g, const Tensor &p,
                  const Tensor &m, const Tensor &v, const Tensor &viewOut,
                  double lr, double beta1, double beta2, double eps,
                  double weightDecay, double gradScale,
                  const Tensor &squaredNorm, double maxGradNorm,
                  const NoDecay &noDecay = {});

//===--- prologue ---------------------------------------------------------===//
void initParam(const Tensor &t, InitKind kind, const char *param, double std,
               uint64_t elementOffset);
/// ZeRO: the part of tensor `name` (elements [tensorOffset, +numel) of the
/// flattened layer) inside this data rank's shard of `shardElements`.
/// A streamed shard is initialized in pieces: `shard` then holds elements
/// [pieceOffset, + its elements) of this rank's shard.
void initShardTensor(Runtime &r, const Tensor &shard, const char *name,
                     uint64_t tensorOffset, uint64_t numel, InitKind kind,
                     double std, uint64_t shardElements,
                     uint64_t pieceOffset = 0);
/// ZeRO shard of a zeros/ones state: elements r * shardElements + i.
void initShard(Runtime &r, const Tensor &shard, InitKind kind,
               const char *param, double std, uint64_t shardElements,
               uint64_t pieceOffset = 0);

/// Elements [lo, hi) of [begin, end) and [tensorOffset, tensorOffset +
/// numel): the part of a tensor inside a shard. Empty when lo >= hi.
struct ShardRange {
  uint64_t lo = 0, hi = 0;
  bool empty() const { return lo >= hi; }
};
ShardRange intersectShard(uint64_t begin, uint64_t end, uint64_t tensorOffset,
                          uint64_t numel);

//===--- asynchronous operations ------------------------------------------===//
Token dma(Runtime &r, const Tensor &src, const Tensor &dst, int core,
          int channel);
Token allReduce(Runtime &r, Group g, const Tensor &src, const Tensor &dst,
                ReduceOp op, CollectiveAlgorithm algorithm);
/// mt3k.all_reduce ... every `period` phase `phase`: the all-reduce in the
/// training steps s with s mod period = phase; in the other steps and in
/// validation steps a completed token, `dst` untouched.
Token periodicAllReduce(Runtime &r, Session &s, Group g, const Tensor &src,
                        const Tensor &dst, ReduceOp op,
                        CollectiveAlgorithm algorithm, int64_t period,
                        int64_t phase);
/// `wire`: mt3k's `wire int8|int4` (quantized, ZeRO++ qgZ / qwZ).
Token reduceScatter(Runtime &r, Group g, const Tensor &src, const Tensor &dst,
                    ReduceOp op, CollectiveAlgorithm algorithm,
                    WireType wire = WireType::Native);
/// mt3k.reduce_scatter with `leave_own`: `dst` receives the other members'
/// sum of this rank's block; the update adds the rest (adamwAveraged).
Token reduceScatterLeavingOwn(Runtime &r, Group g, const Tensor &src,
                              const Tensor &dst, ReduceOp op,
                              CollectiveAlgorithm algorithm);
Token allGather(Runtime &r, Group g, const Tensor &src, const Tensor &dst,
                CollectiveAlgorithm algorithm,
                WireType wire = WireType::Native);
Token broadcast(Runtime &r, Group g, const Tensor &t, int root);
Token send(Runtime &r, Group g, int peer, int tag, const Tensor &t);
Token recv(Runtime &r, Group g, int peer, int tag, const Tensor &t);
/// mt3k.send with `put at targetOffset` and mt3k.recv with `one_sided` (on
/// the pipeline group only).
Token put(Runtime &r, Group g, int peer, int tag, const Tensor &t,
          int64_t targetOffset);
Token arrival(Runtime &r, Group g, int peer, int tag, const Tensor &t);
/// Blocking waits count into this rank's wait seconds of the step.
void barrier(Runtime &r, Group g);
Token offload(Runtime &r, const Tensor &t, StorageTier tier, const char *key);
Token reload(Runtime &r, const Tensor &t, StorageTier tier, const char *key);
/// The tier copy of (a piece of) an offloaded state, for checkpoints: the
/// `window.buf.bytes` bytes at `byteOffset` of what the prologue offloaded
/// under `key` (`window` is the view the prologue initialized it in). Between
/// steps the state lives there: a checkpoint saves it and a resume loads it,
/// and the next step reloads it. Storage-tier copies are files: programs that
/// keep states there cannot checkpoint (fatal with --ckpt). A state streamed
/// in chunks is initialized in pieces: `bytes` (when not 0) is the size of
/// the whole tensor in the tier copy, where its pieces are contiguous.
Tensor offloaded(Runtime &r, Session &s, const Tensor &window, StorageTier tier,
                 const char *key, uint64_t byteOffset, uint64_t bytes = 0);
/// Waits for all `tokens`; the time counts as wait seconds of the step.
void waitAll(Runtime &r, std::initializer_list<Token> tokens);
template <typename... Tokens> void wait(Runtime &r, Tokens... tokens) {
  waitAll(r, {tokens...});
}

//===--- per-op trace (Trace.h) -------------------------------------------===//
/// mt3k.trace_begin / trace_end: the span of one schedule op's work, named
/// `label` (a string literal) as the simulator names it; recorded only in
/// the steps --trace-steps selects.
void traceBegin(Runtime &r, const char *label, TracePhase phase);
void traceEnd(Runtime &r);

//===--- session ----------------------------------------------------------===//
/// Registers one parameter tensor for checkpoints (master, Adam moments); a
/// 16-bit `view` is re-derived from the master after a resume (start()).
void addParam(Session &s, const char *name, std::vector<int64_t> shape,
              const Tensor &master, const Tensor &m, const Tensor &v,
              const Tensor &view);
/// ZeRO: registers tensor `name` (elements [tensorOffset, +numel) of its
/// layer's flattened parameters) for checkpoints as the piece of it inside
/// this data rank's layer shard, elements [r * shardElements, (r + 1) *
/// shardElements) of the layer, held in `master`, `m` and `v`; the piece may
/// be empty. `view` is the replicated full tensor (16-bit, or the fp32 tensor
/// of an F32 model), written once per tensor to the model file and loaded
/// back as is on --resume.
void addShardParam(Session &s, Runtime &r, const char *name,
                   std::vector<int64_t> shape, uint64_t tensorOffset,
                   uint64_t numel, uint64_t shardElements, const Tensor &master,
                   const Tensor &m, const Tensor &v, const Tensor &view);
/// Session::start; after a resume, the 16-bit views follow the loaded
/// masters.
uint64_t start(Session &s);
void loadBatch(Session &s, BatchField field, const Tensor &t,
               int64_t microBatch);
void reportLoss(Session &s, const Tensor &t, int64_t microBatch);
/// Whether this rank runs micro-batch `microBatch` (below its replica's dp
/// share): the guard of the ops marked `mt3k.micro_batch`.
inline bool runsMicroBatch(Session &s, int64_t microBatch) {
  return s.runsMicroBatch(microBatch);
}

//===--- the program ------------------------------------------------------===//
/// One pipeline stage's program: its prologue, then the session's step loop.
struct StageProgram {
  int64_t stage;
  void (*run)(Runtime &r, Session &s);
};

/// The Session's model, from the mt3k module (the fields of ModelConfig an
/// emitted program sets).
struct ProgramModel {
  const char *name;
  ModelFamily family;
  int64_t numLayers, hidden, numHeads, numKVHeads, ffnHidden, vocab, seqLen,
      maxPositions;
  DType dtype;
  bool qkvBias;
  double rmsNormEps, ropeTheta;
  /// The LM head is the embedding table (no lm_head.weight of its own).
  bool tieEmbeddings;
  /// The attention heads' width when not hidden / numHeads; 0 otherwise.
  int64_t headDimension;
};

/// What an emitted program's main() runs: the runtime sized from the
/// mt3k.machine, the groups and the programs' arenas, the session from the
/// model and plan, and the program of this rank's stage.
struct ProgramDescription {
  const char *machine; ///< The mt3k.machine's name, for messages.
  int pp, dp;
  uint64_t ddrBytes, gsmBytes, amBytes;
  int cores, dmaChannels;
  uint64_t arenaAlignment;
  /// Null: an empty model (a module without one) and an even partition.
  const ProgramModel *model;
  /// The first decoder layer of each virtual stage and the layer count
  /// (virtual stages + 1 entries); null: StagePartition::even.
  const int64_t *partition;
  size_t partitionSize;
  /// SessionOptions defaults (flags override them).
  int64_t seqLen, microBatch, microBatches;
  const StageProgram *stages;
  size_t numStages;
  /// The rank that runs each virtual stage (interleaved schedules; emitted
  /// last, so other programs leave them out); null: virtual stage s on rank s.
  const int64_t *stageRanks = nullptr;
  size_t stageRanksSize = 0;
  /// The program runs ZeRO collectives on the partition groups: shards are
  /// laid out by Runtime::partitionIndex (RuntimeOptions::partitionedShards).
  bool partitionedShards = false;
  /// The program's pipeline messages are one-sided puts
  /// (RuntimeOptions::oneSidedPipeline).
  bool oneSidedTransfers = false;
  /// Uneven data-parallel shares (mt3k.job replica_micro_batches): the
  /// micro-batches of each replica; null: microBatches each.
  const int64_t *replicaMicroBatches = nullptr;
  size_t replicaMicroBatchesSize = 0;
  /// Ranks replica-major (rank = replica * pp + stage).
  bool replicaMajor = false;
  /// Per rank, how much slower its class of a heterogeneous machine is than
  /// the fastest (mt3k.job rank_slowdown); applied with --emulate-classes.
  const double *rankSlowdown = nullptr;
  size_t rankSlowdownSize = 0;
  /// Host-cache bytes of the storage tier per rank (mt3k.machine
  /// offload_host_cache; RuntimeOptions::offloadHostCacheBytes).
  uint64_t offloadHostCacheBytes = 0;
};

/// Builds the Runtime and the Session of `program`, runs the program of this
/// rank's stage; returns the process's exit code. With RATRAIN_COUNTERS=<file>
/// rank 0 writes its collective counters there at the end (one line per
/// non-zero entry: `native <kind> <algorithm> <level> <bytes>`, `wire <kind>
/// <int8|int4> <level> <bytes>`, then `level <l> <bytes>`, the sum of both
/// per network level; docs/runtime.md, "Counters").
int runProgram(int argc, char **argv, const ProgramDescription &program);

} // namespace ratrain::rt::emit

#endif // RATRAIN_RUNTIME_EMITTEDPROGRAM_H
