// Glue between our cluster model and NCCL's tuning emulation: what NCCL would know about a
// communicator placed on a Cluster (its topology-search graphs, NVLS support, CPU vendor).
#pragma once

#include "lagom/nccl/comm_info.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/communicator.hpp"

namespace lagom::topologies {

// Fills nccl::CommInfo from the cluster and the communicator's description:
//  * ring and tree graphs from the communicator's NCCL search estimate
//    (topologies::NcclSearchEstimate: channels, bwIntra/bwInter per channel, path types);
//  * an NVLS graph when the GPUs sit on an NVSwitch with NVLink SHARP: one head per local GPU,
//    bwIntra = the largest sm90 search speed (reference/nccl.md §2.2) not above the GPU's NVLink
//    bandwidth in NCCL's units divided among the heads, bwInter one ladder speed above. This
//    reproduces NCCL 2.28's 16 NVLS channels and ~476 GB/s NVLS AllReduce busbw on HGX H100; it
//    is an estimate of NCCL's search, not a replay of it;
//  * compute capability and CPU vendor from the cluster spec; NCCL's environment at defaults.
nccl::CommInfo nccl_comm_info(const Cluster& cluster, const CommunicatorInfo& comm);

}  // namespace lagom::topologies
