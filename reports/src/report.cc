#include "seam/reports/report.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>
#include <map>

#include "seam/properties/engine_finding.h"
#include "seam/reports/gpu_import.h"
#include "seam/reports/input_file.h"
#include "seam/reports/mutate_view.h"
#include "seam/reports/output_file.h"
#include "seam/sim/replay/bit_identity.h"
#include "svg_plot.h"

namespace seam::reports {

namespace {

/// A table in either format. Cells are escaped for the target.
class Doc {
 public:
  explicit Doc(ReportFormat f) : f_(f) {}
  void heading(int level, const std::string& text) {
    if (f_ == ReportFormat::kMarkdown) {
      out_ += std::string(level, '#') + " " + text + "\n\n";
    } else {
      out_ +=
          "<h" + std::to_string(level) + ">" + html(text) + "</h" + std::to_string(level) + ">\n";
    }
  }
  void para(const std::string& text) {
    out_ += f_ == ReportFormat::kMarkdown ? text + "\n\n" : "<p>" + html(text) + "</p>\n";
  }
  void code(const std::string& text) {
    out_ += f_ == ReportFormat::kMarkdown ? "```\n" + text + "\n```\n\n"
                                          : "<pre>" + html(text) + "</pre>\n";
  }
  void table(const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows) {
    if (f_ == ReportFormat::kMarkdown) {
      auto row = [&](const std::vector<std::string>& cells) {
        std::string l = "|";
        for (const auto& c : cells) l += " " + md(c) + " |";
        out_ += l + "\n";
      };
      row(header);
      std::string sep = "|";
      for (size_t i = 0; i < header.size(); ++i) sep += "---|";
      out_ += sep + "\n";
      for (const auto& r : rows) row(r);
      out_ += "\n";
      return;
    }
    out_ += "<table><tr>";
    for (const auto& h : header) out_ += "<th>" + html(h) + "</th>";
    out_ += "</tr>\n";
    for (const auto& r : rows) {
      out_ += "<tr>";
      for (const auto& c : r) out_ += "<td>" + html(c) + "</td>";
      out_ += "</tr>\n";
    }
    out_ += "</table>\n";
  }
  void raw(const std::string& html_text) { out_ += html_text; }
  std::string finish(const std::string& title) const {
    if (f_ == ReportFormat::kMarkdown) return out_;
    return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + html(title) +
           "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1400px}"
           "table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid "
           "#bbb;padding:3px 8px;"
           "font-size:13px;text-align:left;vertical-align:top}th{background:#eee}pre{background:#"
           "f6f6f6;"
           "padding:8px;white-space:pre-wrap}</style></head><body>\n" +
           out_ + "</body></html>\n";
  }

 private:
  static std::string html(const std::string& s) { return escapeXml(s); }
  static std::string md(const std::string& s) {
    std::string o;
    for (char c : s) {
      if (c == '|')
        o += "\\|";
      else if (c == '\n')
        o += ' ';
      else
        o += c;
    }
    return o;
  }
  ReportFormat f_;
  std::string out_;
};

std::string when(std::int64_t ms) {
  if (ms == 0) return "unfinished";
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

/// The points of the bench plots, gathered over every bench run of the store.
struct BenchPlots {
  LinePlot collectives{"Collectives: inside the plan vs bare NCCL",
                       "message size (bytes)",
                       "busbw GB/s (slowest rank)",
                       true,
                       true,
                       {{"inside the plan", {}, false}, {"bare NCCL", {}, true}}};
  LinePlot fused{"Fused all-reduce + add + RMSNorm vs NCCL all-reduce + add+norm",
                 "tokens",
                 "median us (slowest rank)",
                 true,
                 false,
                 {}};
  BarPlot graph{"Decode step: eager vs CUDA-graph replay vs sum of its kernels",
                "us (median)",
                {"eager launches", "graph replay", "sum of kernels (CUPTI)"},
                {}};
  bool empty() const {
    return collectives.series[0].points.empty() && fused.series.empty() && graph.groups.empty();
  }
};

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
  std::vector<std::vector<std::string>> collectives, fused, graph;
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

/// The heading, and one line per run: id, command, arguments, times.
void renderRunIndex(Doc& d, const Store& store, const std::vector<RunRecord>& runs) {
  d.heading(1, "seam report: " + store.path());
  d.para(std::to_string(runs.size()) + " runs in the store.");
  std::vector<std::vector<std::string>> index;
  for (const RunRecord& r : runs) {
    index.push_back({std::to_string(r.id), r.command, r.args.substr(0, 160), r.version,
                     r.gpu.empty() ? "-" : r.gpu, when(r.started_ms), when(r.finished_ms)});
  }
  d.table({"run", "command", "arguments", "version", "GPU", "started", "finished"}, index);
}

/// The boundary graphs: SVG inline in the HTML page, linked from the Markdown.
Status renderGraphs(Doc& d, ReportFormat format, const std::vector<std::string>& graphs) {
  for (const std::string& path : graphs) {
    auto read = readInputFile("--graph \"" + path.substr(0, 200) + "\"", path, kMaxGraphFileBytes);
    if (!read) return read.status();
    const std::string& svg = *read;
    const auto start = svg.find("<svg");
    if (start == std::string::npos)
      return Status::invalid("--graph \"" + path.substr(0, 200) + "\": not an SVG file");
    d.heading(2, "Boundary graph: " + path);
    if (format == ReportFormat::kHtml) {
      d.raw("<div class=\"graph\">" + svg.substr(start) + "</div>\n");
    } else {
      d.para("![boundary graph](" + path + ")");
    }
  }
  return Status::ok();
}

/// The run's engine findings (properties/engine_finding.h), by SGLang call:
/// how many cases, the first one's violation and its reproduce line.
void renderEngineFindings(Doc& d, const std::vector<CaseRecord>& cases,
                          const std::map<std::int64_t, std::string>& text) {
  struct Finding {
    std::int64_t cases = 0;
    std::string first_violation, first_reproduce;
  };
  std::map<std::string, Finding> by_call;
  for (const CaseRecord& c : cases) {
    const auto it = text.find(c.index);
    if (c.outcome != CaseOutcome::kViolated || it == text.end()) continue;
    const auto [violation, call] = properties::splitFailureText(it->second);
    if (call.empty()) continue;
    Finding& f = by_call[std::string(call)];
    if (f.cases++ == 0) {
      f.first_violation = std::string(violation);
      f.first_reproduce = c.reproduce;
    }
  }
  if (by_call.empty()) return;
  d.heading(3, "Engine findings: SGLang's own plans violate a property");
  for (const auto& [call, f] : by_call) {
    d.para(std::to_string(f.cases) + " cases. SGLang calls " + call +
           ". First: " + f.first_violation + ".");
    d.code(f.first_reproduce);
  }
}

/// A run's counts per group and outcome, its engine findings, and its first
/// 20 violated cases.
Status renderCases(Doc& d, Store& store, const RunRecord& r, const std::vector<CaseRecord>& cases) {
  // Counts per group (model, diff class, ...) and outcome.
  std::map<std::string, std::array<std::int64_t, 3>> by_group;
  for (const CaseRecord& c : cases) ++by_group[c.group][static_cast<int>(c.outcome)];
  std::vector<std::vector<std::string>> rows;
  for (const auto& [g, n] : by_group) {
    rows.push_back({g, std::to_string(n[0]), std::to_string(n[1]), std::to_string(n[2])});
  }
  d.table({r.command == "diff" ? "class" : "group", "holds", "violated", "refused"}, rows);
  auto failures = store.firstFailures(r.id);
  if (!failures) return failures.status();
  std::map<std::int64_t, std::string> text;
  for (const auto& [idx, v] : *failures) text[idx] = v.text;
  renderEngineFindings(d, cases, text);
  std::vector<std::vector<std::string>> failing;
  for (const CaseRecord& c : cases) {
    if (c.outcome != CaseOutcome::kViolated || failing.size() >= 20) continue;
    const std::string& words = text[c.index].empty() ? c.refusal : text[c.index];
    const auto [violation, call] = properties::splitFailureText(words);
    failing.push_back({"#" + std::to_string(c.index), call.empty() ? "-" : "yes",
                       std::string(violation), c.reproduce});
  }
  if (!failing.empty()) d.table({"case", "engine finding", "violation", "reproduce"}, failing);
  return Status::ok();
}

/// A campaign's mutation score and each mutant with its first kill, or why not.
Status renderCampaign(Doc& d, Store& store, const RunRecord& r,
                      const std::vector<MutantRecord>& mutants) {
  auto kills = store.kills(r.id);
  if (!kills) return kills.status();
  std::map<std::string, KillRecord> kill_of;
  for (const KillRecord& k : *kills) kill_of[k.mutant_id] = k;
  std::vector<std::vector<std::string>> rows;
  StatusCounts counts;
  for (const MutantRecord& m : mutants) {
    counts.add(m.status);
    const auto it = kill_of.find(m.id);
    rows.push_back({m.id, m.kind, m.status, std::to_string(m.cases_run),
                    it == kill_of.end()
                        ? m.argument
                        : it->second.violation_class + ": " + it->second.reproduce});
  }
  d.para(scoreLine(counts));
  d.table({"mutant", "kind", "status", "cases run", "first kill, or why"}, rows);
  return Status::ok();
}

/// Each comparison of two sides with its predicted and observed bit-identity.
void renderEquivalence(Doc& d, const std::vector<EquivalenceRecord>& equivalences) {
  std::vector<std::vector<std::string>> rows;
  for (const EquivalenceRecord& e : equivalences) {
    const PredictionVerdict v = judgePrediction(e.predicted_identical, e.observed_identical);
    rows.push_back({e.plan_a, e.plan_b, e.predicted_identical ? "yes" : "no",
                    e.observed_identical ? "yes" : "no",
                    v == PredictionVerdict::kHolds     ? "holds"
                    : v == PredictionVerdict::kRefuted ? "REFUTED"
                                                       : "untested",
                    fixed(e.max_difference, 6)});
  }
  d.table(
      {"A", "B", "predicted bit-identical", "observed bit-identical", "prediction", "max |diff|"},
      rows);
}

/// The 12 slowest op timings of a run.
void renderSlowestTimings(Doc& d, const std::vector<TimingRecord>& timings) {
  std::vector<TimingRecord> slow = timings;
  std::sort(slow.begin(), slow.end(),
            [](const auto& x, const auto& y) { return x.median_us > y.median_us; });
  if (slow.size() > 12) slow.resize(12);
  std::vector<std::vector<std::string>> rows;
  for (const TimingRecord& x : slow) {
    rows.push_back({std::to_string(x.rank), std::to_string(x.op_index), x.op_kind, x.group,
                    std::to_string(x.bytes), fixed(x.median_us, 2), fixed(x.p10_us, 2),
                    fixed(x.p90_us, 2), fixed(x.busbw_gbps, 2)});
  }
  d.para(std::to_string(timings.size()) + " op timings; the slowest:");
  d.table({"rank", "op", "kind", "group", "bytes", "median us", "p10 us", "p90 us", "busbw GB/s"},
          rows);
}

/// One run's section: its arguments, cases, campaign, GPU comparisons and
/// timings (a bench run's as its three tables, its points into `plots`).
Status renderRun(Doc& d, Store& store, const RunRecord& r, BenchPlots& plots) {
  d.heading(2, "Run " + std::to_string(r.id) + ": seam " + r.command);
  d.code(r.args);
  auto cases = store.cases(r.id);
  if (!cases) return cases.status();
  if (!cases->empty()) {
    if (Status s = renderCases(d, store, r, *cases); !s) return s;
  }
  auto mutants = store.mutants(r.id);
  if (!mutants) return mutants.status();
  if (!mutants->empty()) {
    if (Status s = renderCampaign(d, store, r, *mutants); !s) return s;
  }
  auto eq = store.equivalences(r.id);
  if (!eq) return eq.status();
  if (!eq->empty() && r.command != "gpu bench") {  // a bench's checks are columns of its tables
    renderEquivalence(d, *eq);
  }
  auto t = store.timings(r.id);
  if (!t) return t.status();
  if (r.command == "gpu bench") {
    renderBench(d, *cases, *t, *eq, r.id, plots);
  } else if (!t->empty()) {
    renderSlowestTimings(d, *t);
  }
  return Status::ok();
}

/// The bench plots over every bench run: drawn in the HTML page, named in
/// the Markdown.
void renderBenchPlots(Doc& d, ReportFormat format, const BenchPlots& plots) {
  d.heading(2, "GPU bench plots");
  if (format == ReportFormat::kHtml) {
    d.para("Every seam gpu bench run of the store; the tables above hold the same figures.");
    d.raw("<div class=\"plots\">\n" + renderLinePlot(plots.collectives) +
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

}  // namespace

Expected<std::string> renderReport(Store& store, ReportFormat format,
                                   const std::vector<std::string>& graphs) {
  auto runs = store.runs();
  if (!runs) return runs.status();
  Doc d(format);
  BenchPlots plots;
  renderRunIndex(d, store, *runs);
  if (Status s = renderGraphs(d, format, graphs); !s) return s;
  for (const RunRecord& r : *runs) {
    if (Status s = renderRun(d, store, r, plots); !s) return s;
  }
  if (!plots.empty()) renderBenchPlots(d, format, plots);
  return d.finish("seam report");
}

Status writeReport(Store& store, const std::string& path, const std::vector<std::string>& graphs) {
  const auto dot = path.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (ext != "md" && ext != "html") {
    return Status::invalid("-o \"" + path.substr(0, 200) +
                           "\": the extension must be .md or .html");
  }
  auto text =
      renderReport(store, ext == "md" ? ReportFormat::kMarkdown : ReportFormat::kHtml, graphs);
  if (!text) return text.status();
  return writeOutputFile("-o", path, *text);
}

}  // namespace seam::reports
