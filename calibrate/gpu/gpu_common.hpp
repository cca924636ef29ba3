// What lagom-calibrate and lagom-validate share: error checks that name the call, the device
// facts of a bundle's context, cuBLASLt BF16 GEMMs, timing with CUDA events, ranks of a multi-GPU
// run (flags, Slurm or Open MPI) and the NCCL unique id passed through a file.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lagom/calibrate/bundle.hpp"

namespace lagom::gpu {

// Exit status when there is nothing to run on (ctest's SKIP_RETURN_CODE).
inline constexpr int kNoDevice = 77;

struct GpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e != cudaSuccess) {
    throw GpuError(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
                   cudaGetErrorString(e));
  }
}
inline void check_cublas(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw GpuError(std::string(what) + " failed at " + file + ":" + std::to_string(line) +
                   ": cuBLAS status " + std::to_string(static_cast<int>(s)));
  }
}
inline void check_nccl(ncclResult_t r, const char* what, const char* file, int line) {
  if (r != ncclSuccess) {
    throw GpuError(std::string(what) + " failed at " + file + ":" + std::to_string(line) + ": " +
                   ncclGetErrorString(r));
  }
}
#define LAGOM_CUDA(call) ::lagom::gpu::check_cuda((call), #call, __FILE__, __LINE__)
#define LAGOM_CUBLAS(call) ::lagom::gpu::check_cublas((call), #call, __FILE__, __LINE__)
#define LAGOM_NCCL(call) ::lagom::gpu::check_nccl((call), #call, __FILE__, __LINE__)

// The number of CUDA devices, 0 when there is none (or no driver).
inline int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear it
    return 0;
  }
  return n;
}

inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

inline std::string host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// The GPU and the software stack, for a bundle's context.json.
inline calibrate::BundleContext device_context(int device, const std::string& command_line) {
  cudaDeviceProp p{};
  LAGOM_CUDA(cudaGetDeviceProperties(&p, device));
  auto attr = [&](cudaDeviceAttr a) {
    int v = 0;
    LAGOM_CUDA(cudaDeviceGetAttribute(&v, a, device));
    return v;
  };
  calibrate::BundleContext c;
  c.gpu.name = p.name;
  c.gpu.sms = p.multiProcessorCount;
  c.gpu.compute_capability = p.major * 10 + p.minor;
  c.gpu.memory_bytes = static_cast<double>(p.totalGlobalMem);
  c.gpu.l2_bytes = p.l2CacheSize;
  c.gpu.smem_per_sm_bytes = static_cast<double>(p.sharedMemPerMultiprocessor);
  c.gpu.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  c.gpu.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  // CUDA 13 removed clockRate and memoryClockRate from cudaDeviceProp: ask the attributes (kHz).
  c.gpu.clock_MHz = attr(cudaDevAttrClockRate) / 1000.0;
  c.gpu.memory_clock_MHz = attr(cudaDevAttrMemoryClockRate) / 1000.0;
  c.gpu.memory_bus_bits = p.memoryBusWidth;
  int v = 0;
  cudaDriverGetVersion(&v);
  c.driver = std::to_string(v);
  cudaRuntimeGetVersion(&v);
  c.cuda_runtime = std::to_string(v);
  c.cublas = std::to_string(cublasLtGetVersion());
  if (ncclGetVersion(&v) == ncclSuccess) {
    c.nccl = std::to_string(v);
  }
  c.date = utc_now();
  c.host = host_name();
  c.command_line = command_line;
  return c;
}

// Times `body` (work enqueued on `stream`) with events, in microseconds.
template <typename Body>
double time_us(cudaStream_t stream, Body&& body) {
  cudaEvent_t a = nullptr;
  cudaEvent_t b = nullptr;
  LAGOM_CUDA(cudaEventCreate(&a));
  LAGOM_CUDA(cudaEventCreate(&b));
  LAGOM_CUDA(cudaEventRecord(a, stream));
  body();
  LAGOM_CUDA(cudaEventRecord(b, stream));
  LAGOM_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  LAGOM_CUDA(cudaEventElapsedTime(&ms, a, b));
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms * 1e3;
}

// Device memory that frees itself.
struct DeviceBuffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  explicit DeviceBuffer(std::size_t n) : bytes(n) {
    LAGOM_CUDA(cudaMalloc(&ptr, std::max<std::size_t>(n, 256)));
    LAGOM_CUDA(cudaMemset(ptr, 0, std::max<std::size_t>(n, 256)));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

// C[m,n] = A[m,k] B[k,n] in BF16 with FP32 accumulation (column-major, no transposes), the
// algorithm cuBLASLt's heuristic ranks first.
class Gemm {
 public:
  Gemm(cublasLtHandle_t lt, std::int64_t m, std::int64_t n, std::int64_t k,
       std::size_t workspace_bytes)
      : lt_(lt), m_(m), n_(n), k_(k), workspace_(workspace_bytes) {
    LAGOM_CUBLAS(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t no = CUBLAS_OP_N;
    LAGOM_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &no, sizeof no));
    LAGOM_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &no, sizeof no));
    LAGOM_CUBLAS(cublasLtMatrixLayoutCreate(&a_, CUDA_R_16BF, m, k, m));
    LAGOM_CUBLAS(cublasLtMatrixLayoutCreate(&b_, CUDA_R_16BF, k, n, k));
    LAGOM_CUBLAS(cublasLtMatrixLayoutCreate(&c_, CUDA_R_16BF, m, n, m));
    cublasLtMatmulPreference_t pref = nullptr;
    LAGOM_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const std::uint64_t ws = workspace_bytes;
    LAGOM_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    int returned = 0;
    LAGOM_CUBLAS(
        cublasLtMatmulAlgoGetHeuristic(lt_, op_, a_, b_, c_, c_, pref, 1, &heur_, &returned));
    cublasLtMatmulPreferenceDestroy(pref);
    if (returned < 1) {
      throw GpuError("cuBLASLt has no algorithm for a " + std::to_string(m) + "x" +
                     std::to_string(n) + "x" + std::to_string(k) + " BF16 GEMM");
    }
  }
  ~Gemm() {
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(c_);
    cublasLtMatmulDescDestroy(op_);
  }
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  std::size_t operand_bytes() const {
    return 2 * static_cast<std::size_t>(m_ * k_ + k_ * n_ + m_ * n_);
  }
  double waves() const { return heur_.wavesCount; }
  double flops() const {
    return 2.0 * static_cast<double>(m_) * static_cast<double>(n_) * static_cast<double>(k_);
  }

  void run(const void* a, const void* b, void* c, cudaStream_t stream) const {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    LAGOM_CUBLAS(cublasLtMatmul(lt_, op_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_, &heur_.algo,
                                workspace_.ptr, workspace_.bytes, stream));
  }

 private:
  cublasLtHandle_t lt_;
  std::int64_t m_, n_, k_;
  DeviceBuffer workspace_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulHeuristicResult_t heur_{};
};

// Operands for a GEMM, `copies` sets of them (rotated so that L2 does not flatter a repeat).
struct GemmOperands {
  std::vector<std::unique_ptr<DeviceBuffer>> a, b, c;
  GemmOperands(std::int64_t m, std::int64_t n, std::int64_t k, int copies) {
    for (int i = 0; i < copies; ++i) {
      a.push_back(std::make_unique<DeviceBuffer>(2 * static_cast<std::size_t>(m * k)));
      b.push_back(std::make_unique<DeviceBuffer>(2 * static_cast<std::size_t>(k * n)));
      c.push_back(std::make_unique<DeviceBuffer>(2 * static_cast<std::size_t>(m * n)));
    }
  }
  void run(const Gemm& g, int i, cudaStream_t s) const {
    const std::size_t j = static_cast<std::size_t>(i) % a.size();
    g.run(a[j]->ptr, b[j]->ptr, c[j]->ptr, s);
  }
};

// Copies of a working set of `bytes` that together exceed twice the L2 (at most 8).
inline int copies_beyond_l2(std::size_t bytes, double l2_bytes) {
  return static_cast<int>(std::clamp<double>(
      std::ceil(2.0 * l2_bytes / std::max(static_cast<double>(bytes), 1.0)), 1.0, 8.0));
}

// Where this process sits in a multi-GPU run: --rank/--nranks, else Slurm's or Open MPI's
// variables, else rank 0 of 1.
struct RankInfo {
  int rank = 0;
  int nranks = 1;
  int local_rank = 0;
};

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

inline RankInfo rank_info(int flag_rank, int flag_nranks) {
  RankInfo r;
  if (flag_rank >= 0 && flag_nranks > 0) {
    r.rank = flag_rank;
    r.nranks = flag_nranks;
  } else if (std::getenv("SLURM_PROCID") != nullptr) {
    r.rank = env_int("SLURM_PROCID", 0);
    r.nranks = env_int("SLURM_NTASKS", 1);
    r.local_rank = env_int("SLURM_LOCALID", -1);
  } else if (std::getenv("OMPI_COMM_WORLD_RANK") != nullptr) {
    r.rank = env_int("OMPI_COMM_WORLD_RANK", 0);
    r.nranks = env_int("OMPI_COMM_WORLD_SIZE", 1);
    r.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", -1);
  }
  if (r.local_rank < 0 || flag_rank >= 0) {
    const int n = std::max(1, device_count());
    r.local_rank = r.rank % n;
  }
  return r;
}

// Rank 0 writes the NCCL unique id to `path` (a shared file system across nodes); the others wait
// for it, so that no MPI library is needed.
inline ncclUniqueId shared_unique_id(const RankInfo& r, const std::string& path) {
  ncclUniqueId id{};
  if (r.rank == 0) {
    LAGOM_NCCL(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp" + std::to_string(getpid());
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(id.internal, sizeof id.internal);
      if (!out) {
        throw GpuError("cannot write the NCCL id file '" + tmp + "'");
      }
    }
    std::filesystem::rename(tmp, path);
    return id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(id.internal, sizeof id.internal) && in.gcount() == sizeof id.internal) {
      return id;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  throw GpuError("rank " + std::to_string(r.rank) + ": no NCCL id in '" + path +
                 "' after 5 minutes (rank 0 writes it; give every rank the same --id-file on a "
                 "shared file system)");
}

}  // namespace lagom::gpu
