// The search run every method shares (see run.hpp).
#include "run.hpp"

#include <chrono>

#include "lagom/common/interrupt.hpp"

namespace lagom::search::internal {

Evaluation SearchRun::evaluate(const Configs& configs) {
  return evaluate_all({configs}).front();
}

std::vector<Evaluation> SearchRun::evaluate_all(const std::vector<Configs>& batch,
                                                const std::vector<Configs>& ahead) {
  const bool first = evaluations_ == 0;  // NCCL's: nothing to keep before it
  if (!first && interrupt_requested()) {
    throw Stop{};
  }
  std::vector<Evaluation> out;
  try {
    out = eval_.evaluate_all(batch, ahead);
  } catch (const Interrupted&) {
    if (first) {
      throw;
    }
    // Keep what one at a time would have: the batch's results up to the first it lost.
    for (const Configs& c : batch) {
      std::optional<Evaluation> e = eval_.kept(c);
      if (!e) {
        break;
      }
      record(c, *e);
    }
    throw Stop{};
  }
  for (std::size_t i = 0; i < batch.size(); ++i) {
    record(batch[i], out[i]);
  }
  return out;
}

Time SearchRun::uncontended_step(const Configs& configs) {
  if (interrupt_requested()) {
    throw Stop{};
  }
  try {
    return eval_.uncontended_step(configs);
  } catch (const Interrupted&) {
    throw Stop{};
  }
}

void SearchRun::record(const Configs& configs, const Evaluation& e) {
  const bool first = evaluations_ == 0;
  last_ = e;
  last_configs_ = configs;
  ++evaluations_;
  if (first || last_.step_time < fastest_.step_time) {
    fastest_ = last_;
    fastest_configs_ = configs;
  }
  if (o_.progress) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report_ >= std::chrono::duration<double>(o_.progress_every_s)) {
      last_report_ = now;
      o_.progress(evaluations_, std::chrono::duration<double>(now - start_).count());
    }
  }
}

void SearchRun::keep_best(const std::vector<Configs>& batch) {
  const std::vector<Evaluation> es = evaluate_all(batch);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (es[i].step_time < best_.step_time) {
      best_configs_ = batch[i];
      best_ = es[i];
    }
  }
}

SearchResult SearchRun::run(Method method, Configs (*walk)(SearchRun&), bool never_slower) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::int64_t simulations = eval_.simulations();
  start_ = last_report_ = t0;
  const Configs nccl(classes_.size());
  nccl_eval_ = evaluate(nccl);
  best_configs_ = nccl;
  best_ = nccl_eval_;
  Configs best;
  Evaluation final_eval;
  bool interrupted = false;
  try {
    best = walk(*this);
    // The plan's own evaluation: reused when it was the last or the best one simulated;
    // otherwise one more, which the walks keep inside the budget (spent() reserves it).
    final_eval = best == last_configs_ ? last_ : best == best_configs_ ? best_ : evaluate(best);
  } catch (const Stop&) {
    if (!o_.keep_on_interrupt) {
      throw Interrupted();
    }
    interrupted = true;
    best = fastest_configs_;
    final_eval = fastest_;
  }
  // A method that optimises the step can always keep NCCL's own choice (search.cpp's table).
  if (never_slower && final_eval.step_time > nccl_eval_.step_time) {
    best = nccl;
    final_eval = nccl_eval_;
  }
  SearchResult r;
  r.method = method;
  r.step_time = final_eval.step_time;
  r.nccl_step_time = nccl_eval_.step_time;
  r.evaluations = evaluations_;
  r.simulations = eval_.simulations() - simulations;
  r.bounded = bounded_;
  r.interrupted = interrupted;
  r.step_order = step_order_;
  r.search_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (std::size_t j = 0; j < classes_.size(); ++j) {
    const CollClass& c = classes_[j];
    ClassChoice ch;
    ch.config = best[j] ? eval_.applied(j, *best[j]) : c.nccl;
    ch.time_us = final_eval.comm_us[j] / static_cast<double>(c.step_calls);
    ch.nccl_time_us = nccl_eval_.comm_us[j] / static_cast<double>(c.step_calls);
    r.choices.push_back(ch);
    if (method == Method::kNccl || (!best[j] && c.nccl_varies)) {
      continue;  // NCCL's own choice, which a rule could not give each of its communicators
    }
    PlanRule rule;
    rule.coll = c.coll;
    rule.min_bytes = rule.max_bytes = c.bytes;
    rule.nnodes = c.nnodes;
    rule.nranks = c.nranks;
    rule.algo = ch.config.algo;
    rule.proto = ch.config.proto;
    rule.nchannels = ch.config.nchannels;
    if (eval_.space().resources == Resources::kFull) {
      rule.nthreads = ch.config.nthreads;
      rule.chunk_bytes = ch.config.chunk_bytes;
    }
    rule.calls = static_cast<int>(std::min<std::int64_t>(c.step_calls, 1 << 30));
    rule.time_us = ch.time_us;
    rule.nccl = c.nccl;
    rule.nccl_time_us = ch.nccl_time_us;
    r.plan.rules.push_back(rule);
  }
  r.plan.context.method = std::string(to_string(method));
  r.plan.context.step_time_us = r.step_time.us();
  r.plan.context.nccl_step_time_us = r.nccl_step_time.us();
  r.plan.context.evaluations = r.evaluations;
  return r;
}

}  // namespace lagom::search::internal
