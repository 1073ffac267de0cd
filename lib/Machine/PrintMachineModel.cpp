//===- PrintMachineModel.cpp - Writing machine files ----------------------===//
//
// printMachineModel: a machine file that parses back to the same model.
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/MachineModel.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace ratrain;

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
  if (c.ddrBandwidthAlone > 0)
    os << "  ddr_bandwidth_alone: " << real(c.ddrBandwidthAlone) << "\n";
  if (c.optimizerBandwidth > 0)
    os << "  optimizer_bandwidth: " << real(c.optimizerBandwidth) << "\n";
  if (c.optimizerBandwidthAlone > 0)
    os << "  optimizer_bandwidth_alone: " << real(c.optimizerBandwidthAlone)
       << "\n";
  if (c.optimizerBandwidthF16 > 0)
    os << "  optimizer_bandwidth_f16: " << real(c.optimizerBandwidthF16)
       << "\n";
  if (c.optimizerBandwidthAloneF16 > 0)
    os << "  optimizer_bandwidth_alone_f16: "
       << real(c.optimizerBandwidthAloneF16) << "\n";
  if (c.elementwiseBandwidth > 0)
    os << "  elementwise_bandwidth: " << real(c.elementwiseBandwidth) << "\n";
  if (c.elementwiseBandwidthF16 > 0)
    os << "  elementwise_bandwidth_f16: " << real(c.elementwiseBandwidthF16)
       << "\n";
  os << "  dma_channels: " << c.dmaChannels << "\n";
  os << "  dma_on_cores: " << (c.dmaOnCores ? "true" : "false") << "\n";
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
  for (auto [name, fits] :
       {std::pair<const char *, const KernelTimeFits &>{"gemm_fit", c.gemmFit},
        {"attention_forward_fit", c.attentionForwardFit},
        {"attention_backward_fit", c.attentionBackwardFit}}) {
    if (!fits.f32.present() && !fits.f16.present())
      continue;
    os << "  " << name << ":\n";
    for (auto [key, fit] :
         {std::pair<const char *, const KernelTimeFit &>{"f32", fits.f32},
          {"f16", fits.f16}}) {
      if (!fit.present())
        continue;
      os << "    " << key << ":\n";
      os << "      efficiency: " << real(fit.efficiency) << "\n";
      os << "      element_seconds: " << real(fit.elementSeconds) << "\n";
      if (fit.rowSeconds != 0)
        os << "      row_seconds: " << real(fit.rowSeconds) << "\n";
      os << "      call_seconds: " << real(fit.callSeconds) << "\n";
    }
  }
  if (!c.gemmMeasured.empty()) {
    os << "  gemm_measured:\n";
    for (auto [key, calls] :
         {std::pair<const char *, const std::vector<MeasuredGemm> &>{
              "f32", c.gemmMeasured.f32},
          {"f16", c.gemmMeasured.f16}}) {
      if (calls.empty())
        continue;
      os << "    " << key << ":\n";
      for (const MeasuredGemm &g : calls)
        os << "      - {form: " << stringifyGemmForm(g.form) << ", m: " << g.m
           << ", n: " << g.n << ", k: " << g.k
           << ", seconds: " << real(g.seconds) << "}\n";
    }
  }
  if (!machine.classes.empty()) {
    // The scales as written; the class's DDR when it differs (the rest of
    // its cluster follows from `cluster:` and the scales).
    os << "classes:\n";
    for (const ClusterClass &cls : machine.classes) {
      os << "  - name: " << yamlScalar(cls.name) << "\n";
      os << "    count: " << cls.count << "\n";
      os << "    compute_scale: " << real(cls.computeScale) << "\n";
      if (cls.cluster.ddrBytes != c.ddrBytes)
        os << "    ddr_bytes: " << cls.cluster.ddrBytes << "\n";
      if (cls.ddrBandwidthScale != 1)
        os << "    ddr_bandwidth_scale: " << real(cls.ddrBandwidthScale)
           << "\n";
      if (cls.linkScale != 1)
        os << "    link_scale: " << real(cls.linkScale) << "\n";
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
  if (n.oversubscribedLatency > 0)
    os << "  oversubscribed_latency: " << real(n.oversubscribedLatency) << "\n";
  if (n.progressCoreShare > 0)
    os << "  progress_core_share: " << real(n.progressCoreShare) << "\n";
  if (n.coreCopyBandwidth > 0)
    os << "  core_copy_bandwidth: " << real(n.coreCopyBandwidth) << "\n";
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
    if (o.hostCacheBytesPerNode > 0 || o.hostCacheBandwidth > 0) {
      os << "  host_cache_bytes_per_node: " << o.hostCacheBytesPerNode << "\n";
      os << "  host_cache_bandwidth: " << real(o.hostCacheBandwidth) << "\n";
    }
  }
  return text;
}
