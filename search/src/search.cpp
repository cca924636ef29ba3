// The search methods' table and entry point (see search.hpp and docs/search.md); each method
// lives in its own file behind internal::SearchRun (run.hpp).
#include "lagom/search/search.hpp"

#include <string>

#include "lagom/common/text.hpp"
#include "run.hpp"

namespace lagom::search {
namespace {

using internal::Configs;
using internal::SearchRun;

// NCCL's own choice: no walk at all.
Configs nccl_own(SearchRun& run) {
  return Configs(run.classes().size());
}

struct MethodEntry {
  Method method;
  std::string_view name;
  Configs (*walk)(SearchRun&);
  // Lagom optimises the step, so it can always keep NCCL's own choice: a walk that ends slower
  // than NCCL (a step that helped one collective's group and hurt the step elsewhere) gives
  // NCCL's plan back. AutoCCL optimises each collective's own time and may lose to NCCL, as the
  // paper reports; it keeps its answer. The oracles keep their best, NCCL's included.
  bool never_slower;
};

constexpr MethodEntry kMethods[] = {
    {Method::kNccl, "nccl", nccl_own, false},
    {Method::kAutoCcl, "autoccl", internal::autoccl, false},
    {Method::kLagom, "lagom", internal::lagom, true},
    {Method::kExhaustive, "exhaustive", internal::exhaustive, false},
    {Method::kRandom, "random", internal::random, false},
};

const MethodEntry& entry(Method m) {
  for (const MethodEntry& e : kMethods) {
    if (e.method == m) {
      return e;
    }
  }
  return kMethods[0];
}

}  // namespace

std::string_view to_string(Method m) {
  return entry(m).name;
}

std::optional<Method> parse_method(std::string_view text) {
  const std::string s = ascii_lower(text);
  for (const MethodEntry& e : kMethods) {
    if (s == e.name) {
      return e.method;
    }
  }
  return std::nullopt;
}

SearchResult run_search(Evaluator& eval, const SearchOptions& options) {
  const MethodEntry& e = entry(options.method);
  eval.set_jobs(options.jobs);
  // Nothing to tune (every collective measured, or none): NCCL's choice, one evaluation, whatever
  // the method (random would otherwise draw the one empty candidate its whole budget long).
  return SearchRun(eval, options)
      .run(e.method, eval.classes().empty() ? nccl_own : e.walk, e.never_slower);
}

}  // namespace lagom::search
