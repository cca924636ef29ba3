// The cluster format: every preset loads, --nodes overrides, and the catalogue of bad inputs
// gives errors that name the file, the JSON path and what was expected.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/cluster_spec.hpp"
#include "test_util.hpp"

namespace lagom::topologies {
namespace {

using nlohmann::json;
using test::error_of;

std::string preset_text(const std::string& name) {
  std::ifstream in(std::string(LAGOM_SOURCE_DIR) + "/topologies/presets/" + name + ".json");
  EXPECT_TRUE(in) << name;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(ClusterPresets, ListsEveryPreset) {
  EXPECT_EQ(list_cluster_presets(),
            (std::vector<std::string>{"a40-nvlink", "a40-pcie", "aws-p5", "dgx-a100", "dgx-h100",
                                      "hgx-h200", "superpod-h100", "superpod-h100-16k"}));
  // The embedded text is the preset's file.
  EXPECT_EQ(std::string(cluster_preset_text("aws-p5")), preset_text("aws-p5"));
  EXPECT_NE(error_of([] { cluster_preset_text("p5"); }).find("unknown cluster preset 'p5'"),
            std::string::npos);
}

TEST(ClusterPresets, EveryPresetLoadsWithOneNodeAndCitesItsSources) {
  // Node presets describe one node; fabric presets (a fat-tree) the system their sources count.
  const std::map<std::string, int> systems{{"superpod-h100", 127}, {"superpod-h100-16k", 2048}};
  for (const std::string& name : list_cluster_presets()) {
    SCOPED_TRACE(name);
    const ClusterSpec spec = load_cluster_spec(name);
    const int nodes = systems.contains(name) ? systems.at(name) : 1;
    EXPECT_EQ(spec.name, name);
    EXPECT_EQ(spec.origin, "preset:" + name);
    EXPECT_EQ(spec.nodes, nodes);
    EXPECT_EQ(spec.network.fabric.kind == FabricKind::kFatTree, nodes > 1);
    EXPECT_EQ(spec.gpus_per_node, 8);
    EXPECT_FALSE(spec.sources.empty());
    EXPECT_FALSE(spec.network.nics.empty());
    const Cluster c(spec);
    EXPECT_EQ(c.gpu_count(), 8 * nodes);
    // The embedded copy is the file in the source tree.
    EXPECT_EQ(parse_cluster_json(preset_text(name), "x").name, name);
  }
}

TEST(ClusterPresets, NumbersMatchTheReferences) {
  // reference/nccl.md §6: H100/H200 NVLink4 900 GB/s bidirectional over 18 links, A100 NVLink3
  // 600 GB/s over 12; PCIe Gen5 x16 128 GB/s and Gen4 x16 64 GB/s bidirectional; NDR 400 Gb/s,
  // HDR 200 Gb/s. A40 datasheet: 112.5 GB/s bidirectional per bridged pair.
  const auto bidir_nvlink = [](const ClusterSpec& s) {
    return 2 * s.intra_node.nvlink->links_per_gpu * s.intra_node.nvlink->link_bandwidth_GBps;
  };
  const ClusterSpec h100 = load_cluster_spec("dgx-h100");
  EXPECT_EQ(h100.intra_node.nvlink->links_per_gpu, 18);
  EXPECT_DOUBLE_EQ(bidir_nvlink(h100), 900.0);
  EXPECT_DOUBLE_EQ(2 * h100.pcie.link_bandwidth_GBps, 128.0);
  EXPECT_DOUBLE_EQ(h100.network.nic_speed_Gbps, 400.0);
  EXPECT_EQ(h100.network.nics.size(), 8u);
  EXPECT_TRUE(h100.intra_node.nvswitch->nvls);
  EXPECT_EQ(h100.network.affinity, NicAffinity::kRailOptimized);

  const ClusterSpec h200 = load_cluster_spec("hgx-h200");
  EXPECT_EQ(h200.gpu_type, "H200-SXM-141GB");
  EXPECT_DOUBLE_EQ(bidir_nvlink(h200), bidir_nvlink(h100));
  EXPECT_TRUE(h200.intra_node.nvswitch->nvls);

  const ClusterSpec a100 = load_cluster_spec("dgx-a100");
  EXPECT_EQ(a100.intra_node.nvlink->links_per_gpu, 12);
  EXPECT_DOUBLE_EQ(bidir_nvlink(a100), 600.0);
  EXPECT_DOUBLE_EQ(2 * a100.pcie.link_bandwidth_GBps, 64.0);
  EXPECT_DOUBLE_EQ(a100.network.nic_speed_Gbps, 200.0);
  EXPECT_FALSE(a100.intra_node.nvswitch->nvls);

  // Lagom paper §6.1: cluster A, NVLink + 2x 400 Gb/s; cluster B, PCIe 4.0 + 100 Gb/s.
  const ClusterSpec a = load_cluster_spec("a40-nvlink");
  EXPECT_EQ(a.intra_node.kind, IntraNodeKind::kNvLinkPairs);
  EXPECT_DOUBLE_EQ(bidir_nvlink(a), 112.5);
  EXPECT_EQ(a.intra_node.pairs.size(), 4u);
  EXPECT_EQ(a.network.nics.size(), 2u);
  EXPECT_DOUBLE_EQ(a.network.nic_speed_Gbps, 400.0);
  EXPECT_FALSE(a.assumptions.empty());
  const ClusterSpec b = load_cluster_spec("a40-pcie");
  EXPECT_EQ(b.intra_node.kind, IntraNodeKind::kPcie);
  EXPECT_EQ(b.pcie.generation, 4);
  EXPECT_EQ(b.network.nics.size(), 1u);
  EXPECT_DOUBLE_EQ(b.network.nic_speed_Gbps, 100.0);
  // Files without NIC counts keep meaning one NIC per entry.
  for (const ClusterSpec* s : {&h100, &h200, &a100, &a, &b}) {
    EXPECT_EQ(s->nics_per_node(), static_cast<int>(s->network.nics.size()));
  }
}

TEST(ClusterPresets, AwsP5MatchesAwsAndAwsOfiNccl) {
  const ClusterSpec p5 = load_cluster_spec("aws-p5");
  // AWS: 8x H100, 900 GB/s NVSwitch peer-to-peer (bidirectional), NVLS as on dgx-h100.
  EXPECT_EQ(p5.gpu_type, load_cluster_spec("dgx-h100").gpu_type);
  EXPECT_EQ(p5.compute_capability, 90);
  EXPECT_EQ(p5.gpus_per_node, 8);
  EXPECT_DOUBLE_EQ(
      2 * p5.intra_node.nvlink->links_per_gpu * p5.intra_node.nvlink->link_bandwidth_GBps, 900.0);
  EXPECT_TRUE(p5.intra_node.nvswitch->nvls);
  // AWS: up to 32 network cards and 3200 Gb/s: 100 Gb/s each. aws-ofi-nccl's topology: four
  // behind each GPU's PCIe switch.
  EXPECT_EQ(p5.nics_per_node(), 32);
  EXPECT_DOUBLE_EQ(p5.network.nic_speed_Gbps, 3200.0 / 32);
  EXPECT_DOUBLE_EQ(p5.nics_per_node() * p5.network.nic_speed_Gbps, 3200.0);
  ASSERT_EQ(p5.network.nics.size(), 8u);
  for (std::size_t i = 0; i < p5.network.nics.size(); ++i) {
    const NicSpec& nic = p5.network.nics[i];
    EXPECT_EQ(nic.count, 32 / 8);
    EXPECT_EQ(nic.gpus, std::vector<int>{static_cast<int>(i)});
    EXPECT_EQ(nic.attach, p5.pcie.gpu_attach[i]);  // same switch as its GPU: PIX
    // 4 x 100 Gb/s = 400 Gb/s = 50 GB/s per GPU per direction.
    EXPECT_DOUBLE_EQ(p5.nic_entry_bandwidth_GBps(i), 4 * 100.0 / 8);
  }
  // Two sockets of AMD EPYC 7R13 (AWS), four switches under each (aws-ofi-nccl).
  EXPECT_EQ(p5.cpu.sockets, 2);
  EXPECT_EQ(p5.cpu.vendor, nccl::CpuVendor::kAmd);
  EXPECT_NE(p5.cpu.model.find("7R13"), std::string::npos);
  EXPECT_EQ(p5.pcie.switches.size(), 8u);
  EXPECT_EQ(p5.pcie.generation, 5);
  EXPECT_EQ(p5.network.fabric.kind, FabricKind::kSingleSwitch);
  EXPECT_FALSE(p5.assumptions.empty());
}

TEST(ClusterPresets, NodesOverridesThePresetAndFiles) {
  const Cluster c = load_cluster("dgx-h100", 4);
  EXPECT_EQ(c.nodes(), 4);
  EXPECT_EQ(c.gpu_count(), 32);
  EXPECT_EQ(load_cluster("a40-pcie", 2).gpu_count(), 16);

  const auto dir = std::filesystem::temp_directory_path() / "lagom_topologies_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "mine.json").string();
  std::ofstream(path) << preset_text("a40-nvlink");
  EXPECT_EQ(load_cluster_spec(path).origin, path);
  EXPECT_EQ(load_cluster(path).nodes(), 1);
  EXPECT_EQ(load_cluster(path, 3).nodes(), 3);

  EXPECT_NE(error_of([] { load_cluster("dgx-h100", 0); }).find("between 1 and"), std::string::npos);
  EXPECT_NE(error_of([] { load_cluster("dgx-h100", -2); }).find("got -2"), std::string::npos);
  EXPECT_NE(error_of([] { load_cluster("dgx-h100", kMaxNodes + 1); }).find("between 1 and"),
            std::string::npos);
}

TEST(ClusterPresets, UnknownPresetListsTheKnownOnes) {
  const std::string e = error_of([] { load_cluster("dgx-h900"); });
  EXPECT_NE(e.find("unknown cluster preset 'dgx-h900'"), std::string::npos) << e;
  for (const std::string& name : list_cluster_presets()) {
    EXPECT_NE(e.find(name), std::string::npos) << e;
  }
  EXPECT_NE(error_of([] {
              load_cluster("/nonexistent/cluster.json");
            }).find("cannot open cluster file '/nonexistent/cluster.json'"),
            std::string::npos);
}

TEST(ClusterSpecValidate, ANodeWithoutNicsCannotBeMultiNode) {
  ClusterSpec s = load_cluster_spec("a40-pcie");
  s.network.nics.clear();
  s.network.sources.clear();
  s.sources.erase("assume-a40-nic");
  validate(s);  // one node: fine
  s.nodes = 2;
  EXPECT_NE(error_of([&] { validate(s); }).find("network: a cluster of 2 nodes needs NICs"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Cluster c(s); }).find("needs NICs"), std::string::npos);
}

TEST(ClusterSpecValidate, NicCountsSetInCode) {
  ClusterSpec s = load_cluster_spec("dgx-h100");
  s.network.nics[3].count = 2;
  validate(s);
  EXPECT_EQ(s.nics_per_node(), 9);
  s.network.nics[3].count = 0;
  EXPECT_NE(error_of([&] { validate(s); }).find("network.nics[3].count: must be between 1 and 64"),
            std::string::npos);
}

// One bad document: a change to the dgx-h100 preset and the message it must give.
struct BadCase {
  std::string what;
  std::function<void(json&)> change;
  std::string expected;
};

void PrintTo(const BadCase& c, std::ostream* os) {
  *os << c.what;
}

class ClusterJsonErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(ClusterJsonErrors, NameFilePathAndExpectation) {
  json doc = json::parse(preset_text("dgx-h100"));
  GetParam().change(doc);
  const std::string e = error_of([&] { parse_cluster_json(doc.dump(), "bad.json"); });
  EXPECT_EQ(e.rfind("bad.json: ", 0), 0u) << e;
  EXPECT_NE(e.find(GetParam().expected), std::string::npos)
      << "expected '" << GetParam().expected << "' in: " << e;
}

json nics_for(std::initializer_list<std::initializer_list<int>> gpus) {
  json nics = json::array();
  for (const auto& g : gpus) {
    nics.push_back({{"attach", "sw0"}, {"gpus", g}});
  }
  return nics;
}

const BadCase kBadCases[] = {
    {"wrong format", [](json& d) { d["format"] = "lagom.workload"; },
     "format: expected \"lagom.cluster\", got the string \"lagom.workload\""},
    {"future version", [](json& d) { d["version"] = 2; },
     "version: unsupported version 2: this lagom reads version 1"},
    {"unknown top-level field", [](json& d) { d["gpus"] = 8; }, "unknown field 'gpus'"},
    {"unknown NCCL version", [](json& d) { d["nccl_version"] = "2.17"; },
     "nccl_version: unknown NCCL version '2.17'"},
    {"NCCL version as a number", [](json& d) { d["nccl_version"] = 2.18; },
     "nccl_version: expected a string"},
    {"unknown nested field", [](json& d) { d["intra_node"]["nvlink"]["speed"] = 1; },
     "intra_node.nvlink: unknown field 'speed'"},
    {"missing field", [](json& d) { d["pcie"].erase("lanes"); },
     "pcie: missing required field 'lanes'"},
    {"zero GPUs", [](json& d) { d["nodes"]["gpus_per_node"] = 0; },
     "nodes.gpus_per_node: must be between 1 and 1024, got 0"},
    {"GPU count as string", [](json& d) { d["nodes"]["gpus_per_node"] = "8"; },
     "nodes.gpus_per_node: expected an integer, got the string \"8\""},
    {"fractional GPU count", [](json& d) { d["nodes"]["gpus_per_node"] = 8.5; },
     "nodes.gpus_per_node: expected an integer, got the number 8.5"},
    {"zero nodes", [](json& d) { d["nodes"]["count"] = 0; }, "nodes.count: must be between 1"},
    {"negative bandwidth", [](json& d) { d["pcie"]["link_bandwidth_GBps"] = -64; },
     "pcie.link_bandwidth_GBps: must be >= 0.001 and at most 100000 GB/s"},
    {"a bandwidth no link has", [](json& d) { d["pcie"]["link_bandwidth_GBps"] = 1e-300; },
     "pcie.link_bandwidth_GBps: must be >= 0.001 and at most 100000 GB/s, got 1e-300"},
    {"zero NVLink bandwidth", [](json& d) { d["intra_node"]["nvlink"]["link_bandwidth_GBps"] = 0; },
     "intra_node.nvlink.link_bandwidth_GBps: must be >= 0.001 and at most 100000 GB/s"},
    {"NIC speed as string", [](json& d) { d["network"]["nic_speed_Gbps"] = "400"; },
     "network.nic_speed_Gbps: expected a number of Gb/s, got the string \"400\""},
    {"negative latency", [](json& d) { d["network"]["fabric"]["latency_us"] = -1; },
     "network.fabric.latency_us: must be >= 0"},
    {"more NICs than GPUs",
     [](json& d) {
       d["network"]["nics"].push_back({{"attach", "sw0"}, {"gpus", {0}}});
     },
     "network.nics: 9 NICs for 8 GPUs per node"},
    {"NIC serves a GPU that does not exist", [](json& d) { d["network"]["nics"][7]["gpus"] = {8}; },
     "network.nics[7].gpus[0]: GPU 8 does not exist (nodes.gpus_per_node is 8: GPUs 0..7)"},
    {"GPU served twice",
     [](json& d) {
       d["network"]["affinity"] = "shared";
       d["network"]["nics"] = nics_for({{0, 1, 2, 3}, {3, 4, 5, 6, 7}});
     },
     "network.nics[1].gpus[0]: GPU 3 is already served by nics[0]"},
    {"GPU without a NIC",
     [](json& d) {
       d["network"]["affinity"] = "shared";
       d["network"]["nics"] = nics_for({{0, 1, 2, 3}, {4, 5, 6}});
     },
     "network.nics: GPU 7 is not served by any NIC"},
    {"rail-optimized NIC serving two GPUs",
     [](json& d) {
       d["network"]["nics"] = nics_for({{0, 1}, {2, 3}, {4, 5}, {6, 7}});
     },
     "affinity \"rail-optimized\" needs one NIC per GPU: 4 NICs for 8 GPUs"},
    {"NIC serving no GPU", [](json& d) { d["network"]["nics"][0]["gpus"] = json::array(); },
     "network.nics[0].gpus: must list at least one GPU"},
    {"switch nothing reaches",
     [](json& d) {
       d["pcie"]["switches"].push_back({{"id", "sw8"}, {"upstream", "cpu0"}});
     },
     "pcie.switches[8]: switch 'sw8' has no GPU or NIC below it"},
    {"zero CPU interconnect", [](json& d) { d["cpu"]["interconnect_bandwidth_GBps"] = 0; },
     "cpu.interconnect_bandwidth_GBps"},
    {"zero NICs in an entry", [](json& d) { d["network"]["nics"][2]["count"] = 0; },
     "network.nics[2].count: must be between 1 and 64, got 0"},
    {"NIC count as string", [](json& d) { d["network"]["nics"][2]["count"] = "4"; },
     "network.nics[2].count: expected an integer, got the string \"4\""},
    {"fractional NIC count", [](json& d) { d["network"]["nics"][2]["count"] = 1.5; },
     "network.nics[2].count: expected an integer, got the number 1.5"},
    {"unknown NIC field", [](json& d) { d["network"]["nics"][0]["ports"] = 2; },
     "network.nics[0]: unknown field 'ports' (known fields: attach, gpus, count)"},
    {"unknown affinity", [](json& d) { d["network"]["affinity"] = "rail"; },
     "network.affinity: unknown value \"rail\" (expected one of \"rail-optimized\", \"shared\")"},
    {"unknown fabric kind", [](json& d) { d["network"]["fabric"]["kind"] = "dragonfly"; },
     "network.fabric.kind: unknown value \"dragonfly\""},
    {"oversubscription below 1", [](json& d) { d["network"]["fabric"]["oversubscription"] = 0.5; },
     "network.fabric.oversubscription: must be >= 1"},
    {"unknown intra-node kind", [](json& d) { d["intra_node"]["kind"] = "nvlink"; },
     "intra_node.kind: unknown value \"nvlink\" (expected one of \"nvswitch\", \"nvlink-pairs\", "
     "\"pcie\")"},
    {"nvswitch without its object", [](json& d) { d["intra_node"].erase("nvswitch"); },
     "intra_node: kind \"nvswitch\" needs an 'nvswitch' object"},
    {"pcie kind with NVLink",
     [](json& d) {
       d["intra_node"]["kind"] = "pcie";
       d["intra_node"].erase("nvswitch");
     },
     "intra_node.nvlink: not allowed when kind is \"pcie\""},
    {"pairs without pairs",
     [](json& d) {
       d["intra_node"]["kind"] = "nvlink-pairs";
       d["intra_node"].erase("nvswitch");
     },
     "kind \"nvlink-pairs\" needs a non-empty 'pairs' array"},
    {"GPU bridged twice",
     [](json& d) {
       d["intra_node"]["kind"] = "nvlink-pairs";
       d["intra_node"].erase("nvswitch");
       d["intra_node"]["pairs"] = {{0, 1}, {1, 2}};
     },
     "intra_node.pairs[1]: GPU 1 is already bridged in pairs[0]"},
    {"GPU bridged to itself",
     [](json& d) {
       d["intra_node"]["kind"] = "nvlink-pairs";
       d["intra_node"].erase("nvswitch");
       d["intra_node"]["pairs"] = {{2, 2}};
     },
     "intra_node.pairs[0]: a GPU cannot be bridged to itself"},
    {"a pair of three",
     [](json& d) {
       d["intra_node"]["kind"] = "nvlink-pairs";
       d["intra_node"].erase("nvswitch");
       d["intra_node"]["pairs"] = {{0, 1, 2}};
     },
     "intra_node.pairs[0]: expected a pair [gpu, gpu], got [0,1,2]"},
    {"NVLS before Hopper", [](json& d) { d["gpu"]["compute_capability"] = 80; },
     "intra_node.nvswitch.nvls: NVLink SHARP needs compute capability 90"},
    {"NVLS as a string", [](json& d) { d["intra_node"]["nvswitch"]["nvls"] = "yes"; },
     "intra_node.nvswitch.nvls: expected true or false, got the string \"yes\""},
    {"impossible compute capability", [](json& d) { d["gpu"]["compute_capability"] = 9; },
     "gpu.compute_capability: must be between 30 and 200, got 9"},
    {"empty name", [](json& d) { d["name"] = ""; }, "name: must not be empty"},
    {"GPU on an unknown switch", [](json& d) { d["pcie"]["gpu_attach"][3] = "swX"; },
     "pcie.gpu_attach[3]: 'swX' is neither a PCIe switch id"},
    {"switch on a socket that does not exist",
     [](json& d) { d["pcie"]["switches"][0]["upstream"] = "cpu5"; },
     "pcie.switches[0].upstream: 'cpu5' is not a CPU socket of this node (cpu.sockets is 2"},
    {"switch cycle",
     [](json& d) {
       d["pcie"]["switches"][0]["upstream"] = "sw1";
       d["pcie"]["switches"][1]["upstream"] = "sw0";
     },
     "is on a cycle of 'upstream' links"},
    {"duplicate switch id", [](json& d) { d["pcie"]["switches"][1]["id"] = "sw0"; },
     "pcie.switches[1].id: duplicate switch id 'sw0'"},
    {"switch named like a CPU", [](json& d) { d["pcie"]["switches"][1]["id"] = "cpu1"; },
     "pcie.switches[1].id: 'cpu1' looks like a CPU socket name"},
    {"one GPU attachment short", [](json& d) { d["pcie"]["gpu_attach"].erase(7); },
     "pcie.gpu_attach: has 7 entries but a node has 8 GPUs"},
    {"odd PCIe width", [](json& d) { d["pcie"]["lanes"] = 12; },
     "pcie.lanes: must be 1, 2, 4, 8, 16 or 32, got 12"},
    {"unknown CPU vendor", [](json& d) { d["cpu"]["vendor"] = "arm"; },
     "cpu.vendor: unknown value \"arm\""},
    {"unknown source id", [](json& d) { d["pcie"]["sources"] = {"datasheet"}; },
     "pcie.sources[0]: unknown source id 'datasheet'"},
    {"no sources", [](json& d) { d["gpu"]["sources"] = json::array(); },
     "gpu.sources: expected a non-empty array of source ids"},
    {"uncited source", [](json& d) { d["sources"]["spare"] = "a citation nobody uses"; },
     "sources.spare: is never cited"},
    {"several nodes without NICs",
     [](json& d) {
       d.erase("network");
       d["nodes"]["count"] = 2;
     },
     "network: a cluster of 2 nodes needs NICs"},
};

INSTANTIATE_TEST_SUITE_P(Catalogue, ClusterJsonErrors, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& p) {
                           std::string n;
                           for (char ch : p.param.what) {
                             n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           }
                           return n;
                         });

TEST(ClusterJson, MalformedDocuments) {
  EXPECT_NE(error_of([] { parse_cluster_json("  \n", "e.json"); })
                .find("e.json: the file is empty; expected a JSON object with \"format\": "
                      "\"lagom.cluster\""),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_cluster_json("{\"format\": ", "t.json");
            }).find("is the file truncated?"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_cluster_json("[1, 2]", "a.json");
            }).find("a.json: expected a JSON object at the top level, got array"),
            std::string::npos);
}

TEST(ClusterJson, NcclEnvironment) {
  json doc = json::parse(preset_text("a40-nvlink"));
  doc["nccl_env"] = {{"NCCL_MIN_CTAS", "8"}, {"NCCL_BUFFSIZE", 8388608}};
  const ClusterSpec spec = parse_cluster_json(doc.dump(), "env.json");
  EXPECT_EQ(spec.nccl_env, (std::map<std::string, std::string>{{"NCCL_BUFFSIZE", "8388608"},
                                                               {"NCCL_MIN_CTAS", "8"}}));
  doc["nccl_env"] = {{"NCCL_MIN_CTAS", 8.5}};
  EXPECT_NE(error_of([&] {
              parse_cluster_json(doc.dump(), "env.json");
            }).find("nccl_env.NCCL_MIN_CTAS: expected a string or an integer, got"),
            std::string::npos);
  doc["nccl_env"] = json::array({"NCCL_MIN_CTAS=8"});
  EXPECT_NE(error_of([&] {
              parse_cluster_json(doc.dump(), "env.json");
            }).find("nccl_env: expected an object of NCCL_NAME: value"),
            std::string::npos);
}

}  // namespace
}  // namespace lagom::topologies
