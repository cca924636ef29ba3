// A measurement bundle: what `lagom-calibrate` measured on one GPU type (docs/formats/bundle.md),
// read by `lagom calibrate fit --measurements` and written by the calibrator and by tests.
//
//   BUNDLE/context.json   the GPU (name, SMs, L2, shared memory, clocks), driver, CUDA, cuBLAS and
//                         NCCL versions, date, host, command line; "synthetic": true when a test
//                         (not a GPU) made it
//   BUNDLE/raw/*.csv      every sample, one file per micro-benchmark (header row, then numbers)
//   BUNDLE/raw/nccl-*.txt NCCL sweeps in nccl-tests' table format (2 or more GPUs)
//   BUNDLE/summary.json   medians per benchmark, for people (the fit reads the raw samples)
//
// The reader is strict: a missing file or column, a number that does not parse whole, NaN, a
// negative time or size is a lagom::Error naming the file and the line.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lagom::calibrate {

inline constexpr std::string_view kBundleFormat = "lagom.bundle";
inline constexpr int kBundleVersion = 1;

struct BundleGpu {
  std::string name;  // cudaDeviceProp::name, e.g. "NVIDIA H200"
  int sms = 0;
  int compute_capability = 0;  // 90 for sm_90
  double memory_bytes = 0;
  double l2_bytes = 0;
  double smem_per_sm_bytes =
      0;  // shared memory per SM (cudaDevAttrMaxSharedMemoryPerMultiprocessor)
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  double clock_MHz = 0;         // cudaDevAttrClockRate
  double memory_clock_MHz = 0;  // cudaDevAttrMemoryClockRate
  int memory_bus_bits = 0;
};

struct BundleContext {
  bool synthetic = false;  // made by a test from a model, not measured
  BundleGpu gpu;
  std::string driver;        // cudaDriverGetVersion, e.g. "13000"
  std::string cuda_runtime;  // cudaRuntimeGetVersion
  std::string cublas;        // cublasLtGetVersion
  std::string nccl;          // ncclGetVersion ("" when not linked)
  std::string date;          // ISO 8601, UTC
  std::string host;
  std::string command_line;
  int ranks = 1;  // GPUs that took part (the nccl benchmarks need 2 or more)
};

// raw/hbm.csv: one kernel launch streaming `bytes` through HBM (read, write, copy, triad: what
// the kernel reads plus what it writes; memcpy: a device-to-device cudaMemcpyAsync, counted as
// read plus write).
struct HbmSample {
  std::string kernel;  // read | write | copy | triad | memcpy
  double bytes = 0;
  double time_us = 0;
};

// raw/launch.csv: back_to_back is the time per kernel of many empty kernels launched in a row on
// one stream (what a stream pays per kernel); synchronized is one launch waited for.
struct LaunchSample {
  std::string kind;  // back_to_back | synchronized
  double time_us = 0;
};

// raw/gemm.csv: one cuBLASLt BF16 GEMM C[m,n] = A[m,k] B[k,n] (fp32 accumulation), with the
// launch's grid (thread blocks) and the heuristic's wavesCount.
struct GemmSample {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t blocks = 0;  // grid size of the kernel cuBLASLt chose (0: unknown)
  double waves = 0;         // cublasLtMatmulHeuristicResult_t::wavesCount (0: unknown)
  double time_us = 0;
};

// raw/stream.csv: a streaming kernel of a compute class over `elems` values: `bytes` through
// HBM, `flops` of arithmetic, `blocks` thread blocks of which `blocks_per_sm` fit one SM (the
// occupancy API's answer for the kernel as launched).
struct StreamSample {
  std::string cls;  // elementwise | norm | optimizer
  double elems = 0;
  double bytes = 0;
  double flops = 0;
  std::int64_t blocks = 0;
  int blocks_per_sm = 0;
  double time_us = 0;
};

// raw/contention.csv: a GEMM (m, n, k) alone and beside an occupier that imitates `ctas` NCCL
// channels: that many persistent CTAs (NCCL's 544 threads and its shared memory each), resident
// before the GEMM starts, each copying chunks of `chunk_bytes` through HBM, paced to `rate_GBps`
// in all (0: as fast as they can); `occupier_GBps` is what they moved while the GEMM ran.
struct ContentionSample {
  int ctas = 0;
  std::int64_t chunk_bytes = 0;
  double rate_GBps = 0;
  std::int64_t m = 0, n = 0, k = 0;
  double gemm_alone_us = 0;
  double gemm_us = 0;
  double occupier_GBps = 0;
};

struct Bundle {
  std::string path;  // the folder it was read from (names it in provenance and errors)
  BundleContext context;
  std::vector<HbmSample> hbm;
  std::vector<LaunchSample> launch;
  std::vector<GemmSample> gemm;
  std::vector<StreamSample> stream;
  std::vector<ContentionSample> contention;
  std::vector<std::string> nccl_logs;  // paths of raw/nccl-*.txt, sorted
};

// Reads BUNDLE/context.json and every raw/*.csv present (each benchmark is optional: a bundle of
// `--only hbm` has only raw/hbm.csv). lagom::Error names the file and line of anything wrong.
Bundle read_bundle(const std::string& dir);

// Writes context.json, raw/*.csv for the benchmarks with samples, and summary.json (medians).
// Creates the folders.
void write_bundle(const Bundle& bundle, const std::string& dir);

// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values);

// A GPU model token of a name ("NVIDIA H200" -> "H200", "H100-SXM-80GB" -> "H100",
// "NVIDIA A100-SXM4-80GB" -> "A100"), to tell whether a bundle and a profile describe the same
// GPU; "" when none is recognised.
std::string gpu_model_token(std::string_view name);

}  // namespace lagom::calibrate
