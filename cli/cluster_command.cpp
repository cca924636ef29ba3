// `lagom cluster`: list the built-in cluster presets, or describe one cluster and what the
// communicator of all its GPUs looks like to the collective model.
#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>

#include "command_line.hpp"
#include "commands.hpp"
#include "hardware_options.hpp"
#include "lagom/common/build_info.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/common/json_reader.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/cluster_spec.hpp"
#include "lagom/topologies/communicator.hpp"
#include "memory_budget.hpp"
#include "report.hpp"

namespace lagom::cli {

namespace po = boost::program_options;
namespace topo = lagom::topologies;

namespace {

using Json = nlohmann::ordered_json;

constexpr int kLabelWidth = 14;
constexpr std::size_t kTextWidth = 100;
// Joins a number to its unit so that wrap() never splits them; printed as a space.
constexpr char kHardSpace = '\x1f';

// "1 node", "2 nodes".
std::string count_of(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// The first sentence of a preset description ("NVIDIA DGX H100: ... fabric."), for --list.
std::string first_sentence(const std::string& text) {
  const std::size_t end = text.find(". ");
  return end == std::string::npos ? text : text.substr(0, end + 1);
}

// `text` broken into lines of at most kTextWidth columns, the first after `first` and the others
// indented by `indent` spaces.
std::string wrap(std::string_view first, std::size_t indent, const std::string& text) {
  std::string out(first);
  std::size_t col = out.size();
  std::istringstream words(text);
  std::string word;
  bool line_start = true;
  while (words >> word) {
    if (!line_start && col + 1 + word.size() > kTextWidth) {
      out += "\n" + std::string(indent, ' ');
      col = indent;
      line_start = true;
    }
    if (!line_start) {
      out += ' ';
      ++col;
    }
    out += word;
    col += word.size();
    line_start = false;
  }
  std::replace(out.begin(), out.end(), kHardSpace, ' ');
  return out;
}

void print_field(std::string_view label, const std::string& value) {
  fmt::print("{}\n", wrap(fmt::format("{:<{}}", label, kLabelWidth), kLabelWidth, value));
}

// "450", "56.25", "12.5": bandwidths without trailing zeros.
std::string num(double v) {
  return fmt::format("{:g}", v);
}

std::string bandwidth(double GBps) {
  return std::isinf(GBps) ? std::string("unlimited")
                          : fmt::format("{}{}GB/s", num(GBps), kHardSpace);
}

std::string gbit(double Gbps) {
  return fmt::format("{}{}Gb/s", num(Gbps), kHardSpace);
}

Json bandwidth_json(double GBps) {
  return std::isinf(GBps) ? Json(nullptr) : Json(GBps);
}

Json class_json(const std::optional<nccl::LinkClass>& cls) {
  return cls ? Json(std::string(to_string(*cls))) : Json(nullptr);
}

std::string classes_text(const std::vector<nccl::LinkClass>& classes) {
  std::vector<std::string_view> names;
  names.reserve(classes.size());
  for (nccl::LinkClass c : classes) {
    names.push_back(to_string(c));
  }
  return names.empty() ? std::string("nothing") : fmt::format("{}", fmt::join(names, ", "));
}

// Per GPU and direction: NVLink to the switch plane or to the bridged peer, or the PCIe link.
double gpu_intra_bandwidth_GBps(const topo::ClusterSpec& s) {
  if (s.intra_node.nvlink) {
    return s.intra_node.nvlink->links_per_gpu * s.intra_node.nvlink->link_bandwidth_GBps;
  }
  return s.pcie.link_bandwidth_GBps;
}

std::string intra_text(const topo::ClusterSpec& s) {
  const topo::IntraNodeSpec& in = s.intra_node;
  if (in.kind == topo::IntraNodeKind::kPcie) {
    return fmt::format("PCIe only: {} per GPU per direction (Gen{} x{})",
                       bandwidth(s.pcie.link_bandwidth_GBps), s.pcie.generation, s.pcie.lanes);
  }
  const topo::NvLinkSpec& nv = *in.nvlink;
  const std::string links = fmt::format(
      "NVLink{}, {} links x {} = {} per GPU per direction", nv.generation, nv.links_per_gpu,
      bandwidth(nv.link_bandwidth_GBps), bandwidth(gpu_intra_bandwidth_GBps(s)));
  if (in.kind == topo::IntraNodeKind::kNvSwitch) {
    return fmt::format("NVSwitch ({} chips, {}): {}", in.nvswitch->chips,
                       in.nvswitch->nvls ? "NVLS" : "no NVLS", links);
  }
  std::vector<std::string> pairs;
  for (const auto& [a, b] : in.pairs) {
    pairs.push_back(fmt::format("({},{})", a, b));
  }
  return fmt::format("NVLink bridges on pairs {}: {}; other GPU pairs over PCIe",
                     fmt::join(pairs, " "), links);
}

// Every NIC entry's count if they agree, else 0.
int uniform_count(const topo::NetworkSpec& net) {
  for (const topo::NicSpec& nic : net.nics) {
    if (nic.count != net.nics.front().count) {
      return 0;
    }
  }
  return net.nics.front().count;
}

std::string network_text(const topo::ClusterSpec& s) {
  const topo::NetworkSpec& net = s.network;
  const int nics = s.nics_per_node();
  std::string text = fmt::format("{}x {} {} ({}) per node", nics, gbit(net.nic_speed_Gbps),
                                 net.nic_model, net.technology);
  const int count = uniform_count(net);
  if (count > 1) {
    text += fmt::format(", in {} groups of {}", net.nics.size(), count);
  } else if (count == 0) {
    text += fmt::format(", in {} groups", net.nics.size());
  }
  const std::string unit = nics == static_cast<int>(net.nics.size()) ? "NIC" : "group";
  if (net.affinity == topo::NicAffinity::kRailOptimized) {
    text += fmt::format(", one {} per GPU", unit);
  } else {
    std::vector<std::string> served;
    for (const topo::NicSpec& nic : net.nics) {
      served.push_back(std::to_string(nic.gpus.size()));
    }
    text += fmt::format(", GPUs per {}: {}", unit, fmt::join(served, ", "));
  }
  const double node_Gbps = nics * net.nic_speed_Gbps;
  text +=
      fmt::format("; {} = {} per node per direction", gbit(node_Gbps), bandwidth(node_Gbps / 8.0));
  return text;
}

std::string_view vendor_name(nccl::CpuVendor v) {
  switch (v) {
    case nccl::CpuVendor::kIntel:
      return "Intel";
    case nccl::CpuVendor::kAmd:
      return "AMD";
    case nccl::CpuVendor::kMixed:
    case nccl::CpuVendor::kOther:
      break;
  }
  return "";
}

std::string cables(int n) {
  return fmt::format("{} cable{}", n, n == 1 ? "" : "s");
}

std::string fabric_text(const topo::ClusterSpec& s) {
  const topo::FabricSpec& f = s.network.fabric;
  std::string text = fmt::format("{}: {}", to_string(f.kind), f.switch_model);
  if (f.kind == topo::FabricKind::kRailOptimized) {
    text += fmt::format(", oversubscription {}", num(f.oversubscription));
  }
  if (f.kind == topo::FabricKind::kFatTree) {
    const topo::FatTreeLayout l = topo::fat_tree_layout(s);
    std::vector<std::string> over;
    for (double o : f.fat_tree.oversubscription) {
      over.push_back(num(o) + ":1");
    }
    text += fmt::format(
        ", {} tiers, {} Gb/s ports; {} leaves ({} nodes each{}: {} NIC ports, {} uplinks), ",
        l.tiers, num(l.port_GBps * 8.0), l.leaves, l.nodes_per_leaf,
        l.rails > 1 ? fmt::format(", one leaf per rail of {}", l.rails) : std::string(),
        l.leaf_down, l.leaf_up);
    if (l.tiers == 2) {
      text += fmt::format("{} spines ({} to each leaf)", l.spines(), cables(l.leaf_spine_cables));
    } else {
      text += fmt::format(
          "{} pod{} of {} leaves under {} spines ({} to each leaf, {} uplinks), {} cores "
          "({} per plane, {} to each spine)",
          l.pods, l.pods == 1 ? "" : "s", l.leaves_per_pod, l.spines_per_pod,
          cables(l.leaf_spine_cables), l.spine_up, l.cores(), l.cores_per_plane,
          cables(l.spine_core_cables));
    }
    // What was built, in bandwidth: uplinks are whole ports (rounded up) and may run at another
    // speed than the NICs.
    const std::vector<double> built = topo::built_oversubscription(s, l);
    std::vector<std::string> real;
    bool differs = false;
    for (std::size_t i = 0; i < built.size(); ++i) {
      real.push_back(fmt::format("{:.3g}:1", built[i]));
      differs = differs || std::abs(built[i] - f.fat_tree.oversubscription[i]) >
                               1e-3 * f.fat_tree.oversubscription[i];
    }
    text += fmt::format("; oversubscription {}", fmt::join(over, ", "));
    if (differs) {
      text += fmt::format(" (as built, in bandwidth: {})", fmt::join(real, ", "));
    }
  }
  return text + fmt::format("; {}{}us per network link", num(f.latency_us), kHardSpace);
}

Json cluster_json(const topo::ClusterSpec& s) {
  Json c;
  c["name"] = s.name;
  c["description"] = s.description;
  c["gpu"] = {{"type", s.gpu_type}, {"compute_capability", s.compute_capability}};
  c["nodes"] = s.nodes;
  c["gpus_per_node"] = s.gpus_per_node;
  c["gpus"] = s.gpu_count();
  c["nccl_version"] = std::string(nccl::to_string(s.nccl_version));
  Json in;
  in["kind"] = std::string(to_string(s.intra_node.kind));
  if (s.intra_node.nvlink) {
    in["nvlink_generation"] = s.intra_node.nvlink->generation;
    in["links_per_gpu"] = s.intra_node.nvlink->links_per_gpu;
    in["link_bandwidth_GBps"] = s.intra_node.nvlink->link_bandwidth_GBps;
  }
  if (s.intra_node.nvswitch) {
    in["nvswitch_chips"] = s.intra_node.nvswitch->chips;
    in["nvls"] = s.intra_node.nvswitch->nvls;
  }
  if (!s.intra_node.pairs.empty()) {
    in["pairs"] = s.intra_node.pairs;
  }
  in["gpu_bandwidth_GBps"] = gpu_intra_bandwidth_GBps(s);
  c["intra_node"] = std::move(in);
  c["pcie"] = {{"generation", s.pcie.generation},
               {"lanes", s.pcie.lanes},
               {"link_bandwidth_GBps", s.pcie.link_bandwidth_GBps},
               {"switches", s.pcie.switches.size()}};
  c["cpu"] = {{"sockets", s.cpu.sockets},
              {"vendor", std::string(to_string(s.cpu.vendor))},
              {"model", s.cpu.model},
              {"interconnect", s.cpu.interconnect},
              {"interconnect_bandwidth_GBps", s.cpu.interconnect_bandwidth_GBps}};
  if (s.network.nics.empty()) {
    c["network"] = nullptr;
  } else {
    const topo::NetworkSpec& net = s.network;
    Json nics = Json::array();
    for (const topo::NicSpec& nic : net.nics) {
      nics.push_back({{"attach", nic.attach}, {"gpus", nic.gpus}, {"count", nic.count}});
    }
    const double node_Gbps = s.nics_per_node() * net.nic_speed_Gbps;
    c["network"] = {{"technology", net.technology},
                    {"nic_model", net.nic_model},
                    {"nic_speed_Gbps", net.nic_speed_Gbps},
                    {"nics_per_node", s.nics_per_node()},
                    {"affinity", std::string(to_string(net.affinity))},
                    {"nics", std::move(nics)},
                    {"node_bandwidth_Gbps", node_Gbps},
                    {"node_bandwidth_GBps", node_Gbps / 8.0},
                    {"fabric",
                     {{"kind", std::string(to_string(net.fabric.kind))},
                      {"switch_model", net.fabric.switch_model},
                      {"oversubscription", net.fabric.oversubscription},
                      {"latency_us", net.fabric.latency_us}}}};
    if (net.fabric.kind == topo::FabricKind::kFatTree) {
      const topo::FatTreeLayout l = topo::fat_tree_layout(s);
      Json& f = c["network"]["fabric"];
      f["oversubscription"] = net.fabric.fat_tree.oversubscription;
      f["radix"] = net.fabric.fat_tree.radix;
      f["layout"] = {{"tiers", l.tiers},
                     {"rails", l.rails},
                     {"port_GBps", l.port_GBps},
                     {"nodes_per_leaf", l.nodes_per_leaf},
                     {"leaves", l.leaves},
                     {"leaf_nic_ports", l.leaf_down},
                     {"leaf_uplinks", l.leaf_up},
                     {"leaves_per_pod", l.leaves_per_pod},
                     {"pods", l.pods},
                     {"spines_per_pod", l.spines_per_pod},
                     {"spines", l.spines()},
                     {"leaf_spine_cables", l.leaf_spine_cables},
                     {"spine_uplinks", l.spine_up},
                     {"cores", l.cores()},
                     {"cores_per_plane", l.cores_per_plane},
                     {"spine_core_cables", l.spine_core_cables},
                     {"oversubscription_built", topo::built_oversubscription(s, l)}};
    }
  }
  c["assumptions"] = s.assumptions;
  c["sources"] = s.sources;
  return c;
}

Json algorithm_json(const topo::AlgorithmPaths& a) {
  Json j;
  j["available"] = a.available;
  if (a.available) {
    Json classes = Json::array();
    for (nccl::LinkClass c : a.link_classes) {
      classes.push_back(std::string(to_string(c)));
    }
    j["link_classes"] = std::move(classes);
    j["bottleneck"] = class_json(a.bottleneck_class);
    j["bottleneck_GBps"] = bandwidth_json(a.bottleneck_GBps);
  }
  return j;
}

Json communicator_json(const topo::CommunicatorInfo& i) {
  Json j;
  j["ranks"] = i.nranks;
  j["nodes"] = i.nnodes;
  j["ranks_per_node"] = i.ranks_per_node_max;
  j["uniform"] = i.uniform;
  j["intra_node"] = {{"path_type", std::string(to_string(i.intra_path_type))},
                     {"bandwidth_GBps", bandwidth_json(i.intra_bw_GBps)},
                     {"bottleneck", class_json(i.intra_bottleneck_class)}};
  j["inter_node"] = {{"bandwidth_per_gpu_GBps", i.inter_bw_GBps},
                     {"bottleneck", class_json(i.inter_bottleneck_class)},
                     {"nic_path_type", std::string(to_string(i.nic_path_type))}};
  j["nvls_available"] = i.nvls_available;
  j["algorithms"] = {{"ring", algorithm_json(i.ring)},
                     {"tree", algorithm_json(i.tree)},
                     {"nvls", algorithm_json(i.nvls)}};
  j["nccl_search_estimate"] = {{"type_intra", std::string(to_string(i.nccl.type_intra))},
                               {"type_inter", std::string(to_string(i.nccl.type_inter))},
                               {"bw_intra_GBps", i.nccl.bw_intra_GBps},
                               {"bw_inter_GBps", i.nccl.bw_inter_GBps},
                               {"channels", i.nccl.channels}};
  return j;
}

std::string algorithm_text(const topo::AlgorithmPaths& a) {
  if (!a.available) {
    return "not available";
  }
  if (!a.bottleneck_class) {
    return "crosses nothing (one rank)";
  }
  return fmt::format("{} per GPU per direction, limited by {}; crosses {}",
                     bandwidth(a.bottleneck_GBps), to_string(*a.bottleneck_class),
                     classes_text(a.link_classes));
}

void print_communicator(const topo::CommunicatorInfo& i, nccl::Version version) {
  print_field("communicator",
              fmt::format("all {} GPUs: {} x {}", i.nranks, count_of(i.nnodes, "node", "nodes"),
                          count_of(i.ranks_per_node_max, "rank", "ranks")));
  print_field("  intra-node",
              i.intra_bottleneck_class
                  ? fmt::format("{}, {} per GPU per direction (ring step), limited by {}",
                                to_string(i.intra_path_type), bandwidth(i.intra_bw_GBps),
                                to_string(*i.intra_bottleneck_class))
                  : std::string("one rank per node"));
  print_field("  inter-node",
              i.nnodes > 1
                  ? fmt::format("{} per GPU per direction, limited by {}; GPU to NIC {}",
                                bandwidth(i.inter_bw_GBps), to_string(*i.inter_bottleneck_class),
                                to_string(i.nic_path_type))
                  : std::string("none (one node)"));
  print_field("  ring", algorithm_text(i.ring));
  print_field("  tree", algorithm_text(i.tree));
  print_field("  nvls", algorithm_text(i.nvls));
  print_field(
      "  nccl search",
      fmt::format("estimate: {}, bwIntra {} / bwInter {} per channel, "
                  "typeIntra {}, typeInter {} (NCCL {})",
                  count_of(static_cast<std::size_t>(i.nccl.channels), "channel", "channels"),
                  bandwidth(i.nccl.bw_intra_GBps), bandwidth(i.nccl.bw_inter_GBps),
                  to_string(i.nccl.type_intra), to_string(i.nccl.type_inter),
                  nccl::to_string(version)));
}

// The document the spec was read from, for the input hash.
std::string document_text(const topo::ClusterSpec& s) {
  constexpr std::string_view kPreset = "preset:";
  if (s.origin.starts_with(kPreset)) {
    return std::string(topo::cluster_preset_text(s.origin.substr(kPreset.size())));
  }
  return json_reader::read_text_file(s.origin, "cluster file");
}

int list_presets(bool json) {
  const std::vector<std::string> names = topo::list_cluster_presets();
  if (json) {
    Json presets = Json::array();
    for (const std::string& name : names) {
      const topo::ClusterSpec s = topo::load_cluster_spec(name);
      presets.push_back({{"name", name},
                         {"description", first_sentence(s.description)},
                         {"gpus_per_node", s.gpus_per_node},
                         {"gpu_type", s.gpu_type}});
    }
    Json out;
    out["context"] = context_block("cluster --list");
    out["presets"] = std::move(presets);
    std::cout << out.dump(1) << "\n";
    return kExitOk;
  }
  for (const std::string& name : names) {
    fmt::print("{:<12} {}\n", name, first_sentence(topo::load_cluster_spec(name).description));
  }
  return kExitOk;
}

}  // namespace

int cluster_command(const std::vector<std::string>& args) {
  std::string cluster_name;
  NodeCount nodes;
  HardwareOptions what_if;
  std::string export_path;
  po::options_description desc(
      "Usage: lagom cluster PRESET|FILE [--nodes N] [--set PATH=VALUE] [--scale PATH=FACTOR]\n"
      "                     [--json] [--export FILE]\n"
      "       lagom cluster --list [--json]\n\n"
      "Describes a cluster (a built-in preset or a cluster JSON file, docs/formats/cluster.md):\n"
      "GPU type, nodes x GPUs, the intra-node fabric and its per-GPU bandwidth, the NICs and the\n"
      "network, and what the communicator of all its GPUs looks like to the collective model\n"
      "(path types, ring/tree/NVLS bottlenecks, an estimate of NCCL's topology search).\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "list", "list the built-in cluster presets with one-line descriptions")(
      "cluster", po::value(&cluster_name), "cluster preset name or JSON file (or give it first)")(
      "nodes", po::value(&nodes), "number of nodes (default: the cluster's, 1 for presets)")(
      "json", "print a JSON object (with a \"context\" block) instead of the description")(
      "set", po::value(&what_if.set)->composing(),
      "PATH=VALUE: what-if, set a cluster field, e.g. network.nic_speed_Gbps=800 (repeatable)")(
      "scale", po::value(&what_if.scale)->composing(),
      "PATH=FACTOR: what-if, multiply a numeric cluster field (repeatable, after every --set)")(
      "nccl-version", po::value(&what_if.nccl_version)->notifier(check_nccl_version),
      "the NCCL release whose topology search to estimate: 2.28 (default) or 2.18")(
      "export", po::value(&export_path),
      "write the cluster (with --nodes, --set and --scale applied) as a cluster JSON file that "
      "--cluster reads back");
  po::positional_options_description positional;
  positional.add("cluster", 1);
  po::variables_map vm;
  if (!parse_command_line(args, desc, vm, &positional)) {
    return kExitOk;  // --help
  }
  const bool json = vm.count("json") > 0;
  if (vm.count("list")) {
    if (vm.count("cluster") || vm.count("nodes")) {
      throw po::error("--list takes no cluster and no --nodes");
    }
    return list_presets(json);
  }
  if (cluster_name.empty()) {
    throw po::error(
        "no cluster given: name a preset (lagom cluster --list) or a cluster JSON file");
  }
  std::optional<int> node_count;
  if (nodes.given()) {
    node_count = nodes.value;
  }

  const bool edited = !what_if.set.empty() || !what_if.scale.empty() || !export_path.empty() ||
                      !what_if.nccl_version.empty();
  std::optional<topo::Cluster> loaded;
  if (edited) {
    what_if.cluster = cluster_name;
    what_if.nodes = nodes;
    nlohmann::ordered_json doc = overridden_cluster_document(what_if);
    if (!what_if.nccl_version.empty()) {
      try {
        doc["nccl_version"] = nccl::to_string(nccl::version_named(what_if.nccl_version));
      } catch (const Error& e) {
        throw po::error(fmt::format("--nccl-version: {}", e.what()));
      }
    }
    const std::string text = doc.dump(1) + "\n";
    topo::ClusterSpec spec = topo::cluster_spec_of(
        {text,
         fmt::format(
             "{}{}", topo::cluster_document(cluster_name).origin,
             what_if.set.empty() && what_if.scale.empty() ? "" : " (with what-if overrides)")},
        node_count);
    check_cluster(cluster_name, spec);
    loaded.emplace(std::move(spec));
    if (!export_path.empty()) {
      write_file_with(
          export_path, [&](std::ostream& out) { out << text; }, "cluster file");
    }
  } else {
    topo::ClusterSpec spec = topo::load_cluster_spec(cluster_name, node_count);
    check_cluster(cluster_name, spec);
    loaded.emplace(std::move(spec));
  }
  const topo::Cluster& cluster = *loaded;
  const topo::ClusterSpec& s = cluster.spec();
  std::vector<int> ranks(static_cast<std::size_t>(cluster.gpu_count()));
  std::iota(ranks.begin(), ranks.end(), 0);
  const topo::CommunicatorInfo info = topo::describe_communicator(cluster, ranks);

  if (json) {
    Json out;
    out["context"] =
        context_block("cluster", {{"cluster", cluster_name},
                                  {"origin", s.origin},
                                  {"input_hash", "fnv1a64:" + hex64(fnv1a64(document_text(s)))},
                                  {"nodes", s.nodes}});
    out["cluster"] = cluster_json(s);
    out["communicator"] = communicator_json(info);
    std::cout << out.dump(1) << "\n";
    return kExitOk;
  }

  fmt::print("lagom {} ({}) cluster\n", version(), git_sha());
  print_field("cluster", fmt::format("{} ({})", s.name, s.origin));
  print_field("", s.description);
  print_field("gpus", fmt::format("{} x {} {} (compute capability {}.{}) = {}",
                                  count_of(s.nodes, "node", "nodes"), s.gpus_per_node, s.gpu_type,
                                  s.compute_capability / 10, s.compute_capability % 10,
                                  count_of(s.gpu_count(), "GPU", "GPUs")));
  print_field("intra-node", intra_text(s));
  print_field("pcie", fmt::format("Gen{} x{}, {} per link per direction; {}", s.pcie.generation,
                                  s.pcie.lanes, bandwidth(s.pcie.link_bandwidth_GBps),
                                  count_of(s.pcie.switches.size(), "switch", "switches")));
  const std::string_view vendor = vendor_name(s.cpu.vendor);
  print_field(
      "cpu",
      fmt::format("{}x {}{}{}{}", s.cpu.sockets, vendor, vendor.empty() ? "" : " ", s.cpu.model,
                  s.cpu.sockets > 1 ? fmt::format(", {} between sockets ({} for GPU peer traffic)",
                                                  s.cpu.interconnect,
                                                  bandwidth(s.cpu.interconnect_bandwidth_GBps))
                                    : std::string()));
  if (s.network.nics.empty()) {
    print_field("network", "none (a single node only)");
  } else {
    print_field("network", network_text(s));
    print_field("fabric", fabric_text(s));
  }
  fmt::print("\n");
  print_communicator(info, s.nccl_version);
  if (!s.assumptions.empty()) {
    fmt::print("\nassumptions\n");
    for (const std::string& a : s.assumptions) {
      fmt::print("{}\n", wrap("  - ", 4, a));
    }
  }
  fmt::print("\n{} sources cited; --json prints them\n", s.sources.size());
  return kExitOk;
}

}  // namespace lagom::cli
