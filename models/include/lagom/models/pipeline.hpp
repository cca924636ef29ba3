// The order in which one pipeline stage runs its forward and backward passes under 1F1B
// (Narayanan et al. 2021, as Megatron-LM schedules it), plain (vpp = 1) or interleaved with `vpp`
// model chunks per GPU. A pure function, so that the schedule is testable on its own.
//
//  * Warm-up: stage s of pp runs pp - s - 1 forwards (interleaved: (pp - s - 1) * 2 +
//    (vpp - 1) * pp), at most all of them.
//  * Steady state: one forward, one backward, alternating.
//  * Cool-down: the remaining backwards.
//  * Interleaved, unit k (of micro_batches * vpp) is micro-batch (k / (pp vpp)) pp + k mod pp of
//    chunk (k / pp) mod vpp for a forward, and of chunk vpp - 1 - that for a backward (backwards
//    run the chunks in reverse).
#pragma once

#include <vector>

namespace lagom::models {

struct PipelineUnit {
  bool forward = true;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this GPU (0 .. vpp - 1); virtual stage chunk * pp + stage
  bool operator==(const PipelineUnit&) const = default;
};

// Every forward and backward of `micro_batches` micro-batches (per chunk) on stage `stage` of
// `pp`, in 1F1B order. Needs 0 <= stage < pp, vpp >= 1, and micro_batches a multiple of pp
// when vpp > 1 (the generator checks both).
std::vector<PipelineUnit> pipeline_order(int pp, int vpp, int stage, int micro_batches);

}  // namespace lagom::models
