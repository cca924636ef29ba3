// The placement file reader (placement.hpp, docs/formats/placement.md).
#include "lagom/models/placement.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "lagom/common/error.hpp"
#include "lagom/common/json_reader.hpp"

namespace lagom::models {

std::vector<std::uint32_t> parse_placement(std::string_view text, std::string_view origin,
                                           std::int64_t world, std::int64_t gpus,
                                           int gpus_per_node) {
  using json_reader::Ctx;
  const nlohmann::json doc = json_reader::parse_document(text, origin, kPlacementFormat);
  const Ctx ctx{origin, ""};
  json_reader::expect_object(ctx, doc, {"format", "version", "description", "nodes", "gpus"});
  if (json_reader::get_string(ctx.at("format"), json_reader::require(ctx, doc, "format")) !=
      kPlacementFormat) {
    ctx.at("format").fail(fmt::format("expected \"{}\"", kPlacementFormat));
  }
  json_reader::get_int(ctx.at("version"), json_reader::require(ctx, doc, "version"), 1, 1);
  const bool by_node = doc.contains("nodes");
  if (by_node == doc.contains("gpus")) {
    ctx.fail("give exactly one of \"nodes\" (the node order) and \"gpus\" (a GPU per rank)");
  }
  const char* key = by_node ? "nodes" : "gpus";
  const Ctx c = ctx.at(key);
  const nlohmann::json& list = doc[key];
  const std::int64_t per = by_node ? gpus_per_node : 1;
  const std::int64_t slots = gpus / per;  // nodes or GPUs of the cluster
  if (by_node && world % per != 0) {
    c.fail(fmt::format("the step's {} ranks do not fill whole {}-GPU nodes; give \"gpus\"", world,
                       per));
  }
  const std::int64_t want = world / per;
  if (!list.is_array() || static_cast<std::int64_t>(list.size()) != want) {
    c.fail(fmt::format(
        "expected an array of {} {} (the step has {} ranks{}), got {}", want,
        by_node ? "node numbers" : "GPU numbers", world,
        by_node ? fmt::format(" on {}-GPU nodes", per) : std::string(),
        list.is_array() ? fmt::format("{} entries", list.size()) : json_reader::type_of(list)));
  }
  std::vector<std::int64_t> first(static_cast<std::size_t>(slots), -1);
  std::vector<std::uint32_t> out(static_cast<std::size_t>(world));
  for (std::size_t k = 0; k < list.size(); ++k) {
    const Ctx ck = c.at(k);
    if (!list[k].is_number_integer()) {
      ck.fail(fmt::format("expected an integer, got {}", json_reader::type_of(list[k])));
    }
    const std::int64_t v = list[k].get<std::int64_t>();
    if (v < 0 || v >= slots) {
      ck.fail(fmt::format("{} {} is not in the cluster ({}s 0..{})", by_node ? "node" : "GPU", v,
                          by_node ? "node" : "GPU", slots - 1));
    }
    if (first[static_cast<std::size_t>(v)] >= 0) {
      ck.fail(fmt::format("{} {} is already {}[{}]", by_node ? "node" : "GPU", v, key,
                          first[static_cast<std::size_t>(v)]));
    }
    first[static_cast<std::size_t>(v)] = static_cast<std::int64_t>(k);
    for (std::int64_t i = 0; i < per; ++i) {
      out[static_cast<std::size_t>(static_cast<std::int64_t>(k) * per + i)] =
          static_cast<std::uint32_t>(v * per + i);
    }
  }
  return out;
}

}  // namespace lagom::models
