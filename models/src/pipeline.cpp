// 1F1B pipeline order (see pipeline.hpp).
#include "lagom/models/pipeline.hpp"

#include <algorithm>

namespace lagom::models {

std::vector<PipelineUnit> pipeline_order(int pp, int vpp, int stage, int micro_batches) {
  const int total = micro_batches * vpp;
  auto unit = [&](bool fwd, int k) {
    const int chunk_raw = (k / pp) % vpp;
    return PipelineUnit{fwd, (k / (pp * vpp)) * pp + k % pp, fwd ? chunk_raw : vpp - 1 - chunk_raw};
  };
  int warmup = vpp == 1 ? pp - stage - 1 : (pp - stage - 1) * 2 + (vpp - 1) * pp;
  warmup = std::min(warmup, total);
  std::vector<PipelineUnit> order;
  order.reserve(2 * static_cast<std::size_t>(total));
  for (int k = 0; k < warmup; ++k) {
    order.push_back(unit(true, k));
  }
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(unit(true, warmup + k));
    order.push_back(unit(false, k));
  }
  for (int k = total - warmup; k < total; ++k) {
    order.push_back(unit(false, k));
  }
  return order;
}

}  // namespace lagom::models
