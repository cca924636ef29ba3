// Least-squares calibration of the collective model's parameters (see fit.hpp).
#include "lagom/calibrate/fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <sstream>

#include "lagom/common/error.hpp"
#include "lagom/sim/collective_model.hpp"
#include "lagom/topologies/communicator.hpp"
#include "lagom/topologies/nccl_comm_info.hpp"

namespace lagom::calibrate {
namespace {

// A fittable parameter: where it lives in a profile, whether the model is linear in it or in
// its inverse (bandwidths and efficiencies divide), and its plausible range.
struct Param {
  std::string name;
  std::function<hardware::Measured&(hardware::HardwareProfile&)> at;
  bool inverse = false;
  double lo = 0;
  double hi = 0;
  double prior_weight = 1;  // multiplies the ridge term
};

std::vector<Param> fittable_params() {
  using Get = std::function<hardware::Measured&(hardware::HardwareProfile&)>;
  std::vector<Param> ps;
  // The launch cost is anchored to its prior (NCCL's base latency): in logs that reach small
  // sizes it is confounded with hop latencies, and a large fixed cost that one network (EFA's,
  // say) shows belongs to that network's hops, not to every collective on the GPU.
  ps.push_back({"collective.launch_us",
                Get([](hardware::HardwareProfile& p) -> hardware::Measured& {
                  return p.collective.launch_us;
                }),
                false, 0.5, 500, 1e4});
  ps.push_back({"collective.per_channel_us",
                Get([](hardware::HardwareProfile& p) -> hardware::Measured& {
                  return p.collective.per_channel_us;
                }),
                false, 0, 5});
  ps.push_back({"collective.nvls_efficiency",
                Get([](hardware::HardwareProfile& p) -> hardware::Measured& {
                  return p.collective.nvls_efficiency;
                }),
                true, 0.05, 1.5});
  ps.push_back({"collective.nvls_step_us",
                Get([](hardware::HardwareProfile& p) -> hardware::Measured& {
                  return p.collective.nvls_step_us;
                }),
                false, 0, 100, 100.0});  // anchored like the other intra-node hop latencies
  ps.push_back({"collective.nvls_chunk_us",
                Get([](hardware::HardwareProfile& p) -> hardware::Measured& {
                  return p.collective.nvls_chunk_us;
                }),
                false, 0, 50});
  // A channel is one CTA; these caps keep a fit that barely sees a protocol from inventing an
  // impossible one (LL moves 8-byte words with flags; LL128 and Simple stream whole lines).
  constexpr double kChannelCap[nccl::kProtocolCount] = {40, 80, 100};
  for (std::size_t k = 0; k < hardware::kProfiledLinks.size(); ++k) {
    const std::string lk =
        fmt::format("collective.links.{}", to_string(hardware::kProfiledLinks[k]));
    ps.push_back({lk + ".efficiency", Get([k](hardware::HardwareProfile& p) -> hardware::Measured& {
                    return p.collective.links[k].efficiency;
                  }),
                  true, 0.05, 1.2});
    for (int q = 0; q < nccl::kProtocolCount; ++q) {
      const std::string pq = fmt::format("{}.{}", lk, to_string(static_cast<nccl::Protocol>(q)));
      auto proto = [k, q](hardware::HardwareProfile& p) -> hardware::ProtocolParams& {
        return p.collective.links[k].protocols[q];
      };
      // Hop latencies inside a node are anchored to NCCL's hardware latencies (w = 100): a
      // multi-node log's small sizes cannot tell an NVLink hop from a network hop, and the
      // network's (e.g. EFA's tens of microseconds) must not leak into single-node predictions.
      ps.push_back(
          {pq + ".step_us", Get([proto](hardware::HardwareProfile& p) -> hardware::Measured& {
             return proto(p).step_us;
           }),
           false, 0, 100, hardware::kProfiledLinks[k] == nccl::LinkClass::kNetwork ? 1.0 : 100.0});
      ps.push_back({pq + ".chunk_us",
                    Get([proto](hardware::HardwareProfile& p) -> hardware::Measured& {
                      return proto(p).chunk_us;
                    }),
                    false, 0, 50});
      ps.push_back({pq + ".channel_GBps",
                    Get([proto](hardware::HardwareProfile& p) -> hardware::Measured& {
                      return proto(p).channel_GBps;
                    }),
                    true, 0.1, kChannelCap[q]});
    }
  }
  return ps;
}

double theta_of(const Param& p, hardware::HardwareProfile& prof) {
  const double v = p.at(prof).value;
  return p.inverse ? 1.0 / v : v;
}

void set_theta(const Param& p, hardware::HardwareProfile& prof, double theta) {
  double v = p.inverse ? 1.0 / std::max(theta, 1e-12) : theta;
  v = std::clamp(v, p.lo, p.hi);
  p.at(prof).value = v;
}

// One measured row with everything the model needs, prepared once.
struct Case {
  std::size_t input = 0;
  std::size_t row = 0;
  nccl::CollKind kind = nccl::CollKind::kAllReduce;
  std::int64_t bytes = 0;
  nccl::CommConfig config;
  double measured_us = 0;
  double nccl_model_us = 0;
  const topologies::CommunicatorInfo* comm = nullptr;
};

struct Prepared {
  std::vector<topologies::CommunicatorInfo> comms;
  std::vector<Case> cases;
};

Prepared prepare(const std::vector<FitInput>& inputs) {
  Prepared out;
  out.comms.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const FitInput& in = inputs[i];
    if (!in.log.collective) {
      throw Error(fmt::format(
          "{}: the log does not say which collective it measured (older nccl-tests print no "
          "'# Collective test starting:' line): pass --coll NAME, or put a line "
          "'collective: all_reduce' (and a '---' line) at the top of the log",
          in.name));
    }
    const auto kind = nccl::parse_coll_kind(std::string(to_string(*in.log.collective)));
    if (!kind) {
      throw Error(fmt::format("{}: collective '{}' is not one the model times", in.name,
                              to_string(*in.log.collective)));
    }
    const int nranks = in.log.nranks > 0 ? in.log.nranks : in.cluster.gpu_count();
    if (nranks > in.cluster.gpu_count()) {
      throw Error(fmt::format(
          "{}: the log has {} ranks but cluster '{}' with {} node(s) has {} "
          "GPUs; pass --nodes",
          in.name, nranks, in.cluster.name(), in.cluster.nodes(), in.cluster.gpu_count()));
    }
    std::vector<int> ranks(static_cast<std::size_t>(nranks));
    std::iota(ranks.begin(), ranks.end(), 0);
    out.comms.push_back(topologies::describe_communicator(in.cluster, ranks));
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const FitInput& in = inputs[i];
    const auto kind = *nccl::parse_coll_kind(std::string(to_string(*in.log.collective)));
    nccl::CommInfo info = topologies::nccl_comm_info(in.cluster, out.comms[i]);
    info.env = nccl_env_from_log(in.log);
    const nccl::Tables tables = nccl::tune_model(info);
    for (std::size_t r = 0; r < in.log.rows.size(); ++r) {
      const NcclTestsRow& row = in.log.rows[r];
      const auto& t = row.out_of_place ? row.out_of_place : row.in_place;
      if (!t || row.size_bytes <= 0 || t->time_us <= 0) {
        continue;
      }
      Case c;
      c.input = i;
      c.row = r;
      c.kind = kind;
      c.bytes = row.size_bytes;
      const nccl::Choice choice = nccl::choose(tables, kind, row.size_bytes);
      c.config = choice.config;
      c.nccl_model_us = choice.predicted_us;
      c.measured_us = t->time_us;
      c.comm = &out.comms[i];
      out.cases.push_back(c);
    }
  }
  if (out.cases.empty()) {
    throw Error("no usable rows in the given logs");
  }
  return out;
}

double predict(const hardware::HardwareProfile& prof, const Case& c) {
  return sim::CollectiveModel(prof, *c.comm).estimate(c.kind, c.bytes, c.config).time_us;
}

std::vector<FitRow> rows_of(const std::vector<FitInput>& inputs, const Prepared& prep,
                            const hardware::HardwareProfile& prior,
                            const hardware::HardwareProfile& fitted) {
  std::vector<FitRow> rows;
  for (const Case& c : prep.cases) {
    FitRow r;
    r.log = inputs[c.input].name;
    r.size_bytes = c.bytes;
    r.kind = c.kind;
    r.nranks = c.comm->nranks;
    r.config = c.config;
    r.measured_us = c.measured_us;
    r.prior_us = predict(prior, c);
    r.predicted_us = predict(fitted, c);
    r.nccl_model_us = c.nccl_model_us;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

double FitRow::measured_busbw_GBps() const {
  return static_cast<double>(size_bytes) / (measured_us * 1e3) * sim::busbw_factor(kind, nranks);
}
double FitRow::predicted_busbw_GBps() const {
  return static_cast<double>(size_bytes) / (predicted_us * 1e3) * sim::busbw_factor(kind, nranks);
}

nccl::Env nccl_env_from_log(const NcclTestsLog& log) {
  nccl::Env env;
  const auto text = log.meta("env");
  if (!text) {
    return env;
  }
  std::istringstream in{std::string(*text)};
  std::string tok;
  while (in >> tok) {
    while (!tok.empty() && (tok.back() == ',' || tok.back() == ';' || tok.back() == ')')) {
      tok.pop_back();
    }
    tok.erase(0, std::min(tok.size(), tok.find_first_not_of('(')));  // "(NCCL_X=1 ...)"
    const auto eq = tok.find('=');
    if (eq == std::string::npos) {
      continue;
    }
    const std::string key = tok.substr(0, eq);
    const std::string val = tok.substr(eq + 1);
    // What nccl-tests ran when the job forced it (e.g. NCCL_ALGO=Ring, NCCL_PROTO=^LL128).
    if (key == "NCCL_ALGO" || key == "NCCL_PROTO") {
      (key == "NCCL_ALGO" ? env.algo : env.proto) = val;
      continue;
    }
    char* end = nullptr;
    const long long v = std::strtoll(val.c_str(), &end, 10);
    if (end == val.c_str()) {
      continue;
    }
    if (key == "NCCL_BUFFSIZE") {
      env.buffsize_bytes = v;
    } else if (key == "NCCL_P2P_NET_CHUNKSIZE") {
      env.p2p_net_chunk_bytes = v;
    } else if (key == "NCCL_NVLS_CHUNKSIZE") {
      env.nvls_chunk_bytes = v;
    } else if (key == "NCCL_NVLSTREE_MAX_CHUNKSIZE") {
      env.nvlstree_max_chunk_bytes = v;
    } else if (key == "NCCL_NTHREADS") {
      env.nthreads = static_cast<int>(v);
    }
  }
  return env;
}

std::vector<FitRow> evaluate_profile(const hardware::HardwareProfile& profile,
                                     const std::vector<FitInput>& inputs) {
  const Prepared prep = prepare(inputs);
  return rows_of(inputs, prep, profile, profile);
}

FitResult fit_profile(const hardware::HardwareProfile& prior, const std::vector<FitInput>& inputs,
                      const FitOptions& options) {
  const Prepared prep = prepare(inputs);
  const std::vector<Param> params = fittable_params();
  const auto np = static_cast<Eigen::Index>(params.size());
  const auto nr = static_cast<Eigen::Index>(prep.cases.size());
  hardware::HardwareProfile cur = prior;
  hardware::HardwareProfile prior_copy = prior;
  Eigen::VectorXd theta0(np);
  for (Eigen::Index j = 0; j < np; ++j) {
    theta0[j] = theta_of(params[static_cast<std::size_t>(j)], prior_copy);
  }
  FitResult result;
  for (int it = 0; it < options.max_iterations; ++it) {
    // Gradient of each prediction w.r.t. each parameter (the model is piecewise linear in
    // theta, so a small one-sided difference is exact inside a piece).
    Eigen::MatrixXd A(nr + np, np);
    Eigen::VectorXd b(nr + np);
    Eigen::VectorXd theta(np);
    for (Eigen::Index j = 0; j < np; ++j) {
      theta[j] = theta_of(params[static_cast<std::size_t>(j)], cur);
    }
    for (Eigen::Index r = 0; r < nr; ++r) {
      const Case& c = prep.cases[static_cast<std::size_t>(r)];
      const double t = predict(cur, c);
      for (Eigen::Index j = 0; j < np; ++j) {
        const Param& p = params[static_cast<std::size_t>(j)];
        hardware::HardwareProfile probe = cur;
        const double h = std::max(std::abs(theta[j]) * 1e-6, 1e-12);
        set_theta(p, probe, theta[j] + h);
        const double actual_h = theta_of(p, probe) - theta[j];
        A(r, j) = actual_h != 0 ? (predict(probe, c) - t) / actual_h / c.measured_us : 0.0;
      }
      // Linear in theta: T = grad . theta + offset, where the offset is what no parameter
      // scales (the cluster's wire latencies). The residual equation grad . theta_new =
      // measured - offset is divided by measured for relative weighting.
      double homogeneous = 0;
      for (Eigen::Index j = 0; j < np; ++j) {
        homogeneous += A(r, j) * theta[j];
      }
      const double offset = t / c.measured_us - homogeneous;
      b[r] = 1.0 - offset;
    }
    for (Eigen::Index j = 0; j < np; ++j) {
      const double s = std::sqrt(options.ridge * params[static_cast<std::size_t>(j)].prior_weight);
      A.row(nr + j).setZero();
      const double scale = std::max(std::abs(theta0[j]), 1e-9);
      A(nr + j, j) = s / scale;
      b[nr + j] = s * theta0[j] / scale;
    }
    const Eigen::VectorXd next = A.colPivHouseholderQr().solve(b);
    double change = 0;
    for (Eigen::Index j = 0; j < np; ++j) {
      const Param& p = params[static_cast<std::size_t>(j)];
      const double before = theta_of(p, cur);
      set_theta(p, cur, next[j]);
      const double after = theta_of(p, cur);
      change = std::max(change, std::abs(after - before) / std::max(std::abs(before), 1e-9));
    }
    result.iterations = it + 1;
    if (change < 1e-6) {
      break;
    }
  }
  // Record provenance of what moved.
  for (const Param& p : params) {
    hardware::Measured& m = p.at(cur);
    const double before = p.at(prior_copy).value;
    if (std::abs(m.value - before) > 1e-9 * std::max(1.0, std::abs(before))) {
      result.changed.push_back(fmt::format("{}: {:.4g} -> {:.4g}", p.name, before, m.value));
      m.source = options.source_note.empty()
                     ? "lagom calibrate fit"
                     : fmt::format("lagom calibrate fit: {}", options.source_note);
      // Keep the prior's provenance visible.
      m.source += fmt::format(" (prior {:.4g}: {})", before, p.at(prior_copy).source);
    }
  }
  result.profile = cur;
  result.rows = rows_of(inputs, prep, prior, cur);
  return result;
}

ErrorSummary summarize_errors(const std::vector<FitRow>& rows, std::int64_t min_bytes,
                              std::int64_t max_bytes) {
  std::vector<double> errs;
  for (const FitRow& r : rows) {
    if (r.size_bytes >= min_bytes && r.size_bytes < max_bytes) {
      errs.push_back(std::abs(r.rel_error()));
    }
  }
  ErrorSummary s;
  s.rows = static_cast<int>(errs.size());
  if (errs.empty()) {
    return s;
  }
  std::sort(errs.begin(), errs.end());
  const std::size_t m = errs.size() / 2;
  s.median = errs.size() % 2 ? errs[m] : 0.5 * (errs[m - 1] + errs[m]);
  s.max = errs.back();
  return s;
}

}  // namespace lagom::calibrate
