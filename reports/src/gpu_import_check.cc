#include "gpu_import_check.h"

#include <cmath>
#include <initializer_list>
#include <string_view>

#include "seam/sim/model/config_space.h"
#include "seam/sim/model/model.h"
#include "seam/sim/model/parallel_config.h"

namespace seam::reports::detail {

namespace {

using properties::GpuCaseRecord;

std::string quoted(std::string_view text) { return "\"" + std::string(text.substr(0, 64)) + "\""; }

Status bad(std::string_view key, std::string_view value, const std::string& why) {
  return Status::invalid("\"" + std::string(key) + "\" " + quoted(value) + ": " + why);
}

Status badNumber(std::string_view key, double value, const std::string& why) {
  return Status::invalid("\"" + std::string(key) + "\" " + std::to_string(value) + ": " + why);
}

Status oneOf(std::string_view key, const std::string& value,
             std::initializer_list<std::string_view> allowed) {
  std::string list;
  for (std::string_view a : allowed) {
    if (value == a) return Status::ok();
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return bad(key, value, "not one of " + list);
}

/// "pp=1 tp=8 attn_dp=1 attn_cp=1 moe_ep=1 moe_dp=1" (ParallelConfig::describe)
/// back into a config, which must be one the engine accepts.
Expected<ParallelConfig> parseConfig(const std::string& text) {
  ParallelConfig c;
  const std::pair<const char*, int*> leaves[] = {{"pp", &c.pp},           {"tp", &c.tp},
                                                 {"attn_dp", &c.attn_dp}, {"attn_cp", &c.attn_cp},
                                                 {"moe_ep", &c.moe_ep},   {"moe_dp", &c.moe_dp}};
  std::size_t at = 0;
  for (const auto& [name, value] : leaves) {
    const std::string key = std::string(at == 0 ? "" : " ") + name + "=";
    if (text.compare(at, key.size(), key) != 0) {
      return bad("case.config", text, "not a config as seam writes it (pp=P tp=T ...)");
    }
    at += key.size();
    const std::size_t end = text.find_first_not_of("0123456789", at);
    const std::size_t digits = (end == std::string::npos ? text.size() : end) - at;
    if (digits == 0 || digits > 4) return bad("case.config", text, "a size out of range");
    *value = std::stoi(text.substr(at, digits));
    at += digits;
  }
  if (at != text.size()) return bad("case.config", text, "text after the config");
  if (Status s = validate(c); !s) return bad("case.config", text, s.message());
  if (c.world() > kMaxWorld) {
    return bad("case.config", text, "a world larger than any GPU machine seam runs on");
  }
  return c;
}

Status checkCase(const GpuCaseRecord& c, int* world) {
  if (c.model != "pattern" && !findPreset(c.model)) {
    return bad("case.model", c.model, "not a model preset of this seam");
  }
  auto config = parseConfig(c.config);
  if (!config) return config.status();
  *world = config->world();
  return Status::ok();
}

Status checkRank(std::string_view key, int rank, int world) {
  if (rank < 0 || rank >= world) {
    return badNumber(key, rank, "not a rank of the case's world of " + std::to_string(world));
  }
  return Status::ok();
}

Status checkTimings(const properties::GpuRunRecord& run, int world) {
  for (const properties::GpuTimingRecord& t : run.timings) {
    if (Status s = checkRank("timings.rank", t.rank, world); !s) return s;
    OpKind kind;
    if (!parseOpKind(t.op, &kind)) return bad("timings.op", t.op, "not an op kind");
    if (t.op_index < 0) return badNumber("timings.op_index", t.op_index, "negative");
    if (t.bytes < 0) return badNumber("timings.bytes", static_cast<double>(t.bytes), "negative");
    if (t.group_size < 1 || t.group_size > world) {
      return badNumber("timings.group_size", t.group_size, "not a group size of the case");
    }
    for (const double v : {t.median_us, t.p10_us, t.p90_us, t.algbw_gbs, t.busbw_gbs}) {
      if (!std::isfinite(v) || v < 0)
        return badNumber("timings", v, "a negative or non-finite time");
    }
  }
  for (const properties::GpuRankRecord& r : run.ranks) {
    if (Status s = checkRank("ranks.rank", r.rank, world); !s) return s;
  }
  return Status::ok();
}

Status checkRun(const properties::GpuRunRecord& run) {
  int world = 0;
  if (Status s = checkCase(run.c, &world); !s) return s;
  if (Status s =
          oneOf("verdict", run.verdict, {"identical", "differs", "completed", "failed", "hung"});
      !s) {
    return s;
  }
  if (Status s = oneOf("numeric.mode", run.numeric.mode, {"exact", "real"}); !s) return s;
  return checkTimings(run, world);
}

Status checkCompare(const properties::GpuCompareRecord& cmp) {
  int world = 0;
  if (Status s = checkCase(cmp.c, &world); !s) return s;
  if (!cmp.verdict.empty()) {
    if (Status s =
            oneOf("verdict", cmp.verdict,
                  {"holds", "refuted", "untested (other roundings, the same bits on this run)"});
        !s) {
      return s;
    }
  }
  return Status::ok();
}

Status checkBench(const properties::GpuBenchRecord& bench) {
  int world = 0;
  if (Status s = checkCase(bench.c, &world); !s) return s;
  if (!bench.verdict.empty()) {
    if (Status s = oneOf("verdict", bench.verdict, {"completed", "failed"}); !s) return s;
  }
  if (bench.collectives) {
    for (const auto& b : *bench.collectives) {
      if (b.bytes < 0)
        return badNumber("collectives.bytes", static_cast<double>(b.bytes), "negative");
      if (b.occurrences < 0) return badNumber("collectives.occurrences", b.occurrences, "negative");
    }
  }
  if (bench.fused) {
    for (const auto& f : *bench.fused) {
      if (f.bytes < 0) return badNumber("fused.bytes", static_cast<double>(f.bytes), "negative");
      if (f.tokens < 1) return badNumber("fused.tokens", f.tokens, "not a token count");
      if (f.ranks < 1 || f.ranks > kMaxWorld) {
        return badNumber("fused.ranks", f.ranks, "not a rank count");
      }
    }
  }
  if (bench.graph) {
    for (const auto& g : *bench.graph) {
      if (Status s = checkRank("graph.rank", g.rank, world); !s) return s;
    }
  }
  return Status::ok();
}

Status checkAllReduce(const properties::GpuAllReduceRecord& bench) {
  if (bench.bytes < 0) return badNumber("bytes", static_cast<double>(bench.bytes), "negative");
  if (bench.devices < 1 || bench.devices > kMaxWorld) {
    return badNumber("devices", bench.devices, "not a device count");
  }
  return Status::ok();
}

}  // namespace

Status checkGpuResult(const properties::GpuResult& result, const std::string& version) {
  const properties::GpuOrigin& origin = std::visit(
      [](const auto& record) -> const properties::GpuOrigin& { return record.origin; }, result);
  if (origin.version && *origin.version != version) {
    return bad("version", *origin.version, "written by another seam; this one reads " + version);
  }
  if (const auto* r = std::get_if<properties::GpuRunRecord>(&result)) return checkRun(*r);
  if (const auto* c = std::get_if<properties::GpuCompareRecord>(&result)) return checkCompare(*c);
  if (const auto* b = std::get_if<properties::GpuBenchRecord>(&result)) return checkBench(*b);
  if (const auto* a = std::get_if<properties::GpuAllReduceRecord>(&result))
    return checkAllReduce(*a);
  return Status::ok();
}

}  // namespace seam::reports::detail
