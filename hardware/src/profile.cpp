// HardwareProfile JSON reading (strict, with paths in errors), writing, and built-in lookup.
#include "lagom/hardware/profile.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lagom/common/embedded.hpp"
#include "lagom/common/error.hpp"
#include "lagom/common/json_reader.hpp"

namespace lagom::hardware {
namespace profiles {
std::span<const EmbeddedFile> files();
}  // namespace profiles

namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

constexpr const char* kClassNames[] = {"other",       "gemm", "attention",
                                       "elementwise", "norm", "optimizer"};
// For profiles written before smem_per_block_KiB existed (other, gemm, attention, elementwise,
// norm, optimizer).
constexpr double kDefaultSmemPerBlockKiB[] = {16, 96, 96, 0, 1, 0};

struct Reader {
  std::string_view origin;

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw Error(fmt::format("{}: {}: {}", origin, path.empty() ? "(top level)" : path, what));
  }

  const json& field(const json& obj, const std::string& path, std::string_view key) const {
    if (!obj.is_object()) {
      fail(path, "expected an object");
    }
    auto it = obj.find(key);
    if (it == obj.end()) {
      fail(path, fmt::format("missing required field '{}'", key));
    }
    return *it;
  }

  void only(const json& obj, const std::string& path,
            std::initializer_list<std::string_view> known) const {
    if (!obj.is_object()) {  // items() of an array or a number would list odd "unknown fields"
      fail(path, "expected an object");
    }
    for (const auto& [key, value] : obj.items()) {
      bool ok = false;
      for (std::string_view k : known) {
        ok = ok || key == k;
      }
      if (!ok) {
        fail(path, fmt::format("unknown field '{}' (known: {})", key, fmt::join(known, ", ")));
      }
    }
  }

  std::string text(const json& obj, const std::string& path, const char* key) const {
    const json& v = field(obj, path, key);
    if (!v.is_string()) {
      fail(join(path, key), "must be a string");
    }
    return v.get<std::string>();
  }

  // {"value": number, "source": "text"} with lo <= value <= hi.
  Measured measured(const json& obj, const std::string& path, const char* key, double lo,
                    double hi) const {
    const std::string p = join(path, key);
    const json& v = field(obj, path, key);
    if (!v.is_object()) {
      fail(p, "must be an object {\"value\": number, \"source\": \"where it came from\"}");
    }
    only(v, p, {"value", "source"});
    const json& num = field(v, p, "value");
    if (!num.is_number()) {
      fail(p + ".value", "must be a number");
    }
    const double x = num.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) {
      fail(p + ".value",
           fmt::format("{} is outside the plausible range [{}, {}]", num.dump(), lo, hi));
    }
    Measured m{x, text(v, p, "source")};
    if (m.source.empty()) {
      fail(p + ".source", "must say where the number came from");
    }
    return m;
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
  }
};

ordered to_json(const Measured& m) {
  return ordered{{"value", m.value}, {"source", m.source}};
}

}  // namespace

std::string_view compute_class_name(int index) {
  return kClassNames[index];
}

HardwareProfile parse_profile_json(std::string_view text, std::string_view origin) {
  const json doc = json_reader::parse_document(text, origin, "lagom.profile");
  const Reader r{origin};
  if (!doc.is_object()) {
    r.fail("", "expected a JSON object");
  }
  r.only(doc, "",
         {"format", "version", "name", "gpu_type", "description", "gpu", "collective", "compute",
          "contention", "calibration"});
  if (r.text(doc, "", "format") != kProfileFormat) {
    r.fail("format", fmt::format("must be \"{}\"", kProfileFormat));
  }
  const json& version = r.field(doc, "", "version");
  if (!version.is_number_integer() || version.get<int>() != kProfileVersion) {
    r.fail("version", fmt::format("unsupported version {}: this lagom reads {}", version.dump(),
                                  kProfileVersion));
  }
  HardwareProfile p;
  p.origin = std::string(origin);
  p.name = r.text(doc, "", "name");
  p.gpu_type = r.text(doc, "", "gpu_type");
  if (doc.contains("description")) {
    p.description = r.text(doc, "", "description");
  }
  const json& gpu = r.field(doc, "", "gpu");
  r.only(gpu, "gpu",
         {"sms", "hbm_GBps", "memory_GB", "bf16_TFLOPS", "fp8_TFLOPS", "fp32_TFLOPS", "l2_MiB",
          "smem_per_sm_KiB", "max_threads_per_sm", "max_blocks_per_sm"});
  p.gpu.sms = r.measured(gpu, "gpu", "sms", 1, 10000);
  p.gpu.hbm_GBps = r.measured(gpu, "gpu", "hbm_GBps", 1, 1e6);
  p.gpu.memory_GB = r.measured(gpu, "gpu", "memory_GB", 0.1, 1e5);
  p.gpu.bf16_TFLOPS = r.measured(gpu, "gpu", "bf16_TFLOPS", 0.1, 1e6);
  // Optional, as GPUs before Hopper have none: 0 means no FP8 tensor cores.
  p.gpu.fp8_TFLOPS =
      gpu.contains("fp8_TFLOPS")
          ? r.measured(gpu, "gpu", "fp8_TFLOPS", 0, 1e6)
          : Measured{0, "not given: no FP8 tensor peak (GPUs before Hopper have none)"};
  p.gpu.fp32_TFLOPS = r.measured(gpu, "gpu", "fp32_TFLOPS", 0.1, 1e6);
  p.gpu.l2_MiB = r.measured(gpu, "gpu", "l2_MiB", 0, 1e4);
  p.gpu.smem_per_sm_KiB = r.measured(gpu, "gpu", "smem_per_sm_KiB", 1, 1e4);
  p.gpu.max_threads_per_sm = r.measured(gpu, "gpu", "max_threads_per_sm", 32, 1e5);
  p.gpu.max_blocks_per_sm = r.measured(gpu, "gpu", "max_blocks_per_sm", 1, 1e3);
  if (p.gpu.sms.value != std::floor(p.gpu.sms.value)) {
    r.fail("gpu.sms.value", "must be a whole number");
  }

  const json& coll = r.field(doc, "", "collective");
  r.only(
      coll, "collective",
      {"launch_us", "per_channel_us", "nvls_efficiency", "nvls_step_us", "nvls_chunk_us", "links"});
  CollectiveParams& c = p.collective;
  c.launch_us = r.measured(coll, "collective", "launch_us", 0, 1e5);
  c.per_channel_us = r.measured(coll, "collective", "per_channel_us", 0, 1e3);
  c.nvls_efficiency = r.measured(coll, "collective", "nvls_efficiency", 0.01, 2);
  c.nvls_step_us = r.measured(coll, "collective", "nvls_step_us", 0, 1e4);
  c.nvls_chunk_us = r.measured(coll, "collective", "nvls_chunk_us", 0, 1e3);
  const json& links = r.field(coll, "collective", "links");
  r.only(links, "collective.links", {"nvlink", "pcie", "network"});
  for (int k = 0; k < static_cast<int>(kProfiledLinks.size()); ++k) {
    const std::string lp = fmt::format("collective.links.{}", to_string(kProfiledLinks[k]));
    const json& l = r.field(links, "collective.links", to_string(kProfiledLinks[k]));
    r.only(l, lp, {"efficiency", "LL", "LL128", "Simple"});
    LinkParams& link = c.links[k];
    link.efficiency = r.measured(l, lp, "efficiency", 0.01, 1.5);
    for (int q = 0; q < nccl::kProtocolCount; ++q) {
      const std::string pp = fmt::format("{}.{}", lp, to_string(static_cast<nccl::Protocol>(q)));
      const json& pr = r.field(l, lp, to_string(static_cast<nccl::Protocol>(q)));
      r.only(pr, pp, {"step_us", "chunk_us", "channel_GBps", "saturation_threads"});
      link.protocols[q].step_us = r.measured(pr, pp, "step_us", 0, 1e4);
      link.protocols[q].chunk_us = r.measured(pr, pp, "chunk_us", 0, 1e3);
      link.protocols[q].channel_GBps = r.measured(pr, pp, "channel_GBps", 0.001, 1e5);
      link.protocols[q].saturation_threads = r.measured(pr, pp, "saturation_threads", 32, 1024);
    }
  }
  const json& comp = r.field(doc, "", "compute");
  r.only(comp, "compute",
         {"launch_us", "overlap_loss", "gemm_k_overhead", "gemm_split_k_depth", "classes"});
  p.compute.launch_us = r.measured(comp, "compute", "launch_us", 0, 1e4);
  p.compute.overlap_loss = r.measured(comp, "compute", "overlap_loss", 0, 1);
  // Absent from files written before the GEMM tile model: no overhead, no split (as then).
  p.compute.gemm_k_overhead =
      comp.contains("gemm_k_overhead")
          ? r.measured(comp, "compute", "gemm_k_overhead", 0, 65536)
          : Measured{0, "default (field absent from the file): no tile overhead"};
  p.compute.gemm_split_k_depth =
      comp.contains("gemm_split_k_depth")
          ? r.measured(comp, "compute", "gemm_split_k_depth", 0, 1 << 24)
          : Measured{0, "default (field absent from the file): never split K"};
  const json& classes = r.field(comp, "compute", "classes");
  r.only(classes, "compute.classes",
         {"other", "gemm", "attention", "elementwise", "norm", "optimizer"});
  for (int ci = 0; ci < kComputeClassCount; ++ci) {
    const std::string cp_path = fmt::format("compute.classes.{}", kClassNames[ci]);
    const json& cj = r.field(classes, "compute.classes", kClassNames[ci]);
    r.only(cj, cp_path,
           {"flops_efficiency", "hbm_efficiency", "blocks_per_sm", "smem_per_block_KiB"});
    ComputeClassParams& k = p.compute.classes[ci];
    k.flops_efficiency = r.measured(cj, cp_path, "flops_efficiency", 0.001, 1);
    k.hbm_efficiency = r.measured(cj, cp_path, "hbm_efficiency", 0.001, 1);
    k.blocks_per_sm = r.measured(cj, cp_path, "blocks_per_sm", 1, 64);
    k.smem_per_block_KiB =
        cj.contains("smem_per_block_KiB")
            ? r.measured(cj, cp_path, "smem_per_block_KiB", 0, 1e4)
            : Measured{kDefaultSmemPerBlockKiB[ci],
                       "default (field absent from the file): a prior, GEMM and attention tiles "
                       "take most of an SM's shared memory, streaming kernels none"};
    if (k.blocks_per_sm.value != std::floor(k.blocks_per_sm.value)) {
      r.fail(cp_path + ".blocks_per_sm.value", "must be a whole number");
    }
  }
  const json& cont = r.field(doc, "", "contention");
  r.only(cont, "contention",
         {"hbm_efficiency", "comm_hbm_reduce", "comm_hbm_copy", "l2_spill", "l2_pollution",
          "comm_cta_smem_KiB"});
  p.contention.hbm_efficiency = r.measured(cont, "contention", "hbm_efficiency", 0.01, 1);
  p.contention.comm_hbm_reduce = r.measured(cont, "contention", "comm_hbm_reduce", 0, 10);
  p.contention.comm_hbm_copy = r.measured(cont, "contention", "comm_hbm_copy", 0, 10);
  p.contention.l2_spill = r.measured(cont, "contention", "l2_spill", 0, 10);
  p.contention.l2_pollution = r.measured(cont, "contention", "l2_pollution", 0, 10);
  p.contention.comm_cta_smem_KiB =
      cont.contains("comm_cta_smem_KiB")
          ? r.measured(cont, "contention", "comm_cta_smem_KiB", 0, 1e4)
          : Measured{82240.0 / 1024,
                     "default (field absent from the file): NCCL 2.28 device.h, "
                     "ncclShmemScratchWarpSize x 640/32 = 82,240 B of dynamic shared memory per "
                     "CTA on sm80/sm90 (reference/nccl.md §5.1)"};
  // A kernel alone must fit the HBM bandwidth that concurrent streams share (the contention
  // model's capacity), or it would be slowed with nothing beside it.
  for (int ci = 0; ci < kComputeClassCount; ++ci) {
    if (p.compute.classes[ci].hbm_efficiency.value > p.contention.hbm_efficiency.value) {
      r.fail(fmt::format("compute.classes.{}.hbm_efficiency.value", kClassNames[ci]),
             fmt::format("{} exceeds contention.hbm_efficiency ({}): a kernel of this class alone "
                         "would draw more HBM bandwidth than the GPU sustains",
                         p.compute.classes[ci].hbm_efficiency.value,
                         p.contention.hbm_efficiency.value));
    }
  }
  if (auto it = doc.find("calibration"); it != doc.end()) {
    if (!it->is_array()) {
      r.fail("calibration", "must be an array of strings");
    }
    for (const json& line : *it) {
      if (!line.is_string()) {
        r.fail("calibration", "must be an array of strings");
      }
      p.calibration.push_back(line.get<std::string>());
    }
  }
  return p;
}

std::string profile_to_json(const HardwareProfile& p) {
  ordered doc;
  doc["format"] = kProfileFormat;
  doc["version"] = kProfileVersion;
  doc["name"] = p.name;
  doc["gpu_type"] = p.gpu_type;
  doc["description"] = p.description;
  doc["gpu"] = ordered{{"sms", to_json(p.gpu.sms)},
                       {"hbm_GBps", to_json(p.gpu.hbm_GBps)},
                       {"memory_GB", to_json(p.gpu.memory_GB)},
                       {"bf16_TFLOPS", to_json(p.gpu.bf16_TFLOPS)},
                       {"fp8_TFLOPS", to_json(p.gpu.fp8_TFLOPS)},
                       {"fp32_TFLOPS", to_json(p.gpu.fp32_TFLOPS)},
                       {"l2_MiB", to_json(p.gpu.l2_MiB)},
                       {"smem_per_sm_KiB", to_json(p.gpu.smem_per_sm_KiB)},
                       {"max_threads_per_sm", to_json(p.gpu.max_threads_per_sm)},
                       {"max_blocks_per_sm", to_json(p.gpu.max_blocks_per_sm)}};
  ordered coll;
  coll["launch_us"] = to_json(p.collective.launch_us);
  coll["per_channel_us"] = to_json(p.collective.per_channel_us);
  coll["nvls_efficiency"] = to_json(p.collective.nvls_efficiency);
  coll["nvls_step_us"] = to_json(p.collective.nvls_step_us);
  coll["nvls_chunk_us"] = to_json(p.collective.nvls_chunk_us);
  ordered links;
  for (int k = 0; k < static_cast<int>(kProfiledLinks.size()); ++k) {
    const LinkParams& l = p.collective.links[k];
    ordered lj;
    lj["efficiency"] = to_json(l.efficiency);
    for (int q = 0; q < nccl::kProtocolCount; ++q) {
      lj[to_string(static_cast<nccl::Protocol>(q))] =
          ordered{{"step_us", to_json(l.protocols[q].step_us)},
                  {"chunk_us", to_json(l.protocols[q].chunk_us)},
                  {"channel_GBps", to_json(l.protocols[q].channel_GBps)},
                  {"saturation_threads", to_json(l.protocols[q].saturation_threads)}};
    }
    links[to_string(kProfiledLinks[k])] = std::move(lj);
  }
  coll["links"] = std::move(links);
  doc["collective"] = std::move(coll);
  ordered comp;
  comp["launch_us"] = to_json(p.compute.launch_us);
  comp["overlap_loss"] = to_json(p.compute.overlap_loss);
  comp["gemm_k_overhead"] = to_json(p.compute.gemm_k_overhead);
  comp["gemm_split_k_depth"] = to_json(p.compute.gemm_split_k_depth);
  ordered classes;
  for (int c = 0; c < kComputeClassCount; ++c) {
    const ComputeClassParams& k = p.compute.classes[c];
    classes[kClassNames[c]] = ordered{{"flops_efficiency", to_json(k.flops_efficiency)},
                                      {"hbm_efficiency", to_json(k.hbm_efficiency)},
                                      {"blocks_per_sm", to_json(k.blocks_per_sm)},
                                      {"smem_per_block_KiB", to_json(k.smem_per_block_KiB)}};
  }
  comp["classes"] = std::move(classes);
  doc["compute"] = std::move(comp);
  doc["contention"] = ordered{{"hbm_efficiency", to_json(p.contention.hbm_efficiency)},
                              {"comm_hbm_reduce", to_json(p.contention.comm_hbm_reduce)},
                              {"comm_hbm_copy", to_json(p.contention.comm_hbm_copy)},
                              {"l2_spill", to_json(p.contention.l2_spill)},
                              {"l2_pollution", to_json(p.contention.l2_pollution)},
                              {"comm_cta_smem_KiB", to_json(p.contention.comm_cta_smem_KiB)}};
  doc["calibration"] = p.calibration;
  return doc.dump(1) + "\n";
}

std::vector<ProfileField> profile_fields(HardwareProfile& p) {
  std::vector<ProfileField> out;
  const auto add = [&](std::string path, Measured& m) { out.push_back({std::move(path), &m}); };
  GpuParams& g = p.gpu;
  add("gpu.sms", g.sms);
  add("gpu.hbm_GBps", g.hbm_GBps);
  add("gpu.memory_GB", g.memory_GB);
  add("gpu.bf16_TFLOPS", g.bf16_TFLOPS);
  add("gpu.fp8_TFLOPS", g.fp8_TFLOPS);
  add("gpu.fp32_TFLOPS", g.fp32_TFLOPS);
  add("gpu.l2_MiB", g.l2_MiB);
  add("gpu.smem_per_sm_KiB", g.smem_per_sm_KiB);
  add("gpu.max_threads_per_sm", g.max_threads_per_sm);
  add("gpu.max_blocks_per_sm", g.max_blocks_per_sm);
  CollectiveParams& c = p.collective;
  add("collective.launch_us", c.launch_us);
  add("collective.per_channel_us", c.per_channel_us);
  add("collective.nvls_efficiency", c.nvls_efficiency);
  add("collective.nvls_step_us", c.nvls_step_us);
  add("collective.nvls_chunk_us", c.nvls_chunk_us);
  for (int k = 0; k < static_cast<int>(kProfiledLinks.size()); ++k) {
    const std::string lp = fmt::format("collective.links.{}", to_string(kProfiledLinks[k]));
    add(lp + ".efficiency", c.links[k].efficiency);
    for (int q = 0; q < nccl::kProtocolCount; ++q) {
      ProtocolParams& pr = c.links[k].protocols[q];
      const std::string pp = fmt::format("{}.{}", lp, to_string(static_cast<nccl::Protocol>(q)));
      add(pp + ".step_us", pr.step_us);
      add(pp + ".chunk_us", pr.chunk_us);
      add(pp + ".channel_GBps", pr.channel_GBps);
      add(pp + ".saturation_threads", pr.saturation_threads);
    }
  }
  add("compute.launch_us", p.compute.launch_us);
  add("compute.overlap_loss", p.compute.overlap_loss);
  add("compute.gemm_k_overhead", p.compute.gemm_k_overhead);
  add("compute.gemm_split_k_depth", p.compute.gemm_split_k_depth);
  for (int ci = 0; ci < kComputeClassCount; ++ci) {
    ComputeClassParams& k = p.compute.classes[ci];
    const std::string cp = fmt::format("compute.classes.{}", kClassNames[ci]);
    add(cp + ".flops_efficiency", k.flops_efficiency);
    add(cp + ".hbm_efficiency", k.hbm_efficiency);
    add(cp + ".blocks_per_sm", k.blocks_per_sm);
    add(cp + ".smem_per_block_KiB", k.smem_per_block_KiB);
  }
  ContentionParams& t = p.contention;
  add("contention.hbm_efficiency", t.hbm_efficiency);
  add("contention.comm_hbm_reduce", t.comm_hbm_reduce);
  add("contention.comm_hbm_copy", t.comm_hbm_copy);
  add("contention.l2_spill", t.l2_spill);
  add("contention.l2_pollution", t.l2_pollution);
  add("contention.comm_cta_smem_KiB", t.comm_cta_smem_KiB);
  return out;
}

bool is_prior(const Measured& m) {
  return m.source.starts_with("prior") || m.source.starts_with("default") ||
         m.source.starts_with("NCCL 2.28.9 constants");
}

std::vector<std::string> builtin_profiles() {
  std::vector<std::string> out;
  for (std::string_view n : embedded_names(profiles::files(), ".json")) {
    out.emplace_back(n);
  }
  return out;
}

HardwareProfile load_profile(const std::string& name_or_path) {
  if (const EmbeddedFile* f = find_embedded(profiles::files(), name_or_path + ".json")) {
    return parse_profile_json(f->content, "builtin:" + name_or_path);
  }
  std::error_code ec;
  if (!std::filesystem::exists(name_or_path, ec)) {
    throw Error(fmt::format("'{}' is neither a built-in profile ({}) nor a readable file",
                            name_or_path, fmt::join(builtin_profiles(), ", ")));
  }
  return parse_profile_json(json_reader::read_text_file(name_or_path, "profile"), name_or_path);
}

HardwareProfile default_profile_for_gpu(std::string_view gpu_type) {
  std::vector<std::string> known;
  for (const EmbeddedFile& f : profiles::files()) {
    HardwareProfile p = parse_profile_json(f.content, fmt::format("builtin:{}", f.name));
    if (p.gpu_type == gpu_type) {
      p.origin = fmt::format("builtin:{}", p.name);
      return p;
    }
    known.push_back(p.gpu_type);
  }
  throw Error(
      fmt::format("no built-in hardware profile for GPU type '{}' (built-in: {}); pass "
                  "--profile FILE",
                  gpu_type, fmt::join(known, ", ")));
}

}  // namespace lagom::hardware
