// The writing half of gpu_json.h; gpu_json_read.cc reads what it writes.
#include "seam/properties/gpu_json.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace seam::properties {

namespace {

using Json = nlohmann::ordered_json;

/// "case" of a run or bench file.
Json caseJson(const GpuCaseRecord& c) {
  return {{"model", c.model},        {"pattern", c.pattern}, {"config", c.config},
          {"flags", c.flags},        {"tokens", c.tokens},   {"policy", c.policy},
          {"reproduce", c.reproduce}};
}

template <class J>
J numericJson(const GpuNumericRecord& n) {
  return {{"mode", n.mode}, {"hidden", n.hidden}, {"inner", n.inner}};
}

Json versionsJson(const GpuVersionsRecord& v) {
  return {{"cuda_runtime", v.cuda_runtime},
          {"cuda_driver", v.cuda_driver},
          {"nccl", v.nccl},
          {"text", v.text}};
}

/// The first differing element of a diff.
template <class J>
J firstJson(const OutputDiff& d) {
  return {{"stack", d.stack}, {"token", d.token}, {"element", d.element}, {"a", d.a}, {"b", d.b}};
}

Json diffJson(const OutputDiff& d) {
  Json j = {{"identical", d.identical}};
  if (!d.identical) {
    j["first"] = firstJson<Json>(d);
    j["max_abs"] = std::isfinite(d.max_abs) ? Json(d.max_abs) : Json(nullptr);
    j["max_ulps"] = d.max_ulps;
    j["ulps_of"] = d.bf16_ulps ? "bf16" : "fp32";
    j["describe"] = d.describe();
  }
  return j;
}

Json summaryJson(const GpuSummaryRecord& t) {
  return {{"median_us", t.median_us}, {"p10_us", t.p10_us}, {"p90_us", t.p90_us}};
}

Json graphJson(const std::vector<GpuGraphRecord>& steps) {
  Json out = Json::array();
  for (const GpuGraphRecord& g : steps) {
    out.push_back({{"rank", g.rank},
                   {"ops", g.ops},
                   {"replays", g.replays},
                   {"eager_median_us", g.eager_median_us},
                   {"eager_p10_us", g.eager_p10_us},
                   {"eager_p90_us", g.eager_p90_us},
                   {"graph_median_us", g.graph_median_us},
                   {"graph_p10_us", g.graph_p10_us},
                   {"graph_p90_us", g.graph_p90_us},
                   {"kernel_sum_us", g.kernel_sum_us},
                   {"kernel_busy_us", g.kernel_busy_us},
                   {"kernels", g.kernels},
                   {"graph_over_kernel_sum", g.graph_over_kernel_sum},
                   {"graph_over_kernel_busy", g.graph_over_kernel_busy},
                   {"op_sum_us", g.op_sum_us},
                   {"eager_over_graph", g.eager_over_graph},
                   {"identical", g.identical}});
  }
  return out;
}

Json timingsJson(const std::vector<GpuTimingRecord>& timings) {
  Json out = Json::array();
  for (const GpuTimingRecord& t : timings) {
    out.push_back({{"rank", t.rank},
                   {"op_index", t.op_index},
                   {"op", t.op},
                   {"group", t.group ? Json(*t.group) : Json(nullptr)},
                   {"group_size", t.group_size},
                   {"layer", t.layer},
                   {"stage", t.stage},
                   {"stack", t.stack},
                   {"phase", t.phase},
                   {"bytes", t.bytes},
                   {"median_us", t.median_us},
                   {"p10_us", t.p10_us},
                   {"p90_us", t.p90_us},
                   {"algbw_gbs", t.algbw_gbs},
                   {"busbw_gbs", t.busbw_gbs},
                   {"path", t.path},
                   {"nccl_call", t.nccl_call},
                   {"nccl_count", t.nccl_count}});
  }
  return out;
}

/// host, written_ms, commit: where, from what and when it ran, when known.
template <class J>
void putProvenance(J& j, const GpuOrigin& origin) {
  if (origin.host) j["host"] = *origin.host;
  if (origin.written_ms) j["written_ms"] = *origin.written_ms;
  if (origin.commit) j["commit"] = *origin.commit;
}

/// tool, version, command: how every file but bench-allreduce's starts.
Json header(const char* tool, const GpuOrigin& origin) {
  Json j;
  j["tool"] = tool;
  if (origin.version) j["version"] = *origin.version;
  if (origin.command) j["command"] = *origin.command;
  putProvenance(j, origin);
  return j;
}

/// The machine's device and versions, where a run or bench writes them.
void putMachine(Json& j, const GpuOrigin& origin) {
  if (origin.device) j["device"] = *origin.device;
  if (origin.versions) j["versions"] = versionsJson(*origin.versions);
}

std::string text(const nlohmann::ordered_json& j) { return j.dump(2) + "\n"; }

Json collectivesJson(const std::vector<GpuCollectiveRecord>& rows) {
  Json out = Json::array();
  for (const GpuCollectiveRecord& b : rows) {
    out.push_back({{"op", b.op},
                   {"group", b.group},
                   {"members", b.members},
                   {"nccl_call", b.nccl_call},
                   {"nccl_count", b.nccl_count},
                   {"bytes", b.bytes},
                   {"occurrences", b.occurrences},
                   {"plan", summaryJson(b.plan)},
                   {"bare", summaryJson(b.bare)},
                   {"plan_algbw_gbs", b.plan_algbw_gbs},
                   {"plan_busbw_gbs", b.plan_busbw_gbs},
                   {"bare_algbw_gbs", b.bare_algbw_gbs},
                   {"bare_busbw_gbs", b.bare_busbw_gbs},
                   {"plan_over_bare_busbw", b.plan_over_bare_busbw},
                   {"rotating_sets", b.rotating_sets}});
  }
  return out;
}

Json fusedJson(const std::vector<GpuFusedRecord>& rows) {
  Json out = Json::array();
  for (const GpuFusedRecord& b : rows) {
    Json row = {{"hidden", b.hidden}, {"tokens", b.tokens}, {"ranks", b.ranks}, {"bytes", b.bytes}};
    if (b.protocol) row["protocol"] = *b.protocol;
    row["fused"] = summaryJson(b.fused);
    row["unfused"] = summaryJson(b.unfused);
    row["nccl_all_reduce"] = summaryJson(b.nccl_all_reduce);
    row["speedup"] = b.speedup;
    row["fused_kernels"] = summaryJson(b.fused_kernels);
    row["unfused_kernels"] = summaryJson(b.unfused_kernels);
    row["nccl_all_reduce_kernels"] = summaryJson(b.nccl_all_reduce_kernels);
    row["kernel_speedup"] = b.kernel_speedup;
    row["rotating_sets"] = b.rotating_sets;
    row["exact_identical"] = b.exact_identical;
    row["real_identical"] = b.real_identical;
    row["real_max_abs"] = b.real_max_abs;
    row["real_max_ulps_bf16"] = b.real_max_ulps_bf16;
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

std::string gpuResultJson(const GpuRunRecord& run) {
  Json j = header("seam-gpu run", run.origin);
  j["case"] = caseJson(run.c);
  j["numeric"] = numericJson<Json>(run.numeric);
  j["warmup"] = run.warmup;
  j["iters"] = run.iters;
  putMachine(j, run.origin);
  j["hung"] = run.hung;
  j["notes"] = run.notes;
  if (run.hung) {
    j["hang_report"] = run.hang_report;
    j["verdict"] = run.verdict;
    return text(j);
  }
  j["hashes"] = {{"gpu_device", hexHash(run.gpu_device_hash)},
                 {"gpu_host", hexHash(run.gpu_host_hash)},
                 {"cpu", hexHash(run.cpu_hash)},
                 {"reference", hexHash(run.reference_hash)}};
  j["cpu_ran"] = run.cpu_ran;
  if (!run.cpu_ran) j["cpu_failure"] = run.cpu_failure;
  j["vs_cpu"] = diffJson(run.vs_cpu);
  j["vs_reference"] = diffJson(run.vs_reference);
  j["ranks_disagree"] = run.ranks_disagree;
  Json ranks = Json::array();
  for (const GpuRankRecord& r : run.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"vs_cpu", diffJson(r.vs_cpu)},
                     {"vs_reference", diffJson(r.vs_reference)}});
  }
  j["ranks"] = ranks;
  if (run.fused_vs_unfused) j["fused_vs_unfused"] = diffJson(*run.fused_vs_unfused);
  if (!run.graph.empty()) j["graph"] = graphJson(run.graph);
  j["verdict"] = run.verdict;
  j["timings"] = timingsJson(run.timings);
  return text(j);
}

std::string gpuResultJson(const GpuCompareRecord& compare) {
  // nlohmann::json keeps its keys sorted.
  using Sorted = nlohmann::json;
  const OutputDiff& d = compare.observed;
  Sorted j = {{"tool", "seam-gpu compare"},
              {"case",
               {{"model", compare.c.model},
                {"config", compare.c.config},
                {"flags", compare.c.flags},
                {"tokens", compare.c.tokens},
                {"reproduce", compare.c.reproduce}}},
              {"numeric", numericJson<Sorted>(compare.numeric)},
              {"class", compare.diff_class},
              {"detail", compare.detail},
              {"predicted_identical", compare.predicted_identical},
              {"prediction", compare.prediction},
              {"verdict", compare.verdict},
              {"observed_identical", d.identical},
              {"max_abs", d.max_abs},
              {"max_ulps", d.max_ulps},
              {"first", d.identical ? Sorted(nullptr) : firstJson<Sorted>(d)},
              {"hash_a", compare.hash_a},
              {"hash_b", compare.hash_b}};
  if (compare.origin.version) j["version"] = *compare.origin.version;
  if (compare.origin.command) j["command"] = *compare.origin.command;
  if (compare.origin.device) j["device"] = *compare.origin.device;
  putProvenance(j, compare.origin);
  return j.dump(2) + "\n";
}

std::string gpuResultJson(const GpuBenchRecord& bench) {
  Json j = header("seam-gpu bench", bench.origin);
  j["case"] = caseJson(bench.c);
  j["numeric"] = numericJson<Json>(bench.numeric);
  j["iters"] = bench.iters;
  putMachine(j, bench.origin);
  if (bench.ran_plan) j["notes"] = bench.notes;
  if (bench.hung) {
    j["hang_report"] = bench.hang_report;
    return text(j);
  }
  if (bench.collectives) {
    j["collectives"] = collectivesJson(*bench.collectives);
    j["collectives_not_compared"] = bench.collectives_not_compared;
  }
  if (bench.graph) j["graph"] = graphJson(*bench.graph);
  if (bench.fused) j["fused"] = fusedJson(*bench.fused);
  if (bench.cupti_error) j["cupti_error"] = *bench.cupti_error;
  j["verdict"] = bench.verdict;
  return text(j);
}

std::string gpuResultJson(const GpuAllReduceRecord& bench) {
  Json j = header("seam-gpu bench-allreduce", bench.origin);
  j["devices"] = bench.devices;
  j["bytes"] = bench.bytes;
  j["iters"] = bench.iters;
  j["bare_median_us"] = bench.bare_median_us;
  j["plan_median_us"] = bench.plan_median_us;
  j["bare_busbw_gbs"] = bench.bare_busbw_gbs;
  j["plan_busbw_gbs"] = bench.plan_busbw_gbs;
  j["plan_over_bare"] = bench.plan_over_bare;
  return text(j);
}

}  // namespace seam::properties
