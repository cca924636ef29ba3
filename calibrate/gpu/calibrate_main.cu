// lagom-calibrate: measures one GPU type (and, with 2 or more GPUs, NCCL) and writes a measurement
// bundle (calibrate/bundle.hpp, docs/calibration.md) that `lagom calibrate fit --measurements`
// turns into a hardware profile.
//
//   lagom-calibrate --out BUNDLE [--only device,hbm,launch,gemm,elementwise,norm,optimizer,
//                   contention,nccl] [--samples N] [--quick] [--device D]
//                   [--rank R --nranks N] [--id-file PATH] [--nccl-max-bytes B]
//
// Protocol: every configuration is warmed up first (clocks, cuBLASLt's kernel load, NCCL's
// connections), then timed `samples` times (30 by default) with CUDA events; every sample is kept
// in raw/*.csv and summary.json holds the medians. Buffers rotate or exceed L2 so that a repeat is
// not served from cache. Exit status 77 when there is no CUDA device.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_common.hpp"
#include "kernels.cuh"

namespace lagom::gpu {
namespace {

struct Options {
  std::string out;
  std::set<std::string> only;
  int samples = 30;
  bool quick = false;
  int device = -1;
  int rank = -1;
  int nranks = 0;
  std::string id_file;
  std::int64_t nccl_max_bytes = std::int64_t{1} << 30;
  std::string command_line;
};

const std::vector<std::string> kSingleGpu = {"device",      "hbm",  "launch",    "gemm",
                                             "elementwise", "norm", "optimizer", "contention"};
const std::vector<std::string> kMultiGpu = {"nccl"};

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr,
               "lagom-calibrate: %s\nusage: lagom-calibrate --out BUNDLE [--only LIST] [--samples "
               "N] [--quick] [--device D] [--rank R --nranks N] [--id-file PATH] "
               "[--nccl-max-bytes B]\nbenchmarks: device hbm launch gemm elementwise norm "
               "optimizer contention nccl\n",
               what.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; ++i) {
    o.command_line += (i ? " " : "") + std::string(argv[i]);
  }
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) {
      usage_error(std::string(argv[i]) + " needs a value");
    }
    return argv[++i];
  };
  auto number = [&](int& i) {
    const std::string v = value(i);
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0') {
      usage_error(std::string(argv[i - 1]) + " '" + v + "' is not a whole number");
    }
    return n;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out") {
      o.out = value(i);
    } else if (a == "--only") {
      std::stringstream in(value(i));
      for (std::string b; std::getline(in, b, ',');) {
        const bool known = std::find(kSingleGpu.begin(), kSingleGpu.end(), b) != kSingleGpu.end() ||
                           std::find(kMultiGpu.begin(), kMultiGpu.end(), b) != kMultiGpu.end();
        if (!known) {
          usage_error("unknown benchmark '" + b + "'");
        }
        o.only.insert(b);
      }
    } else if (a == "--samples") {
      o.samples = static_cast<int>(number(i));
      if (o.samples < 3 || o.samples > 10000) {
        usage_error("--samples must be in 3..10000");
      }
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--device") {
      o.device = static_cast<int>(number(i));
    } else if (a == "--rank") {
      o.rank = static_cast<int>(number(i));
    } else if (a == "--nranks") {
      o.nranks = static_cast<int>(number(i));
    } else if (a == "--id-file") {
      o.id_file = value(i);
    } else if (a == "--nccl-max-bytes") {
      o.nccl_max_bytes = number(i);
    } else if (a == "-h" || a == "--help") {
      usage_error("measures this GPU (and NCCL with 2 or more ranks) into a bundle");
    } else {
      usage_error("unknown option '" + a + "'");
    }
  }
  if (o.out.empty()) {
    usage_error("--out BUNDLE is required");
  }
  return o;
}

bool wanted(const Options& o, const std::string& name) {
  return o.only.empty() || o.only.count(name) > 0;
}

void note(const char* fmt_text, const std::string& arg = "") {
  std::fprintf(stderr, "lagom-calibrate: ");
  std::fprintf(stderr, fmt_text, arg.c_str());
  std::fprintf(stderr, "\n");
}

// Launches `k` on enough blocks to fill the GPU a few times over.
int stream_grid(int sms) {
  return sms * 8;
}

void bench_hbm(const Options& o, const calibrate::BundleContext& ctx, cudaStream_t s,
               calibrate::Bundle& b) {
  note("hbm: read, write, copy, triad and cudaMemcpyAsync over buffers far larger than L2%s");
  const std::size_t largest =
      std::max<std::size_t>(std::size_t{1} << 31, static_cast<std::size_t>(8 * ctx.gpu.l2_bytes));
  const std::size_t cap = static_cast<std::size_t>(ctx.gpu.memory_bytes / 5);
  std::vector<std::size_t> sizes = {largest / 4, largest / 2, largest};
  for (std::size_t& sz : sizes) {
    sz = std::min(sz, cap) / 16 * 16;
  }
  DeviceBuffer x(sizes.back()), y(sizes.back()), z(sizes.back()), sink(64);
  const int grid = stream_grid(ctx.gpu.sms);
  for (std::size_t bytes : sizes) {
    const std::size_t n4 = bytes / 16;
    struct K {
      const char* name;
      double moved;
      std::function<void()> run;
    };
    const std::vector<K> kernels = {
        {"read", 1.0 * bytes,
         [&] { read_kernel<<<grid, 256, 0, s>>>(x.as<float4>(), n4, sink.as<float>()); }},
        {"write", 1.0 * bytes,
         [&] { write_kernel<<<grid, 256, 0, s>>>(y.as<float4>(), n4, 1.0f); }},
        {"copy", 2.0 * bytes,
         [&] { copy_kernel<<<grid, 256, 0, s>>>(x.as<float4>(), y.as<float4>(), n4); }},
        {"triad", 3.0 * bytes,
         [&] {
           triad_kernel<<<grid, 256, 0, s>>>(x.as<float4>(), y.as<float4>(), z.as<float4>(), n4,
                                             2.0f);
         }},
        {"memcpy", 2.0 * bytes,
         [&] { LAGOM_CUDA(cudaMemcpyAsync(y.ptr, x.ptr, bytes, cudaMemcpyDeviceToDevice, s)); }},
    };
    for (const K& k : kernels) {
      for (int w = 0; w < 3; ++w) {
        k.run();
      }
      LAGOM_CUDA(cudaStreamSynchronize(s));
      for (int i = 0; i < o.samples; ++i) {
        const double t = time_us(s, [&] { k.run(); });
        LAGOM_CUDA(cudaGetLastError());
        b.hbm.push_back({k.name, k.moved, t});
      }
    }
  }
}

void bench_launch(const Options& o, cudaStream_t s, calibrate::Bundle& b) {
  note("launch: back-to-back empty kernels and single synchronized launches%s");
  constexpr int kRow = 1000;
  for (int w = 0; w < 100; ++w) {
    empty_kernel<<<1, 32, 0, s>>>();
  }
  LAGOM_CUDA(cudaStreamSynchronize(s));
  for (int i = 0; i < o.samples; ++i) {
    const double t = time_us(s, [&] {
      for (int k = 0; k < kRow; ++k) {
        empty_kernel<<<1, 32, 0, s>>>();
      }
    });
    b.launch.push_back({"back_to_back", t / kRow});
  }
  for (int i = 0; i < o.samples; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    empty_kernel<<<1, 32, 0, s>>>();
    LAGOM_CUDA(cudaStreamSynchronize(s));
    const auto t1 = std::chrono::steady_clock::now();
    b.launch.push_back(
        {"synchronized", std::chrono::duration<double, std::micro>(t1 - t0).count()});
  }
}

// The GEMM shapes of the model zoo's steps (token counts x the projections of transformer layers
// of several widths) and an M staircase that crosses whole waves of output tiles.
std::vector<std::array<std::int64_t, 3>> gemm_shapes(const Options& o, int sms) {
  std::vector<std::array<std::int64_t, 3>> shapes;
  const std::vector<std::int64_t> hidden =
      o.quick ? std::vector<std::int64_t>{4096, 8192}
              : std::vector<std::int64_t>{2560, 4096, 5120, 8192, 12288};
  const std::vector<std::int64_t> tokens =
      o.quick ? std::vector<std::int64_t>{8192} : std::vector<std::int64_t>{4096, 8192, 16384};
  for (std::int64_t h : hidden) {
    for (std::int64_t t : tokens) {
      shapes.push_back({t, 3 * h, h});  // QKV
      shapes.push_back({t, h, h});      // attention output
      shapes.push_back({t, 4 * h, h});  // MLP up
      shapes.push_back({t, h, 4 * h});  // MLP down
    }
  }
  // n = 4 tile columns, so M of 128 x j gives 4j tiles: every sms/4 steps a new wave.
  const int steps = o.quick ? 2 * sms / 4 : 3 * sms / 4;
  for (int j = std::max(1, sms / 16); j <= steps; j += std::max(1, sms / 32)) {
    shapes.push_back({128 * static_cast<std::int64_t>(j), 512, 8192});
  }
  return shapes;
}

void bench_gemm(const Options& o, const calibrate::BundleContext& ctx, cublasLtHandle_t lt,
                cudaStream_t s, calibrate::Bundle& b) {
  const auto shapes = gemm_shapes(o, ctx.gpu.sms);
  note("gemm: cuBLASLt BF16 over %s shapes (the zoo's projections and an M staircase)",
       std::to_string(shapes.size()));
  for (const auto& [m, n, k] : shapes) {
    const Gemm g(lt, m, n, k, std::size_t{32} << 20);
    const GemmOperands ops(m, n, k, copies_beyond_l2(g.operand_bytes(), ctx.gpu.l2_bytes));
    const double tiles = std::ceil(m / 128.0) * std::ceil(n / 128.0);
    for (int w = 0; w < 3; ++w) {
      ops.run(g, w, s);
    }
    LAGOM_CUDA(cudaStreamSynchronize(s));
    for (int i = 0; i < o.samples; ++i) {
      const double t = time_us(s, [&] { ops.run(g, i, s); });
      // The grid cuBLASLt launches is not exposed; its heuristic's waves are: blocks = waves x SMs
      // for one CTA per SM, which is what the 128 x 128 tile count gives where they agree.
      const auto blocks =
          static_cast<std::int64_t>(g.waves() > 0 ? std::llround(g.waves() * ctx.gpu.sms) : tiles);
      b.gemm.push_back({m, n, k, blocks, g.waves(), t});
    }
  }
}

void bench_streams(const Options& o, const calibrate::BundleContext& ctx, cudaStream_t s,
                   calibrate::Bundle& b) {
  const std::vector<double> sizes =
      o.quick ? std::vector<double>{1 << 20, 1 << 24, 1 << 27}
              : std::vector<double>{1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28};
  const double cap = ctx.gpu.memory_bytes / 4;
  for (const char* cls : {"elementwise", "norm", "optimizer"}) {
    if (!wanted(o, cls)) {
      continue;
    }
    note("%s: streaming kernels over 1 M to 256 M values", cls);
    const std::string c = cls;
    const int per_elem = c == "optimizer" ? 28 : 8;
    const double flops_per = c == "optimizer" ? 12 : c == "norm" ? 4 : 8;
    for (double elems_d : sizes) {
      if (elems_d * per_elem > cap) {
        continue;
      }
      const auto elems = static_cast<std::size_t>(elems_d) / kNormWidth * kNormWidth;
      std::vector<std::unique_ptr<DeviceBuffer>> bufs;
      for (int i = 0; i < (c == "optimizer" ? 4 : 2); ++i) {
        bufs.push_back(std::make_unique<DeviceBuffer>(elems * 4));
      }
      DeviceBuffer weight(kNormWidth * 4);
      int blocks = 0;
      int per_sm = 0;
      std::function<void()> run;
      if (c == "elementwise") {
        blocks = static_cast<int>((elems + 2047) / 2048);
        LAGOM_CUDA(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gelu_kernel, kStreamThreads, 0));
        run = [&] {
          gelu_kernel<<<blocks, kStreamThreads, 0, s>>>(bufs[0]->as<float>(), bufs[1]->as<float>(),
                                                        elems);
        };
      } else if (c == "norm") {
        blocks = static_cast<int>(elems / kNormWidth);
        LAGOM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rmsnorm_kernel,
                                                                 kStreamThreads, 0));
        run = [&] {
          rmsnorm_kernel<<<blocks, kStreamThreads, 0, s>>>(bufs[0]->as<float>(), weight.as<float>(),
                                                           bufs[1]->as<float>());
        };
      } else {
        blocks = static_cast<int>((elems + 2047) / 2048);
        LAGOM_CUDA(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, adam_kernel, kStreamThreads, 0));
        run = [&] {
          adam_kernel<<<blocks, kStreamThreads, 0, s>>>(bufs[0]->as<float>(), bufs[1]->as<float>(),
                                                        bufs[2]->as<float>(), bufs[3]->as<float>(),
                                                        elems);
        };
      }
      for (int w = 0; w < 3; ++w) {
        run();
      }
      LAGOM_CUDA(cudaStreamSynchronize(s));
      const double e = static_cast<double>(elems);
      for (int i = 0; i < o.samples; ++i) {
        const double t = time_us(s, run);
        LAGOM_CUDA(cudaGetLastError());
        b.stream.push_back({c, e, e * per_elem, e * flops_per, blocks, per_sm, t});
      }
    }
  }
}

// A GEMM alone, then beside the occupier: `ctas` persistent CTAs resident first (on a higher
// priority stream), moving `chunk` bytes per step at `rate` GB/s in all (0: unpaced).
void bench_contention(const Options& o, const calibrate::BundleContext& ctx, cublasLtHandle_t lt,
                      calibrate::Bundle& b) {
  int lo = 0;
  int hi = 0;
  LAGOM_CUDA(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t gemm_stream = nullptr;
  cudaStream_t occ_stream = nullptr;
  LAGOM_CUDA(cudaStreamCreateWithPriority(&gemm_stream, cudaStreamNonBlocking, lo));
  LAGOM_CUDA(cudaStreamCreateWithPriority(&occ_stream, cudaStreamNonBlocking, hi));
  LAGOM_CUDA(cudaFuncSetAttribute(occupier_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  kOccupierSmem));
  const std::vector<int> ctas_list =
      o.quick ? std::vector<int>{2, 8, 32} : std::vector<int>{1, 2, 4, 8, 16, 32};
  const std::vector<std::int64_t> chunks = {256 << 10, 1 << 20, 4 << 20};
  const std::vector<double> rates = {0.0, 200.0};
  // One full-GPU GEMM (many waves) and one of exactly one wave of 128 x 128 tiles (the tail case).
  const std::vector<std::array<std::int64_t, 3>> shapes = {
      {8192, 8192, 8192}, {128 * static_cast<std::int64_t>(ctx.gpu.sms / 4), 512, 16384}};
  note("contention: a GEMM beside an occupier imitating 1-32 NCCL channels (%s configurations)",
       std::to_string(ctas_list.size() * chunks.size() * rates.size() * shapes.size()));
  const std::size_t most = 4 * static_cast<std::size_t>(ctas_list.back()) * chunks.back();
  DeviceBuffer src(most), dst(most);
  int* stop = nullptr;
  unsigned int* resident = nullptr;
  LAGOM_CUDA(cudaHostAlloc(&stop, sizeof(int), cudaHostAllocMapped));
  LAGOM_CUDA(cudaHostAlloc(&resident, sizeof(unsigned int), cudaHostAllocMapped));
  int* stop_dev = nullptr;
  unsigned int* resident_dev = nullptr;
  LAGOM_CUDA(cudaHostGetDevicePointer(&stop_dev, stop, 0));
  LAGOM_CUDA(cudaHostGetDevicePointer(&resident_dev, resident, 0));
  DeviceBuffer counters(2 * sizeof(unsigned long long));
  for (const auto& [m, n, k] : shapes) {
    const Gemm g(lt, m, n, k, std::size_t{32} << 20);
    const GemmOperands ops(m, n, k, copies_beyond_l2(g.operand_bytes(), ctx.gpu.l2_bytes));
    for (int w = 0; w < 3; ++w) {
      ops.run(g, w, gemm_stream);
    }
    LAGOM_CUDA(cudaStreamSynchronize(gemm_stream));
    std::vector<double> alone;
    for (int i = 0; i < o.samples; ++i) {
      alone.push_back(time_us(gemm_stream, [&] { ops.run(g, i, gemm_stream); }));
    }
    const double alone_us = calibrate::median(alone);
    for (int ctas : ctas_list) {
      for (std::int64_t chunk : chunks) {
        for (double rate : rates) {
          const std::uint64_t ns_per_chunk =
              rate > 0 ? static_cast<std::uint64_t>(2.0 * chunk * ctas / rate) : 0;  // GB/s = B/ns
          for (int i = 0; i < o.samples; ++i) {
            *stop = 0;
            *resident = 0;
            LAGOM_CUDA(cudaMemsetAsync(counters.ptr, 0, counters.bytes, occ_stream));
            occupier_kernel<<<ctas, kOccupierThreads, kOccupierSmem, occ_stream>>>(
                src.as<char>(), dst.as<char>(), static_cast<std::size_t>(chunk), ns_per_chunk,
                stop_dev, resident_dev, counters.as<unsigned long long>(),
                counters.as<unsigned long long>() + 1);
            LAGOM_CUDA(cudaGetLastError());
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (*reinterpret_cast<volatile unsigned int*>(resident) <
                   static_cast<unsigned>(ctas)) {
              if (std::chrono::steady_clock::now() > deadline) {
                throw GpuError("the occupier's CTAs did not all become resident in 10 s");
              }
            }
            const double t = time_us(gemm_stream, [&] { ops.run(g, i, gemm_stream); });
            *reinterpret_cast<volatile int*>(stop) = 1;
            LAGOM_CUDA(cudaStreamSynchronize(occ_stream));
            unsigned long long c[2] = {0, 0};
            LAGOM_CUDA(cudaMemcpy(c, counters.ptr, sizeof c, cudaMemcpyDeviceToHost));
            const double gbps =
                c[1] > 0 ? static_cast<double>(c[0]) / static_cast<double>(c[1]) : 0;
            b.contention.push_back({ctas, chunk, rate, m, n, k, alone_us, t, gbps});
          }
        }
      }
    }
  }
  cudaFreeHost(stop);
  cudaFreeHost(resident);
  cudaStreamDestroy(gemm_stream);
  cudaStreamDestroy(occ_stream);
}

// --- NCCL (2 or more ranks) ---------------------------------------------------------------------

struct CollSpec {
  const char* name;  // nccl-tests' name
  int kind;          // 0 all_reduce, 1 all_gather, 2 reduce_scatter
};

// Runs one collective of `bytes` (nccl-tests' size: the whole buffer) on `comm`.
void run_coll(const CollSpec& c, ncclComm_t comm, int nranks, void* send, void* recv,
              std::size_t bytes, cudaStream_t s) {
  const std::size_t count = bytes / 2;  // bfloat16
  if (c.kind == 0) {
    LAGOM_NCCL(ncclAllReduce(send, recv, count, ncclBfloat16, ncclSum, comm, s));
  } else if (c.kind == 1) {
    LAGOM_NCCL(ncclAllGather(send, recv, count / nranks, ncclBfloat16, comm, s));
  } else {
    LAGOM_NCCL(ncclReduceScatter(send, recv, count / nranks, ncclBfloat16, ncclSum, comm, s));
  }
}

double busbw_factor(int kind, int n) {
  return kind == 0 ? 2.0 * (n - 1) / n : static_cast<double>(n - 1) / n;
}

// One communicator per (algorithm, protocol, channels): NCCL reads NCCL_ALGO and NCCL_PROTO when
// a communicator is created, channels come from ncclConfig_t. Each writes an nccl-tests log.
void bench_nccl(const Options& o, const RankInfo& r, const calibrate::BundleContext& ctx,
                calibrate::Bundle& b) {
  const ncclUniqueId id = shared_unique_id(r, o.id_file);
  // Every later combination needs its own id: rank 0 makes them from this communicator's
  // broadcast, so one file is enough.
  ncclComm_t base = nullptr;
  LAGOM_NCCL(ncclCommInitRank(&base, r.nranks, id, r.rank));
  cudaStream_t s = nullptr;
  LAGOM_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const std::size_t max_bytes = static_cast<std::size_t>(o.nccl_max_bytes);
  DeviceBuffer send(max_bytes), recv(max_bytes), id_buf(sizeof(ncclUniqueId));
  const std::vector<CollSpec> colls = {{"all_reduce", 0}, {"all_gather", 1}, {"reduce_scatter", 2}};
  const std::vector<std::string> algos = {"Ring", "Tree", "NVLS"};
  const std::vector<std::string> protos = {"LL", "LL128", "Simple"};
  const std::vector<int> channels =
      o.quick ? std::vector<int>{2, 8, 32} : std::vector<int>{1, 2, 4, 8, 16, 32};
  const int iters = 20;
  for (const CollSpec& c : colls) {
    for (const std::string& algo : algos) {
      if (c.kind != 0 && algo == "Tree") {
        continue;  // NCCL runs Tree for AllReduce only
      }
      for (const std::string& proto : protos) {
        for (int nc : channels) {
          ncclUniqueId next{};
          if (r.rank == 0) {
            LAGOM_NCCL(ncclGetUniqueId(&next));
            LAGOM_CUDA(cudaMemcpy(id_buf.ptr, &next, sizeof next, cudaMemcpyHostToDevice));
          }
          LAGOM_NCCL(ncclBroadcast(id_buf.ptr, id_buf.ptr, sizeof next, ncclChar, 0, base, s));
          LAGOM_CUDA(cudaStreamSynchronize(s));
          LAGOM_CUDA(cudaMemcpy(&next, id_buf.ptr, sizeof next, cudaMemcpyDeviceToHost));
          setenv("NCCL_ALGO", algo.c_str(), 1);
          setenv("NCCL_PROTO", proto.c_str(), 1);
          ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
          cfg.minCTAs = nc;
          cfg.maxCTAs = nc;
          ncclComm_t comm = nullptr;
          std::string failure;
          std::vector<std::pair<std::size_t, double>> rows;
          try {
            LAGOM_NCCL(ncclCommInitRankConfig(&comm, r.nranks, next, r.rank, &cfg));
            for (std::size_t bytes = std::size_t{1} << 20; bytes <= max_bytes; bytes *= 4) {
              for (int w = 0; w < 5; ++w) {
                run_coll(c, comm, r.nranks, send.ptr, recv.ptr, bytes, s);
              }
              LAGOM_CUDA(cudaStreamSynchronize(s));
              const double t = time_us(s, [&] {
                for (int i = 0; i < iters; ++i) {
                  run_coll(c, comm, r.nranks, send.ptr, recv.ptr, bytes, s);
                }
              });
              rows.emplace_back(bytes, t / iters);
            }
          } catch (const GpuError& e) {
            failure = e.what();
          }
          if (comm != nullptr) {
            failure.empty() ? ncclCommDestroy(comm) : ncclCommAbort(comm);
          }
          unsetenv("NCCL_ALGO");
          unsetenv("NCCL_PROTO");
          if (r.rank != 0) {
            continue;
          }
          const std::string name = std::string("nccl-") + c.name + "-" + algo + "-" + proto +
                                   "-nc" + std::to_string(nc) + ".txt";
          if (!failure.empty()) {
            note("nccl: %s", name + " not measured: " + failure);
            continue;
          }
          std::string text;
          text += "source: lagom-calibrate on " + ctx.host + ", " + ctx.date + "\n";
          text += "gpu: " + ctx.gpu.name + "\n";
          text += "gpus_per_node: " + std::to_string(r.nranks) + "\n";
          text += "nodes: 1\n";
          text += "nccl_version: " + ctx.nccl + "\n";
          text += "env: NCCL_ALGO=" + algo + " NCCL_PROTO=" + proto +
                  " NCCL_MIN_CTAS=" + std::to_string(nc) + " NCCL_MAX_CTAS=" + std::to_string(nc) +
                  "\n";
          text += "datatype: bfloat16\n";
          text += "iters: " + std::to_string(iters) + " (warmup 5)\n";
          text += "collective: " + std::string(c.name) + "\n";
          text += "---\n";
          for (const auto& [bytes, t] : rows) {
            const double algbw = static_cast<double>(bytes) / (t * 1e3);
            char line[256];
            std::snprintf(line, sizeof line,
                          "%12zu %12zu  bfloat16     sum      -1 %8.2f %7.2f %7.2f       0 %8.2f "
                          "%7.2f %7.2f       0\n",
                          bytes, bytes / 2, t, algbw, algbw * busbw_factor(c.kind, r.nranks), t,
                          algbw, algbw * busbw_factor(c.kind, r.nranks));
            text += line;
          }
          const std::string path = o.out + "/raw/" + name;
          std::ofstream(path, std::ios::binary) << text;
          b.nccl_logs.push_back(path);
        }
      }
    }
  }
  ncclCommDestroy(base);
  cudaStreamDestroy(s);
}

int run(const Options& o) {
  const RankInfo r = rank_info(o.rank, o.nranks);
  const bool multi_wanted = std::any_of(kMultiGpu.begin(), kMultiGpu.end(),
                                        [&](const std::string& n) { return o.only.count(n) > 0; });
  if (multi_wanted && r.nranks < 2) {
    std::fprintf(stderr,
                 "lagom-calibrate: the nccl benchmarks need 2 or more GPUs, one process each "
                 "(--rank/--nranks, srun or mpirun); this run has 1\n");
    return 2;
  }
  if (r.nranks > 1 && o.id_file.empty()) {
    std::fprintf(stderr, "lagom-calibrate: %d ranks need --id-file PATH on a shared file system\n",
                 r.nranks);
    return 2;
  }
  if (device_count() == 0) {
    std::fprintf(stderr, "lagom-calibrate: no CUDA device (nothing to measure)\n");
    return kNoDevice;
  }
  LAGOM_CUDA(cudaSetDevice(o.device >= 0 ? o.device : r.local_rank));
  int dev = 0;
  LAGOM_CUDA(cudaGetDevice(&dev));
  calibrate::Bundle b;
  b.path = o.out;
  b.context = device_context(dev, o.command_line);
  b.context.ranks = r.nranks;
  std::filesystem::create_directories(o.out + "/raw");
  if (r.nranks > 1 && (o.only.empty() || o.only.count("nccl"))) {
    bench_nccl(o, r, b.context, b);
  }
  if (r.rank != 0) {
    return 0;  // rank 0 measures the GPU and writes the bundle
  }
  cudaStream_t s = nullptr;
  LAGOM_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasLtHandle_t lt = nullptr;
  LAGOM_CUBLAS(cublasLtCreate(&lt));
  if (wanted(o, "hbm")) {
    bench_hbm(o, b.context, s, b);
  }
  if (wanted(o, "launch")) {
    bench_launch(o, s, b);
  }
  if (wanted(o, "gemm")) {
    bench_gemm(o, b.context, lt, s, b);
  }
  bench_streams(o, b.context, s, b);
  if (wanted(o, "contention")) {
    bench_contention(o, b.context, lt, b);
  }
  cublasLtDestroy(lt);
  cudaStreamDestroy(s);
  calibrate::write_bundle(b, o.out);
  std::fprintf(stderr,
               "lagom-calibrate: wrote %s (%zu hbm, %zu launch, %zu gemm, %zu stream, %zu "
               "contention samples, %zu NCCL logs)\n",
               o.out.c_str(), b.hbm.size(), b.launch.size(), b.gemm.size(), b.stream.size(),
               b.contention.size(), b.nccl_logs.size());
  return 0;
}

}  // namespace
}  // namespace lagom::gpu

int main(int argc, char** argv) {
  const lagom::gpu::Options o = lagom::gpu::parse(argc, argv);
  try {
    return lagom::gpu::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lagom-calibrate: error: %s\n", e.what());
    return 1;
  }
}
