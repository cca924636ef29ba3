// libnccl-tuner-lagom.so: an NCCL tuner plugin that applies a Lagom config plan
// (docs/formats/plan.md) to every collective NCCL tunes, per communicator (docs/tuner.md).
//
// What a plugin can do is set by the ABI (reference/nccl.md §3.2): per call, lower one entry of
// NCCL's cost table to 0 (NCCL then runs that algorithm/protocol, being its cheapest) and set the
// channel count. Threads and chunk sizes are process-wide settings outside a plugin's reach, and
// all-to-all never reaches a tuner. Unlike NCCL's example plugin, a call no rule covers keeps
// NCCL's own choice entirely, channels included (the example forces one CTA, §3.3).
//
// Nothing may throw across the C ABI: every entry point catches everything. A broken plan fails
// init with a WARN naming the file and the field, which fails the communicator's init: the user
// asked for a plan, so running silently without it would be worse.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/common/error.hpp"
#include "lagom/nccl/comm_config.hpp"
#include "lagom/search/plan.hpp"
#include "lagom/tuner/nccl_tuner_abi.h"

namespace lagom::tuner {
namespace {

// Our enums are in NCCL's index order (nccl/comm_config.hpp); the plugin relies on it.
static_assert(nccl::index_of(nccl::Algorithm::kTree) == NCCL_ALGO_TREE);
static_assert(nccl::index_of(nccl::Algorithm::kRing) == NCCL_ALGO_RING);
static_assert(nccl::index_of(nccl::Algorithm::kCollNetDirect) == NCCL_ALGO_COLLNET_DIRECT);
static_assert(nccl::index_of(nccl::Algorithm::kCollNetChain) == NCCL_ALGO_COLLNET_CHAIN);
static_assert(nccl::index_of(nccl::Algorithm::kNvls) == NCCL_ALGO_NVLS);
static_assert(nccl::index_of(nccl::Algorithm::kNvlsTree) == NCCL_ALGO_NVLS_TREE);
static_assert(nccl::index_of(nccl::Algorithm::kPat) == NCCL_ALGO_PAT);
static_assert(nccl::kAlgorithmCount == NCCL_NUM_ALGORITHMS);
static_assert(nccl::index_of(nccl::Protocol::kLL) == NCCL_PROTO_LL);
static_assert(nccl::index_of(nccl::Protocol::kLL128) == NCCL_PROTO_LL128);
static_assert(nccl::index_of(nccl::Protocol::kSimple) == NCCL_PROTO_SIMPLE);
static_assert(nccl::kProtocolCount == NCCL_NUM_PROTOCOLS);
static_assert(nccl::index_of(nccl::CollKind::kBroadcast) == ncclFuncBroadcast);
static_assert(nccl::index_of(nccl::CollKind::kReduce) == ncclFuncReduce);
static_assert(nccl::index_of(nccl::CollKind::kAllGather) == ncclFuncAllGather);
static_assert(nccl::index_of(nccl::CollKind::kReduceScatter) == ncclFuncReduceScatter);
static_assert(nccl::index_of(nccl::CollKind::kAllReduce) == ncclFuncAllReduce);
static_assert(nccl::kTunedCollCount == NCCL_NUM_FUNCTIONS);

constexpr const char* kPlanEnv = "LAGOM_TUNER_PLAN";
constexpr const char* kNcclConfigEnv = "NCCL_TUNER_CONFIG_FILE";  // the example plugin's variable

// NCCL's logger with our prefix. INFO lines print when NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS
// includes one of `flags`; WARN lines whenever NCCL_DEBUG is WARN or INFO.
class Log {
 public:
  explicit Log(ncclDebugLogger_t fn) : fn_(fn) {}

  // (The caller's line comes from __builtin_LINE rather than std::source_location, which clang
  // 14 cannot provide with libstdc++ 12; the fuzz build compiles this file with clang.)
  void info(unsigned long flags, std::string_view msg, int line = __builtin_LINE()) const {
    emit(NCCL_LOG_INFO, flags, msg, line);
  }
  void warn(std::string_view msg, int line = __builtin_LINE()) const {
    emit(NCCL_LOG_WARN, NCCL_TUNING, msg, line);
  }

 private:
  void emit(ncclDebugLogLevel level, unsigned long flags, std::string_view msg, int line) const {
    if (fn_ != nullptr) {
      fn_(level, flags, "lagom-tuner", line, "lagom tuner: %.*s", static_cast<int>(msg.size()),
          msg.data());
    }
  }

  ncclDebugLogger_t fn_;
};

constexpr unsigned long kInitFlags = NCCL_INIT | NCCL_TUNING;

struct RuleState {
  std::uint64_t applied = 0;   // calls the rule steered
  bool reported_skip = false;  // logged once that NCCL marks its choice ineligible
};

// One communicator's tuner: its size, the plan (none: a no-op) and what happened.
struct Context {
  explicit Context(ncclDebugLogger_t logger) : log(logger) {}

  Log log;
  std::uint64_t comm_id = 0;
  int nranks = 0;
  int nnodes = 0;
  std::optional<search::ConfigPlan> plan;
  std::string plan_path;
  std::vector<RuleState> rules;  // parallel to plan->rules
  std::uint64_t calls_seen = 0;
  std::uint64_t calls_steered = 0;
  std::uint64_t calls_skipped = 0;  // matched a rule whose choice NCCL marks ineligible
};

int clamp_count(std::size_t n) {
  return n > static_cast<std::size_t>(std::numeric_limits<int>::max())
             ? std::numeric_limits<int>::max()
             : static_cast<int>(n);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string rule_name(const search::PlanRule& r, std::size_t index) {
  auto count = [](int n) {
    return n == search::kAnyCount ? std::string("any") : std::to_string(n);
  };
  return fmt::format("rule {} ({} {}..{} B, nnodes {}, nranks {})", index, nccl::to_string(r.coll),
                     r.min_bytes, r.max_bytes, count(r.nnodes), count(r.nranks));
}

std::string choice_name(const search::PlanRule& r) {
  return fmt::format("{}/{}", r.algo ? nccl::to_string(*r.algo) : std::string_view("*"),
                     r.proto ? nccl::to_string(*r.proto) : std::string_view("*"));
}

// Where the plan comes from: LAGOM_TUNER_PLAN, else NCCL_TUNER_CONFIG_FILE when it names a JSON
// file (a CSV there is meant for NCCL's example plugin). Empty when there is none.
std::string plan_path_from_env(const Log& log) {
  if (const char* p = std::getenv(kPlanEnv); p != nullptr && *p != '\0') {
    return p;
  }
  if (const char* p = std::getenv(kNcclConfigEnv); p != nullptr && *p != '\0') {
    if (ends_with(p, ".json")) {
      return p;
    }
    log.info(kInitFlags, fmt::format("{}={} is not a .json plan; ignoring it", kNcclConfigEnv, p));
  }
  return {};
}

// Reads the plan (if any) into `ctx` and says at init what it will and will not apply.
void load_plan(Context& ctx) {
  ctx.plan_path = plan_path_from_env(ctx.log);
  if (ctx.plan_path.empty()) {
    ctx.log.info(kInitFlags,
                 fmt::format("no plan ({} unset): NCCL's own tuning everywhere", kPlanEnv));
    return;
  }
  ctx.plan = search::load_plan_file(ctx.plan_path);
  const search::ConfigPlan& plan = *ctx.plan;
  ctx.rules.assign(plan.rules.size(), RuleState{});

  int here = 0;
  int alltoall = 0;
  int per_process = 0;
  for (const search::PlanRule& r : plan.rules) {
    if (!nccl::is_tuned(r.coll)) {
      ++alltoall;
      continue;
    }
    if (r.matches_communicator(ctx.nnodes, ctx.nranks)) {
      ++here;
    }
    if (r.nthreads > 0 || r.chunk_bytes > 0) {
      ++per_process;
    }
  }
  ctx.log.info(
      kInitFlags,
      fmt::format("plan {}{}: {} rules, {} for this communicator (comm 0x{:x}, {} "
                  "ranks, {} nodes)",
                  ctx.plan_path,
                  plan.context.method.empty() ? "" : " (method " + plan.context.method + ")",
                  plan.rules.size(), here, ctx.comm_id, ctx.nranks, ctx.nnodes));
  if (alltoall > 0) {
    ctx.log.info(kInitFlags,
                 fmt::format("{} alltoall rule(s) ignored: all-to-all runs on NCCL's p2p path, "
                             "which tuner plugins do not see",
                             alltoall));
  }
  if (per_process > 0) {
    ctx.log.info(kInitFlags,
                 fmt::format("{} rule(s) set nthreads/chunk_bytes, which a tuner plugin cannot "
                             "apply: they need NCCL_NTHREADS/NCCL_BUFFSIZE, see lagom tune "
                             "--export-env",
                             per_process));
  }
}

// Logs a message built by `make`; if building it throws (out of memory), a fixed line instead:
// nothing may leave the plugin's C interface as an exception.
template <class Make>
void warn_formatted(const Log& log, Make make) noexcept {
  try {
    log.warn(make());
  } catch (...) {
    log.warn("init failed, and so did formatting the reason");
  }
}

ncclResult_t init_context(void** out, std::uint64_t comm_id, std::size_t nranks, std::size_t nnodes,
                          ncclDebugLogger_t logger) {
  if (out == nullptr) {
    return ncclInvalidArgument;
  }
  *out = nullptr;
  const Log log(logger);
  try {
    auto ctx = std::make_unique<Context>(logger);
    ctx->comm_id = comm_id;
    ctx->nranks = clamp_count(nranks);
    ctx->nnodes = clamp_count(nnodes);
    load_plan(*ctx);
    *out = ctx.release();
    return ncclSuccess;
  } catch (const lagom::Error& e) {
    // The message names the file, the JSON path and what was expected.
    warn_formatted(log, [&] {
      return fmt::format("cannot use the plan: {} (unset {} to run with NCCL's own tuning)",
                         e.what(), kPlanEnv);
    });
    return ncclInvalidUsage;
  } catch (const std::exception& e) {
    warn_formatted(log, [&] { return fmt::format("init failed reading the plan: {}", e.what()); });
    return ncclInternalError;
  } catch (...) {
    log.warn("init failed: unknown exception");
    return ncclInternalError;
  }
}

// The cheapest entry NCCL marks eligible (cost >= 0) among those that agree with the rule's
// algorithm and protocol (either may be unset), as an index into the table; -1 when there is
// none, which is when the rule wants what NCCL will not run here.
int chosen_entry(const search::PlanRule& r, const float* table, int num_algo, int num_proto) {
  int best = -1;
  // Only the algorithms and protocols we know by name: a newer NCCL's extra table entries are
  // left to NCCL (and are never indexed into our names).
  for (int a = 0; a < std::min(num_algo, nccl::kAlgorithmCount); ++a) {
    if (r.algo && nccl::index_of(*r.algo) != a) {
      continue;
    }
    for (int p = 0; p < std::min(num_proto, nccl::kProtocolCount); ++p) {
      if (r.proto && nccl::index_of(*r.proto) != p) {
        continue;
      }
      const int i = a * num_proto + p;
      if (!(table[i] >= 0.0f)) {  // NCCL_ALGO_PROTO_IGNORE (or NaN): never resurrect
        continue;
      }
      if (best < 0 || table[i] < table[best]) {
        best = i;
      }
    }
  }
  return best;
}

void get_coll_info(Context& ctx, int coll, std::size_t nbytes, float** cost_table, int num_algo,
                   int num_proto, int* nchannels) {
  ++ctx.calls_seen;
  if (!ctx.plan || coll < 0 || coll >= nccl::kTunedCollCount) {
    return;
  }
  const auto bytes =
      static_cast<std::int64_t>(std::min<std::size_t>(nbytes, static_cast<std::size_t>(INT64_MAX)));
  const search::PlanRule* rule =
      ctx.plan->find(static_cast<nccl::CollKind>(coll), bytes, ctx.nnodes, ctx.nranks);
  if (rule == nullptr) {
    return;  // NCCL's own choice, channels included
  }
  const auto index = static_cast<std::size_t>(rule - ctx.plan->rules.data());
  RuleState& state = ctx.rules[index];

  // NCCL passes a float[numAlgo][numProto] as float** (enqueue.cc); index it flat.
  float* table = reinterpret_cast<float*>(cost_table);
  int entry = -1;
  if (rule->algo || rule->proto) {
    if (table == nullptr || num_algo <= 0 || num_proto <= 0) {
      return;
    }
    entry = chosen_entry(*rule, table, num_algo, num_proto);
    if (entry < 0) {
      // The channel count was chosen for that algorithm and protocol, so the whole rule is
      // skipped (as NCCL's example plugin skips such a line); the next rules are not tried,
      // since the plan's first match is the simulator's too.
      ++ctx.calls_skipped;
      if (!state.reported_skip) {
        state.reported_skip = true;
        ctx.log.warn(fmt::format(
            "{} wants {}, which NCCL marks ineligible for {} {} B on this communicator; the "
            "rule is not applied (NCCL's own choice), logged once",
            rule_name(*rule, index), choice_name(*rule), nccl::to_string(rule->coll), nbytes));
      }
      return;
    }
  }
  const bool set_channels = rule->nchannels > 0 && nchannels != nullptr;
  if (entry < 0 && !set_channels) {
    return;  // the rule sets nothing a plugin can apply (threads, chunk only)
  }
  if (entry >= 0) {
    table[entry] = 0.0f;
  }
  if (set_channels) {
    *nchannels = rule->nchannels;
  }
  ++ctx.calls_steered;
  if (state.applied++ == 0) {
    const std::string what =
        entry >= 0
            ? fmt::format("{}/{}", nccl::to_string(static_cast<nccl::Algorithm>(entry / num_proto)),
                          nccl::to_string(static_cast<nccl::Protocol>(entry % num_proto)))
            : std::string("NCCL's algorithm/protocol");
    ctx.log.info(NCCL_TUNING,
                 fmt::format("{} first applied to {} {} B: {}, {}", rule_name(*rule, index),
                             nccl::to_string(rule->coll), nbytes, what,
                             rule->nchannels > 0 ? fmt::format("{} channels", rule->nchannels)
                                                 : std::string("NCCL's channels")));
  }
}

ncclResult_t finalize_context(void* context) {
  auto* ctx = static_cast<Context*>(context);
  if (ctx == nullptr) {
    return ncclSuccess;
  }
  try {
    std::size_t rules_used = 0;
    for (const RuleState& s : ctx->rules) {
      rules_used += s.applied > 0 ? 1 : 0;
    }
    ctx->log.info(kInitFlags,
                  ctx->plan
                      ? fmt::format("comm 0x{:x}: {} calls seen, {} steered by {} of {} rules, {} "
                                    "left to NCCL because the plan's choice was ineligible",
                                    ctx->comm_id, ctx->calls_seen, ctx->calls_steered, rules_used,
                                    ctx->rules.size(), ctx->calls_skipped)
                      : fmt::format("comm 0x{:x}: {} calls seen, 0 steered (no plan)", ctx->comm_id,
                                    ctx->calls_seen));
  } catch (...) {  // logging is best effort; freeing is not
  }
  delete ctx;
  return ncclSuccess;
}

// The C entry points.

ncclResult_t init_v5(void** context, std::uint64_t comm_id, std::size_t nranks, std::size_t nnodes,
                     ncclDebugLogger_t logger, ncclNvlDomainInfo_v5_t*, ncclTunerConstants_v5_t*) {
  return init_context(context, comm_id, nranks, nnodes, logger);
}

ncclResult_t init_v4(std::size_t nranks, std::size_t nnodes, ncclDebugLogger_t logger,
                     void** context) {
  return init_context(context, 0, nranks, nnodes, logger);
}

// Always ncclSuccess: an error here would fail the user's collective.
ncclResult_t get_coll_info_c(void* context, ncclFunc_t coll_type, std::size_t nbytes,
                             int /*num_pipe_ops*/, float** cost_table, int num_algo, int num_proto,
                             int /*reg_buff*/, int* nchannels) {
  if (context == nullptr) {
    return ncclSuccess;
  }
  try {
    get_coll_info(*static_cast<Context*>(context), static_cast<int>(coll_type), nbytes, cost_table,
                  num_algo, num_proto, nchannels);
  } catch (...) {  // only logging allocates, after the table and channels are written
  }
  return ncclSuccess;
}

}  // namespace
}  // namespace lagom::tuner

// The only exported symbols (tuner/src/exports.map). NCCL 2.28 looks for _v5, then _v4
// (reference/nccl.md §3.1); releases that predate v5 find _v4.
extern "C" {

__attribute__((visibility("default"))) extern const ncclTuner_v5_t ncclTunerPlugin_v5;
__attribute__((visibility("default"))) extern const ncclTuner_v4_t ncclTunerPlugin_v4;

const ncclTuner_v5_t ncclTunerPlugin_v5 = {
    .name = "Lagom",
    .init = lagom::tuner::init_v5,
    .getCollInfo = lagom::tuner::get_coll_info_c,
    .finalize = lagom::tuner::finalize_context,
};

const ncclTuner_v4_t ncclTunerPlugin_v4 = {
    .name = "Lagom",
    .init = lagom::tuner::init_v4,
    .getCollInfo = lagom::tuner::get_coll_info_c,
    .destroy = lagom::tuner::finalize_context,
};

}  // extern "C"
