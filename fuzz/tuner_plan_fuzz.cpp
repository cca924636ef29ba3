// Fuzzes the tuner plugin's plan reader through the plugin's own entry points, as NCCL calls
// them: LAGOM_TUNER_PLAN names the plan, init_v5 reads it, getCollInfo answers a few calls,
// finalize frees the context. Nothing may escape the C interface and no call may fail a
// collective: init may refuse a bad plan (a non-success code), getCollInfo must succeed.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/tuner/nccl_tuner_abi.h"

extern "C" const ncclTuner_v5_t ncclTunerPlugin_v5;

namespace {

void quiet(ncclDebugLogLevel, unsigned long, const char*, int, const char*, ...) {}

const std::string& plan_path() {
  static const std::string path = [] {
    const std::string p = (std::filesystem::temp_directory_path() /
                           ("lagom-tuner-fuzz-" + std::to_string(::getpid()) + ".json"))
                              .string();
    ::setenv("LAGOM_TUNER_PLAN", p.c_str(), 1);
    return p;
  }();
  return path;
}

}  // namespace

int lagom::fuzz::tuner_plan(const std::uint8_t* data, std::size_t size) {
  std::ofstream(plan_path(), std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  ncclNvlDomainInfo_v5_t nvl{1, 1, 8};
  ncclTunerConstants_v5_t constants{};
  void* ctx = nullptr;
  if (ncclTunerPlugin_v5.init(&ctx, 0x1234, 8, 1, quiet, &nvl, &constants) != ncclSuccess) {
    lagom::fuzz::require(ctx == nullptr, "a failed init left a context");
    return 0;
  }
  for (const ncclFunc_t coll :
       {ncclFuncAllReduce, ncclFuncAllGather, ncclFuncReduceScatter, ncclFuncBroadcast}) {
    for (const std::size_t bytes : {std::size_t{8}, std::size_t{1} << 20, std::size_t{1} << 30}) {
      float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
      for (auto& row : table) {
        for (float& cost : row) {
          cost = 1.0f;
        }
      }
      int nchannels = 0;
      lagom::fuzz::require(ncclTunerPlugin_v5.getCollInfo(ctx, coll, bytes, 1,
                                                          reinterpret_cast<float**>(&table[0][0]),
                                                          NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS,
                                                          0, &nchannels) == ncclSuccess,
                           "getCollInfo failed a collective");
      lagom::fuzz::require(nchannels >= 0, "getCollInfo set a negative channel count");
    }
  }
  lagom::fuzz::require(ncclTunerPlugin_v5.finalize(ctx) == ncclSuccess, "finalize failed");
  return 0;
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::tuner_plan)
