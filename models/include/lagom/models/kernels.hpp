// The compute kernels of a training step, as the step generators emit them and `lagom overlap`
// runs them: each a compute shape (FLOPs, thread blocks, blocks per SM, class) and the HBM bytes
// it moves, for the compute model (sim/compute_model.hpp) to time.
//
//  * GEMM C[m,n] = A[m,k] B[k,n] as cuBLAS runs it: 128 x 128 output tiles, one CTA per SM
//    (sim/compute_model.hpp times them); 2 m n k model FLOPs, and the work of whole tiles
//    (m and n padded to multiples of 128: traces::gemm_shape);
//    bytes = bpe (m k + k n + m n). Its backward: dgrad C[m,k] = dC[m,n] B^T (depth n) and
//    wgrad C[k,n] = A^T dC (depth m), each with its own tiles.
//  * Streaming kernels (elementwise, norm, optimizer) over `elems` values, 2,048 per block;
//    bytes = bpe elems (reads + writes).
//  * FlashAttention forward over `seqs` sequences of `seq` tokens, `heads` heads of width `hd`:
//    4 seq^2 hd FLOPs per head and sequence (non-causal, the MFU convention), one block per 128
//    queries per head; bytes: q, k, v and o. `scale` multiplies both (2 for the backward).
// Block counts are clamped to 1e9 so that absurd shapes stay representable.
#pragma once

#include <utility>

#include "lagom/traces/workload.hpp"

namespace lagom::models {

struct Kernel {
  traces::ComputeShape shape;
  double bytes = 0;  // HBM traffic
  // The FLOPs the MFU convention counts (2 m n k for a GEMM) where they differ from the work
  // the kernel does (shape.flops: a GEMM's padded to whole tiles); negative: shape.flops.
  double model_flops = -1;
  double m = 0, n = 0, k = 0;  // a GEMM's C[m, n] = A[m, k] B[k, n]; 0 for other kernels
  const char* name = "";       // what it computes, for op labels ("attn.qkv", "mlp.act")
  const char* pass = nullptr;  // set on backward kernels ("dgrad", "wgrad", "bwd")
  // An FP8 linear's backward first quantizes its output gradient (TE's cast-transpose: reads it
  // in 16 bits, writes it in FP8 twice, as is and transposed): that kernel's HBM bytes; 0: none.
  double grad_cast_bytes = 0;
  bool forward_only = false;  // no backward kernel of its own (a quantization: identity backward)
  bool recomputed = false;    // a forward rerun for backward: not model FLOPs
};

// `k` with its label name (a string literal).
inline Kernel named(Kernel k, const char* name) {
  k.name = name;
  return k;
}

Kernel gemm(double m, double n, double k, int bytes_per_element);
// The backward of a GEMM: the input gradient (dgrad) and the weight gradient (wgrad).
std::pair<Kernel, Kernel> gemm_backward(double m, double n, double k, int bytes_per_element);
Kernel stream(traces::ComputeClass cls, double elems, double flops_per_elem, int reads, int writes,
              int bytes_per_element);
Kernel attention(double seqs, double seq, double heads, double hd, int bytes_per_element,
                 double scale);

}  // namespace lagom::models
