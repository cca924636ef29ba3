// Fat-tree fabrics (docs/formats/cluster.md, "Fat-trees"): the layout derived from the radix
// against NVIDIA's published SuperPOD counts, the ECMP routes against a brute-force search of
// the graph's equal-cost paths, and all-to-all footprints worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>

#include "lagom/common/error.hpp"
#include "lagom/hardware/profile.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "lagom/sim/collective_model.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/communicator.hpp"
#include "lagom/topologies/traffic.hpp"

namespace lagom::topologies {
namespace {

using nlohmann::json;

// The superpod-h100 preset with `nodes` nodes and `fabric` merged into its network.fabric.
// A null value removes the field.
ClusterSpec superpod(int nodes, const json& fabric = json::object()) {
  json doc = json::parse(cluster_preset_text("superpod-h100"));
  doc["nodes"]["count"] = nodes;
  for (const auto& [key, value] : fabric.items()) {
    if (value.is_null()) {
      doc["network"]["fabric"].erase(key);  // back to the default
    } else {
      doc["network"]["fabric"][key] = value;
    }
  }
  return parse_cluster_json(doc.dump(), "test");
}

std::vector<int> every_rank(const Cluster& c) {
  std::vector<int> r(static_cast<std::size_t>(c.gpu_count()));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

TEST(FatTree, LayoutReproducesTheSuperPodComponentCounts) {
  // NVIDIA's DGX SuperPOD RAs (H100 Table 4; B200 for 8 SU and more; sources in the presets):
  // SUs of 32 nodes, 64-port switches, one leaf per rail per SU.
  struct Row {
    int nodes, tiers, leaves, spines, cores, leaf_spine_cables;
  };
  const Row rows[] = {
      {31, 2, 8, 4, 0, 8},         {63, 2, 16, 8, 0, 4},        {95, 2, 24, 16, 0, 2},
      {127, 2, 32, 16, 0, 2},      {256, 2, 64, 32, 0, 1},      {512, 3, 128, 128, 64, 1},
      {1024, 3, 256, 256, 128, 1}, {2048, 3, 512, 512, 256, 1},
  };
  for (const Row& r : rows) {
    const ClusterSpec s = r.tiers == 2
                              ? superpod(r.nodes)
                              : superpod(r.nodes, {{"tiers", 3}, {"oversubscription", {1.0, 1.0}}});
    const FatTreeLayout l = fat_tree_layout(s);
    SCOPED_TRACE(r.nodes);
    EXPECT_EQ(l.leaves, r.leaves);
    EXPECT_EQ(l.spines(), r.spines);
    EXPECT_EQ(l.cores(), r.cores);
    EXPECT_EQ(l.leaf_spine_cables, r.leaf_spine_cables);
    EXPECT_EQ(l.nodes_per_leaf, 32);
    EXPECT_EQ(l.leaf_up, 32);
    // Every spine port is used at full size (the RA's cable counts equal the GPU count).
    if (r.nodes % 32 == 0 || r.nodes == 127) {
      EXPECT_EQ(l.leaves * l.leaf_up, l.leaves * l.leaf_spine_cables * l.spines_per_pod);
    }
  }
  // And the preset built for 16,384 GPUs is the 64-SU row.
  const Cluster big = load_cluster("superpod-h100-16k");
  EXPECT_EQ(big.gpu_count(), 16384);
  const FatTreeLayout l = fat_tree_layout(big.spec());
  EXPECT_EQ(l.pods, 16);
  EXPECT_EQ(l.spine_core_cables, 4);
}

TEST(FatTree, OversubscriptionSetsTheUplinks) {
  const FatTreeLayout l =
      fat_tree_layout(superpod(64, {{"oversubscription", {2.0}}, {"nodes_per_leaf", nullptr}}));
  EXPECT_EQ(l.nodes_per_leaf, 42);  // 42 NIC ports + 21 uplinks fit 64 ports; 43 + 22 do not
  EXPECT_EQ(l.leaf_up, 21);
  const FatTreeLayout m =
      fat_tree_layout(superpod(64, {{"oversubscription", {2.0}}, {"nodes_per_leaf", 32}}));
  EXPECT_EQ(m.leaf_up, 16);
  EXPECT_EQ(m.leaves, 16);
  EXPECT_EQ(m.spines(), 4);  // 16 leaves x 4 cables fill a 64-port spine
}

TEST(FatTree, ImpossibleFabricsAreRefusedNamingTheField) {
  const auto err = [](int nodes, const json& fabric) {
    try {
      superpod(nodes, fabric);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(err(300, json::object())
                .find("network.fabric.radix: a 2-tier fat-tree whose spines have 64 ports "
                      "joins at most 64 leaves"),
            std::string::npos);
  EXPECT_NE(err(8, {{"nodes_per_leaf", 40}})
                .find("network.fabric.nodes_per_leaf: a leaf of 64 "
                      "ports cannot hold 40 nodes"),
            std::string::npos);
  EXPECT_NE(err(8, {{"oversubscription", {0.5}}}).find("network.fabric.oversubscription[0]"),
            std::string::npos);
  EXPECT_NE(err(8, {{"oversubscription", {1.0, 1.0}}}).find("expected an array of 1 number"),
            std::string::npos);
  EXPECT_NE(err(8, {{"leaves_per_pod", 8}}).find("only a 3-tier fabric has pods"),
            std::string::npos);
  EXPECT_NE(err(8, {{"tiers", 3}, {"oversubscription", {1, 1}}, {"leaves_per_pod", 12}})
                .find("network.fabric.leaves_per_pod: must be a multiple of the 8 rails"),
            std::string::npos);
  EXPECT_NE(err(8, {{"radix", 8}, {"rails", false}, {"nodes_per_leaf", nullptr}})
                .find("network.fabric.radix[0]: a leaf of 8 ports"),
            std::string::npos);
  // 65 pods of one leaf group each: a 64-port core cannot join them.
  EXPECT_NE(err(65 * 32, {{"tiers", 3}, {"oversubscription", {1, 1}}, {"leaves_per_pod", 8}})
                .find("network.fabric.radix[2]: a core switch of 64 ports joins at most 64 pods"),
            std::string::npos);
  EXPECT_NE(err(8, {{"radix", {64, 64}}, {"tiers", 3}, {"oversubscription", {1, 1}}})
                .find("network.fabric.radix: expected 3 port counts"),
            std::string::npos);
  EXPECT_NE(err(8, {{"kind", "fat-tree"}, {"spines", 4}}).find("spines"), std::string::npos);
}

// Brute-force per-hop ECMP between two leaves over the graph's switch-to-switch links: BFS
// distances to the destination, then at every switch the bytes split over the neighbours one
// step closer in proportion to the cables of the link to each.
std::map<std::size_t, double> brute_force_ecmp(const Cluster& c, const Endpoint& from,
                                               const Endpoint& to) {
  std::map<Endpoint, std::vector<std::size_t>> adj;  // switch -> its switch-switch links
  for (std::size_t id = 0; id < c.link_count(); ++id) {
    const Link l = c.link(id);
    if (l.a.kind == VertexKind::kNetworkSwitch && l.b.kind == VertexKind::kNetworkSwitch) {
      adj[l.a].push_back(id);
      adj[l.b].push_back(id);
    }
  }
  const auto other = [&](std::size_t id, const Endpoint& e) {
    const Link l = c.link(id);
    return l.a == e ? l.b : l.a;
  };
  std::map<Endpoint, int> dist{{to, 0}};
  std::deque<Endpoint> queue{to};
  while (!queue.empty()) {
    const Endpoint u = queue.front();
    queue.pop_front();
    for (std::size_t id : adj[u]) {
      const Endpoint v = other(id, u);
      if (!dist.contains(v)) {
        dist[v] = dist[u] + 1;
        queue.push_back(v);
      }
    }
  }
  std::map<std::size_t, double> load;
  std::map<Endpoint, double> layer{{from, 1.0}};
  for (int d = dist.at(from); d > 0; --d) {
    std::map<Endpoint, double> next;
    for (const auto& [u, share] : layer) {
      int cables = 0;
      for (std::size_t id : adj[u]) {
        cables += dist.at(other(id, u)) == d - 1 ? c.link(id).count : 0;
      }
      for (std::size_t id : adj[u]) {
        if (dist.at(other(id, u)) == d - 1) {
          const double part = share * c.link(id).count / cables;
          load[id] += part;
          next[other(id, u)] += part;
        }
      }
    }
    layer = std::move(next);
  }
  return load;
}

TEST(FatTree, RoutesAreTheGraphsEqualCostPathsSplitByEcmp) {
  // 3 tiers, 2 rails (2 NICs per node), 4 nodes per leaf: 4 NIC ports and 4 uplinks per leaf at
  // 1:1 (2 cables to each of 2 spines: 8 down ports and, at 2:1, 4 uplinks on a 16-port spine),
  // pods of 4 leaves, 4-port cores: 2 per plane with 2 cables from each of the 2 pods' spines.
  // 11 nodes leave the last leaf group and pod partial.
  json doc = json::parse(cluster_preset_text("superpod-h100"));
  doc["nodes"] = {{"count", 11}, {"gpus_per_node", 2}, {"sources", {"superpod-h100-ra"}}};
  doc["intra_node"]["kind"] = "pcie";
  doc["intra_node"].erase("nvlink");
  doc["intra_node"].erase("nvswitch");
  doc["pcie"]["switches"] = json::array({{{"id", "sw0"}, {"upstream", "cpu0"}}});
  doc["pcie"]["gpu_attach"] = {"sw0", "cpu1"};
  doc["network"]["nics"] =
      json::array({{{"attach", "sw0"}, {"gpus", {0}}}, {{"attach", "cpu1"}, {"gpus", {1}}}});
  doc["network"]["fabric"] = {
      {"kind", "fat-tree"},   {"switch_model", "test"}, {"tiers", 3},
      {"radix", {16, 16, 4}}, {"rails", true},          {"oversubscription", {1, 2}},
      {"nodes_per_leaf", 4},  {"leaves_per_pod", 4},    {"latency_us", 0.5}};
  const Cluster c(parse_cluster_json(doc.dump(), "test"));
  const FatTreeLayout l = fat_tree_layout(c.spec());
  ASSERT_EQ(l.leaves, 6);
  ASSERT_EQ(l.pods, 2);
  ASSERT_EQ(l.spines_per_pod, 2);
  ASSERT_EQ(l.leaf_spine_cables, 2);
  ASSERT_EQ(l.spine_up, 4);
  ASSERT_EQ(l.cores_per_plane, 2);
  ASSERT_EQ(l.spine_core_cables, 2);
  int checked = 0;
  for (int a = 0; a < c.gpu_count(); ++a) {
    for (int b = 0; b < c.gpu_count(); ++b) {
      if (c.locate(a).node == c.locate(b).node) {
        continue;
      }
      const Path p = c.path(a, b);
      // The leaves: the ends of the NIC links.
      Endpoint leaf_a;
      Endpoint leaf_b;
      std::map<std::size_t, double> got;
      for (const Hop& h : p.hops) {
        if (h.from.kind == VertexKind::kNic && h.to.kind == VertexKind::kNetworkSwitch) {
          leaf_a = h.to;
        } else if (h.to.kind == VertexKind::kNic && h.from.kind == VertexKind::kNetworkSwitch) {
          leaf_b = h.from;
        } else if (h.from.kind == VertexKind::kNetworkSwitch &&
                   h.to.kind == VertexKind::kNetworkSwitch) {
          got[h.link_id] += h.share;
        } else {
          EXPECT_DOUBLE_EQ(h.share, 1.0);
        }
      }
      const std::map<std::size_t, double> want = brute_force_ecmp(c, leaf_a, leaf_b);
      ASSERT_EQ(got.size(), want.size()) << a << " -> " << b;
      for (const auto& [id, share] : want) {
        EXPECT_NEAR(got[id], share, 1e-12) << a << " -> " << b << " link " << id;
      }
      // One route's latency: two NIC links and two links per stage, 0.5 us each.
      const int pod_a = leaf_a.index / l.leaves_per_pod;
      const int pod_b = leaf_b.index / l.leaves_per_pod;
      const int stages = leaf_a == leaf_b ? 0 : pod_a == pod_b ? 1 : 2;
      double network_latency = 0;
      for (const Hop& h : p.hops) {
        network_latency += h.link_class == nccl::LinkClass::kNetwork ? h.latency_us * h.share : 0;
      }
      EXPECT_NEAR(network_latency, 0.5 * (2 + 2 * stages), 1e-12) << a << " -> " << b;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 22 * 20);
}

TEST(FatTree, AllToAllAtOneToOneLoadsTheNicsLikeASingleSwitch) {
  // 16 ranks on 2 nodes, one leaf per node (no rails): each GPU sends U/16 to every rank, 8/16 of
  // it to the other node. At 1:1 a leaf has 8 uplinks of 50 GB/s for its 8 GPUs' 8 x 1/2 U, the
  // same 0.01 U per GB/s as a NIC: the fabric adds nothing to a single switch. At 2:1 the leaf
  // has 4 uplinks for the same 4 U: 0.02, twice the NICs' figure.
  const auto worst_net = [](const ClusterSpec& s) {
    const Cluster c(s);
    const CommunicatorTraffic t(c, every_rank(c));
    return t.all_to_all().worst[static_cast<int>(nccl::LinkClass::kNetwork)];
  };
  ClusterSpec single = superpod(2);
  single.network.fabric = FabricSpec{FabricKind::kSingleSwitch, "x", 1.0, 0.5, {}};
  const json leaf_per_node{{"rails", false}, {"nodes_per_leaf", 1}};
  json two = leaf_per_node;
  two["oversubscription"] = {2.0};
  EXPECT_DOUBLE_EQ(worst_net(single), 0.5 / 50.0);
  EXPECT_DOUBLE_EQ(worst_net(superpod(2, leaf_per_node)), 0.5 / 50.0);
  EXPECT_DOUBLE_EQ(worst_net(superpod(2, two)), 2 * 0.5 / 50.0);

  // The collective model times them so: at 1 GiB a 1:1 fat-tree is the single switch (plus two
  // links of latency), and 2:1 about doubles the time.
  const auto time_us = [](const ClusterSpec& s) {
    const Cluster c(s);
    const CommunicatorInfo info = describe_communicator(c, every_rank(c));
    const hardware::HardwareProfile profile = hardware::default_profile_for_gpu(s.gpu_type);
    const sim::CollectiveModel model(profile, info);
    nccl::CommConfig cfg;
    cfg.nchannels = 16;
    cfg.chunk_bytes = 1 << 19;
    return model.estimate(nccl::CollKind::kAllToAll, std::int64_t{1} << 30, cfg).time_us;
  };
  const double t_single = time_us(single);
  const double t_one = time_us(superpod(2, leaf_per_node));
  const double t_two = time_us(superpod(2, two));
  EXPECT_NEAR(t_one / t_single, 1.0, 0.01);
  EXPECT_NEAR(t_two / t_one, 2.0, 0.1);
}

TEST(FatTree, AllToAllClimbsOnlyWhatLeavesTheLeafAndThePod) {
  // 64 nodes (512 ranks) on the 3-tier preset's layout: 2 leaf groups of 32 nodes, one pod of 4
  // leaf groups (so one pod). With PXN every share for a GPU of index d leaves by the sender's
  // node's rail-d NIC, so it stays on rail d: a rail leaf sends up only what goes to the other
  // leaf group's 32 GPUs of its index, from each of its 32 nodes' 8 GPUs: 32 x 8 x 32/512 = 16
  // U, spread over its 32 uplinks (1/2 each); nothing reaches the cores.
  const Cluster c(superpod(64, {{"tiers", 3}, {"oversubscription", {1, 1}}}));
  const CommunicatorTraffic t(c, every_rank(c));
  const Footprint& f = t.all_to_all();
  double leaf_up = 0;
  double to_core = 0;
  for (const LinkLoad& ll : f.loads) {
    const Link link = c.link(ll.link);
    const Endpoint& from = ll.dir == 0 ? link.a : link.b;
    const Endpoint& to = ll.dir == 0 ? link.b : link.a;
    if (from.kind == VertexKind::kNetworkSwitch && from.node == -1 && to.node == -2) {
      EXPECT_NEAR(ll.per_byte, 0.5, 1e-12);  // 16 U over 32 spines
      leaf_up += ll.per_byte;
    }
    to_core += to.node == -3 ? ll.per_byte : 0;
  }
  EXPECT_NEAR(leaf_up, 16 * 32 * 0.5, 1e-9);
  EXPECT_EQ(to_core, 0);
}

// The all-to-all footprint is computed in aggregate (per leaf and pod, with PXN); it must equal
// the sum of its n (n - 1) point-to-point transfers of U/n, each routed on its own (pair(): PXN
// and ECMP), on a 3-tier fabric with partial leaf groups and pods and a communicator that leaves
// some GPUs out (so some nodes lack the GPU PXN would forward through).
TEST(FatTree, AllToAllIsTheSumOfItsTransfers) {
  for (const bool pxn : {true, false}) {
    SCOPED_TRACE(pxn ? "PXN" : "no PXN");
    ClusterSpec spec = superpod(12, {{"tiers", 3},
                                     {"radix", {16, 16, 8}},
                                     {"oversubscription", {1, 2}},
                                     {"nodes_per_leaf", 4},
                                     {"leaves_per_pod", 8}});
    if (!pxn) {
      spec.nccl_env["NCCL_PXN_DISABLE"] = "1";
    }
    const Cluster c(spec);
    ASSERT_EQ(fat_tree_layout(c.spec()).pods, 3);
    std::vector<int> members;
    for (int r = 0; r < c.gpu_count(); ++r) {
      if (r % 5 != 3) {
        members.push_back(r);
      }
    }
    const CommunicatorTraffic t(c, members);
    const double n = static_cast<double>(members.size());
    std::map<std::pair<std::uint32_t, std::uint8_t>, double> want;
    for (int a : members) {
      for (int b : members) {
        if (a != b) {
          for (const LinkLoad& l : t.pair(a, b).loads) {
            want[{l.link, l.dir}] += l.per_byte / n;
          }
        }
      }
    }
    std::map<std::pair<std::uint32_t, std::uint8_t>, double> got;
    for (const LinkLoad& l : t.all_to_all().loads) {
      got[{l.link, l.dir}] += l.per_byte;
    }
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [key, load] : want) {
      EXPECT_NEAR(got[key], load, 1e-9) << "link " << key.first << " dir " << int(key.second);
    }
  }
}

TEST(FatTree, SlowLinkNamesASpine) {
  ClusterSpec s = superpod(64);
  s.slow_links.push_back({"leaf3", "spine0", 4.0});
  const Cluster c(s);
  bool found = false;
  for (std::size_t id = 0; id < c.link_count(); ++id) {
    const Link l = c.link(id);
    if (c.name_of(l.a) == "leaf3" && c.name_of(l.b) == "spine0") {
      EXPECT_DOUBLE_EQ(l.bandwidth_GBps, 4 * 50.0 / 4.0);  // 4 cables, a quarter of each
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace lagom::topologies
