// Config plans (docs/formats/plan.md): the strict reader and the writer round-trip, malformed
// plans are rejected naming the field and the rule, and the two NCCL exports (the example tuner
// plugin's CSV and the process-wide environment) say what plan.md documents.
#include "lagom/search/plan.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "lagom/hardware/profile.hpp"
#include "lagom/nccl/tuning.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/communicator.hpp"
#include "lagom/topologies/nccl_comm_info.hpp"
#include "strings.hpp"
#include "test_util.hpp"

namespace lagom::test {
namespace {

using nccl::Algorithm;
using nccl::CollKind;
using nccl::CommConfig;
using nccl::Protocol;
using search::ConfigPlan;
using search::PlanRule;
using search::stock_nccl_fit;
using search::StockNcclFit;
using search::write_plan_json;

std::string written(const ConfigPlan& plan) {
  std::ostringstream out;
  search::write_plan_json(plan, out);
  return out.str();
}

std::string csv_of(const ConfigPlan& plan) {
  std::ostringstream out;
  search::write_nccl_example_csv(plan, out);
  return out.str();
}

std::string env_of(const ConfigPlan& plan) {
  std::ostringstream out;
  search::write_nccl_env(plan, out);
  return out.str();
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, sep);) {
    out.push_back(f);
  }
  return out;
}

// A plan that sets every field at least once: a fully specified all-gather with what the search
// saw, a reduce-scatter that leaves its channels to NCCL and matches any communicator, and an
// all-to-all (simulator only).
ConfigPlan sample_plan() {
  ConfigPlan p;
  p.context.method = "lagom";
  p.context.workload = "phi-2, fsdp=8";
  p.context.cluster = "a40-nvlink x1";
  p.context.profile = "builtin:a40";
  p.context.step_time_us = 1093512.118;
  p.context.nccl_step_time_us = 1195598.204;
  p.context.evaluations = 41;
  PlanRule ag;
  ag.coll = CollKind::kAllGather;
  ag.min_bytes = ag.max_bytes = 10485760;
  ag.nnodes = 1;
  ag.nranks = 8;
  ag.algo = Algorithm::kRing;
  ag.proto = Protocol::kSimple;
  ag.nchannels = 2;
  ag.nthreads = 544;
  ag.chunk_bytes = 700416;
  ag.calls = 64;
  ag.time_us = 1834.2;
  ag.nccl = nccl::CommConfig{
      Algorithm::kRing, Protocol::kSimple, nccl::Transport::kP2pNvlink, 2, 544, 2097152};
  ag.nccl_time_us = 1650.0;
  PlanRule rs;
  rs.coll = CollKind::kReduceScatter;
  rs.min_bytes = 0;
  rs.max_bytes = 1 << 20;
  rs.algo = Algorithm::kRing;
  rs.proto = Protocol::kLL;
  PlanRule a2a;
  a2a.coll = CollKind::kAllToAll;
  a2a.min_bytes = 4096;
  a2a.max_bytes = 8192;
  a2a.nnodes = 2;
  a2a.nranks = 16;
  a2a.nchannels = 8;
  p.rules = {ag, rs, a2a};
  return p;
}

void expect_same_rule(const PlanRule& a, const PlanRule& b) {
  EXPECT_EQ(a.coll, b.coll);
  EXPECT_EQ(a.min_bytes, b.min_bytes);
  EXPECT_EQ(a.max_bytes, b.max_bytes);
  EXPECT_EQ(a.nnodes, b.nnodes);
  EXPECT_EQ(a.nranks, b.nranks);
  EXPECT_EQ(a.algo, b.algo);
  EXPECT_EQ(a.proto, b.proto);
  EXPECT_EQ(a.nchannels, b.nchannels);
  EXPECT_EQ(a.nthreads, b.nthreads);
  EXPECT_EQ(a.chunk_bytes, b.chunk_bytes);
  EXPECT_EQ(a.calls, b.calls);
  EXPECT_EQ(a.time_us, b.time_us);
  ASSERT_EQ(a.nccl.has_value(), b.nccl.has_value());
  if (a.nccl) {
    EXPECT_EQ(a.nccl->algo, b.nccl->algo);
    EXPECT_EQ(a.nccl->proto, b.nccl->proto);
    EXPECT_EQ(a.nccl->nchannels, b.nccl->nchannels);
    EXPECT_EQ(a.nccl->nthreads, b.nccl->nthreads);
    EXPECT_EQ(a.nccl->chunk_bytes, b.nccl->chunk_bytes);
    EXPECT_EQ(a.nccl_time_us, b.nccl_time_us);
  }
}

// --- The format ------------------------------------------------------------------------------

TEST(PlanFormat, WriteThenParseGivesTheSameRulesAndContext) {
  const ConfigPlan p = sample_plan();
  const ConfigPlan q = search::parse_plan_json(written(p), "plan.json");
  ASSERT_EQ(q.rules.size(), p.rules.size());
  for (std::size_t i = 0; i < p.rules.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same_rule(q.rules[i], p.rules[i]);
  }
  EXPECT_EQ(q.context.method, p.context.method);
  EXPECT_EQ(q.context.workload, p.context.workload);
  EXPECT_EQ(q.context.cluster, p.context.cluster);
  EXPECT_EQ(q.context.profile, p.context.profile);
  EXPECT_EQ(q.context.step_time_us, p.context.step_time_us);
  EXPECT_EQ(q.context.nccl_step_time_us, p.context.nccl_step_time_us);
  EXPECT_EQ(q.context.evaluations, p.context.evaluations);
}

TEST(PlanFormat, OutputIsByteIdenticalAndAFixedPoint) {
  const ConfigPlan p = sample_plan();
  const std::string a = written(p);
  EXPECT_EQ(a, written(p));
  EXPECT_EQ(a, written(search::parse_plan_json(a, "plan.json")));
  // Fields a rule leaves unset are left out, not written as 0 (0 channels would be illegal).
  const auto j = nlohmann::json::parse(a);
  EXPECT_EQ(j["format"], "lagom-plan");
  EXPECT_EQ(j["version"], 1);
  const auto& rs = j["rules"][1];
  EXPECT_EQ(rs["coll"], "reducescatter");
  EXPECT_EQ(rs["nnodes"], -1);
  EXPECT_FALSE(rs.contains("nchannels"));
  EXPECT_FALSE(rs.contains("nthreads"));
  EXPECT_FALSE(rs.contains("chunk_bytes"));
  EXPECT_FALSE(rs.contains("nccl"));
  // The search's wall time is not part of a plan (plan.md: plans are deterministic).
  EXPECT_FALSE(j["context"].contains("search_ms"));
}

TEST(PlanFormat, TheDocumentedExampleParses) {
  // The example in docs/formats/plan.md is a valid plan and says what the table says.
  std::ifstream in(std::string(LAGOM_SOURCE_DIR) + "/docs/formats/plan.md");
  ASSERT_TRUE(in) << "docs/formats/plan.md";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const auto begin = doc.find("```json\n");
  ASSERT_NE(begin, std::string::npos);
  const auto end = doc.find("```", begin + 8);
  const ConfigPlan p =
      search::parse_plan_json(doc.substr(begin + 8, end - begin - 8), "plan.md example");
  ASSERT_EQ(p.rules.size(), 1u);
  const PlanRule& r = p.rules[0];
  EXPECT_EQ(r.coll, CollKind::kAllGather);
  EXPECT_EQ(r.min_bytes, 10485760);
  EXPECT_EQ(r.nranks, 8);
  EXPECT_EQ(r.algo, Algorithm::kRing);
  EXPECT_EQ(r.proto, Protocol::kSimple);
  EXPECT_EQ(r.nthreads, 544);
  EXPECT_EQ(r.chunk_bytes, 700416);
  ASSERT_TRUE(r.nccl.has_value());
  EXPECT_EQ(r.nccl->chunk_bytes, 2097152);
  EXPECT_EQ(p.context.evaluations, 41);
}

TEST(PlanFormat, MinimalPlansAndCaseInsensitiveNames) {
  // Only format, version and rules are required; an empty rule list is NCCL everywhere.
  const ConfigPlan empty =
      search::parse_plan_json(R"({"format": "lagom-plan", "version": 1, "rules": []})", "p");
  EXPECT_TRUE(empty.rules.empty());
  // Algorithm and protocol names are case-insensitive; the context is free-form.
  const ConfigPlan p = search::parse_plan_json(
      R"({"format": "lagom-plan", "version": 1, "context": {"anything": [1, 2], "method": 3},
          "rules": [{"coll": "allreduce", "min_bytes": 0, "max_bytes": 0, "nnodes": -1,
                     "nranks": -1, "algo": "tree", "proto": "ll128"}]})",
      "p");
  ASSERT_EQ(p.rules.size(), 1u);
  EXPECT_EQ(p.rules[0].algo, Algorithm::kTree);
  EXPECT_EQ(p.rules[0].proto, Protocol::kLL128);
  EXPECT_EQ(p.rules[0].nchannels, 0);  // unset: NCCL's
  EXPECT_TRUE(p.context.method.empty());
}

TEST(PlanFormat, FirstMatchingRuleWins) {
  ConfigPlan p;
  PlanRule narrow;
  narrow.coll = CollKind::kAllReduce;
  narrow.min_bytes = 1024;
  narrow.max_bytes = 4096;
  narrow.nnodes = 2;
  narrow.nranks = 16;
  narrow.nchannels = 4;
  PlanRule wide = narrow;
  wide.min_bytes = 0;
  wide.max_bytes = 1 << 30;
  wide.nnodes = wide.nranks = search::kAnyCount;
  wide.nchannels = 8;
  p.rules = {narrow, wide};
  EXPECT_EQ(p.find(CollKind::kAllReduce, 4096, 2, 16), &p.rules[0]);  // bounds inclusive
  EXPECT_EQ(p.find(CollKind::kAllReduce, 1024, 2, 16), &p.rules[0]);
  EXPECT_EQ(p.find(CollKind::kAllReduce, 4097, 2, 16), &p.rules[1]);
  EXPECT_EQ(p.find(CollKind::kAllReduce, 2048, 1, 8), &p.rules[1]);  // -1 matches any
  EXPECT_EQ(p.find(CollKind::kAllGather, 2048, 2, 16), nullptr);
  EXPECT_EQ(p.find(CollKind::kAllReduce, (1 << 30) + 1, 2, 16), nullptr);
}

struct BadPlan {
  const char* what;
  std::string text;
  std::vector<std::string> says;
};

std::string with_rule(std::string_view rule) {
  return std::string(R"({"format": "lagom-plan", "version": 1, "rules": [)") + std::string(rule) +
         "]}";
}

constexpr const char* kRuleHead =
    R"("coll": "allreduce", "min_bytes": 0, "max_bytes": 1024, "nnodes": 1, "nranks": 8)";

std::string rule_with(std::string_view extra) {
  return with_rule(std::string("{") + kRuleHead + (extra.empty() ? "" : ", ") + std::string(extra) +
                   "}");
}

const BadPlan kBadPlans[] = {
    {"unknown rule field", rule_with(R"("nchanels": 4)"), {"rules[0]", "unknown field 'nchanels'"}},
    {"unknown top field",
     R"({"format": "lagom-plan", "version": 1, "rules": [], "rule": []})",
     {"unknown field 'rule'"}},
    {"unknown field in nccl",
     rule_with(R"("nccl": {"algo": "Ring", "proto": "Simple", "nchannels": 2, "nthreads": 544,
                  "chunk_bytes": 2097152, "speed": 1})"),
     {"rules[0].nccl", "unknown field 'speed'"}},
    {"channels as a string",
     rule_with(R"("nchannels": "4")"),
     {"rules[0].nchannels", "expected an integer", "the string \"4\""}},
    {"bytes as a float",
     with_rule(R"({"coll": "allreduce", "min_bytes": 0.5, "max_bytes": 1024,
                                       "nnodes": 1, "nranks": 8})"),
     {"rules[0].min_bytes", "byte count"}},
    {"negative bytes",
     with_rule(R"({"coll": "allreduce", "min_bytes": -1, "max_bytes": 1024,
                                     "nnodes": 1, "nranks": 8})"),
     {"rules[0].min_bytes", "byte count"}},
    {"min above max",
     with_rule(R"({"coll": "allgather", "min_bytes": 2048, "max_bytes": 1024,
                                    "nnodes": 1, "nranks": 8})"),
     {"rules[0]", "min_bytes 2048 is above max_bytes 1024"}},
    {"unknown algorithm",
     rule_with(R"("algo": "Rng")"),
     {"rules[0].algo", "unknown algorithm 'Rng'"}},
    {"unknown protocol",
     rule_with(R"("proto": "LL64")"),
     {"rules[0].proto", "unknown protocol 'LL64'"}},
    {"unknown collective",
     with_rule(R"({"coll": "allreduc", "min_bytes": 0, "max_bytes": 1,
                                         "nnodes": 1, "nranks": 8})"),
     {"rules[0].coll", "unknown collective 'allreduc'"}},
    {"send/recv is not a plan collective",
     with_rule(R"({"coll": "sendrecv", "min_bytes": 0, "max_bytes": 1, "nnodes": 1,
                   "nranks": 8})"),
     {"rules[0].coll", "unknown collective 'sendrecv'"}},
    {"no channels",
     rule_with(R"("nchannels": 0)"),
     {"rules[0].nchannels", "between 1 and 64", "got 0"}},
    {"channels above MAXCHANNELS",
     rule_with(R"("nchannels": 65)"),
     {"rules[0].nchannels", "between 1 and 64", "got 65"}},
    {"too many threads",
     rule_with(R"("nthreads": 1056)"),
     {"rules[0].nthreads", "between 32 and 1024"}},
    {"zero chunk", rule_with(R"("chunk_bytes": 0)"), {"rules[0].chunk_bytes", "at least 1"}},
    {"zero ranks",
     with_rule(R"({"coll": "allreduce", "min_bytes": 0, "max_bytes": 1,
                                 "nnodes": 1, "nranks": 0})"),
     {"rules[0].nranks", "-1 for any"}},
    {"missing coll",
     with_rule(R"({"min_bytes": 0, "max_bytes": 1, "nnodes": 1, "nranks": 8})"),
     {"rules[0]", "missing required field 'coll'"}},
    {"missing nnodes",
     with_rule(R"({"coll": "allreduce", "min_bytes": 0, "max_bytes": 1,
                                     "nranks": 8})"),
     {"rules[0]", "missing required field 'nnodes'"}},
    {"the second rule",
     with_rule(std::string("{") + kRuleHead + "}, {" + kRuleHead + R"(, "proto": "LL256"})"),
     {"rules[1].proto", "LL256"}},
    {"missing version",
     R"({"format": "lagom-plan", "rules": []})",
     {"missing required field 'version'"}},
    {"version 2",
     R"({"format": "lagom-plan", "version": 2, "rules": []})",
     {"version", "plan version 1", "the number 2"}},
    {"wrong format",
     R"({"format": "lagom.workload", "version": 1, "rules": []})",
     {"format", "lagom-plan"}},
    {"missing rules",
     R"({"format": "lagom-plan", "version": 1})",
     {"missing required field 'rules'"}},
    {"rules not an array",
     R"({"format": "lagom-plan", "version": 1, "rules": {}})",
     {"rules", "expected an array"}},
    {"truncated",
     R"({"format": "lagom-plan", "version": 1, "rules": [{"coll": "allre)",
     {"not valid JSON", "truncated"}},
    {"empty", "  \n", {"empty", "lagom-plan"}},
};

// Test names show the case, not its bytes.
void PrintTo(const BadPlan& c, std::ostream* os) {
  *os << c.what;
}

class PlanFormatBad : public ::testing::TestWithParam<BadPlan> {};

TEST_P(PlanFormatBad, IsRejectedNamingTheFileFieldAndRule) {
  const BadPlan& c = GetParam();
  const std::string msg = error_of([&] { search::parse_plan_json(c.text, "plan.json"); });
  EXPECT_EQ(msg.rfind("plan.json: ", 0), 0u) << msg;
  for (const std::string& s : c.says) {
    EXPECT_TRUE(contains(msg, s)) << "expected '" << s << "' in: " << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(Catalogue, PlanFormatBad, ::testing::ValuesIn(kBadPlans),
                         case_name<BadPlan>);

TEST(PlanFormat, CountsBeyondInt64AreRejectedNotReadAsAny) {
  // 2^64 - 1 would wrap to -1 ("any communicator") if read as a signed integer.
  const std::string text = with_rule(R"({"coll": "allgather", "min_bytes": 0, "max_bytes": 1,
                                          "nnodes": 18446744073709551615, "nranks": -1})");
  const std::string msg = error_of([&] { search::parse_plan_json(text, "plan.json"); });
  EXPECT_TRUE(contains(msg, "rules[0].nnodes: expected a count")) << msg;
}

TEST(PlanFormat, MissingFileIsAnErrorNamingIt) {
  const std::string msg = error_of([] { search::load_plan_file("/nonexistent/lagom/plan.json"); });
  EXPECT_TRUE(contains(msg, "/nonexistent/lagom/plan.json")) << msg;
  EXPECT_TRUE(contains(msg, "plan file")) << msg;
}

// --- NCCL's example tuner CSV ----------------------------------------------------------------

TEST(PlanExport, ExampleCsvNamesChannelsOnEveryLineAndEndsWithCatchAlls) {
  ConfigPlan p = sample_plan();
  // A reduce-scatter rule that leaves the channels to NCCL takes NCCL's (3) as the search saw it.
  p.rules[1].nccl = nccl::CommConfig{
      Algorithm::kRing, Protocol::kSimple, nccl::Transport::kP2pNvlink, 3, 544, 2097152};
  // An all-reduce rule that says nothing about channels nor NCCL's choice cannot be written
  // without -1 (one CTA in the example plugin): it is left out with a comment.
  PlanRule vague;
  vague.coll = CollKind::kAllReduce;
  vague.min_bytes = 0;
  vague.max_bytes = 100;
  vague.algo = Algorithm::kNvlsTree;
  vague.proto = Protocol::kSimple;
  p.rules.push_back(vague);
  const std::string csv = csv_of(p);

  std::vector<std::vector<std::string>> rows;
  for (const std::string& line : lines_of(csv)) {
    if (!line.empty() && line[0] != '#') {
      rows.push_back(split(line, ','));
    }
  }
  // allgather rule, reducescatter rule, then one catch-all per collective with NCCL's choice.
  ASSERT_EQ(rows.size(), 4u) << csv;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 8u) << csv;  // coll,minB,maxB,algo,proto,channels,nNodes,nRanks
    EXPECT_NE(row[5], "-1") << csv;
    EXPECT_GE(std::stoi(row[5]), 1) << csv;
  }
  EXPECT_EQ(rows[0], (std::vector<std::string>{"allgather", "10485760", "10485760", "ring",
                                               "simple", "2", "1", "8"}));
  // The rule's own algorithm and protocol (LL), NCCL's channels.
  EXPECT_EQ(rows[1], (std::vector<std::string>{"reducescatter", "0", "1048576", "ring", "ll", "3",
                                               "-1", "-1"}));
  // Catch-alls: every size, any communicator, after the rules (the first match wins).
  std::vector<std::string> catch_colls;
  for (std::size_t i = 2; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i][1], "0");
    EXPECT_GE(std::stoll(rows[i][2]), std::int64_t{1} << 40);
    EXPECT_EQ(rows[i][6], "-1");
    EXPECT_EQ(rows[i][7], "-1");
    catch_colls.push_back(rows[i][0]);
  }
  std::sort(catch_colls.begin(), catch_colls.end());
  EXPECT_EQ(catch_colls, (std::vector<std::string>{"allgather", "reducescatter"}));
  EXPECT_EQ(rows[2][0] == "allgather" ? rows[2][5] : rows[3][5], "2");  // NCCL's 2 channels
  // No line for the all-to-all (NCCL's p2p path) nor the vague rule; both are commented.
  for (const auto& row : rows) {
    EXPECT_NE(row[0], "alltoall");
    EXPECT_NE(row[0], "allreduce");
  }
  EXPECT_TRUE(contains(csv, "# skipped: alltoall 4096..8192")) << csv;
  EXPECT_TRUE(contains(csv, "# skipped: allreduce 0..100")) << csv;
}

TEST(PlanExport, ExampleCsvUsesThePluginsAlgorithmTokens) {
  ConfigPlan p;
  PlanRule r;
  r.coll = CollKind::kAllReduce;
  r.max_bytes = 1 << 20;
  r.proto = Protocol::kSimple;
  r.nchannels = 16;
  for (auto [a, token] : {std::pair{Algorithm::kNvlsTree, "nvls_tree"},
                          std::pair{Algorithm::kCollNetDirect, "collnet_direct"},
                          std::pair{Algorithm::kCollNetChain, "collnet_chain"},
                          std::pair{Algorithm::kPat, "pat"}, std::pair{Algorithm::kTree, "tree"}}) {
    r.algo = a;
    p.rules = {r};
    EXPECT_TRUE(contains(csv_of(p), fmt::format("allreduce,0,1048576,{},simple,16,-1,-1\n", token)))
        << csv_of(p);
  }
}

// --- Process-wide NCCL environment -----------------------------------------------------------

// The value of `export NAME=...` in `env`, or "" when it is not exported.
std::string exported(const std::string& env, const std::string& name) {
  for (const std::string& line : lines_of(env)) {
    const std::string head = "export " + name + "=";
    if (line.rfind(head, 0) == 0) {
      return line.substr(head.size());
    }
  }
  return "";
}

PlanRule env_rule(CollKind c, Algorithm a, Protocol p, int nthreads, std::int64_t chunk) {
  PlanRule r;
  r.coll = c;
  r.min_bytes = r.max_bytes = 1 << 24;
  r.algo = a;
  r.proto = p;
  r.nchannels = 4;
  r.nthreads = nthreads;
  r.chunk_bytes = chunk;
  return r;
}

// NCCL's constants (src/include/device.h): NCCL_STEPS 8 slots per connection buffer; Ring/Simple
// all-reduce/all-gather/reduce-scatter chunks span 4 steps (ALLREDUCE_CHUNKSTEPS =
// NCCL_STEPS/2); an LL line carries 8 bytes of data in 16; an LL128 line 120 of 128 bytes.
constexpr std::int64_t kSteps = 8;
constexpr std::int64_t kRingSimpleChunkSteps = kSteps / 2;

TEST(PlanExport, EnvMapsThreadsAndChunksAsPlanMdSays) {
  // plan.md: nthreads counts NCCL's extra warp on Ring/Simple (544 = NCCL_NTHREADS 512 + 32);
  // Ring/Simple chunk = BUFFSIZE / 2 (4 of the 8 steps); LL128 threads are NCCL_LL128_NTHREADS
  // and its chunk is 15/16 of one step of NCCL_LL128_BUFFSIZE.
  const std::int64_t simple_chunk = 700416;     // a 512-byte multiple
  const std::int64_t ll128_chunk = 3840 * 100;  // a multiple of LL128's 3840-byte grain
  const std::int64_t ll_chunk = 16384;          // LL
  ConfigPlan p;
  p.rules = {env_rule(CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, 288, simple_chunk),
             env_rule(CollKind::kAllReduce, Algorithm::kRing, Protocol::kLL128, 480, ll128_chunk),
             // LL threads are NCCL_NTHREADS with no extra warp: 256 agrees with Simple's 288.
             env_rule(CollKind::kReduceScatter, Algorithm::kRing, Protocol::kLL, 256, ll_chunk)};
  p.rules[1].nchannels = 12;
  const std::string env = env_of(p);
  EXPECT_EQ(exported(env, "NCCL_NTHREADS"), "256") << env;
  EXPECT_EQ(exported(env, "NCCL_LL128_NTHREADS"), "480") << env;
  EXPECT_EQ(exported(env, "NCCL_BUFFSIZE"),
            std::to_string(simple_chunk * kSteps / kRingSimpleChunkSteps))
      << env;
  EXPECT_EQ(exported(env, "NCCL_LL128_BUFFSIZE"), std::to_string(ll128_chunk / 15 * 16 * kSteps))
      << env;
  EXPECT_EQ(exported(env, "NCCL_LL_BUFFSIZE"), std::to_string(ll_chunk * 2 * kSteps)) << env;
  // A plan above NCCL's channel count needs NCCL_MIN_CTAS at least as high (plan.md).
  EXPECT_EQ(exported(env, "NCCL_MIN_CTAS"), "12") << env;
}

TEST(PlanExport, EnvOfNcclsOwnRingChunksIsNcclsDefaultBuffers) {
  // A rule that keeps NCCL's own large-message Ring configuration must export NCCL's default
  // buffer sizes and threads: NCCL derived those chunks from them.
  const topologies::Cluster cluster = topologies::load_cluster("a40-nvlink");
  std::vector<int> ranks(8);
  std::iota(ranks.begin(), ranks.end(), 0);
  const nccl::Tables t = nccl::tune_model(
      topologies::nccl_comm_info(cluster, topologies::describe_communicator(cluster, ranks)));
  const nccl::Env defaults;
  for (CollKind c : {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter}) {
    for (Protocol proto : {Protocol::kSimple, Protocol::kLL, Protocol::kLL128}) {
      SCOPED_TRACE(fmt::format("{} Ring/{}", nccl::to_string(c), nccl::to_string(proto)));
      const nccl::CommConfig nccl =
          nccl::config_for(t, c, Algorithm::kRing, proto, std::int64_t{1} << 30);
      ConfigPlan p;
      p.rules = {env_rule(c, Algorithm::kRing, proto, nccl.nthreads, nccl.chunk_bytes)};
      const std::string env = env_of(p);
      switch (proto) {
        case Protocol::kSimple:
          EXPECT_EQ(exported(env, "NCCL_BUFFSIZE"), std::to_string(defaults.buffsize_bytes));
          EXPECT_EQ(exported(env, "NCCL_NTHREADS"), "512");  // NCCL_SIMPLE_MAX_NTHREADS
          break;
        case Protocol::kLL:
          EXPECT_EQ(exported(env, "NCCL_LL_BUFFSIZE"), std::to_string(defaults.ll_buffsize_bytes));
          EXPECT_EQ(exported(env, "NCCL_NTHREADS"), "512");  // NCCL_LL_MAX_NTHREADS
          break;
        case Protocol::kLL128:
          EXPECT_EQ(exported(env, "NCCL_LL128_BUFFSIZE"),
                    std::to_string(defaults.ll128_buffsize_bytes));
          EXPECT_EQ(exported(env, "NCCL_LL128_NTHREADS"), "640");  // NCCL_LL128_MAX_NTHREADS
          break;
      }
    }
  }
}

// The env export inverts calcCollChunking per algorithm and collective: a Simple chunk is 4
// buffer steps only for Ring all-reduce/all-gather/reduce-scatter and 1 step otherwise (Tree,
// Ring broadcast/reduce), so NCCL's own Tree/Simple chunk (512 KiB from the default 4 MiB
// buffer) maps back to NCCL_BUFFSIZE=4194304, not a quarter of it.
TEST(PlanExport, EnvOfNcclsOwnTreeAndBroadcastChunksIsNcclsDefaultBuffer) {
  const topologies::Cluster cluster = topologies::load_cluster("a40-nvlink", 2);
  std::vector<int> ranks(16);
  std::iota(ranks.begin(), ranks.end(), 0);
  const nccl::Tables t = nccl::tune_model(
      topologies::nccl_comm_info(cluster, topologies::describe_communicator(cluster, ranks)));
  const nccl::Env defaults;
  for (auto [c, a] : {std::pair{CollKind::kAllReduce, Algorithm::kTree},
                      std::pair{CollKind::kBroadcast, Algorithm::kRing},
                      std::pair{CollKind::kReduce, Algorithm::kRing}}) {
    SCOPED_TRACE(fmt::format("{} {}/Simple", nccl::to_string(c), nccl::to_string(a)));
    const nccl::CommConfig nccl =
        nccl::config_for(t, c, a, Protocol::kSimple, std::int64_t{1} << 30);
    EXPECT_EQ(nccl.chunk_bytes, defaults.buffsize_bytes / kSteps);  // one step
    ConfigPlan p;
    p.rules = {env_rule(c, a, Protocol::kSimple, 0, nccl.chunk_bytes)};
    EXPECT_EQ(exported(env_of(p), "NCCL_BUFFSIZE"), std::to_string(defaults.buffsize_bytes));
  }
}

TEST(PlanExport, EnvCommentsOutValuesTheRulesDisagreeOn) {
  ConfigPlan p;
  p.rules = {env_rule(CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, 544, 1 << 20),
             env_rule(CollKind::kReduceScatter, Algorithm::kRing, Protocol::kSimple, 288, 1 << 20)};
  // An all-to-all rule is outside NCCL's tuner: it neither sets nor contradicts anything.
  p.rules.push_back(
      env_rule(CollKind::kAllToAll, Algorithm::kRing, Protocol::kSimple, 640, 1 << 19));
  p.rules.back().nchannels = 32;
  const std::string env = env_of(p);
  EXPECT_EQ(exported(env, "NCCL_NTHREADS"), "") << env;
  EXPECT_TRUE(contains(env, "# NCCL_NTHREADS: the plan's rules want 2 different values (256, 512)"))
      << env;
  EXPECT_EQ(exported(env, "NCCL_BUFFSIZE"), "2097152") << env;  // they agree on the chunk
  EXPECT_EQ(exported(env, "NCCL_MIN_CTAS"), "4") << env;        // not the all-to-all's 32
  // Every line is a comment or an export: the file can be sourced.
  for (const std::string& line : lines_of(env)) {
    EXPECT_TRUE(line.empty() || line[0] == '#' || line.rfind("export ", 0) == 0) << line;
  }
}

TEST(PlanExport, EnvOfAPlanThatSetsNothingExportsNothing) {
  // Rules that pin only the algorithm and protocol leave every process-wide knob alone.
  ConfigPlan p;
  PlanRule r = env_rule(CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, 0, 0);
  r.nchannels = 0;
  p.rules = {r};
  const std::string env = env_of(p);
  for (const std::string& line : lines_of(env)) {
    EXPECT_TRUE(line.empty() || line[0] == '#') << line;
  }
}

// What stock NCCL can apply of a plan (StockNcclFit, written into every plan's context): exact
// when the per-process variables take one value each and nothing is outside the tuner API.
TEST(PlanExport, StockNcclFitSaysWhatAppliesExactly) {
  ConfigPlan channels_only;
  PlanRule r = env_rule(CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, 0, 0);
  r.nchannels = 1;
  r.nccl = CommConfig{};
  r.nccl->nchannels = 2;
  channels_only.rules = {r};
  const StockNcclFit exact = stock_nccl_fit(channels_only);
  EXPECT_TRUE(exact.exact());
  EXPECT_EQ(exact.min_ctas, 0);  // 1 channel: NCCL's own 2 suffice
  EXPECT_EQ(exact.summary(), "exactly, with the tuner plugin");
  // Per rule: 4 channels where NCCL gave that class 2 need the ceiling raised even though
  // another rule's communicator already runs 8.
  ConfigPlan two = channels_only;
  two.rules[0].nchannels = 8;
  two.rules[0].nccl->nchannels = 8;
  two.rules.push_back(channels_only.rules[0]);
  two.rules[1].coll = CollKind::kReduceScatter;
  two.rules[1].nchannels = 4;
  EXPECT_EQ(stock_nccl_fit(two).min_ctas, 4);
  channels_only.rules[0].nchannels = 16;  // above NCCL's count: NCCL_MIN_CTAS
  EXPECT_EQ(stock_nccl_fit(channels_only).min_ctas, 16);
  EXPECT_TRUE(contains(stock_nccl_fit(channels_only).summary(), "1 process-wide setting"));

  ConfigPlan agree;
  agree.rules = {env_rule(CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, 544, 1 << 20),
                 env_rule(CollKind::kAllReduce, Algorithm::kRing, Protocol::kSimple, 544, 1 << 20)};
  EXPECT_TRUE(stock_nccl_fit(agree).exact());

  ConfigPlan disagree = agree;
  disagree.rules[1].nthreads = 288;
  const StockNcclFit d = stock_nccl_fit(disagree);
  EXPECT_FALSE(d.exact());
  EXPECT_TRUE(contains(d.summary(), "NCCL_NTHREADS would need 2 values")) << d.summary();

  ConfigPlan tree = agree;  // NCCL runs Tree at its own thread count
  tree.rules[1].algo = Algorithm::kTree;
  tree.rules[1].nthreads = 256;
  EXPECT_TRUE(contains(stock_nccl_fit(tree).summary(), "NCCL fixes threads or chunks of Tree"));

  ConfigPlan a2a = agree;
  a2a.rules.push_back(env_rule(CollKind::kAllToAll, Algorithm::kRing, Protocol::kSimple, 0, 0));
  EXPECT_FALSE(stock_nccl_fit(a2a).exact());
  EXPECT_TRUE(contains(stock_nccl_fit(a2a).summary(), "1 all-to-all rule(s)"));

  // The plan file says it too.
  std::ostringstream out;
  write_plan_json(disagree, out);
  EXPECT_TRUE(contains(out.str(), "\"stock_nccl\": \"algorithm, protocol and channels per call"))
      << out.str();
}

// NCCL 2.18 (a plan tuned with --nccl-version 2.18) loads no tuner plugin: the algorithm (for
// AllReduce), protocol and channels apply per process, exactly only when every rule agrees.
TEST(PlanExport, Nccl218AppliesAPlanThroughTheEnvironmentAlone) {
  ConfigPlan p;
  p.context.nccl_version = "2.18";
  p.rules = {env_rule(CollKind::kAllGather, Algorithm::kRing, Protocol::kSimple, 0, 0),
             env_rule(CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, 0, 0)};
  p.rules[0].nchannels = p.rules[1].nchannels = 4;
  const StockNcclFit fit = stock_nccl_fit(p);
  EXPECT_FALSE(fit.tuner_plugin);
  EXPECT_TRUE(fit.exact()) << fit.summary();
  EXPECT_TRUE(contains(fit.summary(), "NCCL 2.18 loads no tuner plugin")) << fit.summary();
  const std::string env = env_of(p);
  for (const char* line : {"export NCCL_ALGO=Tree\n", "export NCCL_PROTO=Simple\n",
                           "export NCCL_MIN_CTAS=4\n", "export NCCL_MAX_CTAS=4\n"}) {
    EXPECT_TRUE(contains(env, line)) << line << " in " << env;
  }
  EXPECT_FALSE(contains(env, "NCCL_TUNER_PLUGIN")) << env;
  p.rules[1].nchannels = 8;  // per-call channel counts: not stock NCCL 2.18
  const StockNcclFit two = stock_nccl_fit(p);
  EXPECT_FALSE(two.exact());
  EXPECT_TRUE(contains(two.summary(), "NCCL_MIN_CTAS = NCCL_MAX_CTAS would need 2 values"))
      << two.summary();
  EXPECT_TRUE(contains(env_of(p), "# NCCL_MIN_CTAS: the plan's rules want 2 different values"));
  // The version travels in the plan's context, normalised; an unknown one is an error.
  p.context.nccl_version = "2.18";
  std::string text = written(p);
  const std::string::size_type at = text.find("\"2.18\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 6, "\"2.18.3\"");
  EXPECT_EQ(search::parse_plan_json(text, "p.json").context.nccl_version, "2.18");
  text.replace(at, 8, "\"2.17\"");
  EXPECT_TRUE(contains(test::error_of([&] { search::parse_plan_json(text, "p.json"); }),
                       "context.nccl_version: unknown NCCL version '2.17'"));

  // 6 channels on 4 KiB Tree/LL all-reduces: 2.18 lowers such a call's channels while
  // 4096 < nc x 512 threads x 8, so the exported NCCL_MIN_CTAS = NCCL_MAX_CTAS = 6 is not exact.
  ConfigPlan small;
  small.context.nccl_version = "2.18";
  small.rules = {env_rule(CollKind::kAllReduce, Algorithm::kTree, Protocol::kLL, 512, 0)};
  small.rules[0].min_bytes = small.rules[0].max_bytes = 4096;
  small.rules[0].nchannels = 6;
  const StockNcclFit cut = stock_nccl_fit(small);
  EXPECT_EQ(cut.channels_cut, 1);
  EXPECT_FALSE(cut.exact());
  EXPECT_TRUE(contains(cut.summary(), "fewer channels")) << cut.summary();
  // Tree threads follow NCCL_NTHREADS in 2.18 (Simple adds 4 warps): 384 threads need 256.
  ConfigPlan tree;
  tree.context.nccl_version = "2.18";
  tree.rules = {env_rule(CollKind::kAllReduce, Algorithm::kTree, Protocol::kSimple, 384, 0)};
  const StockNcclFit t = stock_nccl_fit(tree);
  EXPECT_TRUE(t.fixed_algorithms.empty());
  ASSERT_EQ(t.env.count("NCCL_NTHREADS"), 1u);
  EXPECT_EQ(*t.env.at("NCCL_NTHREADS").begin(), 256);
}

}  // namespace
}  // namespace lagom::test
