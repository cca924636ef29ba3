// Fuzzes the cluster reader (docs/formats/cluster.md), then builds the topology graph of what it
// accepts (routes, link classes), which is where a node count or a link bandwidth is used.
#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/topologies/cluster.hpp"
#include "lagom/topologies/cluster_spec.hpp"

int lagom::fuzz::cluster(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded([&] {
    const lagom::topologies::ClusterDocument doc{std::string(lagom::fuzz::text_of(data, size)),
                                                 "fuzz.json"};
    lagom::topologies::Cluster cluster(lagom::topologies::cluster_spec_of(doc));
  });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::cluster)
