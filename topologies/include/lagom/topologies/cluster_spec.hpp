// The cluster description as plain data (format v1, docs/formats/cluster.md), its strict JSON
// reader, and the embedded presets.
//
// A ClusterSpec says what hardware a cluster has: GPU type, GPUs per node, the intra-node fabric
// (NVSwitch, NVLink bridges between GPU pairs, or PCIe only), the PCIe switch tree and CPU
// sockets, the NICs and their GPU affinity, the inter-node switch fabric and the node count.
// Per-GPU numbers (SMs, HBM bandwidth, peak rates) are not here: they live in the hardware
// profile (calibrate/). Every number carries a source id that `sources` resolves to a citation.
//
// Bandwidths are per direction, in GB/s (1 GB/s = 1e9 B/s, as nccl-tests); NIC speeds are in
// Gb/s as vendors quote them; latencies are in microseconds.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/nccl/comm_info.hpp"
#include "lagom/nccl/topo.hpp"

namespace lagom::topologies {

inline constexpr std::string_view kClusterFormat = "lagom.cluster";
inline constexpr int kClusterVersion = 1;

enum class IntraNodeKind {
  kNvSwitch,     // every GPU has NVLinks to an NVSwitch plane (DGX/HGX)
  kNvLinkPairs,  // NVLink bridges join GPU pairs; everything else crosses PCIe (A40, RTX)
  kPcie,         // no NVLink: GPUs talk over PCIe
};

enum class NicAffinity {
  kRailOptimized,  // one NIC per GPU; NIC i serves GPU i and sits on rail i
  kShared,         // each NIC serves several GPUs
};

enum class FabricKind {
  kRailOptimized,  // one leaf switch per rail (NIC index), leaves joined by a spine
  kSingleSwitch,   // every NIC on one non-blocking switch (or a fabric that acts like one)
  kFatTree,        // leaf/spine[/core] tiers of switches of one radix, oversubscription per tier
};

struct NvLinkSpec {
  int generation = 0;
  int links_per_gpu = 0;           // NVLink links from one GPU (to the switch plane or its pair)
  double link_bandwidth_GBps = 0;  // one link, one direction
  double latency_us = 0;           // one NVLink hop (GPU-switch or GPU-GPU)
};

struct NvSwitchSpec {
  int chips = 0;      // physical NVSwitch chips; the graph models them as one switch plane
  bool nvls = false;  // NVLink SHARP (multicast/reduction in the switch), Hopper and later
};

struct IntraNodeSpec {
  IntraNodeKind kind = IntraNodeKind::kPcie;
  std::optional<NvLinkSpec> nvlink;        // kNvSwitch and kNvLinkPairs
  std::optional<NvSwitchSpec> nvswitch;    // kNvSwitch only
  std::vector<std::pair<int, int>> pairs;  // kNvLinkPairs only: bridged local GPUs
  std::vector<std::string> sources;
};

// A PCIe switch; `upstream` is another switch id or a CPU socket "cpu<N>".
struct PcieSwitchSpec {
  std::string id;
  std::string upstream;
};

struct PcieSpec {
  int generation = 0;
  int lanes = 0;                   // width of every GPU, NIC and switch uplink (x16 typically)
  double link_bandwidth_GBps = 0;  // one link, one direction
  double latency_us = 0;           // one PCIe link
  std::vector<PcieSwitchSpec> switches;
  std::vector<std::string> gpu_attach;  // per local GPU: a switch id or "cpu<N>"
  std::vector<std::string> sources;
};

struct CpuSpec {
  int sockets = 0;  // CPU sockets (NCCL's CPU nodes); PCIe trees hang off them
  nccl::CpuVendor vendor = nccl::CpuVendor::kOther;
  std::string model;
  std::string interconnect;                // "UPI", "xGMI", ...
  double interconnect_bandwidth_GBps = 0;  // GPU peer traffic across sockets, one direction
  double interconnect_latency_us = 0;
  std::vector<std::string> sources;
};

// One NIC, or `count` identical NICs side by side that serve the same GPUs and whose bandwidths
// add up (the four 100 Gb/s EFA devices next to each GPU of an AWS p5, which aws-ofi-nccl presents
// to NCCL as one 400 Gb/s device). Each of them has its own PCIe link to `attach`.
struct NicSpec {
  std::string attach;     // a switch id or "cpu<N>"
  std::vector<int> gpus;  // local GPUs whose inter-node traffic uses this NIC
  int count = 1;          // identical NICs in this entry, 1..kMaxNicsPerEntry
};

// A fat-tree (folded Clos) of `tiers` switch tiers whose switches have `radix[tier]` ports of
// `port_speed_Gbps` (docs/formats/cluster.md, "Fat-trees"):
//  * leaves take the NICs of `nodes_per_leaf` nodes: all of a node's NICs, or with `rails` one
//    NIC entry index (rail) each, so that a leaf group of nodes has one leaf per rail;
//  * a leaf has ceil(down / oversubscription[0]) uplinks, spread evenly over the spines of its
//    pod (all leaves when tiers is 2; `leaves_per_pod` leaves when it is 3);
//  * with 3 tiers a spine has ceil(down / oversubscription[1]) uplinks to the core switches of
//    its plane (spine j of every pod meets the cores of plane j), spread evenly over them.
// Zero for nodes_per_leaf or leaves_per_pod means "as many as the radix allows". The builder
// (cluster.cpp) derives the switch counts and refuses a radix that cannot hold them.
struct FatTreeSpec {
  int tiers = 2;                         // 2 (leaf, spine) or 3 (leaf, spine, core)
  std::vector<int> radix;                // ports per switch, per tier (leaf, spine[, core])
  double port_speed_Gbps = 0;            // one switch-to-switch cable, one direction
  bool rails = false;                    // one leaf per rail (NIC entry index) per leaf group
  std::vector<double> oversubscription;  // per uplink stage (tiers - 1 entries), each >= 1
  int nodes_per_leaf = 0;                // 0: the most a leaf's radix holds
  int leaves_per_pod = 0;                // 3 tiers only; 0: the most a spine's radix holds
};

struct FabricSpec {
  FabricKind kind = FabricKind::kSingleSwitch;
  std::string switch_model;
  double oversubscription = 1.0;  // rail-optimized only: leaf-to-spine taper (>= 1)
  double latency_us = 0;          // one network link (NIC-switch or switch-switch)
  FatTreeSpec fat_tree;           // kFatTree only
};

struct NetworkSpec {
  std::string technology;  // "InfiniBand NDR", ...
  std::string nic_model;
  double nic_speed_Gbps = 0;
  NicAffinity affinity = NicAffinity::kRailOptimized;
  std::vector<NicSpec> nics;  // per node (entries; see NicSpec::count); empty only for 1 node
  FabricSpec fabric;
  std::vector<std::string> sources;
};

// The switch counts and cabling a fat-tree spec gives on its node count (fat_tree_layout()).
// A leaf group is `nodes_per_leaf` consecutive nodes; it has one leaf per rail (`rails` of
// them; 1 without rails). Leaf l is leaf group l / rails, rail l % rails; pod p holds leaves
// p * leaves_per_pod ... Partial groups and pods (the last ones, when the node count does not
// fill them) are cabled as full ones.
struct FatTreeLayout {
  int tiers = 2;
  int rails = 1;  // leaves per leaf group
  int nodes_per_leaf = 0;
  int leaf_groups = 0;        // ceil(nodes / nodes_per_leaf)
  int leaves = 0;             // leaf_groups * rails
  int leaf_down = 0;          // NIC ports of a full leaf
  int leaf_up = 0;            // uplinks of a leaf: ceil(leaf_down / oversubscription[0])
  int leaves_per_pod = 0;     // every leaf with 2 tiers
  int pods = 1;               // ceil(leaves / leaves_per_pod)
  int spines_per_pod = 0;     // leaf_up / leaf_spine_cables
  int leaf_spine_cables = 0;  // between a leaf and each spine of its pod
  int spine_down = 0;         // leaves_per_pod * leaf_spine_cables
  int spine_up = 0;           // 3 tiers: ceil(spine_down / oversubscription[1])
  int cores_per_plane = 0;    // 3 tiers: spine_up / spine_core_cables
  int spine_core_cables = 0;  // 3 tiers: between a spine and each core of its plane
  double port_GBps = 0;       // one cable, one direction
  int spines() const { return pods * spines_per_pod; }
  int cores() const { return spines_per_pod * cores_per_plane; }
};

// What-ifs on single parts of a cluster: the modelling commands' --slow-gpu and --slow-link
// (docs/whatif.md, "Stragglers"). Cluster files do not carry them.
struct SlowGpu {
  int gpu = 0;          // the cluster's GPU number: node x GPUs per node + local index
  double factor = 1.0;  // its compute kernels take `factor` times as long (>= 1)
};
struct SlowLink {
  std::string a;        // the link's two ends as Cluster::name_of names them ("node1/nic0",
  std::string b;        // "leaf0", "node0/gpu3", "node0/nvswitch0", "spine", "spine3", "core0")
  double factor = 1.0;  // it carries 1 / `factor` of its bandwidth, each direction (>= 1)
};

struct ClusterSpec {
  std::string name;
  std::string description;
  std::string origin;  // where it came from: a file path or "preset:<name>" (for messages)
  std::string gpu_type;
  int compute_capability = 0;  // e.g. 90 for H100; selects NCCL's per-architecture constants
  std::vector<std::string> gpu_sources;
  int gpus_per_node = 0;
  int nodes = 0;
  std::vector<std::string> nodes_sources;
  IntraNodeSpec intra_node;
  PcieSpec pcie;
  CpuSpec cpu;
  NetworkSpec network;
  std::map<std::string, std::string> sources;  // id -> citation
  std::vector<std::string> assumptions;
  // NCCL environment variables the jobs run with (name -> value, e.g. NCCL_MIN_CTAS -> 8): the
  // NCCL emulation applies them to every communicator (nccl::apply_env, which names the
  // ones it knows). From the cluster file's "nccl_env" and the commands' --nccl-env.
  std::map<std::string, std::string> nccl_env;
  // The NCCL release the jobs run (its tuning, channel search and limits): the cluster file's
  // "nccl_version" ("2.18" or "2.28") or the commands' --nccl-version; 2.28 when neither says.
  nccl::Version nccl_version = nccl::kDefaultVersion;
  std::vector<SlowGpu> slow_gpus;
  std::vector<SlowLink> slow_links;

  int gpu_count() const { return gpus_per_node * nodes; }
  // One NIC's bandwidth per direction in GB/s (Gb/s / 8).
  double nic_bandwidth_GBps() const { return network.nic_speed_Gbps / 8.0; }
  // NIC entry `i`: all of its `count` NICs together, per direction, in GB/s.
  double nic_entry_bandwidth_GBps(std::size_t i) const {
    return network.nics.at(i).count * nic_bandwidth_GBps();
  }
  // Physical NICs per node: the sum of the entries' counts.
  int nics_per_node() const {
    int n = 0;
    for (const NicSpec& nic : network.nics) {
      n += nic.count;
    }
    return n;
  }
};

// The layout of `spec`'s fat-tree (network.fabric.kind "fat-tree") on spec.nodes nodes. Throws
// lagom::Error naming the field when a radix cannot hold what it must (a leaf its NIC ports and
// uplinks, a spine its pod's leaves and its uplinks, a 2-tier spine every leaf, a core every pod).
FatTreeLayout fat_tree_layout(const ClusterSpec& spec);

// Per uplink stage of a fat-tree's layout `l` (fat_tree_layout(spec)), a switch's down bandwidth
// over its up bandwidth as built: uplinks are whole ports, rounded up, and may run at another
// speed than the NICs (a leaf of 32 NIC ports at 400 Gb/s over 16 uplinks of 400 Gb/s: 2).
std::vector<double> built_oversubscription(const ClusterSpec& spec, const FatTreeLayout& l);

// Where the network between nodes is oversubscribed: "" when every tier can carry what the
// tier below sends (a single switch; a rail-optimized fabric at 1:1; a fat-tree whose uplinks,
// in bandwidth, match its down links), else a description of the first tier that cannot
// ("leaf uplinks at 2:1: 32 NIC ports of 400 Gb/s, 16 uplinks of 400 Gb/s"). Folding replicas
// is exact only without one: replicas it does not simulate would share that tier.
std::string oversubscribed_tier(const ClusterSpec& spec);

// Largest node count a cluster may have (keeps graphs of 16k-GPU clusters in a few MB and
// rejects typos such as --nodes 1000000).
inline constexpr int kMaxNodes = 65536;
// Largest NicSpec::count (AWS p5 has 4 per GPU).
inline constexpr int kMaxNicsPerEntry = 64;

// Parses a cluster document. `origin` names it in error messages. Throws lagom::Error naming the
// origin, the JSON path (e.g. "network.nics[2].gpus[0]") and what was expected.
// `nodes`, when given, replaces nodes.count before the cross-field checks.
ClusterSpec parse_cluster_json(std::string_view text, std::string_view origin,
                               std::optional<int> nodes = {});

// Checks the cross-field rules (ids resolve, NIC affinities cover every GPU once, the switch
// tree has no cycle, sources are cited...). parse_cluster_json() calls it; call it again after
// editing a spec in code. Throws lagom::Error as parse_cluster_json() does.
void validate(const ClusterSpec& spec);

// The embedded preset names, sorted ("a40-nvlink", "dgx-h100", ...).
std::vector<std::string> list_cluster_presets();

// The JSON text of an embedded preset (for input hashes and `lagom cluster`); lagom::Error for an
// unknown name, listing the known ones.
std::string_view cluster_preset_text(std::string_view name);

// A cluster document before parsing: its JSON text and the origin errors name ("preset:NAME" or
// the path). A preset by name, or a file when `name_or_path` contains '/' or ends in ".json".
struct ClusterDocument {
  std::string text;
  std::string origin;
};
ClusterDocument cluster_document(std::string_view name_or_path);
// Parses `doc` and sets the node count as load_cluster_spec() does.
ClusterSpec cluster_spec_of(const ClusterDocument& doc, std::optional<int> nodes = {});

// A preset by name, or a file when `name_or_path` contains '/' or ends in ".json". `nodes`
// overrides the node count (presets describe one node). Unknown preset names list the known
// ones. Throws lagom::Error.
ClusterSpec load_cluster_spec(std::string_view name_or_path, std::optional<int> nodes = {});

// "NCCL_MIN_CTAS=8, NCCL_NTHREADS=256" (the spec's nccl_env in name order; "" when empty),
// led by "NCCL 2.18" when the spec's NCCL version is not the default.
std::string describe_nccl_env(const ClusterSpec& spec);

std::string_view to_string(IntraNodeKind kind);
std::string_view to_string(NicAffinity affinity);
std::string_view to_string(FabricKind kind);

}  // namespace lagom::topologies
