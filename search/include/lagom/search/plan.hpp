// A config plan: which NCCL parameters each collective of a step runs with, as rules that match
// calls by (collective, size range, nodes, ranks), first match wins (docs/formats/plan.md).
// `lagom tune` writes plans, `lagom simulate --plan` replays them and the tuner plugin (tuner/)
// applies them inside real NCCL. It is its own library (lagom::plan) and depends only on
// lagom::nccl, so that the plugin links it without the simulator.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/nccl/comm_config.hpp"

namespace lagom::search {

inline constexpr int kAnyCount = -1;  // nnodes / nranks that match any communicator

// What a plan may have rules for: NCCL's five tuned collectives and all-to-all (send/recv keep
// NCCL's choice).
inline bool plannable(nccl::CollKind k) {
  return nccl::is_tuned(k) || k == nccl::CollKind::kAllToAll;
}

struct PlanRule {
  nccl::CollKind coll = nccl::CollKind::kAllReduce;
  std::int64_t min_bytes = 0;
  std::int64_t max_bytes = 0;
  int nnodes = kAnyCount;
  int nranks = kAnyCount;
  // What the rule sets; unset is NCCL's choice.
  std::optional<nccl::Algorithm> algo;
  std::optional<nccl::Protocol> proto;
  int nchannels = 0;  // 0: unset
  int nthreads = 0;
  std::int64_t chunk_bytes = 0;
  // What the search saw (informational; readers ignore them): calls of the step the rule
  // covers, their mean time under the plan and NCCL's own choice with its time.
  int calls = 0;
  double time_us = 0;
  std::optional<nccl::CommConfig> nccl;
  double nccl_time_us = 0;

  bool matches(nccl::CollKind c, std::int64_t bytes, int comm_nnodes, int comm_nranks) const {
    return c == coll && bytes >= min_bytes && bytes <= max_bytes &&
           matches_communicator(comm_nnodes, comm_nranks);
  }
  bool matches_communicator(int comm_nnodes, int comm_nranks) const {
    return (nnodes == kAnyCount || nnodes == comm_nnodes) &&
           (nranks == kAnyCount || nranks == comm_nranks);
  }
};

struct PlanContext {
  std::string method;
  std::string workload;
  std::string cluster;
  std::string profile;
  std::string nccl_version = "2.28";  // the NCCL release the plan was tuned for
  double step_time_us = 0;
  double nccl_step_time_us = 0;
  std::int64_t evaluations = 0;  // (the search's wall time is not written: plans are deterministic)
};

struct ConfigPlan {
  PlanContext context;
  std::vector<PlanRule> rules;

  // The first rule matching a call, or nullptr.
  const PlanRule* find(nccl::CollKind c, std::int64_t bytes, int nnodes, int nranks) const;
};

// Strict reader: unknown fields, wrong types, out-of-range values and rules that cannot match
// (min_bytes > max_bytes) are lagom::Error naming `origin`, the JSON path and what was expected.
ConfigPlan parse_plan_json(std::string_view text, std::string_view origin);
ConfigPlan load_plan_file(const std::string& path);

// Writes the plan (rules in order); byte-identical for identical plans.
void write_plan_json(const ConfigPlan& plan, std::ostream& out);

// The CSV NCCL's example tuner plugin reads (reference/nccl.md §3.3):
// coll,minB,maxB,algo,proto,channels,nNodes,nRanks — explicit channels on every line (the
// example plugin forces one CTA otherwise) and, after the plan's rules, one catch-all line per
// collective with NCCL's most frequent choice over the step's calls (the example plugin cannot
// say "NCCL's choice"). Rules the plugin cannot apply (alltoall) are left out with a comment.
void write_nccl_example_csv(const ConfigPlan& plan, std::ostream& out);

// What stock NCCL 2.28 can apply of a plan: per call, through a tuner plugin, the algorithm,
// protocol and channels; per process, through the environment, one value of each thread and
// buffer variable (Ring threads; Ring and Tree chunks); all-to-all rules not at all. NCCL 2.18
// (a plan whose context says so) loads no tuner plugin: there the algorithm (NCCL_ALGO, which
// 2.18 applies to AllReduce only), the protocol (NCCL_PROTO) and the channels (NCCL_MIN_CTAS =
// NCCL_MAX_CTAS) are per process too.
struct StockNcclFit {
  std::map<std::string, std::set<std::int64_t>> env;  // variable -> the values the rules need
  std::set<std::string> fixed_algorithms;  // rules' algorithms whose threads/chunk NCCL fixes
  int alltoall_rules = 0;
  int max_channels = 0;
  int min_ctas = 0;          // NCCL_MIN_CTAS needed for the channels (0: NCCL's count suffices)
  bool tuner_plugin = true;  // false for NCCL 2.18: the per-call knobs below are per process
  std::set<std::string> allreduce_algorithms;  // (NCCL 2.18) what the AllReduce rules run
  std::set<std::string> protocols;             // (NCCL 2.18) what every tuned rule runs
  std::set<int> channels;                      // (NCCL 2.18) every tuned rule's channels
  int channels_cut = 0;  // (NCCL 2.18) rules whose smallest calls NCCL runs on fewer channels

  bool exact() const;           // every rule applies as planned
  std::string summary() const;  // one line: how it applies
};
StockNcclFit stock_nccl_fit(const ConfigPlan& plan);

// Shell `export` lines for what NCCL sets only per process (NCCL_NTHREADS, NCCL_LL128_NTHREADS,
// NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE, NCCL_MIN_CTAS), with a comment for every
// knob on which the plan's rules disagree (those need a patched NCCL to apply per call).
void write_nccl_env(const ConfigPlan& plan, std::ostream& out);

}  // namespace lagom::search
