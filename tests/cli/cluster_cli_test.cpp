// End-to-end tests of `lagom cluster`: help, --list, every preset, --json, errors and exit codes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli_runner.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/topologies/cluster_spec.hpp"
#include "strings.hpp"

namespace lagom::test {
namespace {

using nlohmann::json;

// Runs of spaces and line breaks (the description wraps) as one space.
std::string flat(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const bool space = ch == ' ' || ch == '\n';
    if (!space || (!out.empty() && out.back() != ' ')) {
      out += space ? ' ' : ch;
    }
  }
  return out;
}

std::string preset_file(const std::string& name) {
  // A path, not a chain of string concatenations (GCC 12's -Warray-bounds misfires on those).
  return slurp(
      (std::filesystem::path(LAGOM_SOURCE_DIR) / "topologies" / "presets" / (name + ".json"))
          .string());
}

TEST(ClusterCli, Help) {
  CliRun top = run_lagom({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_TRUE(contains(top.out, "cluster")) << top.out;
  CliRun r = run_lagom({"cluster", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* opt : {"PRESET|FILE", "--nodes", "--json", "--list"}) {
    EXPECT_TRUE(contains(r.out, opt)) << opt << "\n" << r.out;
  }
}

TEST(ClusterCli, ListsEveryPresetOnOneLine) {
  const std::vector<std::string> presets = topologies::list_cluster_presets();
  CliRun r = run_lagom({"cluster", "--list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), presets.size()) << r.out;
  for (std::size_t i = 0; i < presets.size(); ++i) {
    EXPECT_EQ(lines[i].rfind(presets[i] + " ", 0), 0u) << lines[i];
    // The description's first sentence, which names the machine.
    const std::string description = topologies::load_cluster_spec(presets[i]).description;
    EXPECT_TRUE(contains(lines[i], description.substr(0, description.find(':')))) << lines[i];
  }
  EXPECT_TRUE(contains(flat(r.out), "aws-p5 AWS p5.48xlarge: 8x H100")) << r.out;

  CliRun j = run_lagom({"cluster", "--list", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json doc = json::parse(j.out);
  EXPECT_EQ(doc["context"]["command"], "cluster --list");
  ASSERT_EQ(doc["presets"].size(), presets.size());
  for (std::size_t i = 0; i < presets.size(); ++i) {
    EXPECT_EQ(doc["presets"][i]["name"], presets[i]);
    EXPECT_FALSE(doc["presets"][i]["description"].get<std::string>().empty());
    EXPECT_EQ(doc["presets"][i]["gpus_per_node"], 8);
  }
}

TEST(ClusterCli, EveryPresetPrintsOnOneAndTwoNodes) {
  for (const std::string& name : topologies::list_cluster_presets()) {
    for (int nodes : {1, 2}) {
      SCOPED_TRACE(fmt::format("{} x{}", name, nodes));
      const topologies::ClusterSpec s = topologies::load_cluster_spec(name, nodes);
      CliRun r = run_lagom({"cluster", name, "--nodes", std::to_string(nodes)});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_TRUE(r.err.empty()) << r.err;
      EXPECT_EQ(r.out.rfind(fmt::format("lagom "), 0), 0u) << r.out;
      r.out = flat(r.out);
      EXPECT_TRUE(contains(r.out, fmt::format("cluster {} (preset:{})", name, name))) << r.out;
      EXPECT_TRUE(
          contains(r.out, fmt::format("x {} {} (compute capability", s.gpus_per_node, s.gpu_type)))
          << r.out;
      EXPECT_TRUE(contains(r.out, fmt::format("= {} GPUs", nodes * s.gpus_per_node))) << r.out;
      EXPECT_TRUE(contains(r.out, fmt::format("all {} GPUs", nodes * s.gpus_per_node))) << r.out;
      for (const char* label : {"intra-node", "pcie", "cpu", "network", "fabric", "communicator",
                                " ring ", " tree ", " nvls ", " nccl search "}) {
        EXPECT_TRUE(contains(r.out, label)) << label;
      }
      // Per node: NICs x speed, in Gb/s and GB/s.
      const double node_Gbps = s.nics_per_node() * s.network.nic_speed_Gbps;
      EXPECT_TRUE(
          contains(r.out, fmt::format("{:g} Gb/s = {:g} GB/s per node", node_Gbps, node_Gbps / 8)))
          << r.out;
      EXPECT_EQ(contains(r.out, "none (one node)"), nodes == 1);
    }
  }
}

TEST(ClusterCli, AwsP5OnTwoNodes) {
  CliRun r = run_lagom({"cluster", "aws-p5", "--nodes", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r.out = flat(r.out);
  // AWS: 32 EFA interfaces, 3200 Gb/s per node: 100 Gb/s each, four per GPU (aws-ofi-nccl).
  EXPECT_TRUE(contains(r.out, "32x 100 Gb/s EFAv2")) << r.out;
  EXPECT_TRUE(contains(r.out, "in 8 groups of 4, one group per GPU")) << r.out;
  // NVLink4: 18 x 25 GB/s per GPU per direction.
  EXPECT_TRUE(contains(r.out, fmt::format("18 links x 25 GB/s = {} GB/s per GPU", 18 * 25)))
      << r.out;
  // Across nodes each GPU gets its four interfaces, 4 x 100 / 8 = 50 GB/s; the ring leaves a
  // node through all of them, min(450 NVLink, 32 x 100 / 8 = 400) = 400 GB/s.
  EXPECT_TRUE(contains(r.out, fmt::format("inter-node {} GB/s per GPU per direction, limited by "
                                          "network; GPU to NIC PIX",
                                          4 * 100 / 8)))
      << r.out;
  EXPECT_TRUE(contains(r.out, fmt::format("ring {} GB/s per GPU per direction, limited by "
                                          "network",
                                          32 * 100 / 8)))
      << r.out;
  EXPECT_TRUE(contains(r.out, "nvls 400 GB/s")) << r.out;
  EXPECT_TRUE(contains(r.out, "estimate: 8 channels, bwIntra 48 GB/s")) << r.out;
  EXPECT_TRUE(contains(r.out, "assumptions")) << r.out;
}

TEST(ClusterCli, JsonHasTheDocumentedFields) {
  CliRun r = run_lagom({"cluster", "aws-p5", "--nodes", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const json j = json::parse(r.out);
  for (const char* key : {"context", "cluster", "communicator"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  const json& ctx = j["context"];
  for (const char* key :
       {"lagom_version", "git_sha", "command", "cluster", "origin", "input_hash", "nodes"}) {
    EXPECT_TRUE(ctx.contains(key)) << key;
  }
  EXPECT_EQ(ctx["command"], "cluster");
  EXPECT_EQ(ctx["cluster"], "aws-p5");
  EXPECT_EQ(ctx["origin"], "preset:aws-p5");
  EXPECT_EQ(ctx["nodes"], 2);
  EXPECT_EQ(ctx["input_hash"], "fnv1a64:" + hex64(fnv1a64(preset_file("aws-p5"))));

  const json& c = j["cluster"];
  for (const char* key : {"name", "description", "gpu", "nodes", "gpus_per_node", "gpus",
                          "intra_node", "pcie", "cpu", "network", "assumptions", "sources"}) {
    EXPECT_TRUE(c.contains(key)) << key;
  }
  EXPECT_EQ(c["gpu"]["type"], "H100-SXM-80GB");
  EXPECT_EQ(c["gpus"], 16);
  EXPECT_DOUBLE_EQ(c["intra_node"]["gpu_bandwidth_GBps"].get<double>(), 18 * 25.0);
  EXPECT_EQ(c["intra_node"]["nvls"], true);
  EXPECT_EQ(c["cpu"]["vendor"], "amd");
  EXPECT_EQ(c["network"]["nics_per_node"], 32);
  EXPECT_EQ(c["network"]["nics"].size(), 8u);
  EXPECT_EQ(c["network"]["nics"][0]["count"], 4);
  EXPECT_DOUBLE_EQ(c["network"]["node_bandwidth_Gbps"].get<double>(), 32 * 100.0);
  EXPECT_DOUBLE_EQ(c["network"]["node_bandwidth_GBps"].get<double>(), 32 * 100.0 / 8);
  EXPECT_EQ(c["network"]["fabric"]["kind"], "single-switch");

  const json& m = j["communicator"];
  for (const char* key : {"ranks", "nodes", "ranks_per_node", "uniform", "intra_node", "inter_node",
                          "nvls_available", "algorithms", "nccl_search_estimate"}) {
    EXPECT_TRUE(m.contains(key)) << key;
  }
  EXPECT_EQ(m["ranks"], 16);
  EXPECT_EQ(m["nodes"], 2);
  EXPECT_EQ(m["intra_node"]["path_type"], "NVL");
  EXPECT_DOUBLE_EQ(m["intra_node"]["bandwidth_GBps"].get<double>(), 18 * 25.0);
  EXPECT_DOUBLE_EQ(m["inter_node"]["bandwidth_per_gpu_GBps"].get<double>(), 4 * 100.0 / 8);
  EXPECT_EQ(m["inter_node"]["nic_path_type"], "PIX");
  for (const char* algo : {"ring", "tree", "nvls"}) {
    const json& a = m["algorithms"][algo];
    EXPECT_EQ(a["available"], true) << algo;
    EXPECT_EQ(a["bottleneck"], "network") << algo;
    EXPECT_DOUBLE_EQ(a["bottleneck_GBps"].get<double>(), 32 * 100.0 / 8) << algo;
    EXPECT_EQ(a["link_classes"], json::array({"nvlink", "pcie", "network"})) << algo;
  }
  // NCCL sees 8 devices of 400 Gb/s behind PCIe Gen5 x16 (48 in its units): 8 rings at 48.
  EXPECT_EQ(m["nccl_search_estimate"]["channels"], 8);
  EXPECT_DOUBLE_EQ(m["nccl_search_estimate"]["bw_inter_GBps"].get<double>(), 48.0);
  EXPECT_EQ(m["nccl_search_estimate"]["type_inter"], "PIX");
}

TEST(ClusterCli, JsonOfOneNodeAndOfAFile) {
  CliRun one = run_lagom({"cluster", "a40-pcie", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const json j = json::parse(one.out);
  EXPECT_EQ(j["context"]["nodes"], 1);
  EXPECT_EQ(j["communicator"]["nodes"], 1);
  EXPECT_DOUBLE_EQ(j["communicator"]["inter_node"]["bandwidth_per_gpu_GBps"].get<double>(), 0.0);
  EXPECT_EQ(j["communicator"]["inter_node"]["bottleneck"], nullptr);
  EXPECT_EQ(j["communicator"]["nvls_available"], false);
  EXPECT_EQ(j["communicator"]["algorithms"]["nvls"], json({{"available", false}}));

  // The same document from a file: the same hash, the file as origin.
  TempDir tmp;
  const std::string path = (tmp.path() / "p5.json").string();
  std::ofstream(path) << preset_file("aws-p5");
  CliRun f = run_lagom({"cluster", path, "--json"});
  ASSERT_EQ(f.exit_code, 0) << f.err;
  const json k = json::parse(f.out);
  EXPECT_EQ(k["context"]["origin"], path);
  EXPECT_EQ(k["context"]["nodes"], 1);
  EXPECT_EQ(k["context"]["input_hash"], "fnv1a64:" + hex64(fnv1a64(preset_file("aws-p5"))));
  EXPECT_EQ(k["cluster"]["name"], "aws-p5");

  // Byte-identical on a second run.
  EXPECT_EQ(run_lagom({"cluster", "a40-pcie", "--json"}).out, one.out);
}

TEST(ClusterCli, UnknownPresetListsTheKnownOnes) {
  CliRun r = run_lagom({"cluster", "dgx-h900"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(r.err.rfind("lagom cluster: error: unknown cluster preset 'dgx-h900'", 0), 0u) << r.err;
  for (const std::string& name : topologies::list_cluster_presets()) {
    EXPECT_TRUE(contains(r.err, name)) << r.err;
  }
}

TEST(ClusterCli, BadNodeCountsAreErrors) {
  for (const char* n : {"0", "-3", "65537"}) {
    CliRun r = run_lagom({"cluster", "dgx-h100", "--nodes", n});
    EXPECT_EQ(r.exit_code, 2) << n << r.err;
    EXPECT_TRUE(contains(r.err, std::string("lagom cluster: --nodes: expected an integer "
                                            "from 1 to 65536 (nodes), got '") +
                                    n + "'"))
        << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  // Not a whole number at all: a bad command line.
  for (const char* n : {"two", "2x", "1e3"}) {
    CliRun r = run_lagom({"cluster", "dgx-h100", "--nodes", n});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_TRUE(contains(r.err, std::string("--nodes: expected an integer from 1 to 65536 (nodes), "
                                            "got '") +
                                    n + "'"))
        << r.err;
  }
}

TEST(ClusterCli, MalformedFilesAreErrors) {
  const std::string truncated = data_path("bad/truncated.json");
  CliRun a = run_lagom({"cluster", truncated});
  EXPECT_EQ(a.exit_code, 1);
  EXPECT_TRUE(contains(a.err, "lagom cluster: error: " + truncated + ": not valid JSON")) << a.err;

  CliRun b = run_lagom({"cluster", "/nonexistent/cluster.json"});
  EXPECT_EQ(b.exit_code, 1);
  EXPECT_TRUE(contains(b.err, "cannot open cluster file '/nonexistent/cluster.json'")) << b.err;

  // Valid JSON, invalid cluster: a NIC entry of zero NICs.
  TempDir tmp;
  const std::string path = (tmp.path() / "bad.json").string();
  json doc = json::parse(preset_file("aws-p5"));
  doc["network"]["nics"][0]["count"] = 0;
  std::ofstream(path) << doc.dump();
  CliRun c = run_lagom({"cluster", path, "--json"});
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_TRUE(c.out.empty()) << c.out;
  EXPECT_TRUE(contains(c.err, path + ": network.nics[0].count: must be between 1 and 64, got 0"))
      << c.err;
}

TEST(ClusterCli, BadCommandLinesExitTwo) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"cluster"},
                                               {"cluster", "--bogus"},
                                               {"cluster", "dgx-h100", "aws-p5"},
                                               {"cluster", "--list", "aws-p5"},
                                               {"cluster", "--list", "--nodes", "2"},
                                               {"cluster", "aws-p5", "--nodes"}}) {
    CliRun r = run_lagom(args);
    EXPECT_EQ(r.exit_code, 2) << fmt::format("{}", fmt::join(args, " ")) << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, "lagom cluster --help")) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
}  // namespace lagom::test
