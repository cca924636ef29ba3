// Fuzzes the workload JSON reader (docs/formats/workload.md). What it accepts is analysed (op
// matching and the deadlock check read every op), and must survive a round trip: the JSON we
// write for it reads back to the same JSON.
#include <sstream>

#include "fuzz_util.hpp"
#include "harnesses.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload_json.hpp"

namespace {

std::string workload_json_text(const lagom::traces::Workload& w) {
  std::ostringstream out;
  lagom::traces::write_workload_json(w, out);
  return out.str();
}

}  // namespace

int lagom::fuzz::workload_json(const std::uint8_t* data, std::size_t size) {
  return lagom::fuzz::guarded([&] {
    const lagom::traces::Workload w =
        lagom::traces::parse_workload_json(lagom::fuzz::text_of(data, size), "fuzz");
    const std::string once = workload_json_text(w);
    lagom::fuzz::require(
        lagom::fuzz::reread(
            [&] {
              return workload_json_text(lagom::traces::parse_workload_json(once, "round trip"));
            },
            "our workload JSON is refused") == once,
        "the workload JSON does not survive a round trip");
    (void)lagom::traces::analyze(w, "fuzz");
  });
}

LAGOM_FUZZ_ENTRY(lagom::fuzz::workload_json)
