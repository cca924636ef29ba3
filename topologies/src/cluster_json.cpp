// Cluster format v1: a strict JSON reader. Unknown fields, wrong types and out-of-range values
// are errors that name the document, the JSON path and what was expected; cross-field rules are
// checked by validate() (cluster_spec.cpp).
#include <fmt/format.h>

#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "lagom/common/error.hpp"
#include "lagom/common/json_reader.hpp"
#include "lagom/topologies/cluster_spec.hpp"

namespace lagom::topologies {
namespace {

using json_reader::Ctx;
using json_reader::expect_object;
using json_reader::get_int;
using json_reader::get_string;
using json_reader::int_field;
using json_reader::optional_field;
using json_reader::require;
using json_reader::type_of;
using nlohmann::json;

std::string string_field(const Ctx& ctx, const json& obj, const char* key) {
  std::string s = get_string(ctx.at(key), require(ctx, obj, key));
  if (s.empty()) {
    ctx.at(key).fail("must not be empty");
  }
  return s;
}

// A finite number in [lo, hi]; `positive` excludes lo itself (bandwidths must be > 0).
double number_field(const Ctx& ctx, const json& obj, const char* key, double lo, double hi,
                    bool positive, std::string_view unit) {
  const Ctx c = ctx.at(key);
  const json& v = require(ctx, obj, key);
  if (!v.is_number()) {
    c.fail(fmt::format("expected a number of {}, got {}", unit, type_of(v)));
  }
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || (positive && d <= lo) || d > hi) {
    c.fail(fmt::format("must be {} {} and at most {} {}, got {}", positive ? ">" : ">=", lo, hi,
                       unit, v.dump()));
  }
  return d;
}

bool bool_field(const Ctx& ctx, const json& obj, const char* key) {
  return json_reader::get_bool(ctx.at(key), require(ctx, obj, key));
}

std::vector<std::string> sources_field(const Ctx& ctx, const json& obj) {
  const Ctx c = ctx.at("sources");
  const json& v = require(ctx, obj, "sources");
  if (!v.is_array() || v.empty()) {
    c.fail(
        fmt::format("expected a non-empty array of source ids (keys of the top-level "
                    "'sources' object), got {}",
                    v.is_array() ? "an empty array" : type_of(v)));
  }
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < v.size(); ++i) {
    ids.push_back(get_string(c.at(i), v[i]));
  }
  return ids;
}

std::vector<int> int_array(const Ctx& ctx, const json& v, int lo, int hi) {
  if (!v.is_array()) {
    ctx.fail(fmt::format("expected an array of integers, got {}", type_of(v)));
  }
  std::vector<int> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    out.push_back(get_int(ctx.at(i), v[i], lo, hi));
  }
  return out;
}

template <typename E>
E enum_field(const Ctx& ctx, const json& obj, const char* key,
             std::initializer_list<std::pair<std::string_view, E>> values) {
  const std::string s = get_string(ctx.at(key), require(ctx, obj, key));
  std::vector<std::string> names;
  for (const auto& [name, value] : values) {
    if (s == name) {
      return value;
    }
    names.push_back(fmt::format("\"{}\"", name));
  }
  ctx.at(key).fail(
      fmt::format("unknown value \"{}\" (expected one of {})", s, fmt::join(names, ", ")));
}

constexpr double kMaxBandwidthGBps = 1.0e5;  // 100 TB/s per link: certainly a unit mistake above
// 1 MB/s: below it a link is a unit mistake too, and times computed from it would print hundreds
// of digits.
constexpr double kMinBandwidthGBps = 1.0e-3;
constexpr double kMaxLatencyUs = 1.0e6;

NvLinkSpec parse_nvlink(const Ctx& ctx, const json& v) {
  expect_object(ctx, v, {"generation", "links_per_gpu", "link_bandwidth_GBps", "latency_us"});
  NvLinkSpec n;
  n.generation = int_field(ctx, v, "generation", 1, 6);
  n.links_per_gpu = int_field(ctx, v, "links_per_gpu", 1, 64);
  n.link_bandwidth_GBps = number_field(ctx, v, "link_bandwidth_GBps", kMinBandwidthGBps,
                                       kMaxBandwidthGBps, false, "GB/s");
  n.latency_us = number_field(ctx, v, "latency_us", 0, kMaxLatencyUs, false, "us");
  return n;
}

IntraNodeSpec parse_intra(const Ctx& ctx, const json& v) {
  expect_object(ctx, v, {"kind", "nvlink", "nvswitch", "pairs", "sources"});
  IntraNodeSpec s;
  s.kind = enum_field<IntraNodeKind>(ctx, v, "kind",
                                     {{"nvswitch", IntraNodeKind::kNvSwitch},
                                      {"nvlink-pairs", IntraNodeKind::kNvLinkPairs},
                                      {"pcie", IntraNodeKind::kPcie}});
  if (const json* n = optional_field(v, "nvlink")) {
    s.nvlink = parse_nvlink(ctx.at("nvlink"), *n);
  }
  if (const json* n = optional_field(v, "nvswitch")) {
    const Ctx c = ctx.at("nvswitch");
    expect_object(c, *n, {"chips", "nvls"});
    NvSwitchSpec sw;
    sw.chips = int_field(c, *n, "chips", 1, 1024);
    sw.nvls = bool_field(c, *n, "nvls");
    s.nvswitch = sw;
  }
  if (const json* p = optional_field(v, "pairs")) {
    const Ctx c = ctx.at("pairs");
    if (!p->is_array()) {
      c.fail(fmt::format("expected an array of [gpu, gpu] pairs, got {}", type_of(*p)));
    }
    for (std::size_t i = 0; i < p->size(); ++i) {
      const json& pair = (*p)[i];
      if (!pair.is_array() || pair.size() != 2) {
        c.at(i).fail(fmt::format("expected a pair [gpu, gpu], got {}", pair.dump()));
      }
      s.pairs.emplace_back(get_int(c.at(i).at(0), pair[0], 0, 1 << 20),
                           get_int(c.at(i).at(1), pair[1], 0, 1 << 20));
    }
  }
  s.sources = sources_field(ctx, v);
  return s;
}

PcieSpec parse_pcie(const Ctx& ctx, const json& v) {
  expect_object(ctx, v,
                {"generation", "lanes", "link_bandwidth_GBps", "latency_us", "switches",
                 "gpu_attach", "sources"});
  PcieSpec p;
  p.generation = int_field(ctx, v, "generation", 1, 7);
  p.lanes = int_field(ctx, v, "lanes", 1, 32);
  p.link_bandwidth_GBps = number_field(ctx, v, "link_bandwidth_GBps", kMinBandwidthGBps,
                                       kMaxBandwidthGBps, false, "GB/s");
  p.latency_us = number_field(ctx, v, "latency_us", 0, kMaxLatencyUs, false, "us");
  {
    const Ctx c = ctx.at("switches");
    const json& sw = require(ctx, v, "switches");
    if (!sw.is_array()) {
      c.fail(fmt::format("expected an array of {{\"id\", \"upstream\"}} objects, got {}",
                         type_of(sw)));
    }
    for (std::size_t i = 0; i < sw.size(); ++i) {
      const Ctx ci = c.at(i);
      expect_object(ci, sw[i], {"id", "upstream"});
      p.switches.push_back({string_field(ci, sw[i], "id"), string_field(ci, sw[i], "upstream")});
    }
  }
  {
    const Ctx c = ctx.at("gpu_attach");
    const json& a = require(ctx, v, "gpu_attach");
    if (!a.is_array()) {
      c.fail(fmt::format("expected an array with one switch id or \"cpu<N>\" per GPU, got {}",
                         type_of(a)));
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      p.gpu_attach.push_back(get_string(c.at(i), a[i]));
    }
  }
  p.sources = sources_field(ctx, v);
  return p;
}

CpuSpec parse_cpu(const Ctx& ctx, const json& v) {
  expect_object(ctx, v,
                {"sockets", "vendor", "model", "interconnect", "interconnect_bandwidth_GBps",
                 "interconnect_latency_us", "sources"});
  CpuSpec c;
  c.sockets = int_field(ctx, v, "sockets", 1, 64);
  c.vendor = enum_field<nccl::CpuVendor>(ctx, v, "vendor",
                                         {{"intel", nccl::CpuVendor::kIntel},
                                          {"amd", nccl::CpuVendor::kAmd},
                                          {"other", nccl::CpuVendor::kOther}});
  c.model = string_field(ctx, v, "model");
  c.interconnect = string_field(ctx, v, "interconnect");
  c.interconnect_bandwidth_GBps =
      number_field(ctx, v, "interconnect_bandwidth_GBps", c.sockets > 1 ? kMinBandwidthGBps : 0,
                   kMaxBandwidthGBps, false, "GB/s");
  c.interconnect_latency_us =
      number_field(ctx, v, "interconnect_latency_us", 0, kMaxLatencyUs, false, "us");
  c.sources = sources_field(ctx, v);
  return c;
}

// The fat-tree fields of network.fabric (kind "fat-tree"); cross-field rules (a radix that
// holds the nodes) are the builder's, which knows the node count.
FatTreeSpec parse_fat_tree(const Ctx& c, const json& f) {
  FatTreeSpec t;
  t.tiers = int_field(c, f, "tiers", 2, 3);
  {
    const Ctx cr = c.at("radix");
    const json& r = require(c, f, "radix");
    if (r.is_array()) {
      if (r.size() != static_cast<std::size_t>(t.tiers)) {
        cr.fail(fmt::format("expected {} port counts (leaf, spine{}), got {}", t.tiers,
                            t.tiers == 3 ? ", core" : "", r.size()));
      }
      for (std::size_t i = 0; i < r.size(); ++i) {
        t.radix.push_back(get_int(cr.at(i), r[i], 2, 65536));
      }
    } else {
      t.radix.assign(static_cast<std::size_t>(t.tiers), get_int(cr, r, 2, 65536));
    }
  }
  if (optional_field(f, "port_speed_Gbps") != nullptr) {
    t.port_speed_Gbps = number_field(c, f, "port_speed_Gbps", 8 * kMinBandwidthGBps,
                                     8 * kMaxBandwidthGBps, false, "Gb/s");
  }
  t.rails = bool_field(c, f, "rails");
  const Ctx co = c.at("oversubscription");
  const json& o = require(c, f, "oversubscription");
  if (!o.is_array() || o.size() != static_cast<std::size_t>(t.tiers - 1)) {
    co.fail(fmt::format("expected an array of {} number{} (one per uplink stage: {}), got {}",
                        t.tiers - 1, t.tiers == 2 ? "" : "s",
                        t.tiers == 2 ? "leaf to spine" : "leaf to spine, spine to core",
                        o.is_array() ? fmt::format("{} entries", o.size()) : type_of(o)));
  }
  for (std::size_t i = 0; i < o.size(); ++i) {
    const json& x = o[i];
    if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() < 1.0 ||
        x.get<double>() > 1024.0) {
      co.at(i).fail(
          fmt::format("must be a number from 1 (non-blocking) to 1024, got {}", x.dump()));
    }
    t.oversubscription.push_back(x.get<double>());
  }
  if (optional_field(f, "nodes_per_leaf") != nullptr) {
    t.nodes_per_leaf = int_field(c, f, "nodes_per_leaf", 1, 4096);
  }
  if (optional_field(f, "leaves_per_pod") != nullptr) {
    if (t.tiers != 3) {
      c.at("leaves_per_pod").fail("only a 3-tier fabric has pods (tiers is 2)");
    }
    t.leaves_per_pod = int_field(c, f, "leaves_per_pod", 1, 4096);
  }
  return t;
}

NetworkSpec parse_network(const Ctx& ctx, const json& v) {
  expect_object(
      ctx, v,
      {"technology", "nic_model", "nic_speed_Gbps", "affinity", "nics", "fabric", "sources"});
  NetworkSpec n;
  n.technology = string_field(ctx, v, "technology");
  n.nic_model = string_field(ctx, v, "nic_model");
  n.nic_speed_Gbps = number_field(ctx, v, "nic_speed_Gbps", 8 * kMinBandwidthGBps,
                                  8 * kMaxBandwidthGBps, false, "Gb/s");
  n.affinity = enum_field<NicAffinity>(
      ctx, v, "affinity",
      {{"rail-optimized", NicAffinity::kRailOptimized}, {"shared", NicAffinity::kShared}});
  {
    const Ctx c = ctx.at("nics");
    const json& nics = require(ctx, v, "nics");
    if (!nics.is_array() || nics.empty()) {
      c.fail(
          fmt::format("expected a non-empty array of {{\"attach\", \"gpus\"[, \"count\"]}} "
                      "objects, got {}",
                      nics.is_array() ? "an empty array" : type_of(nics)));
    }
    for (std::size_t i = 0; i < nics.size(); ++i) {
      const Ctx ci = c.at(i);
      expect_object(ci, nics[i], {"attach", "gpus", "count"});
      NicSpec nic;
      nic.attach = string_field(ci, nics[i], "attach");
      nic.gpus = int_array(ci.at("gpus"), require(ci, nics[i], "gpus"), 0, 1 << 20);
      if (optional_field(nics[i], "count") != nullptr) {
        nic.count = int_field(ci, nics[i], "count", 1, kMaxNicsPerEntry);
      }
      n.nics.push_back(std::move(nic));
    }
  }
  {
    const Ctx c = ctx.at("fabric");
    const json& f = require(ctx, v, "fabric");
    n.fabric.kind = enum_field<FabricKind>(c, f, "kind",
                                           {{"rail-optimized", FabricKind::kRailOptimized},
                                            {"single-switch", FabricKind::kSingleSwitch},
                                            {"fat-tree", FabricKind::kFatTree}});
    if (n.fabric.kind == FabricKind::kFatTree) {
      expect_object(c, f,
                    {"kind", "switch_model", "latency_us", "tiers", "radix", "port_speed_Gbps",
                     "rails", "oversubscription", "nodes_per_leaf", "leaves_per_pod"});
      n.fabric.fat_tree = parse_fat_tree(c, f);
    } else {
      expect_object(c, f, {"kind", "switch_model", "oversubscription", "latency_us"});
      if (optional_field(f, "oversubscription") != nullptr) {
        n.fabric.oversubscription = number_field(c, f, "oversubscription", 1, 1024, false, "x");
      }
    }
    n.fabric.switch_model = string_field(c, f, "switch_model");
    n.fabric.latency_us = number_field(c, f, "latency_us", 0, kMaxLatencyUs, false, "us");
  }
  n.sources = sources_field(ctx, v);
  return n;
}

}  // namespace

ClusterSpec parse_cluster_json(std::string_view text, std::string_view origin,
                               std::optional<int> nodes) {
  const json doc = json_reader::parse_document(text, origin, kClusterFormat);
  const Ctx ctx{origin, ""};
  if (!doc.is_object()) {
    ctx.fail(fmt::format("expected a JSON object at the top level, got {}", type_of(doc)));
  }
  {
    const json& f = require(ctx, doc, "format");
    if (!f.is_string() || f.get<std::string>() != kClusterFormat) {
      ctx.at("format").fail(fmt::format("expected \"{}\", got {} (is this a cluster file?)",
                                        kClusterFormat, type_of(f)));
    }
    const json& v = require(ctx, doc, "version");
    if (!v.is_number_integer() || v.get<std::int64_t>() != kClusterVersion) {
      ctx.at("version").fail(fmt::format("unsupported version {}: this lagom reads version {}",
                                         v.dump(), kClusterVersion));
    }
  }
  expect_object(ctx, doc,
                {"format", "version", "name", "description", "gpu", "nodes", "intra_node", "pcie",
                 "cpu", "network", "sources", "assumptions", "nccl_env", "nccl_version"});

  ClusterSpec spec;
  spec.origin = std::string(origin);
  spec.name = string_field(ctx, doc, "name");
  spec.description = string_field(ctx, doc, "description");
  {
    const Ctx c = ctx.at("gpu");
    const json& g = require(ctx, doc, "gpu");
    expect_object(c, g, {"type", "compute_capability", "sources"});
    spec.gpu_type = string_field(c, g, "type");
    spec.compute_capability = int_field(c, g, "compute_capability", 30, 200);
    spec.gpu_sources = sources_field(c, g);
  }
  {
    const Ctx c = ctx.at("nodes");
    const json& n = require(ctx, doc, "nodes");
    expect_object(c, n, {"count", "gpus_per_node", "sources"});
    spec.nodes = int_field(c, n, "count", 1, kMaxNodes);
    spec.gpus_per_node = int_field(c, n, "gpus_per_node", 1, 1024);
    spec.nodes_sources = sources_field(c, n);
  }
  spec.intra_node = parse_intra(ctx.at("intra_node"), require(ctx, doc, "intra_node"));
  spec.pcie = parse_pcie(ctx.at("pcie"), require(ctx, doc, "pcie"));
  spec.cpu = parse_cpu(ctx.at("cpu"), require(ctx, doc, "cpu"));
  if (const json* n = optional_field(doc, "network")) {
    spec.network = parse_network(ctx.at("network"), *n);
  }
  {
    const Ctx c = ctx.at("sources");
    const json& s = require(ctx, doc, "sources");
    if (!s.is_object() || s.empty()) {
      c.fail(fmt::format("expected a non-empty object of id: citation, got {}",
                         s.is_object() ? "an empty object" : type_of(s)));
    }
    for (const auto& [id, citation] : s.items()) {
      spec.sources[id] = string_field(c, s, id.c_str());
    }
  }
  if (const json* a = optional_field(doc, "assumptions")) {
    const Ctx c = ctx.at("assumptions");
    if (!a->is_array()) {
      c.fail(fmt::format("expected an array of strings, got {}", type_of(*a)));
    }
    for (std::size_t i = 0; i < a->size(); ++i) {
      spec.assumptions.push_back(get_string(c.at(i), (*a)[i]));
    }
  }
  if (const json* e = optional_field(doc, "nccl_env")) {
    const Ctx c = ctx.at("nccl_env");
    if (!e->is_object()) {
      c.fail(fmt::format("expected an object of NCCL_NAME: value, got {}", type_of(*e)));
    }
    for (const auto& [name, value] : e->items()) {
      if (value.is_string()) {
        spec.nccl_env[name] = value.get<std::string>();
      } else if (value.is_number_integer()) {
        spec.nccl_env[name] = std::to_string(value.get<std::int64_t>());
      } else {
        c.at(name).fail(fmt::format("expected a string or an integer, got {}", type_of(value)));
      }
    }
  }
  if (const json* v = optional_field(doc, "nccl_version")) {
    const Ctx c = ctx.at("nccl_version");
    const std::string named = get_string(c, *v);
    try {
      spec.nccl_version = nccl::version_named(named);
    } catch (const Error& e) {
      c.fail(e.what());
    }
  }
  if (nodes) {
    spec.nodes = *nodes;  // before validate(): a fat-tree is sized for the node count in use
  }
  validate(spec);
  return spec;
}

}  // namespace lagom::topologies
