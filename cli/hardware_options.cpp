// --cluster / --nodes / --profile, shared by the modelling commands.
#include "hardware_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <limits>
#include <tuple>

#include "lagom/common/error.hpp"
#include "lagom/common/json_override.hpp"
#include "lagom/common/json_reader.hpp"
#include "lagom/common/numbers.hpp"
#include "lagom/nccl/env.hpp"
#include "lagom/nccl/tuning.hpp"
#include "memory_budget.hpp"
#include "warnings.hpp"

namespace lagom::cli {

namespace po = boost::program_options;

void validate(boost::any& out, const std::vector<std::string>& values, NodeCount*, int) {
  po::validators::check_first_occurrence(out);
  const std::string& text = po::validators::get_single_string(values);
  try {
    out = NodeCount{
        static_cast<int>(parse_integer(text, "--nodes", 1, topologies::kMaxNodes, "nodes"))};
  } catch (const Error& e) {
    throw po::error(e.what());
  }
}

void check_nccl_version(const std::string& text) {
  try {
    (void)nccl::version_named(text);
  } catch (const Error& e) {
    throw po::error(fmt::format("--nccl-version: {}", e.what()));
  }
}

void add_hardware_options(po::options_description& desc, HardwareOptions& opts) {
  desc.add_options()(
      "cluster", po::value(&opts.cluster),
      "cluster preset (dgx-h100, hgx-h200, dgx-a100, a40-nvlink, a40-pcie, ...; `lagom "
      "cluster --list`) or cluster JSON file")(
      "nodes", po::value(&opts.nodes), "number of nodes (default: the cluster's, 1 for presets)")(
      "profile", po::value(&opts.profile),
      "hardware profile: built-in name (h100-sxm, ...) or JSON file (default: the built-in "
      "profile of the cluster's GPU type)")(
      "nccl-env", po::value(&opts.nccl_env)->composing(),
      "NAME=VALUE: an NCCL environment variable the job runs with, e.g. NCCL_MIN_CTAS=8 "
      "(repeatable; over the cluster file's nccl_env; docs/models.md §2)")(
      "nccl-version", po::value(&opts.nccl_version)->notifier(check_nccl_version),
      "the NCCL release to emulate: 2.28 (2.28.9, the default) or 2.18 (2.18.3, the Lagom "
      "paper's baseline); over the cluster file's nccl_version (docs/models.md §2)")(
      "set", po::value(&opts.set)->composing(),
      "PATH=VALUE: what-if, set a cluster or profile field before validation, e.g. "
      "network.nic_speed_Gbps=800 or gpu.sms=100 (repeatable; prefix cluster. or profile. when "
      "both have the path; docs/whatif.md)")(
      "scale", po::value(&opts.scale)->composing(),
      "PATH=FACTOR: what-if, multiply a numeric cluster or profile field, e.g. "
      "gpu.hbm_GBps=1.5 (repeatable, applied after every --set)")(
      "slow-gpu", po::value(&opts.slow_gpu)->composing(),
      "GPU=FACTOR: what-if, that GPU's compute kernels take FACTOR (>= 1) times as long, e.g. "
      "17=1.3; GPU is the cluster's number, node x GPUs per node + local (repeatable; not with "
      "--fold)")(
      "slow-link", po::value(&opts.slow_link)->composing(),
      "A-B=FACTOR: what-if, the link between parts A and B carries 1/FACTOR of its bandwidth, "
      "e.g. node1/nic0-leaf0=4 (names as `lagom cluster` and contention warnings print them; "
      "A,B when a name holds '-'; repeatable; not with --fold)")(
      "down-node", po::value(&opts.down_node)->composing(),
      "N: what-if, node N is down: a generated step (--model) drops the data-parallel replicas "
      "that use it and runs on the rest (repeatable)");
}

void refuse_unsupported_what_ifs(const HardwareOptions& opts, WhatIfSupport supported,
                                 std::string_view why) {
  for (const auto& [flag, given, ok] :
       {std::tuple<const char*, bool, bool>{"--slow-gpu", !opts.slow_gpu.empty(),
                                            supported.slow_gpu},
        {"--slow-link", !opts.slow_link.empty(), supported.slow_link},
        {"--down-node", !opts.down_node.empty(), supported.down_node}}) {
    if (given && !ok) {
      throw po::error(fmt::format("{} does not apply here: {}", flag, why));
    }
  }
}

std::vector<int> down_nodes(const HardwareOptions& opts, int nodes) {
  std::vector<int> out;
  for (const std::string& text : opts.down_node) {
    out.push_back(static_cast<int>(parse_integer(text, "--down-node", 0, nodes - 1, "node")));
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw Error(
        fmt::format("--down-node {}: given twice", *std::adjacent_find(out.begin(), out.end())));
  }
  return out;
}

namespace {

namespace jo = json_override;

struct Documents {
  topologies::ClusterDocument cluster;
  nlohmann::ordered_json cluster_json;
  std::string profile_origin;
  nlohmann::ordered_json profile_json;
  std::vector<std::string> applied;
};

// Which document an override names: an explicit "cluster." / "profile." prefix, else the one
// that has the path; lagom::Error for a path in neither (with the nearest valid ones) or both.
nlohmann::ordered_json& target_of(Documents& d, jo::Override& o) {
  for (auto [prefix, doc] :
       {std::pair<std::string_view, nlohmann::ordered_json*>{"cluster.", &d.cluster_json},
        {"profile.", &d.profile_json}}) {
    if (o.path.starts_with(prefix) && !jo::has_path(*doc, o.path)) {
      o.path = o.path.substr(prefix.size());
      return *doc;
    }
  }
  const bool in_cluster = jo::has_path(d.cluster_json, o.path);
  const bool in_profile = jo::has_path(d.profile_json, o.path);
  if (in_cluster && in_profile) {
    throw Error(
        fmt::format("{}: both the cluster ({}) and the profile ({}) have '{}': write "
                    "cluster.{} or profile.{}",
                    o.text, d.cluster.origin, d.profile_origin, o.path, o.path, o.path));
  }
  if (in_cluster || in_profile) {
    return in_cluster ? d.cluster_json : d.profile_json;
  }
  std::vector<std::string> candidates = jo::paths(d.cluster_json);
  const std::vector<std::string> more = jo::paths(d.profile_json);
  candidates.insert(candidates.end(), more.begin(), more.end());
  std::erase_if(candidates, [](const std::string& p) {
    return p.starts_with("sources") || p.starts_with("assumptions") || p == "description";
  });
  throw Error(
      fmt::format("{}: no field '{}' in the cluster ({}) or the profile ({}); nearest: "
                  "{} (lagom cluster --export and docs/formats/ list them all)",
                  o.text, o.path, d.cluster.origin, d.profile_origin,
                  fmt::join(jo::nearest(o.path, candidates), ", ")));
}

Documents overridden(const HardwareOptions& opts, bool cluster_only = false) {
  Documents d;
  d.cluster = topologies::cluster_document(opts.cluster);
  d.cluster_json =
      json_reader::parse_ordered_document(d.cluster.text, d.cluster.origin, "lagom.cluster");
  // The profile as the cluster's GPU type (or --profile) gives it, as a document.
  const topologies::ClusterSpec plain = topologies::cluster_spec_of(d.cluster);
  const hardware::HardwareProfile p = opts.profile.empty()
                                          ? hardware::default_profile_for_gpu(plain.gpu_type)
                                          : hardware::load_profile(opts.profile);
  d.profile_origin = p.origin;
  d.profile_json = nlohmann::ordered_json::parse(hardware::profile_to_json(p));
  std::vector<jo::Override> all;
  for (const std::string& s : opts.set) {
    all.push_back(jo::parse(jo::Op::kSet, s));
  }
  for (const std::string& s : opts.scale) {
    all.push_back(jo::parse(jo::Op::kScale, s));
  }
  for (jo::Override& o : all) {
    nlohmann::ordered_json& doc = target_of(d, o);
    if (&doc == &d.cluster_json && o.path == "nodes.count" && opts.nodes.given()) {
      throw Error(fmt::format("{} and --nodes {} both set the node count: give one", o.text,
                              opts.nodes.value));
    }
    if (cluster_only && &doc != &d.cluster_json) {
      throw Error(fmt::format("{}: '{}' is a field of the profile ({}), not of the cluster", o.text,
                              o.path, d.profile_origin));
    }
    jo::apply(doc, o, &doc == &d.cluster_json ? d.cluster.origin : d.profile_origin);
    d.applied.push_back(o.text);
  }
  return d;
}

}  // namespace

nlohmann::ordered_json overridden_cluster_document(const HardwareOptions& opts) {
  Documents d = overridden(opts, /*cluster_only=*/true);
  if (opts.nodes.given()) {
    d.cluster_json["nodes"]["count"] = opts.nodes.value;
  }
  if (!d.applied.empty() && d.cluster_json.contains("description") &&
      d.cluster_json["description"].is_string()) {
    d.cluster_json["description"] =
        fmt::format("{} What-if: {}.", d.cluster_json["description"].get<std::string>(),
                    fmt::join(d.applied, ", "));
  }
  // Checked as load_hardware would read it back.
  (void)topologies::cluster_spec_of({d.cluster_json.dump(1), d.cluster.origin});
  return d.cluster_json;
}

namespace {

// The cluster of `opts` with every what-if applied (--set/--scale through `docs`, slow parts,
// --nccl-env, --nccl-version), its NCCL environment checked.
topologies::Cluster cluster_of(const HardwareOptions& opts, std::optional<Documents>& docs) {
  if (opts.cluster.empty()) {
    throw Error("--cluster is required (a preset such as dgx-h100, or a cluster JSON file)");
  }
  std::optional<int> nodes;
  if (opts.nodes.given()) {
    nodes = opts.nodes.value;
  }
  if (!opts.set.empty() || !opts.scale.empty()) {
    docs = overridden(opts);
  }
  topologies::ClusterSpec cluster_spec =
      docs ? topologies::cluster_spec_of(
                 {docs->cluster_json.dump(1), docs->cluster.origin + " (with what-if overrides)"},
                 nodes)
           : topologies::load_cluster_spec(opts.cluster, nodes);
  check_cluster(opts.cluster, cluster_spec);
  // What-ifs on single parts: checked against the graph when it is built (topologies::Cluster).
  for (const std::string& text : opts.slow_gpu) {
    const auto eq = text.rfind('=');
    if (eq == std::string::npos) {
      throw Error(fmt::format("--slow-gpu '{}': expected GPU=FACTOR, e.g. 17=1.3", text));
    }
    const std::string what = fmt::format("--slow-gpu '{}'", text);
    cluster_spec.slow_gpus.push_back(
        {static_cast<int>(
             parse_integer(text.substr(0, eq), what, 0, cluster_spec.gpu_count() - 1, "GPU")),
         parse_real(text.substr(eq + 1), what, 1, 1e6, "times as long")});
  }
  for (const std::string& text : opts.slow_link) {
    const auto eq = text.rfind('=');
    const std::string ends = text.substr(0, eq);
    const auto sep = ends.find(',') != std::string::npos ? ends.find(',') : ends.find('-');
    if (eq == std::string::npos || sep == std::string::npos || sep == 0 || sep + 1 == ends.size()) {
      throw Error(fmt::format(
          "--slow-link '{}': expected A-B=FACTOR (or A,B=FACTOR), e.g. node1/nic0-leaf0=4", text));
    }
    cluster_spec.slow_links.push_back(
        {ends.substr(0, sep), ends.substr(sep + 1),
         parse_real(text.substr(eq + 1), fmt::format("--slow-link '{}'", text), 1, 1e6,
                    "times less bandwidth")});
  }
  topologies::Cluster cluster(std::move(cluster_spec));
  if (!opts.nccl_env.empty() || !opts.nccl_version.empty()) {
    topologies::ClusterSpec spec = cluster.spec();
    if (!opts.nccl_version.empty()) {
      try {
        spec.nccl_version = nccl::version_named(opts.nccl_version);
      } catch (const Error& e) {
        throw Error(fmt::format("--nccl-version: {}", e.what()));
      }
    }
    for (const std::string& kv : opts.nccl_env) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw Error(fmt::format("--nccl-env '{}': expected NAME=VALUE", kv));
      }
      spec.nccl_env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    cluster = topologies::Cluster(std::move(spec));
  }
  if (cluster.spec().nccl_version == nccl::Version::k2_18 &&
      cluster.spec().compute_capability >= 100) {
    warn(
        fmt::format("cluster '{}': NCCL 2.18.3 predates compute capability {}.{}; the 2.18 "
                    "emulation uses its Hopper constants there",
                    cluster.name(), cluster.spec().compute_capability / 10,
                    cluster.spec().compute_capability % 10));
  }
  {
    nccl::CommInfo check;  // names and values are checked here, before any modelling
    check.version = cluster.spec().nccl_version;
    try {
      nccl::apply_env(cluster.spec().nccl_env, check);
    } catch (const Error& e) {
      throw Error(fmt::format("cluster '{}': {}", cluster.name(), e.what()));
    }
  }
  return cluster;
}

}  // namespace

topologies::Cluster load_cluster_with_what_ifs(const HardwareOptions& opts) {
  std::optional<Documents> docs;
  return cluster_of(opts, docs);
}

Hardware load_hardware(const HardwareOptions& opts) {
  std::optional<Documents> docs;
  topologies::Cluster cluster = cluster_of(opts, docs);
  hardware::HardwareProfile profile =
      docs                   ? hardware::parse_profile_json(docs->profile_json.dump(1),
                                                            docs->profile_origin + " (with what-if overrides)")
      : opts.profile.empty() ? hardware::default_profile_for_gpu(cluster.spec().gpu_type)
                             : hardware::load_profile(opts.profile);
  if (docs) {
    profile.origin = docs->profile_origin;  // reports name it; the overrides are listed apart
  }
  if (profile.gpu_type != cluster.spec().gpu_type) {
    throw Error(fmt::format("profile '{}' describes {} GPUs but cluster '{}' has {}",
                            profile.origin, profile.gpu_type, cluster.name(),
                            cluster.spec().gpu_type));
  }
  std::vector<std::string> applied = docs ? std::move(docs->applied) : std::vector<std::string>{};
  for (const auto& [flag, values] :
       {std::pair<const char*, const std::vector<std::string>*>{"--slow-gpu", &opts.slow_gpu},
        {"--slow-link", &opts.slow_link},
        {"--down-node", &opts.down_node}}) {
    for (const std::string& v : *values) {
      applied.push_back(fmt::format("{} {}", flag, v));
    }
  }
  return Hardware{std::move(cluster), std::move(profile), std::move(applied)};
}

}  // namespace lagom::cli
