// Host-callable launches of kernels.cuh's kernels (see launch.cuh).
#include <algorithm>

#include "kernels.cuh"
#include "launch.cuh"

namespace lagom::gpu {
namespace {

// The occupier for a fixed time: copies its chunks until `ns` have passed.
__global__ void timed_occupier_kernel(const char* src, char* dst, std::size_t chunk,
                                      std::uint64_t ns) {
  extern __shared__ float4 scratch[];
  __shared__ std::uint64_t start;
  __shared__ int done;
  const std::size_t chunk4 = chunk / sizeof(float4);
  const float4* in = reinterpret_cast<const float4*>(src + blockIdx.x * 4 * chunk);
  float4* out = reinterpret_cast<float4*>(dst + blockIdx.x * 4 * chunk);
  if (threadIdx.x == 0) {
    start = global_ns();
    done = 0;
  }
  scratch[threadIdx.x] = make_float4(0, 0, 0, 0);
  __syncthreads();
  for (std::uint64_t step = 0; !done; ++step) {
    const std::size_t slot = (step % 4) * chunk4;
    for (std::size_t i = threadIdx.x; i < chunk4; i += blockDim.x) {
      out[slot + i] = in[slot + i];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      done = global_ns() - start >= ns;
    }
    __syncthreads();
  }
}

}  // namespace

void launch_stream(const float* x, float* y, std::size_t n, cudaStream_t s) {
  const auto grid = std::max(1u, static_cast<unsigned>((n + 2047) / 2048));
  gelu_kernel<<<grid, kStreamThreads, 0, s>>>(x, y, n);
}

void launch_spin(std::uint64_t ns, int blocks, cudaStream_t s) {
  const int grid = std::max(1, blocks);
  spin_kernel<<<grid, 128, 0, s>>>(ns);
}

void launch_timed_occupier(const char* src, char* dst, std::size_t chunk, int ctas,
                           std::uint64_t ns, cudaStream_t s) {
  static bool configured = false;
  if (!configured) {
    cudaFuncSetAttribute(timed_occupier_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         kOccupierSmem);
    configured = true;
  }
  timed_occupier_kernel<<<ctas, kOccupierThreads, kOccupierSmem, s>>>(src, dst, chunk, ns);
}

}  // namespace lagom::gpu
