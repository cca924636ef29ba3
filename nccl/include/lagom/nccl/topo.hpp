// NCCL's topology vocabulary (path types, link types, CPU kinds) and the constants its topology
// code uses to size links and search channels (nccl@v2.28.9-1 src/graph/topo.h, topo.cc,
// search.cc; reference/nccl.md §2.2). Every module that speaks of paths and links uses these.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "lagom/nccl/version.hpp"

namespace lagom::nccl {

// NCCL's path types (src/graph/topo.h PATH_*), ordered from closest to farthest, with NCCL's
// values: comparisons such as `type <= PathType::kPxb` read as in NCCL.
enum class PathType : std::uint8_t {
  kLoc = 0,
  kNvl = 1,  // NVLink, direct or through NVSwitch
  kNvb = 2,  // NVLink through an intermediate GPU
  kC2c = 3,
  kPix = 4,  // one PCIe switch
  kPxb = 5,  // several PCIe switches
  kP2c = 6,
  kPxn = 7,  // NVLink to a GPU, then its NIC
  kPhb = 8,  // through the CPU's host bridge
  kSys = 9,  // across CPU sockets
  kNet = 10,
  kDis = 11,
};

// The kinds of physical link (NCCL's LINK_NVL, LINK_PCI, LINK_SYS, LINK_NET). A hardware profile
// carries collective parameters for NVLink, PCIe and the network; the inter-socket link uses
// PCIe's (hardware/profile.hpp).
enum class LinkClass : std::uint8_t { kNvlink, kPcie, kCpuInterconnect, kNetwork };
inline constexpr int kLinkClassCount = 4;

enum class CpuArch : std::uint8_t { kX86, kPower, kArm };
enum class CpuVendor : std::uint8_t { kIntel, kAmd, kMixed, kOther };

std::string_view to_string(PathType type);     // "NVL", "PIX", ...
std::string_view to_string(LinkClass cls);     // "nvlink", "pcie", "cpu-interconnect", "network"
std::string_view to_string(CpuVendor vendor);  // "intel", "amd", "mixed", "other"

inline constexpr double kLocBw = 5000.0;  // LOC_BW: a GPU to itself
// The ring search's channel limit (graph->maxChannels = MAXCHANNELS / 2): 32 in 2.28, 16 in
// 2.18.
inline int max_search_channels(Version v) {
  return max_channels(v) / 2;
}

// Per NVLink link, per direction (SM60 18, SM70/SM80 20, SM86 12, SM90 20.6, SM100 40.1; 2.18.3:
// 20.0 for SM90 and later).
inline double nvlink_bw(int compute_capability, Version v = kDefaultVersion) {
  if (v == Version::k2_18 && compute_capability >= 90) {
    return 20.0;
  }
  if (compute_capability >= 100) {
    return 40.1;
  }
  if (compute_capability >= 90) {
    return 20.6;
  }
  if (compute_capability == 86) {
    return 12.0;
  }
  if (compute_capability >= 70) {
    return 20.0;
  }
  if (compute_capability >= 60) {
    return 18.0;
  }
  return 20.0;
}

// NCCL sizes a PCIe link as width * speed / 80 with speed 15/30/60/120/240/480 for 2.5 to 64 GT/s
// (topo.cc kvDictPciGen): PCI_BW = 12 GB/s for Gen3 x16, 24 for Gen4 x16, 48 for Gen5 x16, as
// NCCL's topology dumps print them ("PCI[24.0]", "PCI[48.0]").
inline double pcie_bw(int generation, int lanes) {
  double speed = 15.0;
  for (int g = 1; g < generation; ++g) {
    speed *= 2.0;
  }
  return lanes * speed / 80.0;
}

// NET bandwidth: the NIC speed in Mb/s / 8000, i.e. Gb/s / 8 ("NET[50.0]" for 400 Gb/s).
inline double net_bw(double speed_Gbps) {
  return speed_Gbps / 8.0;
}

// Intel root complexes split GPU peer traffic into 64-byte TLPs: INTEL_P2P_OVERHEAD = 6/5.
inline constexpr double kIntelP2pOverhead = 1.2;

// Speed ladders of the search, per channel, GB/s (search.cc).
inline constexpr double kIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                    9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
inline constexpr double kInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                    7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
inline constexpr double kSm90Intra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                        15.0, 12.0, 11.0, 6.0,  3.0};
inline constexpr double kSm90Inter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                        15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
inline constexpr double kSm100Intra[] = {90.0, 80.0, 70.0, 60.0, 50.0, 40.0,
                                         30.0, 24.0, 20.0, 19.0, 18.0};
inline constexpr double kSm100Inter[] = {96.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0,
                                         17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

// 2.18.3's sm90 ladders (it has no sm100 ones: sm90 and later use these).
inline constexpr double kSm90Intra218[] = {60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0};
inline constexpr double kSm90Inter218[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 20.0, 17.5,
                                           15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};

inline std::span<const double> speed_ladder(int compute_capability, bool inter,
                                            Version v = kDefaultVersion) {
  if (v == Version::k2_18 && compute_capability >= 90) {
    return inter ? std::span<const double>(kSm90Inter218) : std::span<const double>(kSm90Intra218);
  }
  if (compute_capability >= 100) {
    return inter ? std::span<const double>(kSm100Inter) : std::span<const double>(kSm100Intra);
  }
  if (compute_capability >= 90) {
    return inter ? std::span<const double>(kSm90Inter) : std::span<const double>(kSm90Intra);
  }
  return inter ? std::span<const double>(kInter) : std::span<const double>(kIntra);
}

}  // namespace lagom::nccl
