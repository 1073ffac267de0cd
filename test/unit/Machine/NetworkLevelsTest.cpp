//===- NetworkLevelsTest.cpp - Machine files with network levels ----------===//
//
// `network: levels: [...]`: parsing, the two-level view the planner reads,
// printing and reading back, virtual clusters, and bad input (each error
// names the key and the limit).
//
//===----------------------------------------------------------------------===//

#include "ratrain/Machine/MachineModel.h"

#include "gtest/gtest.h"

using namespace ratrain;

namespace {

std::string examples(const char *file) {
  return std::string(RATRAIN_EXAMPLES_DIR) + "/machines/" + file;
}

const char *cluster = R"(cluster:
  cores: 24
  ddr_bytes: 20e9
  gsm_bytes: 6291456
  am_bytes_per_core: 786432
  ddr_bandwidth: 51e9
  peak_flops_f16: 11.6e12
  peak_flops_f32: 5.8e12
)";

/// 2 nodes of 2 chips of 4 clusters.
std::string threeLevels(llvm::StringRef head = "nodes: 2\n",
                        llvm::StringRef levels = "") {
  std::string text = "name: three\n" + head.str() + cluster + "network:\n";
  if (!levels.empty())
    return text + levels.str();
  return text + R"(  levels:
    - {name: chip, size: 4, bandwidth: 50e9, latency: 1e-6}
    - {name: node, size: 2, bandwidth: 20e9, latency: 2e-6, injection_bandwidth: 30e9}
    - {name: system, bandwidth: 10e9, latency: 5e-6}
)";
}

std::string parseError(const std::string &text) {
  llvm::Expected<MachineModel> machine = parseMachineModel(text, "m.yaml");
  if (machine) {
    ADD_FAILURE() << "parse unexpectedly succeeded:\n" << text;
    return "";
  }
  return llvm::toString(machine.takeError());
}

TEST(NetworkLevels, ParsesLevelsAndTheTwoLevelView) {
  llvm::Expected<MachineModel> m = parseMachineModel(threeLevels(), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  // clusters_per_node defaults to the groups of the level below the
  // outermost: 4 x 2.
  EXPECT_EQ(m->clustersPerNode, 8);
  EXPECT_EQ(m->totalClusters(), 16);
  std::vector<NetworkLevel> levels = m->networkLevels();
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].name, "chip");
  EXPECT_EQ(levels[0].size, 4);
  EXPECT_EQ(levels[2].size, 0);
  EXPECT_DOUBLE_EQ(levels[1].injectionBandwidth, 30e9);
  EXPECT_EQ(m->nodeLevels(), 2u);
  EXPECT_EQ(m->clustersPerGroup(0), 4);
  EXPECT_EQ(m->clustersPerGroup(1), 8);
  EXPECT_EQ(m->clustersPerGroup(2), 16);
  // The planner's view: the slowest link inside a node, the link between
  // nodes, the node's injection.
  EXPECT_DOUBLE_EQ(m->network.intraNode.bandwidth, 20e9);
  EXPECT_DOUBLE_EQ(m->network.interNode.bandwidth, 10e9);
  EXPECT_DOUBLE_EQ(m->network.interNode.latency, 5e-6);
  EXPECT_DOUBLE_EQ(m->network.nodeInjectionBandwidth, 30e9);
}

TEST(NetworkLevels, NodeAtAnInnerLevel) {
  // A node is one chip: the node level joins chips over the "inter-node"
  // link of the planner's view.
  llvm::Expected<MachineModel> m = parseMachineModel(
      threeLevels("nodes: 4\nclusters_per_node: 4\n"), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->nodeLevels(), 1u);
  EXPECT_DOUBLE_EQ(m->network.intraNode.bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(m->network.interNode.bandwidth, 20e9);
  EXPECT_DOUBLE_EQ(m->network.nodeInjectionBandwidth, 0);
}

TEST(NetworkLevels, ShorthandIsTwoLevels) {
  llvm::Expected<MachineModel> m = loadMachineModel(examples("host.yaml"));
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_TRUE(m->network.levels.empty());
  std::vector<NetworkLevel> levels = m->networkLevels();
  ASSERT_EQ(levels.size(), 2u);
  EXPECT_EQ(levels[0].size, m->clustersPerNode);
  EXPECT_DOUBLE_EQ(levels[0].link.bandwidth, m->network.intraNode.bandwidth);
  EXPECT_DOUBLE_EQ(levels[1].link.bandwidth, m->network.interNode.bandwidth);
  EXPECT_EQ(m->nodeLevels(), 1u);
}

TEST(NetworkLevels, MT3000KeepsItsTwoLevelNumbers) {
  llvm::Expected<MachineModel> m = loadMachineModel(examples("mt3000.yaml"));
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  ASSERT_EQ(m->network.levels.size(), 2u);
  EXPECT_EQ(m->network.levels[0].name, "chip");
  EXPECT_EQ(m->clustersPerNode, 4);
  EXPECT_DOUBLE_EQ(m->network.intraNode.bandwidth, 50e9);
  EXPECT_DOUBLE_EQ(m->network.intraNode.latency, 2e-6);
  EXPECT_DOUBLE_EQ(m->network.interNode.bandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(m->network.interNode.latency, 5e-6);
  EXPECT_DOUBLE_EQ(m->network.nodeInjectionBandwidth, 25e9);
}

TEST(NetworkLevels, Frontier) {
  llvm::Expected<MachineModel> m = loadMachineModel(examples("frontier.yaml"));
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  EXPECT_EQ(m->clustersPerNode, 8);
  std::vector<NetworkLevel> levels = m->networkLevels();
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].name, "mi250x");
  EXPECT_EQ(levels[0].size, 2);
  EXPECT_EQ(levels[1].size, 4);
  EXPECT_DOUBLE_EQ(levels[1].injectionBandwidth, 4 * 25e9);
  EXPECT_DOUBLE_EQ(levels[2].link.bandwidth, 25e9);
  EXPECT_EQ(m->cluster.ddrBytes, 64000000000);
  EXPECT_TRUE(m->offload.present());
}

TEST(NetworkLevels, PrintParsesBack) {
  for (const std::string &text :
       {threeLevels(), threeLevels("nodes: 4\nclusters_per_node: 4\n")}) {
    llvm::Expected<MachineModel> m = parseMachineModel(text, "m.yaml");
    ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
    std::string printed = printMachineModel(*m);
    EXPECT_EQ(printed.find("intra_node"), std::string::npos) << printed;
    llvm::Expected<MachineModel> back = parseMachineModel(printed, "printed");
    ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
    EXPECT_EQ(printMachineModel(*back), printed);
    ASSERT_EQ(back->network.levels.size(), m->network.levels.size());
    for (size_t i = 0; i < m->network.levels.size(); ++i) {
      const NetworkLevel &a = m->network.levels[i],
                         &b = back->network.levels[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.size, b.size);
      EXPECT_DOUBLE_EQ(a.link.bandwidth, b.link.bandwidth);
      EXPECT_DOUBLE_EQ(a.link.latency, b.link.latency);
      EXPECT_DOUBLE_EQ(a.injectionBandwidth, b.injectionBandwidth);
    }
    EXPECT_EQ(back->clustersPerNode, m->clustersPerNode);
  }
}

TEST(NetworkLevels, VirtualClustersGrowTheInnermostLevel) {
  llvm::Expected<MachineModel> m = parseMachineModel(threeLevels(), "m.yaml");
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  llvm::Expected<MachineModel> split = oversubscribe(*m, 2);
  ASSERT_TRUE(bool(split)) << llvm::toString(split.takeError());
  EXPECT_EQ(split->clustersPerNode, 16);
  EXPECT_EQ(split->network.levels[0].size, 8);
  EXPECT_TRUE(bool(parseMachineModel(printMachineModel(*split), "split")));
  // With an oversubscribed latency, the levels inside a node take it (and
  // the two-level view follows); the level joining nodes keeps its own.
  llvm::Expected<MachineModel> measured = parseMachineModel(
      threeLevels() + "  oversubscribed_latency: 1e-3\n", "m.yaml");
  ASSERT_TRUE(bool(measured)) << llvm::toString(measured.takeError());
  llvm::Expected<MachineModel> shared = oversubscribe(*measured, 2);
  ASSERT_TRUE(bool(shared)) << llvm::toString(shared.takeError());
  EXPECT_DOUBLE_EQ(shared->network.levels[0].link.latency, 1e-3);
  EXPECT_DOUBLE_EQ(shared->network.levels[1].link.latency, 1e-3);
  EXPECT_DOUBLE_EQ(shared->network.levels[2].link.latency, 5e-6);
  EXPECT_DOUBLE_EQ(shared->network.intraNode.latency, 1e-3);
  EXPECT_DOUBLE_EQ(shared->network.interNode.latency, 5e-6);
}

TEST(NetworkLevels, BadInputNamesTheKeyAndTheLimit) {
  auto levels = [](llvm::StringRef body) {
    return threeLevels("nodes: 2\n", ("  levels:\n" + body).str());
  };
  EXPECT_NE(parseError(levels("    - {name: a, size: 0, bandwidth: 1e9, "
                              "latency: 0}\n    - {name: b, bandwidth: 1e9, "
                              "latency: 0}\n"))
                .find("network.levels[0].size: must be positive, got 0"),
            std::string::npos);
  EXPECT_NE(parseError(levels("    - {name: a, size: 2, bandwidth: 0, "
                              "latency: 0}\n    - {name: b, bandwidth: 1e9, "
                              "latency: 0}\n"))
                .find("network.levels[0].bandwidth: must be positive"),
            std::string::npos);
  EXPECT_NE(parseError(levels("    - {name: a, size: 2, bandwidth: 1e9, "
                              "latency: 0}\n    - {name: a, bandwidth: 1e9, "
                              "latency: 0}\n"))
                .find("network.levels[1].name: 'a' names level 0 already"),
            std::string::npos);
  // The inner levels must divide the machine: 3 does not divide 2 x 3 x ...
  std::string error = parseError(threeLevels(
      "nodes: 2\nclusters_per_node: 4\n",
      "  levels:\n    - {name: a, size: 3, bandwidth: 1e9, "
      "latency: 0}\n    - {name: b, bandwidth: 1e9, latency: 0}\n"));
  EXPECT_NE(error.find("inner levels group 3 clusters, which does not divide "
                       "the machine's 8 clusters"),
            std::string::npos)
      << error;
  // clusters_per_node must end at a level.
  error = parseError(threeLevels("nodes: 8\nclusters_per_node: 2\n"));
  EXPECT_NE(error.find("clusters_per_node: 2 is not the size of a level's "
                       "group (the inner levels group 1, 4, 8 clusters)"),
            std::string::npos)
      << error;
  // Level sizes whose product (the clusters of a node, without
  // clusters_per_node) passes int64: an error naming the level and the
  // limit, not an overflow (fuzz/corpus/machine-file/
  // level-size-product-overflow.yaml).
  error = parseError(threeLevels(
      "nodes: 2\n",
      "  levels:\n    - {name: a, size: 4, bandwidth: 1e9, latency: 0}\n"
      "    - {name: b, size: 3292191.5e12, bandwidth: 1e9, latency: 0}\n"
      "    - {name: c, bandwidth: 1e9, latency: 0}\n"));
  EXPECT_NE(error.find("network.levels: the inner levels group 4 x "
                       "3292191500000000000 clusters, past the limit of "
                       "16777216 clusters"),
            std::string::npos)
      << error;
  // At most kMaxNetworkLevels levels.
  std::string five = "  levels:\n";
  for (int i = 0; i < 5; ++i)
    five += "    - {name: l" + std::to_string(i) +
            ", size: 1, bandwidth: 1e9, latency: 0}\n";
  error = parseError(threeLevels("nodes: 2\nclusters_per_node: 1\n", five));
  EXPECT_NE(error.find("network.levels: 5 levels exceed the limit of 4"),
            std::string::npos)
      << error;
  // The outermost level injects nowhere; its size is the rest.
  error = parseError(levels("    - {name: a, size: 4, bandwidth: 1e9, "
                            "latency: 0}\n    - {name: b, bandwidth: 1e9, "
                            "latency: 0, injection_bandwidth: 1e9}\n"));
  EXPECT_NE(error.find("network.levels[1].injection_bandwidth: the outermost "
                       "level has no level above it"),
            std::string::npos)
      << error;
  error = parseError(levels("    - {name: a, size: 4, bandwidth: 1e9, "
                            "latency: 0}\n    - {name: b, size: 3, "
                            "bandwidth: 1e9, latency: 0}\n"));
  EXPECT_NE(error.find("network.levels[1].size: the outermost level holds "
                       "the rest: 8 clusters / 4 = 2, got 3"),
            std::string::npos)
      << error;
  // Levels and the shorthand do not mix; a level needs its link.
  error = parseError(levels("    - {name: a, size: 4, bandwidth: 1e9, "
                            "latency: 0}\n    - {name: b, bandwidth: 1e9, "
                            "latency: 0}\n  inter_node: {bandwidth: 1e9, "
                            "latency: 0}\n"));
  EXPECT_NE(error.find("give either 'levels' or the two-level shorthand"),
            std::string::npos)
      << error;
  error = parseError(levels("    - {name: a, size: 4, latency: 0}\n"));
  EXPECT_NE(error.find("network.levels[0]: missing required key 'bandwidth'"),
            std::string::npos)
      << error;
  error = parseError(levels("    {name: a}\n"));
  EXPECT_NE(error.find("network.levels: expected a list of levels"),
            std::string::npos)
      << error;
  // The shorthand still needs both links.
  error =
      parseError(threeLevels("nodes: 2\nclusters_per_node: 4\n",
                             "  intra_node: {bandwidth: 1e9, latency: 0}\n"));
  EXPECT_NE(error.find("missing required key 'inter_node'"), std::string::npos)
      << error;
}

} // namespace
