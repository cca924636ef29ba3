// Fitting GPU, compute and contention coefficients to a measurement bundle (see gpu_fit.hpp).
#include "lagom/calibrate/gpu_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <tuple>

#include "lagom/common/error.hpp"
#include "lagom/sim/compute_model.hpp"

namespace lagom::calibrate {
namespace {

using hardware::HardwareProfile;
using hardware::Measured;
using traces::ComputeClass;
using traces::ComputeShape;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kNcclCtaThreads = 544;  // NCCL's 512 threads plus its sync warp (occupier CTAs)
// The ranges a profile may hold (hardware/src/profile.cpp's reader).
constexpr double kMinEfficiency = 0.001;
constexpr double kMaxLaunchUs = 1e4;
constexpr double kMaxL2Pollution = 10;

// A model's prediction against a measured median.
struct Point {
  std::function<double(const HardwareProfile&)> predict_us;
  double measured_us = 0;
};

double squared_log_error(const HardwareProfile& p, const std::vector<Point>& points) {
  double sum = 0;
  for (const Point& pt : points) {
    const double r = std::log(std::max(1e-12, pt.predict_us(p)) / pt.measured_us);
    sum += r * r;
  }
  return sum;
}

double median_abs_error(const HardwareProfile& p, const std::vector<Point>& points) {
  std::vector<double> e;
  for (const Point& pt : points) {
    e.push_back(std::abs(pt.predict_us(p) - pt.measured_us) / pt.measured_us);
  }
  return median(e);
}

// The value in [lo, hi] of the number `field` selects that minimises the squared log error of
// `points` (golden-section search; the errors here are unimodal in one coefficient).
double minimise(HardwareProfile p, Measured& (*field)(HardwareProfile&), double lo, double hi,
                const std::vector<Point>& points) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  auto cost = [&](double v) {
    field(p).value = v;
    return squared_log_error(p, points);
  };
  double a = lo;
  double b = hi;
  double c = b - g * (b - a);
  double d = a + g * (b - a);
  double fc = cost(c);
  double fd = cost(d);
  for (int i = 0; i < 200 && b - a > 1e-9 * std::max(1.0, std::abs(b)); ++i) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - g * (b - a);
      fc = cost(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + g * (b - a);
      fd = cost(d);
    }
  }
  return (a + b) / 2;
}

class Fitter {
 public:
  Fitter(const HardwareProfile& prior, const Bundle& b) : p_(prior), b_(b) {
    const BundleContext& c = b.context;
    source_ =
        fmt::format("{}lagom calibrate fit --measurements {} ({}, {}{})",
                    c.synthetic ? "SYNTHETIC bundle, not a measurement: " : "", b.path, c.gpu.name,
                    c.date.empty() ? "undated" : c.date, c.host.empty() ? "" : ", host " + c.host);
  }

  GpuFitResult run() {
    device();
    launch();
    hbm();
    for (ComputeClass cls :
         {ComputeClass::kElementwise, ComputeClass::kNorm, ComputeClass::kOptimizer}) {
      stream(cls);
    }
    gemm();
    contention();
    // Every other unmeasured number of these sections stays what it was, and says so.
    for (const hardware::ProfileField& f : hardware::profile_fields(p_)) {
      const bool ours = f.path.starts_with("gpu.") || f.path.starts_with("compute.") ||
                        f.path.starts_with("contention.");
      const bool seen = std::any_of(fits_.begin(), fits_.end(),
                                    [&](const CoefficientFit& c) { return c.path == f.path; });
      if (ours && !seen && hardware::is_prior(*f.number)) {
        prior_kept(f.path, *f.number, "no benchmark of lagom-calibrate measures it");
      }
    }
    return GpuFitResult{p_, fits_, warnings_};
  }

 private:
  // A device attribute, recorded as a fact.
  void fact(const std::string& path, Measured& m, double value, std::string_view what) {
    CoefficientFit f{path, m.value, value, true, 1, 0, 0, std::string(what)};
    m = Measured{value, fmt::format("{}: {}", source_, what)};
    fits_.push_back(std::move(f));
  }

  template <typename... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) {
    warnings_.push_back(fmt::format(f, std::forward<Args>(args)...));
  }

  std::string raw(std::string_view name) const { return b_.path + "/raw/" + std::string(name); }

  void prior_kept(const std::string& path, const Measured& m, std::string_view why) {
    fits_.push_back(CoefficientFit{path, m.value, m.value, false, 0, 0, 0, std::string(why)});
  }

  void device() {
    const BundleGpu& g = b_.context.gpu;
    hardware::GpuParams& gp = p_.gpu;
    fact("gpu.sms", gp.sms, g.sms, "cudaDevAttrMultiProcessorCount");
    fact("gpu.l2_MiB", gp.l2_MiB, g.l2_bytes / kMiB, "cudaDevAttrL2CacheSize");
    fact("gpu.smem_per_sm_KiB", gp.smem_per_sm_KiB, g.smem_per_sm_bytes / 1024.0,
         "cudaDevAttrMaxSharedMemoryPerMultiprocessor");
    fact("gpu.max_threads_per_sm", gp.max_threads_per_sm, g.max_threads_per_sm,
         "cudaDevAttrMaxThreadsPerMultiProcessor");
    fact("gpu.max_blocks_per_sm", gp.max_blocks_per_sm, g.max_blocks_per_sm,
         "cudaDevAttrMaxBlocksPerMultiprocessor");
    fact("gpu.memory_GB", gp.memory_GB, g.memory_bytes / 1e9, "cudaDeviceProp::totalGlobalMem");
  }

  void launch() {
    std::vector<double> t;
    for (const LaunchSample& s : b_.launch) {
      if (s.kind == "back_to_back") {
        t.push_back(s.time_us);
      }
    }
    Measured& m = p_.compute.launch_us;
    if (t.empty()) {
      prior_kept("compute.launch_us", m, "no back-to-back launch samples (benchmark 'launch')");
      return;
    }
    const double before = m.value;
    const double v = median(t);
    if (v > kMaxLaunchUs) {
      throw Error(
          fmt::format("{}: the median back-to-back kernel takes {} us; a kernel launch "
                      "costs microseconds (a profile allows at most {} us)",
                      raw("launch.csv"), v, kMaxLaunchUs));
    }
    if (v > 50) {
      warn(
          "{}: the median back-to-back kernel takes {:.1f} us, far above the 2-10 us of a "
          "kernel launch; was the GPU busy?",
          raw("launch.csv"), v);
    }
    m = Measured{v, fmt::format("{}: median of {} back-to-back empty kernels", source_, t.size())};
    fits_.push_back(CoefficientFit{"compute.launch_us", before, v, true, static_cast<int>(t.size()),
                                   0, 0, "median back-to-back kernel time"});
  }

  void hbm() {
    // The largest buffers only: smaller ones may still see L2.
    double largest = 0;
    for (const HbmSample& s : b_.hbm) {
      if (s.kernel == "copy" || s.kernel == "triad") {
        largest = std::max(largest, s.bytes);
      }
    }
    std::vector<double> gbps;
    for (const HbmSample& s : b_.hbm) {
      if ((s.kernel == "copy" || s.kernel == "triad") && s.bytes >= 0.5 * largest) {
        gbps.push_back(s.bytes / (s.time_us * 1e3));
      }
    }
    Measured& m = p_.contention.hbm_efficiency;
    if (gbps.empty()) {
      prior_kept("contention.hbm_efficiency", m, "no copy or triad samples (benchmark 'hbm')");
      return;
    }
    const double before = m.value;
    const double share = median(gbps) / p_.gpu.hbm_GBps.value;
    if (share > 1.0) {
      warn(
          "{}: copy and triad move {:.1f} GB/s, faster than the {} GB/s of the profile's "
          "gpu.hbm_GBps: is the datasheet number right for this GPU? (efficiency capped at 1)",
          raw("hbm.csv"), median(gbps), p_.gpu.hbm_GBps.value);
    } else if (share < 0.05) {
      warn(
          "{}: copy and triad move {:.1f} GB/s, under 5% of the profile's {} GB/s (efficiency "
          "held at 0.05)",
          raw("hbm.csv"), median(gbps), p_.gpu.hbm_GBps.value);
    }
    const double v = std::clamp(share, 0.05, 1.0);
    m = Measured{v, fmt::format("{}: median copy/triad bandwidth {:.1f} GB/s of {} samples over "
                                "the datasheet's {} GB/s",
                                source_, median(gbps), gbps.size(), p_.gpu.hbm_GBps.value)};
    fits_.push_back(CoefficientFit{"contention.hbm_efficiency", before, v, true,
                                   static_cast<int>(gbps.size()), 0, 0,
                                   "median copy/triad GB/s over the largest buffers / peak"});
  }

  // Fits `field` in [lo, hi] to `points`, recording before and after.
  void fit(const std::string& path, Measured& (*field)(HardwareProfile&), double lo, double hi,
           const std::vector<Point>& points, int samples, std::string_view how) {
    Measured& m = field(p_);
    const double before = m.value;
    const double err_before = median_abs_error(p_, points);
    const double v = minimise(p_, field, lo, hi, points);
    m = Measured{v, fmt::format("{}: {} ({} configurations, {} samples)", source_, how,
                                points.size(), samples)};
    const double err_after = median_abs_error(p_, points);
    fits_.push_back(
        CoefficientFit{path, before, v, true, samples, err_before, err_after, std::string(how)});
    // At an edge the model could not reach the measurements (0 is a real value only for
    // l2_pollution, whose lower edge is therefore not suspicious).
    const double edge = 1e-3 * (hi - lo);
    if ((lo > 0 && v - lo < edge) || hi - v < edge) {
      warn(
          "{} ends at the edge of its range [{}, {}] with the model still {:.1f}% off "
          "(median): these samples are outside what the model explains",
          path, lo, hi, 100 * err_after);
    }
  }

  void stream(ComputeClass cls) {
    const std::string name(traces::to_string(cls));
    const int index = static_cast<int>(cls);
    std::vector<const StreamSample*> mine;
    for (const StreamSample& s : b_.stream) {
      if (s.cls == name) {
        mine.push_back(&s);
      }
    }
    const std::string base = "compute.classes." + name;
    hardware::ComputeClassParams& k = p_.compute.classes[index];
    if (mine.empty()) {
      prior_kept(base + ".blocks_per_sm", k.blocks_per_sm, "no samples (benchmark '" + name + "')");
      prior_kept(base + ".hbm_efficiency", k.hbm_efficiency,
                 "no samples (benchmark '" + name + "')");
      return;
    }
    std::vector<double> occupancy;
    using Key = std::tuple<double, double, double, std::int64_t, int>;
    std::map<Key, std::vector<double>> times;
    for (const StreamSample* s : mine) {
      occupancy.push_back(s->blocks_per_sm);
      times[Key{s->elems, s->bytes, s->flops, s->blocks, s->blocks_per_sm}].push_back(s->time_us);
    }
    const double before_tb = k.blocks_per_sm.value;
    const double tb = std::round(median(occupancy));
    if (tb > p_.gpu.max_blocks_per_sm.value) {
      throw Error(
          fmt::format("{}: the {} kernels ran {} blocks per SM, more than the device's "
                      "{} (max_blocks_per_sm in context.json)",
                      raw("stream.csv"), name, tb, p_.gpu.max_blocks_per_sm.value));
    }
    k.blocks_per_sm =
        Measured{tb, fmt::format("{}: the occupancy its kernels ran with (cudaOccupancy"
                                 "MaxActiveBlocksPerMultiprocessor, {} samples)",
                                 source_, occupancy.size())};
    fits_.push_back(CoefficientFit{base + ".blocks_per_sm", before_tb, tb, true,
                                   static_cast<int>(occupancy.size()), 0, 0,
                                   "occupancy of the measured kernels"});
    std::vector<Point> points;
    for (const auto& [key, t] : times) {
      const auto [elems, bytes, flops, blocks, per_sm] = key;
      const ComputeShape shape{flops, static_cast<std::int32_t>(blocks), per_sm, cls};
      points.push_back(Point{[shape, bytes = bytes](const HardwareProfile& p) {
                               return sim::ComputeModel(p).alone(shape, bytes).time_us;
                             },
                             median(t)});
    }
    static Measured& (*const kFields[])(HardwareProfile&) = {
        [](HardwareProfile& p) -> Measured& { return p.compute.classes[0].hbm_efficiency; },
        [](HardwareProfile& p) -> Measured& { return p.compute.classes[1].hbm_efficiency; },
        [](HardwareProfile& p) -> Measured& { return p.compute.classes[2].hbm_efficiency; },
        [](HardwareProfile& p) -> Measured& { return p.compute.classes[3].hbm_efficiency; },
        [](HardwareProfile& p) -> Measured& { return p.compute.classes[4].hbm_efficiency; },
        [](HardwareProfile& p) -> Measured& { return p.compute.classes[5].hbm_efficiency; },
    };
    // A class's kernels alone get at most what the streaming benchmarks got.
    fit(base + ".hbm_efficiency", kFields[index], kMinEfficiency,
        p_.contention.hbm_efficiency.value, points, static_cast<int>(mine.size()),
        "the compute model's time over its streaming kernels");
  }

  static ComputeShape gemm_shape(std::int64_t m, std::int64_t n, std::int64_t k) {
    // The simulator's GEMM, as generated steps have it (128 x 128 tiles, which the compute model
    // may split): not the measured launch's grid, which cuBLASLt may have split already or
    // tiled otherwise, so that the fitted coefficients mean what they mean in a simulation.
    return traces::gemm_shape(static_cast<double>(m), static_cast<double>(n),
                              static_cast<double>(k));
  }
  static double gemm_bytes(std::int64_t m, std::int64_t n, std::int64_t k) {
    const double M = static_cast<double>(m), N = static_cast<double>(n), K = static_cast<double>(k);
    return 2.0 * (M * K + K * N + M * N);  // BF16 A, B and C
  }

  void gemm() {
    Measured& (*field)(HardwareProfile&) = [](HardwareProfile& p) -> Measured& {
      return p.compute.classes[static_cast<int>(ComputeClass::kGemm)].flops_efficiency;
    };
    using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
    std::map<Key, std::vector<double>> times;
    for (const GemmSample& s : b_.gemm) {
      times[Key{s.m, s.n, s.k, s.blocks}].push_back(s.time_us);
    }
    const sim::ComputeModel prior(p_);
    std::vector<Point> points;
    int samples = 0;
    int tiny = 0;
    double min_k = std::numeric_limits<double>::infinity();
    double max_k = 0;
    for (const auto& [key, t] : times) {
      const auto [m, n, k, blocks] = key;
      const ComputeShape shape = gemm_shape(m, n, k);
      const double bytes = gemm_bytes(m, n, k);
      const sim::KernelEstimate e = prior.alone(shape, bytes);
      if (e.compute_us <= e.memory_us) {
        continue;  // memory-bound: says nothing about the tensor rate
      }
      if (e.time_us - p_.compute.launch_us.value < p_.compute.launch_us.value) {
        ++tiny;  // its time is cuBLAS's fixed costs more than its arithmetic
        continue;
      }
      samples += static_cast<int>(t.size());
      min_k = std::min(min_k, static_cast<double>(k));
      max_k = std::max(max_k, static_cast<double>(k));
      points.push_back(Point{[shape, bytes](const HardwareProfile& p) {
                               return sim::ComputeModel(p).alone(shape, bytes).time_us;
                             },
                             median(t)});
    }
    if (tiny > 0) {
      warn(
          "{}: {} GEMM shape(s) left out of the fit: their arithmetic takes less than a launch, "
          "so their time is fixed costs, not the tensor rate",
          raw("gemm.csv"), tiny);
    }
    if (points.empty()) {
      prior_kept("compute.classes.gemm.flops_efficiency", field(p_),
                 "no compute-bound GEMM samples (benchmark 'gemm')");
      prior_kept("compute.gemm_k_overhead", p_.compute.gemm_k_overhead,
                 "no compute-bound GEMM samples (benchmark 'gemm')");
      return;
    }
    // The tile overhead and the deep-tile efficiency together: the overhead is the K-equivalent
    // that best explains shallow GEMMs against deep ones (a grid of 4-element steps, the
    // efficiency refitted at each), identifiable only when the depths differ at least 2x.
    if (max_k >= 2 * min_k) {
      const double before = p_.compute.gemm_k_overhead.value;
      const double err_before = median_abs_error(p_, points);
      double best = before;
      double best_efficiency = field(p_).value;
      double best_cost = std::numeric_limits<double>::infinity();
      for (double k0 = 0; k0 <= 1024; k0 += 4) {
        HardwareProfile trial = p_;
        trial.compute.gemm_k_overhead.value = k0;
        field(trial).value = minimise(trial, field, kMinEfficiency, 1.0, points);
        const double cost = squared_log_error(trial, points);
        if (cost < best_cost) {
          best_cost = cost;
          best = k0;
          best_efficiency = field(trial).value;
        }
      }
      // The error after is with the efficiency that goes with it (refitted just below).
      field(p_).value = best_efficiency;
      p_.compute.gemm_k_overhead =
          Measured{best, fmt::format("{}: the K-equivalent of a GEMM tile's prologue and "
                                     "epilogue, over compute-bound GEMMs of K {} to {} ({} "
                                     "configurations, {} samples)",
                                     source_, min_k, max_k, points.size(), samples)};
      fits_.push_back(CoefficientFit{"compute.gemm_k_overhead", before, best, true, samples,
                                     err_before, median_abs_error(p_, points),
                                     "GEMM time against reduction depth"});
    } else {
      prior_kept("compute.gemm_k_overhead", p_.compute.gemm_k_overhead,
                 "the GEMM samples' depths differ less than 2x: the tile overhead is not "
                 "separable from the efficiency");
    }
    fit("compute.classes.gemm.flops_efficiency", field, kMinEfficiency, 1.0, points, samples,
        "the compute model's time (whole tiles over the launch's grid, with the tile overhead) "
        "over compute-bound GEMMs");
  }

  void contention() {
    Measured& (*field)(HardwareProfile&) = [](HardwareProfile& p) -> Measured& {
      return p.contention.l2_pollution;
    };
    using Key = std::tuple<int, std::int64_t, double, std::int64_t, std::int64_t, std::int64_t>;
    std::map<Key, std::vector<double>> times;
    std::map<Key, std::vector<double>> drawn;
    std::map<Key, std::vector<double>> alone_times;
    for (const ContentionSample& s : b_.contention) {
      const Key key{s.ctas, s.chunk_bytes, s.rate_GBps, s.m, s.n, s.k};
      times[key].push_back(s.gemm_us);
      drawn[key].push_back(s.occupier_GBps);
      alone_times[key].push_back(s.gemm_alone_us);
    }
    std::vector<Point> points;
    const double hbm_measured = p_.gpu.hbm_GBps.value * p_.contention.hbm_efficiency.value;
    int faster = 0;
    for (const auto& [key, t] : times) {
      const auto [ctas, chunk, rate, m, n, k] = key;
      const ComputeShape shape = gemm_shape(m, n, k);
      const double bytes = gemm_bytes(m, n, k);
      double occupier = median(drawn.at(key));
      if (occupier > 1.05 * hbm_measured) {
        warn(
            "{}: the occupier ({} CTAs, {} B chunks) drew {:.1f} GB/s, more than the {:.1f} GB/s "
            "the HBM gives (contention.hbm_efficiency x gpu.hbm_GBps); taken as all of it",
            raw("contention.csv"), ctas, chunk, occupier, hbm_measured);
        occupier = hbm_measured;
      }
      if (median(alone_times.at(key)) > 1.02 * median(t)) {
        ++faster;  // noise or a broken run: beside the occupier it cannot be faster
      }
      const double in_flight = 4.0 * ctas * static_cast<double>(chunk);
      points.push_back(
          Point{[=, ctas = ctas](const HardwareProfile& p) {
                  const sim::ComputeModel cm(p);
                  const int held = std::min(ctas, cm.sms());
                  const sim::SmGrant grant{cm.sms() - held, held,
                                           cm.blocks_beside_comm(shape, kNcclCtaThreads)};
                  // The HBM the occupier leaves, in the model's units (peak before efficiencies).
                  const double peak = p.gpu.hbm_GBps.value;
                  const double left =
                      std::max(0.05, 1.0 - occupier / (peak * p.contention.hbm_efficiency.value));
                  const double l2 = p.gpu.l2_MiB.value * kMiB;
                  const double inflation = 1.0 + p.contention.l2_pollution.value *
                                                     (l2 > 0 ? std::min(1.0, in_flight / l2) : 0);
                  if (grant.full < 1 && grant.blocks_per_shared < 1) {
                    return cm.estimate(shape, bytes, sim::SmGrant{0, 1, 1}, peak * left, inflation)
                        .time_us;
                  }
                  return cm.estimate(shape, bytes, grant, peak * left, inflation).time_us;
                },
                median(t)});
    }
    if (faster > 0) {
      warn(
          "{}: {} configuration(s) ran the GEMM faster beside the occupier than alone (by over "
          "2%): the measurement is noisy, or the occupier did not run",
          raw("contention.csv"), faster);
    }
    if (points.empty()) {
      prior_kept("contention.l2_pollution", field(p_),
                 "no GEMM-beside-occupier samples (benchmark 'contention')");
      return;
    }
    fit("contention.l2_pollution", field, 0.0, kMaxL2Pollution, points,
        static_cast<int>(b_.contention.size()),
        "the compute model's GEMM time on the SMs, HBM and L2 the occupier leaves");
  }

  HardwareProfile p_;
  const Bundle& b_;
  std::string source_;
  std::vector<CoefficientFit> fits_;
  std::vector<std::string> warnings_;
};

}  // namespace

GpuFitResult fit_gpu_profile(const HardwareProfile& prior, const Bundle& bundle) {
  GpuFitResult r = Fitter(prior, bundle).run();
  // What is written must read back: the reader's ranges and cross-checks are the contract.
  try {
    hardware::parse_profile_json(hardware::profile_to_json(r.profile), "the fitted profile");
  } catch (const Error& e) {
    throw Error(fmt::format("the fit to '{}' gives a profile no simulation would accept: {}",
                            bundle.path, e.what()));
  }
  return r;
}

std::string gpu_mismatch(const Bundle& bundle, const HardwareProfile& profile) {
  const std::string ran = gpu_model_token(bundle.context.gpu.name);
  const std::string described = gpu_model_token(profile.gpu_type);
  if (!ran.empty() && ran == described) {
    return "";
  }
  return fmt::format(
      "the bundle '{}' was measured on a {} ('{}') but profile '{}' describes {} "
      "('{}')",
      bundle.path, ran.empty() ? "GPU Lagom does not recognise" : ran, bundle.context.gpu.name,
      profile.name, described.empty() ? "a GPU Lagom does not recognise" : described,
      profile.gpu_type);
}

}  // namespace lagom::calibrate
