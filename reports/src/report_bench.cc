#include "report_bench.h"

#include <cstdio>
#include <cstdlib>
#include <map>

#include "seam/reports/gpu_import.h"

namespace seam::reports {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

namespace {

/// A bench run's timing and equivalence rows by case index.
class BenchRowsByCase {
 public:
  BenchRowsByCase(const std::vector<TimingRecord>& timings,
                  const std::vector<EquivalenceRecord>& equivalences) {
    for (const TimingRecord& t : timings) timings_[t.case_index].push_back(&t);
    for (const EquivalenceRecord& e : equivalences) checks_[e.case_index].push_back(&e);
  }
  /// The timing of op `op` on rank `rank` of case `c`, or null.
  const TimingRecord* timing(std::int64_t c, int rank, int op) const {
    const auto it = timings_.find(c);
    if (it == timings_.end()) return nullptr;
    for (const TimingRecord* t : it->second) {
      if (t->rank == rank && t->op_index == op) return t;
    }
    return nullptr;
  }
  /// The equivalence rows of case `c`.
  const std::vector<const EquivalenceRecord*>& checks(std::int64_t c) const {
    static const std::vector<const EquivalenceRecord*> kNone;
    const auto it = checks_.find(c);
    return it == checks_.end() ? kNone : it->second;
  }

 private:
  std::map<std::int64_t, std::vector<const TimingRecord*>> timings_;
  std::map<std::int64_t, std::vector<const EquivalenceRecord*>> checks_;
};

/// The rows of a bench run's three tables, and its fused-kernel plot lines
/// by hidden size (fused, unfused) until they join the plot.
struct BenchTables {
  std::vector<std::vector<Cell>> collectives, fused, graph;
  std::map<std::string, std::pair<PlotSeries, PlotSeries>> fused_series;
};

std::string ratio(double a, double b) { return b > 0 ? fixed(a / b, 3) : std::string("-"); }

/// A collective inside the plan (op 1) against the same call made bare (op 0).
void addCollectiveRow(const CaseRecord& c, const BenchRowsByCase& rows, BenchTables& tables,
                      BenchPlots& plots) {
  const TimingRecord* bare = rows.timing(c.index, 0, 0);
  const TimingRecord* plan = rows.timing(c.index, 0, 1);
  if (!bare || !plan) return;
  plots.collectives.series[0].points.emplace_back(static_cast<double>(plan->bytes),
                                                  plan->busbw_gbps);
  plots.collectives.series[1].points.emplace_back(static_cast<double>(bare->bytes),
                                                  bare->busbw_gbps);
  tables.collectives.push_back({plan->op_kind, plan->group, c.batch, fixed(plan->median_us, 2),
                                fixed(bare->median_us, 2), fixed(plan->busbw_gbps, 2),
                                fixed(bare->busbw_gbps, 2),
                                ratio(plan->busbw_gbps, bare->busbw_gbps)});
}

/// The fused kernel (op 1) against NCCL all-reduce + add+norm (op 0), with
/// the bare all-reduce (op 2) and CUPTI's kernel times (ops 3, 4).
void addFusedRow(const CaseRecord& c, const BenchRowsByCase& rows, std::int64_t run_id,
                 BenchTables& tables) {
  const TimingRecord* unfused = rows.timing(c.index, 0, 0);
  const TimingRecord* kernel = rows.timing(c.index, 0, 1);
  const TimingRecord* nccl = rows.timing(c.index, 0, 2);
  const TimingRecord* unfused_k = rows.timing(c.index, 0, 3);
  const TimingRecord* kernel_k = rows.timing(c.index, 0, 4);
  if (!unfused || !kernel) return;
  std::string exact = "-", real = "-";
  for (const EquivalenceRecord* e : rows.checks(c.index)) {
    const std::string verdict =
        e->observed_identical ? "identical" : "max " + fixed(e->max_difference, 6);
    (e->plan_a == "fused:exact" ? exact : real) = verdict;
  }
  // c.batch is "T tokens x H".
  const double tokens = std::atof(c.batch.c_str());
  const auto x = c.batch.rfind("x ");
  const std::string hidden = x == std::string::npos ? "?" : c.batch.substr(x + 2);
  // The protocol the kernel used, "[ll]" or "[flag]" at the end of its
  // op kind (gpu_import); absent in stores from before it was recorded.
  const auto open = kernel->op_kind.rfind(" [");
  const std::string protocol =
      open == std::string::npos || kernel->op_kind.back() != ']'
          ? ""
          : kernel->op_kind.substr(open + 2, kernel->op_kind.size() - open - 3);
  auto& [fused_line, unfused_line] = tables.fused_series[hidden];
  const std::string tag = "hidden " + hidden + " (run " + std::to_string(run_id) + ")";
  fused_line.name = "fused, " + tag;
  unfused_line.name = "NCCL + add+norm, " + tag;
  unfused_line.dashed = true;
  fused_line.points.emplace_back(tokens, kernel->median_us);
  unfused_line.points.emplace_back(tokens, unfused->median_us);
  tables.fused.push_back(
      {protocol.empty() ? c.batch : c.batch + ", " + protocol, std::to_string(kernel->bytes),
       fixed(kernel->median_us, 2), fixed(unfused->median_us, 2),
       nccl ? fixed(nccl->median_us, 2) : "-", ratio(unfused->median_us, kernel->median_us),
       kernel_k ? fixed(kernel_k->median_us, 2) : "-",
       unfused_k ? fixed(unfused_k->median_us, 2) : "-",
       kernel_k && unfused_k ? ratio(unfused_k->median_us, kernel_k->median_us) : "-", exact,
       real});
}

/// Per rank that has a bit-identity check: the captured step's eager launches
/// (op 0), graph replay (op 1), sum of kernels (op 2) and of ops' events (op 3).
void addGraphRows(const CaseRecord& c, const BenchRowsByCase& rows, std::int64_t run_id,
                  BenchTables& tables, BenchPlots& plots) {
  std::map<int, bool> identical;
  for (const EquivalenceRecord* e : rows.checks(c.index)) {
    identical[std::atoi(e->plan_a.substr(e->plan_a.rfind(' ') + 1).c_str())] =
        e->observed_identical;
  }
  for (const auto& [rank, same] : identical) {
    const TimingRecord* eager = rows.timing(c.index, rank, 0);
    const TimingRecord* replay = rows.timing(c.index, rank, 1);
    const TimingRecord* kernels = rows.timing(c.index, rank, 2);
    const TimingRecord* ops = rows.timing(c.index, rank, 3);
    if (!eager || !replay || !kernels || !ops) continue;
    plots.graph.groups.push_back(
        {"run " + std::to_string(run_id) + ", rank " + std::to_string(rank),
         {eager->median_us, replay->median_us, kernels->median_us}});
    tables.graph.push_back({std::to_string(rank), ops->op_kind + ", " + kernels->op_kind.substr(7),
                            fixed(eager->median_us, 1), fixed(replay->median_us, 1),
                            fixed(kernels->median_us, 1),
                            ratio(replay->median_us, kernels->median_us), fixed(ops->median_us, 1),
                            ratio(eager->median_us, replay->median_us), same ? "yes" : "NO"});
  }
}

void renderBenchTables(Doc& d, const BenchTables& tables) {
  if (!tables.collectives.empty()) {
    d.para(
        "Collectives of the plan against the same NCCL call made bare (median us, slowest rank; "
        "busbw GB/s as "
        "nccl-tests defines it):");
    d.table({"op", "group", "size", "plan us", "bare us", "plan busbw", "bare busbw", "plan/bare"},
            tables.collectives);
  }
  if (!tables.fused.empty()) {
    d.para(
        "Fused all-reduce + add + RMSNorm against NCCL all-reduce + add+norm kernel (real mode, "
        "median us, "
        "slowest rank; CUDA events around each call, and CUPTI's durations of each call's "
        "kernels):");
    d.table({"size", "bytes", "fused us", "unfused us", "NCCL all-reduce us", "speedup",
             "fused kernel us", "unfused kernels us", "kernel speedup", "exact mode", "real mode"},
            tables.fused);
  }
  if (!tables.graph.empty()) {
    d.para(
        "A decode step replayed from a CUDA graph against eager launches and the sum of its "
        "kernels (CUPTI, one "
        "replay) and of its ops' event times (median us):");
    d.table({"rank", "step", "eager us", "graph us", "kernels us", "graph/kernels", "ops us",
             "eager/graph", "bit-identical"},
            tables.graph);
  }
}

}  // namespace

/// `seam gpu bench` rows (gpu_import.h's bench groups) as three tables: each
/// collective inside the plan against bare NCCL, the fused kernel against NCCL
/// all-reduce + add+norm per size, the captured step against eager launches.
/// Their points go into `plots` (labelled with run `run_id`).
void renderBench(Doc& d, const std::vector<CaseRecord>& cases,
                 const std::vector<TimingRecord>& timings,
                 const std::vector<EquivalenceRecord>& equivalences, std::int64_t run_id,
                 BenchPlots& plots) {
  const BenchRowsByCase rows(timings, equivalences);
  BenchTables tables;
  for (const CaseRecord& c : cases) {
    if (c.group == kBenchCollectives) {
      addCollectiveRow(c, rows, tables, plots);
    } else if (c.group == kBenchFused) {
      addFusedRow(c, rows, run_id, tables);
    } else if (c.group == kBenchGraph) {
      addGraphRows(c, rows, run_id, tables, plots);
    }
  }
  for (auto& [hidden, lines] : tables.fused_series) {
    plots.fused.series.push_back(std::move(lines.first));
    plots.fused.series.push_back(std::move(lines.second));
  }
  renderBenchTables(d, tables);
}

/// The bench plots over every bench run: drawn in the HTML page, named in
/// the Markdown.
void renderBenchPlots(Doc& d, const BenchPlots& plots) {
  d.heading(2, "GPU bench plots");
  if (d.html()) {
    d.para("Every seam gpu bench run of the store; the tables above hold the same figures.");
    d.rawHtml("<div class=\"plots\">\n" + renderLinePlot(plots.collectives) +
              renderLinePlot(plots.fused) + renderBarPlot(plots.graph) + "</div>\n");
  } else {
    d.para(
        "The HTML report (seam report -o report.html) draws the tables above as plots: "
        "collectives' busbw "
        "by message size, the fused kernel against NCCL + add+norm by tokens, the captured step "
        "against eager "
        "launches and the sum of its kernels.");
  }
}

}  // namespace seam::reports
