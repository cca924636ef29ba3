// Conservation and the contention physics: property tests over random small workloads and
// clusters (no resource above capacity at any instant, no op faster than alone, determinism),
// and hand-worked cases, each expectation derived here from the hardware's numbers.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "lagom/hardware/profile.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/sim/resource_contention.hpp"
#include "lagom/topologies/cluster.hpp"
#include "test_util.hpp"

namespace lagom::sim {
namespace {

using nccl::CollKind;
using nccl::CommConfig;

constexpr std::int64_t kMebibyte = 1024 * 1024;

// Wraps the real model and checks its conservation laws after every solve.
class Checked final : public ContentionModel {
 public:
  explicit Checked(ResourceContention& inner) : inner_(inner) {}
  std::string_view name() const override { return inner_.name(); }
  void bind(const traces::Workload& w, const traces::ExecutionGraph& g) override {
    inner_.bind(w, g);
  }
  void waiting(traces::OpId op) override { inner_.waiting(op); }
  void started(const Activity& a) override { inner_.started(a); }
  void finished(const Activity& a) override { inner_.finished(a); }
  Time fixed_part(std::uint32_t instance, Time alone) override {
    return inner_.fixed_part(instance, alone);
  }
  void rates(std::vector<RateChange>& out) override {
    const std::size_t before = out.size();
    inner_.rates(out);
    ++solves;
    for (std::size_t i = before; i < out.size(); ++i) {
      if (!(out[i].rate > 0 && out[i].rate <= 1)) {
        violations.push_back(fmt::format("rate {} outside (0, 1]", out[i].rate));
      }
    }
    const std::string broken = inner_.check_invariants();
    if (!broken.empty()) {
      violations.push_back(broken);
    }
    for (FlowSolver::ResourceId r = 0; r < inner_.solver().resource_count(); ++r) {
      if (inner_.solver().usage(r) >= inner_.solver().capacity(r) * (1 - 1e-9)) {
        ++saturated;  // the test exercises sharing, not only flows alone
        break;
      }
    }
  }
  std::vector<std::string> violations;
  int solves = 0;
  int saturated = 0;  // solves after which some resource was full

 private:
  ResourceContention& inner_;
};

struct Ran {
  test::Simulated s;
  std::vector<std::string> violations;
  int solves = 0;
  int saturated = 0;
};

Ran run(const topologies::Cluster& cluster, const hardware::HardwareProfile& profile,
        const traces::Workload& w) {
  const ModelCost cost(cluster, profile, w);
  ResourceContention model(cost);
  Checked checked(model);
  Ran r{test::simulate(w, SimOptions{&cost, &checked}), {}, 0};  // a copy: cost reads `w`
  r.violations = checked.violations;
  r.solves = checked.solves;
  r.saturated = checked.saturated;
  return r;
}

// The part of a communication op's time alone that no bandwidth buys back (launch, hop
// latencies, chunk-step overheads): the engine runs it first, at full speed, and only the rest,
// where the bytes move, is shared (docs/models.md §6).
double fixed_us(const topologies::Cluster& cluster, const hardware::HardwareProfile& profile,
                const traces::Workload& w, std::string_view id) {
  const ModelCost cost(cluster, profile, w);
  const CollectiveEstimate e = cost.estimate(*w.find_op(id));
  return e.launch_us + e.hop_us + e.sync_us;
}

double running_us(const test::Simulated& s, std::string_view id) {
  const traces::OpTimes& t = s.r.ops[s.op(id)];
  return (t.end - t.start).us();
}

// --- Random workloads ----------------------------------------------------------------------

// Each rank: two compute streams of random kernels and copies, and for each communicator it
// belongs to a stream of that communicator's collectives (the same list on every member, so
// nothing deadlocks), with random sizes and pinned channels; each pair of neighbours also sends
// one transfer. About one op in four gives its duration (a measured trace), at random speeds:
// some faster than the hardware, which the model caps.
std::string random_ranks(std::mt19937& rng, int nranks, std::string& groups) {
  std::uniform_int_distribution<int> quarter(0, 3);
  std::uniform_real_distribution<double> log_GBps(0, 4);  // 1 GB/s .. 10 TB/s
  // `, "duration_us": D` for one op in four: its bytes at a random speed.
  const auto measured = [&](double bytes) -> std::string {
    if (quarter(rng) != 0) {
      return "";
    }
    return fmt::format(R"(, "duration_us": {:.3f})",
                       std::max(0.01, bytes / (std::pow(10.0, log_GBps(rng)) * 1e3)));
  };
  std::uniform_int_distribution<int> nops(1, 4);
  std::uniform_int_distribution<int> kind(0, 4);
  std::uniform_real_distribution<double> logb(14, 28);  // 16 KiB .. 256 MiB
  std::uniform_int_distribution<int> nc(1, 16);
  // Communicators: everyone, and pairs of neighbours.
  struct Group {
    std::string name;
    std::vector<int> ranks;
  };
  std::vector<Group> gs;
  std::vector<int> all(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    all[static_cast<std::size_t>(r)] = r;
  }
  gs.push_back({"all", all});
  for (int r = 0; r + 1 < nranks; r += 2) {
    gs.push_back({fmt::format("p{}", r), {r, r + 1}});
  }
  groups = "{";
  std::vector<std::string> colls(gs.size());
  const char* kinds[] = {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"};
  for (std::size_t g = 0; g < gs.size(); ++g) {
    groups += fmt::format("{}\"{}\": [{}]", g ? ", " : "", gs[g].name, fmt::join(gs[g].ranks, ","));
    const int n = nops(rng);
    for (int i = 0; i < n; ++i) {
      const int k = kind(rng);
      const auto bytes = static_cast<std::int64_t>(std::exp2(std::floor(logb(rng))));
      colls[g] += fmt::format(
          R"({{"kind": "{}", "bytes": {}{}{}, "config": {{"nchannels": {}}}}};)", kinds[k], bytes,
          k == 4 ? fmt::format(R"(, "root": {})", gs[g].ranks.front()) : "",
          measured(static_cast<double>(bytes)), nc(rng));
    }
  }
  groups += "}";
  std::uniform_real_distribution<double> flops(1e9, 5e12);
  std::uniform_int_distribution<std::int64_t> bytes(1000000, 4000000000);
  std::uniform_int_distribution<int> blocks(1, 4000);
  std::uniform_int_distribution<int> cls(0, 2);
  const char* classes[] = {"gemm", "elementwise", "norm"};
  // Each pair's transfer: its size, and a duration on the send or the recv (or neither).
  std::vector<std::int64_t> p2p(static_cast<std::size_t>(nranks));
  std::vector<std::string> p2p_given(static_cast<std::size_t>(nranks));
  for (int r = 0; r + 1 < nranks; r += 2) {
    p2p[static_cast<std::size_t>(r)] = static_cast<std::int64_t>(std::exp2(std::floor(logb(rng))));
    const std::size_t by = static_cast<std::size_t>(r + quarter(rng) % 2);
    p2p_given[by] = measured(static_cast<double>(p2p[static_cast<std::size_t>(r)]));
  }
  std::string out = "[";
  for (int r = 0; r < nranks; ++r) {
    out += fmt::format(R"({}{{"rank": {}, "streams": [)", r ? "," : "", r);
    for (int cs = 0; cs < 2; ++cs) {
      out += fmt::format(R"({{"stream": "c{}", "ops": [)", cs);
      const int n = nops(rng);
      for (int i = 0; i < n; ++i) {
        const std::int64_t b = bytes(rng);
        if (quarter(rng) == 0) {
          out += fmt::format(R"({}{{"id": "k{}_{}_{}", "kind": "memcpy", "bytes": {}{}}})",
                             i ? "," : "", r, cs, i, b, measured(static_cast<double>(b)));
          continue;
        }
        out += fmt::format(
            R"({}{{"id": "k{}_{}_{}", "kind": "compute", "flops": {}, "bytes": {}, "blocks": {},
               "class": "{}"{}}})",
            i ? "," : "", r, cs, i, flops(rng), b, blocks(rng), classes[cls(rng)],
            measured(static_cast<double>(b)));
      }
      out += "]},";
    }
    bool first_stream = true;
    for (std::size_t g = 0; g < gs.size(); ++g) {
      if (std::find(gs[g].ranks.begin(), gs[g].ranks.end(), r) == gs[g].ranks.end()) {
        continue;
      }
      out += fmt::format(R"({}{{"stream": "g{}", "ops": [)", first_stream ? "" : ",", g);
      first_stream = false;
      // Re-emit this group's collectives with ids for this rank.
      std::size_t pos = 0;
      int i = 0;
      const std::string& list = colls[g];
      while (pos < list.size()) {
        const std::size_t end = list.find(';', pos);
        std::string op = list.substr(pos, end - pos);
        op.insert(1, fmt::format(R"("id": "r{}_g{}_{}", "group": "{}", )", r, g, i, gs[g].name));
        out += (i ? "," : "") + op;
        pos = end + 1;
        ++i;
      }
      out += "]}";
    }
    // Point to point: even ranks send to the next odd one, on their pair's group.
    if (r % 2 == 0 && r + 1 < nranks) {
      out += fmt::format(
          R"(,{{"stream": "x", "ops": [{{"id": "tx{}", "kind": "send", "peer": {}, "group": "p{}",
             "bytes": {}{}}}]}})",
          r, r + 1, r, p2p[static_cast<std::size_t>(r)], p2p_given[static_cast<std::size_t>(r)]);
    } else if (r % 2 == 1) {
      out += fmt::format(
          R"(,{{"stream": "x", "ops": [{{"id": "rx{}", "kind": "recv", "peer": {}, "group": "p{}",
             "bytes": {}{}}}]}})",
          r, r - 1, r - 1, p2p[static_cast<std::size_t>(r - 1)],
          p2p_given[static_cast<std::size_t>(r)]);
    }
    out += "]}";
  }
  return out + "]";
}

TEST(ContentionPhysics, RandomWorkloadsConserveEveryResource) {
  // At every instant (every solve): no link or HBM above its capacity, no flow above its bound or
  // above its speed alone, no GPU handing out more SMs than it has. After the run: every op took
  // at least its time alone (to the nanosecond the engine rounds up by), and the same inputs give
  // the same event stream.
  struct Setup {
    const char* preset;
    int nodes;
  };
  const Setup setups[] = {{"a40-nvlink", 1}, {"a40-pcie", 2}, {"dgx-h100", 1},
                          {"dgx-h100", 2},   {"aws-p5", 2},   {"a40-nvlink", 2}};
  std::mt19937 rng(42);
  int trial = 0;
  int saturated = 0;
  int solves = 0;
  int sends = 0;
  int copies = 0;
  int given = 0;  // ops with a duration_us
  for (const Setup& setup : setups) {
    const topologies::Cluster cluster = topologies::load_cluster(setup.preset, setup.nodes);
    const hardware::HardwareProfile profile =
        hardware::default_profile_for_gpu(cluster.spec().gpu_type);
    for (int k = 0; k < 6; ++k, ++trial) {
      const int nranks = std::uniform_int_distribution<int>(2, cluster.gpu_count())(rng);
      std::string groups;
      const std::string ranks = random_ranks(rng, nranks, groups);
      const std::string what =
          fmt::format("{} x{} trial {} ({} ranks)", setup.preset, setup.nodes, trial, nranks);
      Ran a = run(cluster, profile, test::workload(ranks, groups));
      EXPECT_GT(a.solves, 0) << what;
      solves += a.solves;
      saturated += a.saturated;
      for (const std::string& v : a.violations) {
        ADD_FAILURE() << what << ": " << v;
      }
      for (traces::OpId op = 0; op < a.s.w.op_count(); ++op) {
        sends += a.s.w.kind(op) == traces::OpKind::kSend ? 1 : 0;
        copies += a.s.w.kind(op) == traces::OpKind::kMemcpy ? 1 : 0;
        given += a.s.w.duration_ns(op) != traces::kNoDuration ? 1 : 0;
        const traces::OpTimes& t = a.s.r.ops[op];
        EXPECT_GE((t.end - t.start).count_ns() + 1, t.alone.count_ns())
            << what << ": " << a.s.w.name(op) << " ran faster than alone";
      }
      // Nothing contending is a lower bound on every end (each op at least as long as alone,
      // and an op starts at the latest end of what it waits on): the exhaustive search's
      // second bound (docs/search.md §4). The engine rounds each end to the nanosecond, so a
      // chain may gain a nanosecond per op.
      {
        const ModelCost cost(cluster, profile, a.s.w);
        const test::Simulated alone = test::simulate(a.s.w, SimOptions{&cost, nullptr});
        const auto slack = static_cast<std::int64_t>(a.s.w.op_count());
        for (traces::OpId op = 0; op < a.s.w.op_count(); ++op) {
          EXPECT_GE(a.s.r.ops[op].end.count_ns() + slack, alone.r.ops[op].end.count_ns())
              << what << ": " << a.s.w.name(op) << " ended before it would with nothing contending";
        }
        EXPECT_GE(a.s.r.step_time.count_ns() + slack, alone.r.step_time.count_ns()) << what;
      }
      const Ran b = run(cluster, profile, test::workload(ranks, groups));
      EXPECT_EQ(a.s.r.fingerprint, b.s.r.fingerprint) << what;
    }
  }
  // Shared resources did fill: a good part of the instants had a full link or HBM.
  EXPECT_GT(saturated, solves / 20) << saturated << " of " << solves;
  EXPECT_GT(sends, 20);
  EXPECT_GT(copies, 20);
  EXPECT_GT(given, 50);
}

// --- Hand-worked cases -----------------------------------------------------------------------

// One collective of `bytes` on every rank of `nranks`, or two (an all-gather and a
// reduce-scatter) on separate streams, Ring/Simple with `nc` channels.
traces::Workload ring_pair(int nranks, std::int64_t bytes, int nc, bool both) {
  std::string ranks = "[";
  for (int r = 0; r < nranks; ++r) {
    const std::string cfg =
        fmt::format(R"("config": {{"algo": "Ring", "proto": "Simple", "nchannels": {}}})", nc);
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [{{"stream": "ag", "ops": [{{"id": "ag{}", "kind": "allgather",
        "group": "all", "bytes": {}, {}}}]}})",
        r ? "," : "", r, r, bytes, cfg);
    if (both) {
      ranks += fmt::format(
          R"(, {{"stream": "rs", "ops": [{{"id": "rs{}", "kind": "reducescatter", "group": "all",
          "bytes": {}, {}}}]}})",
          r, bytes, cfg);
    }
    ranks += "]}";
  }
  std::vector<int> all(static_cast<std::size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    all[static_cast<std::size_t>(r)] = r;
  }
  return test::workload(ranks + "]", fmt::format(R"({{"all": [{}]}})", fmt::join(all, ",")));
}

TEST(ContentionPhysics, TwoRingsOnOneSocketLinkShareIt) {
  // The review's regression (a40-nvlink, 8 ranks, 150 MiB, Ring/Simple): every 8-GPU ring
  // crosses the 16 GB/s xGMI link once each way, the narrowest link, at 16 * 0.8 (PCIe-class
  // efficiency) = 12.8 GB/s. An all-gather and a reduce-scatter each move V = 7/8 * 150 MiB per
  // GPU across it. Each first runs its fixed part F (launch, hop latencies, chunk-step
  // overheads) at full speed; then its bytes move, and together their demand exceeds 12.8 GB/s
  // and max-min gives both the same fraction, so both end when 2V has crossed at 12.8 GB/s:
  // T = F + 2V / 12.8 GB/s. With one channel a ring alone is capped by its channel (12 GB/s,
  // below the link), so together takes at most 2 * 12 / 12.8 = 1.875x alone (a little less for
  // F), not 2x; with two channels the link binds alone too and together takes ~2x.
  const topologies::Cluster cluster = topologies::load_cluster("a40-nvlink", 1);
  const hardware::HardwareProfile profile = hardware::load_profile("a40");
  const double V = 7.0 / 8.0 * 150.0 * kMebibyte;
  const double link = 16.0 * profile.collective.link(nccl::LinkClass::kPcie).efficiency.value;
  for (int nc : {1, 2}) {
    const Ran alone = run(cluster, profile, ring_pair(8, 150 * kMebibyte, nc, false));
    const traces::Workload pair = ring_pair(8, 150 * kMebibyte, nc, true);
    const Ran both = run(cluster, profile, pair);
    EXPECT_TRUE(both.violations.empty()) << both.violations.front();
    const double t_alone = running_us(alone.s, "ag0");
    const double t_both = running_us(both.s, "ag0");
    const double f = fixed_us(cluster, profile, pair, "ag0");
    EXPECT_GT(f, 0) << nc;
    EXPECT_NEAR(t_both, f + 2 * V / (link * 1e3), 1.0) << nc;
    EXPECT_NEAR(running_us(both.s, "rs0"), t_both, 1.0) << nc;
    EXPECT_GE(t_both / t_alone, 1.85) << nc << ": " << t_alone << " -> " << t_both;
  }
}

// A folded communicator's mirrors (traces::Group::mirrors) load the links they cross as the
// instances they stand for would. On two a40-nvlink nodes GPUs 0 and 1 share socket 0's NIC: two
// cross-node all-reduces, {0, 8} and {1, 9}, split it. Folded to one instance on {0, 8} with the
// mirror {1, 9}, the step takes exactly as long as the two instances unfolded, model-timed and
// measured alike (a duration faster than the hardware takes the capping path, per instance);
// without the mirror the NIC looks idle and the all-reduce runs as alone.
TEST(ContentionPhysics, AFoldedInstanceSplitsItsNicWithItsMirrors) {
  const topologies::Cluster cluster = topologies::load_cluster("a40-nvlink", 2);
  const hardware::HardwareProfile profile = hardware::load_profile("a40");
  const auto op = [](int rank, const char* group, const std::string& measured) {
    return fmt::format(
        R"({{"rank": {}, "streams": [{{"stream": "c", "ops": [{{"id": "ar{}", "kind": "allreduce",
           "group": "{}", "bytes": {}, "config": {{"algo": "ring", "proto": "simple",
           "nchannels": 4}}{}}}]}}]}})",
        rank, rank, group, 256 * kMebibyte, measured);
  };
  for (const std::string& measured : {std::string(), std::string(R"(, "duration_us": 500)")}) {
    SCOPED_TRACE(measured.empty() ? "model-timed" : "measured, faster than the NIC");
    const traces::Workload unfolded = test::workload(
        fmt::format("[{}, {}, {}, {}]", op(0, "a", measured), op(1, "b", measured),
                    op(2, "a", measured), op(3, "b", measured)),
        R"({"a": {"ranks": [0, 2], "gpus": [0, 8]}, "b": {"ranks": [1, 3], "gpus": [1, 9]}})");
    const auto folded = [&](const char* mirrors) {
      return test::workload(
          fmt::format("[{}, {}]", op(0, "a", measured), op(1, "a", measured)),
          fmt::format(R"({{"a": {{"ranks": [0, 1], "gpus": [0, 8]{}}}}})", mirrors));
    };
    const Ran full = run(cluster, profile, unfolded);
    const Ran mirrored = run(cluster, profile, folded(R"(, "mirrors": [[1, 9]])"));
    const Ran alone = run(cluster, profile, folded(""));
    EXPECT_TRUE(full.violations.empty()) << full.violations.front();
    EXPECT_TRUE(mirrored.violations.empty()) << mirrored.violations.front();
    EXPECT_GT(full.saturated, 0);
    EXPECT_EQ(mirrored.s.r.step_time, full.s.r.step_time);
    EXPECT_GT(mirrored.s.r.step_time.us(), 1.5 * alone.s.r.step_time.us());
    // Mirrors where the instance does not go: {0, 8} stands for {4, 12} and {5, 13}, which
    // share socket 1's NIC with a simulated all-reduce on {6, 14}. Capped per instance there
    // too (a review found their sum capped as one), so the NIC carries three instances.
    const traces::Workload three = test::workload(
        fmt::format("[{}, {}, {}, {}, {}, {}, {}, {}]", op(0, "a", measured), op(1, "b", measured),
                    op(2, "c", measured), op(3, "d", measured), op(4, "a", measured),
                    op(5, "b", measured), op(6, "c", measured), op(7, "d", measured)),
        R"({"a": {"ranks": [0, 4], "gpus": [0, 8]}, "b": {"ranks": [1, 5], "gpus": [4, 12]},
            "c": {"ranks": [2, 6], "gpus": [5, 13]}, "d": {"ranks": [3, 7], "gpus": [6, 14]}})");
    const traces::Workload folded_three =
        test::workload(fmt::format("[{}, {}, {}, {}]", op(0, "a", measured), op(1, "d", measured),
                                   op(2, "a", measured), op(3, "d", measured)),
                       R"({"a": {"ranks": [0, 2], "gpus": [0, 8], "mirrors": [[4, 12], [5, 13]]},
            "d": {"ranks": [1, 3], "gpus": [6, 14]}})");
    const Ran full3 = run(cluster, profile, three);
    const Ran folded3 = run(cluster, profile, folded_three);
    EXPECT_TRUE(folded3.violations.empty()) << folded3.violations.front();
    EXPECT_EQ(folded3.s.r.step_time, full3.s.r.step_time);
  }
}

TEST(ContentionPhysics, TwoRingsThroughOnePcieSwitchSplitItsUplink) {
  // a40-pcie, one node: GPUs 0 and 1 sit on switch sw0, GPUs 2 and 3 on sw1, both switches
  // under cpu0. Ring {0, 2} and ring {1, 3} each cross sw0's uplink (32 GB/s * 0.8 = 25.6 GB/s)
  // once each way, as do their GPUs' own links; with 4 channels (4 x 12 GB/s) neither is
  // channel-bound, so alone each runs at the link's 25.6 GB/s and together at 12.8: twice as
  // long, but for the fixed part F, which runs first at full speed.
  const topologies::Cluster cluster = topologies::load_cluster("a40-pcie", 1);
  const hardware::HardwareProfile profile = hardware::load_profile("a40");
  auto workload = [](bool both) {
    const char* op = R"({{"id": "{}", "kind": "allreduce", "group": "{}", "bytes": 268435456,
        "config": {{"algo": "Ring", "proto": "Simple", "nchannels": 4}}}})";
    std::string ranks = "[";
    for (int r = 0; r < 4; ++r) {
      const bool in_a = r == 0 || r == 2;
      const std::string body =
          in_a || both
              ? fmt::format(fmt::runtime(op), fmt::format("x{}", r), in_a ? "a" : "b")
              : fmt::format(R"({{"id": "idle{}", "kind": "compute", "duration_us": 1}})", r);
      ranks += fmt::format(R"({}{{"rank": {}, "streams": [{{"stream": "s", "ops": [{}]}}]}})",
                           r ? "," : "", r, body);
    }
    return test::workload(ranks + "]", both ? R"({"a": [0, 2], "b": [1, 3]})" : R"({"a": [0, 2]})");
  };
  const Ran alone = run(cluster, profile, workload(false));
  const traces::Workload pair = workload(true);
  const Ran both = run(cluster, profile, pair);
  EXPECT_TRUE(both.violations.empty());
  const double t_alone = running_us(alone.s, "x0");
  const double t_both = running_us(both.s, "x0");
  EXPECT_NEAR(running_us(both.s, "x1"), t_both, 1.0);
  // AllReduce of 2 ranks: V = 2 * (1/2) * 256 MiB per GPU; together: F, then 2V at 25.6 GB/s.
  const double V = 256.0 * kMebibyte;
  EXPECT_NEAR(t_both, fixed_us(cluster, profile, pair, "x0") + 2 * V / (25.6 * 1e3), 1.0);
  EXPECT_GT(t_both / t_alone, 1.9);
}

TEST(ContentionPhysics, EightGpusBehindOneNicShareIt) {
  // a40-pcie, two nodes: one 100 Gb/s NIC per node serves all 8 GPUs. Eight sends of 64 MiB,
  // GPU i of node 0 to GPU i of node 1, at once: each alone is bound by the NIC (12.5 GB/s *
  // 0.9 = 11.25 GB/s); the PCIe paths to it (>= 12.8 GB/s each, even for the four GPUs whose
  // path crosses xGMI together at 12.8 / 4 = 3.2 GB/s each, above the NIC's 1.4) do not bind.
  // Together they split the NIC.
  const topologies::Cluster cluster = topologies::load_cluster("a40-pcie", 2);
  const hardware::HardwareProfile profile = hardware::load_profile("a40");
  auto workload = [](int pairs) {
    std::string ranks = "[";
    for (int r = 0; r < 16; ++r) {
      const int i = r % 8;
      const std::string body =
          i >= pairs ? fmt::format(R"({{"id": "idle{}", "kind": "compute", "duration_us": 1}})", r)
          : r < 8 ? fmt::format(R"({{"id": "s{}", "kind": "send", "peer": {}, "bytes": 67108864}})",
                                i, r + 8)
                  : fmt::format(R"({{"id": "r{}", "kind": "recv", "peer": {}, "bytes": 67108864}})",
                                i, r - 8);
      ranks += fmt::format(R"({}{{"rank": {}, "streams": [{{"stream": "s", "ops": [{}]}}]}})",
                           r ? "," : "", r, body);
    }
    return test::workload(ranks + "]");
  };
  const Ran alone = run(cluster, profile, workload(1));
  const Ran all = run(cluster, profile, workload(8));
  EXPECT_TRUE(all.violations.empty()) << all.violations.front();
  const double nic = 12.5 * profile.collective.link(nccl::LinkClass::kNetwork).efficiency.value;
  // Each send first runs its fixed part (launch, hops) at full speed, then its bytes move.
  // Every send alone saturates the NIC, so from the first moment any bytes move (the smallest
  // fixed part) until the last send ends, the NIC carries exactly its capacity: the last one
  // ends at min F + 8 x 64 MiB / 11.25 GB/s, and none ends sooner than it would alone.
  double min_fixed = 1e300;
  double last = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string id = fmt::format("s{}", i);
    min_fixed = std::min(min_fixed, fixed_us(cluster, profile, all.s.w, id));
    const double end = running_us(all.s, id);
    last = std::max(last, end);
    EXPECT_GE(end, all.s.r.ops[all.s.op(id)].alone.us()) << i;
  }
  EXPECT_NEAR(last, min_fixed + 8 * 64.0 * kMebibyte / (nic * 1e3), 1.0);
  EXPECT_GT(running_us(all.s, "s0") / running_us(alone.s, "s0"), 7.5);
}

TEST(ContentionPhysics, AStreamingKernelAndAnAllReduceShareHbm) {
  // One H100 node, 8 ranks; each runs a memory-bound kernel (40 GB, elementwise) beside a 1 GiB
  // Ring/Simple all-reduce on 16 channels. L2 effects are switched off (l2_spill = l2_pollution =
  // 0) so that HBM alone couples them. The kernel alone draws d_k = 4 GB / T_k, the all-reduce
  // d_c = gpu_bytes * 3 touches / T_c; HBM sustains C = 3350 * 0.85 GB/s. When d_k + d_c > C,
  // progressive filling gives both the same fraction p = C / (d_k + d_c) (neither is limited
  // below that elsewhere: a memory-bound kernel loses nothing to the CTAs' SMs but its tiny
  // arithmetic), so the all-reduce, which ends first, takes T_c / p; the kernel then finishes
  // its rest alone.
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  hardware::HardwareProfile profile = hardware::load_profile("h100-sxm");
  profile.contention.l2_spill.value = 0;
  profile.contention.l2_pollution.value = 0;
  std::string ranks = "[";
  for (int r = 0; r < 8; ++r) {
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [
          {{"stream": "k", "ops": [{{"id": "k{}", "kind": "compute", "flops": 1e9, "bytes": 40000000000,
             "blocks": 8448, "class": "elementwise"}}]}},
          {{"stream": "c", "ops": [{{"id": "c{}", "kind": "allreduce", "group": "all",
             "bytes": 1073741824, "config": {{"algo": "Ring", "proto": "Simple",
             "nchannels": 16}}}}]}}]}})",
        r ? "," : "", r, r, r);
  }
  const traces::Workload w = test::workload(ranks + "]", R"({"all": [0,1,2,3,4,5,6,7]})");
  const ModelCost cost(cluster, profile, w);
  const Ran r = run(cluster, profile, w);
  EXPECT_TRUE(r.violations.empty()) << r.violations.front();
  const double t_k = r.s.r.ops[r.s.op("k0")].alone.us();
  const double t_c = r.s.r.ops[r.s.op("c0")].alone.us();
  const CommConfig cfg = cost.config_for(r.s.op("c0"));
  const CollectiveModel& m = cost.collective_model(r.s.op("c0"));
  const CollectiveEstimate e = m.estimate(CollKind::kAllReduce, 1073741824, cfg);
  const double d_k = 4e10 / (t_k * 1e3);
  const double d_c =
      e.gpu_bytes * m.hbm_per_payload_byte(CollKind::kAllReduce, cfg, 1073741824) / (t_c * 1e3);
  const double C = profile.gpu.hbm_GBps.value * profile.contention.hbm_efficiency.value;
  ASSERT_GT(d_k + d_c, C) << "the case needs HBM to be over-subscribed";
  const double p = C / (d_k + d_c);
  ASSERT_GT(t_k, t_c / p) << "the kernel must outlast the all-reduce";
  EXPECT_NEAR(running_us(r.s, "c0"), t_c / p, 1e-3 * t_c / p);
  // The kernel did T_c of its work (in time-alone units) while the all-reduce ran, the rest
  // alone: it ends T_c (1/p - 1) late.
  EXPECT_NEAR(running_us(r.s, "k0"), t_k + t_c * (1 / p - 1), 1e-3 * t_k);
  // Both slowed: communication by compute, and compute by communication.
  EXPECT_GT(running_us(r.s, "c0"), 1.05 * t_c);
}

TEST(ContentionPhysics, AMeasuredCollectiveDrawsWhatItsDurationSays) {
  // Two 1 GiB all-reduces on two streams of 8 H100s, each given duration_us 100,000 (a trace's
  // measurement): each moves 2 * 7/8 GiB per GPU in 100 ms, about 19 GB/s on ports of 354 GB/s,
  // so they hardly contend, whatever the model's own (much shorter) time for them.
  std::string ranks = "[";
  for (int r = 0; r < 8; ++r) {
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [
          {{"stream": "a", "ops": [{{"id": "a{}", "kind": "allreduce", "group": "all",
             "bytes": 1073741824, "duration_us": 100000}}]}},
          {{"stream": "b", "ops": [{{"id": "b{}", "kind": "allreduce", "group": "all",
             "bytes": 1073741824, "duration_us": 100000}}]}}]}})",
        r ? "," : "", r, r, r);
  }
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  const Ran r = run(cluster, hardware::load_profile("h100-sxm"),
                    test::workload(ranks + "]", R"({"all": [0,1,2,3,4,5,6,7]})"));
  EXPECT_TRUE(r.violations.empty());
  EXPECT_NEAR(running_us(r.s, "a0"), 100000, 1);
  EXPECT_NEAR(running_us(r.s, "b0"), 100000, 1);
}

TEST(ContentionPhysics, ADurationFasterThanTheHardwareIsCappedAndWarned) {
  // 1 GiB copied in 10 us is 215 TB/s of HBM traffic on an H100 that sustains 2.85 TB/s: the
  // copy alone still takes its stated 10 us (its draw is capped at the capacity, not throttled
  // further), and the model says why.
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  const hardware::HardwareProfile profile = hardware::load_profile("h100-sxm");
  const traces::Workload w = test::workload(R"([{"rank": 0, "streams": [{"stream": "s", "ops": [
      {"id": "m", "kind": "memcpy", "bytes": 1073741824, "duration_us": 10}]}]}])");
  const ModelCost cost(cluster, profile, w);
  ResourceContention model(cost);
  const test::Simulated s = test::simulate(w, SimOptions{&cost, &model});
  EXPECT_NEAR(running_us(s, "m"), 10, 1e-3);
  ASSERT_EQ(model.warning_count(), 1u);
  EXPECT_NE(model.warnings().front().find("rank 0 HBM"), std::string::npos)
      << model.warnings().front();
}

TEST(ContentionPhysics, TheWarningNamesTheOpWhoseDurationItIs) {
  // 64 MiB received in 500 us is 134 GB/s through a PCIe link of 25.6 GB/s; the duration is the
  // recv's, so the warning names the recv, not the send the transfer is keyed by.
  const topologies::Cluster cluster = topologies::load_cluster("a40-pcie", 1);
  const hardware::HardwareProfile profile = hardware::load_profile("a40");
  const traces::Workload w = test::workload(R"([
      {"rank": 0, "streams": [{"stream": "s", "ops": [
        {"id": "rx", "kind": "recv", "peer": 1, "bytes": 67108864, "duration_us": 500}]}]},
      {"rank": 1, "streams": [{"stream": "s", "ops": [
        {"id": "tx", "kind": "send", "peer": 0, "bytes": 67108864}]}]}])");
  const ModelCost cost(cluster, profile, w);
  ResourceContention model(cost);
  const test::Simulated s = test::simulate(w, SimOptions{&cost, &model});
  EXPECT_NEAR(running_us(s, "rx"), 500, 1e-3);
  ASSERT_EQ(model.warning_count(), 1u);
  EXPECT_NE(model.warnings().front().find("op 'rx'"), std::string::npos)
      << model.warnings().front();
}

TEST(ContentionPhysics, ASendInALargeCommunicatorTakesItsOwnPath) {
  // A send from GPU 8 to GPU 12 of two a40-nvlink nodes, inside a group {0, 8, 12}: its own path
  // crosses node 1's xGMI (GPU 8 on socket 0, GPU 12 on socket 1), so alone it is bound there
  // at 12.8 GB/s, and nothing slows it further: its running time is its time alone.
  const topologies::Cluster cluster = topologies::load_cluster("a40-nvlink", 2);
  std::string ranks = "[";
  for (int r = 0; r < 16; ++r) {
    const std::string op =
        r == 8    ? R"({"id": "s", "kind": "send", "peer": 12, "group": "g", "bytes": 268435456})"
        : r == 12 ? R"({"id": "rv", "kind": "recv", "peer": 8, "group": "g", "bytes": 268435456})"
                  : fmt::format(R"({{"id": "i{}", "kind": "compute", "duration_us": 1}})", r);
    ranks += fmt::format(R"({}{{"rank": {}, "streams": [{{"stream": "s", "ops": [{}]}}]}})",
                         r ? "," : "", r, op);
  }
  const Ran r = run(cluster, hardware::load_profile("a40"),
                    test::workload(ranks + "]", R"({"g": [0, 8, 12]})"));
  const traces::OpTimes& t = r.s.r.ops[r.s.op("s")];
  EXPECT_EQ((t.end - t.start).count_ns(), t.alone.count_ns());
  EXPECT_GT(t.alone.us(), 256.0 * kMebibyte / (12.8 * 1e3));
}

TEST(ContentionPhysics, NvlsAllGatherAndReduceScatterUseOppositeDirections) {
  // NVLS AllGather sends S/n up each port and receives (n-1)/n S down; ReduceScatter the other
  // way round. Together each direction carries S against (n-1)/n S for one alone: 8/7 = 1.14x the
  // busiest direction, so both slow by far less than 2x.
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  std::string ranks = "[";
  for (int r = 0; r < 8; ++r) {
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [
          {{"stream": "a", "ops": [{{"id": "ag{}", "kind": "allgather", "group": "all",
             "bytes": 1073741824, "config": {{"algo": "NVLS", "proto": "Simple"}}}}]}},
          {{"stream": "b", "ops": [{{"id": "rs{}", "kind": "reducescatter", "group": "all",
             "bytes": 1073741824, "config": {{"algo": "NVLS", "proto": "Simple"}}}}]}}]}})",
        r ? "," : "", r, r, r);
  }
  const Ran r = run(cluster, hardware::load_profile("h100-sxm"),
                    test::workload(ranks + "]", R"({"all": [0,1,2,3,4,5,6,7]})"));
  EXPECT_TRUE(r.violations.empty());
  const traces::OpTimes& t = r.s.r.ops[r.s.op("ag0")];
  EXPECT_LT((t.end - t.start).us(), 1.2 * t.alone.us());
  EXPECT_GT((t.end - t.start).us(), t.alone.us());
}

TEST(ContentionPhysics, SmallCollectivesDoNotPolluteTheL2) {
  // 4 KiB all-reduces pinned to 32 channels of 2 MiB chunks put at most 4 KiB each in flight,
  // not 4 x 32 x 2 MiB: a streaming kernel beside a hundred of them keeps its speed (to 0.1%).
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  std::string ranks = "[";
  for (int r = 0; r < 2; ++r) {
    std::string colls;
    for (int i = 0; i < 100; ++i) {
      colls += fmt::format(
          R"({}{{"id": "c{}_{}", "kind": "allreduce", "group": "all", "bytes": 4096,
             "config": {{"algo": "Ring", "proto": "Simple", "nchannels": 32}}}})",
          i ? "," : "", r, i);
    }
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [
          {{"stream": "k", "ops": [{{"id": "k{}", "kind": "compute", "flops": 1e9,
             "bytes": 20000000000, "class": "elementwise"}}]}},
          {{"stream": "c", "ops": [{}]}}]}})",
        r ? "," : "", r, r, colls);
  }
  const Ran r = run(cluster, hardware::load_profile("h100-sxm"),
                    test::workload(ranks + "]", R"({"all": [0, 1]})"));
  const traces::OpTimes& t = r.s.r.ops[r.s.op("k0")];
  EXPECT_LT((t.end - t.start).us(), 1.001 * t.alone.us());
}

TEST(ContentionPhysics, AWaitingCollectiveHoldsSmsButMovesNothing) {
  // Rank 0 launches an all-reduce whose peer arrives 1 ms later, beside a streaming kernel: while
  // it waits it holds its 16 CTAs' SMs (the kernel's grant leaves them out) but no bytes flow:
  // every link and HBM carries only the kernel.
  const topologies::Cluster cluster = topologies::load_cluster("dgx-h100", 1);
  const hardware::HardwareProfile profile = hardware::load_profile("h100-sxm");
  const traces::Workload w = test::workload(
      R"([{"rank": 0, "streams": [
            {"stream": "k", "ops": [{"id": "k", "kind": "compute", "flops": 1e12, "bytes": 1e8,
                                     "blocks": 132, "blocks_per_sm": 1, "class": "gemm"}]},
            {"stream": "c", "ops": [{"id": "c0", "kind": "allreduce", "group": "g",
               "bytes": 1073741824, "config": {"algo": "Ring", "nchannels": 16}}]}]},
          {"rank": 1, "streams": [{"stream": "c", "ops": [
            {"id": "late", "kind": "compute", "duration_us": 1000},
            {"id": "c1", "kind": "allreduce", "group": "g", "bytes": 1073741824,
             "config": {"algo": "Ring", "nchannels": 16}}]}]}])",
      R"({"g": [0, 1]})");
  const ModelCost cost(cluster, profile, w);
  ResourceContention model(cost);
  const traces::ExecutionGraph g = traces::analyze(w, "test");
  model.bind(w, g);
  model.waiting(*w.find_op("c0"));
  model.started(Activity{0, false, *w.find_op("k")});
  std::vector<RateChange> out;
  model.rates(out);
  EXPECT_EQ(model.held_ctas(0), 16);
  const SmGrant grant = model.grant_of(*w.find_op("k"));
  EXPECT_EQ(grant.full, 132 - 16);
  EXPECT_EQ(grant.blocks_per_shared, 0);  // a GEMM tile does not fit beside an NCCL CTA
  for (FlowSolver::ResourceId res = 0; res < model.solver().resource_count(); ++res) {
    if (model.resource_name(res) != "rank 0 HBM") {
      EXPECT_EQ(model.solver().usage(res), 0.0) << model.resource_name(res);
    }
  }
  EXPECT_EQ(model.check_invariants(), "");
}

}  // namespace
}  // namespace lagom::sim
