#include "seam/reports/gpu_import.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <type_traits>
#include <utility>

#include "seam/sim/bit_identity.h"

namespace seam::reports {

namespace {

using nlohmann::json;

/// The hash `key` of an object of hex strings (0 when absent).
std::uint64_t parseHash(const json& hashes, const char* key) {
  if (!hashes.is_object() || !hashes.contains(key) || !hashes.at(key).is_string()) return 0;
  return std::strtoull(hashes.at(key).get<std::string>().c_str(), nullptr, 16);
}

// Reads a required field; records the first missing one.
struct Reader {
  const std::string& path;
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
      // nlohmann converts a float, or an integer out of T's range, with a
      // plain cast (undefined for 1e300 into an int): only an integer that
      // fits is this field's value.
      const bool fits = v.is_number_unsigned()  ? std::in_range<T>(v.get<std::uint64_t>())
                        : v.is_number_integer() ? std::in_range<T>(v.get<std::int64_t>())
                                                : false;
      if (fits) return v.is_number_unsigned() ? static_cast<T>(v.get<std::uint64_t>())
                                              : static_cast<T>(v.get<std::int64_t>());
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
};


/// Median, p10 and p90 of a {"median_us", "p10_us", "p90_us"} object.
TimingRecord summaryTiming(Reader& r, const json& j) {
  TimingRecord t;
  t.median_us = r.get<double>(j, "median_us", 0);
  t.p10_us = r.get<double>(j, "p10_us", 0);
  t.p90_us = r.get<double>(j, "p90_us", 0);
  return t;
}

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// `seam-gpu bench`: one case per compared row, in the file's order.
std::vector<GpuResultCase> readBench(Reader& r, const json& doc, std::string* summary) {
  const json& cs = r.at(doc, "case");
  CaseRecord base;
  base.model = r.get<std::string>(cs, "model", "");
  base.pattern = r.get<std::string>(cs, "pattern", "");
  base.config = r.get<std::string>(cs, "config", "");
  base.flags = r.get<std::string>(cs, "flags", "");
  base.batch = r.get<std::string>(cs, "tokens", "");
  base.policy = r.get<std::string>(cs, "policy", "");
  base.reproduce = r.get<std::string>(cs, "reproduce", "");
  std::vector<GpuResultCase> out;
  auto add = [&](CaseRecord c) -> GpuResultCase& {
    c.index = static_cast<std::int64_t>(out.size());
    out.push_back({std::move(c), {}, {}});
    return out.back();
  };
  double worst_ratio = 0, best_speedup = 0;
  int collectives = 0, fused = 0;
  if (doc.contains("collectives")) {
    for (const json& b : r.at(doc, "collectives")) {
      CaseRecord c = base;
      c.group = kBenchCollectives;
      const std::string op = r.get<std::string>(b, "op", "");
      const std::string call = r.get<std::string>(b, "nccl_call", "");
      c.batch = std::to_string(r.get<std::int64_t>(b, "bytes", 0)) + " bytes, " +
                std::to_string(r.get<int>(b, "occurrences", 0)) + " ops";
      GpuResultCase& gc = add(c);
      const char* sides[] = {"bare", "plan"};
      for (int i = 0; i < 2; ++i) {
        TimingRecord t = summaryTiming(r, r.at(b, sides[i]));
        t.case_index = gc.c.index;
        t.op_index = i;
        t.op_kind = i == 0 ? "bare nccl " + call : op + " in plan";
        t.group = r.get<std::string>(b, "group", "-");
        t.bytes = r.get<std::int64_t>(b, "bytes", 0);
        t.algbw_gbps = r.get<double>(b, (std::string(sides[i]) + "_algbw_gbs").c_str(), 0);
        t.busbw_gbps = r.get<double>(b, (std::string(sides[i]) + "_busbw_gbs").c_str(), 0);
        gc.timings.push_back(t);
      }
      const double ratio = r.get<double>(b, "plan_over_bare_busbw", 0);
      worst_ratio = collectives++ == 0 ? ratio : std::min(worst_ratio, ratio);
    }
  }
  if (doc.contains("fused")) {
    for (const json& b : r.at(doc, "fused")) {
      CaseRecord c = base;
      c.group = kBenchFused;
      const int tokens = r.get<int>(b, "tokens", 0);
      const int hidden = r.get<int>(b, "hidden", 0);
      c.batch = std::to_string(tokens) + " tokens x " + std::to_string(hidden);
      c.outcome = r.get<bool>(b, "exact_identical", false) ? CaseOutcome::kHolds : CaseOutcome::kViolated;
      GpuResultCase& gc = add(c);
      const char* sides[] = {"unfused",         "fused",         "nccl_all_reduce",
                             "unfused_kernels", "fused_kernels", "nccl_all_reduce_kernels"};
      const char* names[] = {"nccl all_reduce + add_norm",         "fused ar_add_norm",
                             "nccl all_reduce",                    "nccl all_reduce + add_norm (kernels)",
                             "fused ar_add_norm (kernels)",        "nccl all_reduce (kernels)"};
      // The fused kernel's protocol (bench JSON from before it existed: none).
      const std::string protocol =
          b.contains("protocol") ? r.get<std::string>(b, "protocol", "") : "";
      for (int i = 0; i < 6; ++i) {
        TimingRecord t = summaryTiming(r, r.at(b, sides[i]));
        t.case_index = gc.c.index;
        t.op_index = i;
        t.op_kind = names[i];
        if ((i == 1 || i == 4) && !protocol.empty()) t.op_kind += " [" + protocol + "]";
        t.group = "tp/" + std::to_string(r.get<int>(b, "ranks", 0));
        t.bytes = r.get<std::int64_t>(b, "bytes", 0);
        t.algbw_gbps = t.median_us > 0 ? static_cast<double>(t.bytes) / (t.median_us * 1e3) : 0;
        gc.timings.push_back(t);
      }
      for (const char* mode : {"exact", "real"}) {
        EquivalenceRecord e;
        e.case_index = gc.c.index;
        e.plan_a = std::string("fused:") + mode;
        e.plan_b = std::string("nccl+add_norm:") + mode;
        // Exact mode: any summation order is exact. Real mode with two
        // members: NCCL adds the same two floats.
        e.predicted_identical = mode == std::string("exact") || r.get<int>(b, "ranks", 0) == 2;
        e.observed_identical = r.get<bool>(b, (std::string(mode) + "_identical").c_str(), false);
        e.max_difference = mode == std::string("real") ? r.get<double>(b, "real_max_abs", 0) : 0.0;
        gc.equivalences.push_back(e);
      }
      if (tokens <= 64) best_speedup = std::max(best_speedup, r.get<double>(b, "speedup", 0));
      ++fused;
    }
  }
  if (doc.contains("graph")) {
    CaseRecord c = base;
    c.group = kBenchGraph;
    GpuResultCase& gc = add(c);
    bool identical = true;
    for (const json& g : r.at(doc, "graph")) {
      const int rank = r.get<int>(g, "rank", 0);
      const char* keys[] = {"eager", "graph"};
      const char* names[] = {"eager step", "graph replay"};
      for (int i = 0; i < 2; ++i) {
        TimingRecord t;
        t.case_index = gc.c.index;
        t.rank = rank;
        t.op_index = i;
        t.op_kind = names[i];
        t.median_us = r.get<double>(g, (std::string(keys[i]) + "_median_us").c_str(), 0);
        t.p10_us = r.get<double>(g, (std::string(keys[i]) + "_p10_us").c_str(), 0);
        t.p90_us = r.get<double>(g, (std::string(keys[i]) + "_p90_us").c_str(), 0);
        gc.timings.push_back(t);
      }
      // The sums: of the kernels CUPTI saw in one replay, of the ops' event times.
      const std::string sums[] = {"sum of " + std::to_string(r.get<int>(g, "kernels", 0)) + " kernels",
                                  "sum of " + std::to_string(r.get<int>(g, "ops", 0)) + " ops"};
      const char* sum_keys[] = {"kernel_sum_us", "op_sum_us"};
      for (int i = 0; i < 2; ++i) {
        TimingRecord sum;
        sum.case_index = gc.c.index;
        sum.rank = rank;
        sum.op_index = 2 + i;
        sum.op_kind = sums[i];
        sum.median_us = sum.p10_us = sum.p90_us = r.get<double>(g, sum_keys[i], 0);
        gc.timings.push_back(sum);
      }
      EquivalenceRecord e;
      e.case_index = gc.c.index;
      e.plan_a = "graph replay:rank " + std::to_string(rank);
      e.plan_b = "eager step:rank " + std::to_string(rank);
      e.predicted_identical = true;
      e.observed_identical = r.get<bool>(g, "identical", false);
      identical = identical && e.observed_identical;
      gc.equivalences.push_back(e);
    }
    gc.c.outcome = identical ? CaseOutcome::kHolds : CaseOutcome::kViolated;
  }
  std::vector<std::string> parts;
  if (collectives > 0) {
    parts.push_back(std::to_string(collectives) + " collectives (worst plan/bare busbw " + fixed2(worst_ratio) + ")");
  }
  if (fused > 0) {
    parts.push_back(std::to_string(fused) + " fused sizes (best speedup up to 64 tokens " + fixed2(best_speedup) + "x)");
  }
  if (doc.contains("graph")) parts.push_back("a captured step");
  for (const std::string& p : parts) *summary += (summary->empty() ? "" : ", ") + p;
  if (summary->empty()) *summary = "no rows";
  return out;
}

}  // namespace

Expected<GpuResultFile> readGpuJson(const std::string& path, const std::string& version) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::invalid("\"" + path.substr(0, 200) + "\": cannot read it");
  std::stringstream buf;
  buf << in.rdbuf();
  const json doc = json::parse(buf.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::invalid("\"" + path.substr(0, 200) + "\": not JSON (expected the object seam-gpu --json writes)");
  }
  Reader r{path, {}};
  GpuImport out;
  out.tool = r.get<std::string>(doc, "tool", "");
  if (out.tool != "seam-gpu run" && out.tool != "seam-gpu bench-allreduce" && out.tool != "seam-gpu compare" &&
      out.tool != "seam-gpu bench") {
    return Status::invalid("\"" + path.substr(0, 200) + "\": not a seam-gpu result (\"tool\" is \"" +
                           out.tool.substr(0, 64) + "\")");
  }
  RunRecord run;
  run.command = out.tool == "seam-gpu run"       ? "gpu run"
                : out.tool == "seam-gpu compare" ? "gpu compare"
                : out.tool == "seam-gpu bench"   ? "gpu bench"
                                                 : "gpu bench-allreduce";
  run.args = doc.contains("command") && doc.at("command").is_string() ? doc.at("command").get<std::string>()
                                                                      : out.tool;
  run.version = r.get<std::string>(doc, "version", version);
  run.gpu = out.tool != "seam-gpu bench-allreduce" ? r.get<std::string>(doc, "device", "")
                                       : std::to_string(r.get<int>(doc, "devices", 0)) + " GPUs";
  if (doc.contains("versions")) run.cuda = r.get<std::string>(doc.at("versions"), "text", "");
  run.nccl = run.cuda;

  // Validate everything before writing anything.
  std::vector<EquivalenceRecord> eqs;
  std::vector<TimingRecord> timings;
  CaseRecord c;
  std::vector<GpuResultCase> bench_cases;
  if (out.tool == "seam-gpu bench") {
    bench_cases = readBench(r, doc, &out.summary);
  } else if (out.tool == "seam-gpu run") {
    const json& cs = r.at(doc, "case");
    c.model = r.get<std::string>(cs, "model", "");
    c.pattern = r.get<std::string>(cs, "pattern", "");
    c.config = r.get<std::string>(cs, "config", "");
    c.flags = r.get<std::string>(cs, "flags", "");
    c.batch = r.get<std::string>(cs, "tokens", "");
    c.policy = r.get<std::string>(cs, "policy", "");
    c.reproduce = r.get<std::string>(cs, "reproduce", "");
    c.group = "gpu";
    const std::string verdict = r.get<std::string>(doc, "verdict", "");
    c.outcome = verdict == "identical" || verdict == "completed" ? CaseOutcome::kHolds : CaseOutcome::kViolated;
    const json& numeric = r.at(doc, "numeric");
    const bool exact = r.get<std::string>(numeric, "mode", "") == "exact";
    const json& hashes = r.at(doc, "hashes");
    const std::uint64_t gpu_hash = parseHash(hashes, "gpu_device");
    for (const char* other : {"cpu", "reference"}) {
      const json& vs = r.at(doc, other == std::string("cpu") ? "vs_cpu" : "vs_reference");
      EquivalenceRecord e;
      e.plan_a = "gpu:" + c.policy;
      e.plan_a_hash = gpu_hash;
      e.plan_b = other == std::string("cpu") ? "cpu:" + c.policy : "reference";
      e.plan_b_hash = parseHash(hashes, other);
      // Exact mode: any correct plan is bit-identical on any machine (DESIGN §6).
      e.predicted_identical = exact;
      e.observed_identical = r.get<bool>(vs, "identical", false);
      e.max_difference = vs.is_object() && vs.contains("max_abs") && vs.at("max_abs").is_number()
                             ? vs.at("max_abs").get<double>()
                             : 0.0;
      eqs.push_back(e);
    }
    const json& all_timings = r.at(doc, "timings");
    for (const json& t : all_timings.is_array() ? all_timings : json::array()) {
      TimingRecord rec;
      rec.rank = r.get<int>(t, "rank", 0);
      rec.op_index = r.get<int>(t, "op_index", 0);
      rec.op_kind = r.get<std::string>(t, "op", "");
      const json& g = r.at(t, "group");
      rec.group = g.is_string() ? g.get<std::string>() + "/" + std::to_string(r.get<int>(t, "group_size", 1)) : "-";
      rec.bytes = r.get<std::int64_t>(t, "bytes", 0);
      rec.median_us = r.get<double>(t, "median_us", 0);
      rec.p10_us = r.get<double>(t, "p10_us", 0);
      rec.p90_us = r.get<double>(t, "p90_us", 0);
      rec.algbw_gbps = r.get<double>(t, "algbw_gbs", 0);
      rec.busbw_gbps = r.get<double>(t, "busbw_gbs", 0);
      timings.push_back(rec);
    }
    out.summary = c.model + " " + c.config + ": " + verdict;
  } else if (out.tool == "seam-gpu compare") {
    // Two policies' plans on the GPUs against the simulator's prediction.
    const json& cs = r.at(doc, "case");
    c.model = r.get<std::string>(cs, "model", "");
    c.config = r.get<std::string>(cs, "config", "");
    c.flags = r.get<std::string>(cs, "flags", "");
    c.batch = r.get<std::string>(cs, "tokens", "");
    c.reproduce = r.get<std::string>(cs, "reproduce", "");
    c.group = r.get<std::string>(doc, "class", "");
    const bool predicted = r.get<bool>(doc, "predicted_identical", false);
    const bool observed = r.get<bool>(doc, "observed_identical", false);
    // Only a predicted identity can be refuted (bit_identity.h).
    c.outcome = judgePrediction(predicted, observed) == PredictionVerdict::kRefuted ? CaseOutcome::kViolated
                                                                                    : CaseOutcome::kHolds;
    // "seam diff ... [--decision D] --policy A --against B": the two sides'
    // names; a planted decision belongs to A (seam-gpu compare plants it there).
    std::string a = "a", b = "b", line = c.reproduce, decision;
    if (const auto pd = line.find(" --decision "); pd != std::string::npos) {
      const auto end = line.find(' ', pd + 12);
      decision = line.substr(pd + 12, end == std::string::npos ? std::string::npos : end - pd - 12);
      line.erase(pd, end == std::string::npos ? std::string::npos : end - pd);
    }
    const auto pa = line.rfind("--policy ");
    const auto pb = line.rfind("--against ");
    if (pa != std::string::npos && pb != std::string::npos && pa < pb) {
      a = line.substr(pa + 9, pb - pa - 10);
      b = line.substr(pb + 10);
    }
    if (!decision.empty()) a += " --decision " + decision;
    EquivalenceRecord e;
    e.plan_a = "gpu:" + a;
    e.plan_b = "gpu:" + b;
    e.plan_a_hash = r.get<std::uint64_t>(doc, "hash_a", 0);
    e.plan_b_hash = r.get<std::uint64_t>(doc, "hash_b", 0);
    e.predicted_identical = predicted;
    e.observed_identical = observed;
    e.max_difference = r.get<double>(doc, "max_abs", 0);
    eqs.push_back(e);
    out.summary = c.model + " " + c.config + ": " + c.group + "; predicted " + (predicted ? "identical" : "different") +
                  ", observed " + (observed ? "identical" : "different");
  } else {
    c.model = "all_reduce";
    c.config = std::to_string(r.get<int>(doc, "devices", 0)) + " GPUs";
    c.batch = std::to_string(r.get<std::int64_t>(doc, "bytes", 0)) + " bytes";
    c.group = "gpu";
    const std::int64_t bytes = r.get<std::int64_t>(doc, "bytes", 0);
    int op = 0;
    for (const char* side : {"bare", "plan"}) {
      TimingRecord t;
      t.op_index = op++;
      t.op_kind = std::string("all_reduce (") + (side == std::string("bare") ? "bare NCCL" : "inside a plan") + ")";
      t.group = "tp/" + std::to_string(r.get<int>(doc, "devices", 0));
      t.bytes = bytes;
      t.median_us = r.get<double>(doc, (std::string(side) + "_median_us").c_str(), 0);
      t.p10_us = t.p90_us = t.median_us;
      t.busbw_gbps = r.get<double>(doc, (std::string(side) + "_busbw_gbs").c_str(), 0);
      t.algbw_gbps = t.median_us > 0 ? static_cast<double>(bytes) / (t.median_us * 1e3) : 0;
      timings.push_back(t);
    }
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.3f", r.get<double>(doc, "plan_over_bare", 0));
    out.summary = "all_reduce of " + c.batch + ": plan/bare busbw " + ratio;
  }
  if (!r.missing.empty()) {
    return Status::invalid("\"" + path.substr(0, 200) + "\": not a seam-gpu result (field \"" + r.missing +
                           "\" is missing)");
  }

  GpuResultFile file;
  file.path = path;
  file.tool = out.tool;
  file.run = std::move(run);
  if (out.tool == "seam-gpu bench") {
    file.cases = std::move(bench_cases);
  } else {
    file.cases.push_back({std::move(c), std::move(eqs), std::move(timings)});
  }
  file.summary = out.summary;
  return file;
}

Expected<GpuImport> writeGpuResult(Store& store, const GpuResultFile& file) {
  RunRecord run = file.run;
  // One transaction: the run with all its rows, or nothing.
  if (Status st = store.beginBatch(); !st) return st;
  GpuImport out;
  const Status written = [&] {
    if (Status st = store.beginRun(run); !st) return st;
    for (const GpuResultCase& gc : file.cases) {
      if (Status st = store.addCase(run.id, gc.c, {}); !st) return st;
      for (const auto& e : gc.equivalences) {
        if (Status st = store.addEquivalence(run.id, e); !st) return st;
      }
      for (const auto& t : gc.timings) {
        if (Status st = store.addTiming(run.id, t); !st) return st;
      }
      out.equivalences += static_cast<int>(gc.equivalences.size());
      out.timings += static_cast<int>(gc.timings.size());
    }
    return store.finishRun(run.id);
  }();
  if (!written) {
    (void)store.rollbackBatch();
    return written;
  }
  if (Status st = store.commitBatch(); !st) {
    (void)store.rollbackBatch();
    return st;
  }
  out.run_id = run.id;
  out.tool = file.tool;
  out.summary = file.summary;
  return out;
}

Expected<GpuImport> importGpuJson(Store& store, const std::string& path, const std::string& version) {
  auto file = readGpuJson(path, version);
  if (!file) return file.status();
  return writeGpuResult(store, *file);
}

}  // namespace seam::reports
