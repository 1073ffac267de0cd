//===- MachineModel.cpp - Machine queries and validation ------------------===//
//
// What a MachineModel answers (network levels, injection shares), its
// validation, and the split into virtual clusters. Reading machine files is
// MachineFile.cpp, writing them PrintMachineModel.cpp.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/Limits.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <tuple>

using namespace ratrain;

llvm::StringRef
ratrain::stringifyCollectiveAlgorithm(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case CollectiveAlgorithm::Ring:
    return "ring";
  case CollectiveAlgorithm::Tree:
    return "tree";
  case CollectiveAlgorithm::Hierarchical:
    return "hierarchical";
  }
  llvm_unreachable("unknown collective algorithm");
}

std::optional<CollectiveAlgorithm>
ratrain::parseCollectiveAlgorithm(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<CollectiveAlgorithm>>(name)
      .Case("ring", CollectiveAlgorithm::Ring)
      .Case("tree", CollectiveAlgorithm::Tree)
      .Case("hierarchical", CollectiveAlgorithm::Hierarchical)
      .Default(std::nullopt);
}

llvm::StringRef ratrain::stringifyGemmForm(GemmForm form) {
  switch (form) {
  case GemmForm::NT:
    return "NT";
  case GemmForm::NN:
    return "NN";
  case GemmForm::TN:
    return "TN";
  }
  llvm_unreachable("unknown GEMM form");
}

std::optional<GemmForm> ratrain::parseGemmForm(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<GemmForm>>(name)
      .Case("NT", GemmForm::NT)
      .Case("NN", GemmForm::NN)
      .Case("TN", GemmForm::TN)
      .Default(std::nullopt);
}

std::optional<double> MeasuredGemms::find(bool f16Operands, GemmForm form,
                                          int64_t m, int64_t n,
                                          int64_t k) const {
  for (const MeasuredGemm &g : f16Operands ? f16 : f32)
    if (g.form == form && g.m == m && g.n == n && g.k == k)
      return g.seconds;
  return std::nullopt;
}

CollectiveAlgorithm ratrain::syncAlgorithm(CollectiveAlgorithm collective,
                                           bool spansNodes) {
  if (spansNodes)
    return CollectiveAlgorithm::Hierarchical;
  return collective == CollectiveAlgorithm::Tree ? CollectiveAlgorithm::Tree
                                                 : CollectiveAlgorithm::Ring;
}

llvm::StringRef ratrain::stringifyOffloadTierKind(OffloadTierKind kind) {
  return kind == OffloadTierKind::Host ? "host" : "storage";
}

std::optional<OffloadTierKind>
ratrain::parseOffloadTierKind(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<OffloadTierKind>>(name)
      .Case("host", OffloadTierKind::Host)
      .Case("storage", OffloadTierKind::Storage)
      .Default(std::nullopt);
}

double MachineModel::interNodeStreamBandwidth(int64_t streams) const {
  double link = network.interNode.bandwidth;
  if (network.nodeInjectionBandwidth <= 0 || streams <= 0)
    return link;
  return std::min(link, network.nodeInjectionBandwidth / double(streams));
}

int64_t ratrain::detail::groupProduct(int64_t a, int64_t b) {
  b = std::max<int64_t>(1, b);
  if (b > (limits::kMaxClusters + 1) / std::max<int64_t>(1, a))
    return limits::kMaxClusters + 1;
  return a * b;
}

std::vector<NetworkLevel> MachineModel::networkLevels() const {
  if (!network.levels.empty())
    return network.levels;
  return {NetworkLevel{"node", clustersPerNode, network.intraNode,
                       network.nodeInjectionBandwidth},
          NetworkLevel{"system", 0, network.interNode, 0}};
}

unsigned MachineModel::nodeLevels() const {
  if (network.levels.empty())
    return 1;
  int64_t product = 1;
  unsigned inner = static_cast<unsigned>(network.levels.size()) - 1;
  for (unsigned j = 0; j < inner; ++j) {
    if (product == clustersPerNode)
      return j;
    product = detail::groupProduct(product, network.levels[j].size);
  }
  return inner;
}

int64_t MachineModel::clustersPerGroup(unsigned level) const {
  if (network.levels.empty())
    return level == 0 ? clustersPerNode : totalClusters();
  if (level + 1 >= network.levels.size())
    return totalClusters();
  int64_t product = 1;
  for (unsigned j = 0; j <= level; ++j)
    product = detail::groupProduct(product, network.levels[j].size);
  return product;
}

void MachineModel::syncNetworkView() {
  const std::vector<NetworkLevel> &levels = network.levels;
  if (levels.empty())
    return;
  unsigned inside = nodeLevels();
  // The slowest link inside a node stands for all of them (the planner's
  // intra-node rings cross it); without levels inside a node there is no
  // intra-node traffic and the innermost link fills the field.
  network.intraNode = levels[0].link;
  for (unsigned j = 1; j < inside; ++j)
    if (levels[j].link.bandwidth < network.intraNode.bandwidth)
      network.intraNode = levels[j].link;
  unsigned outer = std::min<unsigned>(inside, levels.size() - 1);
  network.interNode = levels[outer].link;
  network.nodeInjectionBandwidth =
      inside > 0 ? levels[inside - 1].injectionBandwidth : 0;
}

/// Checks explicit network levels (see NetworkLevel); `fail` builds the
/// error for a key.
template <typename Fail>
static llvm::Error validateLevels(const MachineModel &machine, Fail fail) {
  const std::vector<NetworkLevel> &levels = machine.network.levels;
  if (levels.empty())
    return llvm::Error::success();
  if (levels.size() > kMaxNetworkLevels)
    return fail("network.levels",
                llvm::formatv("{0} levels exceed the limit of {1}",
                              levels.size(), kMaxNetworkLevels));
  int64_t inner = 1;
  for (size_t i = 0; i < levels.size(); ++i) {
    const NetworkLevel &level = levels[i];
    std::string key = llvm::formatv("network.levels[{0}]", i).str();
    bool outermost = i + 1 == levels.size();
    if (level.name.empty())
      return fail(key + ".name", "must not be empty");
    for (size_t j = 0; j < i; ++j)
      if (levels[j].name == level.name)
        return fail(
            key + ".name",
            llvm::formatv("'{0}' names level {1} already", level.name, j));
    if (!(level.link.bandwidth > 0) || !std::isfinite(level.link.bandwidth))
      return fail(key + ".bandwidth", llvm::formatv("must be positive, got {0}",
                                                    level.link.bandwidth));
    if (level.link.latency < 0 || !std::isfinite(level.link.latency))
      return fail(key + ".latency", "must not be negative");
    if (level.injectionBandwidth < 0 ||
        !std::isfinite(level.injectionBandwidth))
      return fail(key + ".injection_bandwidth", "must not be negative");
    if (outermost) {
      if (level.injectionBandwidth > 0)
        return fail(key + ".injection_bandwidth",
                    "the outermost level has no level above it to inject "
                    "into");
      break;
    }
    if (level.size < 1)
      return fail(key + ".size",
                  llvm::formatv("must be positive, got {0} (only the "
                                "outermost level may leave it out)",
                                level.size));
    if (level.size > limits::kMaxClusters / inner)
      return fail(key + ".size",
                  llvm::formatv("groups of {0} x {1} clusters exceed the "
                                "limit of {2} clusters",
                                inner, level.size, limits::kMaxClusters));
    inner *= level.size;
  }
  int64_t total = machine.totalClusters();
  if (total % inner != 0)
    return fail("network.levels",
                llvm::formatv("the inner levels group {0} clusters, which "
                              "does not divide the machine's {1} clusters",
                              inner, total));
  const NetworkLevel &outer = levels.back();
  if (outer.size != 0 && outer.size != total / inner)
    return fail(
        llvm::formatv("network.levels[{0}].size", levels.size() - 1).str(),
        llvm::formatv("the outermost level holds the rest: {0} "
                      "clusters / {1} = {2}, got {3}",
                      total, inner, total / inner, outer.size));
  // clusters_per_node must be where a level ends.
  int64_t product = 1;
  std::string prefixes = "1";
  for (size_t j = 0; j + 1 < levels.size(); ++j) {
    if (product == machine.clustersPerNode)
      return llvm::Error::success();
    product *= levels[j].size;
    prefixes += ", " + std::to_string(product);
  }
  if (product == machine.clustersPerNode)
    return llvm::Error::success();
  return fail("clusters_per_node",
              llvm::formatv("{0} is not the size of a level's group (the "
                            "inner levels group {1} clusters)",
                            machine.clustersPerNode, prefixes));
}

/// Checks one cluster's sizes, rates, efficiencies and GEMM fits; the keys
/// are `prefix`.cores and so on (`cluster` for the machine's cluster,
/// `classes[i]` for a class's resolved one).
template <typename Fail>
static llvm::Error validateCluster(const ClusterSpec &c, llvm::StringRef prefix,
                                   Fail fail) {
  auto key = [&](llvm::StringRef field) {
    return (prefix + "." + field).str();
  };
  struct IntField {
    const char *key;
    int64_t value;
  } ints[] = {{"cores", c.cores},
              {"ddr_bytes", c.ddrBytes},
              {"gsm_bytes", c.gsmBytes},
              {"am_bytes_per_core", c.amBytesPerCore},
              {"dma_channels", c.dmaChannels}};
  for (const IntField &f : ints)
    if (f.value <= 0)
      return fail(key(f.key),
                  llvm::formatv("must be positive, got {0}", f.value));
  struct RealField {
    const char *key;
    double value;
    bool fraction;
    bool optional = false; ///< 0 means absent
  } reals[] = {
      {"ddr_bandwidth", c.ddrBandwidth, false},
      {"dma_bandwidth", c.dmaBandwidth, false},
      {"ddr_bandwidth_alone", c.ddrBandwidthAlone, false, true},
      {"optimizer_bandwidth", c.optimizerBandwidth, false, true},
      {"optimizer_bandwidth_alone", c.optimizerBandwidthAlone, false, true},
      {"optimizer_bandwidth_f16", c.optimizerBandwidthF16, false, true},
      {"optimizer_bandwidth_alone_f16", c.optimizerBandwidthAloneF16, false,
       true},
      {"elementwise_bandwidth", c.elementwiseBandwidth, false, true},
      {"elementwise_bandwidth_f16", c.elementwiseBandwidthF16, false, true},
      {"peak_flops_f16", c.peakFlopsF16, false},
      {"peak_flops_f32", c.peakFlopsF32, false},
      {"efficiency.gemm", c.efficiency.gemm, true},
      {"efficiency.attention_forward", c.efficiency.attentionForward, true},
      {"efficiency.attention_backward", c.efficiency.attentionBackward, true},
      {"efficiency.memory_bound", c.efficiency.memoryBound, true},
      {"efficiency.attention_forward_f16", c.efficiency.attentionForwardF16,
       true, true},
      {"efficiency.attention_backward_f16", c.efficiency.attentionBackwardF16,
       true, true}};
  for (const RealField &f : reals) {
    if (f.optional && f.value == 0)
      continue;
    if (!(f.value > 0) || !std::isfinite(f.value))
      return fail(key(f.key),
                  llvm::formatv("must be positive, got {0}", f.value));
    if (f.fraction && f.value > 1)
      return fail(
          key(f.key),
          llvm::formatv("is a fraction of peak in (0, 1], got {0}", f.value));
  }
  // The update's two rates come together, alone at least what it gets with
  // every cluster updating; the 16-bit pair only beside the fp32 one.
  const std::tuple<double, double, const char *> optimizerPairs[] = {
      {c.optimizerBandwidth, c.optimizerBandwidthAlone, ""},
      {c.optimizerBandwidthF16, c.optimizerBandwidthAloneF16, "_f16"}};
  for (auto [together, alone, suffix] : optimizerPairs) {
    std::string togetherKey =
                    key((llvm::Twine("optimizer_bandwidth") + suffix).str()),
                aloneKey = key(
                    (llvm::Twine("optimizer_bandwidth_alone") + suffix).str());
    if ((together > 0) != (alone > 0))
      return fail(together > 0 ? aloneKey : togetherKey,
                  llvm::formatv("is missing: {0} and {1} are given together "
                                "or not at all",
                                togetherKey, aloneKey));
    if (alone < together)
      return fail(aloneKey,
                  llvm::formatv("must be at least {0} ({1:e2}, every "
                                "cluster of the node updating), got {2:e2}",
                                togetherKey, together, alone));
  }
  if (c.optimizerBandwidthF16 > 0 && c.optimizerBandwidth <= 0)
    return fail(key("optimizer_bandwidth_f16"),
                "needs optimizer_bandwidth and optimizer_bandwidth_alone (the "
                "fp32 update's rates) beside it");
  if (c.elementwiseBandwidthF16 > 0 && c.elementwiseBandwidth <= 0)
    return fail(key("elementwise_bandwidth_f16"),
                "needs elementwise_bandwidth (the fp32 layers' rate) beside "
                "it");
  struct FitField {
    const char *key;
    const KernelTimeFit &fit;
  } fits[] = {{"gemm_fit.f32", c.gemmFit.f32},
              {"gemm_fit.f16", c.gemmFit.f16},
              {"attention_forward_fit.f32", c.attentionForwardFit.f32},
              {"attention_forward_fit.f16", c.attentionForwardFit.f16},
              {"attention_backward_fit.f32", c.attentionBackwardFit.f32},
              {"attention_backward_fit.f16", c.attentionBackwardFit.f16}};
  for (const FitField &f : fits) {
    // Absent: all four zero. Present: an efficiency in (0, 1] and
    // non-negative, finite per-element, per-row and per-call seconds.
    const KernelTimeFit &fit = f.fit;
    if (fit.efficiency == 0 && fit.elementSeconds == 0 && fit.rowSeconds == 0 &&
        fit.callSeconds == 0)
      continue;
    std::string fitKey = key(f.key);
    if (!(fit.efficiency > 0 && fit.efficiency <= 1))
      return fail(fitKey + ".efficiency",
                  llvm::formatv("is a fraction of peak in (0, 1], got {0}",
                                fit.efficiency));
    if (!(fit.elementSeconds >= 0) || !std::isfinite(fit.elementSeconds))
      return fail(fitKey + ".element_seconds",
                  llvm::formatv("must be a non-negative number of seconds, "
                                "got {0}",
                                fit.elementSeconds));
    if (!(fit.rowSeconds >= 0) || !std::isfinite(fit.rowSeconds))
      return fail(fitKey + ".row_seconds",
                  llvm::formatv("must be a non-negative number of seconds, "
                                "got {0}",
                                fit.rowSeconds));
    if (!(fit.callSeconds >= 0) || !std::isfinite(fit.callSeconds))
      return fail(fitKey + ".call_seconds",
                  llvm::formatv("must be a non-negative number of seconds, "
                                "got {0}",
                                fit.callSeconds));
  }
  // Measured GEMMs: positive dimensions and seconds, each shape once.
  for (auto [type, calls] :
       {std::pair<const char *, const std::vector<MeasuredGemm> &>{
            "f32", c.gemmMeasured.f32},
        {"f16", c.gemmMeasured.f16}}) {
    if (calls.size() > size_t(limits::kMaxMeasuredGemms))
      return fail(key("gemm_measured.") + type,
                  llvm::formatv("lists {0} calls, more than the limit of {1}",
                                calls.size(), limits::kMaxMeasuredGemms));
    for (size_t i = 0; i < calls.size(); ++i) {
      const MeasuredGemm &g = calls[i];
      std::string entry =
          llvm::formatv("{0}gemm_measured.{1}[{2}]", key(""), type, i).str();
      for (auto [name, value] :
           {std::pair<const char *, int64_t>{"m", g.m}, {"n", g.n}, {"k", g.k}})
        if (value < 1 || value > limits::kMaxGemmDimension)
          return fail(entry + "." + name,
                      llvm::formatv("must be in [1, {0}], got {1}",
                                    limits::kMaxGemmDimension, value));
      if (!(g.seconds > 0) || !std::isfinite(g.seconds))
        return fail(entry + ".seconds",
                    llvm::formatv("must be a positive number of seconds, got "
                                  "{0}",
                                  g.seconds));
      for (size_t j = 0; j < i; ++j)
        if (calls[j].form == g.form && calls[j].m == g.m && calls[j].n == g.n &&
            calls[j].k == g.k)
          return fail(entry, llvm::formatv(
                                 "repeats {0} {1} x {2} x {3} (entry {4})",
                                 stringifyGemmForm(g.form), g.m, g.n, g.k, j));
    }
  }
  return llvm::Error::success();
}

/// Checks the classes of clusters (see ClusterClass): their number, names,
/// counts and scales, and each resolved cluster as the machine's.
template <typename Fail>
static llvm::Error validateClasses(const MachineModel &machine, Fail fail) {
  const std::vector<ClusterClass> &classes = machine.classes;
  if (classes.empty())
    return llvm::Error::success();
  if (int64_t(classes.size()) > kMaxClusterClasses)
    return fail("classes", llvm::formatv("{0} classes exceed the limit of {1}",
                                         classes.size(), kMaxClusterClasses));
  constexpr double kMaxScale = 1000;
  int64_t sum = 0;
  for (size_t i = 0; i < classes.size(); ++i) {
    const ClusterClass &cls = classes[i];
    std::string key = llvm::formatv("classes[{0}]", i).str();
    if (cls.name.empty())
      return fail(key + ".name", "must not be empty");
    if (!llvm::all_of(cls.name, [](char ch) {
          return llvm::isAlnum(ch) || ch == '_' || ch == '.' || ch == '-';
        }))
      return fail(key + ".name",
                  llvm::formatv("'{0}' is not a name of letters, digits, "
                                "'_', '.' and '-'",
                                cls.name));
    for (size_t j = 0; j < i; ++j)
      if (classes[j].name == cls.name)
        return fail(key + ".name", llvm::formatv("'{0}' names class {1} "
                                                 "already",
                                                 cls.name, j));
    if (cls.count <= 0)
      return fail(key + ".count",
                  llvm::formatv("must be positive, got {0}", cls.count));
    // A physical cluster is of one class: its virtual clusters too.
    if (cls.count % machine.virtualClustersPerCluster)
      return fail(key + ".count",
                  llvm::formatv("{0} is not a multiple of "
                                "virtual_clusters_per_cluster {1} (the "
                                "virtual clusters of a physical cluster are "
                                "of one class)",
                                cls.count, machine.virtualClustersPerCluster));
    for (auto [field, value] :
         {std::pair<const char *, double>{"compute_scale", cls.computeScale},
          {"ddr_bandwidth_scale", cls.ddrBandwidthScale},
          {"link_scale", cls.linkScale}})
      if (!(value > 0 && value <= kMaxScale))
        return fail(key + "." + field,
                    llvm::formatv("is a factor in (0, {0}], got {1}",
                                  llvm::format("%g", kMaxScale),
                                  llvm::format("%g", value)));
    // Saturated past the cluster limit: no overflow on huge counts.
    sum = std::min<int64_t>(sum + std::min(cls.count, limits::kMaxClusters),
                            limits::kMaxClusters + 1);
    if (llvm::Error err = validateCluster(cls.cluster, key, fail))
      return err;
  }
  if (sum != machine.totalClusters())
    return fail("classes",
                llvm::formatv("the counts sum to {0}{1} clusters, not the "
                              "machine's {2} (nodes x clusters_per_node = "
                              "{3} x {4})",
                              sum > limits::kMaxClusters ? "more than " : "",
                              std::min(sum, limits::kMaxClusters),
                              machine.totalClusters(), machine.nodes,
                              machine.clustersPerNode));
  return llvm::Error::success();
}

llvm::Error MachineModel::validate() const {
  auto fail = [&](llvm::StringRef key, const llvm::Twine &what) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "machine '" + name + "': " + key + ": " +
                                       what);
  };
  struct IntField {
    const char *key;
    int64_t value;
  } ints[] = {{"nodes", nodes},
              {"clusters_per_node", clustersPerNode},
              {"virtual_clusters_per_cluster", virtualClustersPerCluster}};
  for (const IntField &f : ints)
    if (f.value <= 0)
      return fail(f.key, llvm::formatv("must be positive, got {0}", f.value));
  if (clustersPerNode % virtualClustersPerCluster)
    return fail("virtual_clusters_per_cluster",
                llvm::formatv("{0} does not divide clusters_per_node {1} (a "
                              "node holds whole physical clusters)",
                              virtualClustersPerCluster, clustersPerNode));
  // totalClusters() multiplies them: bound the product (no overflow).
  if (clustersPerNode > limits::kMaxClusters / nodes)
    return fail("nodes x clusters_per_node",
                llvm::formatv("{0} x {1} exceeds the limit of {2} clusters",
                              nodes, clustersPerNode, limits::kMaxClusters));
  if (llvm::Error err = validateLevels(*this, fail))
    return err;
  if (llvm::Error err = validateCluster(cluster, "cluster", fail))
    return err;
  // A cluster streaming alone gets at least its share of the node's DDR and
  // at most all of it.
  if (cluster.ddrBandwidthAlone > 0 &&
      (cluster.ddrBandwidthAlone < cluster.ddrBandwidth ||
       cluster.ddrBandwidthAlone >
           double(clustersPerNode) * cluster.ddrBandwidth))
    return fail("cluster.ddr_bandwidth_alone",
                llvm::formatv("must lie between ddr_bandwidth ({0:e2}, the "
                              "cluster's share with every cluster of its "
                              "node streaming) and the node's {1} x {0:e2}, "
                              "got {2:e2}",
                              cluster.ddrBandwidth, clustersPerNode,
                              cluster.ddrBandwidthAlone));
  for (auto [key, value] :
       {std::pair<const char *, double>{"network.intra_node.bandwidth",
                                        network.intraNode.bandwidth},
        {"network.inter_node.bandwidth", network.interNode.bandwidth}})
    if (!(value > 0) || !std::isfinite(value))
      return fail(key, llvm::formatv("must be positive, got {0}", value));
  if (network.intraNode.latency < 0)
    return fail("network.intra_node.latency", "must not be negative");
  if (network.interNode.latency < 0)
    return fail("network.inter_node.latency", "must not be negative");
  if (network.nodeInjectionBandwidth < 0)
    return fail("network.node_injection_bandwidth", "must not be negative");
  if (!(network.oversubscribedLatency >= 0) ||
      !std::isfinite(network.oversubscribedLatency))
    return fail("network.oversubscribed_latency",
                llvm::formatv("must be a finite number of seconds, at least "
                              "0, got {0}",
                              network.oversubscribedLatency));
  if (!(network.progressCoreShare >= 0 && network.progressCoreShare <= 1))
    return fail("network.progress_core_share",
                llvm::formatv("must be a share of a core from 0 to 1, got {0}",
                              network.progressCoreShare));
  if (!(network.coreCopyBandwidth >= 0) ||
      !std::isfinite(network.coreCopyBandwidth))
    return fail("network.core_copy_bandwidth",
                llvm::formatv("must be a finite number of bytes per second, "
                              "at least 0, got {0}",
                              network.coreCopyBandwidth));
  if (const InNetworkCollectives &in = network.inNetwork; in.present()) {
    auto levels = int64_t(networkLevels().size());
    if (in.level >= levels)
      return fail("network.in_network.level",
                  llvm::formatv("must name a network level, 0 to {0}, got {1}",
                                levels - 1, in.level));
    for (auto [key, value] :
         {std::pair<const char *, double>{"network.in_network.reduce_speedup",
                                          in.reduceSpeedup},
          {"network.in_network.multicast_speedup", in.multicastSpeedup}})
      if (!(value >= 1) || !std::isfinite(value))
        return fail(key, llvm::formatv("must be a finite factor of at least 1 "
                                       "(1: as ordinary links), got {0}",
                                       value));
  }
  if (offload.bytesPerNode < 0)
    return fail("offload.bytes_per_node", "must not be negative");
  if (offload.bytesPerNode > 0 &&
      (!(offload.bandwidth > 0) || !std::isfinite(offload.bandwidth)))
    return fail("offload.bandwidth",
                llvm::formatv("must be positive when the tier has a "
                              "capacity, got {0}",
                              offload.bandwidth));
  if (offload.bandwidth < 0)
    return fail("offload.bandwidth", "must not be negative");
  if (offload.latency < 0 || !std::isfinite(offload.latency))
    return fail("offload.latency", "must not be negative");
  if (offload.chunkBytes < 0)
    return fail("offload.chunk_bytes", "must not be negative");
  if (offload.hostCacheBytesPerNode < 0)
    return fail("offload.host_cache_bytes_per_node", "must not be negative");
  if (offload.hostCacheBandwidth < 0 ||
      !std::isfinite(offload.hostCacheBandwidth))
    return fail("offload.host_cache_bandwidth",
                "must be a finite number of bytes/s >= 0");
  if ((offload.hostCacheBytesPerNode > 0) != (offload.hostCacheBandwidth > 0))
    return fail("offload.host_cache_bandwidth",
                llvm::formatv("a host cache needs both "
                              "host_cache_bytes_per_node ({0}) and "
                              "host_cache_bandwidth ({1} bytes/s) positive",
                              offload.hostCacheBytesPerNode,
                              int64_t(offload.hostCacheBandwidth)));
  if (offload.hostCacheBytesPerNode > 0 &&
      offload.kind != OffloadTierKind::Storage)
    return fail("offload.host_cache_bytes_per_node",
                "caches a storage tier (kind: storage); a host tier is host "
                "memory already");
  return validateClasses(*this, fail);
}

int64_t MachineModel::classOfCluster(int64_t index) const {
  assert(index >= 0 && index < totalClusters() && "cluster index out of range");
  int64_t first = 0;
  for (size_t c = 0; c < classes.size(); ++c) {
    first += classes[c].count;
    if (index < first)
      return int64_t(c);
  }
  assert(classes.empty() && "the class counts do not cover the clusters");
  return 0;
}

MachineModel MachineModel::classMachine(int64_t c) const {
  if (classes.empty())
    return *this;
  assert(c >= 0 && c < int64_t(classes.size()) && "class index out of range");
  const ClusterClass &cls = classes[size_t(c)];
  MachineModel machine = *this;
  machine.name = name + "/" + cls.name;
  machine.cluster = cls.cluster;
  double scale = cls.linkScale;
  NetworkSpec &net = machine.network;
  net.intraNode.bandwidth *= scale;
  net.interNode.bandwidth *= scale;
  net.nodeInjectionBandwidth *= scale;
  for (NetworkLevel &level : net.levels) {
    level.link.bandwidth *= scale;
    level.injectionBandwidth *= scale;
  }
  machine.classes.clear();
  return machine;
}

/// One of the K virtual clusters `cluster` splits into: 1/K of its capacity,
/// rates and (at least one) cores and DMA channels.
static ClusterSpec splitCluster(const ClusterSpec &cluster, int64_t k) {
  double share = 1.0 / double(k);
  ClusterSpec c = cluster;
  c.cores = std::max<int64_t>(1, cluster.cores / k);
  c.ddrBytes = cluster.ddrBytes / k;
  c.gsmBytes = cluster.gsmBytes / k;
  c.dmaChannels = std::max<int64_t>(1, cluster.dmaChannels / k);
  c.ddrBandwidth = cluster.ddrBandwidth * share;
  c.dmaBandwidth = cluster.dmaBandwidth * share;
  c.ddrBandwidthAlone = cluster.ddrBandwidthAlone * share;
  c.optimizerBandwidth = cluster.optimizerBandwidth * share;
  c.optimizerBandwidthAlone = cluster.optimizerBandwidthAlone * share;
  c.optimizerBandwidthF16 = cluster.optimizerBandwidthF16 * share;
  c.optimizerBandwidthAloneF16 = cluster.optimizerBandwidthAloneF16 * share;
  c.elementwiseBandwidth = cluster.elementwiseBandwidth * share;
  c.elementwiseBandwidthF16 = cluster.elementwiseBandwidthF16 * share;
  c.peakFlopsF16 = cluster.peakFlopsF16 * share;
  c.peakFlopsF32 = cluster.peakFlopsF32 * share;
  // A virtual cluster runs its kernels on 1/K of the cores: the per-element
  // and per-call terms of a fit take K times as long (its efficiency applies
  // to the split peak).
  for (KernelTimeFits *fits :
       {&c.gemmFit, &c.attentionForwardFit, &c.attentionBackwardFit})
    for (KernelTimeFit *fit : {&fits->f32, &fits->f16}) {
      fit->elementSeconds *= double(k);
      fit->rowSeconds *= double(k);
      fit->callSeconds *= double(k);
    }
  // ... and a measured call K times as long.
  for (std::vector<MeasuredGemm> *calls :
       {&c.gemmMeasured.f32, &c.gemmMeasured.f16})
    for (MeasuredGemm &g : *calls)
      g.seconds *= double(k);
  return c;
}

llvm::Expected<MachineModel> ratrain::oversubscribe(const MachineModel &machine,
                                                    int64_t ranksPerCluster) {
  if (ranksPerCluster < 1)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("machine '{0}': ranks per cluster must be at least 1, "
                      "got {1}",
                      machine.name, ranksPerCluster));
  if (ranksPerCluster == 1)
    return machine;
  int64_t k = ranksPerCluster;
  if (k > limits::kMaxClusters / machine.totalClusters())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("machine '{0}': {1} ranks per cluster on {2} clusters "
                      "exceed the limit of {3} clusters",
                      machine.name, k, machine.totalClusters(),
                      limits::kMaxClusters));
  MachineModel split = machine;
  split.name = llvm::formatv("{0}-x{1}", machine.name, k).str();
  split.clustersPerNode = machine.clustersPerNode * k;
  split.virtualClustersPerCluster = machine.virtualClustersPerCluster * k;
  // Explicit levels: the innermost group holds K times the clusters (or, when
  // no level lies inside a node, a new innermost level joins the K virtual
  // clusters of a cluster over the innermost link).
  if (!split.network.levels.empty()) {
    if (machine.nodeLevels() > 0)
      split.network.levels[0].size *= k;
    else
      split.network.levels.insert(
          split.network.levels.begin(),
          NetworkLevel{"cluster", k, machine.network.levels[0].link, 0});
    split.syncNetworkView();
  }
  // Messages between the virtual clusters of a node: while the other ranks
  // keep its cores busy, each one waits for the threads that move it to get
  // a core (measured with two ranks per core; more share the cores longer,
  // which the figure does not price).
  if (double latency = machine.network.oversubscribedLatency; latency > 0) {
    split.network.intraNode.latency =
        std::max(split.network.intraNode.latency, latency);
    if (!split.network.levels.empty()) {
      for (unsigned l = 0, inside = split.nodeLevels(); l < inside; ++l) {
        LinkSpec &link = split.network.levels[l].link;
        link.latency = std::max(link.latency, latency);
      }
      split.syncNetworkView();
    }
  }
  split.cluster = splitCluster(machine.cluster, k);
  // Each class: K times the clusters, each split as the machine's.
  for (ClusterClass &cls : split.classes) {
    cls.count *= k;
    cls.cluster = splitCluster(cls.cluster, k);
  }
  if (llvm::Error error = split.validate())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("machine '{0}' split into {1} virtual clusters per "
                      "cluster: {2}",
                      machine.name, k, llvm::toString(std::move(error))));
  return split;
}
