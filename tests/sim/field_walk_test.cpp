// Every number a user can set in a cluster or profile file changes some answer, or is
// documented as descriptive: the test walks each numeric field of the built-in files, perturbs
// it, and checks that a set of answers moves (collective times under NCCL's choice and under
// pinned configurations, NCCL's topology-search estimate, point-to-point times, and a step of
// kernels and collectives with contention).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>

#include "lagom/hardware/profile.hpp"
#include "lagom/nccl/tuning.hpp"
#include "lagom/sim/collective_model.hpp"
#include "lagom/sim/compute_model.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/sim/resource_contention.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/cluster_spec.hpp"
#include "lagom/topologies/communicator.hpp"
#include "lagom/topologies/nccl_comm_info.hpp"
#include "test_util.hpp"

namespace lagom::sim {
namespace {

using nccl::Algorithm;
using nccl::CollKind;
using nccl::CommConfig;
using nccl::kAlgorithmCount;
using nccl::kProtocolCount;
using nccl::Protocol;

using nlohmann::json;

// A step on every GPU: kernels of every class (with and without launch geometry, one asking for
// more blocks per SM than some GPUs hold), a memcpy, an all-reduce over everyone, an all-to-all
// and an all-gather pinned to few threads, a send to the same GPU of the next node and to the
// neighbour GPU, collectives of the neighbour pair under NCCL's choice, a cross-node pair
// all-gather pinned to few threads, an all-reduce between GPU l and GPU l + 1 of the next node, and
// a long streaming kernel beside a 1 GiB all-reduce of the node (HBM full).
traces::Workload step(int gpus, int gpn) {
  std::string ranks = "[";
  const char* classes[] = {"gemm", "attention", "elementwise", "norm", "optimizer", "other"};
  for (int r = 0; r < gpus; ++r) {
    std::string kernels;
    for (int c = 0; c < 6; ++c) {
      kernels += fmt::format(
          R"({}{{"id": "k{}_{}", "kind": "compute", "flops": 2e11, "bytes": 400000000, "class": "{}"}})",
          c ? "," : "", r, c, classes[c]);
      // Several block counts, so that a change in the blocks a wave holds moves some wave count.
      for (int blocks : {137, 333, 777, 1234, 2500}) {
        kernels += fmt::format(
            R"(, {{"id": "b{}_{}_{}", "kind": "compute", "flops": 2e11, "bytes": 40000000,
                 "blocks": {}, "class": "{}"}})",
            r, c, blocks, blocks, classes[c]);
      }
    }
    kernels += fmt::format(
        R"(, {{"id": "m{}", "kind": "memcpy", "bytes": 100000000}},
           {{"id": "w{}", "kind": "compute", "flops": 1e9, "bytes": 400000000, "blocks": 50000,
             "blocks_per_sm": 24, "class": "elementwise"}})",
        r, r);
    const int next = (r + gpn) % gpus;
    const int prev = (r - gpn + gpus) % gpus;
    const int nb = r % 2 == 0 ? r + 1 : r - 1;
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [
          {{"stream": "k", "ops": [{}]}},
          {{"stream": "c", "ops": [
            {{"id": "ar{}", "kind": "allreduce", "group": "all", "bytes": 67108864}},
            {{"id": "a2a{}", "kind": "alltoall", "group": "all", "bytes": 4194304,
              "config": {{"proto": "Simple", "nthreads": 64, "nchannels": 2}}}},
            {{"id": "ag{}", "kind": "allgather", "group": "all", "bytes": 16777216,
              "config": {{"algo": "Ring", "proto": "Simple", "nthreads": 64, "nchannels": 2}}}}]}},
          {{"stream": "ps", "ops": [{{"id": "s{}", "kind": "send", "peer": {}, "bytes": 16777216}}]}},
          {{"stream": "pr", "ops": [{{"id": "r{}", "kind": "recv", "peer": {}, "bytes": 16777216}}]}},
          {{"stream": "px", "ops": [{{"id": "x{}", "kind": {}, "peer": {}, "bytes": 1048576}}]}},
          {{"stream": "pair", "ops": [
            {{"id": "pa{}", "kind": "allreduce", "group": "pair{}", "bytes": 65536}},
            {{"id": "pb{}", "kind": "allreduce", "group": "pair{}", "bytes": 2097152}},
            {{"id": "pc{}", "kind": "allreduce", "group": "pair{}", "bytes": 67108864}}]}},
          {{"stream": "far", "ops": [
            {{"id": "fa{}", "kind": "allgather", "group": "far{}", "bytes": 8388608,
              "config": {{"algo": "Ring", "proto": "Simple", "nthreads": 64, "nchannels": 1}}}},
            {{"id": "fb{}", "kind": "allgather", "group": "far{}", "bytes": 1048576,
              "config": {{"algo": "Ring", "proto": "LL", "nthreads": 64, "nchannels": 1}}}}]}},
          {{"stream": "skew", "ops": [
            {{"id": "sk{}", "kind": "allreduce", "group": "skew{}", "bytes": 33554432}}]}},
          {{"stream": "hk", "ops": [{{"id": "h{}", "kind": "compute", "flops": 1e9,
            "bytes": 20000000000, "class": "elementwise"}}]}},
          {{"stream": "hc", "ops": [{{"id": "hc{}", "kind": "allreduce", "group": "node{}",
            "bytes": 8589934592, "config": {{"nchannels": 16}}}}]}}]}})",
        r ? "," : "", r, kernels, r, r, r, r, next, r, prev, r,
        r % 2 == 0 ? "\"send\"" : "\"recv\"", nb, r, r / 2, r, r / 2, r, r / 2, r, r % gpn, r,
        r % gpn, r, r < gpn ? r : (r % gpn + gpn - 1) % gpn, r, r, r / gpn);
  }
  std::vector<int> all(static_cast<std::size_t>(gpus));
  std::iota(all.begin(), all.end(), 0);
  std::string groups = fmt::format(R"({{"all": [{}])", fmt::join(all, ","));
  for (int r = 0; r < gpus; r += 2) {
    groups += fmt::format(R"(, "pair{}": [{}, {}])", r / 2, r, r + 1);
  }
  for (int l = 0; l < gpn; ++l) {
    groups += fmt::format(R"(, "far{}": [{}, {}])", l, l, l + gpn);
  }
  // GPU l of the first node with GPU l + 1 of the second: a ring between rails (through the
  // spine of a rail-optimized fabric, where PXN keeps the all-to-all and the sends on rails).
  for (int l = 0; l < gpn; ++l) {
    groups += fmt::format(R"(, "skew{}": [{}, {}])", l, l, gpn + (l + 1) % gpn);
  }
  for (int n = 0; n * gpn < gpus; ++n) {
    std::vector<int> node(static_cast<std::size_t>(gpn));
    std::iota(node.begin(), node.end(), n * gpn);
    groups += fmt::format(R"(, "node{}": [{}])", n, fmt::join(node, ","));
  }
  return test::workload(ranks + "]", groups + "}");
}

// The answers a field may move, for a cluster on `nodes` nodes with a profile.
std::vector<double> answers(const topologies::Cluster& c, const hardware::HardwareProfile& p) {
  std::vector<double> out;
  std::vector<int> ranks(static_cast<std::size_t>(c.gpu_count()));
  std::iota(ranks.begin(), ranks.end(), 0);
  const topologies::CommunicatorInfo info = topologies::describe_communicator(c, ranks);
  const nccl::CommInfo nccl = nccl_comm_info(c, info);
  const nccl::Tables tables = nccl::tune_model(nccl);
  out.push_back(info.nccl.channels);
  out.push_back(info.nccl.bw_intra_GBps);
  out.push_back(info.nccl.bw_inter_GBps);
  const CollectiveModel model(p, info);
  // Every (algorithm, protocol) NCCL enables, at a moderate size, with few threads too, on the
  // whole cluster, one node, the first two GPUs and a pair across nodes.
  const auto all_pairs = [&](std::vector<int> members) {
    const topologies::CommunicatorInfo ci = topologies::describe_communicator(c, members);
    const nccl::Tables t = nccl::tune_model(nccl_comm_info(c, ci));
    const CollectiveModel m(p, ci);
    for (int a = 0; a < kAlgorithmCount; ++a) {
      for (int q = 0; q < kProtocolCount; ++q) {
        const auto algo = static_cast<Algorithm>(a);
        const auto proto = static_cast<Protocol>(q);
        if (t.bandwidth(CollKind::kAllReduce, algo, proto) <= 0) {
          continue;
        }
        for (int nt : {64, 0}) {
          for (int nc : {1, 0}) {
            CommConfig cfg = nccl::config_for(t, CollKind::kAllReduce, algo, proto, 8 << 20);
            cfg.nthreads = nt > 0 ? nt : cfg.nthreads;
            cfg.nchannels = nc > 0 ? nc : cfg.nchannels;
            out.push_back(m.estimate(CollKind::kAllReduce, 8 << 20, cfg).time_us);
            out.push_back(m.estimate(CollKind::kAllReduce, 4096, cfg).time_us);
          }
        }
      }
    }
  };
  all_pairs(ranks);
  std::vector<int> node0(static_cast<std::size_t>(c.gpus_per_node()));
  std::iota(node0.begin(), node0.end(), 0);
  all_pairs(node0);
  all_pairs({0, 1});
  all_pairs({0, c.gpus_per_node()});
  // Across nodes and rails (GPU 0 to the next node's GPU 1: no PXN proxy in the communicator),
  // through the fabric's spine on a rail-optimized one. One such flow rarely binds at the spine,
  // but the contention model loads every link of its footprint: those loads are answers too.
  all_pairs({0, c.gpus_per_node() + 1});
  const int far = c.gpus_per_node() + 1;
  const std::vector<int> pair = {0, far};
  const topologies::CommunicatorInfo cross = topologies::describe_communicator(c, pair);
  for (const topologies::LinkLoad& l : cross.traffic->pair(0, far).loads) {
    out.push_back(l.per_byte / c.link(l.link).bandwidth_GBps);
  }
  for (CollKind kind : {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter,
                        CollKind::kAllToAll, CollKind::kBroadcast}) {
    for (std::int64_t s :
         {std::int64_t{8}, std::int64_t{1} << 16, std::int64_t{1} << 20, std::int64_t{256} << 20}) {
      out.push_back(model.estimate(kind, s, nccl::default_config(nccl, kind, s)).time_us);
    }
  }
  // An FP8 GEMM and an fp32 one, where the GPU has FP8 tensor cores (the step below has none,
  // so that it runs on every profile).
  if (p.gpu.fp8_TFLOPS.value > 0) {
    for (traces::Precision pr : {traces::Precision::kFp8, traces::Precision::kFp32}) {
      const traces::ComputeShape sh{2e11, 0, 0, traces::ComputeClass::kGemm, pr};
      out.push_back(ComputeModel(p).alone(sh, 4e8).time_us);
    }
  }
  // A GEMM of 4 deep tiles (K = 4096: split-K's case) and one of 512 shallow ones (K = 256:
  // the tile overhead's).
  for (const auto& [tiles, depth] : {std::pair{4, 4096.0}, std::pair{512, 256.0}}) {
    const traces::ComputeShape sh{tiles * 2.0 * 128 * 128 * depth, tiles, 1,
                                  traces::ComputeClass::kGemm, traces::Precision::kBf16};
    out.push_back(ComputeModel(p).alone(sh, 1e6).time_us);
  }
  const traces::Workload w = step(c.gpu_count(), c.gpus_per_node());
  const ModelCost cost(c, p, w);
  ResourceContention contention(cost);
  const test::Simulated s = test::simulate(w, SimOptions{&cost, &contention});
  out.push_back(s.r.step_time.us());
  for (const traces::OpTimes& t : s.r.ops) {
    out.push_back(t.end.us());
  }
  return out;
}

bool moved(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) {
    return true;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::abs(a[i] - b[i]) > 1e-9 * std::max(1.0, std::abs(a[i]))) {
      return true;
    }
  }
  return false;
}

// Paths ("pcie.latency_us", "network.nics[3].count") of the numeric leaves of `j`.
void numeric_leaves(const json& j, const std::string& path, std::vector<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      numeric_leaves(v, path.empty() ? k : path + "." + k, out);
    }
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      numeric_leaves(j[i], fmt::format("{}[{}]", path, i), out);
    }
  } else if (j.is_number()) {
    out.push_back(path);
  }
}

json& at_path(json& j, const std::string& path) {
  json* cur = &j;
  std::size_t pos = 0;
  while (pos < path.size()) {
    if (path[pos] == '.') {
      ++pos;
    }
    if (path[pos] == '[') {
      const std::size_t end = path.find(']', pos);
      cur = &(*cur)[std::stoul(path.substr(pos + 1, end - pos - 1))];
      pos = end + 1;
      continue;
    }
    const std::size_t end = path.find_first_of(".[", pos);
    cur = &(*cur)[path.substr(pos, end == std::string::npos ? std::string::npos : end - pos)];
    pos = end == std::string::npos ? path.size() : end;
  }
  return *cur;
}

// Perturbations to try for a number: the first that the reader accepts is used.
std::vector<json> perturbations(const json& v) {
  if (v.is_number_integer()) {
    const std::int64_t x = v.get<std::int64_t>();
    return {x * 2, x / 2, x + 1, x - 1};
  }
  const double x = v.get<double>();
  return {x * 1.5, x * 0.5, x * 1.05, x * 0.95, x + 1};
}

// Walks every numeric field of `doc`; for each, loads the perturbed document with `load` (a
// rejected perturbation is skipped) and compares `answer` with the original's. Returns the
// fields that moved nothing and the fields every perturbation of which was rejected.
struct Walk {
  std::set<std::string> moved;
  std::set<std::string> still;
  std::set<std::string> rejected;
};
Walk walk(const json& doc, const std::function<bool(const std::string&)>& skip,
          const std::function<std::vector<double>(const json&)>& answer) {
  const std::vector<double> base = answer(doc);
  std::vector<std::string> fields;
  numeric_leaves(doc, "", fields);
  Walk out;
  for (const std::string& f : fields) {
    if (skip(f)) {
      continue;
    }
    bool any = false;
    bool moves = false;
    for (const json& v : perturbations(at_path(const_cast<json&>(doc), f))) {
      json changed = doc;
      at_path(changed, f) = v;
      std::vector<double> a;
      try {
        a = answer(changed);
      } catch (const Error&) {
        continue;  // the reader refused this value (a range or a cross-field rule)
      }
      any = true;
      if (moved(base, a)) {
        moves = true;
        break;
      }
    }
    if (!any) {
      out.rejected.insert(f);
    } else if (!moves) {
      out.still.insert(f);
    } else {
      out.moved.insert(f);
    }
  }
  return out;
}

// Strips array indices: "network.nics[3].count" -> "network.nics[].count".
std::string generic(const std::string& path) {
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    out += path[i];
    if (path[i] == '[') {
      i = path.find(']', i) - 1;
    }
  }
  return out;
}

// Documented as descriptive in docs/formats/cluster.md ("Fields that change nothing").
const std::set<std::string> kDescriptiveClusterFields = {
    "intra_node.nvlink.generation",  // the graph takes links_per_gpu x link_bandwidth_GBps
    "intra_node.nvswitch.chips",     // the graph models one switch plane
};
// Structure, not a quantity: changing it changes the machine (and is validated against other
// fields, so most perturbations are refused).
const std::set<std::string> kStructuralClusterFields = {
    "version",     "nodes.count",          "nodes.gpus_per_node",
    "cpu.sockets", "intra_node.pairs[][]", "network.nics[].gpus[]"};

// A field passes if it moves some answer on some preset (the CPU interconnect, say, carries no
// traffic on an NVSwitch node but binds on the A40 hosts).
TEST(FieldWalk, EveryClusterNumberChangesAnAnswerOrIsDescriptive) {
  std::map<std::string, std::vector<std::string>> still;  // field -> presets where it did not move
  std::set<std::string> moved_somewhere;
  for (const char* preset : {"dgx-h100", "a40-nvlink", "aws-p5", "a40-pcie", "dgx-a100"}) {
    const json doc = json::parse(topologies::cluster_preset_text(preset));
    const hardware::HardwareProfile profile =
        hardware::default_profile_for_gpu(doc["gpu"]["type"].get<std::string>());
    const Walk w = walk(
        doc, [](const std::string& f) { return kStructuralClusterFields.contains(generic(f)); },
        [&](const json& d) {
          topologies::ClusterSpec spec = topologies::parse_cluster_json(d.dump(), preset);
          spec.nodes = 2;
          return answers(topologies::Cluster(spec), profile);
        });
    for (const std::string& f : w.moved) {
      moved_somewhere.insert(generic(f));
    }
    for (const std::string& f : w.still) {
      still[generic(f)].push_back(preset);
    }
    for (const std::string& f : w.rejected) {
      ADD_FAILURE() << preset << ": no perturbation of " << f << " was accepted";
    }
  }
  for (const auto& [f, presets] : still) {
    if (!moved_somewhere.contains(f)) {
      EXPECT_TRUE(kDescriptiveClusterFields.contains(f))
          << f << " changes no answer on " << fmt::format("{}", fmt::join(presets, ", "))
          << " and is not documented as descriptive";
    }
  }
  for (const std::string& f : kDescriptiveClusterFields) {
    EXPECT_FALSE(moved_somewhere.contains(f)) << f << " is documented as descriptive but moves";
  }
}

// The fat-tree's numbers, on a small 3-tier fabric where every tier binds: 16 nodes, 2 per leaf
// (8 leaves of 16 NIC ports and 8 uplinks at 2:1), pods of 4 leaves under 8 spines (4 ports
// down, 2 up at 2:1), 8 cores. The core radix only spreads a spine's uplinks over more or fewer
// cores (ECMP's even spread keeps their capacity), so it moves nothing unless it refuses the
// layout: docs/formats/cluster.md says so. `tiers` is structure (its oversubscription list must
// change with it).
TEST(FieldWalk, EveryFabricNumberChangesAnAnswer) {
  json doc = json::parse(topologies::cluster_preset_text("superpod-h100-16k"));
  doc["nodes"]["count"] = 16;
  doc["network"]["fabric"] = {
      {"kind", "fat-tree"},     {"switch_model", "test"}, {"tiers", 3},
      {"radix", {24, 6, 8}},    {"rails", false},         {"oversubscription", {2, 2}},
      {"port_speed_Gbps", 400}, {"latency_us", 0.5}};
  const hardware::HardwareProfile profile = hardware::default_profile_for_gpu("H100-SXM-80GB");
  const Walk w = walk(
      doc,
      [](const std::string& f) {
        return !f.starts_with("network.fabric.") || f == "network.fabric.tiers" ||
               f == "network.fabric.radix[2]";
      },
      [&](const json& d) {
        // Collective times over every GPU and a cross-pod transfer's footprint (what the
        // contention model loads); the full step of answers() is laid out for 2 nodes.
        const topologies::Cluster c(topologies::parse_cluster_json(d.dump(), "fabric"));
        std::vector<int> ranks(static_cast<std::size_t>(c.gpu_count()));
        std::iota(ranks.begin(), ranks.end(), 0);
        const topologies::CommunicatorInfo info = topologies::describe_communicator(c, ranks);
        const CollectiveModel model(profile, info);
        std::vector<double> out;
        for (CollKind kind : {CollKind::kAllToAll, CollKind::kAllReduce, CollKind::kAllGather}) {
          for (Protocol proto : {Protocol::kSimple, Protocol::kLL}) {
            CommConfig cfg;
            cfg.proto = proto;
            cfg.nchannels = 8;
            cfg.chunk_bytes = 1 << 19;
            out.push_back(model.estimate(kind, std::int64_t{1} << 28, cfg).time_us);
          }
        }
        const topologies::Footprint far = info.traffic->pair(0, c.gpu_count() - 1);
        out.push_back(far.worst[static_cast<int>(nccl::LinkClass::kNetwork)]);
        out.push_back(far.net_latency_us);
        return out;
      });
  EXPECT_EQ(w.still, std::set<std::string>{});
  EXPECT_EQ(w.rejected, std::set<std::string>{});
  EXPECT_EQ(w.moved, (std::set<std::string>{
                         "network.fabric.latency_us", "network.fabric.oversubscription[0]",
                         "network.fabric.oversubscription[1]", "network.fabric.port_speed_Gbps",
                         "network.fabric.radix[0]", "network.fabric.radix[1]"}));
}

// Documented in docs/formats/profile.md ("Fields that change nothing"): used only where this
// walk does not look, or never (for the reason given there).
bool quiet_profile_field(const std::string& f) {
  // Occupancy beside NCCL's CTAs: these change how many blocks a wave holds while collectives
  // run, which moves a step only when a wave count crosses an integer (and a class without
  // shared memory is limited by threads, whatever small smem it is given), so the walk's step may
  // not show them; ComputeModel.OccupancyBesideAnNcclCtaFollowsEachLimit and
  // ComputeModel.BlocksPerSmIsCappedByTheGpu (tests/sim/contention_model_test.cpp) do.
  return f.ends_with(".blocks_per_sm.value") || f.ends_with(".smem_per_block_KiB.value") ||
         f == "gpu.max_blocks_per_sm.value" || f == "gpu.smem_per_sm_KiB.value" ||
         f == "gpu.max_threads_per_sm.value" || f == "contention.comm_cta_smem_KiB.value";
}

const std::set<std::string> kQuietProfileFields = {
    "gpu.memory_GB.value",  // the memory estimate of generated steps (tests/models, tests/cli)
    // NCCL 2.28 enables LL128 only where every intra-node path is NVLink (nccl_tuning.cpp).
    "collective.links.pcie.LL128.step_us.value",
    "collective.links.pcie.LL128.chunk_us.value",
    "collective.links.pcie.LL128.channel_GBps.value",
    "collective.links.pcie.LL128.saturation_threads.value",
};

TEST(FieldWalk, EveryProfileNumberChangesAnAnswerOrIsDocumented) {
  struct Case {
    const char* profile;
    const char* cluster;
  };
  // Each profile on machines that use its link classes: an NVSwitch node carries no PCIe
  // protocol traffic, the A40's bridged pairs do.
  std::map<std::string, std::set<std::string>> still;  // profile -> fields
  std::map<std::string, std::set<std::string>> moved;
  // (The H100 profile on the PCIe-only A40 host stands in for an H100 PCIe machine: it is the
  // only place its PCIe protocol numbers are used.)
  for (const Case& c :
       {Case{"h100-sxm", "dgx-h100"}, Case{"h100-sxm", "aws-p5"}, Case{"h100-sxm", "a40-pcie"},
        Case{"a40", "a40-nvlink"}, Case{"a40", "a40-pcie"}}) {
    const json doc = json::parse(hardware::profile_to_json(hardware::load_profile(c.profile)));
    const topologies::Cluster cluster(topologies::load_cluster_spec(c.cluster, 2));
    const Walk w = walk(
        doc, [](const std::string& f) { return f == "version" || !f.ends_with(".value"); },
        [&](const json& d) {
          return answers(cluster, hardware::parse_profile_json(d.dump(), c.profile));
        });
    still[c.profile].insert(w.still.begin(), w.still.end());
    moved[c.profile].insert(w.moved.begin(), w.moved.end());
    for (const std::string& f : w.rejected) {
      ADD_FAILURE() << c.profile << ": no perturbation of " << f << " was accepted";
    }
  }
  for (const auto& [profile, fields] : still) {
    for (const std::string& f : fields) {
      if (moved[profile].contains(f) || kQuietProfileFields.contains(f) || quiet_profile_field(f)) {
        continue;
      }
      // The A40 has no NVLink SHARP: NVLS numbers in its profile are never used.
      if (profile == "a40" && f.starts_with("collective.nvls_")) {
        continue;
      }
      ADD_FAILURE() << profile << ": " << f << " changes no answer and is not documented";
    }
  }
}

}  // namespace
}  // namespace lagom::sim
