// Waves-and-roofline compute model (see compute_model.hpp).
#include "lagom/sim/compute_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "lagom/common/error.hpp"

namespace lagom::sim {

static_assert(hardware::kComputeClassCount == traces::kComputeClassCount,
              "the profile's compute classes follow traces::ComputeClass");

ComputeModel::ComputeModel(const hardware::HardwareProfile& profile)
    : profile_(profile),
      sms_(static_cast<int>(profile.gpu.sms.value)),
      hbm_GBps_(profile.gpu.hbm_GBps.value) {}

int ComputeModel::blocks_per_sm(const traces::ComputeShape& shape) const {
  const int tb =
      shape.blocks_per_sm > 0
          ? shape.blocks_per_sm
          : static_cast<int>(
                profile_.compute.classes[static_cast<int>(shape.cls)].blocks_per_sm.value);
  // No more than the SM can hold, whatever the op or the class says.
  return std::max(1, std::min(tb, static_cast<int>(profile_.gpu.max_blocks_per_sm.value)));
}

int ComputeModel::blocks_beside_comm(const traces::ComputeShape& shape, int comm_threads) const {
  const int tb = blocks_per_sm(shape);
  // The occupancy calculator's two limits for what is left of the SM. A class's blocks are taken
  // to fill the SM's threads at its occupancy (at most 1024 threads a block, CUDA's limit).
  const double sm_threads = profile_.gpu.max_threads_per_sm.value;
  const double block_threads = std::min(1024.0, sm_threads / tb);
  int fit = static_cast<int>(std::floor(std::max(0.0, sm_threads - comm_threads) / block_threads));
  const double smem =
      profile_.compute.classes[static_cast<int>(shape.cls)].smem_per_block_KiB.value;
  if (smem > 0) {
    const double left =
        profile_.gpu.smem_per_sm_KiB.value - profile_.contention.comm_cta_smem_KiB.value;
    fit = std::min(fit, static_cast<int>(std::floor(std::max(0.0, left) / smem)));
  }
  return std::clamp(fit, 0, tb);
}

KernelEstimate ComputeModel::estimate(const traces::ComputeShape& shape, double bytes, int sms,
                                      double hbm_GBps, double inflation) const {
  return estimate(shape, bytes, SmGrant{sms, 0, 0}, hbm_GBps, inflation);
}

KernelEstimate ComputeModel::estimate(const traces::ComputeShape& shape, double bytes,
                                      const SmGrant& grant, double hbm_GBps,
                                      double inflation) const {
  const int tb = blocks_per_sm(shape);
  const int shared_blocks =
      grant.blocks_per_shared > 0 ? grant.shared * grant.blocks_per_shared : 0;
  if (grant.full < 0 || grant.shared < 0 || grant.full * tb + shared_blocks < 1 ||
      !(hbm_GBps > 0)) {
    throw Error(
        fmt::format("a kernel needs at least one SM and some HBM bandwidth (got {} SMs of its own, "
                    "{} shared, {} GB/s)",
                    grant.full, grant.shared, hbm_GBps));
  }
  // SMs that hold some of its blocks.
  const int sms = grant.full + (grant.blocks_per_shared > 0 ? grant.shared : 0);
  const hardware::ComputeClassParams& k = profile_.compute.classes[static_cast<int>(shape.cls)];
  const double per_sm_flops_per_us = per_sm_flops_per_us_of(shape);
  const double hbm_bytes_per_us = hbm_GBps * 1e3 * k.hbm_efficiency.value;
  // Without a block count: one full wave on the whole GPU.
  double mu = shape.blocks > 0 ? shape.blocks : static_cast<double>(sms_) * tb;
  double flops = shape.flops;
  double traffic = bytes;
  if (shape.cls == traces::ComputeClass::kGemm && shape.blocks > 0) {
    const GemmTiles g = gemm_tiles(shape, bytes);
    mu = g.blocks;
    flops = g.flops;
    traffic += g.partial_bytes;
  }
  const double flops_per_block = flops / mu;
  const double bytes_per_block = traffic * inflation / mu;
  const double loss = profile_.compute.overlap_loss.value;
  const double per_wave_blocks = static_cast<double>(grant.full) * tb + shared_blocks;

  KernelEstimate e;
  auto wave = [&](double blocks) {
    // The busiest SM runs ceil(blocks / sms) blocks, at most TB.
    const double on_busiest = std::min<double>(tb, std::ceil(blocks / sms));
    const double compute = on_busiest * flops_per_block / per_sm_flops_per_us;
    const double memory = blocks * bytes_per_block / hbm_bytes_per_us;
    e.compute_us += compute;
    e.memory_us += memory;
    return std::max(compute, memory) + loss * std::min(compute, memory);
  };
  const double full_waves = std::floor(mu / per_wave_blocks);
  const double rest = mu - full_waves * per_wave_blocks;
  double t = 0;
  if (full_waves > 0) {
    const double one = wave(per_wave_blocks);
    t += one * full_waves;
    e.compute_us *= full_waves;
    e.memory_us *= full_waves;
  }
  if (rest > 0) {
    t += wave(rest);
  }
  e.waves = static_cast<int>(full_waves) + (rest > 0 ? 1 : 0);
  e.time_us = profile_.compute.launch_us.value + t;
  e.hbm_GBps = e.time_us > 0 ? bytes / (e.time_us * 1e3) : 0;
  return e;
}

double ComputeModel::blocks_of(const traces::ComputeShape& shape, double bytes) const {
  if (shape.cls == traces::ComputeClass::kGemm && shape.blocks > 0) {
    return gemm_tiles(shape, bytes).blocks;
  }
  return shape.blocks;
}

ComputeModel::GemmTiles ComputeModel::gemm_tiles(const traces::ComputeShape& shape,
                                                 double bytes) const {
  constexpr double kTile = traces::kGemmTile;
  constexpr double kTileFlopsPerK = 2.0 * kTile * kTile;
  const double tiles = shape.blocks;
  const double depth = shape.flops / (tiles * kTileFlopsPerK);
  const double k0 = profile_.compute.gemm_k_overhead.value;
  auto with_split = [&](double split) {
    GemmTiles g;
    g.split = split;
    g.blocks = tiles * split;
    g.flops = shape.flops + g.blocks * kTileFlopsPerK * k0;
    // Each part writes its fp32 partial tile and the reduction reads them all back.
    g.partial_bytes = split > 1 ? 2.0 * 4.0 * kTile * kTile * g.blocks : 0.0;
    return g;
  };
  const double split_depth = profile_.compute.gemm_split_k_depth.value;
  if (!(split_depth > 0 && 2 * tiles < sms_ && depth >= 2 * split_depth)) {
    return with_split(1);
  }
  // As cuBLAS's heuristics do at launch (on the whole GPU, whatever NCCL holds): of 1, the
  // powers of two up to the largest split, and that largest, the one whose roofline time is
  // least (ties to the smaller), so splitting never makes a kernel alone slower.
  const hardware::ComputeClassParams& k = profile_.compute.classes[static_cast<int>(shape.cls)];
  const double per_sm = per_sm_flops_per_us_of(shape);
  const double hbm = hbm_GBps_ * 1e3 * k.hbm_efficiency.value;
  auto roofline_us = [&](const GemmTiles& g) {
    const double waves = std::ceil(g.blocks / sms_);
    return std::max(waves * (g.flops / g.blocks) / per_sm, (bytes + g.partial_bytes) / hbm);
  };
  const double largest = std::min(std::floor(sms_ / tiles), std::floor(depth / split_depth));
  GemmTiles best = with_split(1);
  double best_us = roofline_us(best);
  auto consider = [&](double s) {
    const GemmTiles g = with_split(s);
    const double us = roofline_us(g);
    if (us < best_us) {
      best = g;
      best_us = us;
    }
  };
  for (double s = 2; s < largest; s *= 2) {
    consider(s);
  }
  if (largest > 1) {
    consider(largest);
  }
  return best;
}

double ComputeModel::per_sm_flops_per_us_of(const traces::ComputeShape& shape) const {
  return peak_TFLOPS_of(shape) * 1e6 / sms_ *
         profile_.compute.classes[static_cast<int>(shape.cls)].flops_efficiency.value;
}

double ComputeModel::peak_TFLOPS_of(const traces::ComputeShape& shape) const {
  const hardware::GpuParams& g = profile_.gpu;
  if (shape.cls != traces::ComputeClass::kGemm && shape.cls != traces::ComputeClass::kAttention) {
    return g.fp32_TFLOPS.value;  // the CUDA cores, whatever the data type
  }
  switch (shape.precision) {
    case traces::Precision::kFp8:
      if (!(g.fp8_TFLOPS.value > 0)) {
        throw Error(
            fmt::format("an fp8 {} kernel needs FP8 tensor cores, and profile '{}' ({}) has "
                        "none (gpu.fp8_TFLOPS is 0 or absent); use bf16, or a profile (or --set "
                        "gpu.fp8_TFLOPS=...) with an FP8 peak",
                        traces::to_string(shape.cls), profile_.name, profile_.gpu_type));
      }
      return g.fp8_TFLOPS.value;
    case traces::Precision::kFp32:
      return g.fp32_TFLOPS.value;
    case traces::Precision::kBf16:
      break;
  }
  return g.bf16_TFLOPS.value;
}

KernelEstimate ComputeModel::alone(const traces::ComputeShape& shape, double bytes) const {
  return estimate(shape, bytes, sms_, hbm_GBps_);
}

}  // namespace lagom::sim
