// libnccl-tuner-lagom.so loaded as NCCL loads it (dlopen, dlsym of ncclTunerPlugin_v5/_v4) and
// driven with the cost tables NCCL passes: which entry a plan rule zeroes, when it sets the
// channel count, and what it logs and returns for plans it cannot use.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli_runner.hpp"
#include "lagom/tuner/nccl_tuner_abi.h"

namespace lagom::tuner {
namespace {

constexpr float kIgnore = static_cast<float>(NCCL_ALGO_PROTO_IGNORE);

struct LogLine {
  ncclDebugLogLevel level;
  unsigned long flags;
  std::string text;
};
std::vector<LogLine> g_log;

// What NCCL's ncclDebugLog receives, formatted as it would print it.
__attribute__((format(printf, 5, 6))) void capture_log(ncclDebugLogLevel level, unsigned long flags,
                                                       const char* /*file*/, int /*line*/,
                                                       const char* fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_log.push_back({level, flags, buf});
}

// Lines of the captured log at `level` that contain `needle`.
int count_log(ncclDebugLogLevel level, std::string_view needle) {
  int n = 0;
  for (const LogLine& l : g_log) {
    n += l.level == level && l.text.find(needle) != std::string::npos ? 1 : 0;
  }
  return n;
}

std::string dump_log() {
  std::string out;
  for (const LogLine& l : g_log) {
    out += (l.level == NCCL_LOG_WARN ? "WARN " : "INFO ") + l.text + "\n";
  }
  return out;
}

struct Plugin {
  void* handle = nullptr;
  const ncclTuner_v5_t* v5 = nullptr;
  const ncclTuner_v4_t* v4 = nullptr;
  std::string error;
};

// Opened once and kept, as NCCL keeps its tuner loaded.
const Plugin& plugin() {
  static const Plugin p = [] {
    Plugin r;
    r.handle = dlopen(LAGOM_TUNER_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (r.handle == nullptr) {
      r.error = dlerror();
      return r;
    }
    r.v5 = static_cast<const ncclTuner_v5_t*>(dlsym(r.handle, "ncclTunerPlugin_v5"));
    r.v4 = static_cast<const ncclTuner_v4_t*>(dlsym(r.handle, "ncclTunerPlugin_v4"));
    return r;
  }();
  return p;
}

// NCCL's float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS], in microseconds; -1 is ineligible.
struct Table {
  float v[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
};

// A table as NCCL might pass it for one NVLink node: CollNet, NVLSTree (one node) and PAT
// ineligible, NVLS Simple-only, LL128 off for Ring.
Table nccl_table() {
  Table t{};
  const float rows[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS] = {
      {12.0f, 9.0f, 20.0f},          // Tree
      {10.0f, kIgnore, 15.0f},       // Ring
      {kIgnore, kIgnore, kIgnore},   // CollNetDirect
      {kIgnore, kIgnore, kIgnore},   // CollNetChain
      {kIgnore, kIgnore, 7.0f},      // NVLS
      {kIgnore, kIgnore, kIgnore},   // NVLSTree
      {kIgnore, kIgnore, kIgnore}};  // PAT
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a) {
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
      t.v[a][p] = rows[a][p];
    }
  }
  return t;
}

struct Call {
  ncclResult_t result = ncclInternalError;
  Table table = nccl_table();
  int nchannels = 0;  // NCCL initialises it to 0
};

// The entries of `after` that differ from NCCL's table, as "a/p=cost" strings.
std::vector<std::string> changes(const Table& after) {
  const Table before = nccl_table();
  std::vector<std::string> out;
  for (int a = 0; a < NCCL_NUM_ALGORITHMS; ++a) {
    for (int p = 0; p < NCCL_NUM_PROTOCOLS; ++p) {
      if (after.v[a][p] != before.v[a][p]) {
        out.push_back(std::to_string(a) + "/" + std::to_string(p) + "=" +
                      std::to_string(after.v[a][p]));
      }
    }
  }
  return out;
}

std::vector<std::string> zeroed(int algo, int proto) {
  return {std::to_string(algo) + "/" + std::to_string(proto) + "=" + std::to_string(0.0f)};
}

constexpr const char* kHeader = R"({"format": "lagom-plan", "version": 1, "rules": )";

class TunerPlugin : public ::testing::Test {
 protected:
  void SetUp() override {
    unset_env();
    g_log.clear();
    ASSERT_NE(plugin().handle, nullptr) << plugin().error;
    ASSERT_NE(plugin().v5, nullptr);
    ASSERT_NE(plugin().v4, nullptr);
  }
  void TearDown() override {
    for (void* ctx : open_) {
      plugin().v5->finalize(ctx);
    }
    unset_env();
  }
  static void unset_env() {
    ::unsetenv("LAGOM_TUNER_PLAN");
    ::unsetenv("NCCL_TUNER_CONFIG_FILE");
  }

  std::string write_file(const std::string& name, std::string_view text) {
    const std::string path = (tmp_.path() / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // Writes a plan with these rules (a JSON array) and points LAGOM_TUNER_PLAN at it.
  std::string use_plan(std::string_view rules) {
    const std::string path =
        write_file("plan.json", std::string(kHeader) + std::string(rules) + "}");
    ::setenv("LAGOM_TUNER_PLAN", path.c_str(), 1);
    return path;
  }

  ncclResult_t init_v5(void** ctx, size_t nranks, size_t nnodes) {
    ncclNvlDomainInfo_v5_t nvl{static_cast<int>(nnodes), 1, 8};
    ncclTunerConstants_v5_t constants{};
    return plugin().v5->init(ctx, 0x1234abcd, nranks, nnodes, capture_log, &nvl, &constants);
  }
  // A communicator's context, finalized at the end of the test.
  void* comm(size_t nranks, size_t nnodes) {
    void* ctx = nullptr;
    EXPECT_EQ(init_v5(&ctx, nranks, nnodes), ncclSuccess) << dump_log();
    if (ctx != nullptr) {
      open_.push_back(ctx);
    }
    return ctx;
  }
  void finalize(void* ctx) {
    std::erase(open_, ctx);
    EXPECT_EQ(plugin().v5->finalize(ctx), ncclSuccess);
  }

  static Call call(void* ctx, ncclFunc_t coll, size_t bytes) {
    Call c;
    c.result =
        plugin().v5->getCollInfo(ctx, coll, bytes, 1, reinterpret_cast<float**>(&c.table.v[0][0]),
                                 NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, 0, &c.nchannels);
    return c;
  }

  test::TempDir tmp_;
  std::vector<void*> open_;
};

TEST_F(TunerPlugin, ExportsV5AndV4) {
  EXPECT_STREQ(plugin().v5->name, "Lagom");
  EXPECT_NE(plugin().v5->init, nullptr);
  EXPECT_NE(plugin().v5->getCollInfo, nullptr);
  EXPECT_NE(plugin().v5->finalize, nullptr);
  EXPECT_STREQ(plugin().v4->name, "Lagom");
  EXPECT_NE(plugin().v4->init, nullptr);
  EXPECT_NE(plugin().v4->getCollInfo, nullptr);
  EXPECT_NE(plugin().v4->destroy, nullptr);
  // The plan reader is compiled in but hidden.
  EXPECT_EQ(dlsym(plugin().handle,
                  "_ZN5lagom6search14load_plan_fileERKNSt7__cxx1112basic_"
                  "stringIcSt11char_traitsIcESaIcEEE"),
            nullptr);
}

TEST_F(TunerPlugin, NoPlanIsANoOp) {
  void* ctx = comm(8, 1);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(count_log(NCCL_LOG_INFO, "no plan"), 1) << dump_log();
  for (int f = ncclFuncBroadcast; f <= ncclFuncAllReduce; ++f) {
    const Call c = call(ctx, static_cast<ncclFunc_t>(f), 1 << 20);
    EXPECT_EQ(c.result, ncclSuccess);
    EXPECT_TRUE(changes(c.table).empty());
    EXPECT_EQ(c.nchannels, 0);
  }
  g_log.clear();
  finalize(ctx);
  EXPECT_EQ(count_log(NCCL_LOG_INFO, "5 calls seen, 0 steered"), 1) << dump_log();
}

TEST_F(TunerPlugin, MatchingRuleZeroesItsEntryAndSetsChannels) {
  use_plan(R"([{"coll": "allgather", "min_bytes": 10485760, "max_bytes": 10485760,
                "nnodes": 1, "nranks": 8, "algo": "Tree", "proto": "LL128", "nchannels": 2}])");
  void* ctx = comm(8, 1);
  const Call c = call(ctx, ncclFuncAllGather, 10485760);
  EXPECT_EQ(c.result, ncclSuccess);
  EXPECT_EQ(changes(c.table), zeroed(NCCL_ALGO_TREE, NCCL_PROTO_LL128));
  EXPECT_EQ(c.nchannels, 2);
  EXPECT_EQ(count_log(NCCL_LOG_INFO,
                      "rule 0 (AllGather 10485760..10485760 B, nnodes 1, nranks 8) "
                      "first applied to AllGather 10485760 B: Tree/LL128, 2 channels"),
            1)
      << dump_log();
}

TEST_F(TunerPlugin, CallsNoRuleMatchesAreUntouched) {
  use_plan(R"([{"coll": "allreduce", "min_bytes": 1024, "max_bytes": 4096,
                "nnodes": 2, "nranks": 16, "algo": "Ring", "proto": "Simple", "nchannels": 4}])");
  void* ctx = comm(16, 2);
  ASSERT_EQ(changes(call(ctx, ncclFuncAllReduce, 2048).table),
            zeroed(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE));
  // Another collective, another size; then other communicator shapes.
  for (const Call& c : {call(ctx, ncclFuncAllGather, 2048), call(ctx, ncclFuncAllReduce, 8192)}) {
    EXPECT_EQ(c.result, ncclSuccess);
    EXPECT_TRUE(changes(c.table).empty());
    EXPECT_EQ(c.nchannels, 0);  // unlike NCCL's example plugin, which writes 1
  }
  void* other_nodes = comm(16, 4);
  void* other_ranks = comm(8, 2);
  for (void* other : {other_nodes, other_ranks}) {
    const Call c = call(other, ncclFuncAllReduce, 2048);
    EXPECT_TRUE(changes(c.table).empty());
    EXPECT_EQ(c.nchannels, 0);
  }
}

TEST_F(TunerPlugin, ByteRangeIsInclusive) {
  use_plan(R"([{"coll": "reducescatter", "min_bytes": 1000, "max_bytes": 2000,
                "nnodes": -1, "nranks": -1, "nchannels": 3}])");
  void* ctx = comm(8, 1);
  EXPECT_EQ(call(ctx, ncclFuncReduceScatter, 999).nchannels, 0);
  EXPECT_EQ(call(ctx, ncclFuncReduceScatter, 1000).nchannels, 3);
  EXPECT_EQ(call(ctx, ncclFuncReduceScatter, 2000).nchannels, 3);
  EXPECT_EQ(call(ctx, ncclFuncReduceScatter, 2001).nchannels, 0);
}

TEST_F(TunerPlugin, FirstMatchingRuleWins) {
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 1048576, "nnodes": -1,
                "nranks": -1, "algo": "Tree", "proto": "LL", "nchannels": 1},
               {"coll": "allreduce", "min_bytes": 0, "max_bytes": 1099511627776, "nnodes": -1,
                "nranks": -1, "algo": "Ring", "proto": "Simple", "nchannels": 8}])");
  void* ctx = comm(8, 1);
  const Call small = call(ctx, ncclFuncAllReduce, 4096);
  EXPECT_EQ(changes(small.table), zeroed(NCCL_ALGO_TREE, NCCL_PROTO_LL));
  EXPECT_EQ(small.nchannels, 1);
  const Call large = call(ctx, ncclFuncAllReduce, 1048577);
  EXPECT_EQ(changes(large.table), zeroed(NCCL_ALGO_RING, NCCL_PROTO_SIMPLE));
  EXPECT_EQ(large.nchannels, 8);
}

TEST_F(TunerPlugin, AnyNodesOrRanksMatchesEveryCommunicator) {
  use_plan(R"([{"coll": "broadcast", "min_bytes": 0, "max_bytes": 65536, "nnodes": -1,
                "nranks": 8, "nchannels": 5},
               {"coll": "broadcast", "min_bytes": 0, "max_bytes": 65536, "nnodes": 4,
                "nranks": -1, "nchannels": 6}])");
  EXPECT_EQ(call(comm(8, 1), ncclFuncBroadcast, 100).nchannels, 5);
  EXPECT_EQ(call(comm(8, 2), ncclFuncBroadcast, 100).nchannels, 5);
  EXPECT_EQ(call(comm(32, 4), ncclFuncBroadcast, 100).nchannels, 6);
  EXPECT_EQ(call(comm(16, 2), ncclFuncBroadcast, 100).nchannels, 0);
}

TEST_F(TunerPlugin, AlgorithmAloneTakesItsCheapestEligibleProtocol) {
  // Ring: LL 10, LL128 ineligible, Simple 15 -> LL. Tree: LL 12, LL128 9, Simple 20 -> LL128.
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "algo": "ring"},
               {"coll": "allreduce", "min_bytes": 101, "max_bytes": 200, "nnodes": -1,
                "nranks": -1, "algo": "Tree"}])");
  void* ctx = comm(8, 1);
  const Call ring = call(ctx, ncclFuncAllReduce, 50);
  EXPECT_EQ(changes(ring.table), zeroed(NCCL_ALGO_RING, NCCL_PROTO_LL));
  EXPECT_EQ(ring.nchannels, 0);
  EXPECT_EQ(changes(call(ctx, ncclFuncAllReduce, 150).table),
            zeroed(NCCL_ALGO_TREE, NCCL_PROTO_LL128));
}

TEST_F(TunerPlugin, ProtocolAloneTakesItsCheapestEligibleAlgorithm) {
  // Simple: Tree 20, Ring 15, NVLS 7 -> NVLS. LL128: only Tree (9) is eligible.
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "proto": "Simple"},
               {"coll": "allreduce", "min_bytes": 101, "max_bytes": 200, "nnodes": -1,
                "nranks": -1, "proto": "LL128", "nchannels": 12}])");
  void* ctx = comm(8, 1);
  EXPECT_EQ(changes(call(ctx, ncclFuncAllReduce, 50).table),
            zeroed(NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE));
  const Call ll128 = call(ctx, ncclFuncAllReduce, 150);
  EXPECT_EQ(changes(ll128.table), zeroed(NCCL_ALGO_TREE, NCCL_PROTO_LL128));
  EXPECT_EQ(ll128.nchannels, 12);
}

// A newer NCCL may pass more algorithms or protocols than we know: a rule that leaves one of them
// open never picks an entry we cannot name (the cheapest entries here are the unknown ones), and
// nothing outside the table NCCL passed is touched.
TEST_F(TunerPlugin, EntriesBeyondTheKnownAlgorithmsAndProtocolsAreLeftToNccl) {
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "proto": "Simple"},
               {"coll": "allreduce", "min_bytes": 101, "max_bytes": 200, "nnodes": -1,
                "nranks": -1, "algo": "Ring"}])");
  void* ctx = comm(8, 1);
  constexpr int kAlgos = NCCL_NUM_ALGORITHMS + 1;
  constexpr int kProtos = NCCL_NUM_PROTOCOLS + 1;
  for (size_t bytes : {size_t{50}, size_t{150}}) {
    SCOPED_TRACE(bytes);
    std::vector<float> table(kAlgos * kProtos + 1, 5.0f);  // + a guard entry after the table
    const auto at = [&](int a, int p) -> float& { return table[a * kProtos + p]; };
    for (int a = 0; a < kAlgos; ++a) {
      at(a, kProtos - 1) = 1.0f;  // the unknown protocol: cheapest in every row
    }
    for (int p = 0; p < kProtos; ++p) {
      at(kAlgos - 1, p) = 1.0f;  // the unknown algorithm: cheapest in every column
    }
    table.back() = 42.0f;
    int nchannels = 0;
    // NCCL passes its float[numAlgo][numProto] as float** (enqueue.cc).
    ASSERT_EQ(plugin().v5->getCollInfo(ctx, ncclFuncAllReduce, bytes, 1,
                                       reinterpret_cast<float**>(table.data()), kAlgos, kProtos, 0,
                                       &nchannels),
              ncclSuccess);
    // Simple alone: the cheapest known algorithm with Simple (all 5.0: Tree, the first); Ring
    // alone: Ring with the cheapest known protocol (all 5.0: LL, the first).
    const int a = bytes == 50 ? NCCL_ALGO_TREE : NCCL_ALGO_RING;
    const int p = bytes == 50 ? NCCL_PROTO_SIMPLE : NCCL_PROTO_LL;
    EXPECT_EQ(at(a, p), 0.0f);
    int zeros = 0;
    for (int i = 0; i < kAlgos * kProtos; ++i) {
      zeros += table[i] == 0.0f ? 1 : 0;
    }
    EXPECT_EQ(zeros, 1);
    EXPECT_EQ(table.back(), 42.0f);
  }
}

TEST_F(TunerPlugin, IneligibleChoiceIsNeverResurrected) {
  // NVLS/LL, Ring/LL128 and PAT (any protocol) are all -1 in NCCL's table.
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "algo": "NVLS", "proto": "LL", "nchannels": 4},
               {"coll": "allreduce", "min_bytes": 101, "max_bytes": 200, "nnodes": -1,
                "nranks": -1, "algo": "Ring", "proto": "LL128"},
               {"coll": "allreduce", "min_bytes": 201, "max_bytes": 300, "nnodes": -1,
                "nranks": -1, "algo": "PAT"}])");
  void* ctx = comm(8, 1);
  for (int round = 0; round < 2; ++round) {
    for (size_t bytes : {50, 150, 250}) {
      const Call c = call(ctx, ncclFuncAllReduce, bytes);
      EXPECT_EQ(c.result, ncclSuccess);
      EXPECT_TRUE(changes(c.table).empty()) << bytes;
      EXPECT_EQ(c.nchannels, 0) << "the rule's channels were chosen for its algorithm";
    }
  }
  // Once per rule, naming the rule and what it wanted.
  EXPECT_EQ(count_log(NCCL_LOG_WARN, "ineligible"), 3) << dump_log();
  EXPECT_EQ(count_log(NCCL_LOG_WARN,
                      "rule 0 (AllReduce 0..100 B, nnodes any, nranks any) wants "
                      "NVLS/LL"),
            1)
      << dump_log();
  EXPECT_EQ(count_log(NCCL_LOG_WARN, "wants PAT/*"), 1) << dump_log();
  g_log.clear();
  finalize(ctx);
  EXPECT_EQ(count_log(NCCL_LOG_INFO, "6 calls seen, 0 steered by 0 of 3 rules, 6 left to NCCL"), 1)
      << dump_log();
}

TEST_F(TunerPlugin, ChannelsAloneKeepNcclsAlgorithm) {
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "nchannels": 7, "nthreads": 256}])");
  const Call c = call(comm(8, 1), ncclFuncAllReduce, 64);
  EXPECT_TRUE(changes(c.table).empty());
  EXPECT_EQ(c.nchannels, 7);
}

TEST_F(TunerPlugin, AllToAllRulesAreIgnored) {
  use_plan(R"([{"coll": "alltoall", "min_bytes": 0, "max_bytes": 1099511627776, "nnodes": -1,
                "nranks": -1, "algo": "Ring", "proto": "Simple", "nchannels": 2},
               {"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "nchannels": 9}])");
  void* ctx = comm(8, 1);
  EXPECT_EQ(count_log(NCCL_LOG_INFO, "1 alltoall rule(s) ignored"), 1) << dump_log();
  EXPECT_EQ(count_log(NCCL_LOG_INFO, "2 rules, 1 for this communicator"), 1) << dump_log();
  for (int f = ncclFuncBroadcast; f <= ncclFuncAllReduce; ++f) {
    const Call c = call(ctx, static_cast<ncclFunc_t>(f), 1 << 20);
    EXPECT_TRUE(changes(c.table).empty());
    EXPECT_EQ(c.nchannels, 0);
  }
  EXPECT_EQ(call(ctx, ncclFuncAllReduce, 100).nchannels, 9);
}

TEST_F(TunerPlugin, NonTunedFunctionsAreLeftAlone) {
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "nchannels": 9}])");
  const Call c = call(comm(8, 1), static_cast<ncclFunc_t>(5), 64);  // ncclFuncSendRecv
  EXPECT_EQ(c.result, ncclSuccess);
  EXPECT_TRUE(changes(c.table).empty());
  EXPECT_EQ(c.nchannels, 0);
}

TEST_F(TunerPlugin, ThreadAndChunkRulesAreReportedAtInit) {
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "nchannels": 2, "nthreads": 544},
               {"coll": "allgather", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "chunk_bytes": 131072},
               {"coll": "allgather", "min_bytes": 101, "max_bytes": 200, "nnodes": -1,
                "nranks": -1, "nchannels": 2}])");
  comm(8, 1);
  EXPECT_EQ(count_log(NCCL_LOG_INFO,
                      "2 rule(s) set nthreads/chunk_bytes, which a tuner plugin "
                      "cannot apply: they need NCCL_NTHREADS/NCCL_BUFFSIZE, see "
                      "lagom tune --export-env"),
            1)
      << dump_log();
}

TEST_F(TunerPlugin, MalformedPlanFailsInitNamingTheProblem) {
  struct Case {
    const char* name;
    std::string text;
    std::vector<std::string> expected;  // all in the WARN line
  };
  const std::string rule =
      R"("coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1, "nranks": -1)";
  const std::vector<Case> cases = {
      {"bad-json.json",
       std::string(kHeader) + "[{" + rule + "}",
       {"bad-json.json", "not valid JSON"}},
      {"unknown-field.json",
       std::string(kHeader) + "[{" + rule + R"(, "nchanels": 2}]})",
       {"unknown-field.json", "rules[0]", "unknown field 'nchanels'"}},
      {"unknown-algo.json",
       std::string(kHeader) + "[{" + rule + R"(, "algo": "Butterfly"}]})",
       {"unknown-algo.json", "rules[0].algo", "unknown algorithm 'Butterfly'"}},
      {"bad-range.json",
       std::string(kHeader) + R"([{"coll": "allreduce", "min_bytes": 9, "max_bytes": 1,
                                  "nnodes": -1, "nranks": -1}]})",
       {"bad-range.json", "rules[0]", "min_bytes 9 is above max_bytes 1"}},
      {"not-a-plan.json",
       R"({"format": "lagom.workload", "version": 1, "rules": []})",
       {"not-a-plan.json", "format", "lagom-plan"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    g_log.clear();
    const std::string path = write_file(c.name, c.text);
    ::setenv("LAGOM_TUNER_PLAN", path.c_str(), 1);
    void* ctx = &g_log;  // the plugin must clear it
    EXPECT_NE(init_v5(&ctx, 8, 1), ncclSuccess);
    EXPECT_EQ(ctx, nullptr);
    ASSERT_EQ(count_log(NCCL_LOG_WARN, "cannot use the plan"), 1) << dump_log();
    for (const std::string& e : c.expected) {
      EXPECT_EQ(count_log(NCCL_LOG_WARN, e), 1) << e << "\n" << dump_log();
    }
  }
  // A file that is not there.
  g_log.clear();
  const std::string missing = (tmp_.path() / "missing.json").string();
  ::setenv("LAGOM_TUNER_PLAN", missing.c_str(), 1);
  void* ctx = nullptr;
  EXPECT_NE(init_v5(&ctx, 8, 1), ncclSuccess);
  EXPECT_EQ(count_log(NCCL_LOG_WARN, "cannot open plan file '" + missing + "'"), 1) << dump_log();
}

TEST_F(TunerPlugin, ReadsAJsonPlanFromNcclTunerConfigFile) {
  const std::string path = write_file(
      "from-nccl-var.json", std::string(kHeader) + R"([{"coll": "allreduce", "min_bytes": 0,
          "max_bytes": 100, "nnodes": -1, "nranks": -1, "nchannels": 4}]})");
  ::setenv("NCCL_TUNER_CONFIG_FILE", path.c_str(), 1);
  EXPECT_EQ(call(comm(8, 1), ncclFuncAllReduce, 10).nchannels, 4);
  EXPECT_EQ(count_log(NCCL_LOG_INFO, "plan " + path), 1) << dump_log();
}

TEST_F(TunerPlugin, IgnoresTheExamplePluginsCsvInNcclTunerConfigFile) {
  const std::string path = write_file("nccl_tuner.conf", "allreduce,0,100,ring,simple,4,-1,-1\n");
  ::setenv("NCCL_TUNER_CONFIG_FILE", path.c_str(), 1);
  const Call c = call(comm(8, 1), ncclFuncAllReduce, 10);
  EXPECT_TRUE(changes(c.table).empty());
  EXPECT_EQ(c.nchannels, 0);
  EXPECT_EQ(count_log(NCCL_LOG_INFO, "is not a .json plan"), 1) << dump_log();
}

TEST_F(TunerPlugin, LagomTunerPlanWinsOverNcclTunerConfigFile) {
  const std::string other =
      write_file("other.json", std::string(kHeader) + R"([{"coll": "allreduce", "min_bytes": 0,
          "max_bytes": 100, "nnodes": -1, "nranks": -1, "nchannels": 4}]})");
  ::setenv("NCCL_TUNER_CONFIG_FILE", other.c_str(), 1);
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "nchannels": 6}])");
  EXPECT_EQ(call(comm(8, 1), ncclFuncAllReduce, 10).nchannels, 6);
}

TEST_F(TunerPlugin, V4EntryPointAppliesThePlan) {
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": 2,
                "nranks": 16, "algo": "Ring", "proto": "LL", "nchannels": 3}])");
  const ncclTuner_v4_t& v4 = *plugin().v4;
  void* ctx = nullptr;
  ASSERT_EQ(v4.init(16, 2, capture_log, &ctx), ncclSuccess) << dump_log();
  ASSERT_NE(ctx, nullptr);
  Call c;
  c.result =
      v4.getCollInfo(ctx, ncclFuncAllReduce, 100, 1, reinterpret_cast<float**>(&c.table.v[0][0]),
                     NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, 0, &c.nchannels);
  EXPECT_EQ(c.result, ncclSuccess);
  EXPECT_EQ(changes(c.table), zeroed(NCCL_ALGO_RING, NCCL_PROTO_LL));
  EXPECT_EQ(c.nchannels, 3);
  EXPECT_EQ(v4.destroy(ctx), ncclSuccess);
  EXPECT_EQ(count_log(NCCL_LOG_INFO, "1 calls seen, 1 steered by 1 of 1 rules"), 1) << dump_log();
}

TEST_F(TunerPlugin, FinalizeSummarisesCalls) {
  use_plan(R"([{"coll": "allreduce", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "algo": "Tree", "proto": "LL"},
               {"coll": "allgather", "min_bytes": 0, "max_bytes": 100, "nnodes": -1,
                "nranks": -1, "nchannels": 2}])");
  void* ctx = comm(8, 1);
  call(ctx, ncclFuncAllReduce, 10);
  call(ctx, ncclFuncAllReduce, 20);
  call(ctx, ncclFuncAllReduce, 1000);  // no rule
  call(ctx, ncclFuncBroadcast, 10);    // no rule
  g_log.clear();
  finalize(ctx);
  EXPECT_EQ(count_log(NCCL_LOG_INFO, "comm 0x1234abcd: 4 calls seen, 2 steered by 1 of 2 rules"), 1)
      << dump_log();
}

// The plugin links lagom::plan, lagom::nccl and lagom::common statically; what it exports is
// still the NCCL ABI alone (the two plugin structs), and it needs nothing beyond the C and C++
// runtimes on a cluster's nodes.
TEST(TunerPluginLibrary, ExportsOnlyTheAbiAndNeedsOnlyTheRuntime) {
  auto lines_of = [](const std::string& cmd) {
    std::vector<std::string> lines;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (p == nullptr) {
      ADD_FAILURE() << "cannot run " << cmd;
      return lines;
    }
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p) != nullptr) {
      lines.emplace_back(buf);
    }
    EXPECT_EQ(::pclose(p), 0) << cmd;
    return lines;
  };
  const std::string so = test::shell_quote(LAGOM_TUNER_PLUGIN_PATH);
  std::vector<std::string> symbols;
  for (const std::string& line : lines_of("nm -D --defined-only " + so)) {
    symbols.push_back(line.substr(line.rfind(' ') + 1, line.size() - line.rfind(' ') - 2));
  }
  std::sort(symbols.begin(), symbols.end());
  EXPECT_EQ(symbols, (std::vector<std::string>{"ncclTunerPlugin_v4", "ncclTunerPlugin_v5"}));
  for (const std::string& line : lines_of("objdump -p " + so + " | grep NEEDED")) {
    const bool runtime =
        line.find("libstdc++") != std::string::npos || line.find("libgcc_s") != std::string::npos ||
        line.find("libc.so") != std::string::npos || line.find("libm.so") != std::string::npos ||
        // the sanitizer build's runtimes (make test-sanitize)
        line.find("libasan") != std::string::npos || line.find("libubsan") != std::string::npos;
    EXPECT_TRUE(runtime) << "the plugin needs " << line;
  }
}

}  // namespace
}  // namespace lagom::tuner
