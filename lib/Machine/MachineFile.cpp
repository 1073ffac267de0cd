//===- MachineFile.cpp - Reading machine files ----------------------------===//
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
#include <optional>

using namespace ratrain;

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
    std::vector<std::optional<int64_t>> classDdrBytes;
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
          }},
         {"classes",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            parseClasses(n, k, machine.classes, classDdrBytes);
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
          machine.clustersPerNode = detail::groupProduct(
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
    resolveClasses(machine, classDdrBytes);
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

  /// `gemm_measured.f32` / `.f16`: `[{form, m, n, k, seconds}, ...]`, all
  /// five required. validate() checks the values and repeated shapes.
  void parseMeasuredGemms(llvm::yaml::Node *node, llvm::StringRef path,
                          std::vector<MeasuredGemm> &calls) {
    auto *sequence = llvm::dyn_cast_or_null<llvm::yaml::SequenceNode>(node);
    if (!sequence) {
      setError(node, path,
               "expected a list of measured GEMM calls ({form, m, n, k, "
               "seconds})");
      return;
    }
    for (llvm::yaml::Node &item : *sequence) {
      if (firstError)
        return;
      std::string itemPath =
          llvm::formatv("{0}[{1}]", path, calls.size()).str();
      MeasuredGemm g;
      auto in = [&](int64_t &field) {
        return [&, ptr = &field](llvm::yaml::Node *n, llvm::StringRef k) {
          readInt(n, k, *ptr);
        };
      };
      parseMapping(
          &item, itemPath,
          {{"form",
            [&](llvm::yaml::Node *n, llvm::StringRef k) {
              std::string text;
              if (!readScalar(n, k, text))
                return;
              if (std::optional<GemmForm> form = parseGemmForm(text))
                g.form = *form;
              else
                setError(n, k,
                         "expected NT, NN or TN (how the GEMM reads "
                         "its operands), got '" +
                             text + "'");
            }},
           {"m", in(g.m)},
           {"n", in(g.n)},
           {"k", in(g.k)},
           {"seconds", [&](llvm::yaml::Node *n,
                           llvm::StringRef k) { readReal(n, k, g.seconds); }}},
          {"form", "m", "n", "k", "seconds"});
      calls.push_back(g);
    }
  }

  /// `classes: [{name, count, compute_scale, ddr_bytes, ddr_bandwidth_scale,
  /// link_scale}, ...]` (name and count required). The clusters are resolved
  /// later (resolveClasses), when `cluster:` has been read wherever it stands
  /// in the file; `ddrBytes` keeps each class's `ddr_bytes` when given.
  void parseClasses(llvm::yaml::Node *node, llvm::StringRef path,
                    std::vector<ClusterClass> &classes,
                    std::vector<std::optional<int64_t>> &ddrBytes) {
    auto *sequence = llvm::dyn_cast_or_null<llvm::yaml::SequenceNode>(node);
    if (!sequence) {
      setError(node, path,
               "expected a list of classes of clusters ({name, count, "
               "compute_scale, ddr_bytes, ddr_bandwidth_scale, link_scale})");
      return;
    }
    for (llvm::yaml::Node &item : *sequence) {
      if (firstError)
        return;
      std::string itemPath =
          llvm::formatv("{0}[{1}]", path, classes.size()).str();
      ClusterClass cls;
      std::optional<int64_t> ddr;
      auto real = [&](double &field) {
        return [&, ptr = &field](llvm::yaml::Node *n, llvm::StringRef k) {
          readReal(n, k, *ptr);
        };
      };
      parseMapping(
          &item, itemPath,
          {{"name", [&](llvm::yaml::Node *n,
                        llvm::StringRef k) { readString(n, k, cls.name); }},
           {"count", [&](llvm::yaml::Node *n,
                         llvm::StringRef k) { readInt(n, k, cls.count); }},
           {"compute_scale", real(cls.computeScale)},
           {"ddr_bytes",
            [&](llvm::yaml::Node *n, llvm::StringRef k) {
              int64_t bytes = 0;
              readInt(n, k, bytes);
              ddr = bytes;
            }},
           {"ddr_bandwidth_scale", real(cls.ddrBandwidthScale)},
           {"link_scale", real(cls.linkScale)}},
          {"name", "count"});
      classes.push_back(std::move(cls));
      ddrBytes.push_back(ddr);
    }
    if (!firstError && classes.empty())
      setError(node, path,
               "expected at least one class (leave 'classes' out for a "
               "machine whose clusters are all alike)");
  }

  /// Each class's cluster: the machine's `cluster:` with the peaks x
  /// compute_scale, DDR and DMA bandwidth x ddr_bandwidth_scale and
  /// `ddr_bytes` when the class gives it. validate() checks the scales.
  static void resolveClasses(MachineModel &machine,
                             const std::vector<std::optional<int64_t>> &ddr) {
    for (size_t i = 0; i < machine.classes.size(); ++i) {
      ClusterClass &cls = machine.classes[i];
      ClusterSpec &c = cls.cluster;
      c = machine.cluster;
      c.peakFlopsF16 *= cls.computeScale;
      c.peakFlopsF32 *= cls.computeScale;
      c.ddrBandwidth *= cls.ddrBandwidthScale;
      c.dmaBandwidth *= cls.ddrBandwidthScale;
      c.ddrBandwidthAlone *= cls.ddrBandwidthScale;
      c.optimizerBandwidth *= cls.ddrBandwidthScale;
      c.optimizerBandwidthAlone *= cls.ddrBandwidthScale;
      c.optimizerBandwidthF16 *= cls.ddrBandwidthScale;
      c.optimizerBandwidthAloneF16 *= cls.ddrBandwidthScale;
      c.elementwiseBandwidth *= cls.ddrBandwidthScale;
      c.elementwiseBandwidthF16 *= cls.ddrBandwidthScale;
      // A class compute_scale times as fast runs a measured call in
      // 1 / compute_scale of its time.
      for (std::vector<MeasuredGemm> *calls :
           {&c.gemmMeasured.f32, &c.gemmMeasured.f16})
        for (MeasuredGemm &g : *calls)
          g.seconds /= cls.computeScale;
      if (ddr[i])
        c.ddrBytes = *ddr[i];
    }
  }

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
    // A kernel's time fit (KernelTimeFit) and its per-type mapping.
    auto fit = [&](KernelTimeFit &f) {
      return [&, ptr = &f](llvm::yaml::Node *n, llvm::StringRef k) {
        parseMapping(n, k,
                     {{"efficiency", real(ptr->efficiency)},
                      {"element_seconds", real(ptr->elementSeconds)},
                      {"row_seconds", real(ptr->rowSeconds)},
                      {"call_seconds", real(ptr->callSeconds)}},
                     {"efficiency", "element_seconds", "call_seconds"});
      };
    };
    auto fits = [&](KernelTimeFits &f) {
      return [&, ptr = &f](llvm::yaml::Node *n, llvm::StringRef k) {
        parseMapping(n, k, {{"f32", fit(ptr->f32)}, {"f16", fit(ptr->f16)}},
                     {});
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
         {"ddr_bandwidth_alone", real(c.ddrBandwidthAlone)},
         {"optimizer_bandwidth", real(c.optimizerBandwidth)},
         {"optimizer_bandwidth_alone", real(c.optimizerBandwidthAlone)},
         {"optimizer_bandwidth_f16", real(c.optimizerBandwidthF16)},
         {"optimizer_bandwidth_alone_f16", real(c.optimizerBandwidthAloneF16)},
         {"elementwise_bandwidth", real(c.elementwiseBandwidth)},
         {"elementwise_bandwidth_f16", real(c.elementwiseBandwidthF16)},
         {"dma_channels", in(c.dmaChannels)},
         {"dma_on_cores",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            readBool(n, k, c.dmaOnCores);
          }},
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
         {"gemm_fit", fits(c.gemmFit)},
         {"gemm_measured",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            parseMapping(n, k,
                         {{"f32",
                           [&](llvm::yaml::Node *v, llvm::StringRef p) {
                             parseMeasuredGemms(v, p, c.gemmMeasured.f32);
                           }},
                          {"f16",
                           [&](llvm::yaml::Node *v, llvm::StringRef p) {
                             parseMeasuredGemms(v, p, c.gemmMeasured.f16);
                           }}},
                         {});
          }},
         {"attention_forward_fit", fits(c.attentionForwardFit)},
         {"attention_backward_fit", fits(c.attentionBackwardFit)},
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
          }},
         {"host_cache_bytes_per_node",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            readInt(n, k, o.hostCacheBytesPerNode);
          }},
         {"host_cache_bandwidth",
          [&](llvm::yaml::Node *n, llvm::StringRef k) {
            readReal(n, k, o.hostCacheBandwidth);
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
                  {"oversubscribed_latency",
                   [&](llvm::yaml::Node *n, llvm::StringRef k) {
                     readReal(n, k, net.oversubscribedLatency);
                   }},
                  {"progress_core_share",
                   [&](llvm::yaml::Node *n, llvm::StringRef k) {
                     readReal(n, k, net.progressCoreShare);
                   }},
                  {"core_copy_bandwidth",
                   [&](llvm::yaml::Node *n, llvm::StringRef k) {
                     readReal(n, k, net.coreCopyBandwidth);
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
