// JSON workload format v1: a strict reader (unknown fields and wrong types are errors that name
// the object) and a deterministic writer.
#include "lagom/traces/workload_json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "lagom/common/error.hpp"
#include "lagom/common/json_reader.hpp"
#include "lagom/common/units.hpp"

namespace lagom::traces {
namespace {

using json_reader::check_known_fields;
using json_reader::Ctx;
using json_reader::require;
using nlohmann::json;

// Names a boolean by its type alone ("boolean"), unlike the other readers.
std::string type_of(const json& v) {
  return v.is_boolean() ? std::string(v.type_name()) : json_reader::type_of(v);
}

std::string get_string(const Ctx& ctx, const json& v, std::string_view field) {
  if (!v.is_string()) {
    ctx.fail(fmt::format("'{}' must be a string, got {}", field, type_of(v)));
  }
  return v.get<std::string>();
}

std::int64_t get_nonneg_int(const Ctx& ctx, const json& v, std::string_view field) {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return static_cast<std::int64_t>(u);
    }
  } else if (v.is_number_integer()) {
    ctx.fail(fmt::format("'{}' must be >= 0, got {}", field, v.dump()));
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (d >= 0 && d < 9.2e18 && d == std::floor(d)) {
      return static_cast<std::int64_t>(d);
    }
  }
  ctx.fail(fmt::format("'{}' must be a non-negative integer, got {}", field, type_of(v)));
}

std::int64_t get_duration_ns(const Ctx& ctx, const json& v) {
  if (!v.is_number()) {
    ctx.fail(fmt::format("'duration_us' must be a number of microseconds, got {}", type_of(v)));
  }
  const double us = v.get<double>();
  if (!std::isfinite(us) || us < 0) {
    ctx.fail(fmt::format("'duration_us' must be >= 0, got {}", v.dump()));
  }
  if (us > 4.0e12) {  // 46 days: certainly a unit mistake, and keeps ns far from overflow
    ctx.fail(fmt::format("'duration_us' is implausibly large: {}", v.dump()));
  }
  return std::llround(us * 1000.0);
}

}  // namespace

std::string read_text_file(const std::string& path, std::string_view what) {
  return json_reader::read_text_file(path, what);
}

Workload parse_workload_json(std::string_view text, std::string_view source) {
  const json doc = json_reader::parse_document(text, source, kWorkloadFormat);
  Ctx ctx{source, ""};
  if (!doc.is_object()) {
    ctx.fail(fmt::format("expected a JSON object at the top level, got {}", type_of(doc)));
  }
  check_known_fields(ctx, doc, {"format", "version", "description", "metadata", "groups", "ranks"});
  {
    const json& f = require(ctx, doc, "format");
    if (!f.is_string() || f.get<std::string>() != kWorkloadFormat) {
      ctx.fail(fmt::format("'format' must be \"{}\", got {}", kWorkloadFormat, type_of(f)));
    }
    const json& v = require(ctx, doc, "version");
    if (!v.is_number_integer() || v.get<std::int64_t>() != kWorkloadVersion) {
      ctx.fail(fmt::format("unsupported 'version' {}: this lagom reads version {}", v.dump(),
                           kWorkloadVersion));
    }
  }
  const json& ranks = require(ctx, doc, "ranks");
  if (!ranks.is_array() || ranks.empty()) {
    ctx.fail("'ranks' must be a non-empty array");
  }
  const auto nranks = static_cast<std::uint32_t>(ranks.size());
  WorkloadBuilder b(nranks);

  // Groups.
  if (auto it = doc.find("groups"); it != doc.end()) {
    if (!it->is_object()) {
      ctx.fail(fmt::format("'groups' must be an object of name: [ranks], got {}", type_of(*it)));
    }
    for (const auto& [name, members] : it->items()) {
      Ctx gctx{source, fmt::format("groups.{}", name)};
      // [ranks], or {"ranks": [...], "gpus": [...], "mirrors": [[...], ...]} for a communicator
      // of a folded workload.
      const json* rank_list = &members;
      std::vector<std::uint32_t> gpus;
      std::vector<std::vector<std::uint32_t>> mirrors;
      const auto gpu_list = [&](const json& list, std::string_view what) {
        if (!list.is_array()) {
          gctx.fail(
              fmt::format("'{}' must be an array of GPU numbers, got {}", what, type_of(list)));
        }
        std::vector<std::uint32_t> out;
        for (const json& v : list) {
          const std::int64_t gpu = get_nonneg_int(gctx, v, what);
          if (gpu > std::int64_t{1} << 31) {
            gctx.fail(fmt::format("GPU {} is out of range", gpu));
          }
          out.push_back(static_cast<std::uint32_t>(gpu));
        }
        return out;
      };
      if (members.is_object()) {
        check_known_fields(gctx, members, {"ranks", "gpus", "mirrors"});
        rank_list = &require(gctx, members, "ranks");
        if (auto g = members.find("gpus"); g != members.end()) {
          gpus = gpu_list(*g, "gpus");
        }
        if (auto m = members.find("mirrors"); m != members.end()) {
          const auto not_instances = [&](const json& got) {
            gctx.fail(
                fmt::format("'mirrors' must be an array of GPU arrays (one per instance), got {}",
                            type_of(got)));
          };
          if (!m->is_array()) {
            not_instances(*m);
          }
          for (const json& one : *m) {
            if (!one.is_array()) {
              not_instances(one);
            }
            mirrors.push_back(gpu_list(one, "mirrors"));
          }
        }
      }
      if (!rank_list->is_array()) {
        gctx.fail(fmt::format("must be an array of ranks, got {}", type_of(*rank_list)));
      }
      std::vector<Rank> rs;
      for (const json& r : *rank_list) {
        const std::int64_t v = get_nonneg_int(gctx, r, "rank");
        if (v >= nranks) {
          gctx.fail(
              fmt::format("rank {} does not exist (the workload has ranks 0..{})", v, nranks - 1));
        }
        rs.push_back(static_cast<Rank>(v));
      }
      try {
        b.add_group(name, std::move(rs), std::move(gpus), std::move(mirrors));
      } catch (const Error& e) {
        gctx.fail(e.what());
      }
    }
  }
  std::unordered_map<std::string, GroupId> group_ids;
  // The builder numbers groups in insertion order, which is nlohmann's key order.
  if (auto it = doc.find("groups"); it != doc.end()) {
    GroupId next = 0;
    for (const auto& [name, members] : it->items()) {
      group_ids.emplace(name, next++);
    }
  }

  // Ranks, streams, ops.
  std::vector<const json*> by_rank(nranks, nullptr);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    Ctx rctx{source, fmt::format("ranks[{}]", i)};
    const json& r = ranks[i];
    if (!r.is_object()) {
      rctx.fail(fmt::format("expected an object, got {}", type_of(r)));
    }
    check_known_fields(rctx, r, {"rank", "streams"});
    const std::int64_t id = get_nonneg_int(rctx, require(rctx, r, "rank"), "rank");
    if (id >= nranks) {
      rctx.fail(fmt::format("'rank' is {}, but with {} entries in 'ranks' ranks must be 0..{}", id,
                            nranks, nranks - 1));
    }
    if (by_rank[static_cast<std::size_t>(id)] != nullptr) {
      rctx.fail(fmt::format("rank {} is listed twice", id));
    }
    by_rank[static_cast<std::size_t>(id)] = &r;
  }

  struct PendingDeps {
    OpId op;
    const json* deps;
    std::string path;
  };
  std::vector<PendingDeps> pending;
  std::unordered_map<std::string, std::pair<OpId, std::string>> op_ids;  // id -> (op, path)
  for (std::size_t ri = 0; ri < ranks.size(); ++ri) {
    const json& r = ranks[ri];
    const auto rank = static_cast<Rank>(r["rank"].get<std::int64_t>());
    Ctx rctx{source, fmt::format("ranks[{}]", ri)};
    const json& streams = require(rctx, r, "streams");
    if (!streams.is_array()) {
      rctx.fail(fmt::format("'streams' must be an array, got {}", type_of(streams)));
    }
    for (std::size_t si = 0; si < streams.size(); ++si) {
      Ctx sctx{source, fmt::format("ranks[{}].streams[{}]", ri, si)};
      const json& s = streams[si];
      if (!s.is_object()) {
        sctx.fail(fmt::format("expected an object, got {}", type_of(s)));
      }
      check_known_fields(sctx, s, {"stream", "ops"});
      const std::string sname = get_string(sctx, require(sctx, s, "stream"), "stream");
      if (sname.empty()) {
        sctx.fail("'stream' must not be empty");
      }
      const StreamId sid = b.add_stream(rank, sname);
      const json& ops = require(sctx, s, "ops");
      if (!ops.is_array()) {
        sctx.fail(fmt::format("'ops' must be an array, got {}", type_of(ops)));
      }
      for (std::size_t oi = 0; oi < ops.size(); ++oi) {
        Ctx octx{source, fmt::format("ranks[{}].streams[{}].ops[{}]", ri, si, oi)};
        const json& o = ops[oi];
        if (!o.is_object()) {
          octx.fail(fmt::format("expected an object, got {}", type_of(o)));
        }
        const std::string id = get_string(octx, require(octx, o, "id"), "id");
        if (id.empty()) {
          octx.fail("'id' must not be empty");
        }
        octx.path += fmt::format(" (id '{}')", id);
        check_known_fields(
            octx, o,
            {"id", "kind", "deps", "duration_us", "bytes", "group", "peer", "root", "config",
             "flops", "blocks", "blocks_per_sm", "class", "precision", "args"});
        const std::string kind_name = get_string(octx, require(octx, o, "kind"), "kind");
        const std::optional<OpKind> kind = parse_op_kind(kind_name);
        if (!kind) {
          octx.fail(fmt::format(
              "unknown op kind '{}' (known: compute, memcpy, allreduce, allgather, reducescatter, "
              "broadcast, reduce, alltoall, send, recv)",
              kind_name));
        }
        OpSpec spec;
        spec.kind = *kind;
        if (auto it = o.find("bytes"); it != o.end()) {
          spec.bytes = get_nonneg_int(octx, *it, "bytes");
        } else if (is_comm(*kind) || *kind == OpKind::kMemcpy) {
          octx.fail(fmt::format("{} {} needs 'bytes'", article(kind_name), kind_name));
        }
        if (auto it = o.find("duration_us"); it != o.end()) {
          spec.duration_ns = get_duration_ns(octx, *it);
        }
        if (auto it = o.find("group"); it != o.end()) {
          if (!is_comm(*kind)) {
            octx.fail(fmt::format("{} {} op takes no 'group'", article(kind_name), kind_name));
          }
          const std::string gname = get_string(octx, *it, "group");
          auto g = group_ids.find(gname);
          if (g == group_ids.end()) {
            octx.fail(fmt::format("unknown group '{}' (define it under \"groups\")", gname));
          }
          spec.group = g->second;
        } else if (is_collective(*kind)) {
          octx.fail(fmt::format("{} {} needs 'group'", article(kind_name), kind_name));
        }
        const bool wants_peer = is_p2p(*kind);
        const bool wants_root = has_root(*kind);
        if (auto it = o.find("peer"); it != o.end()) {
          if (!wants_peer) {
            octx.fail(fmt::format("{} {} takes no 'peer'{}", article(kind_name), kind_name,
                                  wants_root ? " (did you mean 'root'?)" : ""));
          }
          const std::int64_t p = get_nonneg_int(octx, *it, "peer");
          if (p >= nranks) {
            octx.fail(fmt::format("'peer' is {}, but ranks are 0..{}", p, nranks - 1));
          }
          spec.peer = static_cast<std::int32_t>(p);
        } else if (wants_peer) {
          octx.fail(
              fmt::format("{} {} needs 'peer' (the other rank)", article(kind_name), kind_name));
        }
        if (auto it = o.find("root"); it != o.end()) {
          if (!wants_root) {
            octx.fail(fmt::format("{} {} takes no 'root'", article(kind_name), kind_name));
          }
          const std::int64_t p = get_nonneg_int(octx, *it, "root");
          if (p >= nranks) {
            octx.fail(fmt::format("'root' is {}, but ranks are 0..{}", p, nranks - 1));
          }
          spec.peer = static_cast<std::int32_t>(p);
        } else if (wants_root) {
          octx.fail(fmt::format("{} {} needs 'root'", article(kind_name), kind_name));
        }
        if (auto it = o.find("args"); it != o.end() && !it->is_object()) {
          octx.fail(fmt::format("'args' must be an object, got {}", type_of(*it)));
        }
        OpId op = 0;
        try {
          op = b.add_op(sid, spec, id);
        } catch (const Error& e) {
          octx.fail(e.what());
        }
        {
          const bool has_shape = o.contains("flops") || o.contains("blocks") ||
                                 o.contains("blocks_per_sm") || o.contains("class") ||
                                 o.contains("precision");
          if (has_shape) {
            if (*kind != OpKind::kCompute) {
              octx.fail(
                  fmt::format("{} {} op takes no 'flops', 'blocks', 'blocks_per_sm', 'class' or "
                              "'precision' (they describe compute kernels)",
                              article(kind_name), kind_name));
            }
            ComputeShape shape;
            if (auto f = o.find("flops"); f != o.end()) {
              if (!f->is_number() || !(f->get<double>() >= 0) || !std::isfinite(f->get<double>())) {
                octx.fail(
                    fmt::format("'flops' must be a non-negative number, got {}", type_of(*f)));
              }
              shape.flops = f->get<double>();
            }
            auto count = [&](const char* key) -> std::int32_t {
              auto f = o.find(key);
              if (f == o.end()) {
                return 0;
              }
              const std::int64_t v = get_nonneg_int(octx, *f, key);
              if (v == 0 || v > (std::int64_t{1} << 30)) {
                octx.fail(
                    fmt::format("'{}' must be in 1..{}, got {}", key, std::int64_t{1} << 30, v));
              }
              return static_cast<std::int32_t>(v);
            };
            shape.blocks = count("blocks");
            shape.blocks_per_sm = count("blocks_per_sm");
            if (shape.blocks_per_sm > 64) {
              octx.fail(
                  fmt::format("'blocks_per_sm' must be at most 64, got {}", shape.blocks_per_sm));
            }
            if (auto c = o.find("class"); c != o.end()) {
              const std::string cname = get_string(octx, *c, "class");
              auto cls = parse_compute_class(cname);
              if (!cls) {
                octx.fail(
                    fmt::format("unknown compute class '{}' (known: gemm, attention, "
                                "elementwise, norm, optimizer, other)",
                                cname));
              }
              shape.cls = *cls;
            }
            if (auto pr = o.find("precision"); pr != o.end()) {
              const std::string pname = get_string(octx, *pr, "precision");
              auto precision = parse_precision(pname);
              if (!precision) {
                octx.fail(
                    fmt::format("unknown precision '{}' (known: bf16, fp16, fp8, fp32)", pname));
              }
              shape.precision = *precision;
            }
            b.set_compute_shape(op, shape);
          }
        }
        if (auto it = o.find("config"); it != o.end()) {
          if (!is_comm(*kind)) {
            octx.fail(
                fmt::format("{} {} op takes no NCCL 'config'", article(kind_name), kind_name));
          }
          if (!it->is_object()) {
            octx.fail(fmt::format("'config' must be an object, got {}", type_of(*it)));
          }
          Ctx cctx{source, octx.path + ".config"};
          check_known_fields(cctx, *it, {"algo", "proto", "nchannels", "nthreads", "chunk_bytes"});
          nccl::ConfigOverride cfg;
          if (auto a = it->find("algo"); a != it->end()) {
            try {
              cfg.algo = nccl::algorithm_named(get_string(cctx, *a, "algo"));
            } catch (const Error& e) {
              Ctx{source, cctx.path + ".algo"}.fail(e.what());
            }
          }
          if (auto p = it->find("proto"); p != it->end()) {
            try {
              cfg.proto = nccl::protocol_named(get_string(cctx, *p, "proto"));
            } catch (const Error& e) {
              Ctx{source, cctx.path + ".proto"}.fail(e.what());
            }
          }
          auto positive_int = [&](const char* key, std::int64_t max) -> std::int64_t {
            auto f = it->find(key);
            if (f == it->end()) {
              return 0;
            }
            const std::int64_t v = get_nonneg_int(cctx, *f, key);
            if (v == 0 || v > max) {
              cctx.fail(fmt::format("'{}' must be in 1..{}, got {}", key, max, v));
            }
            return v;
          };
          cfg.nchannels = static_cast<int>(positive_int("nchannels", 1024));
          cfg.nthreads = static_cast<int>(positive_int("nthreads", 4096));
          cfg.chunk_bytes = positive_int("chunk_bytes", std::int64_t{1} << 40);
          b.pin_config(op, std::move(cfg));
        }
        auto [where, inserted] = op_ids.emplace(id, std::make_pair(op, octx.path));
        if (!inserted) {
          octx.fail(
              fmt::format("duplicate op id '{}' (first defined at {})", id, where->second.second));
        }
        if (auto it = o.find("deps"); it != o.end()) {
          if (!it->is_array()) {
            octx.fail(fmt::format("'deps' must be an array of op ids, got {}", type_of(*it)));
          }
          pending.push_back({op, &*it, octx.path});
        }
      }
    }
  }
  for (const PendingDeps& p : pending) {
    Ctx octx{source, p.path};
    for (const json& d : *p.deps) {
      const std::string dep = get_string(octx, d, "deps");
      auto it = op_ids.find(dep);
      if (it == op_ids.end()) {
        octx.fail(fmt::format("depends on '{}', which is not an op id in this workload", dep));
      }
      if (it->second.first == p.op) {
        octx.fail("dependency cycle: the op depends on itself");
      }
      b.add_dep(p.op, it->second.first);
    }
  }
  return std::move(b).build(source);
}

Workload load_workload_file(const std::string& path) {
  return parse_workload_json(read_text_file(path, "workload file"), path);
}

void write_workload_json(const Workload& w, std::ostream& out) {
  auto q = [](std::string_view s) { return json(s).dump(); };
  out << "{\"format\": \"" << kWorkloadFormat << "\", \"version\": " << kWorkloadVersion << ",\n";
  out << " \"groups\": {";
  for (std::size_t g = 0; g < w.groups().size(); ++g) {
    const Group& grp = w.groups()[g];
    out << (g ? ",\n  " : "\n  ") << q(grp.name) << ": ";
    if (grp.gpus.empty() && grp.mirrors.empty()) {
      out << "[" << fmt::format("{}", fmt::join(grp.ranks, ", ")) << "]";
    } else {
      out << "{\"ranks\": [" << fmt::format("{}", fmt::join(grp.ranks, ", ")) << "]";
      if (!grp.gpus.empty()) {
        out << ", \"gpus\": [" << fmt::format("{}", fmt::join(grp.gpus, ", ")) << "]";
      }
      if (!grp.mirrors.empty()) {
        out << ", \"mirrors\": [";
        for (std::size_t m = 0; m < grp.mirrors.size(); ++m) {
          out << (m ? ", [" : "[") << fmt::format("{}", fmt::join(grp.mirrors[m], ", ")) << "]";
        }
        out << "]";
      }
      out << "}";
    }
  }
  out << (w.groups().empty() ? "},\n" : "\n },\n");
  out << " \"ranks\": [";
  for (Rank r = 0; r < w.rank_count(); ++r) {
    out << (r ? ",\n  " : "\n  ") << "{\"rank\": " << r << ", \"streams\": [";
    for (StreamId s = w.first_stream(r); s < w.last_stream(r); ++s) {
      const Stream& st = w.stream(s);
      out << (s != w.first_stream(r) ? ",\n    " : "\n    ") << "{\"stream\": " << q(st.name)
          << ", \"ops\": [";
      for (OpId op = st.first_op; op < st.first_op + st.op_count; ++op) {
        const OpKind k = w.kind(op);
        out << (op != st.first_op ? ",\n      " : "\n      ") << "{\"id\": " << q(w.name(op))
            << ", \"kind\": \"" << to_string(k) << '"';
        if (w.bytes(op) != 0 || is_comm(k) || k == OpKind::kMemcpy) {
          out << ", \"bytes\": " << w.bytes(op);
        }
        if (w.group(op) != kNoGroup) {
          out << ", \"group\": " << q(w.group_info(w.group(op)).name);
        }
        if (is_p2p(k)) {
          out << ", \"peer\": " << w.peer(op);
        } else if (has_root(k)) {
          out << ", \"root\": " << w.peer(op);
        }
        if (w.duration_ns(op) != kNoDuration) {
          out << ", \"duration_us\": " << format_us(w.duration_ns(op));
        }
        if (const ComputeShape* sh = w.compute_shape(op)) {
          if (sh->flops > 0) {
            out << ", \"flops\": " << json(sh->flops).dump();
          }
          if (sh->blocks > 0) {
            out << ", \"blocks\": " << sh->blocks;
          }
          if (sh->blocks_per_sm > 0) {
            out << ", \"blocks_per_sm\": " << sh->blocks_per_sm;
          }
          if (sh->cls != ComputeClass::kOther) {
            out << ", \"class\": \"" << to_string(sh->cls) << '"';
          }
          if (sh->precision != Precision::kBf16) {
            out << ", \"precision\": \"" << to_string(sh->precision) << '"';
          }
        }
        if (const nccl::ConfigOverride* c = w.pinned_config(op)) {
          out << ", \"config\": {";
          const char* sep = "";
          if (c->algo) {
            out << "\"algo\": " << q(to_string(*c->algo));
            sep = ", ";
          }
          if (c->proto) {
            out << sep << "\"proto\": " << q(to_string(*c->proto));
            sep = ", ";
          }
          if (c->nchannels > 0) {
            out << sep << "\"nchannels\": " << c->nchannels;
            sep = ", ";
          }
          if (c->nthreads > 0) {
            out << sep << "\"nthreads\": " << c->nthreads;
            sep = ", ";
          }
          if (c->chunk_bytes > 0) {
            out << sep << "\"chunk_bytes\": " << c->chunk_bytes;
          }
          out << '}';
        }
        if (!w.deps(op).empty()) {
          out << ", \"deps\": [";
          bool first = true;
          for (OpId d : w.deps(op)) {
            out << (first ? "" : ", ") << q(w.name(d));
            first = false;
          }
          out << ']';
        }
        out << '}';
      }
      out << (st.op_count ? "\n    ]}" : "]}");
    }
    out << (w.last_stream(r) > w.first_stream(r) ? "\n  ]}" : "]}");
  }
  out << "\n ]\n}\n";
}

}  // namespace lagom::traces
