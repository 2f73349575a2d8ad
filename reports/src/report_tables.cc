#include <algorithm>
#include <set>

#include "report_bench.h"
#include "report_data.h"
#include "seam/sim/replay/bit_identity.h"
#include "svg_plot.h"

namespace seam::reports {

namespace {

// One colour per outcome in every table legend and plot (Okabe-Ito).
constexpr const char* kHoldsColour = "#009E73";
constexpr const char* kViolatedColour = "#D55E00";
constexpr const char* kFindingColour = "#CC79A7";
constexpr const char* kNotModelledColour = "#E69F00";
constexpr const char* kRefusedColour = "#D9D9D9";

/// A mutant's operator kind: decision, targeted plan operator, or an
/// operator applied at every site of its kind.
std::string operatorKind(const MutantRecord& m) {
  if (m.id.rfind("plan.site-", 0) == 0) return "plan, per site";
  return m.kind;
}

void renderGroupTable(Doc& d, const RunData& r) {
  std::vector<std::vector<Cell>> rows;
  for (const auto& [g, n] : r.by_group) {
    rows.push_back({g, grouped(n.holds), grouped(n.violated), grouped(n.findings),
                    grouped(n.not_modelled), grouped(n.refused), grouped(n.total())});
  }
  d.table({r.run.command == "diff" ? "class" : "group", "holds", "violated",
           "of them engine findings", "not modelled", "refused by the engine", "cases"},
          rows);
}

/// A campaign's statuses by operator kind, then each mutant with its first
/// kill, or why not.
void renderCampaign(Doc& d, const RunData& r) {
  std::map<std::string, StatusCounts> by_kind;
  for (const MutantRecord& m : r.mutants) by_kind[operatorKind(m)].add(m.status);
  std::vector<std::vector<Cell>> kinds;
  for (const auto& [k, c] : by_kind) {
    kinds.push_back({k, std::to_string(c.killed), std::to_string(c.survived),
                     std::to_string(c.equivalent), std::to_string(c.not_covered),
                     std::to_string(c.planner_errors)});
  }
  d.table({"operator kind", "killed", "survived", "equivalent", "not covered", "planner errors"},
          kinds);
  std::vector<std::vector<Cell>> rows;
  for (const MutantRecord& m : r.mutants) {
    const auto it = r.kill_of.find(m.id);
    if (it == r.kill_of.end()) {
      rows.push_back({m.id, m.kind, m.status, grouped(m.cases_run), ellipsis(m.argument, 600)});
    } else {
      rows.push_back({m.id, m.kind, m.status, grouped(m.cases_run),
                      Cell::code(it->second.reproduce + "  # " + it->second.violation_class)});
    }
  }
  d.table({"mutant", "kind", "status", "cases run", "first kill, or why"}, rows);
}

/// Each comparison of two sides with its predicted and observed bit-identity.
void renderEquivalence(Doc& d, const std::vector<EquivalenceRecord>& equivalences) {
  std::vector<std::vector<Cell>> rows;
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
  std::vector<std::vector<Cell>> rows;
  for (const TimingRecord& x : slow) {
    rows.push_back({std::to_string(x.rank), std::to_string(x.op_index), x.op_kind, x.group,
                    std::to_string(x.bytes), fixed(x.median_us, 2), fixed(x.p10_us, 2),
                    fixed(x.p90_us, 2), fixed(x.busbw_gbps, 2)});
  }
  d.para(std::to_string(timings.size()) + " op timings; the slowest:");
  d.table({"rank", "op", "kind", "group", "bytes", "median us", "p10 us", "p90 us", "busbw GB/s"},
          rows);
}

/// A sweep's outcome per model as shares, and per model and configuration
/// as a grid whose cell has the colour of its most telling outcome.
void renderSweepPlots(Doc& d, const RunData& r) {
  StackedBars bars{
      "Run " + std::to_string(r.run.id) + ": outcome per model (share of its cases)",
      {"holds", "violated", "engine finding", "not modelled", "refused by the engine"},
      {kHoldsColour, kViolatedColour, kFindingColour, kNotModelledColour, kRefusedColour},
      {},
      true};
  for (const auto& [g, n] : r.by_group) {
    bars.rows.push_back({g,
                         {double(n.holds), double(n.violated - n.findings), double(n.findings),
                          double(n.not_modelled), double(n.refused)}});
  }
  CellGrid grid;
  grid.title = "Run " + std::to_string(r.run.id) + ": outcome per configuration (row) and model";
  grid.legend = {{"a violation", kViolatedColour},
                 {"an engine finding", kFindingColour},
                 {"holds", kHoldsColour},
                 {"not modelled", kNotModelledColour},
                 {"only refused by the engine", kRefusedColour}};
  std::set<std::string> configs;
  for (const auto& [key, n] : r.by_model_config) configs.insert(key.second);
  grid.row_names.assign(configs.begin(), configs.end());
  for (const auto& [g, n] : r.by_group) grid.column_names.push_back(g);
  grid.cells.assign(grid.row_names.size(), std::vector<int>(grid.column_names.size(), -1));
  grid.tips.assign(grid.row_names.size(), std::vector<std::string>(grid.column_names.size()));
  for (std::size_t row = 0; row < grid.row_names.size(); ++row) {
    for (std::size_t col = 0; col < grid.column_names.size(); ++col) {
      const auto it = r.by_model_config.find({grid.column_names[col], grid.row_names[row]});
      if (it == r.by_model_config.end()) continue;
      const OutcomeCounts& n = it->second;
      grid.cells[row][col] = n.violated > n.findings ? 0
                             : n.findings > 0        ? 1
                             : n.holds > 0           ? 2
                             : n.not_modelled > 0    ? 3
                                                     : 4;
      grid.tips[row][col] =
          grid.column_names[col] + ", " + grid.row_names[row] + ": " + countsLine(n);
    }
  }
  d.rawHtml("<div class=\"plots\">\n" + renderStackedBars(bars) + renderCellGrid(grid) +
            "</div>\n");
}

void renderCampaignPlot(Doc& d, const RunData& r) {
  StackedBars bars{"Run " + std::to_string(r.run.id) + ": mutants by operator kind",
                   {"killed", "survived", "equivalent", "not covered", "planner error"},
                   {kHoldsColour, kViolatedColour, "#56B4E9", kNotModelledColour, "#555555"},
                   {},
                   false};
  std::map<std::string, StatusCounts> by_kind;
  for (const MutantRecord& m : r.mutants) by_kind[operatorKind(m)].add(m.status);
  for (const auto& [k, c] : by_kind) {
    bars.rows.push_back({k,
                         {double(c.killed), double(c.survived), double(c.equivalent),
                          double(c.not_covered), double(c.planner_errors)}});
  }
  d.rawHtml("<div class=\"plots\">\n" + renderStackedBars(bars) + "</div>\n");
}

}  // namespace

/// An engine sweep's conformance: per model and family, the classes of each policy.
static void renderConformanceTable(Doc& d, const EngineConformance& c) {
  d.para("What " + c.engine +
         " ran, case by case, against each policy's plan (classes: docs/recordings.md).");
  std::vector<std::vector<Cell>> rows;
  for (const auto& [key, row] : c.rows) {
    std::vector<Cell> cells = {key.first, key.second, grouped(row.cases)};
    for (const char* policy : {"declared", "legacy"}) {
      std::string text;
      const auto it = row.by_policy.find(policy);
      if (it != row.by_policy.end())
        for (const char* name : kAgreementClasses)
          if (const auto n = it->second.find(name); n != it->second.end())
            text += (text.empty() ? "" : ", ") + std::string(name) + " " + grouped(n->second);
      cells.push_back(text.empty() ? "-" : text);
    }
    rows.push_back(std::move(cells));
  }
  d.table({"model", "family", "cases", "declared", "legacy"}, rows);
  for (const auto& [policy, classes] : c.classes)
    for (const auto& [what, k] : classes)
      d.item(policy + ": " + ellipsis(what, 300) + " (" + grouped(k.cases) + ")", k.reproduce);
  d.endList();
}

void renderRunTables(Doc& d, const RunData& r, BenchPlots& plots) {
  const bool bench = r.run.command == "gpu bench";
  const bool any = (!r.by_group.empty() && !bench) || !r.mutants.empty() || !r.timings.empty() ||
                   (!r.equivalences.empty() && !bench) || r.engine.cases > 0;
  if (!any) return;
  d.heading(2, "Run " + std::to_string(r.run.id) + " in tables: seam " + r.run.command);
  if (r.engine.cases > 0) renderConformanceTable(d, r.engine);
  if (!r.by_group.empty() && !bench) renderGroupTable(d, r);
  if (!r.mutants.empty()) renderCampaign(d, r);
  // A bench's checks are columns of its tables.
  if (!r.equivalences.empty() && !bench) renderEquivalence(d, r.equivalences);
  if (bench) {
    renderBench(d, r.bench_cases, r.timings, r.equivalences, r.run.id, plots);
  } else if (!r.timings.empty()) {
    renderSlowestTimings(d, r.timings);
  }
}

bool hasRunPlots(const RunData& r) {
  return (r.run.command == "sweep" && !r.by_model_config.empty()) || !r.mutants.empty();
}

void renderRunPlots(Doc& d, const RunData& r) {
  if (r.run.command == "sweep" && !r.by_model_config.empty()) renderSweepPlots(d, r);
  if (!r.mutants.empty()) renderCampaignPlot(d, r);
}

}  // namespace seam::reports
