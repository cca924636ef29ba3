// The discrete-event engine (see engine.hpp for the semantics).
#include "lagom/sim/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "lagom/common/error.hpp"
#include "lagom/common/hash.hpp"

namespace lagom::sim {

using traces::ExecutionGraph;
using traces::InstanceId;
using traces::kNoInstance;
using traces::OpId;
using traces::Rank;
using traces::Workload;

namespace {

// A scheduled completion. 24 bytes; the heap holds at most one live event per running activity
// plus superseded ones not yet popped.
struct Event {
  std::int64_t time;
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
struct Activity {
  double remaining = 0;  // ns of standalone time still to do, as of t_last
  double rate = 1;       // fraction of standalone speed
  std::int64_t t_last = 0;
  std::uint32_t version = 0;
  std::uint32_t subject = 0;  // OpId, or InstanceId when is_instance
  bool is_instance = false;
  // Kept to 32 bytes: the slot array is touched on every event. Per-rank speed factors of a
  // communication instance (contention only) live in Engine::Impl::instance_factors_.
};

constexpr std::uint32_t kNoSlot = 0xffffffffu;

}  // namespace

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
      active_.resize(w_.rank_count());
    }
    heap_.reserve(std::min<std::size_t>(w_.streams().size() * 2 + 16, 1 << 24));

    for (OpId op = 0; op < n; ++op) {
      if ((pending_[op] & kCountMask) == 0) {
        launch(op);
      }
    }
    while (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), Later());
      const Event ev = heap_.back();
      heap_.pop_back();
      ++r_.events;
      Activity& a = slots_[ev.slot];
      if (a.version != ev.version) {
        ++r_.stale_events;
        continue;
      }
      now_ = ev.time;
      finish(ev.slot);
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
  // With no cost model, every op must carry its own duration; say which one does not, up front.
  void check_all_timed() const {
    for (OpId op = 0; op < w_.op_count(); ++op) {
      const InstanceId inst = g_.instance_of(op);
      bool timed = w_.duration_ns(op) != traces::kNoDuration;
      if (!timed && inst != kNoInstance) {
        for (OpId m : g_.members(inst)) {
          timed = timed || w_.duration_ns(m) != traces::kNoDuration;
        }
      }
      if (!timed) {
        throw Error(
            fmt::format("{} has no 'duration_us', and no cost model is configured to time it (the "
                        "collective and compute models come with --cluster)",
                        w_.describe(op)));
      }
    }
  }

  Time standalone_time(OpId op) const {
    if (w_.duration_ns(op) != traces::kNoDuration) {
      return Time::ns(w_.duration_ns(op));
    }
    return opt_.cost->standalone_time(w_, g_, op);
  }

  // Members may give different durations (e.g. per-rank measurements): the slowest determines
  // the end. Collected as members arrive, so starting an instance need not visit them again.
  Time instance_time(InstanceId inst) const {
    const InstanceState& st = instances_[inst];
    if (st.max_duration_ns != traces::kNoDuration) {
      return Time::ns(st.max_duration_ns);
    }
    return opt_.cost->standalone_time(w_, g_, g_.members(inst).front());
  }

  // One fingerprint word per record: the time scrambled by an odd constant, xor the op and
  // whether it starts or ends (the mixer in Fingerprint::add spreads every bit).
  std::uint64_t record_word(OpId op, bool is_end) const {
    return static_cast<std::uint64_t>(now_) * 0x9e3779b97f4a7c15ULL ^
           ((std::uint64_t{op} << 1) | (is_end ? 1u : 0u));
  }

  // Fingerprints and reports the start of `op`; the caller stores the time.
  void note_start(OpId op) {
    fp_.add(record_word(op, false));
    if (!observers_.empty()) {
      for (SimObserver* o : observers_) {
        o->on_start(op, Time::ns(now_));
      }
    }
  }

  void record_end(OpId op) {
    r_.ops[op].end = Time::ns(now_);
    fp_.add(record_word(op, true));
    if (!observers_.empty()) {
      for (SimObserver* o : observers_) {
        o->on_end(op, Time::ns(now_));
      }
    }
    if (now_ > r_.step_time.count_ns()) {
      r_.step_time = Time::ns(now_);
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
    const Activity& a = slots_[slot];
    std::int64_t dt = 0;
    if (a.rate == 1.0) {
      dt = static_cast<std::int64_t>(a.remaining);
    } else {
      // Round up so that an op never finishes before its work is done; the small tolerance
      // absorbs floating-point noise from earlier rate changes.
      dt = static_cast<std::int64_t>(std::ceil(a.remaining / a.rate - 1e-6));
    }
    heap_.push_back(Event{a.t_last + std::max<std::int64_t>(dt, 0), seq_++, slot, a.version});
    std::push_heap(heap_.begin(), heap_.end(), Later());
  }

  void launch(OpId op) {
    r_.ops[op].launch = Time::ns(now_);
    const InstanceId inst = g_.instance_of(op);
    if (inst == kNoInstance) {
      const std::uint32_t slot = alloc_slot();
      Activity& a = slots_[slot];
      const Time t = standalone_time(op);
      r_.ops[op].alone = t;
      a.remaining = static_cast<double>(t.count_ns());
      a.rate = 1.0;
      a.t_last = now_;
      a.subject = op;
      a.is_instance = false;
      r_.ops[op].start = Time::ns(now_);
      note_start(op);
      if (opt_.contention) {
        add_active(w_.rank_of(op), op, false, slot);
        schedule(slot);
        refresh_rank(w_.rank_of(op));
      } else {
        schedule(slot);
      }
      return;
    }
    if (opt_.contention) {
      add_active(w_.rank_of(op), op, true, kNoSlot);
      refresh_rank(w_.rank_of(op));
    }
    const auto members = g_.members(inst);
    InstanceState& st = instances_[inst];
    st.max_duration_ns = std::max(st.max_duration_ns, w_.duration_ns(op));
    if (++st.arrived < members.size()) {
      return;
    }
    // Everyone is here: the instance starts now. Members' start and alone times are stored when
    // it ends, with their end (same cache line), so starting touches only the members list.
    const std::uint32_t slot = alloc_slot();
    Activity& a = slots_[slot];
    const Time t = instance_time(inst);
    st.start_ns = now_;
    st.alone_ns = t.count_ns();
    a.remaining = static_cast<double>(t.count_ns());
    a.rate = 1.0;
    a.t_last = now_;
    a.subject = inst;
    a.is_instance = true;
    for (OpId m : members) {
      note_start(m);
    }
    if (opt_.contention) {
      instance_factors_[inst].assign(members.size(), 1.0);
      schedule(slot);
      for (OpId m : members) {
        set_waiting(w_.rank_of(m), m, false, slot);
        refresh_rank(w_.rank_of(m));
      }
    } else {
      schedule(slot);
    }
  }

  void finish(std::uint32_t slot) {
    Activity& a = slots_[slot];
    ++a.version;  // any other queued event for this slot is now stale
    const bool is_instance = a.is_instance;
    const std::uint32_t subject = a.subject;
    free_.push_back(slot);
    if (!is_instance) {
      record_end(subject);
      if (opt_.contention) {
        remove_active(w_.rank_of(subject), subject);
        refresh_rank(w_.rank_of(subject));
      }
      complete(subject);
      return;
    }
    const auto members = g_.members(subject);
    const InstanceState& st = instances_[subject];
    for (OpId m : members) {
      r_.ops[m].start = Time::ns(st.start_ns);
      r_.ops[m].alone = Time::ns(st.alone_ns);
      record_end(m);
    }
    if (opt_.contention) {
      instance_factors_.erase(subject);
      for (OpId m : members) {
        remove_active(w_.rank_of(m), m);
        refresh_rank(w_.rank_of(m));
      }
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

  // Ops present on each rank, with the slot of their activity (kNoSlot while waiting).
  struct RankActive {
    std::vector<ActiveOp> ops;
    std::vector<std::uint32_t> slots;
  };

  void add_active(Rank r, OpId op, bool waiting, std::uint32_t slot) {
    active_[r].ops.push_back({op, waiting});
    active_[r].slots.push_back(slot);
  }

  void set_waiting(Rank r, OpId op, bool waiting, std::uint32_t slot) {
    RankActive& ra = active_[r];
    for (std::size_t i = 0; i < ra.ops.size(); ++i) {
      if (ra.ops[i].op == op) {
        ra.ops[i].waiting = waiting;
        ra.slots[i] = slot;
      }
    }
  }

  void remove_active(Rank r, OpId op) {
    RankActive& ra = active_[r];
    for (std::size_t i = 0; i < ra.ops.size(); ++i) {
      if (ra.ops[i].op == op) {
        ra.ops.erase(ra.ops.begin() + static_cast<std::ptrdiff_t>(i));
        ra.slots.erase(ra.slots.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
    }
  }

  // Asks the model for new speed factors on rank r and reschedules what changed.
  void refresh_rank(Rank r) {
    const RankActive& ra = active_[r];
    if (ra.ops.empty()) {
      return;
    }
    factors_.assign(ra.ops.size(), 1.0);
    opt_.contention->speed_factors(w_, r, ra.ops, factors_);
    for (std::size_t i = 0; i < ra.ops.size(); ++i) {
      if (ra.ops[i].waiting) {
        continue;
      }
      const double f = factors_[i];
      const OpId op = ra.ops[i].op;
      if (!(f > 0.0 && f <= 1.0)) {
        throw Error(
            fmt::format("contention model '{}' gave speed factor {} to {}; factors must be "
                        "in (0, 1]",
                        opt_.contention->name(), f, w_.describe(op)));
      }
      const std::uint32_t slot = ra.slots[i];
      Activity& a = slots_[slot];
      double rate = f;
      if (a.is_instance) {
        const auto members = g_.members(a.subject);
        const auto pos = static_cast<std::size_t>(std::find(members.begin(), members.end(), op) -
                                                  members.begin());
        std::vector<double>& fs = instance_factors_[a.subject];
        fs[pos] = f;
        rate = *std::min_element(fs.begin(), fs.end());
      }
      set_rate(slot, rate);
    }
  }

  void set_rate(std::uint32_t slot, double rate) {
    Activity& a = slots_[slot];
    if (rate == a.rate) {
      return;
    }
    a.remaining = std::max(0.0, a.remaining - static_cast<double>(now_ - a.t_last) * a.rate);
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

  SimResult r_;
  std::int64_t now_ = 0;
  std::uint64_t seq_ = 0;
  OpId finished_ = 0;
  Fingerprint fp_;
  std::vector<Event> heap_;
  std::vector<Activity> slots_;
  std::vector<std::uint32_t> free_;
  // Per op: unfinished predecessors (stream order + deps) in the low bits, and two flags that
  // save the hot path from touching the stream and dependents arrays.
  static constexpr std::uint32_t kLastInStream = 1u << 31;
  static constexpr std::uint32_t kHasDependents = 1u << 30;
  static constexpr std::uint32_t kCountMask = kHasDependents - 1;
  std::vector<std::uint32_t> pending_;
  struct InstanceState {
    std::int64_t max_duration_ns = traces::kNoDuration;  // over the members launched so far
    std::int64_t start_ns = 0;
    std::int64_t alone_ns = 0;
    std::uint32_t arrived = 0;  // members launched so far
  };
  std::vector<InstanceState> instances_;

  // Contention state.
  std::vector<RankActive> active_;  // per rank
  std::vector<double> factors_;
  std::unordered_map<InstanceId, std::vector<double>> instance_factors_;  // running instances
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
