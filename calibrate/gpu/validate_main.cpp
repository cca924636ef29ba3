// lagom-validate: replays a workload (docs/formats/workload.md) on real GPUs and writes what each
// op measured (calibrate/measured.hpp), for `lagom validate` to compare with the simulation.
//
//   lagom-validate --workload W.json --out M.json [--steps 10] [--warmup 3] [--replay-rank K]
//                  [--rank R --nranks N --id-file PATH] [--plan P.json [--tuner-plugin SO]]
//
// One process per workload rank (flags, srun or mpirun), each on its own GPU; with one process
// and a multi-rank workload, rank K (default 0) alone, its communication stood in for by the
// occupier for ops that give `duration_us` (no NCCL on one GPU) and left out otherwise.
//
//  * One CUDA stream per workload stream; ops issued in dependency order (stream order plus
//    deps, smallest op id first among the ready), a dependency on another stream an event wait.
//  * Compute ops become kernels sized by their work: a cuBLASLt BF16 GEMM for gemm and attention
//    ops (its output tiles the op's blocks, k from its FLOPs), a streaming kernel over its HBM
//    bytes for the other classes, a spin kernel for one known only by its duration; memcpy a
//    device-to-device copy.
//  * Collectives run on one NCCL communicator per group (ncclCommSplit of the world), with the
//    group's pinned channel count through ncclConfig_t; algorithm and protocol through the tuner
//    plugin when --plan is given (libnccl-tuner-lagom.so beside this binary by default). With
//    NCCL_DEBUG=INFO, NCCL's log and the plugin's say what each call ran with.
//  * Every op is timed with events against a step-start event; after --warmup steps, --steps
//    steps are timed and each op's start and end are their medians. With several ranks, each
//    step starts after a one-element all-reduce on the world communicator, so that the ranks'
//    step clocks agree to within that all-reduce's completion skew (microseconds): `lagom
//    validate` compares a collective's members from the last one's arrival.
// Exit status 77 when there is no CUDA device.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "gpu_common.hpp"
#include "lagom/calibrate/measured.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/files.hpp"
#include "lagom/traces/execution_graph.hpp"
#include "lagom/traces/workload.hpp"
#include "lagom/traces/workload_json.hpp"
#include "launch.cuh"

namespace lagom::gpu {
namespace {

using traces::OpId;
using traces::OpKind;
using traces::Workload;

struct Options {
  std::string workload;
  std::string out;
  int steps = 10;
  int warmup = 3;
  int replay_rank = 0;
  int rank = -1;
  int nranks = 0;
  int device = -1;
  std::string id_file;
  std::string plan;
  std::string tuner_plugin;
  std::string argv0;
};

[[noreturn]] void usage(const std::string& what) {
  std::fprintf(stderr,
               "lagom-validate: %s\nusage: lagom-validate --workload W.json --out M.json "
               "[--steps 10] [--warmup 3] [--replay-rank K] [--device D] [--rank R --nranks N "
               "--id-file PATH] [--plan P.json [--tuner-plugin SO]]\n",
               what.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  o.argv0 = argv[0];
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) {
      usage(std::string(argv[i]) + " needs a value");
    }
    return argv[++i];
  };
  auto number = [&](int& i, int lo, int hi) {
    const std::string v = value(i);
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (end == v.c_str() || *end != '\0' || n < lo || n > hi) {
      usage(fmt::format("{} '{}' must be a whole number in {}..{}", argv[i - 1], v, lo, hi));
    }
    return static_cast<int>(n);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--workload") {
      o.workload = value(i);
    } else if (a == "--out") {
      o.out = value(i);
    } else if (a == "--steps") {
      o.steps = number(i, 1, 100000);
    } else if (a == "--warmup") {
      o.warmup = number(i, 0, 100000);
    } else if (a == "--replay-rank") {
      o.replay_rank = number(i, 0, 1 << 30);
    } else if (a == "--rank") {
      o.rank = number(i, 0, 1 << 30);
    } else if (a == "--nranks") {
      o.nranks = number(i, 1, 1 << 30);
    } else if (a == "--device") {
      o.device = number(i, 0, 1024);
    } else if (a == "--id-file") {
      o.id_file = value(i);
    } else if (a == "--plan") {
      o.plan = value(i);
    } else if (a == "--tuner-plugin") {
      o.tuner_plugin = value(i);
    } else {
      usage("unknown option '" + a + "'");
    }
  }
  if (o.workload.empty() || o.out.empty()) {
    usage("--workload and --out are required");
  }
  return o;
}

// What one op of this rank does on the GPU, prepared before the timed steps.
struct Action {
  enum class Kind { kNone, kSpin, kGemm, kStream, kMemcpy, kColl, kOccupier } kind = Kind::kNone;
  std::uint64_t ns = 0;
  int blocks = 1;
  const Gemm* gemm = nullptr;
  std::size_t bytes = 0;
  ncclComm_t comm = nullptr;
  int peer = -1;  // p2p peer or root, as a position in the communicator
  int comm_size = 1;
};

class Replay {
 public:
  Replay(const Options& o, const Workload& w, traces::Rank rank, const RankInfo& ri, bool nccl)
      : o_(o), w_(w), rank_(rank), nccl_(nccl) {
    // A rank's streams are contiguous, and so are each stream's ops.
    first_ = w.stream(w.first_stream(rank)).first_op;
    const traces::Stream& tail = w.stream(w.last_stream(rank) - 1);
    last_ = tail.first_op + tail.op_count;
    LAGOM_CUDA(cudaSetDevice(o.device >= 0 ? o.device : ri.local_rank));
    LAGOM_CUDA(cudaGetDevice(&device_));
    LAGOM_CUDA(cudaGetDeviceProperties(&prop_, device_));
    LAGOM_CUBLAS(cublasLtCreate(&lt_));
    for (traces::StreamId s = w.first_stream(rank); s < w.last_stream(rank); ++s) {
      cudaStream_t st = nullptr;
      LAGOM_CUDA(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
      streams_.push_back(st);
    }
    LAGOM_CUDA(cudaStreamCreateWithFlags(&root_, cudaStreamNonBlocking));
    if (nccl_) {
      connect(ri);
    }
    prepare();
  }

  ~Replay() {
    for (ncclComm_t c : comms_) {
      if (c != nullptr) {
        ncclCommDestroy(c);
      }
    }
    if (world_ != nullptr) {
      ncclCommDestroy(world_);
    }
    cublasLtDestroy(lt_);
  }

  calibrate::MeasuredStep run() {
    const OpId first = first_;
    const OpId last = last_;
    std::vector<std::vector<double>> starts(last - first), ends(last - first);
    std::vector<double> steps;
    for (int step = 0; step < o_.warmup + o_.steps; ++step) {
      const bool timed = step >= o_.warmup;
      issue_step();
      LAGOM_CUDA(cudaDeviceSynchronize());
      double step_end = 0;
      for (OpId op = first; op < last; ++op) {
        if (actions_[op - first].kind == Action::Kind::kNone) {
          continue;
        }
        float a = 0;
        float b = 0;
        LAGOM_CUDA(cudaEventElapsedTime(&a, step_start_, before_[op - first]));
        LAGOM_CUDA(cudaEventElapsedTime(&b, step_start_, after_[op - first]));
        if (timed) {
          starts[op - first].push_back(a * 1e3);
          ends[op - first].push_back(b * 1e3);
        }
        step_end = std::max(step_end, b * 1e3);
      }
      if (timed) {
        steps.push_back(step_end);
      }
    }
    calibrate::MeasuredStep m;
    m.workload = o_.workload;
    m.gpu = prop_.name;
    m.date = utc_now();
    m.host = host_name();
    m.steps = o_.steps;
    m.standins = standins_ > 0;
    m.step_time_us = calibrate::median(steps);
    for (OpId op = first; op < last; ++op) {
      if (actions_[op - first].kind == Action::Kind::kNone) {
        continue;
      }
      m.ops.push_back(calibrate::MeasuredOp{std::string(w_.name(op)), rank_,
                                            calibrate::median(starts[op - first]),
                                            calibrate::median(ends[op - first])});
    }
    return m;
  }

  int skipped() const { return skipped_; }

 private:
  void connect(const RankInfo& ri) {
    if (!o_.plan.empty()) {
      // The tuner plugin applies the plan's algorithm and protocol (and channels) per call.
      std::string plugin = o_.tuner_plugin;
      if (plugin.empty()) {
        plugin = (std::filesystem::path(o_.argv0).parent_path() / ".." / "lib" /
                  "libnccl-tuner-lagom.so")
                     .string();
      }
      setenv("NCCL_TUNER_PLUGIN", plugin.c_str(), 1);
      setenv("LAGOM_TUNER_PLAN", o_.plan.c_str(), 1);
    }
    const ncclUniqueId id = shared_unique_id(ri, o_.id_file);
    LAGOM_NCCL(ncclCommInitRank(&world_, ri.nranks, id, ri.rank));
    // One communicator per group, split from the world in the workload's group order (every rank
    // takes part in every split; NCCL_SPLIT_NOCOLOR where it is not a member). A group whose
    // pinned ops agree on a channel count gets it through minCTAs = maxCTAs.
    comms_.assign(w_.groups().size(), nullptr);
    for (std::size_t g = 0; g < w_.groups().size(); ++g) {
      const traces::Group& grp = w_.groups()[g];
      const auto at = std::find(grp.ranks.begin(), grp.ranks.end(), rank_);
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      const int nc = pinned_channels(static_cast<traces::GroupId>(g));
      if (nc > 0) {
        cfg.minCTAs = nc;
        cfg.maxCTAs = nc;
      }
      LAGOM_NCCL(ncclCommSplit(world_, at == grp.ranks.end() ? NCCL_SPLIT_NOCOLOR : 0,
                               static_cast<int>(at - grp.ranks.begin()), &comms_[g], &cfg));
    }
  }

  int pinned_channels(traces::GroupId g) const {
    int nc = 0;
    for (OpId op = 0; op < w_.op_count(); ++op) {
      if (w_.group(op) == g) {
        if (const nccl::ConfigOverride* c = w_.pinned_config(op); c && c->nchannels > 0) {
          if (nc != 0 && nc != c->nchannels) {
            return 0;  // they disagree: NCCL's own
          }
          nc = c->nchannels;
        }
      }
    }
    return nc;
  }

  // The GEMM an op of `flops` over `blocks` output tiles of 128 x 128 stands for: square-ish
  // tiles, k from the FLOPs (at least 16, a multiple of 8).
  const Gemm& gemm_for(double flops, double blocks) {
    const double tiles = std::max(1.0, blocks);
    const std::int64_t side = 128 * static_cast<std::int64_t>(std::ceil(std::sqrt(tiles)));
    const double k = flops / (2.0 * static_cast<double>(side) * static_cast<double>(side));
    const std::int64_t kk = std::max<std::int64_t>(16, (static_cast<std::int64_t>(k) + 7) / 8 * 8);
    const auto key = std::make_pair(side, kk);
    auto it = gemms_.find(key);
    if (it == gemms_.end()) {
      it = gemms_.emplace(key, std::make_unique<Gemm>(lt_, side, side, kk, std::size_t{32} << 20))
               .first;
    }
    return *it->second;
  }

  void prepare() {
    const OpId first = first_;
    const OpId last = last_;
    actions_.resize(last - first);
    scratch_bytes_.assign(streams_.size(), 1 << 20);
    for (OpId op = first; op < last; ++op) {
      Action& a = actions_[op - first];
      const std::size_t s = w_.stream_of(op) - w_.first_stream(rank_);
      const OpKind k = w_.kind(op);
      const std::int64_t duration = w_.duration_ns(op);
      const auto bytes = static_cast<std::size_t>(std::max<std::int64_t>(0, w_.bytes(op)));
      if (k == OpKind::kCompute) {
        const traces::ComputeShape* sh = w_.compute_shape(op);
        const bool tensor = sh && (sh->cls == traces::ComputeClass::kGemm ||
                                   sh->cls == traces::ComputeClass::kAttention);
        if (duration == traces::kNoDuration && tensor &&
            sh->precision != traces::Precision::kBf16) {
          // Replaying it as a BF16 GEMM would time another kernel than the one modelled.
          throw Error(fmt::format(
              "{}: an {} {} kernel; lagom-validate replays tensor kernels as "
              "BF16 cuBLASLt GEMMs only, so validate the bf16 step (or give "
              "the op a duration_us)",
              w_.describe(op), traces::to_string(sh->precision), traces::to_string(sh->cls)));
        }
        if (duration != traces::kNoDuration) {
          a.kind = Action::Kind::kSpin;
          a.ns = static_cast<std::uint64_t>(duration);
          a.blocks = prop_.multiProcessorCount;
        } else if (tensor && sh->flops > 0) {
          a.kind = Action::Kind::kGemm;
          a.gemm = &gemm_for(sh->flops, sh->blocks);
          scratch_bytes_[s] = std::max(scratch_bytes_[s], a.gemm->operand_bytes());
        } else if (bytes > 0 || (sh && sh->flops > 0)) {
          a.kind = Action::Kind::kStream;
          a.bytes = bytes > 0 ? bytes : static_cast<std::size_t>(sh->flops);  // 8 FLOPs per 8 B
          scratch_bytes_[s] = std::max(scratch_bytes_[s], a.bytes);
        } else {
          throw Error(fmt::format("{}: nothing to replay it from (no duration_us, flops or bytes)",
                                  w_.describe(op)));
        }
      } else if (k == OpKind::kMemcpy) {
        a.kind = Action::Kind::kMemcpy;
        a.bytes = bytes;
        scratch_bytes_[s] = std::max(scratch_bytes_[s], 2 * bytes);
      } else if (!nccl_) {
        if (duration == traces::kNoDuration) {
          ++skipped_;  // no NCCL on one GPU and nothing to stand in for
          continue;
        }
        const nccl::ConfigOverride* pin = w_.pinned_config(op);
        a.kind = Action::Kind::kOccupier;
        a.ns = static_cast<std::uint64_t>(duration);
        a.blocks = pin && pin->nchannels > 0 ? pin->nchannels : 2;
        a.bytes = std::size_t{512} << 10;  // chunk
        scratch_bytes_[s] = std::max(scratch_bytes_[s], 8 * a.bytes * a.blocks);
        ++standins_;
      } else {
        a.kind = Action::Kind::kColl;
        a.bytes = bytes;
        const traces::GroupId g = w_.group(op);
        a.comm = g == traces::kNoGroup ? world_ : comms_[static_cast<std::size_t>(g)];
        const std::vector<traces::Rank>* members =
            g == traces::kNoGroup ? nullptr : &w_.groups()[static_cast<std::size_t>(g)].ranks;
        a.comm_size =
            members ? static_cast<int>(members->size()) : static_cast<int>(w_.rank_count());
        if (traces::is_p2p(k) || traces::has_root(k)) {
          const auto peer = static_cast<traces::Rank>(w_.peer(op));
          a.peer = members ? static_cast<int>(std::find(members->begin(), members->end(), peer) -
                                              members->begin())
                           : static_cast<int>(peer);
        }
        scratch_bytes_[s] = std::max(scratch_bytes_[s], 2 * bytes);
      }
    }
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      scratch_.push_back(std::make_unique<DeviceBuffer>(scratch_bytes_[s]));
    }
    before_.resize(actions_.size());
    after_.resize(actions_.size());
    for (std::size_t i = 0; i < actions_.size(); ++i) {
      LAGOM_CUDA(cudaEventCreate(&before_[i]));
      LAGOM_CUDA(cudaEventCreate(&after_[i]));
    }
    LAGOM_CUDA(cudaEventCreate(&step_start_));
    if (world_ != nullptr) {
      barrier_ = std::make_unique<DeviceBuffer>(sizeof(float));
    }
    order_ = issue_order();
  }

  // This rank's ops in an order that respects stream order and deps: the smallest ready id first.
  std::vector<OpId> issue_order() const {
    const OpId first = first_;
    const OpId last = last_;
    std::vector<int> pending(last - first, 0);
    std::vector<std::vector<OpId>> next(last - first);
    for (OpId op = first; op < last; ++op) {
      if (w_.position(op) > 0) {
        ++pending[op - first];
        next[op - 1 - first].push_back(op);
      }
      for (OpId d : w_.deps(op)) {
        if (w_.rank_of(d) != rank_) {
          throw Error(
              fmt::format("{} depends on {} of another rank; lagom-validate replays "
                          "dependencies within a rank (ranks meet in collectives)",
                          w_.describe(op), w_.describe(d)));
        }
        ++pending[op - first];
        next[d - first].push_back(op);
      }
    }
    std::priority_queue<OpId, std::vector<OpId>, std::greater<>> ready;
    for (OpId op = first; op < last; ++op) {
      if (pending[op - first] == 0) {
        ready.push(op);
      }
    }
    std::vector<OpId> order;
    while (!ready.empty()) {
      const OpId op = ready.top();
      ready.pop();
      order.push_back(op);
      for (OpId n : next[op - first]) {
        if (--pending[n - first] == 0) {
          ready.push(n);
        }
      }
    }
    return order;
  }

  void issue_step() {
    const OpId first = first_;
    if (world_ != nullptr) {  // the ranks' steps start together (see the header)
      LAGOM_NCCL(ncclAllReduce(barrier_->ptr, barrier_->ptr, 1, ncclFloat, ncclSum, world_, root_));
    }
    LAGOM_CUDA(cudaEventRecord(step_start_, root_));
    for (cudaStream_t s : streams_) {
      LAGOM_CUDA(cudaStreamWaitEvent(s, step_start_, 0));
    }
    for (OpId op : order_) {
      const std::size_t i = op - first;
      const std::size_t si = w_.stream_of(op) - w_.first_stream(rank_);
      cudaStream_t s = streams_[si];
      for (OpId d : w_.deps(op)) {
        if (w_.stream_of(d) != w_.stream_of(op) &&
            actions_[d - first].kind != Action::Kind::kNone) {
          LAGOM_CUDA(cudaStreamWaitEvent(s, after_[d - first], 0));
        }
      }
      const Action& a = actions_[i];
      if (a.kind == Action::Kind::kNone) {
        continue;
      }
      LAGOM_CUDA(cudaEventRecord(before_[i], s));
      enqueue(op, a, *scratch_[si], s);
      LAGOM_CUDA(cudaEventRecord(after_[i], s));
    }
  }

  void enqueue(OpId op, const Action& a, const DeviceBuffer& buf, cudaStream_t s) {
    char* base = buf.as<char>();
    switch (a.kind) {
      case Action::Kind::kNone:
        return;
      case Action::Kind::kSpin:
        launch_spin(a.ns, a.blocks, s);
        break;
      case Action::Kind::kGemm: {
        // A, B and C side by side in the stream's scratch.
        const std::size_t third = a.gemm->operand_bytes() / 3 / 256 * 256;
        a.gemm->run(base, base + third, base + 2 * third, s);
        break;
      }
      case Action::Kind::kStream:
        launch_stream(reinterpret_cast<const float*>(base), reinterpret_cast<float*>(base),
                      a.bytes / 8, s);
        break;
      case Action::Kind::kMemcpy:
        LAGOM_CUDA(cudaMemcpyAsync(base + a.bytes, base, a.bytes, cudaMemcpyDeviceToDevice, s));
        break;
      case Action::Kind::kOccupier:
        launch_timed_occupier(base, base + 4 * a.bytes * a.blocks, a.bytes, a.blocks, a.ns, s);
        break;
      case Action::Kind::kColl:
        collective(op, a, base, s);
        break;
    }
    LAGOM_CUDA(cudaGetLastError());
  }

  void collective(OpId op, const Action& a, char* base, cudaStream_t s) {
    const std::size_t count = a.bytes / 2;  // bfloat16 elements of the whole buffer
    const std::size_t n = static_cast<std::size_t>(a.comm_size);
    char* send = base;
    char* recv = base + a.bytes;
    switch (w_.kind(op)) {
      case OpKind::kAllReduce:
        LAGOM_NCCL(ncclAllReduce(send, recv, count, ncclBfloat16, ncclSum, a.comm, s));
        break;
      case OpKind::kAllGather:
        LAGOM_NCCL(ncclAllGather(send, recv, count / n, ncclBfloat16, a.comm, s));
        break;
      case OpKind::kReduceScatter:
        LAGOM_NCCL(ncclReduceScatter(send, recv, count / n, ncclBfloat16, ncclSum, a.comm, s));
        break;
      case OpKind::kBroadcast:
        LAGOM_NCCL(ncclBroadcast(send, recv, count, ncclBfloat16, a.peer, a.comm, s));
        break;
      case OpKind::kReduce:
        LAGOM_NCCL(ncclReduce(send, recv, count, ncclBfloat16, ncclSum, a.peer, a.comm, s));
        break;
      case OpKind::kAllToAll: {
        const std::size_t per = a.bytes / n;
        LAGOM_NCCL(ncclGroupStart());
        for (std::size_t p = 0; p < n; ++p) {
          LAGOM_NCCL(ncclSend(send + p * per, per, ncclChar, static_cast<int>(p), a.comm, s));
          LAGOM_NCCL(ncclRecv(recv + p * per, per, ncclChar, static_cast<int>(p), a.comm, s));
        }
        LAGOM_NCCL(ncclGroupEnd());
        break;
      }
      case OpKind::kSend:
        LAGOM_NCCL(ncclSend(send, a.bytes, ncclChar, a.peer, a.comm, s));
        break;
      case OpKind::kRecv:
        LAGOM_NCCL(ncclRecv(recv, a.bytes, ncclChar, a.peer, a.comm, s));
        break;
      default:
        break;
    }
  }

  const Options& o_;
  const Workload& w_;
  traces::Rank rank_;
  bool nccl_;
  OpId first_ = 0;
  OpId last_ = 0;
  int device_ = 0;
  cudaDeviceProp prop_{};
  cublasLtHandle_t lt_ = nullptr;
  std::vector<cudaStream_t> streams_;
  cudaStream_t root_ = nullptr;
  ncclComm_t world_ = nullptr;
  std::vector<ncclComm_t> comms_;
  std::vector<Action> actions_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<Gemm>> gemms_;
  std::vector<std::size_t> scratch_bytes_;
  std::vector<std::unique_ptr<DeviceBuffer>> scratch_;
  std::vector<cudaEvent_t> before_, after_;
  cudaEvent_t step_start_ = nullptr;
  std::unique_ptr<DeviceBuffer> barrier_;  // the step-start all-reduce's element
  std::vector<OpId> order_;
  int skipped_ = 0;
  int standins_ = 0;
};

int run(const Options& o) {
  const Workload w = traces::load_workload_file(o.workload);
  traces::analyze(w, o.workload);  // a workload the simulator would refuse is refused here too
  const RankInfo ri = rank_info(o.rank, o.nranks);
  const bool nccl = ri.nranks > 1;
  if (nccl && static_cast<std::uint32_t>(ri.nranks) != w.rank_count()) {
    throw Error(fmt::format("{} has {} ranks; run {} processes (one per GPU), not {}", o.workload,
                            w.rank_count(), w.rank_count(), ri.nranks));
  }
  if (nccl && o.id_file.empty()) {
    throw Error(fmt::format("{} ranks need --id-file PATH on a shared file system", ri.nranks));
  }
  if (!nccl && static_cast<std::uint32_t>(o.replay_rank) >= w.rank_count()) {
    throw Error(fmt::format("--replay-rank {}: {} has ranks 0..{}", o.replay_rank, o.workload,
                            w.rank_count() - 1));
  }
  if (device_count() == 0) {
    std::fprintf(stderr, "lagom-validate: no CUDA device (nothing to replay on)\n");
    return kNoDevice;
  }
  const auto rank = static_cast<traces::Rank>(nccl ? ri.rank : o.replay_rank);
  Replay replay(o, w, rank, ri, nccl);
  const calibrate::MeasuredStep m = replay.run();
  std::string out = o.out;
  if (nccl) {
    const std::filesystem::path p(o.out);
    out = (p.parent_path() /
           fmt::format("{}.rank{}{}", p.stem().string(), ri.rank, p.extension().string()))
              .string();
  }
  write_file(out, calibrate::measured_to_json(m), "measurements");
  std::fprintf(stderr,
               "lagom-validate: rank %u: %zu ops over %d steps (median step %.1f us) -> %s\n", rank,
               m.ops.size(), m.steps, m.step_time_us, out.c_str());
  if (replay.skipped() > 0) {
    std::fprintf(stderr,
                 "lagom-validate: %d communication op(s) left out: one GPU runs no NCCL, and they "
                 "give no duration_us to stand in for\n",
                 replay.skipped());
  }
  return 0;
}

}  // namespace
}  // namespace lagom::gpu

int main(int argc, char** argv) {
  const lagom::gpu::Options o = lagom::gpu::parse(argc, argv);
  try {
    return lagom::gpu::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lagom-validate: error: %s\n", e.what());
    return 1;
  }
}
