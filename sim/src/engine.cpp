// The discrete-event engine (see engine.hpp for the semantics).
#include "lagom/sim/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "lagom/common/error.hpp"
#include "lagom/common/hash.hpp"
#include "lagom/common/interrupt.hpp"

namespace lagom::sim {

using traces::ExecutionGraph;
using traces::InstanceId;
using traces::kNoInstance;
using traces::OpId;
using traces::Rank;
using traces::Workload;

namespace engine_detail {

// A scheduled completion. 24 bytes; the heap holds at most one live event per running activity
// plus superseded ones not yet popped.
struct Event {
  Time time;
  std::uint64_t seq;
  std::uint32_t slot;
  std::uint32_t version;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.seq > b.seq;
  }
};

// Something that makes progress: one compute/memcpy op, or one communication instance.
struct Slot {
  double remaining = 0;  // ns of standalone time still to do, as of t_last
  double rate = 1;       // fraction of standalone speed; 0 until the contention model rates it
  Time t_last;
  std::uint32_t version = 0;
  std::uint32_t subject = 0;  // OpId, or InstanceId when is_instance
  bool is_instance = false;
  bool fixed_phase = false;  // an instance in its fixed part (ContentionModel::fixed_part)
  // Kept to 32 bytes: the slot array is touched on every event.
};

}  // namespace engine_detail
using engine_detail::Event;
using engine_detail::Later;
using engine_detail::Slot;

class Engine::Impl {
 public:
  Impl(const Workload& w, const ExecutionGraph& g, SimOptions o) : w_(w), g_(g), opt_(o) {}

  void add_observer(SimObserver* obs) { observers_.push_back(obs); }

  SimResult run() {
    if (ran_) {
      throw Error("Engine::run() called twice; create a new Engine for each simulation");
    }
    ran_ = true;
    const OpId n = w_.op_count();
    if (opt_.cost == nullptr) {
      check_all_timed();
    }
    r_.ops.assign(n, traces::OpTimes{});
    pending_.resize(n);
    for (OpId op = 0; op < n; ++op) {
      const std::size_t deps = w_.deps(op).size();
      if (deps >= kCountMask) {
        throw Error(fmt::format("{} has {} dependencies; at most {} are supported", w_.describe(op),
                                deps, kCountMask - 1));
      }
      std::uint32_t word = static_cast<std::uint32_t>(deps) + (w_.position(op) > 0 ? 1 : 0);
      if (op + 1 == n || w_.stream_of(op + 1) != w_.stream_of(op)) {
        word |= kLastInStream;
      }
      if (!g_.dependents(op).empty()) {
        word |= kHasDependents;
      }
      pending_[op] = word;
    }
    instances_.assign(g_.instance_count(), InstanceState{});
    if (opt_.contention) {
      opt_.contention->bind(w_, g_);
    }
    heap_.reserve(std::min<std::size_t>(w_.streams().size() * 2 + 16, 1 << 24));

    for (OpId op = 0; op < n; ++op) {
      if ((pending_[op] & kCountMask) == 0) {
        launch(op);
      }
    }
    if (opt_.contention) {
      apply_rates();
    }
    while (!heap_.empty()) {
      // SIGINT/SIGTERM (common/interrupt.hpp): polled every 4096 events or so, well under a
      // millisecond apart (an iteration may pop several events, so a threshold, not a modulus).
      if (r_.events >= next_poll_) {
        next_poll_ = r_.events + 4096;
        check_interrupt();
      }
      if (!pop_current()) {
        continue;
      }
      if (opt_.contention) {
        // Everything else that ends at this instant ends before the rates are solved again:
        // rates matter only over intervals, and one solve per instant is cheaper.
        while (!heap_.empty() && heap_.front().time == now_) {
          pop_current();
        }
        apply_rates();
      }
    }
    if (finished_ != n) {
      // analyze() proves every valid workload terminates; reaching here is a bug in Lagom.
      throw Error(fmt::format("internal error: simulation stalled with {} of {} ops finished",
                              finished_, n));
    }
    r_.fingerprint = fp_.value();
    return std::move(r_);
  }

 private:
  // Pops the next event; if it is current, advances the clock and finishes its activity.
  bool pop_current() {
    std::pop_heap(heap_.begin(), heap_.end(), Later());
    const Event ev = heap_.back();
    heap_.pop_back();
    ++r_.events;
    if (slots_[ev.slot].version != ev.version) {
      ++r_.stale_events;
      return false;
    }
    now_ = ev.time;
    finish(ev.slot);
    return true;
  }

  // With no cost model, every op must carry its own duration; say which one does not, up front.
  void check_all_timed() const {
    for (OpId op = 0; op < w_.op_count(); ++op) {
      const InstanceId inst = g_.instance_of(op);
      const bool timed = inst == kNoInstance ? w_.duration_ns(op) != traces::kNoDuration
                                             : traces::measured_member(w_, g_, inst).has_value();
      if (!timed) {
        throw Error(
            fmt::format("{} has no 'duration_us', and no cost model is configured to time it (the "
                        "collective and compute models come with --cluster)",
                        w_.describe(op)));
      }
    }
  }

  Time standalone_time(OpId op) const {
    // A measured compute op still goes to the models, which know whether its GPU is slow.
    if (w_.duration_ns(op) != traces::kNoDuration &&
        (opt_.cost == nullptr || w_.kind(op) != traces::OpKind::kCompute)) {
      return Time::ns(w_.duration_ns(op));
    }
    return opt_.cost->standalone_time(w_, g_, op);
  }

  // Members may give different durations (e.g. per-rank measurements): the slowest determines
  // the end (traces::measured_member's rule). Collected as members arrive, so starting an
  // instance need not visit them again.
  Time instance_time(InstanceId inst) const {
    const InstanceState& st = instances_[inst];
    if (st.max_duration_ns != traces::kNoDuration) {
      return Time::ns(st.max_duration_ns);
    }
    return opt_.cost->standalone_time(w_, g_, g_.members(inst).front());
  }

  // The fixed part of an instance's time `t` (ContentionModel::fixed_part), run before its
  // bytes move. Only with a contention model (alone the split changes nothing) and only when both
  // parts are there.
  Time fixed_part(InstanceId inst, Time t) const {
    if (opt_.contention == nullptr) {
      return Time();
    }
    const Time fixed = opt_.contention->fixed_part(inst, t);
    return fixed > Time() && fixed < t ? fixed : Time();
  }

  // One fingerprint word per record: the time scrambled by an odd constant, xor the op and
  // whether it starts or ends (the mixer in Fingerprint::add spreads every bit).
  std::uint64_t record_word(OpId op, bool is_end) const {
    return static_cast<std::uint64_t>(now_.count_ns()) * 0x9e3779b97f4a7c15ULL ^
           ((std::uint64_t{op} << 1) | (is_end ? 1u : 0u));
  }

  // Fingerprints and reports the start of `op`; the caller stores the time.
  void note_start(OpId op) {
    fp_.add(record_word(op, false));
    if (!observers_.empty()) {
      for (SimObserver* o : observers_) {
        o->on_start(op, now_);
      }
    }
  }

  void record_end(OpId op) {
    r_.ops[op].end = now_;
    fp_.add(record_word(op, true));
    if (!observers_.empty()) {
      for (SimObserver* o : observers_) {
        o->on_end(op, now_);
      }
    }
    if (now_ > r_.step_time) {
      r_.step_time = now_;
    }
    ++finished_;
  }

  std::uint32_t alloc_slot() {
    if (!free_.empty()) {
      const std::uint32_t s = free_.back();
      free_.pop_back();
      return s;
    }
    slots_.emplace_back();
    return static_cast<std::uint32_t>(slots_.size() - 1);
  }

  void schedule(std::uint32_t slot) {
    const Slot& a = slots_[slot];
    std::int64_t dt = 0;
    // Round up so that an op never finishes before its work is done; the small tolerance absorbs
    // floating-point noise from earlier rate changes.
    const double span = a.rate == 1.0 ? a.remaining : std::ceil(a.remaining / a.rate - 1e-6);
    // 9e18 ns is 285 years: past it the clock would overflow (a what-if that divides a
    // bandwidth by millions, a rate near zero).
    if (!(span + a.t_last.count_ns_double() < 9.0e18)) {
      throw Error(fmt::format(
          "{}: the simulated step would last over 285 years (at {:.3g}x its standalone speed): a "
          "bandwidth or rate is absurd (check --set, --scale, --slow-link and the inputs)",
          a.is_instance ? fmt::format("a communication instance of {}",
                                      w_.describe(g_.members(a.subject).front()))
                        : w_.describe(a.subject),
          a.rate));
    }
    dt = static_cast<std::int64_t>(span);
    heap_.push_back(
        Event{a.t_last + Time::ns(std::max<std::int64_t>(dt, 0)), seq_++, slot, a.version});
    std::push_heap(heap_.begin(), heap_.end(), Later());
  }

  void launch(OpId op) {
    r_.ops[op].launch = now_;
    const InstanceId inst = g_.instance_of(op);
    if (inst == kNoInstance) {
      const std::uint32_t slot = alloc_slot();
      Slot& a = slots_[slot];
      const Time t = standalone_time(op);
      r_.ops[op].alone = t;
      a.remaining = static_cast<double>(t.count_ns());
      a.rate = 1.0;
      a.t_last = now_;
      a.subject = op;
      a.is_instance = false;
      r_.ops[op].start = now_;
      note_start(op);
      begin(slot, Activity{slot, false, op});
      return;
    }
    const auto members = g_.members(inst);
    InstanceState& st = instances_[inst];
    st.max_duration_ns = std::max(st.max_duration_ns, w_.duration_ns(op));
    if (++st.arrived < members.size()) {
      if (opt_.contention) {
        opt_.contention->waiting(op);
      }
      return;
    }
    // Everyone is here: the instance starts now. Members' start and alone times are stored when
    // it ends, with their end (same cache line), so starting touches only the members list.
    const std::uint32_t slot = alloc_slot();
    Slot& a = slots_[slot];
    const Time t = instance_time(inst);
    st.start = now_;
    st.alone = t;
    st.fixed = fixed_part(inst, t);
    a.remaining = static_cast<double>((t - st.fixed).count_ns());
    a.rate = 1.0;
    a.t_last = now_;
    a.subject = inst;
    a.is_instance = true;
    a.fixed_phase = false;
    for (OpId m : members) {
      note_start(m);
    }
    if (st.fixed > Time()) {
      // Latencies first, at full speed: the members hold their CTAs but move no bytes yet.
      a.fixed_phase = true;
      a.remaining = static_cast<double>(st.fixed.count_ns());
      opt_.contention->waiting(op);
      schedule(slot);
      return;
    }
    begin(slot, Activity{slot, true, inst});
  }

  // Without contention an activity runs at its standalone speed from the start; with it, its
  // rate comes from the model at the end of this instant (apply_rates).
  void begin(std::uint32_t slot, const Activity& activity) {
    if (!opt_.contention) {
      schedule(slot);
      return;
    }
    slots_[slot].rate = 0;  // no rate yet
    opt_.contention->started(activity);
    unrated_.push_back(slot);
  }

  void finish(std::uint32_t slot) {
    Slot& a = slots_[slot];
    if (a.fixed_phase) {  // the fixed part is over: the bytes start to move, shared
      a.fixed_phase = false;
      const InstanceState& st = instances_[a.subject];
      a.remaining = static_cast<double>((st.alone - st.fixed).count_ns());
      a.t_last = now_;
      begin(slot, Activity{slot, true, a.subject});
      return;
    }
    ++a.version;  // any other queued event for this slot is now stale
    const bool is_instance = a.is_instance;
    const std::uint32_t subject = a.subject;
    free_.push_back(slot);
    if (opt_.contention) {
      opt_.contention->finished(Activity{slot, is_instance, subject});
    }
    if (!is_instance) {
      record_end(subject);
      complete(subject);
      return;
    }
    const auto members = g_.members(subject);
    const InstanceState& st = instances_[subject];
    for (OpId m : members) {
      r_.ops[m].start = st.start;
      r_.ops[m].alone = st.alone;
      record_end(m);
    }
    for (OpId m : members) {
      complete(m);
    }
  }

  // `op` finished: release what waits on it.
  void complete(OpId op) {
    const std::uint32_t word = pending_[op];
    // Ops of a stream are contiguous: the next op is op + 1 unless op is the stream's last.
    if ((word & kLastInStream) == 0 && (--pending_[op + 1] & kCountMask) == 0) {
      launch(op + 1);
    }
    if ((word & kHasDependents) != 0) {
      for (OpId d : g_.dependents(op)) {
        if ((--pending_[d] & kCountMask) == 0) {
          launch(d);
        }
      }
    }
  }

  // --- Contention (only when a ContentionModel is set) ---------------------------------------

  // Takes the model's rates for what started or changed at this instant and reschedules.
  void apply_rates() {
    changes_.clear();
    opt_.contention->rates(changes_);
    for (const RateChange& c : changes_) {
      if (c.slot >= slots_.size()) {
        throw Error(fmt::format("contention model '{}' gave a rate to unknown activity {}",
                                opt_.contention->name(), c.slot));
      }
      if (!(c.rate > 0.0 && c.rate <= 1.0)) {
        const Slot& a = slots_[c.slot];
        throw Error(fmt::format(
            "contention model '{}' gave speed factor {} to {}; factors must be in (0, 1]",
            opt_.contention->name(), c.rate,
            w_.describe(a.is_instance ? g_.members(a.subject).front() : a.subject)));
      }
      set_rate(c.slot, c.rate);
    }
    for (std::uint32_t slot : unrated_) {
      const Slot& a = slots_[slot];
      if (a.rate == 0) {
        throw Error(
            fmt::format("contention model '{}' gave no rate to {}, which started at {} ns",
                        opt_.contention->name(),
                        w_.describe(a.is_instance ? g_.members(a.subject).front() : a.subject),
                        now_.count_ns()));
      }
    }
    unrated_.clear();
  }

  void set_rate(std::uint32_t slot, double rate) {
    Slot& a = slots_[slot];
    if (a.rate == 0) {  // its first rate
      a.rate = rate;
      a.t_last = now_;
      schedule(slot);
      return;
    }
    if (rate == a.rate) {
      return;
    }
    a.remaining =
        std::max(0.0, a.remaining - static_cast<double>((now_ - a.t_last).count_ns()) * a.rate);
    a.t_last = now_;
    a.rate = rate;
    ++a.version;
    schedule(slot);
  }

  const Workload& w_;
  const ExecutionGraph& g_;
  SimOptions opt_;
  std::vector<SimObserver*> observers_;
  bool ran_ = false;
  std::uint64_t next_poll_ = 0;  // r_.events at which to poll for an interrupt next

  SimResult r_;
  Time now_;
  std::uint64_t seq_ = 0;
  OpId finished_ = 0;
  Fingerprint fp_;
  std::vector<Event> heap_;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  // Per op: unfinished predecessors (stream order + deps) in the low bits, and two flags that
  // save the hot path from touching the stream and dependents arrays.
  static constexpr std::uint32_t kLastInStream = 1u << 31;
  static constexpr std::uint32_t kHasDependents = 1u << 30;
  static constexpr std::uint32_t kCountMask = kHasDependents - 1;
  std::vector<std::uint32_t> pending_;
  struct InstanceState {
    std::int64_t max_duration_ns = traces::kNoDuration;  // over the members launched so far
    Time start;
    Time alone;
    Time fixed;                 // the part of `alone` run first, uncontended
    std::uint32_t arrived = 0;  // members launched so far
  };
  std::vector<InstanceState> instances_;

  // Contention state: activities started at this instant and still without a rate.
  std::vector<std::uint32_t> unrated_;
  std::vector<RateChange> changes_;
};

Engine::Engine(const Workload& w, const ExecutionGraph& graph, SimOptions options)
    : impl_(std::make_unique<Impl>(w, graph, options)) {}
Engine::~Engine() = default;
void Engine::add_observer(SimObserver* observer) {
  impl_->add_observer(observer);
}
SimResult Engine::run() {
  return impl_->run();
}

}  // namespace lagom::sim
