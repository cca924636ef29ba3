// Measurement bundles (calibrate/bundle.hpp) and the fit of GPU, compute and contention
// coefficients from them (calibrate/gpu_fit.hpp), on bundles the tests write themselves: marked
// synthetic, made from the compute model with known coefficients, so that the fit must find
// those coefficients again.
#include "lagom/calibrate/bundle.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "cli_runner.hpp"
#include "lagom/calibrate/gpu_fit.hpp"
#include "lagom/hardware/profile.hpp"
#include "lagom/sim/compute_model.hpp"
#include "test_util.hpp"

namespace lagom::calibrate {
namespace {

namespace fs = std::filesystem;
using test::error_of;

BundleContext h100_context() {
  BundleContext c;
  c.synthetic = true;
  c.gpu = BundleGpu{"NVIDIA H100 80GB HBM3",
                    132,
                    90,
                    85.0e9,
                    50.0 * 1024 * 1024,
                    228.0 * 1024,
                    2048,
                    32,
                    1980,
                    2619,
                    5120};
  c.driver = "13000";
  c.cuda_runtime = "13000";
  c.cublas = "130000";
  c.date = "2026-12-02T00:00:00Z";
  c.host = "test";
  c.command_line = "lagom_tests";
  return c;
}

// The "true" H100 of these tests: the built-in profile with every fitted coefficient moved away
// from its prior.
hardware::HardwareProfile truth() {
  hardware::HardwareProfile p = hardware::load_profile("h100-sxm");
  p.compute.launch_us.value = 5.3;
  p.contention.hbm_efficiency.value = 0.91;
  p.compute.classes[static_cast<int>(traces::ComputeClass::kElementwise)].hbm_efficiency.value =
      0.77;
  p.compute.classes[static_cast<int>(traces::ComputeClass::kNorm)].hbm_efficiency.value = 0.66;
  p.compute.classes[static_cast<int>(traces::ComputeClass::kOptimizer)].hbm_efficiency.value = 0.72;
  p.compute.classes[static_cast<int>(traces::ComputeClass::kGemm)].flops_efficiency.value = 0.63;
  p.compute.gemm_k_overhead.value = 96;
  p.contention.l2_pollution.value = 0.4;
  return p;
}

// +-1% deterministic "noise" around the model's time, different per sample.
double jitter(int i) {
  return 1.0 + 0.01 * std::sin(1.7 * i + 0.3);
}

// A bundle whose samples are `t`'s compute model (with jitter), 5 samples per configuration.
Bundle synthetic_bundle(const hardware::HardwareProfile& t) {
  Bundle b;
  b.context = h100_context();
  const sim::ComputeModel cm(t);
  int i = 0;
  for (double bytes : {2e9, 4e9, 8e9}) {
    for (int r = 0; r < 5; ++r) {
      const double peak = t.gpu.hbm_GBps.value * t.contention.hbm_efficiency.value;
      b.hbm.push_back({"copy", bytes, bytes / (peak * 1e3) * jitter(i++)});
      b.hbm.push_back({"read", bytes, bytes / (1.02 * peak * 1e3) * jitter(i++)});
    }
  }
  for (int r = 0; r < 30; ++r) {
    b.launch.push_back({"back_to_back", t.compute.launch_us.value * jitter(i++)});
    b.launch.push_back({"synchronized", 12.0 * jitter(i++)});
  }
  const struct {
    const char* cls;
    traces::ComputeClass c;
    double flops_per_elem;
    int bytes_per_elem;
    int per_sm;
  } classes[] = {{"elementwise", traces::ComputeClass::kElementwise, 8, 4, 6},
                 {"norm", traces::ComputeClass::kNorm, 4, 4, 4},
                 {"optimizer", traces::ComputeClass::kOptimizer, 12, 28, 3}};
  for (const auto& k : classes) {
    for (double elems : {1e6, 1e7, 1e8, 5e8}) {
      const auto blocks = static_cast<std::int64_t>(std::ceil(elems / 2048));
      const traces::ComputeShape shape{k.flops_per_elem * elems, static_cast<std::int32_t>(blocks),
                                       k.per_sm, k.c};
      const double bytes = elems * k.bytes_per_elem;
      for (int r = 0; r < 5; ++r) {
        b.stream.push_back({k.cls, elems, bytes, shape.flops, blocks, k.per_sm,
                            cm.alone(shape, bytes).time_us * jitter(i++)});
      }
    }
  }
  auto gemm_shape = [](double m, double n, double k) { return traces::gemm_shape(m, n, k); };
  auto gemm_bytes = [](double m, double n, double k) { return 2.0 * (m * k + k * n + m * n); };
  // Deep and shallow reductions, so that the tile overhead separates from the efficiency. (Their
  // noise has its own sequence: the contention samples below keep theirs, to which the L2 fit
  // is sensitive.)
  int g = 100000;
  for (std::int64_t m : {2048, 4096, 8192, 16384}) {
    for (std::int64_t n : {4096, 8192}) {
      for (std::int64_t k : {1024, 8192}) {
        const auto [M, N, K] =
            std::tuple(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k));
        const traces::ComputeShape shape = gemm_shape(M, N, K);
        for (int r = 0; r < 5; ++r) {
          b.gemm.push_back({m, n, k, shape.blocks, shape.blocks / 132.0,
                            cm.alone(shape, gemm_bytes(M, N, K)).time_us * jitter(g++)});
        }
      }
    }
  }
  i += 40;
  // A GEMM beside 8, 16 and 32 occupier CTAs moving 1 MiB chunks (in flight 4 x CTAs x 1 MiB,
  // 32-128 MiB against the 50 MiB L2), drawing 600 GB/s.
  for (int ctas : {8, 16, 32}) {
    const std::int64_t m = 8192, n = 8192, k = 8192;
    const traces::ComputeShape shape = gemm_shape(8192, 8192, 8192);
    const double bytes = gemm_bytes(8192, 8192, 8192);
    const double alone = cm.alone(shape, bytes).time_us;
    const sim::SmGrant grant{132 - ctas, ctas, cm.blocks_beside_comm(shape, 544)};
    const double left = 1.0 - 600.0 / (t.gpu.hbm_GBps.value * t.contention.hbm_efficiency.value);
    const double in_flight = 4.0 * ctas * 1024 * 1024;
    const double inflation =
        1.0 + t.contention.l2_pollution.value * std::min(1.0, in_flight / (50.0 * 1024 * 1024));
    const double with =
        cm.estimate(shape, bytes, grant, t.gpu.hbm_GBps.value * left, inflation).time_us;
    for (int r = 0; r < 5; ++r) {
      b.contention.push_back(
          {ctas, 1 << 20, 0, m, n, k, alone * jitter(i++), with * jitter(i++), 600.0});
    }
  }
  return b;
}

const CoefficientFit& coefficient(const GpuFitResult& r, std::string_view path) {
  for (const CoefficientFit& c : r.coefficients) {
    if (c.path == path) {
      return c;
    }
  }
  ADD_FAILURE() << "no coefficient " << path;
  static const CoefficientFit none;
  return none;
}

TEST(Bundle, WritesAndReadsBackEverySample) {
  test::TempDir dir;
  const Bundle b = synthetic_bundle(truth());
  write_bundle(b, dir.path().string());
  EXPECT_TRUE(fs::exists(dir.path() / "summary.json"));
  const Bundle r = read_bundle(dir.path().string());
  EXPECT_TRUE(r.context.synthetic);
  EXPECT_EQ(r.context.gpu.name, b.context.gpu.name);
  EXPECT_EQ(r.context.gpu.sms, 132);
  ASSERT_EQ(r.hbm.size(), b.hbm.size());
  ASSERT_EQ(r.gemm.size(), b.gemm.size());
  ASSERT_EQ(r.stream.size(), b.stream.size());
  ASSERT_EQ(r.contention.size(), b.contention.size());
  for (std::size_t i = 0; i < b.stream.size(); ++i) {
    EXPECT_EQ(r.stream[i].time_us, b.stream[i].time_us);  // shortest round-trip decimals: exact
    EXPECT_EQ(r.stream[i].blocks, b.stream[i].blocks);
  }
  EXPECT_EQ(r.gemm.back().m, b.gemm.back().m);
  EXPECT_EQ(r.contention.front().ctas, 8);
}

TEST(Bundle, GpuModelTokens) {
  EXPECT_EQ(gpu_model_token("NVIDIA H200"), "H200");
  EXPECT_EQ(gpu_model_token("NVIDIA H100 80GB HBM3"), "H100");
  EXPECT_EQ(gpu_model_token("H100-SXM-80GB"), "H100");
  EXPECT_EQ(gpu_model_token("NVIDIA A100-SXM4-80GB"), "A100");
  EXPECT_EQ(gpu_model_token("A40-48GB"), "A40");
  EXPECT_EQ(gpu_model_token("NVIDIA A40"), "A40");
  EXPECT_EQ(gpu_model_token("Tesla T4"), "T4");
  EXPECT_EQ(gpu_model_token("some accelerator"), "");
}

struct BadBundle {
  std::string what;
  std::string file;  // relative to the bundle
  std::string text;  // its contents ("" removes it)
  std::string expect;
};

class BadBundles : public ::testing::TestWithParam<BadBundle> {};

TEST_P(BadBundles, AreErrorsNamingTheFileAndLine) {
  test::TempDir dir;
  write_bundle(synthetic_bundle(truth()), dir.path().string());
  const fs::path f = dir.path() / GetParam().file;
  if (GetParam().text.empty()) {
    fs::remove(f);
  } else {
    std::ofstream(f, std::ios::binary) << GetParam().text;
  }
  const std::string e = error_of([&] { read_bundle(dir.path().string()); });
  EXPECT_NE(e.find(GetParam().expect), std::string::npos) << e;
}

INSTANTIATE_TEST_SUITE_P(
    Catalogue, BadBundles,
    ::testing::Values(
        BadBundle{"no_context", "context.json", "", "cannot open bundle context"},
        BadBundle{"not_json", "context.json", "{", "context.json"},
        BadBundle{"wrong_format", "context.json",
                  R"({"format": "lagom.profile", "version": 1, "gpu": {}})",
                  "context.json: format: expected \"lagom.bundle\""},
        BadBundle{"no_gpu_sms", "context.json",
                  R"({"format": "lagom.bundle", "version": 1, "gpu": {"name": "x"}})",
                  "context.json: gpu: missing required field 'sms'"},
        BadBundle{"nan_sample", "raw/hbm.csv", "kernel,bytes,time_us\ncopy,1000,nan\n",
                  "raw/hbm.csv:2: time_us is nan; it must be a finite number > 0"},
        BadBundle{"negative_sample", "raw/launch.csv", "kind,time_us\nback_to_back,-3\n",
                  "raw/launch.csv:2: time_us is -3"},
        BadBundle{"not_a_number", "raw/gemm.csv",
                  "m,n,k,blocks,waves,time_us\n8192,8192,8192x,4096,31,100\n",
                  "raw/gemm.csv:2: k is '8192x'; it must be a whole number"},
        BadBundle{"fractional_size", "raw/gemm.csv",
                  "m,n,k,blocks,waves,time_us\n8192.5,8192,8192,4096,31,100\n",
                  "raw/gemm.csv:2: m is '8192.5'; it must be a whole number"},
        BadBundle{"exponent_size", "raw/gemm.csv",
                  "m,n,k,blocks,waves,time_us\n8.192e3,8192,8192,4096,31,100\n",
                  "raw/gemm.csv:2: m is '8.192e3'; it must be a whole number in [1, 16777216], "
                  "in digits"},
        BadBundle{"ctas_overflow", "raw/contention.csv",
                  "ctas,chunk_bytes,rate_GBps,m,n,k,gemm_alone_us,gemm_us,occupier_GBps\n"
                  "2147483648,1,0,8,8,8,1,1,1\n",
                  "raw/contention.csv:2: ctas is '2147483648'"},
        BadBundle{"occupancy_over_the_device", "raw/stream.csv",
                  "class,elems,bytes,flops,blocks,blocks_per_sm,time_us\n"
                  "norm,1000,8000,4000,10,100,3\n",
                  "raw/stream.csv:2: blocks_per_sm is '100'; it must be a whole number in [1, 32]"},
        BadBundle{"duplicated_column", "raw/launch.csv", "kind,time_us,time_us\nback_to_back,3,4\n",
                  "raw/launch.csv:1: the header's column 3 is 'time_us' again"},
        BadBundle{"missing_column", "raw/stream.csv", "class,elems,bytes\nnorm,1,2\n",
                  "raw/stream.csv: no column 'flops'"},
        BadBundle{"short_row", "raw/contention.csv",
                  "ctas,chunk_bytes,rate_GBps,m,n,k,gemm_alone_us,gemm_us,occupier_GBps\n8,1\n",
                  "raw/contention.csv:2: 2 values, but the header names 9 columns"},
        BadBundle{"unknown_kernel", "raw/hbm.csv", "kernel,bytes,time_us\nscale,1000,3\n",
                  "raw/hbm.csv:2: kernel 'scale' is not one of read, write, copy, triad, memcpy"},
        BadBundle{"empty_table", "raw/launch.csv", "\n", "raw/launch.csv: no header row"}),
    test::case_name<BadBundle>);

// What other systems write reads as what Lagom writes: CRLF or CR line ends, a byte-order mark,
// lines of spaces.
TEST(Bundle, ReadsAnyLineEndsAndAByteOrderMark) {
  for (const std::string text : {"kind,time_us\nback_to_back,3\nback_to_back,5\n",
                                 "kind,time_us\r\nback_to_back,3\r\nback_to_back,5\r\n",
                                 "kind,time_us\rback_to_back,3\rback_to_back,5\r",
                                 "\xEF\xBB\xBFkind,time_us\nback_to_back,3\n"
                                 "back_to_back,5\n",
                                 "   \nkind,time_us\n  \t \nback_to_back,3\nback_to_back,5"}) {
    test::TempDir dir;
    write_bundle(synthetic_bundle(truth()), dir.path().string());
    std::ofstream(dir.path() / "raw" / "launch.csv", std::ios::binary) << text;
    const Bundle b = read_bundle(dir.path().string());
    ASSERT_EQ(b.launch.size(), 2u) << text;
    EXPECT_EQ(b.launch[1].time_us, 5);
  }
}

TEST(Bundle, AFolderWithNoSamplesOrNoFolderIsAnError) {
  test::TempDir dir;
  Bundle b;
  b.context = h100_context();
  write_bundle(b, dir.path().string());
  EXPECT_NE(error_of([&] { read_bundle(dir.path().string()); }).find("has no samples"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_bundle((dir.path() / "nowhere").string()); }).find("not a folder"),
            std::string::npos);
}

TEST(GpuFit, FindsTheCoefficientsItsSyntheticBundleWasMadeWith) {
  const hardware::HardwareProfile t = truth();
  test::TempDir dir;
  write_bundle(synthetic_bundle(t), dir.path().string());
  const Bundle b = read_bundle(dir.path().string());
  const hardware::HardwareProfile prior = hardware::load_profile("h100-sxm");
  const GpuFitResult r = fit_gpu_profile(prior, b);
  const auto near = [](double got, double want, double rel) { EXPECT_NEAR(got, want, rel * want); };
  near(r.profile.compute.launch_us.value, 5.3, 0.01);
  near(r.profile.contention.hbm_efficiency.value, 0.91, 0.01);
  const auto cls = [&](traces::ComputeClass c) -> const hardware::ComputeClassParams& {
    return r.profile.compute.classes[static_cast<int>(c)];
  };
  near(cls(traces::ComputeClass::kElementwise).hbm_efficiency.value, 0.77, 0.02);
  near(cls(traces::ComputeClass::kNorm).hbm_efficiency.value, 0.66, 0.02);
  near(cls(traces::ComputeClass::kOptimizer).hbm_efficiency.value, 0.72, 0.02);
  EXPECT_EQ(cls(traces::ComputeClass::kElementwise).blocks_per_sm.value, 6);
  EXPECT_EQ(cls(traces::ComputeClass::kOptimizer).blocks_per_sm.value, 3);
  near(cls(traces::ComputeClass::kGemm).flops_efficiency.value, 0.63, 0.02);
  EXPECT_NEAR(r.profile.compute.gemm_k_overhead.value, 96, 16);
  // Weakly identified: the 8192^3 GEMM beside the occupier is compute-bound, so the L2 inflation
  // of its HBM traffic moves its time little and the samples' 1% noise moves the fit by ~10%.
  near(r.profile.contention.l2_pollution.value, 0.4, 0.15);
  EXPECT_EQ(r.profile.gpu.sms.value, 132);
  EXPECT_NEAR(r.profile.gpu.memory_GB.value, 85.0, 1e-9);
  // Each fitted coefficient says where it came from, that the bundle was synthetic, and how well
  // the model now reproduces its samples.
  int fitted = 0;
  for (const CoefficientFit& c : r.coefficients) {
    if (c.fitted) {
      ++fitted;
      EXPECT_LE(c.error_after, c.error_before + 1e-12) << c.path;
    } else {  // reported, and left as it was
      EXPECT_EQ(c.after, c.before) << c.path;
      EXPECT_FALSE(c.how.empty()) << c.path;
    }
  }
  // device, launch, HBM, classes, GEMM (tile overhead, efficiency), L2
  EXPECT_EQ(fitted, 6 + 1 + 1 + 3 * 2 + 2 + 1);
  EXPECT_LT(coefficient(r, "compute.classes.gemm.flops_efficiency").error_after, 0.015);
  EXPECT_GT(coefficient(r, "compute.gemm_k_overhead").error_before, 0.05);
  EXPECT_LT(coefficient(r, "compute.gemm_k_overhead").error_after, 0.015);
  EXPECT_NE(r.profile.compute.launch_us.source.find("SYNTHETIC"), std::string::npos);
  EXPECT_FALSE(hardware::is_prior(r.profile.compute.launch_us));
  // What the bundle cannot support stays a prior, and the profile still reads back.
  EXPECT_TRUE(hardware::is_prior(r.profile.compute.overlap_loss));
  EXPECT_NO_THROW(hardware::parse_profile_json(hardware::profile_to_json(r.profile), "fitted"));
}

TEST(GpuFit, CoefficientsWithoutSamplesStayPriors) {
  Bundle b;
  b.path = "only-launch";
  b.context = h100_context();
  b.launch.push_back({"back_to_back", 4.5});
  const hardware::HardwareProfile prior = hardware::load_profile("h100-sxm");
  const GpuFitResult r = fit_gpu_profile(prior, b);
  EXPECT_DOUBLE_EQ(r.profile.compute.launch_us.value, 4.5);
  const CoefficientFit& gemm = coefficient(r, "compute.classes.gemm.flops_efficiency");
  EXPECT_FALSE(gemm.fitted);
  EXPECT_EQ(gemm.after, gemm.before);
  EXPECT_EQ(r.profile.compute.classes[1].flops_efficiency.source,
            prior.compute.classes[1].flops_efficiency.source);
  EXPECT_FALSE(coefficient(r, "contention.l2_pollution").fitted);
}

bool has_warning(const GpuFitResult& r, std::string_view what) {
  return std::any_of(r.warnings.begin(), r.warnings.end(),
                     [&](const std::string& w) { return w.find(what) != std::string::npos; });
}

// A 16x16x16 GEMM takes cuBLAS's fixed costs, microseconds no tensor rate explains: it is left
// out (and said so) instead of dragging the efficiency to its floor.
TEST(GpuFit, TinyGemmsDoNotDecideTheTensorRate) {
  Bundle b = synthetic_bundle(truth());
  b.path = "tiny";
  for (int i = 0; i < 5; ++i) {
    b.gemm.push_back({16, 16, 16, 1, 1.0 / 132, 12.0});
  }
  const GpuFitResult r = fit_gpu_profile(hardware::load_profile("h100-sxm"), b);
  EXPECT_NEAR(r.profile.compute.classes[1].flops_efficiency.value, 0.63, 0.02);
  EXPECT_TRUE(has_warning(r, "tiny/raw/gemm.csv: 1 GEMM shape(s) left out")) << r.warnings.size();
}

// Measurements no GPU of this kind can make: a fit that cannot reach them ends inside the range
// a profile may hold, with a warning, and the profile reads back; a launch of 1e300 us is no
// launch at all.
TEST(GpuFit, ImpossibleMeasurementsWarnOrFailButNeverWriteAnUnreadableProfile) {
  const hardware::HardwareProfile prior = hardware::load_profile("h100-sxm");
  Bundle fast = synthetic_bundle(truth());
  fast.path = "fast";
  for (GemmSample& g : fast.gemm) {
    g.time_us /= 4;  // 2.5x the datasheet's BF16 rate
  }
  for (HbmSample& h : fast.hbm) {
    h.time_us /= 2;
  }
  const GpuFitResult r = fit_gpu_profile(prior, fast);
  EXPECT_NEAR(r.profile.compute.classes[1].flops_efficiency.value, 1.0, 1e-3);  // capped
  EXPECT_LE(r.profile.contention.hbm_efficiency.value, 1.0);
  EXPECT_TRUE(has_warning(r, "compute.classes.gemm.flops_efficiency ends at the edge"));
  EXPECT_TRUE(has_warning(r, "fast/raw/hbm.csv: copy and triad move"));
  for (int c = 0; c < 6; ++c) {
    EXPECT_LE(r.profile.compute.classes[c].hbm_efficiency.value,
              r.profile.contention.hbm_efficiency.value);
  }
  EXPECT_NO_THROW(hardware::parse_profile_json(hardware::profile_to_json(r.profile), "fitted"));

  Bundle slow = synthetic_bundle(truth());
  slow.path = "slow";
  slow.launch.assign(3, LaunchSample{"back_to_back", 1e300});
  EXPECT_NE(error_of([&] {
              fit_gpu_profile(prior, slow);
            }).find("slow/raw/launch.csv: the median back-to-back kernel takes 1e+300 us"),
            std::string::npos);

  Bundle hog = synthetic_bundle(truth());
  hog.path = "hog";
  for (ContentionSample& c : hog.contention) {
    c.occupier_GBps = 50000;
  }
  const GpuFitResult h = fit_gpu_profile(prior, hog);
  EXPECT_TRUE(has_warning(h, "hog/raw/contention.csv: the occupier (8 CTAs"));
  EXPECT_NO_THROW(hardware::parse_profile_json(hardware::profile_to_json(h.profile), "fitted"));
}

TEST(GpuFit, AnotherGpuIsAMismatch) {
  Bundle b;
  b.path = "b";
  b.context = h100_context();
  EXPECT_EQ(gpu_mismatch(b, hardware::load_profile("h100-sxm")), "");
  EXPECT_NE(gpu_mismatch(b, hardware::load_profile("a40")).find("measured on a H100"),
            std::string::npos);
  b.context.gpu.name = "Mystery GPU";
  EXPECT_NE(gpu_mismatch(b, hardware::load_profile("h100-sxm")).find("does not recognise"),
            std::string::npos);
}

TEST(GpuFit, NoBuiltInProfileRestsOnASyntheticBundle) {
  for (const std::string& name : hardware::builtin_profiles()) {
    hardware::HardwareProfile p = hardware::load_profile(name);
    for (const hardware::ProfileField& f : hardware::profile_fields(p)) {
      EXPECT_EQ(f.number->source.find("SYNTHETIC"), std::string::npos) << name << " " << f.path;
    }
    for (const std::string& note : p.calibration) {
      EXPECT_EQ(note.find("SYNTHETIC"), std::string::npos) << name;
    }
  }
}

TEST(CalibrateCli, FitsAProfileFromABundle) {
  test::TempDir dir;
  const std::string bundle = (dir.path() / "bundle").string();
  write_bundle(synthetic_bundle(truth()), bundle);
  const std::string out = (dir.path() / "fitted.json").string();
  const test::CliRun r = test::run_lagom({"calibrate", "fit", "--measurements", bundle, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("SYNTHETIC bundle"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("compute.classes.gemm.flops_efficiency"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("prior kept"), std::string::npos) << r.out;  // nothing measures attention
  const hardware::HardwareProfile fitted = hardware::load_profile(out);
  EXPECT_NEAR(fitted.compute.launch_us.value, 5.3, 0.06);
  EXPECT_EQ(fitted.name, "h100-sxm");  // the bundle's GPU picked the prior

  // A bundle from another GPU is refused, unless forced.
  const test::CliRun other = test::run_lagom(
      {"calibrate", "fit", "--measurements", bundle, "--profile", "a40", "-o", out});
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_NE(other.err.find("describes A40"), std::string::npos) << other.err;
  EXPECT_NE(other.err.find("--force"), std::string::npos) << other.err;
  const test::CliRun forced = test::run_lagom(
      {"calibrate", "fit", "--measurements", bundle, "--profile", "a40", "--force", "-o", out});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(forced.err.find("warning"), std::string::npos);

  const test::CliRun json =
      test::run_lagom({"calibrate", "fit", "--measurements", bundle, "-o", out, "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_TRUE(j["context"]["synthetic"].get<bool>());
  EXPECT_GT(j["coefficients"].size(), 10u);
}

}  // namespace
}  // namespace lagom::calibrate
