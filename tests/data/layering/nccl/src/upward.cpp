// A planted violation for tests/CMakeLists.txt: nccl must not see sim.
#include "lagom/sim/engine.hpp"
