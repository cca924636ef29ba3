// The kernels lagom-calibrate and lagom-validate run: HBM streams, the compute classes' streaming
// kernels (elementwise, norm, optimizer), an empty kernel, a spin kernel of a given duration, and
// the occupier that imitates NCCL channels.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace lagom::gpu {

inline constexpr int kStreamThreads = 256;   // threads per block of the streaming kernels
inline constexpr int kElemsPerThread = 8;    // so a block covers 2,048 values, as the
                                             // generators' kernels assume
inline constexpr int kNormWidth = 4096;      // a norm kernel's row (one block per row)
inline constexpr int kOccupierThreads = 544; // NCCL's 512 threads plus its sync warp
inline constexpr int kOccupierSmem = 82240;  // NCCL 2.28's dynamic shared memory per CTA

__device__ inline std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void empty_kernel() {}

// Spins until `ns` nanoseconds have passed since its first thread started (a measured duration
// stand-in), on `blocks` blocks.
__global__ void spin_kernel(std::uint64_t ns) {
  __shared__ std::uint64_t start;
  if (threadIdx.x == 0) {
    start = global_ns();
  }
  __syncthreads();
  while (global_ns() - start < ns) {
  }
}

__global__ void read_kernel(const float4* x, std::size_t n, float* sink) {
  float acc = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 v = x[i];
    acc += v.x + v.y + v.z + v.w;
  }
  if (acc == 1.2345f) {  // never, but the compiler cannot know: the reads stay
    sink[0] = acc;
  }
}

__global__ void write_kernel(float4* y, std::size_t n, float v) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    y[i] = make_float4(v, v, v, v);
  }
}

__global__ void copy_kernel(const float4* x, float4* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    y[i] = x[i];
  }
}

__global__ void triad_kernel(const float4* b, const float4* c, float4* a, std::size_t n, float s) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 u = b[i];
    const float4 w = c[i];
    a[i] = make_float4(u.x + s * w.x, u.y + s * w.y, u.z + s * w.z, u.w + s * w.w);
  }
}

// An activation (tanh-approximated GELU): one read and one write per value, ~8 FLOPs.
__global__ void gelu_kernel(const float* x, float* y, std::size_t n) {
  const std::size_t base = blockIdx.x * static_cast<std::size_t>(kStreamThreads * kElemsPerThread);
  for (int j = 0; j < kElemsPerThread; ++j) {
    const std::size_t i = base + static_cast<std::size_t>(j) * kStreamThreads + threadIdx.x;
    if (i < n) {
      const float v = x[i];
      y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
  }
}

// RMSNorm over rows of kNormWidth values: one block per row reads it, reduces the sum of
// squares and writes the scaled row (~4 FLOPs a value; the weight stays in L2).
__global__ void rmsnorm_kernel(const float* x, const float* w, float* y) {
  __shared__ float partial[kStreamThreads];
  const float* row = x + static_cast<std::size_t>(blockIdx.x) * kNormWidth;
  float* out = y + static_cast<std::size_t>(blockIdx.x) * kNormWidth;
  float s = 0;
  for (int i = threadIdx.x; i < kNormWidth; i += kStreamThreads) {
    s += row[i] * row[i];
  }
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int k = kStreamThreads / 2; k > 0; k /= 2) {
    if (threadIdx.x < k) {
      partial[threadIdx.x] += partial[threadIdx.x + k];
    }
    __syncthreads();
  }
  const float scale = rsqrtf(partial[0] / kNormWidth + 1e-6f);
  for (int i = threadIdx.x; i < kNormWidth; i += kStreamThreads) {
    out[i] = row[i] * scale * w[i];
  }
}

// Adam in FP32: reads the parameter, gradient and both moments, writes the parameter and the
// moments (28 bytes and ~12 FLOPs a value).
__global__ void adam_kernel(float* p, const float* g, float* m, float* v, std::size_t n) {
  const std::size_t base = blockIdx.x * static_cast<std::size_t>(kStreamThreads * kElemsPerThread);
  for (int j = 0; j < kElemsPerThread; ++j) {
    const std::size_t i = base + static_cast<std::size_t>(j) * kStreamThreads + threadIdx.x;
    if (i < n) {
      const float gi = g[i];
      const float mi = 0.9f * m[i] + 0.1f * gi;
      const float vi = 0.999f * v[i] + 0.001f * gi * gi;
      m[i] = mi;
      v[i] = vi;
      p[i] -= 1e-4f * mi / (sqrtf(vi) + 1e-8f);
    }
  }
}

// The occupier: one persistent CTA per imitated NCCL channel (NCCL's threads and shared memory),
// each cycling through 4 chunk slots of `chunk` bytes, copying src to dst through HBM, paced to
// `ns_per_chunk` (0: as fast as it can), until *stop. It reports itself resident first, and at
// the end the bytes it moved (read plus write) and its time.
__global__ void occupier_kernel(const char* src, char* dst, std::size_t chunk,
                                std::uint64_t ns_per_chunk, volatile int* stop,
                                unsigned int* resident, unsigned long long* moved,
                                unsigned long long* elapsed_ns) {
  extern __shared__ float4 scratch[];
  __shared__ int done;
  __shared__ std::uint64_t start;
  const std::size_t per_cta = 4 * chunk;
  const float4* in = reinterpret_cast<const float4*>(src + blockIdx.x * per_cta);
  float4* out = reinterpret_cast<float4*>(dst + blockIdx.x * per_cta);
  const std::size_t chunk4 = chunk / sizeof(float4);
  if (threadIdx.x == 0) {
    atomicAdd(resident, 1u);
    start = global_ns();
    done = 0;
  }
  scratch[threadIdx.x] = make_float4(0, 0, 0, 0);  // the shared memory is really taken
  __syncthreads();
  unsigned long long bytes = 0;
  for (std::uint64_t step = 0; !done; ++step) {
    const std::size_t slot = (step % 4) * chunk4;
    for (std::size_t i = threadIdx.x; i < chunk4; i += blockDim.x) {
      out[slot + i] = in[slot + i];
    }
    bytes += 2 * chunk;
    __syncthreads();
    if (threadIdx.x == 0) {
      if (ns_per_chunk > 0) {
        const std::uint64_t due = start + (step + 1) * ns_per_chunk;
        while (global_ns() < due && *stop == 0) {
        }
      }
      done = *stop;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(moved, bytes);
    atomicMax(elapsed_ns, static_cast<unsigned long long>(global_ns() - start));
  }
}

}  // namespace lagom::gpu
