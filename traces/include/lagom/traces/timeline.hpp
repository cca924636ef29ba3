// When each op of a workload ran: the record a simulation produces and trace writers consume.
#pragma once

#include "lagom/common/time.hpp"

namespace lagom::traces {

// Times from the start of the step.
//   launch: the op's stream reached it and its deps were done (a communication op starts
//           waiting for its peers here, holding its stream);
//   start:  it began to make progress (communication: all peers had arrived);
//   end:    it finished;
//   alone:  how long it (or its communication instance) takes with nothing else running.
// Kept together (32 bytes) because the engine writes them at nearby moments.
struct OpTimes {
  Time launch;
  Time start;
  Time end;
  Time alone;
};

}  // namespace lagom::traces
