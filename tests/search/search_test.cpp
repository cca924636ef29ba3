// The evaluator (search/evaluator.hpp) and the search methods (search/search.hpp) on small
// hand-written steps: a chain of compute ops on one stream with k collectives of different sizes
// on another, each overlapping the next compute op, on one node of the paper's cluster A.
#include "lagom/search/search.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lagom/common/interrupt.hpp"
#include "lagom/hardware/profile.hpp"
#include "lagom/models/generator.hpp"
#include "lagom/models/model_spec.hpp"
#include "lagom/nccl/legality.hpp"
#include "lagom/search/evaluator.hpp"
#include "lagom/search/plan.hpp"
#include "lagom/search/plan_source.hpp"
#include "lagom/sim/engine.hpp"
#include "lagom/sim/model_cost.hpp"
#include "lagom/sim/resource_contention.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "test_util.hpp"

namespace lagom::test {
namespace {

using search::Evaluator;
using search::Grid;
using search::Method;
using search::Resources;
using search::SearchOptions;
using search::SearchResult;
using search::SpaceOptions;

struct Hardware {
  topologies::Cluster cluster = topologies::load_cluster("a40-nvlink");
  hardware::HardwareProfile profile = hardware::default_profile_for_gpu(cluster.spec().gpu_type);
};

const Hardware& a40() {
  static const Hardware hw;
  return hw;
}

// NVSwitch: Tree, NVLS and LL128 subspaces, whose chunk and threads NCCL derives from the
// channel count.
const Hardware& h100() {
  static const Hardware hw{topologies::load_cluster("dgx-h100")};
  return hw;
}

constexpr int kRanks = 4;
constexpr std::int64_t kMiB = std::int64_t{1} << 20;

// k + 1 GEMMs (flops each, 1056 blocks, one per SM) on a compute stream; collective i (an
// all-gather of (i + 1) x per_rank bytes per rank) starts after GEMM i on a comm stream, so it
// overlaps GEMM i + 1. Every collective is its own class (distinct sizes).
traces::Workload chain(int k, std::int64_t per_rank = 4 * kMiB, double flops = 1e11,
                       std::string_view extra_comm = "") {
  std::string ranks;
  std::string group;
  for (int r = 0; r < kRanks; ++r) {
    std::string comp;
    std::string comm;
    for (int i = 0; i <= k; ++i) {
      comp += fmt::format(R"({}{{"id": "r{}.c{}", "kind": "compute", "flops": {},
                              "bytes": 67108864, "blocks": 1056, "blocks_per_sm": 1,
                              "class": "gemm"}})",
                          i > 0 ? ", " : "", r, i, flops);
    }
    for (int i = 0; i < k; ++i) {
      comm += fmt::format(R"({}{{"id": "r{}.a{}", "kind": "allgather", "group": "world",
                              "bytes": {}, "deps": ["r{}.c{}"]}})",
                          i > 0 ? ", " : "", r, i, per_rank * (i + 1) * kRanks, r, i);
    }
    std::string extra(extra_comm);
    for (std::size_t at; (at = extra.find("{r}")) != std::string::npos;) {
      extra.replace(at, 3, std::to_string(r));
    }
    ranks += fmt::format(R"({}{{"rank": {}, "streams": [
                              {{"stream": "compute", "ops": [{}]}},
                              {{"stream": "comm", "ops": [{}{}]}}]}})",
                         r > 0 ? ", " : "", r, comp, comm, extra);
    group += fmt::format("{}{}", r > 0 ? ", " : "", r);
  }
  return workload("[" + ranks + "]", R"({"world": [)" + group + "]}");
}

SpaceOptions coarse_nccl() {
  return SpaceOptions{Grid::kCoarse, Resources::kNccl};
}

// The combinations exhaustive search enumerates: the product over classes of their grid points.
std::size_t combinations(const Evaluator& eval) {
  std::size_t combos = 1;
  for (const search::CollClass& c : eval.classes()) {
    std::size_t points = 0;
    for (const search::Subspace& s : c.subspaces) {
      points += s.size();
    }
    combos *= points;
  }
  return combos;
}

SearchResult run(Evaluator& eval, Method m, std::int64_t budget = 0, std::uint64_t seed = 1) {
  SearchOptions o;
  o.method = m;
  o.budget = budget;
  o.seed = seed;
  return search::run_search(eval, o);
}

std::string plan_json(const search::ConfigPlan& plan) {
  std::ostringstream out;
  search::write_plan_json(plan, out);
  return out.str();
}

// The step simulated as `lagom simulate --cluster` does (ModelCost, ResourceContention, Engine),
// optionally with a plan replayed through PlanOverrides as `simulate --plan` does.
sim::SimResult simulate_step(const traces::Workload& w, const search::ConfigPlan* plan = nullptr,
                             bool contention = true, const Hardware& hw = a40()) {
  sim::ModelCost cost(hw.cluster, hw.profile, w);
  std::unique_ptr<search::PlanOverrides> overrides;
  if (plan != nullptr) {
    overrides = std::make_unique<search::PlanOverrides>(*plan, w, cost, "plan");
    cost.set_config_source(overrides.get());
  }
  std::unique_ptr<sim::ResourceContention> rc;
  if (contention) {
    rc = std::make_unique<sim::ResourceContention>(cost);
  }
  const traces::ExecutionGraph g = traces::analyze(w);
  sim::Engine engine(w, g, sim::SimOptions{&cost, rc.get()});
  return engine.run();
}

std::vector<std::optional<nccl::CommConfig>> nccl_configs(const Evaluator& e) {
  return std::vector<std::optional<nccl::CommConfig>>(e.classes().size());
}

// --- Evaluator -------------------------------------------------------------------------------

TEST(SearchEvaluator, ClassesGroupCallsOfOneCollectiveSizeAndCommunicator) {
  // Two all-gathers of 16 MiB (the chain's first and this one), one of 32 MiB, a reduce-scatter
  // of 16 MiB (another collective) and a fixed-duration all-reduce (measured, not tunable): three
  // classes.
  const std::string extra =
      R"(, {"id": "r{r}.ag2", "kind": "allgather", "group": "world", "bytes": 16777216},
           {"id": "r{r}.rs", "kind": "reducescatter", "group": "world", "bytes": 16777216},
           {"id": "r{r}.ar", "kind": "allreduce", "group": "world", "bytes": 1024,
            "duration_us": 5})";
  const traces::Workload w = chain(2, 4 * kMiB, 1e11, extra);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  const auto& classes = eval.classes();
  ASSERT_EQ(classes.size(), 3u);
  sim::ModelCost cost(a40().cluster, a40().profile, w);
  std::multiset<std::pair<std::string, std::int64_t>> seen;
  for (const search::CollClass& c : classes) {
    seen.emplace(std::string(nccl::to_string(c.coll)), c.bytes);
    EXPECT_EQ(c.nranks, kRanks);
    EXPECT_EQ(c.nnodes, 1);
    EXPECT_EQ(c.calls, static_cast<int>(c.examples.size()));
    EXPECT_EQ(c.calls, c.coll == nccl::CollKind::kAllGather && c.bytes == 16 * kMiB ? 2 : 1);
    EXPECT_FALSE(c.subspaces.empty());
    // NCCL's own choice, as the simulator makes it without a plan.
    const nccl::CommConfig n = cost.config_for(c.examples.front());
    EXPECT_EQ(c.nccl.algo, n.algo);
    EXPECT_EQ(c.nccl.proto, n.proto);
    EXPECT_EQ(c.nccl.nchannels, n.nchannels);
    EXPECT_EQ(c.nccl.nthreads, n.nthreads);
    EXPECT_EQ(c.nccl.chunk_bytes, n.chunk_bytes);
  }
  EXPECT_EQ(seen,
            (std::multiset<std::pair<std::string, std::int64_t>>{
                {"AllGather", 16 * kMiB}, {"AllGather", 32 * kMiB}, {"ReduceScatter", 16 * kMiB}}));
}

TEST(SearchEvaluator, NcclsConfigsGiveTheSimulatedStep) {
  const traces::Workload w = chain(3);
  for (bool contention : {true, false}) {
    SCOPED_TRACE(contention ? "with contention" : "without contention");
    Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl(), contention);
    const search::Evaluation e = eval.evaluate(nccl_configs(eval));
    EXPECT_EQ(eval.evaluations(), 1);
    const sim::SimResult r = simulate_step(w, nullptr, contention);
    EXPECT_EQ(e.step_time, r.step_time);
    // x_j: its one call's duration (one member); compute: every compute op's running time.
    ASSERT_EQ(e.comm_us.size(), 3u);
    for (std::size_t j = 0; j < 3; ++j) {
      const traces::OpId op = eval.classes()[j].examples.front();
      EXPECT_DOUBLE_EQ(e.comm_us[j], (r.ops[op].end - r.ops[op].start).us());
      EXPECT_GT(e.group_comm_us[j], 0);
      EXPECT_GT(e.group_compute_us[j], 0);  // every collective overlaps a GEMM
    }
    double compute = 0;
    for (traces::OpId op = 0; op < w.op_count(); ++op) {
      if (w.kind(op) == traces::OpKind::kCompute) {
        compute += (r.ops[op].end - r.ops[op].start).us();
      }
    }
    EXPECT_DOUBLE_EQ(e.compute_us, compute);
  }
}

TEST(SearchEvaluator, AConfigIsAppliedToEveryCallOfItsClass) {
  // Evaluating class 0 at Ring/Simple on one channel with 256 KiB chunks is the workload with
  // that config pinned on its ops.
  const traces::Workload w = chain(1);
  Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kCoarse, Resources::kFull});
  nccl::CommConfig c = eval.classes()[0].nccl;
  c.algo = nccl::Algorithm::kRing;
  c.proto = nccl::Protocol::kSimple;
  c.nchannels = 1;
  c.chunk_bytes = 256 * 1024;
  const std::vector<std::optional<nccl::CommConfig>> configs{c};
  const search::Evaluation e = eval.evaluate(configs);
  const search::Evaluation nccl = eval.evaluate(nccl_configs(eval));
  EXPECT_NE(e.step_time, nccl.step_time);
  EXPECT_EQ(eval.evaluations(), 2);

  std::string pinned;
  for (int r = 0; r < kRanks; ++r) {
    pinned += fmt::format(
        R"({}{{"rank": {}, "streams": [
             {{"stream": "compute", "ops": [
               {{"id": "r{}.c0", "kind": "compute", "flops": 1e11, "bytes": 67108864,
                 "blocks": 1056, "blocks_per_sm": 1, "class": "gemm"}},
               {{"id": "r{}.c1", "kind": "compute", "flops": 1e11, "bytes": 67108864,
                 "blocks": 1056, "blocks_per_sm": 1, "class": "gemm"}}]}},
             {{"stream": "comm", "ops": [
               {{"id": "r{}.a0", "kind": "allgather", "group": "world", "bytes": {},
                 "deps": ["r{}.c0"], "config": {{"algo": "Ring", "proto": "Simple",
                 "nchannels": 1, "nthreads": {}, "chunk_bytes": 262144}}}}]}}]}})",
        r > 0 ? ", " : "", r, r, r, r, 4 * kMiB * kRanks, r, c.nthreads);
  }
  const sim::SimResult r =
      simulate_step(workload("[" + pinned + "]", R"({"world": [0, 1, 2, 3]})"));
  EXPECT_EQ(e.step_time, r.step_time);
}

// Four ranks of an A40 node: memory-bound kernels on the compute stream, all-gathers on one
// communication stream and all-reduces on another, so collectives share links and HBM with each
// other and with the kernels. `measured_us` > 0 gives rank 3's first all-gather that duration
// (a partly measured instance, as a Chakra trace can hold).
traces::Workload crowded(double measured_us = 0) {
  std::string ranks;
  for (int r = 0; r < kRanks; ++r) {
    std::string comp;
    std::string ag;
    std::string ar;
    for (int i = 0; i < 3; ++i) {
      comp += fmt::format(R"({}{{"id": "r{}.m{}", "kind": "compute", "flops": 1e8,
                              "bytes": 4294967296, "class": "elementwise"}})",
                          i > 0 ? ", " : "", r, i);
    }
    for (int i = 0; i < 2; ++i) {
      const std::string dur = r == 3 && i == 0 && measured_us > 0
                                  ? fmt::format(R"(, "duration_us": {})", measured_us)
                                  : "";
      ag += fmt::format(R"({}{{"id": "r{}.a{}", "kind": "allgather", "group": "world",
                            "bytes": {}{}}})",
                        i > 0 ? ", " : "", r, i, 32 * kMiB * (i + 1), dur);
      ar += fmt::format(R"({}{{"id": "r{}.b{}", "kind": "allreduce", "group": "world",
                            "bytes": {}}})",
                        i > 0 ? ", " : "", r, i, 16 * kMiB * (i + 1));
    }
    ranks += fmt::format(R"({}{{"rank": {}, "streams": [{{"stream": "compute", "ops": [{}]}},
                              {{"stream": "c1", "ops": [{}]}}, {{"stream": "c2", "ops": [{}]}}]}})",
                         r > 0 ? ", " : "", r, comp, ag, ar);
  }
  return workload("[" + ranks + "]", R"({"world": [0, 1, 2, 3]})");
}

TEST(SearchEvaluator, EachCallAloneBoundsAClassesTimeUnderContention) {
  // alone_comm_us is what Lagom's subspace switch skips candidates by: no evaluation may give a
  // class a shorter time than its calls alone. Every class of a crowded step (above) at points
  // across every subspace's grid, the others at NCCL's choice; the collectives must really be
  // slowed at some of them, or the check would be an equality.
  for (double measured_us : {0.0, 5.0}) {
    const traces::Workload w = crowded(measured_us);
    Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kCoarse, Resources::kFull});
    ASSERT_EQ(eval.classes().size(), measured_us > 0 ? 3U : 4U);
    std::size_t checked = 0;
    std::size_t slowed = 0;
    for (std::size_t j = 0; j < eval.classes().size(); ++j) {
      for (const search::Subspace& s : eval.classes()[j].subspaces) {
        for (std::size_t ch = 0; ch < s.channels.size(); ch += 3) {
          for (std::size_t k = 0; k < s.chunks.size(); k += 3) {
            const nccl::CommConfig c = s.at(ch, s.threads.size() / 2, k);
            std::vector<std::optional<nccl::CommConfig>> configs(eval.classes().size());
            configs[j] = c;
            const search::Evaluation e = eval.evaluate(configs);
            const double alone = eval.alone_comm_us(j, c);
            EXPECT_GT(alone, 0);
            EXPECT_GE(e.comm_us[j], alone * (1 - 1e-9))
                << "class " << j << ", " << nccl::to_string(c.algo) << "/"
                << nccl::to_string(c.proto) << " nc " << c.nchannels << " chunk " << c.chunk_bytes
                << ", measured " << measured_us;
            slowed += e.comm_us[j] > alone * 1.05 ? 1 : 0;
            ++checked;
          }
        }
      }
    }
    EXPECT_GT(checked, 20U);
    EXPECT_GT(slowed, checked / 4) << "the step must slow its collectives";
  }
}

// Four ranks: three 32 MiB all-gathers beside heavy compute, the second measured (kMeasuredUs)
// on rank `measured_rank` only.
constexpr double kMeasuredUs = 3000;
traces::Workload partly_measured(int measured_rank) {
  std::string ranks;
  for (int r = 0; r < kRanks; ++r) {
    std::string ag;
    for (int i = 0; i < 3; ++i) {
      const std::string dur =
          i == 1 && r == measured_rank ? fmt::format(R"(, "duration_us": {})", kMeasuredUs) : "";
      ag += fmt::format(R"({}{{"id": "r{}.a{}", "kind": "allgather", "group": "world",
                            "bytes": {}{}}})",
                        i > 0 ? ", " : "", r, i, 32 * kMiB, dur);
    }
    ranks += fmt::format(
        R"({}{{"rank": {}, "streams": [{{"stream": "compute", "ops": [{{"id": "r{}.m",
              "kind": "compute", "flops": 1e12, "bytes": 8589934592, "class": "elementwise"}}]}},
              {{"stream": "c", "ops": [{}]}}]}})",
        r > 0 ? ", " : "", r, r, ag);
  }
  return workload("[" + ranks + "]", R"({"world": [0, 1, 2, 3]})");
}

TEST(SearchEvaluator, AMeasuredCallIsSearchedAsItsPlanReplays) {
  // A collective measured on any of its members (traces::measured_member) runs alone for that
  // duration whatever its configuration, but its configuration still sets the SMs it holds and
  // its traffic under contention, and a plan's rule for its key applies to it on replay. So where
  // its key is tuned it is in the class: the step a search reports is the step its plan replays
  // to, whichever member carries the duration. (A review found plans replaying to steps up to 1%
  // off when a measured call was left at NCCL's choice in the search.)
  for (int measured_rank : {0, 3}) {
    SCOPED_TRACE(measured_rank);
    const traces::Workload w = partly_measured(measured_rank);
    const traces::ExecutionGraph g = traces::analyze(w);
    const traces::InstanceId inst = g.instance_of(w.find_op("r0.a1").value());
    ASSERT_EQ(traces::measured_member(w, g, inst), w.find_op(fmt::format("r{}.a1", measured_rank)));
    for (Resources res : {Resources::kNccl, Resources::kFull}) {
      Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kCoarse, res});
      ASSERT_EQ(eval.classes().size(), 1U);
      EXPECT_EQ(eval.classes()[0].calls, 3);
      // Alone, the measured call counts its duration whatever the configuration, the other two
      // what the model gives them under it (a third each of the unmeasured step's).
      const traces::Workload none = partly_measured(-1);
      Evaluator unmeasured(none, a40().cluster, a40().profile, SpaceOptions{Grid::kCoarse, res});
      for (const search::Subspace& sub : eval.classes()[0].subspaces) {
        const nccl::CommConfig c = sub.at(0, 0, 0);
        const double three = unmeasured.alone_comm_us(0, c);
        EXPECT_GT(three, 0.0);
        EXPECT_NEAR(eval.alone_comm_us(0, c), three * 2 / 3 + kMeasuredUs, three * 1e-9);
      }
      for (Method m : {Method::kLagom, Method::kAutoCcl}) {
        SearchOptions o;
        o.method = m;
        const SearchResult r = search::run_search(eval, o);
        EXPECT_EQ(simulate_step(w, &r.plan).step_time, r.step_time) << search::to_string(m);
      }
    }
  }
}

TEST(SearchMethods, AClassWhoseCommunicatorsDifferKeepsEachOnesOwnChoice) {
  // Two-GPU all-reduces of one size on NVLink pairs (0, 1), (2, 3) and on PCIe pairs (4, 6),
  // (5, 7) of an A40 node: one class, whose NCCL choice differs between its communicators. A plan
  // that leaves it at NCCL's choice must not pin the first communicator's configuration on all of
  // them, or its replay is another step (a review: 1247.1 us reported, 1232.7 replayed).
  const char* group_of[] = {"nv01", "nv01", "nv23", "nv23", "pc46", "pc57", "pc46", "pc57"};
  std::string ranks;
  for (int r = 0; r < 8; ++r) {
    std::string comp;
    std::string comm;
    for (int i = 0; i < 3; ++i) {
      comp += fmt::format(R"({}{{"id": "r{}.c{}", "kind": "compute", "flops": 5e9,
                              "bytes": 16777216, "blocks": 512, "class": "gemm"}})",
                          i > 0 ? ", " : "", r, i);
      comm += fmt::format(R"({}{{"id": "r{}.a{}", "kind": "allreduce", "group": "{}",
                              "bytes": 1048576, "deps": ["r{}.c{}"]}})",
                          i > 0 ? ", " : "", r, i, group_of[r], r, i);
    }
    ranks += fmt::format(R"({}{{"rank": {}, "streams": [{{"stream": "compute", "ops": [{}]}},
                              {{"stream": "comm", "ops": [{}]}}]}})",
                         r > 0 ? ", " : "", r, comp, comm);
  }
  const traces::Workload w = workload(
      "[" + ranks + "]", R"({"nv01": [0, 1], "nv23": [2, 3], "pc46": [4, 6], "pc57": [5, 7]})");
  for (Resources res : {Resources::kNccl, Resources::kFull}) {
    Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, res});
    ASSERT_EQ(eval.classes().size(), 1U);
    EXPECT_TRUE(eval.classes()[0].nccl_varies);
    for (Method m : {Method::kLagom, Method::kAutoCcl, Method::kRandom}) {
      SCOPED_TRACE(::testing::Message() << search::to_string(m) << " " << search::to_string(res));
      SearchOptions o;
      o.method = m;
      o.budget = m == Method::kRandom ? 2 : 0;  // random's two draws keep NCCL's choice
      const SearchResult r = search::run_search(eval, o);
      EXPECT_EQ(simulate_step(w, &r.plan).step_time, r.step_time);
      if (r.step_time == r.nccl_step_time) {
        EXPECT_TRUE(r.plan.rules.empty());
      }
    }
  }
}

TEST(SearchMethods, AStepWithNothingToTuneTakesOneEvaluation) {
  // Every collective measured: no class. Each method reports NCCL's step in one evaluation (random
  // used to draw the one empty candidate its whole budget long).
  const traces::Workload w = workload(
      R"([{"rank": 0, "streams": [{"stream": "c", "ops": [{"id": "a0", "kind": "allreduce",
            "group": "world", "bytes": 1048576, "duration_us": 50}]}]},
          {"rank": 1, "streams": [{"stream": "c", "ops": [{"id": "a1", "kind": "allreduce",
            "group": "world", "bytes": 1048576, "duration_us": 60}]}]}])",
      R"({"world": [0, 1]})");
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  ASSERT_TRUE(eval.classes().empty());
  for (Method m : {Method::kAutoCcl, Method::kLagom, Method::kExhaustive, Method::kRandom}) {
    SearchOptions o;
    o.method = m;
    o.budget = 50;
    const SearchResult r = search::run_search(eval, o);
    EXPECT_EQ(r.evaluations, 1) << search::to_string(m);
    EXPECT_EQ(r.step_time, r.nccl_step_time);
    EXPECT_EQ(r.method, m);
    EXPECT_TRUE(r.plan.rules.empty());
  }
}

TEST(SearchEvaluator, WrongNumberOfConfigsIsAnError) {
  const traces::Workload w = chain(2);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  const std::vector<std::optional<nccl::CommConfig>> one(1);
  EXPECT_NE(error_of([&] { eval.evaluate(one); }).find("2 collective classes"), std::string::npos);
}

// --- Methods ---------------------------------------------------------------------------------

TEST(SearchMethods, NamesParseCaseInsensitively) {
  for (Method m :
       {Method::kNccl, Method::kAutoCcl, Method::kLagom, Method::kExhaustive, Method::kRandom}) {
    EXPECT_EQ(search::parse_method(search::to_string(m)), m);
  }
  EXPECT_EQ(search::parse_method("LaGoM"), Method::kLagom);
  EXPECT_EQ(search::parse_method("AutoCCL"), Method::kAutoCcl);
  EXPECT_FALSE(search::parse_method("lagom2").has_value());
  EXPECT_FALSE(search::parse_method("").has_value());
}

TEST(SearchMethods, NcclIsOneEvaluationOfNcclsChoiceAndNoRules) {
  const traces::Workload w = chain(2);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  const SearchResult r = run(eval, Method::kNccl);
  EXPECT_EQ(r.evaluations, 1);
  EXPECT_EQ(r.step_time, r.nccl_step_time);
  EXPECT_EQ(r.nccl_step_time.us() / r.step_time.us(), 1.0);
  EXPECT_EQ(r.step_time, simulate_step(w).step_time);
  EXPECT_TRUE(r.plan.rules.empty());
  ASSERT_EQ(r.choices.size(), 2u);
  for (std::size_t j = 0; j < 2; ++j) {
    EXPECT_EQ(r.choices[j].config.nchannels, eval.classes()[j].nccl.nchannels);
    EXPECT_EQ(r.choices[j].time_us, r.choices[j].nccl_time_us);
  }
}

TEST(SearchMethods, EveryMethodReportsNcclsStepAndOneRulePerClass) {
  const traces::Workload w = chain(2);
  const sim::SimResult nccl = simulate_step(w);
  for (Resources res : {Resources::kNccl, Resources::kFull}) {
    Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kCoarse, res});
    for (Method m : {Method::kAutoCcl, Method::kLagom, Method::kExhaustive, Method::kRandom}) {
      if (m == Method::kExhaustive && res == Resources::kFull) {
        continue;  // 56^2 combinations: beyond this test's time
      }
      SCOPED_TRACE(fmt::format("{} in the {} space", search::to_string(m), search::to_string(res)));
      const SearchResult r = run(eval, m);
      EXPECT_EQ(r.method, m);
      EXPECT_EQ(r.nccl_step_time, nccl.step_time);
      EXPECT_EQ(r.plan.context.method, search::to_string(m));
      EXPECT_EQ(r.plan.context.evaluations, r.evaluations);
      EXPECT_EQ(r.plan.context.step_time_us, r.step_time.us());
      ASSERT_EQ(r.plan.rules.size(), eval.classes().size());
      for (std::size_t j = 0; j < eval.classes().size(); ++j) {
        const search::CollClass& c = eval.classes()[j];
        const search::PlanRule& rule = r.plan.rules[j];
        EXPECT_EQ(rule.coll, c.coll);
        EXPECT_EQ(rule.min_bytes, c.bytes);
        EXPECT_EQ(rule.max_bytes, c.bytes);
        EXPECT_EQ(rule.nnodes, c.nnodes);
        EXPECT_EQ(rule.nranks, c.nranks);
        EXPECT_EQ(rule.algo, r.choices[j].config.algo);
        EXPECT_EQ(rule.proto, r.choices[j].config.proto);
        EXPECT_EQ(rule.nchannels, r.choices[j].config.nchannels);
        EXPECT_EQ(rule.calls, c.calls);
        // --space nccl plans set only what stock NCCL applies per call.
        if (res == Resources::kNccl) {
          EXPECT_EQ(rule.nthreads, 0);
          EXPECT_EQ(rule.chunk_bytes, 0);
        } else {
          EXPECT_EQ(rule.nthreads, r.choices[j].config.nthreads);
          EXPECT_EQ(rule.chunk_bytes, r.choices[j].config.chunk_bytes);
        }
      }
      // The plan replayed as `lagom simulate --plan` does gives the reported step.
      EXPECT_EQ(simulate_step(w, &r.plan).step_time, r.step_time);
    }
  }
}

// In the default space only algorithm, protocol and channels are pinned; NCCL derives threads
// and chunk for them, in the search as in the replay (on NVSwitch those depend on the channel
// count), so the replayed plan gives the searched step exactly.
TEST(SearchMethods, ChannelsOnlyPlansReplayExactlyOnNvswitch) {
  const traces::Workload w = chain(2, 4 * kMiB, 1e11);
  Evaluator eval(w, h100().cluster, h100().profile, SpaceOptions{Grid::kFine, Resources::kNccl});
  bool beyond_ring = false;
  for (const search::CollClass& c : eval.classes()) {
    beyond_ring = beyond_ring || c.subspaces.size() > 2;
  }
  ASSERT_TRUE(beyond_ring) << "expected NVSwitch subspaces beyond Ring";
  for (Method m : {Method::kLagom, Method::kAutoCcl, Method::kRandom}) {
    SCOPED_TRACE(search::to_string(m));
    const SearchResult r = run(eval, m, m == Method::kRandom ? 40 : 0);
    EXPECT_EQ(simulate_step(w, &r.plan, true, h100()).step_time, r.step_time);
    // The reported choices are what NCCL runs: legal, as derived for their channel counts.
    const sim::ModelCost cost(h100().cluster, h100().profile, w);
    for (std::size_t j = 0; j < r.choices.size(); ++j) {
      const search::CollClass& c = eval.classes()[j];
      const nccl::Tables& t = cost.nccl_tables(c.examples.front());
      EXPECT_FALSE(nccl::why_illegal(t.comm, c.coll, r.choices[j].config).has_value());
    }
  }
}

TEST(SearchMethods, OraclesNeverLoseToNcclAndExhaustiveBeatsEveryMethod) {
  // Exhaustive and random keep the best step seen, starting from NCCL's. Exhaustive sees every
  // combination of grid points; lagom and autoccl end with every class on a grid point, so none
  // of them can beat it. (autoccl minimises each collective's own time, not the step: it may
  // lose to NCCL, and lagom starts from minimum resources: neither promises to beat NCCL.)
  for (std::int64_t per_rank : {kMiB, 4 * kMiB, 16 * kMiB}) {
    SCOPED_TRACE(fmt::format("{} MiB per rank", per_rank / kMiB));
    const traces::Workload w = chain(2, per_rank, 1e12);
    Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
    const SearchResult ex = run(eval, Method::kExhaustive);
    const SearchResult rnd = run(eval, Method::kRandom, 40);
    EXPECT_LE(ex.step_time, ex.nccl_step_time);
    EXPECT_LE(rnd.step_time, rnd.nccl_step_time);
    EXPECT_LE(ex.step_time, rnd.step_time);
    EXPECT_LE(ex.step_time, run(eval, Method::kLagom).step_time);
    EXPECT_LE(ex.step_time, run(eval, Method::kAutoCcl).step_time);
  }
}

TEST(SearchMethods, ExhaustiveEvaluatesEveryCombinationOnce) {
  const traces::Workload w = chain(2);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  const std::size_t combos = combinations(eval);
  SearchOptions o;
  o.method = Method::kExhaustive;
  o.exhaustive_bound = false;
  const SearchResult r = search::run_search(eval, o);
  // NCCL's baseline, every combination, and the plan's own evaluation unless it was the last.
  EXPECT_GE(r.evaluations, static_cast<std::int64_t>(combos) + 1);
  EXPECT_LE(r.evaluations, static_cast<std::int64_t>(combos) + 2);
  EXPECT_EQ(r.bounded, 0);
}

// The bound (each stream's calls alone) rules combinations out without changing the answer:
// the same plan and step as simulating every combination, in fewer evaluations, on steps whose
// communication is hidden and on steps bound by it, in both spaces.
TEST(SearchMethods, ExhaustiveBoundKeepsTheOptimum) {
  struct Case {
    int k;
    std::int64_t per_rank;
    double flops;
    Resources res;
  };
  std::int64_t bounded = 0;
  for (const Case& c :
       {Case{2, kMiB, 1e11, Resources::kNccl}, Case{2, 16 * kMiB, 1e12, Resources::kNccl},
        Case{3, 64 * kMiB, 1e9, Resources::kNccl}, Case{1, 64 * kMiB, 1e9, Resources::kFull},
        Case{2, 4 * kMiB, 1e11, Resources::kFull}}) {
    SCOPED_TRACE(fmt::format("k={} {} MiB/rank {:g} flops", c.k, c.per_rank / kMiB, c.flops));
    const traces::Workload w = chain(c.k, c.per_rank, c.flops);
    Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kCoarse, c.res});
    SearchOptions o;
    o.method = Method::kExhaustive;
    o.exhaustive_bound = false;
    const SearchResult all = search::run_search(eval, o);
    o.exhaustive_bound = true;
    const SearchResult pruned = search::run_search(eval, o);
    EXPECT_EQ(pruned.step_time, all.step_time);
    // The same plan but for its evaluation count.
    search::ConfigPlan plan = pruned.plan;
    plan.context.evaluations = all.plan.context.evaluations;
    EXPECT_EQ(plan_json(plan), plan_json(all.plan));
    EXPECT_LE(pruned.evaluations, all.evaluations);
    // Every combination is either simulated or ruled out; NCCL's baseline is one more, and the
    // plan's own evaluation is the best one's.
    EXPECT_EQ(pruned.evaluations - 1 + pruned.bounded,
              static_cast<std::int64_t>(combinations(eval)));
    bounded += pruned.bounded;
  }
  EXPECT_GT(bounded, 0) << "the bound ruled nothing out";
}

// An interrupt while exhaustive search rules on its next candidates (an uncontended simulation,
// not an evaluation) keeps the best plan so far, as one during an evaluation does (a review
// found it lost: the engine's interrupt passed through as if it were the search's error).
TEST(SearchMethods, AnInterruptDuringExhaustiveBoundsKeepsTheBestPlan) {
  const traces::Workload w = chain(2, 16 * kMiB, 1e12);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  SearchOptions o;
  o.method = Method::kExhaustive;
  o.keep_on_interrupt = true;
  o.progress_every_s = 0;
  o.progress = [](std::int64_t evaluations, double) {
    if (evaluations == 2) {  // in the first batch after NCCL's evaluation
      request_interrupt();
    }
  };
  struct Cleared {
    ~Cleared() { clear_interrupt(); }
  } cleared;  // also if the search throws, so that later tests run uninterrupted
  const SearchResult r = search::run_search(eval, o);
  EXPECT_TRUE(r.interrupted);
  EXPECT_GE(r.evaluations, 2);
  EXPECT_LE(r.step_time, r.nccl_step_time);
}

TEST(SearchMethods, ExhaustiveOverBudgetThrowsSayingSo) {
  const traces::Workload w = chain(2);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  const std::size_t combos = combinations(eval);
  ASSERT_GT(combos, 20u);
  // The budget runs out while combinations that could still win are left.
  const std::string msg = error_of([&] { run(eval, Method::kExhaustive, 20); });
  EXPECT_NE(msg.find("after the budget of 20 evaluations"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(combos) + " combinations"), std::string::npos) << msg;
  EXPECT_NE(msg.find("raise --budget"), std::string::npos) << msg;
  // Eight classes in the full fine space are far beyond what it enumerates.
  const traces::Workload big = chain(8);
  Evaluator big_eval(big, a40().cluster, a40().profile,
                     SpaceOptions{Grid::kFine, Resources::kFull});
  const std::string big_msg = error_of([&] { run(big_eval, Method::kExhaustive); });
  EXPECT_NE(big_msg.find("more than the 1e+07 it enumerates"), std::string::npos) << big_msg;
  EXPECT_NE(big_msg.find("--grid coarse"), std::string::npos) << big_msg;
}

TEST(SearchMethods, RandomIsSeeded) {
  const traces::Workload w = chain(2);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  const std::string a = plan_json(run(eval, Method::kRandom, 12, 7).plan);
  EXPECT_EQ(a, plan_json(run(eval, Method::kRandom, 12, 7).plan));
  std::set<std::string> plans;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    plans.insert(plan_json(run(eval, Method::kRandom, 12, seed).plan));
  }
  EXPECT_GE(plans.size(), 2u) << "six seeds drew the same plan";
}

TEST(SearchMethods, BudgetBoundsEvaluations) {
  // Searches stop once they have spent the budget; the plan's own evaluation may add one.
  const traces::Workload w = chain(4, 16 * kMiB, 1e12);
  Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
  for (Method m : {Method::kAutoCcl, Method::kLagom, Method::kRandom}) {
    for (std::int64_t budget : {std::int64_t{2}, std::int64_t{5}}) {
      SCOPED_TRACE(fmt::format("{} with budget {}", search::to_string(m), budget));
      EXPECT_LE(run(eval, m, budget).evaluations, budget + 1);
    }
  }
}

// --budget is "evaluations (simulations) at most", the final check of the chosen plan included:
// the walks reserve it, the oracles reuse their best evaluation, and exhaustive takes a space of
// budget - 1 combinations (plus NCCL's own choice).
TEST(SearchMethods, BudgetIsAnUpperBound) {
  const traces::Workload w = chain(4, 16 * kMiB, 1e12);
  Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
  for (Method m : {Method::kAutoCcl, Method::kLagom, Method::kRandom}) {
    for (std::int64_t budget : {std::int64_t{2}, std::int64_t{5}}) {
      SCOPED_TRACE(fmt::format("{} with budget {}", search::to_string(m), budget));
      EXPECT_LE(run(eval, m, budget).evaluations, budget);
    }
  }
  const traces::Workload w2 = chain(2);
  Evaluator small(w2, a40().cluster, a40().profile, coarse_nccl());
  const std::int64_t combos = static_cast<std::int64_t>(combinations(small));
  EXPECT_LE(run(small, Method::kExhaustive, combos + 1).evaluations, combos + 1);
}

struct LagomVsExhaustive {
  int k;
  std::int64_t per_rank;
  double flops;
};

TEST(SearchMethods, LagomIsWithinTwoPercentOfExhaustiveOnSmallSteps) {
  for (const LagomVsExhaustive& c :
       {LagomVsExhaustive{1, kMiB, 1e11}, LagomVsExhaustive{2, kMiB, 1e11},
        LagomVsExhaustive{2, 4 * kMiB, 1e11}, LagomVsExhaustive{2, 16 * kMiB, 1e12}}) {
    const traces::Workload w = chain(c.k, c.per_rank, c.flops);
    Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
    const SearchResult ex = run(eval, Method::kExhaustive);
    const SearchResult lg = run(eval, Method::kLagom);
    const double gap = lg.step_time.us() / ex.step_time.us() - 1;
    std::cout << fmt::format(
        "[ lagom vs exhaustive ] k={} {} MiB/rank {:g} flops: nccl {:.3f} us, lagom {:.3f} us "
        "({} evals), exhaustive {:.3f} us ({} evals), gap {:.2f}%\n",
        c.k, c.per_rank / kMiB, c.flops, ex.nccl_step_time.us(), lg.step_time.us(), lg.evaluations,
        ex.step_time.us(), ex.evaluations, 100 * gap);
    EXPECT_LE(gap, 0.02);
    EXPECT_GE(gap, 0.0);  // exhaustive is the optimum over the grid lagom walks on
  }
}

TEST(SearchMethods, LagomIsWithinOnePercentOfExhaustiveInTheFullSpace) {
  // The full space (channels, threads and chunk per collective; coarse grid, so that
  // exhaustive can enumerate it): Lagom's default walk against every combination. One step
  // misses 1%: two 4 MiB all-gathers, where condition 1 of Algorithm 2 ends the first at one
  // channel (its group's communication X = 1087 us is under the GEMM's Y) while the optimum
  // gives it two; the gap is 1.25% with the paper's condition, 0.04% without it
  // (lagom_hidden_stop = false). Both are asserted, so that the mechanism stays the one named.
  struct Case {
    LagomVsExhaustive step;
    bool hidden_stop;
    double max_gap;
  };
  for (const Case& c :
       {Case{{1, kMiB, 1e11}, true, 0.01}, Case{{1, 4 * kMiB, 1e11}, true, 0.01},
        Case{{1, 16 * kMiB, 1e12}, true, 0.01}, Case{{1, 64 * kMiB, 1e12}, true, 0.01},
        Case{{2, kMiB, 1e11}, true, 0.01}, Case{{2, 4 * kMiB, 1e11}, true, 0.013},
        Case{{2, 4 * kMiB, 1e11}, false, 0.01}, Case{{2, 16 * kMiB, 1e12}, true, 0.01}}) {
    const traces::Workload w = chain(c.step.k, c.step.per_rank, c.step.flops);
    Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kCoarse, Resources::kFull});
    const SearchResult ex = run(eval, Method::kExhaustive, 100000);
    SearchOptions o;
    o.lagom_hidden_stop = c.hidden_stop;
    const SearchResult lg = search::run_search(eval, o);
    const double gap = lg.step_time.us() / ex.step_time.us() - 1;
    std::cout << fmt::format(
        "[ lagom vs exhaustive, full space ] k={} {} MiB/rank {:g} flops{}: nccl {:.3f} us, "
        "lagom {:.3f} us ({} evals), exhaustive {:.3f} us ({} evals), gap {:.2f}%\n",
        c.step.k, c.step.per_rank / kMiB, c.step.flops, c.hidden_stop ? "" : ", no hidden stop",
        ex.nccl_step_time.us(), lg.step_time.us(), lg.evaluations, ex.step_time.us(),
        ex.evaluations, 100 * gap);
    EXPECT_LE(gap, c.max_gap);
    EXPECT_GE(gap, 0.0);
    EXPECT_LT(lg.evaluations, ex.evaluations);
  }
}

// AutoCCL's iterations: every evaluation advances each unfinished class by one call, and a class
// spends at most pretrain/#subspaces samples and max(1, train/#subspaces) descent steps per
// subspace; plus NCCL's native evaluation and the final check.
std::int64_t autoccl_bound(const Evaluator& eval, int pretrain, int train) {
  std::int64_t most = 0;
  for (const search::CollClass& c : eval.classes()) {
    const auto nsub = static_cast<std::int64_t>(c.subspaces.size());
    most = std::max(most, nsub * (pretrain / nsub + std::max<std::int64_t>(1, train / nsub)));
  }
  return 2 + most;
}

TEST(SearchMethods, AutoCclSpendsItsPretrainAndTrainSteps) {
  const traces::Workload w = chain(3, 8 * kMiB, 1e11);
  for (Resources res : {Resources::kNccl, Resources::kFull}) {
    Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, res});
    for (const auto& [pretrain, train] : {std::pair{20, 50}, std::pair{0, 50}, std::pair{60, 12}}) {
      SearchOptions o;
      o.method = Method::kAutoCcl;
      o.autoccl_pretrain = pretrain;
      o.autoccl_train = train;
      const SearchResult r = search::run_search(eval, o);
      EXPECT_LE(r.evaluations, autoccl_bound(eval, pretrain, train))
          << "pretrain " << pretrain << " train " << train;
      // At least the pretrain samples of one subspace and a descent step.
      EXPECT_GE(r.evaluations, 2 + pretrain / 8) << "pretrain " << pretrain;
    }
  }
}

TEST(SearchMethods, AutoCclPretrainingEverywhereFindsEachCollectivesFastestPoint) {
  // With more pretrain samples than grid points, AutoCCL measures every point of every
  // subspace, and (one class, so nothing else changes between its samples) pins the point with
  // the class's shortest time: the exhaustive search's minimum of that class's own time.
  const traces::Workload w = chain(1, 4 * kMiB, 1e11);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  SearchOptions o;
  o.method = Method::kAutoCcl;
  o.autoccl_pretrain = 10000;
  const SearchResult r = search::run_search(eval, o);
  ASSERT_EQ(r.choices.size(), 1u);
  EXPECT_GE(r.evaluations, static_cast<std::int64_t>(combinations(eval)));
  double fastest = r.choices[0].nccl_time_us;
  const search::CollClass& c = eval.classes()[0];
  for (const search::Subspace& s : c.subspaces) {
    for (std::size_t a = 0; a < s.channels.size(); ++a) {
      for (std::size_t b = 0; b < s.threads.size(); ++b) {
        for (std::size_t d = 0; d < s.chunks.size(); ++d) {
          const search::Evaluation e =
              eval.evaluate(std::vector<std::optional<nccl::CommConfig>>{s.at(a, b, d)});
          fastest = std::min(fastest, e.comm_us[0] / c.calls);
        }
      }
    }
  }
  EXPECT_DOUBLE_EQ(r.choices[0].time_us, fastest);
}

TEST(SearchMethods, LagomIsNeverSlowerThanNccl) {
  // Lagom can always keep NCCL's own choice (SearchRun gives NCCL's plan back when a walk ends
  // slower), so the plan it returns is never slower than NCCL's, for every reading of
  // Algorithm 2 and every space: this checks that guarantee, not the walk.
  for (int k : {1, 3}) {
    for (double flops : {1e10, 1e12}) {
      const traces::Workload w = chain(k, 8 * kMiB, flops);
      for (Resources res : {Resources::kNccl, Resources::kFull}) {
        Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, res});
        for (auto walk : {search::LagomWalk::kPerAxis, search::LagomWalk::kLockstep}) {
          for (auto order : {search::LagomOrder::kPriority, search::LagomOrder::kRoundRobin}) {
            for (bool guard : {true, false}) {
              SearchOptions o;
              o.lagom_walk = walk;
              o.lagom_order = order;
              o.lagom_step_guard = guard;
              o.lagom_min_gain = 0;
              const SearchResult r = search::run_search(eval, o);
              EXPECT_LE(r.step_time, r.nccl_step_time)
                  << "k=" << k << " flops " << flops << " full " << (res == Resources::kFull)
                  << " lockstep " << (walk == search::LagomWalk::kLockstep) << " round-robin "
                  << (order == search::LagomOrder::kRoundRobin) << " guard " << guard;
            }
          }
        }
      }
    }
  }
}

// The lock-step walk's evaluation bound: NCCL's baseline (1), then per class one placement at
// minimum resources and growth steps that each move every resource axis at least one grid
// point up (an undone step ends the class), then at most one final check. With parking, a class
// refused by the step guard retries once after each placement or accepted move: at most k more
// evaluations per those.
// What switching subspaces (SearchOptions::lagom_switch) adds: a class tries each of its other
// subspaces once (S_j - 1 evaluations), and a switch taken is one more accepted step.
std::int64_t switch_probes(const Evaluator& eval, bool on) {
  std::int64_t probes = 0;
  for (const search::CollClass& c : eval.classes()) {
    probes += on ? static_cast<std::int64_t>(c.subspaces.size()) - 1 : 0;
  }
  return probes;
}

// A class's accepted steps in one subspace, at most (`axes`: the sum of the axes' points less
// 3 for the per-axis walk, the longest axis for lock-step); with switching, summed over every
// subspace it may walk in, plus the switches.
std::int64_t class_accepts(const search::CollClass& c, bool switching,
                           std::size_t (*axes)(const search::Subspace&)) {
  std::size_t most = 0;
  std::size_t sum = 0;
  for (const search::Subspace& s : c.subspaces) {
    most = std::max(most, axes(s));
    sum += axes(s);
  }
  return switching ? static_cast<std::int64_t>(sum + c.subspaces.size() - 1)
                   : static_cast<std::int64_t>(most);
}

std::int64_t lockstep_bound(const Evaluator& eval, bool park, bool switching = true) {
  std::int64_t longest_sum = 0;
  for (const search::CollClass& c : eval.classes()) {
    longest_sum += class_accepts(c, switching, [](const search::Subspace& s) {
      return std::max({s.channels.size(), s.threads.size(), s.chunks.size()});
    });
  }
  const auto k = static_cast<std::int64_t>(eval.classes().size());
  return 2 + longest_sum + (park ? k * (longest_sum + k) : 0) + switch_probes(eval, switching);
}

// The per-axis walk's: every accepted move raises at least one grid index, so a class accepts
// at most A_j = sum over axes of (points - 1) moves; each turn of a class costs at most 4
// evaluations (3 axes, then all at once); a class parks at most once after each placement or
// acceptance (any class's); each class ends once. Switching adds its probes and accepts.
std::int64_t per_axis_bound(const Evaluator& eval, std::int64_t probes, bool switching = true) {
  const auto k = static_cast<std::int64_t>(eval.classes().size());
  std::int64_t accepts = 0;
  for (const search::CollClass& c : eval.classes()) {
    accepts += class_accepts(c, switching, [](const search::Subspace& s) {
      return s.channels.size() + s.threads.size() + s.chunks.size() - 3;
    });
  }
  return 2 + probes + k + 4 * (accepts + k * (accepts + k) + k) + switch_probes(eval, switching);
}

std::int64_t subspace_probes(const Evaluator& eval) {
  std::size_t rounds = 0;
  for (const search::CollClass& c : eval.classes()) {
    rounds = std::max(rounds, c.subspaces.size());
  }
  return rounds > 1 ? static_cast<std::int64_t>(rounds) : 0;
}

TEST(SearchMethods, IterationsOnATwoCollectiveOverlap) {
  // The paper's Figure 8c counts tuning iterations on an overlap with two collectives (AutoCCL
  // 16, Lagom 33). An evaluation here is one iteration for both: AutoCCL moves every class in
  // it, Lagom one. Printed for docs/RESULTS.md §3; each bounded by its own rule.
  const traces::Workload w = chain(2, 8 * kMiB, 1e11);
  Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
  SearchOptions a;
  a.method = Method::kAutoCcl;
  const SearchResult ar = search::run_search(eval, a);
  SearchOptions l;
  l.budget = per_axis_bound(eval, subspace_probes(eval)) + 10;
  const SearchResult lr = search::run_search(eval, l);
  std::cout << fmt::format(
      "[ iterations, two collectives ] autoccl {} ({:.4f}x), lagom {} ({:.4f}x)\n", ar.evaluations,
      ar.nccl_step_time.us() / ar.step_time.us(), lr.evaluations,
      lr.nccl_step_time.us() / lr.step_time.us());
  EXPECT_LE(ar.evaluations, autoccl_bound(eval, a.autoccl_pretrain, a.autoccl_train));
  EXPECT_LT(lr.evaluations, l.budget);
}

TEST(SearchMethods, LockstepEvaluationsGrowLinearlyWithClasses) {
  // Without parking, the bound above is 2 + sum_j L_j, i.e. <= 7k + 2 on the coarse --space
  // nccl grid (channels 1, 2, ..., 64): linear in k.
  std::vector<std::int64_t> evals;
  for (int k : {1, 2, 4, 8}) {
    const traces::Workload w = chain(k);
    Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
    ASSERT_EQ(eval.classes().size(), static_cast<std::size_t>(k));
    const std::int64_t bound = lockstep_bound(eval, /*park=*/false, /*switching=*/false);
    SearchOptions o;
    o.lagom_walk = search::LagomWalk::kLockstep;
    o.lagom_subspace = search::LagomSubspace::kNccl;
    o.lagom_park = false;
    o.lagom_switch = false;  // the paper's walk alone
    const SearchResult r = search::run_search(eval, o);
    evals.push_back(r.evaluations);
    std::cout << fmt::format("[ lagom evaluations ] k={}: {} (bound {})\n", k, r.evaluations,
                             bound);
    EXPECT_LE(r.evaluations, bound);
    EXPECT_LE(r.evaluations, 7 * k + 2);
    EXPECT_GE(r.evaluations, k + 1);  // every class is placed once
  }
  // Linear, not quadratic: 8 classes cost far less than 64x one class.
  EXPECT_LT(static_cast<double>(evals[3]) / static_cast<double>(evals[0]), 32.0);
}

TEST(SearchMethods, LagomVariantsKeepTheirBounds) {
  // The bounds above hold for every reading of Algorithm 2; --lagom-subspace best adds one
  // probing round per subspace index.
  const traces::Workload w = chain(4, 16 * kMiB, 1e12);
  Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
  const std::int64_t rounds = subspace_probes(eval);
  for (auto walk : {search::LagomWalk::kPerAxis, search::LagomWalk::kLockstep}) {
    for (auto sub : {search::LagomSubspace::kNccl, search::LagomSubspace::kBest}) {
      for (auto step : {search::LagomStep::kPoints, search::LagomStep::kAxis}) {
        for (double min_gain : {0.0, 0.01}) {
          for (bool guard : {true, false}) {
            SearchOptions o;
            o.lagom_walk = walk;
            o.lagom_subspace = sub;
            o.lagom_step = step;
            o.lagom_min_gain = min_gain;
            o.lagom_step_guard = guard;
            const std::int64_t probes = sub == search::LagomSubspace::kBest ? rounds : 0;
            const std::int64_t bound = walk == search::LagomWalk::kLockstep
                                           ? lockstep_bound(eval, true) + probes
                                           : per_axis_bound(eval, probes);
            // A budget above the bound: the walk must end by itself, under the bound.
            o.budget = bound + 10;
            const SearchResult r = search::run_search(eval, o);
            EXPECT_LE(r.evaluations, bound)
                << (walk == search::LagomWalk::kLockstep ? "lock-step" : "per-axis") << ", "
                << (sub == search::LagomSubspace::kBest ? "best" : "nccl") << " subspace, "
                << (step == search::LagomStep::kAxis ? "axis" : "points") << " step, min gain "
                << min_gain << ", guard " << guard;
            EXPECT_GE(r.evaluations, 1 + probes + 4);  // baseline, probes, 4 placements
          }
        }
      }
    }
  }
}

TEST(SearchMethods, WalkingEverySubspaceIsNoWorseThanNcclsSubspace) {
  // --lagom-subspace all runs the whole walk once per subspace index; with one class, one of
  // those walks is the walk in NCCL's subspace, so its step is at most that walk's.
  for (std::int64_t per_rank : {kMiB, 16 * kMiB}) {
    const traces::Workload w = chain(1, per_rank, 1e11);
    Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
    SearchOptions nccl_sub;
    nccl_sub.lagom_subspace = search::LagomSubspace::kNccl;
    SearchOptions all;
    all.lagom_subspace = search::LagomSubspace::kAll;
    const SearchResult a = search::run_search(eval, nccl_sub);
    const SearchResult b = search::run_search(eval, all);
    EXPECT_LE(b.step_time, a.step_time) << per_rank;
    EXPECT_GT(b.evaluations, a.evaluations) << per_rank;  // a walk per subspace
  }
}

TEST(SearchMethods, AWalkThatEndsTriesTheOtherSubspaces) {
  // MPT-7B tensor-parallel on one A40 node with Domino's overlap (Table 2's TP row, two
  // micro-batches): at NCCL's 2 channels Ring is the faster subspace for its 16 MiB all-reduces,
  // so the walk starts there; Tree is faster once both have 6 channels. Without the switch the
  // walk ends on Ring at 1.002x; with it the walk moves to Tree and ends within 1% of walking
  // every subspace from the start, in a fraction of its evaluations.
  models::TrainingConfig cfg;
  cfg.mbs = 2;
  cfg.gbs = 4;
  cfg.overlap = models::Overlap::kDomino;
  const models::GeneratedStep g =
      models::generate_step(models::load_model("mpt-7b"), models::parse_parallelism("tp=8"), cfg);
  Evaluator eval(g.workload, a40().cluster, a40().profile,
                 SpaceOptions{Grid::kFine, Resources::kFull});
  ASSERT_EQ(eval.classes().size(), 1U);
  SearchOptions stay;
  stay.lagom_switch = false;
  SearchOptions all;
  all.lagom_subspace = search::LagomSubspace::kAll;
  const SearchResult s = search::run_search(eval, stay);
  const SearchResult l = search::run_search(eval, SearchOptions{});
  const SearchResult a = search::run_search(eval, all);
  const auto speedup = [](const SearchResult& r) {
    return r.nccl_step_time.us() / r.step_time.us();
  };
  std::cout << fmt::format(
      "[ subspace switch, mpt-7b tp=8 ] without {:.3f}x ({}), with {:.3f}x ({}), every "
      "subspace {:.3f}x ({})\n",
      speedup(s), s.evaluations, speedup(l), l.evaluations, speedup(a), a.evaluations);
  ASSERT_EQ(s.plan.rules.size(), 1U);
  ASSERT_EQ(l.plan.rules.size(), 1U);
  EXPECT_EQ(s.plan.rules[0].algo, nccl::Algorithm::kRing);
  EXPECT_EQ(l.plan.rules[0].algo, nccl::Algorithm::kTree);
  EXPECT_LT(speedup(s), 1.05);
  EXPECT_GT(speedup(l), 1.3);
  EXPECT_LT(l.step_time.us(), a.step_time.us() * 1.01);
  EXPECT_LT(l.evaluations, a.evaluations);
  // The bound counts the switch's probes and the walk after it.
  EXPECT_LE(l.evaluations, per_axis_bound(eval, subspace_probes(eval)));
  EXPECT_LE(s.evaluations, per_axis_bound(eval, subspace_probes(eval), /*switching=*/false));
}

TEST(SearchMethods, RoundRobinKeepsTheBoundAndTheGuarantee) {
  // The ablation differs from the priority walk only in the order: same bounds, and on a step
  // whose classes gain differently it may end elsewhere, never slower than NCCL.
  const traces::Workload w = chain(3, 8 * kMiB, 1e11);
  Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
  SearchOptions o;
  o.lagom_order = search::LagomOrder::kRoundRobin;
  const std::int64_t bound = per_axis_bound(eval, subspace_probes(eval));
  o.budget = bound + 10;  // the walk must end by itself, under the bound
  const SearchResult r = search::run_search(eval, o);
  EXPECT_LE(r.evaluations, bound);
  EXPECT_LE(r.step_time, r.nccl_step_time);
  EXPECT_EQ(r.choices.size(), eval.classes().size());
}

TEST(SearchMethods, LongSearchesReportProgress) {
  // The CLI prints these on stderr every 5 s of a long search; here every evaluation reports.
  const traces::Workload w = chain(2, 4 * kMiB, 1e11);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  std::vector<std::int64_t> seen;
  SearchOptions o;
  o.method = Method::kRandom;
  o.budget = 30;
  o.progress_every_s = 0;
  o.progress = [&](std::int64_t done, double seconds) {
    EXPECT_GE(seconds, 0);
    seen.push_back(done);
  };
  const SearchResult r = search::run_search(eval, o);
  ASSERT_EQ(static_cast<std::int64_t>(seen.size()), r.evaluations);
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i], static_cast<std::int64_t>(i) + 1);
  }
  // A search shorter than the reporting period reports nothing.
  seen.clear();
  o.progress_every_s = 3600;
  search::run_search(eval, o);
  EXPECT_TRUE(seen.empty());
}

TEST(SearchMethods, SameInputsGiveByteIdenticalPlans) {
  const traces::Workload w = chain(3, 4 * kMiB, 1e11);
  for (Method m : {Method::kAutoCcl, Method::kLagom, Method::kRandom}) {
    SCOPED_TRACE(search::to_string(m));
    Evaluator a(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
    Evaluator b(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
    const SearchResult ra = run(a, m, m == Method::kRandom ? 30 : 0);
    const SearchResult rb = run(b, m, m == Method::kRandom ? 30 : 0);
    EXPECT_EQ(plan_json(ra.plan), plan_json(rb.plan));
    EXPECT_EQ(ra.evaluations, rb.evaluations);
    // And on an evaluator that has already run a search.
    EXPECT_EQ(plan_json(run(a, m, m == Method::kRandom ? 30 : 0).plan), plan_json(ra.plan));
  }
}

// --- Threads and the evaluation memo (issue: scale, item 4) -------------------------------------

using Batch = std::vector<std::vector<std::optional<nccl::CommConfig>>>;

// Class 0 at Ring/Simple on `nc` channels, the other classes at NCCL's choice.
std::vector<std::optional<nccl::CommConfig>> ring_on(const Evaluator& e, int nc) {
  std::vector<std::optional<nccl::CommConfig>> c(e.classes().size());
  nccl::CommConfig cfg = e.classes()[0].nccl;
  cfg.algo = nccl::Algorithm::kRing;
  cfg.proto = nccl::Protocol::kSimple;
  cfg.nchannels = nc;
  c[0] = cfg;
  return c;
}

void expect_same(const search::Evaluation& a, const search::Evaluation& b) {
  EXPECT_EQ(a.step_time, b.step_time);
  EXPECT_EQ(a.comm_us, b.comm_us);
  EXPECT_EQ(a.group_comm_us, b.group_comm_us);
  EXPECT_EQ(a.group_compute_us, b.group_compute_us);
  EXPECT_EQ(a.compute_us, b.compute_us);
}

TEST(SearchEvaluator, ABatchOnThreadsGivesWhatOneAtATimeGives) {
  const traces::Workload w = chain(3);
  Evaluator threaded(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
  Evaluator alone(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
  threaded.set_jobs(3);
  // NCCL's choice twice (a repeat within the batch), and three channel counts.
  const Batch batch{nccl_configs(threaded), ring_on(threaded, 1), ring_on(threaded, 2),
                    nccl_configs(threaded), ring_on(threaded, 4)};
  const std::vector<search::Evaluation> got = threaded.evaluate_all(batch);
  ASSERT_EQ(got.size(), batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same(got[i], alone.evaluate(batch[i]));
  }
  EXPECT_NE(got[1].step_time, got[2].step_time);  // the candidates differ
  EXPECT_EQ(threaded.evaluations(), 5);
  EXPECT_EQ(threaded.simulations(), 4);  // the repeat is not simulated again
  // Nor is anything evaluated before.
  expect_same(threaded.evaluate(ring_on(threaded, 2)), got[2]);
  EXPECT_EQ(threaded.evaluations(), 6);
  EXPECT_EQ(threaded.simulations(), 4);
}

TEST(SearchEvaluator, LookAheadCandidatesAreKeptButNotCounted) {
  const traces::Workload w = chain(2);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  const Batch now{ring_on(eval, 1)};
  const Batch next{ring_on(eval, 2)};
  // On one thread there is no idle thread to look ahead on.
  eval.evaluate_all(now, next);
  EXPECT_EQ(eval.evaluations(), 1);
  EXPECT_EQ(eval.simulations(), 1);
  eval.set_jobs(2);
  eval.evaluate_all(Batch{nccl_configs(eval)}, next);
  EXPECT_EQ(eval.evaluations(), 2);
  EXPECT_EQ(eval.simulations(), 3);  // NCCL's and the look-ahead
  Evaluator fresh(w, a40().cluster, a40().profile, coarse_nccl());
  expect_same(eval.evaluate(next.front()), fresh.evaluate(next.front()));
  EXPECT_EQ(eval.evaluations(), 3);
  EXPECT_EQ(eval.simulations(), 3);  // kept from the look-ahead
}

TEST(SearchEvaluator, LookAheadFillsTheThreadsABatchsLastRoundLeavesIdle) {
  // Three candidates on two threads take two rounds, the second on one thread: the other
  // simulates a look-ahead candidate, which is then kept. Never more than that.
  const traces::Workload w = chain(2);
  Evaluator eval(w, a40().cluster, a40().profile, coarse_nccl());
  eval.set_jobs(2);
  const Batch now{ring_on(eval, 1), ring_on(eval, 2), ring_on(eval, 4)};
  const Batch next{ring_on(eval, 8), nccl_configs(eval)};
  eval.evaluate_all(now, next);
  EXPECT_EQ(eval.evaluations(), 3);
  EXPECT_EQ(eval.simulations(), 4);
  EXPECT_TRUE(eval.kept(next.front()).has_value());
  EXPECT_FALSE(eval.kept(next.back()).has_value());
}

TEST(SearchEvaluator, AnErrorOnAThreadIsRethrownNamingTheOp) {
  const traces::Workload w = chain(2);
  Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, Resources::kFull});
  eval.set_jobs(2);
  std::vector<std::optional<nccl::CommConfig>> bad = ring_on(eval, 1);
  bad[0]->nthreads = 100;  // not a multiple of the warp size
  const std::string e = error_of([&] {
    eval.evaluate_all(Batch{ring_on(eval, 2), bad, ring_on(eval, 4)});
  });
  EXPECT_NE(e.find("r0.a0"), std::string::npos) << e;
  EXPECT_NE(e.find("warp size"), std::string::npos) << e;
  // The batch counts no evaluation, but what was simulated is kept: after an interrupt a search
  // records the results up to the first candidate lost.
  EXPECT_EQ(eval.evaluations(), 0);
  EXPECT_TRUE(eval.kept(ring_on(eval, 2)).has_value());
  EXPECT_TRUE(eval.kept(ring_on(eval, 4)).has_value());
  EXPECT_FALSE(eval.kept(bad).has_value());
  EXPECT_FALSE(eval.kept(ring_on(eval, 8)).has_value());
  EXPECT_NE(error_of([&] { eval.set_jobs(0); }).find("at least 1"), std::string::npos);
}

TEST(SearchMethods, LagomSkipsOnlySubspaceProbesThatCannotWin) {
  // Lagom starts each class in its fastest subspace at NCCL's resources, one probe per subspace
  // index; a probe in which every class is slower alone than its fastest so far is skipped. The
  // plan must be the one every probe gives (with no budget that binds: the evaluations a skip
  // saves would go to the walk), at every thread count, with fewer evaluations on a
  // step where some probe cannot win (Phi-2 FSDP on one A40 node: LL and LL128 there). On these
  // steps no probe outside NCCL's subspaces wins, so the skip's soundness rests on the bound,
  // which EachCallAloneBoundsAClassesTimeUnderContention checks.
  models::TrainingConfig cfg;
  cfg.mbs = 2;
  cfg.gbs = 16;
  const models::GeneratedStep phi2 =
      models::generate_step(models::load_model("phi-2"), models::parse_parallelism("fsdp=8"), cfg);
  const traces::Workload chained = chain(3, 4 * kMiB, 1e11);
  const traces::Workload crowd = crowded();
  int fewer = 0;
  for (const traces::Workload* w : {&phi2.workload, &chained, &crowd}) {
    for (Resources res : {Resources::kNccl, Resources::kFull}) {
      for (int jobs : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << w->op_count() << " ops, jobs " << jobs);
        std::optional<SearchResult> every;
        for (bool bound : {false, true}) {
          Evaluator eval(*w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, res});
          SearchOptions o;
          o.method = Method::kLagom;
          o.lagom_probe_bound = bound;
          o.jobs = jobs;
          const SearchResult r = search::run_search(eval, o);
          if (!every) {
            every = r;
            continue;
          }
          auto same = r.plan;
          same.context.evaluations = every->plan.context.evaluations;  // the one difference
          EXPECT_EQ(plan_json(same), plan_json(every->plan));
          EXPECT_EQ(r.step_time, every->step_time);
          EXPECT_LE(r.evaluations, every->evaluations);
          fewer += r.evaluations < every->evaluations ? 1 : 0;
        }
      }
    }
  }
  EXPECT_GT(fewer, 0);
}

TEST(SearchMethods, EveryThreadCountGivesTheSamePlan) {
  const traces::Workload w = chain(3, 4 * kMiB, 1e11);
  struct Variant {
    const char* name;
    Method method;
    Resources resources;
    void (*tweak)(SearchOptions&);
  };
  const Variant variants[] = {
      {"lagom per-axis", Method::kLagom, Resources::kFull, [](SearchOptions&) {}},
      {"lagom nccl space", Method::kLagom, Resources::kNccl, [](SearchOptions&) {}},
      {"lagom lock-step", Method::kLagom, Resources::kFull,
       [](SearchOptions& o) { o.lagom_walk = search::LagomWalk::kLockstep; }},
      {"lagom every subspace", Method::kLagom, Resources::kNccl,
       [](SearchOptions& o) { o.lagom_subspace = search::LagomSubspace::kAll; }},
      {"lagom round-robin", Method::kLagom, Resources::kFull,
       [](SearchOptions& o) { o.lagom_order = search::LagomOrder::kRoundRobin; }},
      {"lagom short budget", Method::kLagom, Resources::kFull,
       [](SearchOptions& o) { o.budget = 7; }},
      {"autoccl", Method::kAutoCcl, Resources::kFull, [](SearchOptions&) {}},
      {"random", Method::kRandom, Resources::kFull, [](SearchOptions& o) { o.budget = 37; }},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    std::optional<SearchResult> first;
    for (int jobs : {1, 2, 3}) {
      SCOPED_TRACE(jobs);
      Evaluator eval(w, a40().cluster, a40().profile, SpaceOptions{Grid::kFine, v.resources});
      SearchOptions o;
      o.method = v.method;
      v.tweak(o);
      o.jobs = jobs;
      const SearchResult r = search::run_search(eval, o);
      // Lagom reports the class of each accepted step (fig8's 8b; none when its budget ends
      // before a step); the other methods none.
      if (v.method != Method::kLagom) {
        EXPECT_TRUE(r.step_order.empty());
      } else if (v.name == std::string("lagom per-axis")) {
        EXPECT_FALSE(r.step_order.empty());
      }
      for (std::size_t j : r.step_order) {
        EXPECT_LT(j, eval.classes().size());
      }
      if (!first) {
        first = r;
        continue;
      }
      EXPECT_EQ(plan_json(r.plan), plan_json(first->plan));
      EXPECT_EQ(r.step_time, first->step_time);
      EXPECT_EQ(r.evaluations, first->evaluations);
      EXPECT_EQ(r.step_order, first->step_order);
    }
  }
  // Exhaustive on the coarse grid (every combination or those the bound leaves, in batches).
  for (bool bound : {false, true}) {
    std::optional<SearchResult> ref;
    const traces::Workload small = chain(2);
    for (int jobs : {1, 3}) {
      Evaluator eval(small, a40().cluster, a40().profile, coarse_nccl());
      SearchOptions o;
      o.method = Method::kExhaustive;
      o.exhaustive_bound = bound;
      o.jobs = jobs;
      const SearchResult r = search::run_search(eval, o);
      if (!bound) {
        EXPECT_EQ(r.evaluations, static_cast<std::int64_t>(combinations(eval)) + 1);
      }
      if (ref) {
        EXPECT_EQ(plan_json(r.plan), plan_json(ref->plan));
        EXPECT_EQ(r.evaluations, ref->evaluations);
        EXPECT_EQ(r.bounded, ref->bounded);
      } else {
        ref = r;
      }
    }
  }
}

}  // namespace
}  // namespace lagom::test
