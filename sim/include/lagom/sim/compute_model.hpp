// The compute model: how long a kernel takes from its work, its launch geometry and the SMs and
// HBM bandwidth it gets (all of them when alone; fewer when NCCL channels hold SMs and
// collectives take bandwidth).
//
// A kernel of mu thread blocks, TB of which fit one SM, on lambda available SMs runs in waves
// (Lagom paper eq. 5, reference/lagom-paper.md §3.3):
//
//   g = ceil(mu / (lambda * TB))
//
// and each wave costs its arithmetic and its HBM traffic, which mostly overlap:
//
//   c = TB * (F / mu) / (peak / SMs * eff_flops)           per-SM arithmetic of the wave
//   m = blocks_in_wave * (D / mu) * inflation / (B * eff_hbm)   the wave's HBM traffic
//   f = max(c, m) + overlap_loss * min(c, m)
//
// overlap_loss = 0 is the roofline; 1 is the Lagom paper's eq. 6 (f = theta + memory term). The
// profile's prior sits between. `inflation` (>= 1) is extra traffic when the kernel's L2 working
// set is evicted (the contention model passes it; 1 alone).
//
//   time = launch + sum over waves of f       (the last wave may be partial)
//
// Beside NCCL's kernels a kernel gets fewer SMs: `full` SMs of its own and `shared` SMs that also
// run an NCCL CTA (one per channel, resident for the collective's life). On a shared SM only the
// blocks that fit next to the CTA run (the occupancy calculator's limits; registers are not
// modelled): by threads, (max_threads_per_sm - nt) / block threads, a block taken to have
// min(1024, max_threads_per_sm / TB) threads; by shared memory, (smem_per_sm - NCCL's CTA) / the
// class's smem_per_block. GEMM and attention tiles need more
// shared memory than an NCCL CTA leaves on A40, A100 and H100, so each channel costs them a whole
// SM (the Lagom paper's lambda - NC); streaming kernels keep part of it. A wave then holds
// full * TB + shared * TB_shared blocks.
//
// GEMMs (class gemm with a block count) run as 128 x 128 output tiles, one block each, as
// traces::gemm_shape describes them (F padded to whole tiles, so a partial tile costs a whole
// one); a gemm op's `blocks` is read as that tile count, whoever wrote it. A tile's reduction depth
// is K = F / (blocks x 2 x 128^2); its prologue and epilogue cost `compute.gemm_k_overhead` more
// elements of K (F grows by blocks x 2 x 128^2 x that), so a shallow GEMM (small K) runs further
// from peak than a deep one. With fewer tiles than half the SMs and K at least twice
// `compute.gemm_split_k_depth`, the reduction may split into s parts (split-K: s x tiles blocks,
// each of depth K / s), whose fp32 partial tiles add 2 x 4 x 128^2 bytes of HBM traffic per block:
// s is whichever of 1, the powers of two and the largest, min(floor(SMs / tiles), floor(K /
// depth)), gives the least roofline time on the whole GPU. Both coefficients are the profile's
// (priors until the calibrator's GEMM sweep fits them).
//
// F: the kernel's FLOPs; D: its HBM bytes; peak: for GEMM and attention the GPU's tensor peak in
// the kernel's precision (BF16, FP8, or the FP32 rate for an fp32 kernel), FP32 otherwise; B: the
// HBM bandwidth the kernel gets; eff_*: the class's efficiencies in the profile. Without a block
// count the kernel is one full wave (pure roofline). The efficiencies and default occupancies are
// priors until calibrated (docs/models.md).
#pragma once

#include "lagom/hardware/profile.hpp"
#include "lagom/traces/workload.hpp"

namespace lagom::sim {

struct KernelEstimate {
  double time_us = 0;
  int waves = 0;
  double compute_us = 0;  // sum over waves of the arithmetic part
  double memory_us = 0;   // sum over waves of the memory part
  double hbm_GBps = 0;    // the HBM bandwidth it draws on average (bytes / time)
};

// The SMs a kernel runs on (see above).
struct SmGrant {
  int full = 0;               // SMs of its own
  int shared = 0;             // SMs that also hold an NCCL CTA
  int blocks_per_shared = 0;  // its blocks that fit on one of those
};

class ComputeModel {
 public:
  explicit ComputeModel(const hardware::HardwareProfile& profile);

  // `bytes` is the kernel's HBM traffic; `sms` and `hbm_GBps` what it gets (>= 1 SM, > 0).
  KernelEstimate estimate(const traces::ComputeShape& shape, double bytes, int sms, double hbm_GBps,
                          double inflation = 1.0) const;
  // On the SMs of `grant` (at least one block must fit).
  KernelEstimate estimate(const traces::ComputeShape& shape, double bytes, const SmGrant& grant,
                          double hbm_GBps, double inflation = 1.0) const;
  // Blocks of `shape` that fit on an SM beside one NCCL CTA of `comm_threads` threads.
  int blocks_beside_comm(const traces::ComputeShape& shape, int comm_threads) const;
  // With the whole GPU.
  KernelEstimate alone(const traces::ComputeShape& shape, double bytes) const;

  int sms() const { return sms_; }
  double hbm_GBps() const { return hbm_GBps_; }
  // The blocks `shape` (of `bytes` HBM traffic) launches: its own count, times the split for a
  // split-K GEMM; 0 when the op gives none.
  double blocks_of(const traces::ComputeShape& shape, double bytes) const;
  // The occupancy the model assumes for `shape` (the op's, or the class default).
  int blocks_per_sm(const traces::ComputeShape& shape) const;
  // The peak `shape` runs against, in TFLOP/s (see above). lagom::Error for an fp8 tensor kernel
  // on a GPU without FP8 tensor cores.
  double peak_TFLOPS_of(const traces::ComputeShape& shape) const;

 private:
  // A GEMM's blocks and the work and partial-sum traffic they do (see above).
  struct GemmTiles {
    double split = 1;
    double blocks = 0;
    double flops = 0;
    double partial_bytes = 0;
  };
  GemmTiles gemm_tiles(const traces::ComputeShape& shape, double bytes) const;
  // One SM's arithmetic rate for `shape` alone: its peak / SMs x its class's efficiency.
  double per_sm_flops_per_us_of(const traces::ComputeShape& shape) const;

  const hardware::HardwareProfile& profile_;
  int sms_;
  double hbm_GBps_;
};

}  // namespace lagom::sim
