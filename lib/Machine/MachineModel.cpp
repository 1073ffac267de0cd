//===- MachineModel.cpp - Machine files ----------------------------------===//
//
// Reads machine files with LLVM's YAML parser (JSON is accepted too: it is a
// subset of YAML flow syntax). The schema is strict: every key must be known
// and every value of the right type, so a typo never silently falls back to
// a default. Errors read "<file>:<line>:<col>: <key path>: <what>".
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/MachineModel.h"
#include "ratrain/Model/Limits.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <functional>

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

/// a x b for group sizes, saturated just past the cluster limit (which
/// validate() reports) instead of overflowing on a file's huge level size.
static int64_t groupProduct(int64_t a, int64_t b) {
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
    product = groupProduct(product, network.levels[j].size);
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
    product = groupProduct(product, network.levels[j].size);
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
              {"cluster.cores", cluster.cores},
              {"cluster.ddr_bytes", cluster.ddrBytes},
              {"cluster.gsm_bytes", cluster.gsmBytes},
              {"cluster.am_bytes_per_core", cluster.amBytesPerCore},
              {"cluster.dma_channels", cluster.dmaChannels},
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
  struct RealField {
    const char *key;
    double value;
    bool fraction;
    bool optional = false; ///< 0 means absent
  } reals[] = {
      {"cluster.ddr_bandwidth", cluster.ddrBandwidth, false},
      {"cluster.dma_bandwidth", cluster.dmaBandwidth, false},
      {"cluster.peak_flops_f16", cluster.peakFlopsF16, false},
      {"cluster.peak_flops_f32", cluster.peakFlopsF32, false},
      {"cluster.efficiency.gemm", cluster.efficiency.gemm, true},
      {"cluster.efficiency.attention_forward",
       cluster.efficiency.attentionForward, true},
      {"cluster.efficiency.attention_backward",
       cluster.efficiency.attentionBackward, true},
      {"cluster.efficiency.memory_bound", cluster.efficiency.memoryBound, true},
      {"cluster.efficiency.attention_forward_f16",
       cluster.efficiency.attentionForwardF16, true, true},
      {"cluster.efficiency.attention_backward_f16",
       cluster.efficiency.attentionBackwardF16, true, true},
      {"network.intra_node.bandwidth", network.intraNode.bandwidth, false},
      {"network.inter_node.bandwidth", network.interNode.bandwidth, false}};
  for (const RealField &f : reals) {
    if (f.optional && f.value == 0)
      continue;
    if (!(f.value > 0) || !std::isfinite(f.value))
      return fail(f.key, llvm::formatv("must be positive, got {0}", f.value));
    if (f.fraction && f.value > 1)
      return fail(
          f.key,
          llvm::formatv("is a fraction of peak in (0, 1], got {0}", f.value));
  }
  struct FitField {
    const char *key;
    const KernelTimeFit &fit;
  } fits[] = {{"cluster.gemm_fit.f32", cluster.gemmFit.f32},
              {"cluster.gemm_fit.f16", cluster.gemmFit.f16}};
  for (const FitField &f : fits) {
    // Absent: all three zero. Present: an efficiency in (0, 1] and
    // non-negative, finite per-element and per-call seconds.
    const KernelTimeFit &fit = f.fit;
    if (fit.efficiency == 0 && fit.elementSeconds == 0 && fit.callSeconds == 0)
      continue;
    std::string key = f.key;
    if (!(fit.efficiency > 0 && fit.efficiency <= 1))
      return fail(key + ".efficiency",
                  llvm::formatv("is a fraction of peak in (0, 1], got {0}",
                                fit.efficiency));
    if (!(fit.elementSeconds >= 0) || !std::isfinite(fit.elementSeconds))
      return fail(key + ".element_seconds",
                  llvm::formatv("must be a non-negative number of seconds, "
                                "got {0}",
                                fit.elementSeconds));
    if (!(fit.callSeconds >= 0) || !std::isfinite(fit.callSeconds))
      return fail(key + ".call_seconds",
                  llvm::formatv("must be a non-negative number of seconds, "
                                "got {0}",
                                fit.callSeconds));
  }
  if (network.intraNode.latency < 0)
    return fail("network.intra_node.latency", "must not be negative");
  if (network.interNode.latency < 0)
    return fail("network.inter_node.latency", "must not be negative");
  if (network.nodeInjectionBandwidth < 0)
    return fail("network.node_injection_bandwidth", "must not be negative");
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
  return llvm::Error::success();
}

namespace {

/// Walks the YAML document and fills a MachineModel; remembers the first
/// error with its location.
class MachineFileParser {
public:
  MachineFileParser(llvm::SourceMgr &sourceMgr, llvm::StringRef fileName,
                    const std::string &yamlDiagnostic)
      : sourceMgr(sourceMgr), fileName(fileName),
        yamlDiagnostic(yamlDiagnostic) {}

  llvm::Expected<MachineModel> parse(llvm::yaml::Stream &stream) {
    MachineModel machine;
    auto it = stream.begin();
    if (it == stream.end() || !it->getRoot())
      return error(nullptr, "", "empty machine file");
    llvm::yaml::Node *root = it->getRoot();
    if (stream.failed())
      return error(nullptr, "", "malformed YAML");
    bool sawCluster = false, sawNetwork = false, sawClustersPerNode = false;
    parseMapping(
        root, "",
        {{"name", [&](llvm::yaml::Node *n,
                      llvm::StringRef k) { readString(n, k, machine.name); }},
         {"nodes", [&](llvm::yaml::Node *n,
                       llvm::StringRef k) { readInt(n, k, machine.nodes); }},
         {"clusters_per_node",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            sawClustersPerNode = true;
            readInt(n, k, machine.clustersPerNode);
          }},
         {"virtual_clusters_per_cluster",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            readInt(n, k, machine.virtualClustersPerCluster);
          }},
         {"cluster",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            sawCluster = true;
            parseCluster(n, k, machine.cluster);
          }},
         {"network",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            sawNetwork = true;
            parseNetwork(n, k, machine.network);
          }},
         {"offload",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            parseOffload(n, k, machine.offload);
          }}},
        {"nodes"});
    if (stream.failed() && !firstError)
      return error(nullptr, "", "malformed YAML");
    // Before the iterator moves on: advancing it frees the first document,
    // `root` included.
    if (!firstError && !sawCluster)
      setError(root, "", "missing required key 'cluster'");
    if (!firstError && !sawNetwork)
      setError(root, "", "missing required key 'network'");
    // With explicit levels, a node defaults to the group of the level below
    // the outermost one.
    if (!firstError && !sawClustersPerNode) {
      if (machine.network.levels.empty()) {
        setError(root, "", "missing required key 'clusters_per_node'");
      } else {
        // Saturated past the cluster limit, which validate() then reports
        // with the level that passes it (no signed overflow on the way).
        machine.clustersPerNode = 1;
        std::string sizes;
        for (size_t j = 0; j + 1 < machine.network.levels.size(); ++j) {
          machine.clustersPerNode = groupProduct(
              machine.clustersPerNode, machine.network.levels[j].size);
          sizes +=
              (j ? " x " : "") + std::to_string(machine.network.levels[j].size);
        }
        if (machine.clustersPerNode > limits::kMaxClusters)
          setError(root, "network.levels",
                   llvm::formatv("the inner levels group {0} clusters, past "
                                 "the limit of {1} clusters",
                                 sizes, limits::kMaxClusters)
                       .str());
      }
    }
    // One machine per file: a second document (after `---`) would otherwise
    // be ignored.
    if (!firstError && ++it != stream.end())
      return error(it->getRoot(), "",
                   "a second YAML document; a machine file holds one machine "
                   "(remove the '---' and what follows it)");
    if (firstError)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     *firstError);
    if (machine.name.empty())
      machine.name = llvm::sys::path::stem(fileName).str();
    machine.syncNetworkView();
    if (llvm::Error err = machine.validate())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     fileName + ": " +
                                         llvm::toString(std::move(err)));
    // The outermost level holds the rest (a given size was checked).
    if (!machine.network.levels.empty())
      machine.network.levels.back().size = 0;
    return machine;
  }

private:
  using Handler = std::function<void(llvm::yaml::Node *, llvm::StringRef)>;

  void parseCluster(llvm::yaml::Node *node, llvm::StringRef path,
                    ClusterSpec &c) {
    auto in = [&](int64_t &field) {
      return [&, ptr = &field](llvm::yaml::Node *n, llvm::StringRef k) {
        readInt(n, k, *ptr);
      };
    };
    auto real = [&](double &field) {
      return [&, ptr = &field](llvm::yaml::Node *n, llvm::StringRef k) {
        readReal(n, k, *ptr);
      };
    };
    parseMapping(
        node, path,
        {{"cores", in(c.cores)},
         {"ddr_bytes", in(c.ddrBytes)},
         {"gsm_bytes", in(c.gsmBytes)},
         {"am_bytes_per_core", in(c.amBytesPerCore)},
         {"ddr_bandwidth", real(c.ddrBandwidth)},
         {"dma_bandwidth", real(c.dmaBandwidth)},
         {"dma_channels", in(c.dmaChannels)},
         {"peak_flops_f16", real(c.peakFlopsF16)},
         {"peak_flops_f32", real(c.peakFlopsF32)},
         {"fused_attention",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            readBool(n, k, c.fusedAttention);
          }},
         {"attention_peak",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            std::string text;
            if (!readScalar(n, k, text))
              return;
            if (text == "f32" || text == "f16")
              c.attentionAtF32Peak = text == "f32";
            else
              setError(n, k,
                       "expected f32 or f16 (the peak the "
                       "attention kernels run at), got '" +
                           text + "'");
          }},
         {"gemm_fit",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            auto fit = [&](KernelTimeFit &f) {
              return [&, ptr = &f](llvm::yaml::Node *fn, llvm::StringRef fk) {
                parseMapping(fn, fk,
                             {{"efficiency", real(ptr->efficiency)},
                              {"element_seconds", real(ptr->elementSeconds)},
                              {"call_seconds", real(ptr->callSeconds)}},
                             {"efficiency", "element_seconds", "call_seconds"});
              };
            };
            parseMapping(
                n, k,
                {{"f32", fit(c.gemmFit.f32)}, {"f16", fit(c.gemmFit.f16)}}, {});
          }},
         {"efficiency",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            KernelEfficiency &e = c.efficiency;
            parseMapping(
                n, k,
                {{"gemm", real(e.gemm)},
                 {"attention_forward", real(e.attentionForward)},
                 {"attention_backward", real(e.attentionBackward)},
                 {"attention_forward_f16", real(e.attentionForwardF16)},
                 {"attention_backward_f16", real(e.attentionBackwardF16)},
                 {"memory_bound", real(e.memoryBound)}},
                {});
          }}},
        {"cores", "ddr_bytes", "gsm_bytes", "am_bytes_per_core",
         "ddr_bandwidth", "peak_flops_f16", "peak_flops_f32"});
    // A DMA engine at least as fast as DDR unless said otherwise.
    if (c.dmaBandwidth == 0)
      c.dmaBandwidth = c.ddrBandwidth;
  }

  void parseOffload(llvm::yaml::Node *node, llvm::StringRef path,
                    OffloadTierSpec &o) {
    parseMapping(
        node, path,
        {{"kind",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            std::string text;
            if (!readString(n, k, text))
              return;
            if (std::optional<OffloadTierKind> kind =
                    parseOffloadTierKind(text))
              o.kind = *kind;
            else
              setError(n, k, "expected host or storage, got '" + text + "'");
          }},
         {"bytes_per_node",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            readInt(n, k, o.bytesPerNode);
          }},
         {"bandwidth", [&](llvm::yaml::Node *n,
                           llvm::StringRef k) { readReal(n, k, o.bandwidth); }},
         {"latency", [&](llvm::yaml::Node *n,
                         llvm::StringRef k) { readReal(n, k, o.latency); }},
         {"chunk_bytes",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            readInt(n, k, o.chunkBytes);
          }}},
        {"kind", "bytes_per_node", "bandwidth"});
  }

  void parseLink(llvm::yaml::Node *node, llvm::StringRef path, LinkSpec &l) {
    parseMapping(
        node, path,
        {{"bandwidth", [&](llvm::yaml::Node *n,
                           llvm::StringRef k) { readReal(n, k, l.bandwidth); }},
         {"latency", [&](llvm::yaml::Node *n,
                         llvm::StringRef k) { readReal(n, k, l.latency); }}},
        {"bandwidth", "latency"});
  }

  void parseNetwork(llvm::yaml::Node *node, llvm::StringRef path,
                    NetworkSpec &net) {
    bool sawIntra = false, sawInter = false, sawInjection = false,
         sawLevels = false;
    parseMapping(node, path,
                 {{"intra_node",
                   [&](llvm::yaml::Node *n, llvm::StringRef k) {
                     sawIntra = true;
                     parseLink(n, k, net.intraNode);
                   }},
                  {"inter_node",
                   [&](llvm::yaml::Node *n, llvm::StringRef k) {
                     sawInter = true;
                     parseLink(n, k, net.interNode);
                   }},
                  {"node_injection_bandwidth",
                   [&](llvm::yaml::Node *n, llvm::StringRef k) {
                     sawInjection = true;
                     readReal(n, k, net.nodeInjectionBandwidth);
                   }},
                  {"levels",
                   [&](llvm::yaml::Node *n, llvm::StringRef k) {
                     sawLevels = true;
                     parseLevels(n, k, net.levels);
                   }},
                  {"in_network",
                   [&](llvm::yaml::Node *n, llvm::StringRef k) {
                     parseInNetwork(n, k, net.inNetwork);
                   }},
                  {"collective",
                   [&](llvm::yaml::Node *n, llvm::StringRef k) {
                     std::string text;
                     if (!readString(n, k, text))
                       return;
                     if (std::optional<CollectiveAlgorithm> a =
                             parseCollectiveAlgorithm(text))
                       net.collective = *a;
                     else
                       setError(
                           n, k,
                           "expected one of ring, tree, hierarchical, got '" +
                               text + "'");
                   }}},
                 {});
    if (firstError)
      return;
    if (sawLevels) {
      if (sawIntra || sawInter || sawInjection)
        setError(node, path,
                 "give either 'levels' or the two-level shorthand "
                 "(intra_node, inter_node, node_injection_bandwidth), not "
                 "both");
      return;
    }
    if (!sawIntra)
      setError(node, path, "missing required key 'intra_node'");
    else if (!sawInter)
      setError(node, path, "missing required key 'inter_node'");
  }

  /// `in_network: {level, reduce_speedup, multicast_speedup}` (level
  /// required; a speedup left out is 1).
  void parseInNetwork(llvm::yaml::Node *node, llvm::StringRef path,
                      InNetworkCollectives &in) {
    parseMapping(
        node, path,
        {{"level", [&](llvm::yaml::Node *n,
                       llvm::StringRef k) { readInt(n, k, in.level); }},
         {"reduce_speedup",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            readReal(n, k, in.reduceSpeedup);
          }},
         {"multicast_speedup",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            readReal(n, k, in.multicastSpeedup);
          }}},
        {"level"});
    if (!firstError && in.level < 0)
      setError(node, path,
               "level must be a network level index (0: the "
               "innermost)");
  }

  /// `levels: [{name, size, bandwidth, latency, injection_bandwidth}, ...]`,
  /// innermost first.
  void parseLevels(llvm::yaml::Node *node, llvm::StringRef path,
                   std::vector<NetworkLevel> &levels) {
    auto *sequence = llvm::dyn_cast_or_null<llvm::yaml::SequenceNode>(node);
    if (!sequence) {
      setError(node, path,
               "expected a list of levels, innermost first ({name, size, "
               "bandwidth, latency})");
      return;
    }
    for (llvm::yaml::Node &item : *sequence) {
      if (firstError)
        return;
      std::string itemPath =
          llvm::formatv("{0}[{1}]", path, levels.size()).str();
      NetworkLevel level;
      parseMapping(
          &item, itemPath,
          {{"name", [&](llvm::yaml::Node *n,
                        llvm::StringRef k) { readString(n, k, level.name); }},
           {"size", [&](llvm::yaml::Node *n,
                        llvm::StringRef k) { readInt(n, k, level.size); }},
           {"bandwidth",
            [&](llvm::yaml::Node *n, llvm::StringRef k) {
              readReal(n, k, level.link.bandwidth);
            }},
           {"latency",
            [&](llvm::yaml::Node *n, llvm::StringRef k) {
              readReal(n, k, level.link.latency);
            }},
           {"injection_bandwidth",
            [&](llvm::yaml::Node *n, llvm::StringRef k) {
              readReal(n, k, level.injectionBandwidth);
            }}},
          {"name", "bandwidth", "latency"});
      levels.push_back(std::move(level));
    }
    if (!firstError && levels.empty())
      setError(node, path, "expected at least one level");
  }

  /// Calls the handler of each key of a mapping; unknown keys, duplicates
  /// and missing required keys are errors.
  void parseMapping(llvm::yaml::Node *node, llvm::StringRef path,
                    std::vector<std::pair<llvm::StringRef, Handler>> handlers,
                    std::vector<llvm::StringRef> required) {
    if (firstError)
      return;
    auto *map = llvm::dyn_cast_or_null<llvm::yaml::MappingNode>(node);
    if (!map) {
      setError(node, path, "expected a mapping of keys to values");
      return;
    }
    llvm::StringMap<bool> seen;
    for (llvm::yaml::KeyValueNode &kv : *map) {
      if (firstError)
        return;
      auto *keyNode =
          llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(kv.getKey());
      if (!keyNode) {
        setError(kv.getKey(), path, "expected a plain key");
        return;
      }
      llvm::SmallString<32> keyStorage;
      llvm::StringRef key = keyNode->getValue(keyStorage);
      std::string keyPath = path.empty() ? key.str() : (path + "." + key).str();
      auto handler =
          std::find_if(handlers.begin(), handlers.end(),
                       [&](const auto &h) { return h.first == key; });
      if (handler == handlers.end()) {
        std::string known;
        for (const auto &h : handlers)
          known += (known.empty() ? "" : ", ") + h.first.str();
        setError(keyNode, keyPath,
                 "unknown key (expected one of: " + known + ")");
        return;
      }
      if (!seen.insert({key, true}).second) {
        setError(keyNode, keyPath, "duplicate key");
        return;
      }
      llvm::yaml::Node *value = kv.getValue();
      if (!value || llvm::isa<llvm::yaml::NullNode>(value)) {
        setError(keyNode, keyPath, "missing value");
        return;
      }
      handler->second(value, keyPath);
    }
    if (firstError)
      return;
    for (llvm::StringRef key : required)
      if (!seen.count(key)) {
        setError(node, path, "missing required key '" + key.str() + "'");
        return;
      }
  }

  bool readScalar(llvm::yaml::Node *node, llvm::StringRef path,
                  std::string &out) {
    auto *scalar = llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(node);
    if (!scalar) {
      setError(node, path, "expected a scalar value");
      return false;
    }
    llvm::SmallString<32> storage;
    out = scalar->getValue(storage).trim().str();
    return true;
  }

  bool readString(llvm::yaml::Node *node, llvm::StringRef path,
                  std::string &out) {
    return readScalar(node, path, out);
  }

  void readBool(llvm::yaml::Node *node, llvm::StringRef path, bool &out) {
    std::string text;
    if (!readScalar(node, path, text))
      return;
    if (text == "true")
      out = true;
    else if (text == "false")
      out = false;
    else
      setError(node, path, "expected true or false, got '" + text + "'");
  }

  void readReal(llvm::yaml::Node *node, llvm::StringRef path, double &out) {
    std::string text;
    if (!readScalar(node, path, text))
      return;
    llvm::StringRef ref(text);
    double value;
    // StringRef::getAsDouble accepts e-notation ("51e9", "1.2E12").
    if (ref.getAsDouble(value) || !std::isfinite(value)) {
      setError(node, path, "expected a number, got '" + text + "'");
      return;
    }
    out = value;
  }

  void readInt(llvm::yaml::Node *node, llvm::StringRef path, int64_t &out) {
    std::string text;
    if (!readScalar(node, path, text))
      return;
    llvm::StringRef ref(text);
    int64_t integer;
    if (!ref.getAsInteger(10, integer)) {
      out = integer;
      return;
    }
    // Accept e-notation for whole numbers ("20e9").
    double value;
    if (!ref.getAsDouble(value) && std::isfinite(value) &&
        value == std::floor(value) && std::fabs(value) < 9.0e18) {
      out = int64_t(value);
      return;
    }
    setError(node, path, "expected an integer, got '" + text + "'");
  }

  void setError(llvm::yaml::Node *node, llvm::StringRef path,
                const std::string &what) {
    if (firstError)
      return;
    // A YAML syntax error found earlier explains what follows.
    if (!yamlDiagnostic.empty()) {
      firstError = fileName.str() + ":" + yamlDiagnostic + " (malformed YAML)";
      return;
    }
    std::string location = fileName.str();
    if (node) {
      llvm::SMLoc loc = node->getSourceRange().Start;
      if (loc.isValid()) {
        auto [line, col] = sourceMgr.getLineAndColumn(loc);
        location += llvm::formatv(":{0}:{1}", line, col).str();
      }
    }
    firstError =
        location + ": " + (path.empty() ? "" : path.str() + ": ") + what;
  }

  llvm::Error error(llvm::yaml::Node *node, llvm::StringRef path,
                    const std::string &what) {
    setError(node, path, what);
    return llvm::createStringError(llvm::inconvertibleErrorCode(), *firstError);
  }

  llvm::SourceMgr &sourceMgr;
  llvm::StringRef fileName;
  const std::string &yamlDiagnostic;
  std::optional<std::string> firstError;
};

} // namespace

llvm::Expected<MachineModel>
ratrain::parseMachineModel(llvm::StringRef yaml, llvm::StringRef fileName) {
  llvm::SourceMgr sourceMgr;
  // YAML diagnostics (syntax errors) are collected, not printed.
  std::string yamlDiagnostic;
  sourceMgr.setDiagHandler(
      [](const llvm::SMDiagnostic &diag, void *context) {
        auto *out = static_cast<std::string *>(context);
        if (out->empty())
          *out = llvm::formatv("{0}:{1}: {2}", diag.getLineNo(),
                               diag.getColumnNo() + 1, diag.getMessage())
                     .str();
      },
      &yamlDiagnostic);
  llvm::yaml::Stream stream(yaml, sourceMgr);
  MachineFileParser parser(sourceMgr, fileName, yamlDiagnostic);
  llvm::Expected<MachineModel> machine = parser.parse(stream);
  // Our own error came first when there is one; a syntax error the parser
  // did not trip over (it stops at the first problem) still fails the file.
  if (machine && !yamlDiagnostic.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   fileName + ":" + yamlDiagnostic +
                                       " (malformed YAML)");
  return machine;
}

llvm::Expected<MachineModel> ratrain::loadMachineModel(llvm::StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(
        buffer.getError(),
        path + ": cannot read machine file: " + buffer.getError().message());
  return parseMachineModel((*buffer)->getBuffer(), path);
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
  double share = 1.0 / double(k);
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
  ClusterSpec &c = split.cluster;
  c.cores = std::max<int64_t>(1, machine.cluster.cores / k);
  c.ddrBytes = machine.cluster.ddrBytes / k;
  c.gsmBytes = machine.cluster.gsmBytes / k;
  c.dmaChannels = std::max<int64_t>(1, machine.cluster.dmaChannels / k);
  c.ddrBandwidth = machine.cluster.ddrBandwidth * share;
  c.dmaBandwidth = machine.cluster.dmaBandwidth * share;
  c.peakFlopsF16 = machine.cluster.peakFlopsF16 * share;
  c.peakFlopsF32 = machine.cluster.peakFlopsF32 * share;
  // A virtual cluster runs its kernels on 1/K of the cores: the per-element
  // and per-call terms of a fit take K times as long (its efficiency applies
  // to the split peak).
  for (KernelTimeFit *fit : {&c.gemmFit.f32, &c.gemmFit.f16}) {
    fit->elementSeconds *= double(k);
    fit->callSeconds *= double(k);
  }
  if (llvm::Error error = split.validate())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("machine '{0}' split into {1} virtual clusters per "
                      "cluster: {2}",
                      machine.name, k, llvm::toString(std::move(error))));
  return split;
}

/// `text` as a YAML scalar that reads back as the same bytes: plain when it
/// is a simple name, else double-quoted with `"`, `\` and control
/// characters escaped.
static std::string yamlScalar(llvm::StringRef text) {
  auto simple = [](char ch) {
    return llvm::isAlnum(ch) || llvm::StringRef("_.-+/").contains(ch);
  };
  if (!text.empty() && (llvm::isAlnum(text.front()) || text.front() == '_') &&
      llvm::all_of(text, simple))
    return text.str();
  std::string quoted = "\"";
  for (char ch : text) {
    unsigned char byte = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\')
      quoted += {'\\', ch};
    else if (ch == '\n')
      quoted += "\\n";
    else if (ch == '\t')
      quoted += "\\t";
    else if (byte < 0x20 || byte == 0x7f)
      quoted += llvm::formatv("\\x{0:x-2}", unsigned(byte)).str();
    else
      quoted += ch;
  }
  return quoted + "\"";
}

std::string ratrain::printMachineModel(const MachineModel &machine) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto real = [](double value) { return llvm::formatv("{0:e6}", value).str(); };
  const ClusterSpec &c = machine.cluster;
  const NetworkSpec &n = machine.network;
  os << "name: " << yamlScalar(machine.name) << "\n";
  os << "nodes: " << machine.nodes << "\n";
  os << "clusters_per_node: " << machine.clustersPerNode << "\n";
  if (machine.virtualClustersPerCluster != 1)
    os << "virtual_clusters_per_cluster: " << machine.virtualClustersPerCluster
       << "\n";
  os << "cluster:\n";
  os << "  cores: " << c.cores << "\n";
  os << "  ddr_bytes: " << c.ddrBytes << "\n";
  os << "  gsm_bytes: " << c.gsmBytes << "\n";
  os << "  am_bytes_per_core: " << c.amBytesPerCore << "\n";
  os << "  ddr_bandwidth: " << real(c.ddrBandwidth) << "\n";
  os << "  dma_bandwidth: " << real(c.dmaBandwidth) << "\n";
  os << "  dma_channels: " << c.dmaChannels << "\n";
  os << "  peak_flops_f16: " << real(c.peakFlopsF16) << "\n";
  os << "  peak_flops_f32: " << real(c.peakFlopsF32) << "\n";
  os << "  fused_attention: " << (c.fusedAttention ? "true" : "false") << "\n";
  os << "  attention_peak: " << (c.attentionAtF32Peak ? "f32" : "f16") << "\n";
  os << "  efficiency:\n";
  os << "    gemm: " << real(c.efficiency.gemm) << "\n";
  os << "    attention_forward: " << real(c.efficiency.attentionForward)
     << "\n";
  os << "    attention_backward: " << real(c.efficiency.attentionBackward)
     << "\n";
  if (c.efficiency.attentionForwardF16 > 0)
    os << "    attention_forward_f16: "
       << real(c.efficiency.attentionForwardF16) << "\n";
  if (c.efficiency.attentionBackwardF16 > 0)
    os << "    attention_backward_f16: "
       << real(c.efficiency.attentionBackwardF16) << "\n";
  os << "    memory_bound: " << real(c.efficiency.memoryBound) << "\n";
  if (c.gemmFit.f32.present() || c.gemmFit.f16.present()) {
    os << "  gemm_fit:\n";
    for (auto [key, fit] :
         {std::pair<const char *, const KernelTimeFit &>{"f32", c.gemmFit.f32},
          {"f16", c.gemmFit.f16}}) {
      if (!fit.present())
        continue;
      os << "    " << key << ":\n";
      os << "      efficiency: " << real(fit.efficiency) << "\n";
      os << "      element_seconds: " << real(fit.elementSeconds) << "\n";
      os << "      call_seconds: " << real(fit.callSeconds) << "\n";
    }
  }
  os << "network:\n";
  if (n.levels.empty()) {
    os << "  intra_node:\n";
    os << "    bandwidth: " << real(n.intraNode.bandwidth) << "\n";
    os << "    latency: " << real(n.intraNode.latency) << "\n";
    os << "  inter_node:\n";
    os << "    bandwidth: " << real(n.interNode.bandwidth) << "\n";
    os << "    latency: " << real(n.interNode.latency) << "\n";
    os << "  node_injection_bandwidth: " << real(n.nodeInjectionBandwidth)
       << "\n";
  } else {
    os << "  levels:\n";
    for (size_t i = 0; i < n.levels.size(); ++i) {
      const NetworkLevel &level = n.levels[i];
      os << "    - name: " << yamlScalar(level.name) << "\n";
      if (i + 1 < n.levels.size())
        os << "      size: " << level.size << "\n";
      os << "      bandwidth: " << real(level.link.bandwidth) << "\n";
      os << "      latency: " << real(level.link.latency) << "\n";
      if (level.injectionBandwidth > 0)
        os << "      injection_bandwidth: " << real(level.injectionBandwidth)
           << "\n";
    }
  }
  if (n.inNetwork.present()) {
    os << "  in_network:\n";
    os << "    level: " << n.inNetwork.level << "\n";
    os << "    reduce_speedup: " << real(n.inNetwork.reduceSpeedup) << "\n";
    os << "    multicast_speedup: " << real(n.inNetwork.multicastSpeedup)
       << "\n";
  }
  os << "  collective: " << stringifyCollectiveAlgorithm(n.collective) << "\n";
  const OffloadTierSpec &o = machine.offload;
  if (o.bytesPerNode > 0 || o.bandwidth > 0) {
    os << "offload:\n";
    os << "  kind: " << stringifyOffloadTierKind(o.kind) << "\n";
    os << "  bytes_per_node: " << o.bytesPerNode << "\n";
    os << "  bandwidth: " << real(o.bandwidth) << "\n";
    os << "  latency: " << real(o.latency) << "\n";
    os << "  chunk_bytes: " << o.chunkBytes << "\n";
  }
  return text;
}
