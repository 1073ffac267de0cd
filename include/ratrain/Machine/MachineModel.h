//===- MachineModel.h - A machine with a memory hierarchy -------*- C++ -*-===//
//
// What RATrain knows about the machine it plans for, simulates and runs on:
// compute clusters (MT-3000: 20 GB usable DDR, 6 MB GSM, per-core AM, DMA),
// their peak rates and attainable kernel efficiencies, and the network that
// joins them. Read from a YAML machine file (examples/machines/*.yaml) with
// LLVM's YAML I/O. All quantities are in SI base units: bytes, bytes/s,
// FLOP/s, seconds.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MACHINE_MACHINEMODEL_H
#define RATRAIN_MACHINE_MACHINEMODEL_H

#include "ratrain/Machine/KernelTimeFit.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ratrain {

/// Fractions of peak that kernels attain on this machine.
struct KernelEfficiency {
  double gemm = 0.7; ///< of peak low-precision FLOP/s
  double attentionForward = 0.5;
  double attentionBackward = 0.4;
  double memoryBound =
      0.8; ///< of DDR bandwidth (norms, elementwise, optimizer)
  /// A 16-bit model's attention, of peak_flops_f16 (machine-file keys
  /// `attention_forward_f16` / `attention_backward_f16`); 0 when absent: the
  /// fp32 attention efficiencies then price it too.
  double attentionForwardF16 = 0;
  double attentionBackwardF16 = 0;
};

/// A kernel's time fits per operand type: fp32 and 16-bit operands (each on
/// the peak of its type). Machine-file mapping (`gemm_fit:`,
/// `attention_forward_fit:`, `attention_backward_fit:`) with `f32:` and
/// `f16:`.
struct KernelTimeFits {
  KernelTimeFit f32, f16;
};

/// How a GEMM call reads its operands, as the runtime's kernels name it:
/// C[m x n] = A B with A [m x k] and B [n x k] (NT: a linear layer's
/// forward, X W^T), [k x n] (NN: its input gradient, dY W) or, A read as
/// [k x m], TN (its weight gradient, dY^T X).
enum class GemmForm { NT, NN, TN };
llvm::StringRef stringifyGemmForm(GemmForm form);
/// Parses "NT", "NN", "TN".
std::optional<GemmForm> parseGemmForm(llvm::StringRef name);

/// One GEMM call's measured time on a cluster: what the call took on this
/// machine (the calibration times the shapes of the time fit and of the
/// models it is given, operands cycled through the last-level cache).
struct MeasuredGemm {
  GemmForm form = GemmForm::NT;
  int64_t m = 0, n = 0, k = 0;
  double seconds = 0;
};

/// Measured GEMM calls per operand type. Machine-file mapping
/// `gemm_measured:` with `f32:` and `f16:`, each a list of
/// `{form, m, n, k, seconds}`. The cost model prices a call of a listed
/// shape at its measured time and any other with the fit (`gemm_fit`): a
/// fit of four terms misses single shapes by 5-10% where the kernels' tiles
/// divide them unevenly, which a model's own shapes measured do not.
struct MeasuredGemms {
  std::vector<MeasuredGemm> f32, f16;
  bool empty() const { return f32.empty() && f16.empty(); }
  /// The measured seconds of a call of this shape with 16-bit (`f16`) or
  /// fp32 operands; nullopt when it is not listed.
  std::optional<double> find(bool f16, GemmForm form, int64_t m, int64_t n,
                             int64_t k) const;
};

/// One compute cluster: the unit that gets one MPI rank and one DDR arena.
struct ClusterSpec {
  int64_t cores = 24;
  int64_t ddrBytes = 0;       ///< Usable DDR (the planner's hard cap).
  int64_t gsmBytes = 0;       ///< Shared on-chip memory.
  int64_t amBytesPerCore = 0; ///< Per-core array memory.
  /// Bytes/s of DDR a cluster's memory-bound kernels get while every
  /// cluster of its node streams at once (its share of the node's DDR).
  double ddrBandwidth = 0;
  /// Bytes/s a cluster's memory-bound kernels get while no other cluster of
  /// its node streams (at least ddrBandwidth, at most the node's
  /// clustersPerNode x ddrBandwidth). Given, the simulator shares each
  /// node's DDR among the memory-bound kernels (updates, view casts) and the
  /// DMA, offload and message flows that run at the same moment
  /// (docs/simulator.md, "Shared DDR"); 0 (absent): each cluster has its
  /// ddrBandwidth to itself. Machine-file key `ddr_bandwidth_alone`.
  double ddrBandwidthAlone = 0;
  /// Bytes/s an fp32 model's optimizer update (AdamW over its master,
  /// moments and gradient, as CostModel::optimizerUpdate counts them)
  /// streams on a cluster while every cluster of its node updates at once,
  /// and while no other cluster streams. Given (both or neither), the update
  /// is priced at these rather than at ddr_bandwidth x memory_bound: a
  /// kernel that streams several arrays with little arithmetic can take more
  /// of the DDR alone than the triad does, and little more with all clusters
  /// streaming. Machine-file keys `optimizer_bandwidth`,
  /// `optimizer_bandwidth_alone`; 0: absent.
  double optimizerBandwidth = 0;
  double optimizerBandwidthAlone = 0;
  /// The same for a 16-bit model's update (16-bit gradients widened in the
  /// kernel, the 16-bit view written): keys `optimizer_bandwidth_f16`,
  /// `optimizer_bandwidth_alone_f16`; 0 (absent): the fp32 pair prices it.
  double optimizerBandwidthF16 = 0;
  double optimizerBandwidthAloneF16 = 0;

  /// The update's rates for a model of 16-bit (`sixteenBit`) or fp32
  /// gradients: {with every cluster updating, alone}; {0, 0} when the
  /// machine gives none (ddr_bandwidth x memory_bound prices it).
  std::pair<double, double> optimizerBandwidths(bool sixteenBit) const {
    if (sixteenBit && optimizerBandwidthF16 > 0)
      return {optimizerBandwidthF16, optimizerBandwidthAloneF16};
    return {optimizerBandwidth, optimizerBandwidthAlone};
  }
  /// Bytes/s a decoder layer's element-wise kernels (its RMSNorms, RoPE,
  /// SwiGLU and residual adds, forward and backward, on the bytes
  /// CostModel counts for them) stream on a cluster of an fp32 model while
  /// every cluster of its node runs them at once, as a step runs them on one
  /// micro-batch: operands the kernel before left in the caches, and a
  /// kernel's widening and rounding on 16-bit activations, make their rate
  /// differ from the triad's. Given, the layers' element-wise kernels are
  /// priced at it rather than at ddr_bandwidth x memory_bound. Machine-file
  /// key `elementwise_bandwidth`; 0: absent.
  double elementwiseBandwidth = 0;
  /// The same for a 16-bit model's layers (bf16 / fp16 activations, fp32
  /// inside): key `elementwise_bandwidth_f16`; 0 (absent): the fp32 rate
  /// prices them.
  double elementwiseBandwidthF16 = 0;
  /// The layers' element-wise rate for 16-bit (`sixteenBit`) or fp32
  /// activations; 0 when the machine gives none.
  double elementwiseBandwidthFor(bool sixteenBit) const {
    return sixteenBit && elementwiseBandwidthF16 > 0 ? elementwiseBandwidthF16
                                                     : elementwiseBandwidth;
  }
  double dmaBandwidth = 0; ///< bytes/s, DDR <-> GSM/AM, all channels
  int64_t dmaChannels = 1;
  /// The cluster's DMA copies run on its compute cores (a CPU host, where
  /// the runtime's DMA engine is a thread doing memcpy), not on an engine
  /// of their own (MT-3000). Staging through GSM then buys no overlap and
  /// costs a copy on the cores, so the lowering writes the optimizer's
  /// refreshed view straight into place. Machine-file key `dma_on_cores`
  /// (default false).
  bool dmaOnCores = false;
  double peakFlopsF16 = 0; ///< FLOP/s, 16-bit inputs, fp32 accumulate
  double peakFlopsF32 = 0; ///< FLOP/s
  KernelEfficiency efficiency;
  /// Shape-aware GEMM times (optional; efficiency.gemm prices the GEMMs of
  /// an operand type without a fit).
  KernelTimeFits gemmFit;
  /// GEMM calls of given shapes measured on this machine (optional; a listed
  /// shape is priced at its measured time, others by gemmFit).
  MeasuredGemms gemmMeasured;
  /// Shape-aware times of the fused attention kernels, forward and backward
  /// (optional; efficiency.attention_* prices the attention without one).
  /// Their `elements` are the score entries a call computes (B x Hq x the
  /// causal S^2 / 2): the softmax's exponentials and the per-block
  /// bookkeeping cost per score whatever the head width, so narrow heads
  /// reach a smaller fraction of peak than wide ones.
  KernelTimeFits attentionForwardFit, attentionBackwardFit;
  /// Attention kernels keep the s x s scores on chip (flash-style tiling
  /// through AM/GSM): only per-row softmax statistics reach DDR. Machine-file
  /// key `fused_attention` (default false: the scores are materialized, as
  /// in the standard activation formulas).
  bool fusedAttention = false;
  /// The attention kernels compute in fp32 whatever the model's type (they
  /// read and write 16-bit activations but their products are fp32), so a
  /// 16-bit model's attention runs at peak_flops_f32, not peak_flops_f16.
  /// Machine-file key `attention_peak: f32` (default `f16`: a 16-bit model's
  /// attention runs at the 16-bit peak, like its GEMMs).
  bool attentionAtF32Peak = false;
};

/// Point-to-point link class: bandwidth per direction and per-message latency.
struct LinkSpec {
  double bandwidth = 0; ///< bytes/s
  double latency = 0;   ///< seconds
};

/// Collective algorithms the cost model and the simulator know.
enum class CollectiveAlgorithm { Ring, Tree, Hierarchical };
llvm::StringRef stringifyCollectiveAlgorithm(CollectiveAlgorithm algorithm);
/// Parses "ring", "tree", "hierarchical".
std::optional<CollectiveAlgorithm>
parseCollectiveAlgorithm(llvm::StringRef name);
/// The algorithm of a gradient sync on a machine whose collective is
/// `collective`: hierarchical where the data-parallel group spans nodes,
/// else a tree on a tree machine and a ring otherwise (the lowering's choice,
/// which the cost models follow).
CollectiveAlgorithm syncAlgorithm(CollectiveAlgorithm collective,
                                  bool spansNodes);

/// The most network levels a machine may have (and a collective may span).
inline constexpr unsigned kMaxNetworkLevels = 4;

/// One level of the network hierarchy. Level 0 groups `size` clusters; level
/// l > 0 groups `size` level-(l-1) groups; the outermost level's group is the
/// whole machine ("the rest": its `size` is implied). Members of a level-l
/// group that lie in different level-(l-1) groups talk over `link` (each
/// member has its own link of that bandwidth); all clusters of one level-l
/// group together send to (and receive from) the levels above at most
/// `injectionBandwidth` (0: no shared limit).
struct NetworkLevel {
  std::string name;
  int64_t size = 0; ///< Members of the level below per group (0: the rest).
  LinkSpec link;
  double injectionBandwidth = 0; ///< bytes/s per group, shared; 0 = none
};

/// The network. Either an explicit list of levels (`levels`, innermost
/// first: e.g. the clusters of a chip, the chips of a node, the nodes), or
/// the two-level shorthand: a node holds `clustersPerNode` clusters joined by
/// intra-node links; nodes are joined by a switched inter-node network in
/// which each cluster has its own link of `interNode.bandwidth`, and all
/// clusters of a node together inject at most `nodeInjectionBandwidth`.
/// When `levels` is given, `intraNode`, `interNode` and
/// `nodeInjectionBandwidth` are its two-level view (filled by
/// MachineModel::syncNetworkView: the slowest level inside a node, the level
/// that joins nodes, the node's injection limit) for the callers that think
/// in nodes (the planner's cost model); MachineModel::networkLevels() is the
/// authoritative list either way.
/// Switches (or a network-on-chip) that reduce and multicast inside the
/// network, as seed 001's collective NoC: at network level `level`, a
/// collective's reduction steps take 1/reduceSpeedup of the time they take
/// over ordinary links and its all-gather and broadcast steps
/// 1/multicastSpeedup (latency and bytes alike). Machine-file key
/// `network.in_network: {level, reduce_speedup, multicast_speedup}`. The
/// runtime has no such hardware: it runs the ordinary collective.
struct InNetworkCollectives {
  int64_t level = -1; ///< index into MachineModel::networkLevels(); -1: none
  double reduceSpeedup = 1;
  double multicastSpeedup = 1;
  bool present() const { return level >= 0; }
  /// The factor by which the level-`l` steps of a reduction (`reduces`) or a
  /// gather / broadcast are faster: 1 on other levels.
  double speedup(int64_t l, bool reduces) const {
    if (l != level)
      return 1;
    return reduces ? reduceSpeedup : multicastSpeedup;
  }
};

struct NetworkSpec {
  LinkSpec intraNode; ///< between clusters of one node
  LinkSpec interNode; ///< between nodes
  CollectiveAlgorithm collective = CollectiveAlgorithm::Hierarchical;
  /// bytes/s that one node can send to other nodes at once, shared by its
  /// clusters; 0 means clustersPerNode * interNode.bandwidth.
  double nodeInjectionBandwidth = 0;
  /// Explicit levels, innermost first; empty: the two-level shorthand.
  std::vector<NetworkLevel> levels;
  /// In-network reduction and multicast at one level (none by default).
  InNetworkCollectives inNetwork;
  /// One-way latency of a message between clusters of one node while every
  /// core runs two ranks that compute (0: not measured). A host's ranks are
  /// processes whose progress and waiting threads need a core to move a
  /// message; oversubscribed, they wait for one the other ranks keep busy
  /// (ratrain-calibrate measures it with two ranks per core:
  /// docs/machine-model.md). oversubscribe() makes it the latency of the
  /// links inside a node of the split machine. Machine-file key
  /// `network.oversubscribed_latency`.
  double oversubscribedLatency = 0;
  /// The share of a core (0 to 1) a rank's progress thread takes while the
  /// rank has communication outstanding (0: not measured). The host runtime
  /// polls MPI every few tens of microseconds then; each poll wakes the
  /// thread, tests the requests and moves what arrived. With a core per rank
  /// that time is free (the rank waits or the other core idles); on a
  /// machine split into virtual clusters it is taken from the ranks that
  /// compute, and the simulator prices it so. ratrain-calibrate measures it
  /// with two ranks per core (docs/machine-model.md). Machine-file key
  /// `network.progress_core_share`.
  double progressCoreShare = 0;
  /// Bytes per second a rank's own core moves of its collectives' data (0:
  /// not measured, or moved by hardware that takes no core time). A host's
  /// ranks exchange through shared memory, and the copies and reductions run
  /// on the ranks' cores (the progress thread, the compute thread's assisted
  /// passes and its waits) instead of on a NIC or DMA engine; the simulator
  /// charges each collective's bytes at this rate to the rank's compute
  /// stream (docs/simulator.md). ratrain-calibrate measures it as the bytes
  /// each of two ranks receives per second while both exchange large
  /// messages at once. Machine-file key `network.core_copy_bandwidth`.
  double coreCopyBandwidth = 0;
};

/// What backs the offload tier: the node's host memory (DDR of the CPU
/// cores) or storage (node-local or parallel file system).
enum class OffloadTierKind { Host, Storage };
llvm::StringRef stringifyOffloadTierKind(OffloadTierKind kind);
/// Parses "host" and "storage".
std::optional<OffloadTierKind> parseOffloadTierKind(llvm::StringRef name);

/// An extra memory tier below the clusters' DDR, for optimizer-state
/// offload (GriNNder-style storage tier, ZeRO-Offload-style host memory).
/// Machine-file key `offload:`; absent or `bytes_per_node: 0` means none.
struct OffloadTierSpec {
  OffloadTierKind kind = OffloadTierKind::Host;
  /// Capacity per node, shared equally by its clusters; 0 = no tier.
  int64_t bytesPerNode = 0;
  /// bytes/s one cluster moves between its DDR and the tier, shared by
  /// reads and writes (all clusters of a node at once).
  double bandwidth = 0;
  double latency = 0; ///< seconds per transfer (per chunk)
  /// Streaming granularity: offloaded states move in chunks of at most this
  /// many bytes, double-buffered in DDR (Adam is elementwise, so an update
  /// item can be streamed piecewise); 0 = one whole update item (a decoder
  /// layer, the embedding or the head) per buffer.
  int64_t chunkBytes = 0;
  /// A storage tier's host cache (GriNNder): keys that fit in this much of
  /// the node's host memory (shared equally by its clusters; 0: none) stay
  /// there instead of going to storage, moving at `hostCacheBandwidth`
  /// bytes/s per cluster. Machine-file keys `host_cache_bytes_per_node` and
  /// `host_cache_bandwidth` (both or neither; storage tiers only).
  int64_t hostCacheBytesPerNode = 0;
  double hostCacheBandwidth = 0;

  bool present() const { return bytesPerNode > 0 && bandwidth > 0; }
  bool hasHostCache() const {
    return kind == OffloadTierKind::Storage && hostCacheBytesPerNode > 0 &&
           hostCacheBandwidth > 0;
  }
};

/// Limits of heterogeneous machine files.
inline constexpr int64_t kMaxClusterClasses = 8;

/// One class of clusters of a heterogeneous machine (Grolar, HexiScale:
/// pooled accelerators of different generations). Machine-file key
/// `classes:`, a list of
///
///   - name: slow            # unique, [A-Za-z0-9_.-]+
///     count: 512            # clusters of this class (all counts sum to
///                           # nodes * clusters_per_node)
///     compute_scale: 0.5    # x peak_flops_f16 and peak_flops_f32 (1)
///     ddr_bytes: 10e9       # usable DDR (the machine's cluster value)
///     ddr_bandwidth_scale: 1  # x ddr_bandwidth and dma_bandwidth (1)
///     link_scale: 1         # x the bandwidth of the class's links (1)
///
/// Classes take consecutive clusters in file order: the first `count`
/// clusters are of class 0, and so on (rank r runs on cluster r).
struct ClusterClass {
  std::string name;
  int64_t count = 0;
  /// The machine's `cluster:` with this class's overrides applied.
  ClusterSpec cluster;
  /// As written in the file (kept so that printMachineModel round-trips).
  double computeScale = 1;
  double ddrBandwidthScale = 1;
  /// Multiplies the bandwidth of every link a cluster of this class sends
  /// or receives on (a message or collective step between classes runs at
  /// the slower end).
  double linkScale = 1;
};

struct MachineModel {
  std::string name;
  int64_t nodes = 1;
  int64_t clustersPerNode = 1;
  /// Virtual clusters per physical cluster (`ratrain machine
  /// --ranks-per-cluster K`, oversubscribe()): K ranks share one cluster's
  /// cores, each planned with 1/K of its compute. The simulator shares a
  /// node's cores among the virtual clusters computing at the moment (one
  /// computing alone runs up to K times its split rate). Machine-file key
  /// `virtual_clusters_per_cluster` (default 1: every cluster is physical).
  int64_t virtualClustersPerCluster = 1;
  ClusterSpec cluster;
  NetworkSpec network;
  OffloadTierSpec offload;
  /// Classes of clusters; empty: every cluster is `cluster` (homogeneous).
  /// A file with classes has at least two (or one, with count = all).
  std::vector<ClusterClass> classes;

  /// Whether the machine file has classes of clusters (whose specs are
  /// their own, even when there is one class): the planner, the lowering and
  /// the simulator then price every class with classMachine.
  bool heterogeneous() const { return !classes.empty(); }
  /// The class of cluster `index` (0 without classes).
  int64_t classOfCluster(int64_t index) const;
  /// The machine as if every cluster were of class `c`: its cluster spec,
  /// its links scaled by link_scale, no classes. The cost and memory models
  /// price one class's ranks with it. Without classes, the machine itself.
  MachineModel classMachine(int64_t c) const;

  int64_t totalClusters() const { return nodes * clustersPerNode; }

  /// The network levels, innermost first: `network.levels` when given, else
  /// the two-level shorthand as levels {node: clustersPerNode clusters over
  /// intraNode, injection nodeInjectionBandwidth} and {system: the nodes over
  /// interNode}.
  std::vector<NetworkLevel> networkLevels() const;
  /// How many of networkLevels() lie inside a node: the levels whose group
  /// sizes multiply to clustersPerNode (1 for the shorthand).
  unsigned nodeLevels() const;
  /// Clusters in one group of level `level` (the product of the sizes of
  /// levels 0..level; the whole machine for the outermost level).
  int64_t clustersPerGroup(unsigned level) const;
  /// With explicit levels: sets intraNode, interNode and
  /// nodeInjectionBandwidth to their two-level view (see NetworkSpec). A
  /// no-op for the shorthand.
  void syncNetworkView();

  /// Bandwidth each of `streams` clusters of one node gets when they all
  /// send to other nodes at once (min of the link and the node's share).
  double interNodeStreamBandwidth(int64_t streams) const;

  /// Offload-tier bytes one cluster may use: bytes_per_node /
  /// clusters_per_node (0 without a tier).
  int64_t offloadBytesPerCluster() const {
    return offload.present() ? offload.bytesPerNode / clustersPerNode : 0;
  }
  /// Host-cache bytes of the storage tier one cluster may use (0: none).
  int64_t offloadHostCacheBytesPerCluster() const {
    return offload.present() && offload.hasHostCache()
               ? offload.hostCacheBytesPerNode / clustersPerNode
               : 0;
  }

  /// Checks that every quantity is positive (efficiencies in (0, 1]) and
  /// that explicit network levels are consistent with clusters_per_node; the
  /// message names the machine-file key and the limit.
  llvm::Error validate() const;
};

/// Splits every cluster of `machine` into `ranksPerCluster` virtual clusters,
/// so that more ranks than physical clusters can run on it (e.g. 4 MPI ranks
/// on a 2-cluster host): each virtual cluster gets 1/K of its cluster's DDR
/// capacity, GSM, compute peaks, DDR and DMA bandwidth, and DMA channels and
/// cores (both at least 1); AM per core, kernel efficiencies, the network
/// and the per-node offload tier stay as they are. `clusters_per_node` is
/// multiplied by K and the name gets a "-xK" suffix. K = 1 returns the
/// machine unchanged. Fails when K < 1 or the result does not validate
/// (e.g. DDR smaller than K bytes).
llvm::Expected<MachineModel> oversubscribe(const MachineModel &machine,
                                           int64_t ranksPerCluster);

namespace detail {
/// a x b for group sizes, saturated just past the cluster limit (which
/// MachineModel::validate reports) instead of overflowing on a file's huge
/// level size.
int64_t groupProduct(int64_t a, int64_t b);
} // namespace detail

/// Sets machine.network.inNetwork from a tool option "LEVEL:REDUCE[:MULTICAST]"
/// (MULTICAST defaults to REDUCE), e.g. "0:2.5:2.9"; the error names the
/// option, the text and what is wrong (a level the machine lacks, a speedup
/// below 1), and leaves `machine` unchanged.
llvm::Error applyInNetworkOption(llvm::StringRef text, MachineModel &machine);

/// Parses a machine file's YAML text; `fileName` is used in messages. Errors
/// name the file and the missing or malformed key.
llvm::Expected<MachineModel> parseMachineModel(llvm::StringRef yaml,
                                               llvm::StringRef fileName);
/// Reads and parses a machine file.
llvm::Expected<MachineModel> loadMachineModel(llvm::StringRef path);
/// Writes a machine file that parseMachineModel reads back to the same model.
std::string printMachineModel(const MachineModel &machine);

} // namespace ratrain

#endif // RATRAIN_MACHINE_MACHINEMODEL_H
