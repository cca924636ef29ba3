// Fitting a profile's GPU, compute and contention coefficients to a measurement bundle
// (bundle.hpp; docs/calibration.md says what each benchmark measures and which number it fits).
//
// Each coefficient is fitted from the samples that show it, through the model that uses it
// (sim::ComputeModel), so that the model reproduces the measurement, in this order (later fits
// use the earlier ones):
//
//  * gpu.sms, l2_MiB, smem_per_sm_KiB, max_threads_per_sm, max_blocks_per_sm, memory_GB: the
//    device's attributes (facts, not fits).
//  * compute.launch_us: the median back-to-back kernel time (what one more kernel on a stream
//    costs; an empty kernel's work is nothing).
//  * contention.hbm_efficiency: the median bandwidth of the copy and triad kernels on the largest
//    buffers over gpu.hbm_GBps (what concurrent streams share).
//  * compute.classes.C.blocks_per_sm (elementwise, norm, optimizer): the occupancy its kernels ran
//    with; then compute.classes.C.hbm_efficiency: the value minimising the squared log error of
//    the compute model's time over the class's samples (1-D, golden section).
//  * compute.classes.gemm.flops_efficiency: likewise over the GEMM samples the prior model calls
//    compute-bound (its arithmetic part exceeds its memory part) and whose work outweighs the
//    launch (tiny GEMMs time cuBLAS's fixed costs, not the tensor rate), each with its launch's
//    grid.
//  * contention.l2_pollution: likewise over the GEMMs beside the occupier, each predicted on the
//    SMs the occupier's CTAs leave (compute_model.hpp's grant), the HBM its traffic leaves, and
//    its in-flight chunks (4 x CTAs x chunk) against L2.
//
// Every fitted value lies in the range a profile may hold (hardware/profile.hpp's reader), a
// class's HBM efficiency at most the streams' (contention.hbm_efficiency); one that ends at the
// edge of its range, and samples no such GPU can produce, are warnings. Malformed samples are
// errors of read_bundle. A coefficient without samples keeps its prior and is reported so. Fitted
// numbers carry the bundle in their source; a synthetic bundle's say so in capitals, so that one
// can never pass for a measurement.
#pragma once

#include <string>
#include <vector>

#include "lagom/calibrate/bundle.hpp"
#include "lagom/hardware/profile.hpp"

namespace lagom::calibrate {

struct CoefficientFit {
  std::string path;  // "compute.classes.gemm.flops_efficiency"
  double before = 0;
  double after = 0;
  bool fitted = false;  // false: stays the prior (no samples)
  int samples = 0;
  // Median |relative error| of the model's time over those samples, with the prior and with the
  // fitted value (0 for device facts and medians, which have no model in between).
  double error_before = 0;
  double error_after = 0;
  std::string how;  // what it was fitted from, or why not
};

struct GpuFitResult {
  hardware::HardwareProfile profile;
  std::vector<CoefficientFit> coefficients;
  // Measurements the model cannot explain, or that no GPU of this kind can make (a copy faster
  // than the datasheet's HBM, a fit that ends at its bound): each names the file and the numbers.
  std::vector<std::string> warnings;
};

GpuFitResult fit_gpu_profile(const hardware::HardwareProfile& prior, const Bundle& bundle);

// "" when the bundle ran on the GPU the profile describes, else a sentence saying which two.
std::string gpu_mismatch(const Bundle& bundle, const hardware::HardwareProfile& profile);

}  // namespace lagom::calibrate
