// The HardwareProfile: every measured number the cost models use, with its unit (in the field
// name) and its provenance (a datasheet, a paper, an nccl-tests log, a calibration run).
//
// Format v1 is documented in docs/formats/profile.md. One profile describes one GPU type and the
// links it is used with (NVLink, PCIe, network). Embedded defaults exist for A40, A100, H100 and
// H200 (hardware/profiles/); `lagom calibrate fit` writes new ones from nccl-tests logs.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "lagom/nccl/comm_config.hpp"
#include "lagom/nccl/topo.hpp"

namespace lagom::hardware {

inline constexpr std::string_view kProfileFormat = "lagom.profile";
inline constexpr int kProfileVersion = 1;

// A number with where it came from. The unit is in the name of the field that holds it.
struct Measured {
  double value = 0;
  std::string source;  // free text: "datasheet: ...", "nccl-tests log 01-...: fit", ...
};

struct GpuParams {
  Measured sms;          // streaming multiprocessors
  Measured hbm_GBps;     // peak HBM bandwidth
  Measured memory_GB;    // device memory (1 GB = 1e9 bytes)
  Measured bf16_TFLOPS;  // dense tensor-core peak (bf16 and fp16)
  Measured fp8_TFLOPS;   // dense FP8 tensor-core peak; 0: the GPU has none
  Measured fp32_TFLOPS;  // non-tensor FP32 peak
  Measured l2_MiB;
  Measured smem_per_sm_KiB;  // configurable shared memory per SM
  Measured max_threads_per_sm;
  Measured max_blocks_per_sm;
};

// One protocol on one link class (reference/nccl.md §1.4-1.5, §2.2; the model in
// sim/collective_model.hpp says how each is used).
struct ProtocolParams {
  Measured step_us;             // latency of one hop on the algorithm's critical path (paid once)
  Measured chunk_us;            // overhead of every chunk step that pipelining does not hide
  Measured channel_GBps;        // what one channel (one CTA) moves per direction, saturated
  Measured saturation_threads;  // threads per channel at which channel_GBps is reached
};

struct LinkParams {
  Measured efficiency;  // achievable fraction of the raw per-direction link bandwidth
  ProtocolParams protocols[nccl::kProtocolCount];
  const ProtocolParams& proto(nccl::Protocol p) const { return protocols[index_of(p)]; }
  ProtocolParams& proto(nccl::Protocol p) { return protocols[index_of(p)]; }
};

// The link classes a profile carries collective parameters for, in the format's order. The
// inter-socket link (nccl::LinkClass::kCpuInterconnect) has none of its own: it uses PCIe's.
inline constexpr std::array<nccl::LinkClass, 3> kProfiledLinks = {
    nccl::LinkClass::kNvlink, nccl::LinkClass::kPcie, nccl::LinkClass::kNetwork};
constexpr std::size_t profiled_link_index(nccl::LinkClass c) {
  return c == nccl::LinkClass::kNvlink ? 0 : c == nccl::LinkClass::kNetwork ? 2 : 1;
}

struct CollectiveParams {
  Measured launch_us;       // fixed cost of one collective call (launch, setup, final sync)
  Measured per_channel_us;  // added per channel (CTA) launched
  LinkParams links[kProfiledLinks.size()];
  Measured nvls_efficiency;  // NVLink SHARP: fraction of NVLink bandwidth for multimem traffic
  Measured nvls_step_us;     // latency of one NVLS hop (into the switch, or multicast back)
  Measured nvls_chunk_us;    // overhead of every NVLS chunk step
  const LinkParams& link(nccl::LinkClass c) const { return links[profiled_link_index(c)]; }
  LinkParams& link(nccl::LinkClass c) { return links[profiled_link_index(c)]; }
};

// Compute kernels of one class (the order of traces::ComputeClass: other, gemm, attention,
// elementwise, norm, optimizer).
inline constexpr int kComputeClassCount = 6;
std::string_view compute_class_name(int index);  // "other", "gemm", ...

struct ComputeClassParams {
  Measured flops_efficiency;    // achieved fraction of the GPU's peak rate (bf16 tensor for gemm
                                // and attention, fp32 otherwise)
  Measured hbm_efficiency;      // achieved fraction of HBM bandwidth when memory-bound
  Measured blocks_per_sm;       // default occupancy when the op does not say
  Measured smem_per_block_KiB;  // shared memory one block of the class takes: whether its blocks
                                // still fit an SM that runs an NCCL CTA (sim/compute_model.hpp)
};

struct ComputeParams {
  Measured launch_us;     // kernel launch and tail overhead
  Measured overlap_loss;  // share of the smaller of a wave's arithmetic and memory time that
                          // does not overlap the larger (0: roofline, 1: Lagom eq. 6's sum)
  // GEMM tiles (sim/compute_model.hpp): what a 128 x 128 output tile's prologue (filling its
  // shared-memory pipeline) and epilogue (writing the tile) cost, as reduction depth (elements
  // of K) the tile would otherwise have computed; 0: none.
  Measured gemm_k_overhead;
  // Split-K: a GEMM with fewer tiles than half the SMs splits its reduction into parts of at
  // least this depth, up to one tile per SM, and sums the fp32 partials; 0: never.
  Measured gemm_split_k_depth;
  ComputeClassParams classes[kComputeClassCount];
};

// How overlapping kernels and collectives share a GPU (sim/contention.hpp has the model).
struct ContentionParams {
  Measured hbm_efficiency;     // sustained fraction of HBM peak that concurrent streams share
  Measured comm_hbm_reduce;    // HBM bytes touched per payload byte a reducing collective
                               // moves (read own, read peer's, write result)
  Measured comm_hbm_copy;      // ... per byte a copying collective moves (read, write)
  Measured l2_spill;           // extra HBM traffic, as a fraction, once a collective's
                               // in-flight chunks (4 * channels * chunk) exceed L2
  Measured l2_pollution;       // extra HBM traffic of a kernel, as a fraction, once collectives'
                               // in-flight chunks fill L2 (they evict its working set)
  Measured comm_cta_smem_KiB;  // shared memory of one NCCL CTA (channel), which kernels' blocks
                               // on the same SM cannot use
};

struct HardwareProfile {
  std::string name;      // e.g. "h100-sxm"
  std::string gpu_type;  // matches a cluster's gpu.type, e.g. "H100-SXM-80GB"
  std::string description;
  std::string origin;  // where it was read from (file path or "builtin:<name>")
  GpuParams gpu;
  CollectiveParams collective;
  ComputeParams compute;
  ContentionParams contention;
  std::vector<std::string> calibration;  // free-text notes: what was fitted, residuals
};

// Every number of a profile with its JSON path ("collective.links.pcie.Simple.channel_GBps"),
// in the order of the format (docs/formats/profile.md).
struct ProfileField {
  std::string path;
  Measured* number = nullptr;
};
std::vector<ProfileField> profile_fields(HardwareProfile& p);

// A number nobody measured for this GPU: a guess ("prior ..."), a reader default
// ("default ..."), or one of NCCL's model constants ("NCCL 2.28.9 constants ..."), which stand in
// until a calibration replaces them. Fitted numbers ("lagom calibrate fit ...") and hardware
// facts (datasheets, the CUDA guide) are not.
bool is_prior(const Measured& m);

// Parses a profile document; `origin` names it in errors. Strict: unknown fields, missing
// values or sources, non-finite or out-of-range numbers are lagom::Error naming the JSON path.
HardwareProfile parse_profile_json(std::string_view text, std::string_view origin);
// Deterministic JSON, readable back by parse_profile_json.
std::string profile_to_json(const HardwareProfile& p);

// A built-in profile by name ("h100-sxm") or a file path.
HardwareProfile load_profile(const std::string& name_or_path);
// The built-in profile for a GPU type ("H100-SXM-80GB"); lagom::Error listing the known types.
HardwareProfile default_profile_for_gpu(std::string_view gpu_type);
std::vector<std::string> builtin_profiles();

}  // namespace lagom::hardware
