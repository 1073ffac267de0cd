//===- ClusterClassesTest.cpp - Heterogeneous machine files ---------------===//
//
// `classes:` (ClusterClass): parsing and resolving each class's cluster,
// classOfCluster and classMachine, printing and reading back, the split into
// virtual clusters, the shipped examples, and bad input (each error names the
// key and the limit).
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/MachineModel.h"

#include "gtest/gtest.h"

using namespace ratrain;

namespace {

std::string examples(const char *file) {
  return std::string(RATRAIN_EXAMPLES_DIR) + "/machines/" + file;
}

/// 2 nodes of 4 clusters; `classes` is appended.
std::string machine(llvm::StringRef classes) {
  return R"(name: mixed
nodes: 2
clusters_per_node: 4
cluster:
  cores: 24
  ddr_bytes: 20e9
  gsm_bytes: 6291456
  am_bytes_per_core: 786432
  ddr_bandwidth: 51e9
  dma_bandwidth: 40e9
  peak_flops_f16: 11.6e12
  peak_flops_f32: 5.8e12
network:
  intra_node: {bandwidth: 50e9, latency: 2e-6}
  inter_node: {bandwidth: 12.5e9, latency: 5e-6}
  node_injection_bandwidth: 25e9
)" + classes.str();
}

/// Classes of 3 (as the cluster) and 5 clusters (half the compute, 10 GB
/// DDR, 2x DDR bandwidth, 0.8x the links).
const char *twoClasses = R"(classes:
  - name: fast
    count: 3
  - name: slow.v1
    count: 5
    compute_scale: 0.5
    ddr_bytes: 10e9
    ddr_bandwidth_scale: 2
    link_scale: 0.8
)";

std::string parseError(const std::string &text) {
  llvm::Expected<MachineModel> m = parseMachineModel(text, "m.yaml");
  if (m) {
    ADD_FAILURE() << "parse unexpectedly succeeded:\n" << text;
    return "";
  }
  return llvm::toString(m.takeError());
}

TEST(ClusterClasses, AClassRunsMeasuredGemmsAtItsComputeScale) {
  std::string text = machine(twoClasses);
  const std::string peak = "  peak_flops_f32: 5.8e12\n";
  text.insert(text.find(peak) + peak.size(),
              "  gemm_measured:\n    f16:\n      - {form: NT, m: 256, n: "
              "688, k: 256, seconds: 2.5e-4}\n");
  llvm::Expected<MachineModel> m = parseMachineModel(text, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  // compute_scale 1 and 0.5: the same time and twice as long.
  EXPECT_DOUBLE_EQ(*m->classes[0].cluster.gemmMeasured.find(true, GemmForm::NT,
                                                            256, 688, 256),
                   2.5e-4);
  EXPECT_DOUBLE_EQ(*m->classes[1].cluster.gemmMeasured.find(true, GemmForm::NT,
                                                            256, 688, 256),
                   5e-4);
}

TEST(ClusterClasses, ParsesAndResolvesTheClusters) {
  llvm::Expected<MachineModel> m =
      parseMachineModel(machine(twoClasses), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  ASSERT_EQ(m->classes.size(), 2u);
  EXPECT_TRUE(m->heterogeneous());
  const ClusterClass &fast = m->classes[0], &slow = m->classes[1];
  EXPECT_EQ(fast.name, "fast");
  EXPECT_EQ(fast.count, 3);
  // Defaults: the machine's cluster as it is.
  EXPECT_DOUBLE_EQ(fast.computeScale, 1);
  EXPECT_DOUBLE_EQ(fast.ddrBandwidthScale, 1);
  EXPECT_DOUBLE_EQ(fast.linkScale, 1);
  EXPECT_EQ(fast.cluster.ddrBytes, 20000000000);
  EXPECT_DOUBLE_EQ(fast.cluster.peakFlopsF16, 11.6e12);
  EXPECT_DOUBLE_EQ(fast.cluster.dmaBandwidth, 40e9);
  // Overrides and scales.
  EXPECT_EQ(slow.name, "slow.v1");
  EXPECT_EQ(slow.count, 5);
  EXPECT_DOUBLE_EQ(slow.computeScale, 0.5);
  EXPECT_DOUBLE_EQ(slow.linkScale, 0.8);
  EXPECT_EQ(slow.cluster.ddrBytes, 10000000000);
  EXPECT_DOUBLE_EQ(slow.cluster.peakFlopsF16, 5.8e12);
  EXPECT_DOUBLE_EQ(slow.cluster.peakFlopsF32, 2.9e12);
  EXPECT_DOUBLE_EQ(slow.cluster.ddrBandwidth, 102e9);
  EXPECT_DOUBLE_EQ(slow.cluster.dmaBandwidth, 80e9);
  // The rest is the machine's cluster.
  EXPECT_EQ(slow.cluster.cores, 24);
  EXPECT_EQ(slow.cluster.gsmBytes, 6291456);
  EXPECT_DOUBLE_EQ(slow.cluster.efficiency.gemm, m->cluster.efficiency.gemm);
  // The machine's own cluster is untouched.
  EXPECT_DOUBLE_EQ(m->cluster.peakFlopsF16, 11.6e12);
  EXPECT_EQ(m->cluster.ddrBytes, 20000000000);
}

TEST(ClusterClasses, ClassesMayComeBeforeTheCluster) {
  // `classes:` resolves against `cluster:` wherever it stands in the file.
  std::string text = machine("");
  text.insert(text.find("cluster:"), twoClasses);
  llvm::Expected<MachineModel> m = parseMachineModel(text, "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_DOUBLE_EQ(m->classes[1].cluster.peakFlopsF16, 5.8e12);
  EXPECT_DOUBLE_EQ(m->classes[1].cluster.dmaBandwidth, 80e9);
}

TEST(ClusterClasses, ClassOfCluster) {
  llvm::Expected<MachineModel> m =
      parseMachineModel(machine(twoClasses), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  // File order, consecutive clusters: 0-2 fast, 3-7 slow.
  for (int64_t c = 0; c < 8; ++c)
    EXPECT_EQ(m->classOfCluster(c), c < 3 ? 0 : 1) << c;
  llvm::Expected<MachineModel> plain = parseMachineModel(machine(""), "m.yaml");
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  EXPECT_FALSE(plain->heterogeneous());
  EXPECT_TRUE(plain->classes.empty());
  EXPECT_EQ(plain->classOfCluster(0), 0);
  EXPECT_EQ(plain->classOfCluster(7), 0);
}

TEST(ClusterClasses, OneClassOfAllClustersIsHomogeneous) {
  llvm::Expected<MachineModel> m = parseMachineModel(
      machine("classes: [{name: all, count: 8, compute_scale: 2}]\n"),
      "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  // Priced as its class (compute x 2), not as `cluster:`.
  EXPECT_TRUE(m->heterogeneous());
  EXPECT_EQ(m->classOfCluster(7), 0);
  EXPECT_DOUBLE_EQ(m->classMachine(0).cluster.peakFlopsF16, 23.2e12);
}

TEST(ClusterClasses, ClassMachineScalesTheLinks) {
  llvm::Expected<MachineModel> m =
      parseMachineModel(machine(twoClasses), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  MachineModel slow = m->classMachine(1);
  EXPECT_EQ(slow.name, "mixed/slow.v1");
  EXPECT_TRUE(slow.classes.empty());
  EXPECT_FALSE(slow.heterogeneous());
  EXPECT_EQ(slow.totalClusters(), 8);
  EXPECT_EQ(slow.cluster.ddrBytes, 10000000000);
  EXPECT_DOUBLE_EQ(slow.cluster.peakFlopsF16, 5.8e12);
  EXPECT_DOUBLE_EQ(slow.network.intraNode.bandwidth, 40e9);
  EXPECT_DOUBLE_EQ(slow.network.interNode.bandwidth, 10e9);
  EXPECT_DOUBLE_EQ(slow.network.nodeInjectionBandwidth, 20e9);
  // Latencies are not scaled.
  EXPECT_DOUBLE_EQ(slow.network.intraNode.latency, 2e-6);
  EXPECT_DOUBLE_EQ(slow.network.interNode.latency, 5e-6);
  llvm::Error valid = slow.validate();
  EXPECT_FALSE(bool(valid)) << llvm::toString(std::move(valid));

  MachineModel fast = m->classMachine(0);
  EXPECT_EQ(fast.name, "mixed/fast");
  EXPECT_DOUBLE_EQ(fast.cluster.peakFlopsF16, 11.6e12);
  EXPECT_DOUBLE_EQ(fast.network.interNode.bandwidth, 12.5e9);

  // Without classes: the machine itself.
  llvm::Expected<MachineModel> plain = parseMachineModel(machine(""), "m.yaml");
  ASSERT_TRUE(bool(plain)) << llvm::toString(plain.takeError());
  MachineModel same = plain->classMachine(0);
  EXPECT_EQ(same.name, "mixed");
  EXPECT_DOUBLE_EQ(same.network.interNode.bandwidth, 12.5e9);
}

TEST(ClusterClasses, ClassMachineScalesExplicitLevels) {
  llvm::Expected<MachineModel> m =
      loadMachineModel(examples("mt3000-mixed.yaml"));
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  m->classes[1].linkScale = 0.5;
  MachineModel half = m->classMachine(1);
  ASSERT_EQ(half.network.levels.size(), 2u);
  EXPECT_DOUBLE_EQ(half.network.levels[0].link.bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(half.network.levels[0].injectionBandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(half.network.levels[1].link.bandwidth, 6.25e9);
  // The two-level view follows.
  EXPECT_DOUBLE_EQ(half.network.intraNode.bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(half.network.interNode.bandwidth, 6.25e9);
  EXPECT_DOUBLE_EQ(half.network.nodeInjectionBandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(half.networkLevels()[1].link.bandwidth, 6.25e9);
}

TEST(ClusterClasses, PrintParsesBack) {
  llvm::Expected<MachineModel> m =
      parseMachineModel(machine(twoClasses), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  std::string text = printMachineModel(*m);
  // Scales as written; the DDR only where the class changes it.
  EXPECT_NE(text.find("classes:\n  - name: fast\n    count: 3\n"
                      "    compute_scale: 1.000000e+00\n  - name: slow.v1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    ddr_bytes: 10000000000\n"), std::string::npos)
      << text;
  llvm::Expected<MachineModel> back = parseMachineModel(text, "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError()) << text;
  ASSERT_EQ(back->classes.size(), m->classes.size());
  for (size_t i = 0; i < m->classes.size(); ++i) {
    const ClusterClass &a = m->classes[i], &b = back->classes[i];
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.count, a.count);
    EXPECT_DOUBLE_EQ(b.computeScale, a.computeScale);
    EXPECT_DOUBLE_EQ(b.ddrBandwidthScale, a.ddrBandwidthScale);
    EXPECT_DOUBLE_EQ(b.linkScale, a.linkScale);
    EXPECT_EQ(b.cluster.ddrBytes, a.cluster.ddrBytes);
    EXPECT_DOUBLE_EQ(b.cluster.peakFlopsF16, a.cluster.peakFlopsF16);
    EXPECT_DOUBLE_EQ(b.cluster.peakFlopsF32, a.cluster.peakFlopsF32);
    EXPECT_DOUBLE_EQ(b.cluster.ddrBandwidth, a.cluster.ddrBandwidth);
    EXPECT_DOUBLE_EQ(b.cluster.dmaBandwidth, a.cluster.dmaBandwidth);
  }
  // Printed again: the same text.
  EXPECT_EQ(printMachineModel(*back), text);
  // A machine without classes prints none.
  llvm::Expected<MachineModel> plain = parseMachineModel(machine(""), "m.yaml");
  ASSERT_TRUE(bool(plain));
  EXPECT_EQ(printMachineModel(*plain).find("classes"), std::string::npos);
}

TEST(ClusterClasses, OversubscribeSplitsEachClass) {
  llvm::Expected<MachineModel> m =
      parseMachineModel(machine(twoClasses), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  EXPECT_EQ(split->totalClusters(), 16);
  ASSERT_EQ(split->classes.size(), 2u);
  EXPECT_EQ(split->classes[0].count, 6);
  EXPECT_EQ(split->classes[1].count, 10);
  // The class's clusters are split as the machine's cluster is.
  const ClusterSpec &slow = split->classes[1].cluster;
  EXPECT_EQ(slow.cores, 12);
  EXPECT_EQ(slow.ddrBytes, 5000000000);
  EXPECT_EQ(slow.gsmBytes, 3145728);
  EXPECT_DOUBLE_EQ(slow.peakFlopsF16, 2.9e12);
  EXPECT_DOUBLE_EQ(slow.ddrBandwidth, 51e9);
  EXPECT_DOUBLE_EQ(slow.dmaBandwidth, 40e9);
  EXPECT_EQ(slow.dmaChannels, 1);
  const ClusterSpec &fast = split->classes[0].cluster;
  EXPECT_EQ(fast.ddrBytes, split->cluster.ddrBytes);
  EXPECT_DOUBLE_EQ(fast.peakFlopsF16, split->cluster.peakFlopsF16);
  EXPECT_DOUBLE_EQ(fast.peakFlopsF16, 5.8e12);
  // The scales stay as written; the classes keep their virtual clusters
  // together (cluster 5 of the split is virtual cluster 1 of cluster 2).
  EXPECT_DOUBLE_EQ(split->classes[1].computeScale, 0.5);
  EXPECT_EQ(split->classOfCluster(5), 0);
  EXPECT_EQ(split->classOfCluster(6), 1);
  // Printed and read back, and split once more.
  llvm::Expected<MachineModel> back =
      parseMachineModel(printMachineModel(*split), "printed");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->classes[1].count, 10);
  EXPECT_EQ(back->classes[1].cluster.ddrBytes, 5000000000);
  EXPECT_DOUBLE_EQ(back->classes[1].cluster.peakFlopsF16, 2.9e12);
  llvm::Expected<MachineModel> again = oversubscribe(*back, 2);
  ASSERT_TRUE(bool(again)) << llvm::toString(again.takeError());
  EXPECT_EQ(again->classes[1].count, 20);
  EXPECT_EQ(again->classes[1].cluster.ddrBytes, 2500000000);
}

TEST(ClusterClasses, ShippedExamples) {
  llvm::Expected<MachineModel> host =
      loadMachineModel(examples("host-mixed.yaml"));
  ASSERT_TRUE(bool(host)) << llvm::toString(host.takeError());
  llvm::Expected<MachineModel> plainHost =
      loadMachineModel(examples("host.yaml"));
  ASSERT_TRUE(bool(plainHost)) << llvm::toString(plainHost.takeError());
  ASSERT_EQ(host->classes.size(), 2u);
  EXPECT_EQ(host->classes[0].name, "fast");
  EXPECT_EQ(host->classes[1].name, "slow");
  EXPECT_EQ(host->classOfCluster(0), 0);
  EXPECT_EQ(host->classOfCluster(1), 1);
  EXPECT_DOUBLE_EQ(host->classes[0].cluster.peakFlopsF32,
                   plainHost->cluster.peakFlopsF32);
  EXPECT_DOUBLE_EQ(host->classes[1].cluster.peakFlopsF32,
                   plainHost->cluster.peakFlopsF32 / 2);
  EXPECT_EQ(host->classes[1].cluster.ddrBytes, plainHost->cluster.ddrBytes);

  llvm::Expected<MachineModel> mt =
      loadMachineModel(examples("mt3000-mixed.yaml"));
  ASSERT_TRUE(bool(mt)) << llvm::toString(mt.takeError());
  ASSERT_EQ(mt->classes.size(), 2u);
  EXPECT_EQ(mt->classes[0].name, "full");
  EXPECT_EQ(mt->classes[1].name, "half");
  EXPECT_EQ(mt->classes[0].count, mt->classes[1].count);
  EXPECT_EQ(mt->classOfCluster(mt->totalClusters() / 2 - 1), 0);
  EXPECT_EQ(mt->classOfCluster(mt->totalClusters() / 2), 1);
  EXPECT_DOUBLE_EQ(mt->classes[1].cluster.peakFlopsF16, 5.8e12);
}

TEST(ClusterClasses, BadClassesNameTheKeyAndTheLimit) {
  struct Case {
    const char *classes;
    const char *expected;
  } cases[] = {
      {"classes: [{count: 8}]\n",
       "m.yaml:17:12: classes[0]: missing required key 'name'"},
      {"classes: [{name: a}]\n", "classes[0]: missing required key 'count'"},
      {"classes: [{name: a, count: 4}, {name: a, count: 4}]\n",
       "m.yaml: machine 'mixed': classes[1].name: 'a' names class 0 already"},
      {"classes: [{name: '', count: 8}]\n", "classes[0].name: must not be "
                                            "empty"},
      {"classes: [{name: 'a b', count: 8}]\n",
       "classes[0].name: 'a b' is not a name of letters, digits, '_', '.' "
       "and '-'"},
      {"classes: [{name: a, count: 4}, {name: b, count: 3}]\n",
       "classes: the counts sum to 7 clusters, not the machine's 8 (nodes x "
       "clusters_per_node = 2 x 4)"},
      {"classes: [{name: a, count: 4}, {name: b, count: 5}]\n",
       "classes: the counts sum to 9 clusters, not the machine's 8"},
      {"classes: [{name: a, count: 0}, {name: b, count: 8}]\n",
       "classes[0].count: must be positive, got 0"},
      {"classes: [{name: a, count: 9223372036854775807}, {name: b, count: "
       "9223372036854775807}]\n",
       "classes: the counts sum to more than 16777216 clusters"},
      {"classes: [{name: a, count: 8, compute_scale: 0}]\n",
       "m.yaml: machine 'mixed': classes[0].compute_scale: is a factor in "
       "(0, 1000], got 0"},
      {"classes: [{name: a, count: 8, compute_scale: -0.5}]\n",
       "classes[0].compute_scale: is a factor in (0, 1000], got -0.5"},
      {"classes: [{name: a, count: 8, ddr_bandwidth_scale: 0}]\n",
       "classes[0].ddr_bandwidth_scale: is a factor in (0, 1000], got 0"},
      {"classes: [{name: a, count: 8, link_scale: 1001}]\n",
       "classes[0].link_scale: is a factor in (0, 1000], got 1001"},
      {"classes: [{name: a, count: 8, ddr_bytes: 0}]\n",
       "classes[0].ddr_bytes: must be positive, got 0"},
      {"classes: [{name: a, count: 8, ddr_byte: 1e9}]\n",
       "m.yaml:17:31: classes[0].ddr_byte: unknown key (expected one of: "
       "name, count, compute_scale, ddr_bytes, ddr_bandwidth_scale, "
       "link_scale)"},
      {"classes: [{name: a, count: 8, count: 8}]\n",
       "classes[0].count: duplicate key"},
      {"classes: [{name: a, count: 8, compute_scale: fast}]\n",
       "classes[0].compute_scale: expected a number, got 'fast'"},
      {"classes: [{name: a, count: 2.5}]\n",
       "classes[0].count: expected an integer, got '2.5'"},
      {"classes: []\n", "classes: expected at least one class"},
      {"classes: {name: a, count: 8}\n",
       "classes: expected a list of classes of clusters"},
      {"classes:\n  - {name: a, count: 1}\n  - {name: b, count: 1}\n"
       "  - {name: c, count: 1}\n  - {name: d, count: 1}\n"
       "  - {name: e, count: 1}\n  - {name: f, count: 1}\n"
       "  - {name: g, count: 1}\n  - {name: h, count: 1}\n"
       "  - {name: i, count: 0}\n",
       "classes: 9 classes exceed the limit of 8"},
  };
  for (const Case &c : cases) {
    std::string error = parseError(machine(c.classes));
    EXPECT_NE(error.find(c.expected), std::string::npos)
        << c.classes << "\n  -> " << error;
  }
  // Counts must keep a physical cluster's virtual clusters in one class.
  std::string text = machine("classes: [{name: a, count: 3}, {name: b, "
                             "count: 5}]\n");
  text.insert(0, "virtual_clusters_per_cluster: 2\n");
  std::string error = parseError(text);
  EXPECT_NE(error.find("classes[0].count: 3 is not a multiple of "
                       "virtual_clusters_per_cluster 2"),
            std::string::npos)
      << error;
  // A split that leaves a class without DDR fails like the machine's.
  llvm::Expected<MachineModel> m = parseMachineModel(
      machine("classes: [{name: a, count: 4}, {name: b, count: 4, "
              "ddr_bytes: 1}]\n"),
      "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_FALSE(bool(split));
  error = llvm::toString(split.takeError());
  EXPECT_NE(error.find("split into 2 virtual clusters per cluster: machine "
                       "'mixed-x2': classes[1].ddr_bytes: must be positive, "
                       "got 0"),
            std::string::npos)
      << error;
}

#if GTEST_HAS_DEATH_TEST && !defined(NDEBUG)
TEST(ClusterClassesDeathTest, ClusterIndexOutOfRange) {
  llvm::Expected<MachineModel> m =
      parseMachineModel(machine(twoClasses), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_DEATH(m->classOfCluster(8), "out of range");
  EXPECT_DEATH(m->classOfCluster(-1), "out of range");
  EXPECT_DEATH(m->classMachine(2), "out of range");
}
#endif

} // namespace
