// NCCL's tuner-plugin C ABI (v5, and v4 for NCCL 2.23..2.26), declared here from the facts in
// reference/nccl.md §1.1 and §3.2 so that the plugin builds without NCCL's headers.
//
// Sources (NVIDIA/nccl v2.28.9-1): ncclResult_t from ext-tuner/example/nccl/err.h; log levels,
// subsystem flags, ncclDebugLogger_t, ncclFunc_t, NCCL_NUM_ALGORITHMS/PROTOCOLS, the
// NCCL_ALGO_* / NCCL_PROTO_* indices and NCCL_ALGO_PROTO_IGNORE from src/include/nccl_common.h;
// the structs from src/include/plugin/tuner/tuner_v5.h and tuner_v4.h. Only the layout matters
// (NCCL hands us these types), so the names follow NCCL's to make the two easy to compare.
#ifndef LAGOM_TUNER_NCCL_TUNER_ABI_H_
#define LAGOM_TUNER_NCCL_TUNER_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6
} ncclResult_t;

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

// Subsystem flags (NCCL_DEBUG_SUBSYS); INFO lines print only when their flag is enabled, WARN
// lines always.
typedef enum {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_TUNING = 0x40,
  NCCL_ENV = 0x80,
  NCCL_ALL = ~0
} ncclDebugLogSubSys;

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file,
                                  int line, const char* fmt, ...);

// The five functions NCCL's cost model tunes (NCCL_NUM_FUNCTIONS); p2p functions follow them in
// NCCL's enum but never reach a tuner.
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4
} ncclFunc_t;

#define NCCL_NUM_FUNCTIONS 5
#define NCCL_NUM_ALGORITHMS 7        // Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT
#define NCCL_NUM_PROTOCOLS 3         // LL, LL128, Simple
#define NCCL_ALGO_PROTO_IGNORE -1.0  // a cost-table entry NCCL will not run

// Cost-table indices.
#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2

#define NCCL_NUM_HW_LINKS_V5 3
#define NCCL_NUM_COMPCAPS_V5 4
#define NCCL_NUM_TUNING_SCALES_V5 3

typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ncclNvlDomainInfo_v5_t;

// NCCL's analytic-model constants (reference/nccl.md §2.2), writable at init. We leave them.
typedef struct {
  double baseLatencies[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double hwLatencies[NCCL_NUM_HW_LINKS_V5][NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  double llMaxBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxRingLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeLL128Bws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
  double perChMaxNVLSTreeBws[NCCL_NUM_COMPCAPS_V5][NCCL_NUM_TUNING_SCALES_V5];
} ncclTunerConstants_v5_t;

// getCollInfo: `collCostTable` is really `float[numAlgo][numProto]` passed as float**; entries
// of NCCL_ALGO_PROTO_IGNORE are ineligible; NCCL runs the cheapest eligible entry. `*nChannels`
// arrives as 0 and overrides NCCL's channel count when the plugin makes it nonzero. A non-success
// return from any function fails the NCCL call that made it (communicator init, or the
// collective).
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes,
                       ncclDebugLogger_t logFunction, ncclNvlDomainInfo_v5_t* nvlDomainInfo,
                       ncclTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*finalize)(void* context);
} ncclTuner_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps,
                              float** collCostTable, int numAlgo, int numProto, int regBuff,
                              int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // LAGOM_TUNER_NCCL_TUNER_ABI_H_
