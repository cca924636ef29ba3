// Host-callable launches of the kernels in kernels.cuh, for code compiled by the host compiler
// (lagom-validate's replay): no CUDA syntax here.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace lagom::gpu {

// A streaming kernel over `n` floats (one read, one write each), 2,048 values a block.
void launch_stream(const float* x, float* y, std::size_t n, cudaStream_t s);
// Busy for `ns` nanoseconds on `blocks` blocks of 128 threads.
void launch_spin(std::uint64_t ns, int blocks, cudaStream_t s);
// `ctas` CTAs shaped like NCCL channels copying 4 x `chunk` bytes per CTA from src to dst for
// `ns` nanoseconds (a collective's stand-in on one GPU).
void launch_timed_occupier(const char* src, char* dst, std::size_t chunk, int ctas,
                           std::uint64_t ns, cudaStream_t s);

}  // namespace lagom::gpu
