// Compute kernels of a training step (see kernels.hpp).
#include "lagom/models/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace lagom::models {
namespace {

std::int32_t blocks(double count) {
  return static_cast<std::int32_t>(std::min(1e9, count));
}

}  // namespace

Kernel gemm(double m, double n, double k, int bytes_per_element) {
  Kernel g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.model_flops = 2.0 * m * n * k;
  g.shape = traces::gemm_shape(m, n, k);
  g.bytes = bytes_per_element * (m * k + k * n + m * n);
  return g;
}

std::pair<Kernel, Kernel> gemm_backward(double m, double n, double k, int bytes_per_element) {
  return {gemm(m, k, n, bytes_per_element), gemm(k, n, m, bytes_per_element)};
}

Kernel stream(traces::ComputeClass cls, double elems, double flops_per_elem, int reads, int writes,
              int bytes_per_element) {
  Kernel e;
  e.shape.flops = flops_per_elem * elems;
  e.shape.blocks = blocks(std::ceil(elems / 2048.0));
  e.shape.cls = cls;
  e.bytes = static_cast<double>(bytes_per_element) * elems * (reads + writes);
  return e;
}

Kernel attention(double seqs, double seq, double heads, double hd, int bytes_per_element,
                 double scale) {
  Kernel a;
  a.shape.flops = scale * 4.0 * seqs * seq * seq * heads * hd;
  a.shape.blocks = blocks(std::ceil(seq / 128.0) * seqs * heads);
  a.shape.blocks_per_sm = 1;
  a.shape.cls = traces::ComputeClass::kAttention;
  a.bytes = scale * 4.0 * bytes_per_element * seqs * seq * heads * hd;
  return a;
}

}  // namespace lagom::models
