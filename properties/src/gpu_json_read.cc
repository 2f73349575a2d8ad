// The reading half of gpu_json.h. The fields the store's rows are made of
// are read strictly and in a fixed order, so that a refused file names the
// same first bad field whatever else is wrong with it; the others are taken
// only when present with their type.
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <utility>

#include "seam/properties/gpu_json.h"

namespace seam::properties {

namespace {

using nlohmann::json;

/// Converts `v` to T when it holds a T (an integer only when it fits).
template <class T>
bool convert(const json& v, T* out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return false;
    *out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    // nlohmann converts a float, or an integer out of T's range, with a
    // plain cast (undefined for 1e300 into an int): only an integer that
    // fits is this field's value.
    const bool fits = v.is_number_unsigned()  ? std::in_range<T>(v.get<std::uint64_t>())
                      : v.is_number_integer() ? std::in_range<T>(v.get<std::int64_t>())
                                              : false;
    if (!fits) return false;
    *out = v.is_number_unsigned() ? static_cast<T>(v.get<std::uint64_t>())
                                  : static_cast<T>(v.get<std::int64_t>());
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return false;
    *out = v.get<std::string>();
  } else {
    if (!v.is_number()) return false;
    *out = v.get<T>();
  }
  return true;
}

/// Takes `key` of `j` into `out` when it is there with its type; else leaves `out`.
template <class T>
void take(const json& j, const char* key, T* out) {
  if (!j.is_object() || !j.contains(key)) return;
  T v{};
  if (convert(j.at(key), &v)) *out = std::move(v);
}
template <class T>
void take(const json& j, const char* key, std::optional<T>* out) {
  if (!j.is_object() || !j.contains(key)) return;
  T v{};
  if (convert(j.at(key), &v)) *out = std::move(v);
}

/// Reads the required fields; records the first missing or mistyped one.
struct Reader {
  std::string missing;
  const json& at(const json& j, const char* key) {
    static const json kNull;
    if (!j.is_object() || !j.contains(key)) {
      if (missing.empty()) missing = key;
      return kNull;
    }
    return j.at(key);
  }
  template <class T>
  T get(const json& j, const char* key, T fallback) {
    const json& v = at(j, key);
    if (v.is_null()) return fallback;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      T out{};
      if (convert(v, &out)) return out;
      if (missing.empty()) missing = std::string(key) + " (not an integer in range)";
      return fallback;
    }
    try {
      return v.get<T>();
    } catch (const json::exception&) {
      if (missing.empty()) missing = std::string(key) + " (wrong type)";
      return fallback;
    }
  }
  std::string text(const json& j, const char* key) { return get<std::string>(j, key, ""); }
  double number(const json& j, const char* key) { return get<double>(j, key, 0); }
  int integer(const json& j, const char* key) { return get<int>(j, key, 0); }
  std::int64_t bytes(const json& j, const char* key) { return get<std::int64_t>(j, key, 0); }
};

/// The hash `key` of an object of hex strings (0 when absent).
std::uint64_t parseHash(const json& hashes, const char* key) {
  if (!hashes.is_object() || !hashes.contains(key) || !hashes.at(key).is_string()) return 0;
  return std::strtoull(hashes.at(key).get<std::string>().c_str(), nullptr, 16);
}

/// "case": model, pattern (run, bench), config, flags, tokens, policy (run, bench), reproduce.
GpuCaseRecord readCase(Reader& r, const json& doc, bool pattern_and_policy) {
  const json& cs = r.at(doc, "case");
  GpuCaseRecord c;
  c.model = r.text(cs, "model");
  if (pattern_and_policy) c.pattern = r.text(cs, "pattern");
  c.config = r.text(cs, "config");
  c.flags = r.text(cs, "flags");
  c.tokens = r.text(cs, "tokens");
  if (pattern_and_policy) c.policy = r.text(cs, "policy");
  c.reproduce = r.text(cs, "reproduce");
  return c;
}

GpuNumericRecord takeNumeric(const json& doc) {
  GpuNumericRecord n;
  if (!doc.contains("numeric")) return n;
  const json& j = doc.at("numeric");
  take(j, "mode", &n.mode);
  take(j, "hidden", &n.hidden);
  take(j, "inner", &n.inner);
  return n;
}

/// The first differing element of a diff ("first"), when there.
void takeFirst(const json& first, OutputDiff* d) {
  take(first, "stack", &d->stack);
  take(first, "token", &d->token);
  take(first, "element", &d->element);
  take(first, "a", &d->a);
  take(first, "b", &d->b);
}

/// A diff's max_abs: a number, NaN for null (a non-finite difference), else 0.
double maxAbs(const json& j) {
  if (!j.is_object() || !j.contains("max_abs")) return 0;
  const json& v = j.at("max_abs");
  return v.is_number() ? v.get<double>()
         : v.is_null() ? std::numeric_limits<double>::quiet_NaN()
                       : 0;
}

/// A diff object ({"identical", "first", "max_abs", ...}) beyond "identical".
void takeDiff(const json& j, OutputDiff* d) {
  if (!j.is_object()) return;
  if (j.contains("first")) takeFirst(j.at("first"), d);
  d->max_abs = maxAbs(j);
  take(j, "max_ulps", &d->max_ulps);
  if (j.contains("ulps_of")) d->bf16_ulps = j.at("ulps_of") == "bf16";
}
OutputDiff takenDiff(const json& j) {
  OutputDiff d;
  take(j, "identical", &d.identical);
  takeDiff(j, &d);
  return d;
}

GpuOrigin readOrigin(Reader& r, const json& doc, bool devices) {
  GpuOrigin o;
  if (doc.contains("command") && doc.at("command").is_string())
    o.command = doc.at("command").get<std::string>();
  if (!doc.contains("version") || !doc.at("version").is_null()) o.version = r.text(doc, "version");
  if (!devices) o.device = r.text(doc, "device");
  take(doc, "host", &o.host);
  take(doc, "written_ms", &o.written_ms);
  take(doc, "commit", &o.commit);
  return o;
}

void readVersions(Reader& r, const json& doc, GpuOrigin* o) {
  if (!doc.contains("versions")) return;
  const json& v = doc.at("versions");
  GpuVersionsRecord out;
  out.text = r.text(v, "text");
  take(v, "cuda_runtime", &out.cuda_runtime);
  take(v, "cuda_driver", &out.cuda_driver);
  take(v, "nccl", &out.nccl);
  o->versions = std::move(out);
}

std::vector<std::string> takeStrings(const json& doc, const char* key) {
  std::vector<std::string> out;
  if (!doc.contains(key) || !doc.at(key).is_array()) return out;
  for (const json& s : doc.at(key)) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

GpuGraphRecord readGraphStep(Reader& r, const json& g) {
  GpuGraphRecord s;
  s.rank = r.integer(g, "rank");
  s.eager_median_us = r.number(g, "eager_median_us");
  s.eager_p10_us = r.number(g, "eager_p10_us");
  s.eager_p90_us = r.number(g, "eager_p90_us");
  s.graph_median_us = r.number(g, "graph_median_us");
  s.graph_p10_us = r.number(g, "graph_p10_us");
  s.graph_p90_us = r.number(g, "graph_p90_us");
  s.kernels = r.integer(g, "kernels");
  s.ops = r.integer(g, "ops");
  s.kernel_sum_us = r.number(g, "kernel_sum_us");
  s.op_sum_us = r.number(g, "op_sum_us");
  s.identical = r.get<bool>(g, "identical", false);
  take(g, "replays", &s.replays);
  take(g, "kernel_busy_us", &s.kernel_busy_us);
  take(g, "graph_over_kernel_sum", &s.graph_over_kernel_sum);
  take(g, "graph_over_kernel_busy", &s.graph_over_kernel_busy);
  take(g, "eager_over_graph", &s.eager_over_graph);
  return s;
}

GpuTimingRecord readTiming(Reader& r, const json& t) {
  GpuTimingRecord rec;
  rec.rank = r.integer(t, "rank");
  rec.op_index = r.integer(t, "op_index");
  rec.op = r.text(t, "op");
  // The group's size is read with the group: a local op's is not needed.
  if (const json& g = r.at(t, "group"); g.is_string()) {
    rec.group = g.get<std::string>();
    rec.group_size = r.get<int>(t, "group_size", 1);
  } else {
    take(t, "group_size", &rec.group_size);
  }
  rec.bytes = r.bytes(t, "bytes");
  rec.median_us = r.number(t, "median_us");
  rec.p10_us = r.number(t, "p10_us");
  rec.p90_us = r.number(t, "p90_us");
  rec.algbw_gbs = r.number(t, "algbw_gbs");
  rec.busbw_gbs = r.number(t, "busbw_gbs");
  take(t, "layer", &rec.layer);
  take(t, "stage", &rec.stage);
  take(t, "stack", &rec.stack);
  take(t, "phase", &rec.phase);
  take(t, "path", &rec.path);
  take(t, "nccl_call", &rec.nccl_call);
  take(t, "nccl_count", &rec.nccl_count);
  return rec;
}

/// vs_cpu or vs_reference of a run: "identical" required, the rest taken.
OutputDiff readRunDiff(Reader& r, const json& doc, const char* key) {
  const json& vs = r.at(doc, key);
  OutputDiff d;
  d.identical = r.get<bool>(vs, "identical", false);
  takeDiff(vs, &d);
  return d;
}

void takeRunExtras(const json& doc, GpuRunRecord* run) {
  take(doc, "warmup", &run->warmup);
  take(doc, "iters", &run->iters);
  take(doc, "hung", &run->hung);
  run->notes = takeStrings(doc, "notes");
  take(doc, "hang_report", &run->hang_report);
  take(doc, "cpu_ran", &run->cpu_ran);
  take(doc, "cpu_failure", &run->cpu_failure);
  take(doc, "ranks_disagree", &run->ranks_disagree);
  if (doc.contains("ranks") && doc.at("ranks").is_array()) {
    for (const json& j : doc.at("ranks")) {
      GpuRankRecord rank;
      take(j, "rank", &rank.rank);
      if (j.is_object() && j.contains("vs_cpu")) rank.vs_cpu = takenDiff(j.at("vs_cpu"));
      if (j.is_object() && j.contains("vs_reference"))
        rank.vs_reference = takenDiff(j.at("vs_reference"));
      run->ranks.push_back(std::move(rank));
    }
  }
  if (doc.contains("fused_vs_unfused"))
    run->fused_vs_unfused = takenDiff(doc.at("fused_vs_unfused"));
  if (doc.contains("graph") && doc.at("graph").is_array()) {
    for (const json& g : doc.at("graph")) {
      Reader lenient;  // an extra: its gaps refuse nothing
      run->graph.push_back(readGraphStep(lenient, g));
    }
  }
}

GpuRunRecord readRun(Reader& r, const json& doc) {
  GpuRunRecord run;
  run.c = readCase(r, doc, true);
  run.verdict = r.text(doc, "verdict");
  run.numeric = takeNumeric(doc);
  run.numeric.mode = r.text(r.at(doc, "numeric"), "mode");
  const json& hashes = r.at(doc, "hashes");
  run.gpu_device_hash = parseHash(hashes, "gpu_device");
  run.cpu_hash = parseHash(hashes, "cpu");
  run.vs_cpu = readRunDiff(r, doc, "vs_cpu");
  run.reference_hash = parseHash(hashes, "reference");
  run.vs_reference = readRunDiff(r, doc, "vs_reference");
  run.gpu_host_hash = parseHash(hashes, "gpu_host");
  const json& timings = r.at(doc, "timings");
  if (!timings.is_array() && !timings.is_null() && r.missing.empty()) {
    r.missing = "timings (not a list)";
  }
  for (const json& t : timings.is_array() ? timings : json::array()) {
    run.timings.push_back(readTiming(r, t));
  }
  takeRunExtras(doc, &run);
  return run;
}

GpuCompareRecord readCompare(Reader& r, const json& doc) {
  GpuCompareRecord cmp;
  cmp.c = readCase(r, doc, false);
  cmp.diff_class = r.text(doc, "class");
  cmp.predicted_identical = r.get<bool>(doc, "predicted_identical", false);
  cmp.observed.identical = r.get<bool>(doc, "observed_identical", false);
  cmp.hash_a = r.get<std::uint64_t>(doc, "hash_a", 0);
  cmp.hash_b = r.get<std::uint64_t>(doc, "hash_b", 0);
  const bool null_max = doc.contains("max_abs") && doc.at("max_abs").is_null();
  cmp.observed.max_abs = null_max ? maxAbs(doc) : r.number(doc, "max_abs");
  cmp.numeric = takeNumeric(doc);
  take(doc, "detail", &cmp.detail);
  take(doc, "prediction", &cmp.prediction);
  take(doc, "verdict", &cmp.verdict);
  take(doc, "max_ulps", &cmp.observed.max_ulps);
  if (doc.contains("first")) takeFirst(doc.at("first"), &cmp.observed);
  return cmp;
}

GpuSummaryRecord readSummary(Reader& r, const json& j) {
  return {r.number(j, "median_us"), r.number(j, "p10_us"), r.number(j, "p90_us")};
}

GpuCollectiveRecord readCollective(Reader& r, const json& b) {
  GpuCollectiveRecord c;
  c.op = r.text(b, "op");
  c.nccl_call = r.text(b, "nccl_call");
  c.bytes = r.bytes(b, "bytes");
  c.occurrences = r.integer(b, "occurrences");
  c.bare = readSummary(r, r.at(b, "bare"));
  c.group = r.get<std::string>(b, "group", "-");
  c.bare_algbw_gbs = r.number(b, "bare_algbw_gbs");
  c.bare_busbw_gbs = r.number(b, "bare_busbw_gbs");
  c.plan = readSummary(r, r.at(b, "plan"));
  c.plan_algbw_gbs = r.number(b, "plan_algbw_gbs");
  c.plan_busbw_gbs = r.number(b, "plan_busbw_gbs");
  c.plan_over_bare_busbw = r.number(b, "plan_over_bare_busbw");
  if (b.is_object() && b.contains("members") && b.at("members").is_array()) {
    for (const json& m : b.at("members")) {
      int v = 0;
      if (convert(m, &v)) c.members.push_back(v);
    }
  }
  take(b, "nccl_count", &c.nccl_count);
  take(b, "rotating_sets", &c.rotating_sets);
  return c;
}

GpuFusedRecord readFused(Reader& r, const json& b) {
  GpuFusedRecord f;
  f.tokens = r.integer(b, "tokens");
  f.hidden = r.integer(b, "hidden");
  f.exact_identical = r.get<bool>(b, "exact_identical", false);
  if (b.contains("protocol")) f.protocol = r.text(b, "protocol");
  f.unfused = readSummary(r, r.at(b, "unfused"));
  f.ranks = r.integer(b, "ranks");
  f.bytes = r.bytes(b, "bytes");
  f.fused = readSummary(r, r.at(b, "fused"));
  f.nccl_all_reduce = readSummary(r, r.at(b, "nccl_all_reduce"));
  f.unfused_kernels = readSummary(r, r.at(b, "unfused_kernels"));
  f.fused_kernels = readSummary(r, r.at(b, "fused_kernels"));
  f.nccl_all_reduce_kernels = readSummary(r, r.at(b, "nccl_all_reduce_kernels"));
  f.real_identical = r.get<bool>(b, "real_identical", false);
  f.real_max_abs = r.number(b, "real_max_abs");
  // The import's summary reads the speedup of the sizes it names (up to 64 tokens).
  if (f.tokens <= 64) {
    f.speedup = r.number(b, "speedup");
  } else {
    take(b, "speedup", &f.speedup);
  }
  take(b, "kernel_speedup", &f.kernel_speedup);
  take(b, "rotating_sets", &f.rotating_sets);
  take(b, "real_max_ulps_bf16", &f.real_max_ulps_bf16);
  return f;
}

GpuBenchRecord readBench(Reader& r, const json& doc) {
  GpuBenchRecord bench;
  bench.c = readCase(r, doc, true);
  // Each section is read as nlohmann iterates the value it holds.
  if (doc.contains("collectives")) {
    bench.collectives.emplace();
    for (const json& b : r.at(doc, "collectives"))
      bench.collectives->push_back(readCollective(r, b));
  }
  if (doc.contains("fused")) {
    bench.fused.emplace();
    for (const json& b : r.at(doc, "fused")) bench.fused->push_back(readFused(r, b));
  }
  if (doc.contains("graph")) {
    bench.graph.emplace();
    for (const json& g : r.at(doc, "graph")) bench.graph->push_back(readGraphStep(r, g));
  }
  bench.numeric = takeNumeric(doc);
  take(doc, "iters", &bench.iters);
  bench.ran_plan = doc.contains("notes");
  bench.notes = takeStrings(doc, "notes");
  take(doc, "hang_report", &bench.hang_report);
  bench.hung = doc.contains("hang_report");
  bench.collectives_not_compared = takeStrings(doc, "collectives_not_compared");
  take(doc, "cupti_error", &bench.cupti_error);
  take(doc, "verdict", &bench.verdict);
  return bench;
}

GpuAllReduceRecord readAllReduce(Reader& r, const json& doc) {
  GpuAllReduceRecord bench;
  bench.bytes = r.bytes(doc, "bytes");
  bench.bare_median_us = r.number(doc, "bare_median_us");
  bench.bare_busbw_gbs = r.number(doc, "bare_busbw_gbs");
  bench.plan_median_us = r.number(doc, "plan_median_us");
  bench.plan_busbw_gbs = r.number(doc, "plan_busbw_gbs");
  bench.plan_over_bare = r.number(doc, "plan_over_bare");
  take(doc, "iters", &bench.iters);
  return bench;
}

}  // namespace

Expected<GpuResult> parseGpuResult(std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    return Status::invalid("not JSON (expected the object seam-gpu --json writes)");
  Reader r;
  const std::string tool = r.text(doc, "tool");
  const bool allreduce = tool == "seam-gpu bench-allreduce";
  if (tool != "seam-gpu run" && tool != "seam-gpu compare" && tool != "seam-gpu bench" &&
      !allreduce) {
    return Status::invalid("not a seam-gpu result (\"tool\" is \"" + tool.substr(0, 64) + "\")");
  }
  GpuOrigin origin = readOrigin(r, doc, allreduce);
  // bench-allreduce names its devices by count where the others name the device.
  const int devices = allreduce ? r.integer(doc, "devices") : 0;
  readVersions(r, doc, &origin);
  GpuResult out;
  if (tool == "seam-gpu run") {
    out = readRun(r, doc);
  } else if (tool == "seam-gpu compare") {
    out = readCompare(r, doc);
  } else if (tool == "seam-gpu bench") {
    out = readBench(r, doc);
  } else {
    GpuAllReduceRecord bench = readAllReduce(r, doc);
    bench.devices = devices;
    out = std::move(bench);
  }
  if (!r.missing.empty())
    return Status::invalid("not a seam-gpu result (field \"" + r.missing + "\" is missing)");
  std::visit([&](auto& record) { record.origin = std::move(origin); }, out);
  return out;
}

}  // namespace seam::properties
