#include "seam/reports/gpu_import.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <utility>

#include "gpu_import_check.h"
#include "seam/properties/gpu_json.h"
#include "seam/properties/provenance.h"
#include "seam/reports/input_file.h"
#include "seam/sim/replay/bit_identity.h"

namespace seam::reports {

namespace {

using properties::GpuResult;

std::string fixed2(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// A diff's max |a - b| as a row keeps it: a non-finite one (null in the file) as 0.
double maxDifference(double max_abs) { return std::isnan(max_abs) ? 0.0 : max_abs; }

CaseRecord caseOf(const properties::GpuCaseRecord& c) {
  CaseRecord out;
  out.model = c.model;
  out.pattern = c.pattern;
  out.config = c.config;
  out.flags = c.flags;
  out.batch = c.tokens;
  out.policy = c.policy;
  out.reproduce = c.reproduce;
  return out;
}

TimingRecord timingOf(const properties::GpuSummaryRecord& s) {
  TimingRecord t;
  t.median_us = s.median_us;
  t.p10_us = s.p10_us;
  t.p90_us = s.p90_us;
  return t;
}

/// `seam-gpu run`: one case, its two equivalence rows and every op's timing.
void addRun(const properties::GpuRunRecord& run, GpuResultFile* file) {
  GpuResultCase gc;
  gc.c = caseOf(run.c);
  gc.c.group = "gpu";
  gc.c.outcome = run.verdict == "identical" || run.verdict == "completed" ? CaseOutcome::kHolds
                                                                          : CaseOutcome::kViolated;
  const bool exact = run.numeric.mode == "exact";
  const std::pair<const OutputDiff*, std::uint64_t> sides[] = {
      {&run.vs_cpu, run.cpu_hash}, {&run.vs_reference, run.reference_hash}};
  for (const auto& [vs, hash] : sides) {
    EquivalenceRecord e;
    e.plan_a = "gpu:" + run.c.policy;
    e.plan_a_hash = run.gpu_device_hash;
    e.plan_b = vs == &run.vs_cpu ? "cpu:" + run.c.policy : "reference";
    e.plan_b_hash = hash;
    // Exact mode: any correct plan is bit-identical on any machine (DESIGN §6).
    e.predicted_identical = exact;
    e.observed_identical = vs->identical;
    e.max_difference = maxDifference(vs->max_abs);
    gc.equivalences.push_back(e);
  }
  for (const properties::GpuTimingRecord& t : run.timings) {
    TimingRecord rec;
    rec.rank = t.rank;
    rec.op_index = t.op_index;
    rec.op_kind = t.op;
    rec.group = t.group ? *t.group + "/" + std::to_string(t.group_size) : "-";
    rec.bytes = t.bytes;
    rec.median_us = t.median_us;
    rec.p10_us = t.p10_us;
    rec.p90_us = t.p90_us;
    rec.algbw_gbps = t.algbw_gbs;
    rec.busbw_gbps = t.busbw_gbs;
    gc.timings.push_back(rec);
  }
  file->summary = run.c.model + " " + run.c.config + ": " + run.verdict;
  file->cases.push_back(std::move(gc));
}

/// The two sides' names of a compare's "seam diff ... [--decision D] --policy
/// A --against B" line; a planted decision belongs to A (seam-gpu compare
/// plants it there).
std::pair<std::string, std::string> comparedPlans(std::string line) {
  std::string a = "a", b = "b", decision;
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
  return {a, b};
}

/// `seam-gpu compare`: two policies' plans on the GPUs against the simulator's prediction.
void addCompare(const properties::GpuCompareRecord& cmp, GpuResultFile* file) {
  GpuResultCase gc;
  gc.c = caseOf(cmp.c);
  gc.c.group = cmp.diff_class;
  const bool predicted = cmp.predicted_identical;
  const bool observed = cmp.observed.identical;
  // Only a predicted identity can be refuted (bit_identity.h).
  gc.c.outcome = judgePrediction(predicted, observed) == PredictionVerdict::kRefuted
                     ? CaseOutcome::kViolated
                     : CaseOutcome::kHolds;
  const auto [a, b] = comparedPlans(cmp.c.reproduce);
  EquivalenceRecord e;
  e.plan_a = "gpu:" + a;
  e.plan_b = "gpu:" + b;
  e.plan_a_hash = cmp.hash_a;
  e.plan_b_hash = cmp.hash_b;
  e.predicted_identical = predicted;
  e.observed_identical = observed;
  e.max_difference = maxDifference(cmp.observed.max_abs);
  gc.equivalences.push_back(e);
  file->summary = cmp.c.model + " " + cmp.c.config + ": " + cmp.diff_class + "; predicted " +
                  (predicted ? "identical" : "different") + ", observed " +
                  (observed ? "identical" : "different");
  file->cases.push_back(std::move(gc));
}

/// `seam-gpu bench` adds one case per compared row, in the file's order.
struct BenchCases {
  const CaseRecord& base;
  std::vector<GpuResultCase>& out;
  GpuResultCase& add(const char* group) {
    CaseRecord c = base;
    c.index = static_cast<std::int64_t>(out.size());
    c.group = group;
    out.push_back({std::move(c), {}, {}});
    return out.back();
  }
};

/// A collective of the plan: timings 0 bare NCCL, 1 inside the plan.
void addCollective(BenchCases& cases, const properties::GpuCollectiveRecord& b) {
  GpuResultCase& gc = cases.add(kBenchCollectives);
  gc.c.batch = std::to_string(b.bytes) + " bytes, " + std::to_string(b.occurrences) + " ops";
  for (int i = 0; i < 2; ++i) {
    TimingRecord t = timingOf(i == 0 ? b.bare : b.plan);
    t.case_index = gc.c.index;
    t.op_index = i;
    t.op_kind = i == 0 ? "bare nccl " + b.nccl_call : b.op + " in plan";
    t.group = b.group;
    t.bytes = b.bytes;
    t.algbw_gbps = i == 0 ? b.bare_algbw_gbs : b.plan_algbw_gbs;
    t.busbw_gbps = i == 0 ? b.bare_busbw_gbs : b.plan_busbw_gbs;
    gc.timings.push_back(t);
  }
}

/// A size of the fused kernel: six timings (gpu_import.h) and the exact and
/// real equivalences with NCCL all-reduce + add+norm.
void addFused(BenchCases& cases, const properties::GpuFusedRecord& b) {
  GpuResultCase& gc = cases.add(kBenchFused);
  gc.c.batch = std::to_string(b.tokens) + " tokens x " + std::to_string(b.hidden);
  gc.c.outcome = b.exact_identical ? CaseOutcome::kHolds : CaseOutcome::kViolated;
  const std::pair<const char*, const properties::GpuSummaryRecord*> sides[] = {
      {"nccl all_reduce + add_norm", &b.unfused},
      {"fused ar_add_norm", &b.fused},
      {"nccl all_reduce", &b.nccl_all_reduce},
      {"nccl all_reduce + add_norm (kernels)", &b.unfused_kernels},
      {"fused ar_add_norm (kernels)", &b.fused_kernels},
      {"nccl all_reduce (kernels)", &b.nccl_all_reduce_kernels}};
  // The fused kernel's protocol (bench JSON from before it existed: none).
  const std::string protocol = b.protocol.value_or("");
  for (int i = 0; i < 6; ++i) {
    TimingRecord t = timingOf(*sides[i].second);
    t.case_index = gc.c.index;
    t.op_index = i;
    t.op_kind = sides[i].first;
    if ((i == 1 || i == 4) && !protocol.empty()) t.op_kind += " [" + protocol + "]";
    t.group = "tp/" + std::to_string(b.ranks);
    t.bytes = b.bytes;
    t.algbw_gbps = t.median_us > 0 ? static_cast<double>(t.bytes) / (t.median_us * 1e3) : 0;
    gc.timings.push_back(t);
  }
  for (const bool exact : {true, false}) {
    const std::string mode = exact ? "exact" : "real";
    EquivalenceRecord e;
    e.case_index = gc.c.index;
    e.plan_a = "fused:" + mode;
    e.plan_b = "nccl+add_norm:" + mode;
    // Exact mode: any summation order is exact. Real mode with two
    // members: NCCL adds the same two floats.
    e.predicted_identical = exact || b.ranks == 2;
    e.observed_identical = exact ? b.exact_identical : b.real_identical;
    e.max_difference = exact ? 0.0 : b.real_max_abs;
    gc.equivalences.push_back(e);
  }
}

/// The captured step: per rank the eager step, the replay and the two sums
/// (of the kernels CUPTI saw in one replay, of the ops' event times).
void addGraph(BenchCases& cases, const std::vector<properties::GpuGraphRecord>& steps) {
  GpuResultCase& gc = cases.add(kBenchGraph);
  bool identical = true;
  for (const properties::GpuGraphRecord& g : steps) {
    const double kernels = g.kernel_sum_us, ops = g.op_sum_us;
    const std::pair<std::string, properties::GpuSummaryRecord> rows[] = {
        {"eager step", {g.eager_median_us, g.eager_p10_us, g.eager_p90_us}},
        {"graph replay", {g.graph_median_us, g.graph_p10_us, g.graph_p90_us}},
        {"sum of " + std::to_string(g.kernels) + " kernels", {kernels, kernels, kernels}},
        {"sum of " + std::to_string(g.ops) + " ops", {ops, ops, ops}}};
    for (int i = 0; i < 4; ++i) {
      TimingRecord t = timingOf(rows[i].second);
      t.case_index = gc.c.index;
      t.rank = g.rank;
      t.op_index = i;
      t.op_kind = rows[i].first;
      gc.timings.push_back(t);
    }
    EquivalenceRecord e;
    e.case_index = gc.c.index;
    e.plan_a = "graph replay:rank " + std::to_string(g.rank);
    e.plan_b = "eager step:rank " + std::to_string(g.rank);
    e.predicted_identical = true;
    e.observed_identical = g.identical;
    identical = identical && e.observed_identical;
    gc.equivalences.push_back(e);
  }
  gc.c.outcome = identical ? CaseOutcome::kHolds : CaseOutcome::kViolated;
}

/// One line for the console: what each section holds.
std::string benchSummary(const properties::GpuBenchRecord& bench) {
  std::vector<std::string> parts;
  if (bench.collectives && !bench.collectives->empty()) {
    double worst = bench.collectives->front().plan_over_bare_busbw;
    for (const auto& b : *bench.collectives) worst = std::min(worst, b.plan_over_bare_busbw);
    parts.push_back(std::to_string(bench.collectives->size()) +
                    " collectives (worst plan/bare busbw " + fixed2(worst) + ")");
  }
  if (bench.fused && !bench.fused->empty()) {
    double best = 0;
    for (const auto& b : *bench.fused) {
      if (b.tokens <= 64) best = std::max(best, b.speedup);
    }
    parts.push_back(std::to_string(bench.fused->size()) +
                    " fused sizes (best speedup up to 64 tokens " + fixed2(best) + "x)");
  }
  if (bench.graph) parts.push_back("a captured step");
  std::string summary;
  for (const std::string& p : parts) summary += (summary.empty() ? "" : ", ") + p;
  return summary.empty() ? "no rows" : summary;
}

void addBench(const properties::GpuBenchRecord& bench, GpuResultFile* file) {
  const CaseRecord base = caseOf(bench.c);
  BenchCases cases{base, file->cases};
  if (bench.collectives) {
    for (const auto& b : *bench.collectives) addCollective(cases, b);
  }
  if (bench.fused) {
    for (const auto& b : *bench.fused) addFused(cases, b);
  }
  if (bench.graph) addGraph(cases, *bench.graph);
  file->summary = benchSummary(bench);
}

/// `seam-gpu bench-allreduce`: one case, the bare and the in-plan timing.
void addAllReduce(const properties::GpuAllReduceRecord& bench, GpuResultFile* file) {
  GpuResultCase gc;
  gc.c.model = "all_reduce";
  gc.c.config = std::to_string(bench.devices) + " GPUs";
  gc.c.batch = std::to_string(bench.bytes) + " bytes";
  gc.c.group = "gpu";
  const std::pair<const char*, const double*> sides[] = {
      {"all_reduce (bare NCCL)", &bench.bare_median_us},
      {"all_reduce (inside a plan)", &bench.plan_median_us}};
  for (int op = 0; op < 2; ++op) {
    TimingRecord t;
    t.op_index = op;
    t.op_kind = sides[op].first;
    t.group = "tp/" + std::to_string(bench.devices);
    t.bytes = bench.bytes;
    t.median_us = *sides[op].second;
    t.p10_us = t.p90_us = t.median_us;
    t.busbw_gbps = op == 0 ? bench.bare_busbw_gbs : bench.plan_busbw_gbs;
    t.algbw_gbps = t.median_us > 0 ? static_cast<double>(bench.bytes) / (t.median_us * 1e3) : 0;
    gc.timings.push_back(t);
  }
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.3f", bench.plan_over_bare);
  file->summary = "all_reduce of " + gc.c.batch + ": plan/bare busbw " + ratio;
  file->cases.push_back(std::move(gc));
}

}  // namespace

Expected<GpuResultFile> readGpuJson(const std::string& path, const std::string& version) {
  const std::string label = "\"" + path.substr(0, 200) + "\"";
  auto text = readInputFile(label, path, kMaxGpuJsonBytes);
  if (!text) return text.status();
  auto result = properties::parseGpuResult(*text);
  if (!result) return Status::invalid(label + ": " + result.status().message());
  if (Status s = detail::checkGpuResult(*result, version); !s) {
    return Status::invalid(label + ": " + s.message());
  }
  GpuResultFile file;
  file.path = path;
  file.tool = properties::gpuToolName(*result);
  const properties::GpuOrigin& origin = std::visit(
      [](const auto& record) -> const properties::GpuOrigin& { return record.origin; }, *result);
  RunRecord& run = file.run;
  run.command = "gpu " + file.tool.substr(std::string("seam-gpu ").size());
  run.args = origin.command.value_or(file.tool);
  run.version = origin.version.value_or(version);
  if (const auto* bench = std::get_if<properties::GpuAllReduceRecord>(&*result)) {
    run.gpu = std::to_string(bench->devices) + " GPUs";
  } else {
    run.gpu = origin.device.value_or("");
  }
  if (origin.versions) run.cuda = origin.versions->text;
  run.nccl = run.cuda;
  // When, where and from what it ran, where seam-gpu wrote it; a file from
  // before it did keeps the import time and no host (not this machine's).
  run.host = origin.host.value_or("");
  run.started_ms = origin.written_ms.value_or(properties::epochMs());
  run.seam_commit = origin.commit.value_or("");
  if (const auto* r = std::get_if<properties::GpuRunRecord>(&*result)) addRun(*r, &file);
  if (const auto* c = std::get_if<properties::GpuCompareRecord>(&*result)) addCompare(*c, &file);
  if (const auto* b = std::get_if<properties::GpuBenchRecord>(&*result)) addBench(*b, &file);
  if (const auto* a = std::get_if<properties::GpuAllReduceRecord>(&*result))
    addAllReduce(*a, &file);
  return file;
}

namespace {

/// The rows a file's cases become, keyed as the store keys them (a later row
/// of one key replaces an earlier one), in a form that compares by value.
using RowKeys = std::map<std::tuple<std::int64_t, std::string, std::string, int, int>,
                         std::tuple<std::string, std::int64_t, double, double, double, double>>;

void addRow(RowKeys& rows, std::int64_t case_index, const EquivalenceRecord& e) {
  rows[{case_index, e.plan_a, e.plan_b, -1, -1}] = {
      std::to_string(e.plan_a_hash) + "/" + std::to_string(e.plan_b_hash),
      (e.predicted_identical ? 2 : 0) + (e.observed_identical ? 1 : 0),
      e.max_difference,
      0,
      0,
      0};
}

void addRow(RowKeys& rows, std::int64_t case_index, const TimingRecord& t) {
  rows[{case_index, "", "", t.rank, t.op_index}] = {
      t.op_kind + "|" + t.group, t.bytes, t.median_us, t.p10_us, t.p90_us, t.busbw_gbps};
}

RowKeys rowsOf(const GpuResultFile& file) {
  RowKeys rows;
  for (const GpuResultCase& gc : file.cases) {
    for (const EquivalenceRecord& e : gc.equivalences) addRow(rows, gc.c.index, e);
    for (const TimingRecord& t : gc.timings) addRow(rows, gc.c.index, t);
  }
  return rows;
}

bool sameOrigin(const RunRecord& a, const RunRecord& b) {
  return a.command == b.command && a.args == b.args && a.version == b.version && a.gpu == b.gpu &&
         a.cuda == b.cuda;
}

}  // namespace

bool sameGpuResult(const GpuResultFile& a, const GpuResultFile& b) {
  return sameOrigin(a.run, b.run) && rowsOf(a) == rowsOf(b);
}

Expected<std::int64_t> importedAs(Store& store, const GpuResultFile& file) {
  const RowKeys want = rowsOf(file);
  auto runs = store.runs();
  if (!runs) return runs.status();
  for (const RunRecord& r : *runs) {
    if (r.finished_ms == 0 || !sameOrigin(r, file.run)) continue;
    auto eqs = store.equivalences(r.id);
    if (!eqs) return eqs.status();
    auto timings = store.timings(r.id);
    if (!timings) return timings.status();
    RowKeys have;
    for (const EquivalenceRecord& e : *eqs) addRow(have, e.case_index, e);
    for (const TimingRecord& t : *timings) addRow(have, t.case_index, t);
    if (have == want) return r.id;
  }
  return std::int64_t{0};
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

Expected<GpuImport> importGpuJson(Store& store, const std::string& path,
                                  const std::string& version) {
  auto file = readGpuJson(path, version);
  if (!file) return file.status();
  return writeGpuResult(store, *file);
}

}  // namespace seam::reports
