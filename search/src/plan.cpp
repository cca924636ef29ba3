// Config plans: the strict reader, the writer and the NCCL exports (see plan.hpp).
#include "lagom/search/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "lagom/common/error.hpp"
#include "lagom/common/json_reader.hpp"
#include "lagom/common/text.hpp"
#include "lagom/nccl/version.hpp"

namespace lagom::search {

using json_reader::Ctx;
using nlohmann::json;

const PlanRule* ConfigPlan::find(nccl::CollKind c, std::int64_t bytes, int nnodes,
                                 int nranks) const {
  for (const PlanRule& r : rules) {
    if (r.matches(c, bytes, nnodes, nranks)) {
      return &r;
    }
  }
  return nullptr;
}

namespace {

constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;  // 1 PiB: beyond any collective
constexpr int kMaxChannels = 64;                           // NCCL's MAXCHANNELS

std::int64_t get_bytes(const Ctx& ctx, const json& v) {
  if (!v.is_number_integer() ||
      (v.is_number_integer() && !v.is_number_unsigned() && v.get<std::int64_t>() < 0)) {
    ctx.fail(
        fmt::format("expected a byte count (an integer >= 0), got {}", json_reader::type_of(v)));
  }
  const auto b = v.get<std::uint64_t>();
  if (b > static_cast<std::uint64_t>(kMaxBytes)) {
    ctx.fail(fmt::format("{} bytes is out of range (at most 2^50)", b));
  }
  return static_cast<std::int64_t>(b);
}

int get_count_or_any(const Ctx& ctx, const json& v) {
  if (!v.is_number_integer()) {
    ctx.fail(fmt::format("expected a count (an integer >= 1, or -1 for any), got {}",
                         json_reader::type_of(v)));
  }
  // An unsigned value above INT64_MAX would read as negative (2^64 - 1 as -1, "any").
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > (1U << 24)) {
    ctx.fail(fmt::format("expected a count (an integer >= 1, or -1 for any), got {}",
                         v.get<std::uint64_t>()));
  }
  const auto n = v.get<std::int64_t>();
  if (n != kAnyCount && (n < 1 || n > (1 << 24))) {
    ctx.fail(fmt::format("expected a count (an integer >= 1, or -1 for any), got {}", n));
  }
  return static_cast<int>(n);
}

double get_number(const Ctx& ctx, const json& v) {
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    ctx.fail(fmt::format("expected a number, got {}", json_reader::type_of(v)));
  }
  return v.get<double>();
}

nccl::CommConfig parse_nccl_choice(const Ctx& ctx, const json& v, double& time_us) {
  json_reader::expect_object(ctx, v,
                             {"algo", "proto", "nchannels", "nthreads", "chunk_bytes", "time_us"});
  nccl::CommConfig c;
  const std::string a =
      json_reader::get_string(ctx.at("algo"), json_reader::require(ctx, v, "algo"));
  const std::string p =
      json_reader::get_string(ctx.at("proto"), json_reader::require(ctx, v, "proto"));
  auto algo = nccl::parse_algorithm(a);
  auto proto = nccl::parse_protocol(p);
  if (!algo) {
    ctx.at("algo").fail(fmt::format("unknown algorithm '{}'", a));
  }
  if (!proto) {
    ctx.at("proto").fail(fmt::format("unknown protocol '{}'", p));
  }
  c.algo = *algo;
  c.proto = *proto;
  c.nchannels = json_reader::int_field(ctx, v, "nchannels", 1, kMaxChannels);
  c.nthreads = json_reader::int_field(ctx, v, "nthreads", 32, 1024);
  c.chunk_bytes = get_bytes(ctx.at("chunk_bytes"), json_reader::require(ctx, v, "chunk_bytes"));
  if (const json* t = json_reader::optional_field(v, "time_us")) {
    time_us = get_number(ctx.at("time_us"), *t);
  }
  return c;
}

PlanRule parse_rule(const Ctx& ctx, const json& v) {
  json_reader::expect_object(ctx, v,
                             {"coll", "min_bytes", "max_bytes", "nnodes", "nranks", "algo", "proto",
                              "nchannels", "nthreads", "chunk_bytes", "calls", "time_us", "nccl"});
  PlanRule r;
  const std::string coll =
      json_reader::get_string(ctx.at("coll"), json_reader::require(ctx, v, "coll"));
  auto kind = nccl::parse_coll_kind(coll);
  if (!kind || !plannable(*kind)) {
    ctx.at("coll").fail(fmt::format(
        "unknown collective '{}' (known: allreduce, allgather, reducescatter, broadcast, "
        "reduce, alltoall)",
        coll));
  }
  r.coll = *kind;
  r.min_bytes = get_bytes(ctx.at("min_bytes"), json_reader::require(ctx, v, "min_bytes"));
  r.max_bytes = get_bytes(ctx.at("max_bytes"), json_reader::require(ctx, v, "max_bytes"));
  if (r.min_bytes > r.max_bytes) {
    ctx.fail(fmt::format("min_bytes {} is above max_bytes {}: the rule can never match",
                         r.min_bytes, r.max_bytes));
  }
  r.nnodes = get_count_or_any(ctx.at("nnodes"), json_reader::require(ctx, v, "nnodes"));
  r.nranks = get_count_or_any(ctx.at("nranks"), json_reader::require(ctx, v, "nranks"));
  if (const json* a = json_reader::optional_field(v, "algo")) {
    const std::string s = json_reader::get_string(ctx.at("algo"), *a);
    if (!(r.algo = nccl::parse_algorithm(s))) {
      ctx.at("algo").fail(fmt::format(
          "unknown algorithm '{}' (NCCL's: Tree, Ring, CollNetDirect, CollNetChain, NVLS, "
          "NVLSTree, PAT)",
          s));
    }
  }
  if (const json* p = json_reader::optional_field(v, "proto")) {
    const std::string s = json_reader::get_string(ctx.at("proto"), *p);
    if (!(r.proto = nccl::parse_protocol(s))) {
      ctx.at("proto").fail(fmt::format("unknown protocol '{}' (NCCL's: LL, LL128, Simple)", s));
    }
  }
  if (json_reader::optional_field(v, "nchannels")) {
    r.nchannels = json_reader::int_field(ctx, v, "nchannels", 1, kMaxChannels);
  }
  if (json_reader::optional_field(v, "nthreads")) {
    r.nthreads = json_reader::int_field(ctx, v, "nthreads", 32, 1024);
  }
  if (const json* c = json_reader::optional_field(v, "chunk_bytes")) {
    r.chunk_bytes = get_bytes(ctx.at("chunk_bytes"), *c);
    if (r.chunk_bytes == 0) {
      ctx.at("chunk_bytes").fail("must be at least 1 (leave it out for NCCL's choice)");
    }
  }
  if (json_reader::optional_field(v, "calls")) {
    r.calls = json_reader::int_field(ctx, v, "calls", 0, 1 << 30);
  }
  if (const json* t = json_reader::optional_field(v, "time_us")) {
    r.time_us = get_number(ctx.at("time_us"), *t);
  }
  if (const json* n = json_reader::optional_field(v, "nccl")) {
    r.nccl = parse_nccl_choice(ctx.at("nccl"), *n, r.nccl_time_us);
  }
  return r;
}

PlanContext parse_context(const json& v) {
  // Informational: take what is there and well-typed, ignore the rest.
  PlanContext c;
  auto str = [&](const char* key, std::string& out) {
    if (auto it = v.find(key); it != v.end() && it->is_string()) {
      out = it->get<std::string>();
    }
  };
  // Well-typed: an integer field takes integers only (a float such as 9.2e20 would not convert).
  auto num = [&](const char* key, auto& out) {
    using T = std::remove_reference_t<decltype(out)>;
    if (auto it = v.find(key); it != v.end()) {
      if constexpr (std::is_integral_v<T>) {
        if (it->is_number_integer()) {
          out = it->get<T>();
        }
      } else if (it->is_number()) {
        out = it->get<T>();
      }
    }
  };
  str("method", c.method);
  str("workload", c.workload);
  str("cluster", c.cluster);
  str("profile", c.profile);
  num("step_time_us", c.step_time_us);
  num("nccl_step_time_us", c.nccl_step_time_us);
  num("evaluations", c.evaluations);
  return c;
}

// The example plugin's tokens: "allreduce", "ring", "ll128", "collnet_direct", "nvls_tree".
std::string csv_algo(nccl::Algorithm a) {
  switch (a) {
    case nccl::Algorithm::kCollNetDirect:
      return "collnet_direct";
    case nccl::Algorithm::kCollNetChain:
      return "collnet_chain";
    case nccl::Algorithm::kNvlsTree:
      return "nvls_tree";
    default:
      return ascii_lower(nccl::to_string(a));
  }
}

}  // namespace

ConfigPlan parse_plan_json(std::string_view text, std::string_view origin) {
  const json doc = json_reader::parse_document(text, origin, "lagom-plan");
  const Ctx top{origin, ""};
  json_reader::expect_object(top, doc, {"format", "version", "context", "rules"});
  const json& format = json_reader::require(top, doc, "format");
  if (!format.is_string() || format.get<std::string>() != "lagom-plan") {
    top.at("format").fail(
        fmt::format("expected \"lagom-plan\", got {}", json_reader::type_of(format)));
  }
  const json& version = json_reader::require(top, doc, "version");
  if (!version.is_number_integer() || version.get<std::int64_t>() != 1) {
    top.at("version").fail(
        fmt::format("this Lagom reads plan version 1, got {}", json_reader::type_of(version)));
  }
  ConfigPlan plan;
  if (const json* c = json_reader::optional_field(doc, "context")) {
    if (!c->is_object()) {
      top.at("context").fail(fmt::format("expected an object, got {}", json_reader::type_of(*c)));
    }
    plan.context = parse_context(*c);
    // The one context field that changes how the plan applies (stock_nccl_fit): a release the
    // emulation knows, written as "2.18" or "2.28".
    if (const json* v = json_reader::optional_field(*c, "nccl_version")) {
      const json_reader::Ctx at = top.at("context").at("nccl_version");
      const std::string named = json_reader::get_string(at, *v);
      try {
        plan.context.nccl_version = std::string(nccl::to_string(nccl::version_named(named)));
      } catch (const Error& e) {
        at.fail(e.what());
      }
    }
  }
  const json& rules = json_reader::require(top, doc, "rules");
  if (!rules.is_array()) {
    top.at("rules").fail(
        fmt::format("expected an array of rules, got {}", json_reader::type_of(rules)));
  }
  for (std::size_t i = 0; i < rules.size(); ++i) {
    plan.rules.push_back(parse_rule(top.at("rules").at(i), rules[i]));
  }
  return plan;
}

ConfigPlan load_plan_file(const std::string& path) {
  return parse_plan_json(json_reader::read_text_file(path, "plan file"), path);
}

void write_plan_json(const ConfigPlan& plan, std::ostream& out) {
  nlohmann::ordered_json j;
  j["format"] = "lagom-plan";
  j["version"] = 1;
  const PlanContext& c = plan.context;
  j["context"] = {{"method", c.method},
                  {"workload", c.workload},
                  {"cluster", c.cluster},
                  {"profile", c.profile},
                  {"nccl_version", c.nccl_version},
                  {"step_time_us", c.step_time_us},
                  {"nccl_step_time_us", c.nccl_step_time_us},
                  {"evaluations", c.evaluations},
                  {"stock_nccl", stock_nccl_fit(plan).summary()}};
  auto& rules = j["rules"] = nlohmann::ordered_json::array();
  for (const PlanRule& r : plan.rules) {
    nlohmann::ordered_json jr;
    jr["coll"] = ascii_lower(nccl::to_string(r.coll));
    jr["min_bytes"] = r.min_bytes;
    jr["max_bytes"] = r.max_bytes;
    jr["nnodes"] = r.nnodes;
    jr["nranks"] = r.nranks;
    if (r.algo) {
      jr["algo"] = std::string(nccl::to_string(*r.algo));
    }
    if (r.proto) {
      jr["proto"] = std::string(nccl::to_string(*r.proto));
    }
    if (r.nchannels > 0) {
      jr["nchannels"] = r.nchannels;
    }
    if (r.nthreads > 0) {
      jr["nthreads"] = r.nthreads;
    }
    if (r.chunk_bytes > 0) {
      jr["chunk_bytes"] = r.chunk_bytes;
    }
    if (r.calls > 0) {
      jr["calls"] = r.calls;
      jr["time_us"] = r.time_us;
    }
    if (r.nccl) {
      nlohmann::ordered_json n;
      n["algo"] = std::string(nccl::to_string(r.nccl->algo));
      n["proto"] = std::string(nccl::to_string(r.nccl->proto));
      n["nchannels"] = r.nccl->nchannels;
      n["nthreads"] = r.nccl->nthreads;
      n["chunk_bytes"] = r.nccl->chunk_bytes;
      n["time_us"] = r.nccl_time_us;
      jr["nccl"] = std::move(n);
    }
    rules.push_back(std::move(jr));
  }
  out << j.dump(1) << "\n";
}

void write_nccl_example_csv(const ConfigPlan& plan, std::ostream& out) {
  out << "# NCCL example tuner plugin configuration (ext-tuner/example, NCCL_TUNER_CONFIG_FILE),\n"
         "# written by lagom from a "
      << (plan.context.method.empty() ? "config" : plan.context.method) << " plan";
  if (!plan.context.workload.empty()) {
    out << " for " << plan.context.workload;
  }
  out << ".\n"
         "# coll,minB,maxB,algo,proto,channels,nNodes,nRanks\n"
         "# Every line names its channels: the example plugin runs a call on one CTA when a line\n"
         "# says -1 or no line matches. Rules that leave the algorithm, protocol or channels to\n"
         "# NCCL take NCCL's own choice as lagom saw it (the rule's \"nccl\" field).\n";
  // The example plugin sees the five tuned collectives only.
  std::map<nccl::CollKind, std::map<std::string, int>> seen;  // NCCL's choices, for catch-alls
  for (const PlanRule& r : plan.rules) {
    if (!nccl::is_tuned(r.coll)) {
      out << fmt::format(
          "# skipped: {} {}..{} bytes (NCCL's p2p path, not seen by tuner plugins)\n",
          ascii_lower(nccl::to_string(r.coll)), r.min_bytes, r.max_bytes);
      continue;
    }
    // What the line says: the rule's own choice, else NCCL's as the search saw it.
    const bool known = (r.algo || r.nccl) && (r.proto || r.nccl) && (r.nchannels > 0 || r.nccl);
    if (!known) {
      out << fmt::format(
          "# skipped: {} {}..{} bytes leaves algorithm, protocol or channels to NCCL and the plan "
          "does not record NCCL's choice\n",
          ascii_lower(nccl::to_string(r.coll)), r.min_bytes, r.max_bytes);
      continue;
    }
    const nccl::Algorithm algo = r.algo ? *r.algo : r.nccl->algo;
    const nccl::Protocol proto = r.proto ? *r.proto : r.nccl->proto;
    const int channels = r.nchannels > 0 ? r.nchannels : r.nccl->nchannels;
    out << fmt::format("{},{},{},{},{},{},{},{}\n", ascii_lower(nccl::to_string(r.coll)),
                       r.min_bytes, r.max_bytes, csv_algo(algo),
                       ascii_lower(nccl::to_string(proto)), channels, r.nnodes, r.nranks);
    if (r.nccl) {
      // Weighted by the calls the rule covers (1 when the plan does not say).
      seen[r.coll][fmt::format("{},{},{}", csv_algo(r.nccl->algo),
                               ascii_lower(nccl::to_string(r.nccl->proto)), r.nccl->nchannels)] +=
          std::max(1, r.calls);
    }
  }
  if (!seen.empty()) {
    out << "# Catch-alls for calls the plan does not cover: NCCL's most frequent choice per "
           "collective\n"
           "# over this step's calls (the example plugin cannot say \"NCCL's choice\").\n";
  }
  for (const auto& [coll, choices] : seen) {
    const auto best =
        std::max_element(choices.begin(), choices.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    out << fmt::format("{},0,{},{},-1,-1\n", ascii_lower(nccl::to_string(coll)), kMaxBytes,
                       best->first);
  }
}

StockNcclFit stock_nccl_fit(const ConfigPlan& plan) {
  StockNcclFit fit;
  fit.tuner_plugin = plan.context.nccl_version != nccl::to_string(nccl::Version::k2_18);
  for (const PlanRule& r : plan.rules) {
    if (!nccl::is_tuned(r.coll)) {
      ++fit.alltoall_rules;
      continue;
    }
    fit.max_channels = std::max(fit.max_channels, r.nchannels);
    // Per rule: more channels than NCCL gave this class on its communicator needs the ceiling
    // raised (conservative where NCCL gave a small message fewer than the communicator has).
    if (r.nchannels > (r.nccl ? r.nccl->nchannels : 0)) {
      fit.min_ctas = std::max(fit.min_ctas, r.nchannels);
    }
    const std::optional<nccl::Protocol> proto =
        r.proto ? r.proto : (r.nccl ? std::optional(r.nccl->proto) : std::nullopt);
    const std::optional<nccl::Algorithm> algo =
        r.algo ? r.algo : (r.nccl ? std::optional(r.nccl->algo) : std::nullopt);
    if (!proto || !algo) {
      if (r.nthreads > 0 || r.chunk_bytes > 0) {
        fit.fixed_algorithms.insert("unknown");
      }
      continue;
    }
    if (!fit.tuner_plugin) {
      const int nc = r.nchannels > 0 ? r.nchannels : r.nccl ? r.nccl->nchannels : 0;
      if (nc > 0) {
        fit.channels.insert(nc);
      }
      fit.protocols.insert(std::string(nccl::to_string(*proto)));
      if (r.coll == nccl::CollKind::kAllReduce) {
        fit.allreduce_algorithms.insert(std::string(nccl::to_string(*algo)));
      }
      // NCCL_MIN_CTAS = NCCL_MAX_CTAS = nc sets the communicator's channels; 2.18's getAlgoInfo
      // still lowers a call's while nBytes < nc x threads x threshold (reference/nccl.md §1.3).
      const nccl::Algorithm a = *algo;
      const nccl::Protocol p = *proto;
      const int nt = r.nthreads > 0 ? r.nthreads : r.nccl ? r.nccl->nthreads : 0;
      if (nc > 1 && nt > 0 && a != nccl::Algorithm::kNvls && a != nccl::Algorithm::kNvlsTree &&
          a != nccl::Algorithm::kCollNetDirect) {
        const bool simple = p == nccl::Protocol::kSimple;
        const int extra = !simple                       ? 0
                          : a == nccl::Algorithm::kRing ? 32
                          : a == nccl::Algorithm::kTree ? 128
                                                        : 0;
        const std::int64_t threshold = a == nccl::Algorithm::kCollNetChain && simple ? 512
                                       : simple                                      ? 64
                                       : a == nccl::Algorithm::kRing && p == nccl::Protocol::kLL
                                           ? std::int64_t{8} * std::max(1, r.nranks)
                                           : 8;
        if (r.min_bytes < std::int64_t{nc} * (nt - extra) * threshold) {
          ++fit.channels_cut;
        }
      }
    }
    // NCCL runs Tree, PAT, NVLS and CollNet at its maximum threads whatever the environment says
    // (topoGetAlgoInfo), and sizes NVLS, CollNet and PAT chunks by their own rules: only Ring
    // threads and Ring/Tree chunks come from the variables below. A rule asking for exactly
    // NCCL's own value in NCCL's own subspace needs nothing.
    const bool ring = *algo == nccl::Algorithm::kRing;
    const bool tree = *algo == nccl::Algorithm::kTree;
    const bool ring_or_tree = ring || tree;
    // 2.18 runs Tree at NCCL_NTHREADS (+ 4 warps on Simple) too, where 2.28 runs it at 640.
    const bool env_threads = ring || (!fit.tuner_plugin && tree);
    const bool nccl_subspace = r.nccl && r.nccl->algo == *algo && r.nccl->proto == *proto;
    const bool nccl_threads = nccl_subspace && r.nccl->nthreads == r.nthreads;
    const bool nccl_chunk = nccl_subspace && r.nccl->chunk_bytes == r.chunk_bytes;
    if ((r.nthreads > 0 && !env_threads && !nccl_threads) ||
        (r.chunk_bytes > 0 && !ring_or_tree && !nccl_chunk)) {
      fit.fixed_algorithms.insert(std::string(nccl::to_string(*algo)));
    }
    if (r.nthreads > 0 && env_threads) {
      if (*proto == nccl::Protocol::kLL128) {
        fit.env["NCCL_LL128_NTHREADS"].insert(r.nthreads);
      } else {
        // NCCL adds its sync warp to Simple rings and 4 warps to Simple trees (reference/nccl.md
        // §1.4): NCCL_NTHREADS is the count without them.
        const int base = *proto != nccl::Protocol::kSimple ? r.nthreads
                         : ring                            ? r.nthreads - 32
                                                           : r.nthreads - 128;
        fit.env["NCCL_NTHREADS"].insert(base);
      }
    }
    if (r.chunk_bytes > 0 && ring_or_tree) {
      // calcCollChunking: a step is BUFFSIZE / 8; a Simple chunk is 4 steps for Ring
      // all-reduce, all-gather and reduce-scatter and 1 step otherwise; LL chunk = step / 2;
      // LL128 chunk = step * 15/16.
      switch (*proto) {
        case nccl::Protocol::kSimple: {
          const bool four_steps = ring && (r.coll == nccl::CollKind::kAllReduce ||
                                           r.coll == nccl::CollKind::kAllGather ||
                                           r.coll == nccl::CollKind::kReduceScatter);
          fit.env["NCCL_BUFFSIZE"].insert(r.chunk_bytes * (four_steps ? 2 : 8));
          break;
        }
        case nccl::Protocol::kLL:
          fit.env["NCCL_LL_BUFFSIZE"].insert(r.chunk_bytes * 16);
          break;
        case nccl::Protocol::kLL128:
          fit.env["NCCL_LL128_BUFFSIZE"].insert(r.chunk_bytes * 8 * 16 / 15);
          break;
      }
    }
  }
  return fit;
}

bool StockNcclFit::exact() const {
  return alltoall_rules == 0 && fixed_algorithms.empty() &&
         std::all_of(env.begin(), env.end(), [](const auto& e) { return e.second.size() <= 1; }) &&
         (tuner_plugin || (allreduce_algorithms.size() <= 1 && protocols.size() <= 1 &&
                           channels.size() <= 1 && channels_cut == 0));
}

std::string StockNcclFit::summary() const {
  std::vector<std::string> why;
  if (!tuner_plugin) {
    for (const auto& [name, n] : {std::pair{"NCCL_ALGO (AllReduce)", allreduce_algorithms.size()},
                                  std::pair{"NCCL_PROTO", protocols.size()},
                                  std::pair{"NCCL_MIN_CTAS = NCCL_MAX_CTAS", channels.size()}}) {
      if (n > 1) {
        why.push_back(fmt::format("{} would need {} values", name, n));
      }
    }
    if (channels_cut > 0) {
      why.push_back(fmt::format(
          "{} rule(s) cover calls small enough that NCCL 2.18 runs them on fewer channels than "
          "NCCL_MIN_CTAS = NCCL_MAX_CTAS sets",
          channels_cut));
    }
  }
  for (const auto& [name, values] : env) {
    if (values.size() > 1) {
      why.push_back(fmt::format("{} would need {} values", name, values.size()));
    }
  }
  if (!fixed_algorithms.empty()) {
    why.push_back(
        fmt::format("NCCL fixes threads or chunks of {}", fmt::join(fixed_algorithms, ", ")));
  }
  if (alltoall_rules > 0) {
    why.push_back(fmt::format("{} all-to-all rule(s) tuner plugins never see", alltoall_rules));
  }
  if (!tuner_plugin) {
    if (why.empty()) {
      return fmt::format(
          "exactly, through {} process-wide setting(s) (--export-env; NCCL 2.18 loads no tuner "
          "plugin)",
          env.size() + (allreduce_algorithms.empty() ? 0 : 1) + (protocols.empty() ? 0 : 1) +
              (channels.empty() ? 0 : 2));
    }
    return fmt::format(
        "with one value per process only (NCCL 2.18 loads no tuner plugin; --export-env); the "
        "rest needs a patched NCCL: {}",
        fmt::join(why, "; "));
  }
  if (why.empty()) {
    const std::size_t settings = env.size() + (min_ctas > 0 ? 1 : 0);
    return settings == 0 ? "exactly, with the tuner plugin"
                         : fmt::format(
                               "exactly, with the tuner plugin and {} process-wide "
                               "setting(s) (--export-env)",
                               settings);
  }
  return fmt::format(
      "algorithm, protocol and channels per call (tuner plugin); the rest needs a patched NCCL: "
      "{}",
      fmt::join(why, "; "));
}

void write_nccl_env(const ConfigPlan& plan, std::ostream& out) {
  const StockNcclFit fit = stock_nccl_fit(plan);
  out << "# NCCL settings lagom's plan needs that NCCL reads once per process (reference: "
         "docs/formats/plan.md).\n";
  if (fit.tuner_plugin) {
    out << "# Per-call algorithm, protocol and channels come from the tuner plugin:\n"
           "#   export NCCL_TUNER_PLUGIN=/path/to/libnccl-tuner-lagom.so\n"
           "#   export LAGOM_TUNER_PLAN=/path/to/plan.json\n";
  } else {
    out << "# NCCL 2.18 loads no tuner plugin: the algorithm (AllReduce only), protocol and "
           "channels are per process too.\n";
    const auto one = [&](const char* name, const auto& set) {
      if (set.size() == 1) {
        out << fmt::format("export {}={}\n", name, *set.begin());
      } else if (set.size() > 1) {
        out << fmt::format(
            "# {}: the plan's rules want {} different values ({}); per-call values need a "
            "patched NCCL. Not set.\n",
            name, set.size(), fmt::join(set, ", "));
      }
    };
    one("NCCL_ALGO", fit.allreduce_algorithms);
    one("NCCL_PROTO", fit.protocols);
    one("NCCL_MIN_CTAS", fit.channels);
    one("NCCL_MAX_CTAS", fit.channels);
  }
  if (!fit.fixed_algorithms.empty()) {
    out << fmt::format(
        "# Not set for the {} rules: NCCL fixes the threads of every algorithm but Ring, and "
        "the chunk sizes of NVLS, CollNet and PAT.\n",
        fmt::join(fit.fixed_algorithms, ", "));
  }
  for (const auto& [name, set] : fit.env) {
    if (set.size() == 1) {
      out << fmt::format("export {}={}\n", name, *set.begin());
    } else {
      out << fmt::format(
          "# {}: the plan's rules want {} different values ({}); NCCL applies one per process, "
          "so per-call values need a patched NCCL (AutoCCL's). Not set.\n",
          name, set.size(), fmt::join(set, ", "));
    }
  }
  if (fit.tuner_plugin && fit.min_ctas > 0) {
    out << fmt::format(
        "# Calls use at most the communicator's channels; to give a call up to {} channels:\n"
        "export NCCL_MIN_CTAS={}\n",
        fit.min_ctas, fit.min_ctas);
  }
}

}  // namespace lagom::search
