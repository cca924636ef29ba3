// Names of NCCL's path types, link types and CPU vendors.
#include "lagom/nccl/topo.hpp"

namespace lagom::nccl {

std::string_view to_string(PathType type) {
  switch (type) {
    case PathType::kLoc:
      return "LOC";
    case PathType::kNvl:
      return "NVL";
    case PathType::kNvb:
      return "NVB";
    case PathType::kC2c:
      return "C2C";
    case PathType::kPix:
      return "PIX";
    case PathType::kPxb:
      return "PXB";
    case PathType::kP2c:
      return "P2C";
    case PathType::kPxn:
      return "PXN";
    case PathType::kPhb:
      return "PHB";
    case PathType::kSys:
      return "SYS";
    case PathType::kNet:
      return "NET";
    case PathType::kDis:
      return "DIS";
  }
  return "?";
}

std::string_view to_string(LinkClass cls) {
  switch (cls) {
    case LinkClass::kNvlink:
      return "nvlink";
    case LinkClass::kPcie:
      return "pcie";
    case LinkClass::kCpuInterconnect:
      return "cpu-interconnect";
    case LinkClass::kNetwork:
      return "network";
  }
  return "?";
}

std::string_view to_string(CpuVendor vendor) {
  switch (vendor) {
    case CpuVendor::kIntel:
      return "intel";
    case CpuVendor::kAmd:
      return "amd";
    case CpuVendor::kMixed:
      return "mixed";
    case CpuVendor::kOther:
      return "other";
  }
  return "?";
}

}  // namespace lagom::nccl
