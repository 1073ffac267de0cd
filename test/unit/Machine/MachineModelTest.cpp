//===- MachineModelTest.cpp - Machine files -------------------------------===//

#include "ratrain/Machine/MachineModel.h"

#include "gtest/gtest.h"

using namespace ratrain;

namespace {

std::string examples(const char *file) {
  return std::string(RATRAIN_EXAMPLES_DIR) + "/machines/" + file;
}

/// The error message of a parse that must fail.
std::string parseError(llvm::StringRef text) {
  llvm::Expected<MachineModel> machine = parseMachineModel(text, "m.yaml");
  if (machine) {
    ADD_FAILURE() << "parse unexpectedly succeeded";
    return "";
  }
  return llvm::toString(machine.takeError());
}

/// `text` with `entries` (indented cluster keys) at the start of its
/// `cluster:` mapping.
std::string withClusterEntries(std::string text, llvm::StringRef entries) {
  text.insert(text.find("cluster:\n") + std::string("cluster:\n").size(),
              entries.str());
  return text;
}

const char *minimal = R"(name: tiny
nodes: 2
clusters_per_node: 4
cluster:
  cores: 24
  ddr_bytes: 20e9
  gsm_bytes: 6291456
  am_bytes_per_core: 786432
  ddr_bandwidth: 51e9
  peak_flops_f16: 11.6e12
  peak_flops_f32: 5.8e12
network:
  intra_node: {bandwidth: 50e9, latency: 2e-6}
  inter_node: {bandwidth: 12.5e9, latency: 5e-6}
)";

TEST(MachineModel, LoadsMT3000) {
  llvm::Expected<MachineModel> m = loadMachineModel(examples("mt3000.yaml"));
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->name, "mt3000");
  EXPECT_EQ(m->clustersPerNode, 4);
  EXPECT_EQ(m->cluster.cores, 24);
  EXPECT_EQ(m->cluster.ddrBytes, 20000000000);
  EXPECT_EQ(m->cluster.gsmBytes, 6291456);
  EXPECT_EQ(m->cluster.amBytesPerCore, 786432);
  EXPECT_DOUBLE_EQ(m->cluster.ddrBandwidth, 51e9);
  EXPECT_DOUBLE_EQ(m->cluster.peakFlopsF16, 11.6e12);
  EXPECT_DOUBLE_EQ(m->cluster.efficiency.gemm, 0.7);
  EXPECT_TRUE(m->cluster.fusedAttention);
  EXPECT_EQ(m->network.collective, CollectiveAlgorithm::Hierarchical);
  EXPECT_DOUBLE_EQ(m->network.nodeInjectionBandwidth, 25e9);
  EXPECT_GE(m->totalClusters(), 1024);
}

TEST(MachineModel, LoadsHost) {
  llvm::Expected<MachineModel> m = loadMachineModel(examples("host.yaml"));
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_GT(m->cluster.gsmBytes, 0);
  EXPECT_GT(m->cluster.amBytesPerCore, 0);
  EXPECT_GT(m->cluster.peakFlopsF32, 0);
}

TEST(MachineModel, DefaultsAndENotation) {
  llvm::Expected<MachineModel> m = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->cluster.ddrBytes, 20000000000); // "20e9" as an integer
  EXPECT_EQ(m->totalClusters(), 8);
  // Unset keys keep their defaults; the DMA engine defaults to DDR speed.
  EXPECT_DOUBLE_EQ(m->cluster.dmaBandwidth, 51e9);
  EXPECT_DOUBLE_EQ(m->cluster.efficiency.attentionBackward, 0.4);
  EXPECT_FALSE(m->cluster.fusedAttention);
  EXPECT_FALSE(m->cluster.attentionAtF32Peak);
  EXPECT_EQ(m->network.collective, CollectiveAlgorithm::Hierarchical);
}

TEST(MachineModel, AttentionPeak) {
  std::string text = minimal;
  size_t at = text.find("cluster:\n") + std::string("cluster:\n").size();
  std::string f32 = text;
  f32.insert(at, "  attention_peak: f32\n");
  llvm::Expected<MachineModel> m = parseMachineModel(f32, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_TRUE(m->cluster.attentionAtF32Peak);
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*m), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_TRUE(back->cluster.attentionAtF32Peak);
  std::string bad = text;
  bad.insert(at, "  attention_peak: bf16\n");
  llvm::Expected<MachineModel> refused = parseMachineModel(bad, "m.yaml");
  ASSERT_FALSE(bool(refused));
  std::string message = llvm::toString(refused.takeError());
  EXPECT_NE(message.find("cluster.attention_peak"), std::string::npos)
      << message;
  EXPECT_NE(message.find("expected f32 or f16"), std::string::npos) << message;
}

TEST(MachineModel, SixteenBitAttentionEfficiencies) {
  std::string text = minimal;
  llvm::Expected<MachineModel> plain = parseMachineModel(text, "m.yaml");
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  EXPECT_EQ(plain->cluster.efficiency.attentionForwardF16, 0);
  EXPECT_EQ(printMachineModel(*plain).find("attention_forward_f16"),
            std::string::npos);
  size_t at = text.find("cluster:\n") + std::string("cluster:\n").size();
  std::string own = text;
  own.insert(at, "  efficiency:\n    attention_forward_f16: 0.58\n"
                 "    attention_backward_f16: 0.52\n");
  llvm::Expected<MachineModel> m = parseMachineModel(own, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_DOUBLE_EQ(m->cluster.efficiency.attentionForwardF16, 0.58);
  EXPECT_DOUBLE_EQ(m->cluster.efficiency.attentionBackwardF16, 0.52);
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*m), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_DOUBLE_EQ(back->cluster.efficiency.attentionBackwardF16, 0.52);
  std::string bad = text;
  bad.insert(at, "  efficiency:\n    attention_backward_f16: 1.5\n");
  llvm::Expected<MachineModel> refused = parseMachineModel(bad, "m.yaml");
  ASSERT_FALSE(bool(refused));
  std::string message = llvm::toString(refused.takeError());
  EXPECT_NE(message.find("cluster.efficiency.attention_backward_f16"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("(0, 1]"), std::string::npos) << message;
}

TEST(MachineModel, InNetworkCollectives) {
  std::string text = minimal;
  llvm::Expected<MachineModel> plain = parseMachineModel(text, "m.yaml");
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  EXPECT_FALSE(plain->network.inNetwork.present());
  EXPECT_EQ(plain->network.inNetwork.speedup(0, true), 1);
  EXPECT_EQ(printMachineModel(*plain).find("in_network"), std::string::npos);

  std::string capable = text + "  in_network: {level: 0, reduce_speedup: 2.5, "
                               "multicast_speedup: 2.9}\n";
  llvm::Expected<MachineModel> m = parseMachineModel(capable, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  const InNetworkCollectives &in = m->network.inNetwork;
  EXPECT_TRUE(in.present());
  EXPECT_EQ(in.level, 0);
  EXPECT_DOUBLE_EQ(in.speedup(0, /*reduces=*/true), 2.5);
  EXPECT_DOUBLE_EQ(in.speedup(0, /*reduces=*/false), 2.9);
  EXPECT_DOUBLE_EQ(in.speedup(1, /*reduces=*/true), 1);
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*m), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_DOUBLE_EQ(back->network.inNetwork.multicastSpeedup, 2.9);

  // A level the machine does not have, a speedup below 1, no level.
  for (auto [block, key, words] :
       {std::tuple<const char *, const char *, const char *>{
            "{level: 2, reduce_speedup: 2}", "network.in_network.level",
            "0 to 1, got 2"},
        {"{level: 1, reduce_speedup: 0.5}", "network.in_network.reduce_speedup",
         "at least 1"},
        {"{reduce_speedup: 2}", "in_network",
         "missing required key 'level'"}}) {
    llvm::Expected<MachineModel> refused =
        parseMachineModel(text + "  in_network: " + block + "\n", "m.yaml");
    ASSERT_FALSE(bool(refused)) << block;
    std::string message = llvm::toString(refused.takeError());
    EXPECT_NE(message.find(key), std::string::npos) << message;
    EXPECT_NE(message.find(words), std::string::npos) << message;
  }
}

TEST(MachineModel, AttentionFits) {
  llvm::Expected<MachineModel> m = parseMachineModel(
      withClusterEntries(minimal,
                         "  attention_forward_fit:\n"
                         "    f16: {efficiency: 0.65, element_seconds: 4e-10, "
                         "row_seconds: 5e-8, call_seconds: 2e-6}\n"
                         "  attention_backward_fit:\n"
                         "    f32: {efficiency: 0.6, element_seconds: 1e-10, "
                         "call_seconds: 3e-5}\n"),
      "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  const ClusterSpec &c = m->cluster;
  EXPECT_DOUBLE_EQ(c.attentionForwardFit.f16.efficiency, 0.65);
  EXPECT_DOUBLE_EQ(c.attentionForwardFit.f16.elementSeconds, 4e-10);
  EXPECT_DOUBLE_EQ(c.attentionForwardFit.f16.rowSeconds, 5e-8);
  EXPECT_DOUBLE_EQ(c.attentionForwardFit.f16.callSeconds, 2e-6);
  EXPECT_FALSE(c.attentionForwardFit.f32.present());
  EXPECT_DOUBLE_EQ(c.attentionBackwardFit.f32.efficiency, 0.6);
  EXPECT_DOUBLE_EQ(c.attentionBackwardFit.f32.rowSeconds, 0.0);
  EXPECT_FALSE(c.gemmFit.f32.present());
  // Two virtual clusters per cluster: the per-score, per-row and per-call
  // terms double; the printed file reads back the same.
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  EXPECT_DOUBLE_EQ(split->cluster.attentionForwardFit.f16.elementSeconds,
                   8e-10);
  EXPECT_DOUBLE_EQ(split->cluster.attentionForwardFit.f16.rowSeconds, 1e-7);
  EXPECT_DOUBLE_EQ(split->cluster.attentionBackwardFit.f32.callSeconds, 6e-5);
  std::string printed = printMachineModel(*split);
  EXPECT_EQ(printed.find("gemm_fit"), std::string::npos) << printed;
  llvm::Expected<MachineModel> back = parseMachineModel(printed, "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_DOUBLE_EQ(back->cluster.attentionForwardFit.f16.rowSeconds, 1e-7);
  EXPECT_DOUBLE_EQ(back->cluster.attentionBackwardFit.f32.efficiency, 0.6);
  EXPECT_FALSE(back->cluster.attentionBackwardFit.f16.present());
  // Bad values name the key and the limit.
  std::string error = parseError(withClusterEntries(
      minimal, "  attention_backward_fit:\n    f16: {efficiency: 0.5, "
               "element_seconds: 0, row_seconds: -2e-8, call_seconds: 0}\n"));
  EXPECT_NE(error.find("cluster.attention_backward_fit.f16.row_seconds: must "
                       "be a non-negative number of seconds"),
            std::string::npos)
      << error;
}

TEST(MachineModel, GemmFitAndVirtualClusters) {
  std::string text = minimal;
  size_t at = text.find("cluster:\n") + std::string("cluster:\n").size();
  std::string fitted = text;
  fitted.insert(at, "  gemm_fit:\n"
                    "    f32: {efficiency: 0.88, element_seconds: 3.7e-10, "
                    "call_seconds: 1.8e-6}\n"
                    "    f16:\n      efficiency: 0.82\n"
                    "      element_seconds: 2e-10\n      call_seconds: 0\n");
  llvm::Expected<MachineModel> m = parseMachineModel(fitted, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_DOUBLE_EQ(m->cluster.gemmFit.f32.efficiency, 0.88);
  EXPECT_DOUBLE_EQ(m->cluster.gemmFit.f32.elementSeconds, 3.7e-10);
  EXPECT_DOUBLE_EQ(m->cluster.gemmFit.f32.callSeconds, 1.8e-6);
  EXPECT_DOUBLE_EQ(m->cluster.gemmFit.f16.efficiency, 0.82);
  EXPECT_EQ(m->virtualClustersPerCluster, 1);
  // Split into 2 virtual clusters per cluster: the file says so, and a
  // virtual cluster's per-element and per-call GEMM terms double.
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  EXPECT_EQ(split->virtualClustersPerCluster, 2);
  EXPECT_EQ(split->clustersPerNode, 8);
  EXPECT_DOUBLE_EQ(split->cluster.gemmFit.f32.efficiency, 0.88);
  EXPECT_DOUBLE_EQ(split->cluster.gemmFit.f32.elementSeconds, 7.4e-10);
  EXPECT_DOUBLE_EQ(split->cluster.gemmFit.f32.callSeconds, 3.6e-6);
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*split), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->virtualClustersPerCluster, 2);
  EXPECT_DOUBLE_EQ(back->cluster.gemmFit.f32.elementSeconds, 7.4e-10);
  EXPECT_DOUBLE_EQ(back->cluster.gemmFit.f16.efficiency, 0.82);
  // A file without a fit prints none.
  llvm::Expected<MachineModel> plain = parseMachineModel(text, "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(printMachineModel(*plain).find("gemm_fit"), std::string::npos);
  EXPECT_EQ(printMachineModel(*plain).find("virtual_clusters"),
            std::string::npos);

  // Bad values name the key and the limit.
  auto withFit = [&](const char *fit) {
    std::string bad = text;
    bad.insert(at, std::string("  gemm_fit:\n    f32: ") + fit + "\n");
    return parseError(bad);
  };
  std::string error =
      withFit("{efficiency: 1.5, element_seconds: 0, call_seconds: 0}");
  EXPECT_NE(error.find("cluster.gemm_fit.f32.efficiency: is a fraction of "
                       "peak in (0, 1], got 1.5"),
            std::string::npos)
      << error;
  error = withFit("{efficiency: 0.5, element_seconds: -1, call_seconds: 0}");
  EXPECT_NE(error.find("cluster.gemm_fit.f32.element_seconds: must be a "
                       "non-negative number of seconds"),
            std::string::npos)
      << error;
  error = withFit("{efficiency: 0.5, element_seconds: 0}");
  EXPECT_NE(error.find("call_seconds"), std::string::npos) << error;
  std::string virtualBad = text;
  virtualBad.insert(0, "virtual_clusters_per_cluster: 3\n");
  error = parseError(virtualBad);
  EXPECT_NE(error.find("virtual_clusters_per_cluster: 3 does not divide "
                       "clusters_per_node 4"),
            std::string::npos)
      << error;
}

TEST(MachineModel, OversubscribedLatencyIsTheSplitMachinesIntraNodeLatency) {
  std::string text =
      std::string(minimal) + "  oversubscribed_latency: 1.5e-3\n";
  llvm::Expected<MachineModel> m = parseMachineModel(text, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_DOUBLE_EQ(m->network.oversubscribedLatency, 1.5e-3);
  // Unsplit, the clusters' own latency holds.
  EXPECT_DOUBLE_EQ(m->network.intraNode.latency, 2e-6);
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  EXPECT_DOUBLE_EQ(split->network.intraNode.latency, 1.5e-3);
  EXPECT_DOUBLE_EQ(split->network.interNode.latency, 5e-6);
  // Printed and read back, split again: the same.
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*split), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_DOUBLE_EQ(back->network.oversubscribedLatency, 1.5e-3);
  EXPECT_DOUBLE_EQ(back->network.intraNode.latency, 1.5e-3);
  // A latency below the link's own does not lower it; a file without the
  // key prints none and splits with its own latency.
  llvm::Expected<MachineModel> low = parseMachineModel(
      std::string(minimal) + "  oversubscribed_latency: 1e-6\n", "m.yaml");
  ASSERT_TRUE(bool(low)) << llvm::toString(low.takeError());
  EXPECT_DOUBLE_EQ(oversubscribe(*low, 2)->network.intraNode.latency, 2e-6);
  llvm::Expected<MachineModel> plain = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(printMachineModel(*plain).find("oversubscribed_latency"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(oversubscribe(*plain, 2)->network.intraNode.latency, 2e-6);
  std::string error =
      parseError(std::string(minimal) + "  oversubscribed_latency: -1\n");
  EXPECT_NE(error.find("network.oversubscribed_latency: must be a finite "
                       "number of seconds, at least 0, got -1"),
            std::string::npos)
      << error;
}

TEST(MachineModel, DdrBandwidthAloneParsesPrintsSplitsAndIsBounded) {
  // `minimal` has 4 clusters a node at 51e9 B/s each when all stream.
  auto with = [](const char *value) {
    std::string text = minimal;
    size_t at = text.find("  peak_flops_f16");
    return text.insert(at,
                       std::string("  ddr_bandwidth_alone: ") + value + "\n");
  };
  llvm::Expected<MachineModel> m = parseMachineModel(with("90e9"), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_DOUBLE_EQ(m->cluster.ddrBandwidthAlone, 90e9);
  // Split in two, each virtual cluster gets half; printed and read back,
  // the same.
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  EXPECT_DOUBLE_EQ(split->cluster.ddrBandwidthAlone, 45e9);
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*split), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_DOUBLE_EQ(back->cluster.ddrBandwidthAlone, 45e9);
  // Not measured: not printed.
  llvm::Expected<MachineModel> plain = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(printMachineModel(*plain).find("ddr_bandwidth_alone"),
            std::string::npos);
  // Below the share with every cluster streaming, above the node's DDR, or
  // not a rate.
  for (const char *bad : {"50e9", "205e9"}) {
    std::string error = parseError(with(bad));
    EXPECT_NE(error.find("cluster.ddr_bandwidth_alone: must lie between "
                         "ddr_bandwidth (5.10e+10, the cluster's share with "
                         "every cluster of its node streaming) and the "
                         "node's 4 x 5.10e+10, got"),
              std::string::npos)
        << error;
  }
  std::string error = parseError(with("-1"));
  EXPECT_NE(error.find("cluster.ddr_bandwidth_alone: must be positive"),
            std::string::npos)
      << error;
}

TEST(MachineModel, OptimizerBandwidthsParsePrintSplitAndAreChecked) {
  auto with = [](const std::string &lines) {
    std::string text = minimal;
    size_t at = text.find("  peak_flops_f16");
    return text.insert(at, lines);
  };
  const std::string both = "  optimizer_bandwidth: 20e9\n"
                           "  optimizer_bandwidth_alone: 30e9\n"
                           "  optimizer_bandwidth_f16: 12e9\n"
                           "  optimizer_bandwidth_alone_f16: 14e9\n";
  llvm::Expected<MachineModel> m = parseMachineModel(with(both), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->cluster.optimizerBandwidths(false), std::make_pair(20e9, 30e9));
  EXPECT_EQ(m->cluster.optimizerBandwidths(true), std::make_pair(12e9, 14e9));
  // Split in two, each virtual cluster gets half; printed and read back,
  // the same.
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*split), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->cluster.optimizerBandwidths(false),
            std::make_pair(10e9, 15e9));
  EXPECT_EQ(back->cluster.optimizerBandwidths(true), std::make_pair(6e9, 7e9));
  // Without the 16-bit pair the fp32 one serves both; without either,
  // nothing is printed.
  llvm::Expected<MachineModel> f32 = parseMachineModel(
      with("  optimizer_bandwidth: 20e9\n  optimizer_bandwidth_alone: 30e9\n"),
      "m.yaml");
  ASSERT_TRUE(bool(f32)) << llvm::toString(f32.takeError());
  EXPECT_EQ(f32->cluster.optimizerBandwidths(true), std::make_pair(20e9, 30e9));
  llvm::Expected<MachineModel> plain = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(plain->cluster.optimizerBandwidths(false),
            std::make_pair(0.0, 0.0));
  EXPECT_EQ(printMachineModel(*plain).find("optimizer_bandwidth"),
            std::string::npos);
  // A pair given by halves, alone below together, a 16-bit pair alone, or
  // not a rate.
  struct Bad {
    std::string lines, message;
  } bads[] = {
      {"  optimizer_bandwidth: 20e9\n",
       "cluster.optimizer_bandwidth_alone: is missing: "
       "cluster.optimizer_bandwidth and cluster.optimizer_bandwidth_alone are "
       "given together or not at all"},
      {"  optimizer_bandwidth: 20e9\n  optimizer_bandwidth_alone: 10e9\n",
       "cluster.optimizer_bandwidth_alone: must be at least "
       "cluster.optimizer_bandwidth (2.00e+10, every cluster of the node "
       "updating), got 1.00e+10"},
      {"  optimizer_bandwidth_f16: 20e9\n"
       "  optimizer_bandwidth_alone_f16: 30e9\n",
       "cluster.optimizer_bandwidth_f16: needs optimizer_bandwidth and "
       "optimizer_bandwidth_alone"},
      {"  optimizer_bandwidth: -1\n  optimizer_bandwidth_alone: 30e9\n",
       "cluster.optimizer_bandwidth: must be positive"}};
  for (const Bad &bad : bads) {
    std::string error = parseError(with(bad.lines));
    EXPECT_NE(error.find(bad.message), std::string::npos) << error;
  }
}

TEST(MachineModel, ElementwiseBandwidthsParsePrintSplitAndAreChecked) {
  auto with = [](const std::string &lines) {
    std::string text = minimal;
    size_t at = text.find("  peak_flops_f16");
    return text.insert(at, lines);
  };
  llvm::Expected<MachineModel> m =
      parseMachineModel(with("  elementwise_bandwidth: 28e9\n"
                             "  elementwise_bandwidth_f16: 14e9\n"),
                        "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->cluster.elementwiseBandwidthFor(false), 28e9);
  EXPECT_EQ(m->cluster.elementwiseBandwidthFor(true), 14e9);
  // Split in two, each virtual cluster gets half; printed and read back,
  // the same.
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*split), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->cluster.elementwiseBandwidthFor(false), 14e9);
  EXPECT_EQ(back->cluster.elementwiseBandwidthFor(true), 7e9);
  // Without the 16-bit rate the fp32 one serves both; without either,
  // nothing is printed.
  llvm::Expected<MachineModel> f32 =
      parseMachineModel(with("  elementwise_bandwidth: 28e9\n"), "m.yaml");
  ASSERT_TRUE(bool(f32)) << llvm::toString(f32.takeError());
  EXPECT_EQ(f32->cluster.elementwiseBandwidthFor(true), 28e9);
  llvm::Expected<MachineModel> plain = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(plain->cluster.elementwiseBandwidthFor(false), 0.0);
  EXPECT_EQ(printMachineModel(*plain).find("elementwise_bandwidth"),
            std::string::npos);
  // A 16-bit rate alone, or not a rate.
  EXPECT_NE(parseError(with("  elementwise_bandwidth_f16: 14e9\n"))
                .find("cluster.elementwise_bandwidth_f16: needs "
                      "elementwise_bandwidth"),
            std::string::npos);
  EXPECT_NE(parseError(with("  elementwise_bandwidth: -1\n"))
                .find("cluster.elementwise_bandwidth: must be positive"),
            std::string::npos);
}

TEST(MachineModel, MeasuredGemmsParsePrintSplitAndAreChecked) {
  auto with = [](const std::string &entries) {
    std::string text = minimal;
    return text.insert(text.find("network:"), "  gemm_measured:\n" + entries);
  };
  const std::string two =
      "    f16:\n"
      "      - {form: NT, m: 256, n: 688, k: 256, seconds: 2.5e-4}\n"
      "      - form: TN\n        m: 688\n        n: 256\n        k: 256\n"
      "        seconds: 3.1e-4\n"
      "    f32:\n"
      "      - {form: NN, m: 256, n: 256, k: 688, seconds: 5e-4}\n";
  llvm::Expected<MachineModel> m = parseMachineModel(with(two), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  const MeasuredGemms &g = m->cluster.gemmMeasured;
  ASSERT_EQ(g.f16.size(), 2u);
  ASSERT_EQ(g.f32.size(), 1u);
  EXPECT_EQ(g.f16[1].form, GemmForm::TN);
  EXPECT_EQ(g.f16[1].m, 688);
  // Looked up by operand type, form and shape, nothing else.
  EXPECT_EQ(g.find(true, GemmForm::NT, 256, 688, 256), 2.5e-4);
  EXPECT_EQ(g.find(true, GemmForm::TN, 688, 256, 256), 3.1e-4);
  EXPECT_EQ(g.find(false, GemmForm::NN, 256, 256, 688), 5e-4);
  EXPECT_FALSE(g.find(false, GemmForm::NT, 256, 688, 256));
  EXPECT_FALSE(g.find(true, GemmForm::NN, 256, 688, 256));
  EXPECT_FALSE(g.find(true, GemmForm::NT, 688, 256, 256));
  // Split in two, a virtual cluster takes twice as long; printed and read
  // back, the same.
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  EXPECT_DOUBLE_EQ(
      *split->cluster.gemmMeasured.find(true, GemmForm::NT, 256, 688, 256),
      5e-4);
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*split), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  ASSERT_EQ(back->cluster.gemmMeasured.f16.size(), 2u);
  EXPECT_DOUBLE_EQ(
      *back->cluster.gemmMeasured.find(true, GemmForm::TN, 688, 256, 256),
      6.2e-4);
  EXPECT_DOUBLE_EQ(
      *back->cluster.gemmMeasured.find(false, GemmForm::NN, 256, 256, 688),
      1e-3);
  // None measured: not printed.
  llvm::Expected<MachineModel> plain = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(printMachineModel(*plain).find("gemm_measured"), std::string::npos);
  // Bad entries name the entry, the key and the limit.
  struct {
    std::string entries, message;
  } bad[] = {
      {"    f16:\n      - {form: XT, m: 1, n: 1, k: 1, seconds: 1}\n",
       "cluster.gemm_measured.f16[0].form: expected NT, NN or TN (how the "
       "GEMM reads its operands), got 'XT'"},
      {"    f16:\n      - {form: NT, m: 0, n: 1, k: 1, seconds: 1}\n",
       "cluster.gemm_measured.f16[0].m: must be in [1, 16777216], got 0"},
      {"    f32:\n      - {form: NT, m: 1, n: 1, k: 1, seconds: 0}\n",
       "cluster.gemm_measured.f32[0].seconds: must be a positive number of "
       "seconds, got 0"},
      {"    f32:\n      - {form: NT, m: 1, n: 1, k: 1, seconds: 1}\n"
       "      - {form: NT, m: 1, n: 1, k: 1, seconds: 2}\n",
       "cluster.gemm_measured.f32[1]: repeats NT 1 x 1 x 1 (entry 0)"},
      {"    f32:\n      - {form: NT, m: 1, n: 1, k: 1}\n",
       "missing required key 'seconds'"},
      {"    f32: {form: NT}\n",
       "cluster.gemm_measured.f32: expected a list of measured GEMM calls"},
      {"    bf16: []\n", "cluster.gemm_measured.bf16: unknown key (expected "
                         "one of: f32, f16)"}};
  for (const auto &b : bad) {
    std::string error = parseError(with(b.entries));
    EXPECT_NE(error.find(b.message), std::string::npos) << error;
  }
}

TEST(MachineModel, ProgressCoreShareParsesPrintsAndSplits) {
  llvm::Expected<MachineModel> m = parseMachineModel(
      std::string(minimal) + "  progress_core_share: 0.08\n", "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_DOUBLE_EQ(m->network.progressCoreShare, 0.08);
  // The split machine keeps it; printed and read back, the same.
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*split), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_DOUBLE_EQ(back->network.progressCoreShare, 0.08);
  // Not measured: not printed.
  llvm::Expected<MachineModel> plain = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(printMachineModel(*plain).find("progress_core_share"),
            std::string::npos);
  for (const char *bad : {"1.5", "-0.1"}) {
    std::string error = parseError(std::string(minimal) +
                                   "  progress_core_share: " + bad + "\n");
    EXPECT_NE(error.find("network.progress_core_share: must be a share of a "
                         "core from 0 to 1, got"),
              std::string::npos)
        << error;
  }
}

TEST(MachineModel, CoreCopyBandwidthParsesPrintsAndSplits) {
  llvm::Expected<MachineModel> m = parseMachineModel(
      std::string(minimal) + "  core_copy_bandwidth: 8.5e9\n", "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_DOUBLE_EQ(m->network.coreCopyBandwidth, 8.5e9);
  // A core's rate: the split machine keeps it; printed and read back, the
  // same.
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*split), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_DOUBLE_EQ(back->network.coreCopyBandwidth, 8.5e9);
  // Not measured (hardware moves the data): not printed.
  llvm::Expected<MachineModel> plain = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(printMachineModel(*plain).find("core_copy_bandwidth"),
            std::string::npos);
  for (const char *bad : {"-1", "-2e9"}) {
    std::string error = parseError(std::string(minimal) +
                                   "  core_copy_bandwidth: " + bad + "\n");
    EXPECT_NE(error.find("network.core_copy_bandwidth: must be a finite "
                         "number of bytes per second, at least 0, got"),
              std::string::npos)
        << error;
  }
}

TEST(MachineModel, PrintParsesBackToTheSameModel) {
  llvm::Expected<MachineModel> m = loadMachineModel(examples("mt3000.yaml"));
  ASSERT_TRUE(bool(m));
  std::string text = printMachineModel(*m);
  // Plain integers on their own lines, as the kernel build reads them.
  EXPECT_NE(text.find("\n  gsm_bytes: 6291456\n"), std::string::npos);
  EXPECT_NE(text.find("\n  am_bytes_per_core: 786432\n"), std::string::npos);
  EXPECT_NE(text.find("\n  cores: 24\n"), std::string::npos);
  llvm::Expected<MachineModel> back = parseMachineModel(text, "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->name, m->name);
  EXPECT_EQ(back->nodes, m->nodes);
  EXPECT_EQ(back->cluster.ddrBytes, m->cluster.ddrBytes);
  EXPECT_DOUBLE_EQ(back->cluster.ddrBandwidth, m->cluster.ddrBandwidth);
  EXPECT_DOUBLE_EQ(back->cluster.efficiency.attentionForward,
                   m->cluster.efficiency.attentionForward);
  EXPECT_EQ(back->cluster.fusedAttention, m->cluster.fusedAttention);
  EXPECT_DOUBLE_EQ(back->network.interNode.latency,
                   m->network.interNode.latency);
  EXPECT_EQ(back->network.collective, m->network.collective);
}

TEST(MachineModel, AcceptsJSON) {
  const char *json = R"({"nodes": 1, "clusters_per_node": 2,
    "cluster": {"cores": 1, "ddr_bytes": 8000000000, "gsm_bytes": 1048576,
                "am_bytes_per_core": 1048576, "ddr_bandwidth": 2e10,
                "peak_flops_f16": 4e11, "peak_flops_f32": 2e11},
    "network": {"intra_node": {"bandwidth": 1e10, "latency": 1e-6},
                "inter_node": {"bandwidth": 1e10, "latency": 1e-6},
                "collective": "ring"}})";
  llvm::Expected<MachineModel> m = parseMachineModel(json, "host.json");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->name, "host"); // from the file name
  EXPECT_EQ(m->network.collective, CollectiveAlgorithm::Ring);
}

TEST(MachineModel, UnknownKeyNamesFileLineAndKey) {
  std::string text = minimal;
  text.replace(text.find("gsm_bytes"), 9, "gsm_byte");
  std::string error = parseError(text);
  EXPECT_NE(error.find("m.yaml:7:"), std::string::npos) << error;
  EXPECT_NE(error.find("cluster.gsm_byte: unknown key"), std::string::npos)
      << error;
}

TEST(MachineModel, WrongTypeNamesTheKey) {
  std::string text = minimal;
  text.replace(text.find("51e9"), 4, "fast");
  std::string error = parseError(text);
  EXPECT_NE(error.find("cluster.ddr_bandwidth: expected a number, got 'fast'"),
            std::string::npos)
      << error;

  text = minimal;
  text.replace(text.find("cores: 24"), 9, "cores: 2.5");
  error = parseError(text);
  EXPECT_NE(error.find("cluster.cores: expected an integer"), std::string::npos)
      << error;

  text = minimal;
  text.replace(text.find("cluster:\n"), 9, "cluster: 3\n  x:\n");
  EXPECT_FALSE(parseError(text).empty());
}

TEST(MachineModel, MissingKeysAndBadValues) {
  std::string text = minimal;
  text.erase(text.find("  peak_flops_f32: 5.8e12\n"), 25);
  EXPECT_NE(parseError(text).find("missing required key 'peak_flops_f32'"),
            std::string::npos);

  text = minimal;
  text.replace(text.find("nodes: 2"), 8, "nodes: -2");
  EXPECT_NE(parseError(text).find("nodes: must be positive"),
            std::string::npos);

  text = std::string(minimal) + "  collective: butterfly\n";
  EXPECT_NE(parseError(text).find("network.collective: expected one of"),
            std::string::npos);

  text = minimal;
  text.replace(text.find("  ddr_bandwidth"), 0, "  efficiency: {gemm: 1.5}\n");
  EXPECT_NE(parseError(text).find("cluster.efficiency.gemm"),
            std::string::npos);

  text = std::string(minimal) + "nodes: 3\n";
  EXPECT_NE(parseError(text).find("duplicate key"), std::string::npos);
}

// The missing top-level sections are reported at the document's mapping
// while the document is still alive (fuzz/corpus/machine-file/
// missing-network-use-after-free.yaml: the message used to read a freed node).
TEST(MachineModel, MissingSectionNamesTheDocument) {
  std::string text = minimal;
  text.erase(text.find("network:"));
  EXPECT_NE(parseError(text).find("m.yaml:1:1: missing required key 'network'"),
            std::string::npos)
      << parseError(text);
  text = minimal;
  text.erase(text.find("cluster:"),
             text.find("network:") - text.find("cluster:"));
  EXPECT_NE(parseError(text).find("m.yaml:1:1: missing required key 'cluster'"),
            std::string::npos)
      << parseError(text);
}

// Names that are not plain YAML scalars are printed quoted and escaped
// (fuzz/corpus/machine-file/control-bytes-in-name.yaml: a name with control
// bytes used to be printed raw, which does not parse).
TEST(MachineModel, PrintQuotesNamesThatNeedIt) {
  for (llvm::StringRef name :
       {llvm::StringRef("mt3000-x2"), llvm::StringRef("a: b # c"),
        llvm::StringRef("\x05\0x", 3), llvm::StringRef("q\"b\\s\nl\tt"),
        llvm::StringRef("-dash"), llvm::StringRef("caf\xc3\xa9 \x7f")}) {
    llvm::Expected<MachineModel> machine = parseMachineModel(minimal, "m.yaml");
    ASSERT_TRUE(bool(machine)) << llvm::toString(machine.takeError());
    machine->name = name.str();
    std::string printed = printMachineModel(*machine);
    llvm::Expected<MachineModel> again = parseMachineModel(printed, "p.yaml");
    ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError()) << printed;
    EXPECT_EQ(again->name, name.str()) << printed;
  }
  llvm::Expected<MachineModel> plain = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_NE(printMachineModel(*plain).find("name: tiny\n"), std::string::npos);
}

TEST(MachineModel, MalformedYAMLAndMissingFile) {
  std::string error = parseError("cluster: {cores: [1, 2\n");
  EXPECT_NE(error.find("m.yaml:"), std::string::npos) << error;
  EXPECT_FALSE(parseError("").empty());
  EXPECT_FALSE(parseError("- 1\n- 2\n").empty());

  llvm::Expected<MachineModel> m = loadMachineModel("/nonexistent/x.yaml");
  ASSERT_FALSE(bool(m));
  std::string message = llvm::toString(m.takeError());
  EXPECT_NE(message.find("/nonexistent/x.yaml: cannot read"),
            std::string::npos);
}

TEST(MachineModel, OffloadTier) {
  // Absent: no tier.
  llvm::Expected<MachineModel> none = parseMachineModel(minimal, "m.yaml");
  ASSERT_TRUE(bool(none)) << llvm::toString(none.takeError());
  EXPECT_FALSE(none->offload.present());
  EXPECT_EQ(none->offloadBytesPerCluster(), 0);

  std::string text = std::string(minimal) + R"(offload:
  kind: storage
  bytes_per_node: 1e12
  bandwidth: 2e9
  latency: 1e-4
  chunk_bytes: 64e6
)";
  llvm::Expected<MachineModel> m = parseMachineModel(text, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->offload.kind, OffloadTierKind::Storage);
  EXPECT_EQ(m->offload.bytesPerNode, 1000000000000);
  EXPECT_DOUBLE_EQ(m->offload.bandwidth, 2e9);
  EXPECT_DOUBLE_EQ(m->offload.latency, 1e-4);
  EXPECT_EQ(m->offload.chunkBytes, 64000000);
  EXPECT_TRUE(m->offload.present());
  // Shared equally by the node's 4 clusters.
  EXPECT_EQ(m->offloadBytesPerCluster(), 250000000000);

  // Printed and parsed back.
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*m), "back.yaml");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->offload.kind, OffloadTierKind::Storage);
  EXPECT_EQ(back->offload.bytesPerNode, m->offload.bytesPerNode);
  EXPECT_DOUBLE_EQ(back->offload.bandwidth, m->offload.bandwidth);
  EXPECT_DOUBLE_EQ(back->offload.latency, m->offload.latency);
  EXPECT_EQ(back->offload.chunkBytes, m->offload.chunkBytes);

  // Errors name the key.
  EXPECT_NE(parseError(std::string(minimal) +
                       "offload: {kind: tape, bytes_per_node: 1, "
                       "bandwidth: 1}\n")
                .find("offload.kind: expected host or storage, got 'tape'"),
            std::string::npos);
  EXPECT_NE(
      parseError(std::string(minimal) + "offload: {kind: host, bandwidth: 1}\n")
          .find("missing required key 'bytes_per_node'"),
      std::string::npos);
  EXPECT_NE(parseError(std::string(minimal) +
                       "offload: {kind: host, bytes_per_node: 1e9, "
                       "bandwidth: 0}\n")
                .find("offload.bandwidth: must be positive"),
            std::string::npos);
  EXPECT_NE(parseError(std::string(minimal) +
                       "offload: {kind: host, bytes_per_node: -1, "
                       "bandwidth: 1e9}\n")
                .find("offload.bytes_per_node: must not be negative"),
            std::string::npos);
  // bytes_per_node 0: a tier without capacity is no tier.
  llvm::Expected<MachineModel> zero = parseMachineModel(
      std::string(minimal) +
          "offload: {kind: host, bytes_per_node: 0, bandwidth: 1e9}\n",
      "m.yaml");
  ASSERT_TRUE(bool(zero)) << llvm::toString(zero.takeError());
  EXPECT_FALSE(zero->offload.present());
}

/// A storage tier's host cache: both keys, storage only, printed back.
TEST(MachineModel, OffloadHostCache) {
  std::string text = std::string(minimal) + R"(offload:
  kind: storage
  bytes_per_node: 1e12
  bandwidth: 2e9
  host_cache_bytes_per_node: 64e9
  host_cache_bandwidth: 8e9
)";
  llvm::Expected<MachineModel> m = parseMachineModel(text, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_TRUE(m->offload.hasHostCache());
  // Shared by the node's 4 clusters.
  EXPECT_EQ(m->offloadHostCacheBytesPerCluster(), 16000000000);
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*m), "back.yaml");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->offload.hostCacheBytesPerNode, 64000000000);
  EXPECT_DOUBLE_EQ(back->offload.hostCacheBandwidth, 8e9);

  EXPECT_NE(parseError(std::string(minimal) +
                       "offload: {kind: storage, bytes_per_node: 1e12, "
                       "bandwidth: 2e9, host_cache_bytes_per_node: 64e9}\n")
                .find("offload.host_cache_bandwidth: a host cache needs both "
                      "host_cache_bytes_per_node (64000000000) and "
                      "host_cache_bandwidth (0 bytes/s) positive"),
            std::string::npos);
  EXPECT_NE(parseError(std::string(minimal) +
                       "offload: {kind: host, bytes_per_node: 1e12, "
                       "bandwidth: 2e9, host_cache_bytes_per_node: 64e9, "
                       "host_cache_bandwidth: 8e9}\n")
                .find("offload.host_cache_bytes_per_node: caches a storage "
                      "tier"),
            std::string::npos);
  EXPECT_NE(parseError(std::string(minimal) +
                       "offload: {kind: storage, bytes_per_node: 1e12, "
                       "bandwidth: 2e9, host_cache_bytes_per_node: -1, "
                       "host_cache_bandwidth: 8e9}\n")
                .find("offload.host_cache_bytes_per_node: must not be "
                      "negative"),
            std::string::npos);
}

TEST(MachineModel, ShippedMachinesHaveAnOffloadTier) {
  llvm::Expected<MachineModel> mt = loadMachineModel(examples("mt3000.yaml"));
  ASSERT_TRUE(bool(mt)) << llvm::toString(mt.takeError());
  EXPECT_EQ(mt->offload.kind, OffloadTierKind::Host);
  EXPECT_EQ(mt->offloadBytesPerCluster(), 16000000000);
  EXPECT_DOUBLE_EQ(mt->offload.bandwidth, 8e9);
  llvm::Expected<MachineModel> host = loadMachineModel(examples("host.yaml"));
  ASSERT_TRUE(bool(host)) << llvm::toString(host.takeError());
  EXPECT_EQ(host->offload.kind, OffloadTierKind::Host);
  EXPECT_TRUE(host->offload.present());
  EXPECT_EQ(parseOffloadTierKind("storage"), OffloadTierKind::Storage);
  EXPECT_EQ(parseOffloadTierKind("nvme"), std::nullopt);
}

TEST(MachineModel, InterNodeStreamsShareInjection) {
  llvm::Expected<MachineModel> m = parseMachineModel(
      std::string(minimal) + "  node_injection_bandwidth: 20e9\n", "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_DOUBLE_EQ(m->interNodeStreamBandwidth(1), 12.5e9);
  EXPECT_DOUBLE_EQ(m->interNodeStreamBandwidth(4), 5e9);
  EXPECT_EQ(parseCollectiveAlgorithm("tree"), CollectiveAlgorithm::Tree);
  EXPECT_EQ(stringifyCollectiveAlgorithm(CollectiveAlgorithm::Ring), "ring");
}

} // namespace
