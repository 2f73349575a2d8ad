#include "seam/reports/report.h"

#include <cctype>
#include <filesystem>
#include <regex>
#include <string_view>

#include "report_data.h"
#include "seam/reports/input_file.h"
#include "seam/reports/output_file.h"

namespace seam::reports {

namespace {

/// An SVG drawn at its own size but never wider than the page: its width
/// and height attributes become a style with max-width (its viewBox keeps
/// the proportions).
std::string scaledToPage(std::string svg) {
  const auto end = svg.find('>');
  if (end == std::string::npos) return svg;
  std::string open = svg.substr(0, end);
  std::smatch w;
  const std::regex width_attr(R"( width="([0-9.]+)(pt|px)?")");
  const std::regex height_attr(R"( height="[0-9.]+(pt|px)?")");
  std::string style;
  if (std::regex_search(open, w, width_attr)) {
    style = " style=\"width:" + w[1].str() + (w[2].matched ? w[2].str() : "px") +
            ";max-width:100%;height:auto\"";
  }
  open = std::regex_replace(open, width_attr, "", std::regex_constants::format_first_only);
  open = std::regex_replace(open, height_attr, "", std::regex_constants::format_first_only);
  return open + style + svg.substr(end);
}

/// `path` as a link from the page written at `report` (relative to its
/// folder; as given when the report's path is not known), percent-encoded
/// where a character is not a URL's own.
std::string linkTo(const std::string& path, const std::string& report) {
  std::string rel = path;
  if (!report.empty()) {
    std::error_code ec;
    namespace fs = std::filesystem;
    const fs::path from = fs::absolute(fs::path(report), ec).parent_path();
    const fs::path to = fs::absolute(fs::path(path), ec);
    const fs::path r = ec ? fs::path(path) : to.lexically_relative(from);
    if (!r.empty()) rel = r.generic_string();
  }
  std::string out;
  const char* hex = "0123456789ABCDEF";
  for (unsigned char c : rel) {
    if (std::isalnum(c) ||
        std::string_view("-._~/").find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      out += std::string("%") + hex[c >> 4] + hex[c & 15];
    }
  }
  return out;
}

/// The boundary graphs: SVG inline in the HTML page and linked from the
/// Markdown; Mermaid blocks in the Markdown (GitHub draws them), linked from
/// the HTML page, which draws no Mermaid (it runs no script).
Status renderGraphs(Doc& d, const std::vector<std::string>& graphs, const std::string& report) {
  for (const std::string& path : graphs) {
    const std::string label = "--graph \"" + ellipsis(path, 200) + "\"";
    auto read = readInputFile(label, path, kMaxGraphFileBytes);
    if (!read) return read.status();
    const bool mermaid = path.size() > 4 && path.compare(path.size() - 4, 4, ".mmd") == 0;
    const auto start = read->find("<svg");
    if (!mermaid && start == std::string::npos)
      return Status::invalid(label + ": neither an SVG file nor a .mmd (Mermaid) file");
    d.heading(2, "Boundary graph: " + path);
    if (mermaid) {
      d.rawMarkdown("```mermaid\n" + *read + (read->back() == '\n' ? "" : "\n") + "```\n\n");
      const std::string href = linkTo(path, report);
      d.rawHtml("<p>Mermaid flowchart: <a href=\"" + Doc::escapeHtml(href) + "\">" +
                Doc::escapeHtml(href) +
                "</a>. GitHub draws it in Markdown, and the Markdown report embeds it; this page "
                "runs no script to draw it. The same graph as .svg (<code>seam graph ... -o "
                "FILE.svg</code>) is drawn here.</p>\n");
    } else if (d.html()) {
      d.rawHtml("<div class=\"graph\">" + scaledToPage(read->substr(start)) + "</div>\n");
    } else {
      d.rawMarkdown("![boundary graph](" + path + ")\n\n");
    }
  }
  return Status::ok();
}

/// The runs `options` picks, or an error naming the ids there are.
Expected<std::vector<RunRecord>> selectRuns(Store& store, const ReportOptions& options) {
  auto runs = store.runs();
  if (!runs) return runs.status();
  if (options.latest && !runs->empty()) return std::vector<RunRecord>{runs->back()};
  if (!options.run) return std::move(*runs);
  for (const RunRecord& r : *runs) {
    if (r.id == *options.run) return std::vector<RunRecord>{r};
  }
  return Status::invalid("--run " + std::to_string(*options.run) + ": the store " +
                         (runs->empty() ? std::string("has no runs")
                                        : "has runs " + std::to_string(runs->front().id) + " to " +
                                              std::to_string(runs->back().id)));
}

/// The overall verdict, the totals and one line per run.
void renderSummary(Doc& d, const Store& store, const std::vector<RunData>& runs) {
  d.heading(1, "seam report");
  OutcomeCounts all;
  StatusCounts statuses;
  Verdict worst = Verdict::kNoCases;
  std::int64_t comparisons = 0, refuted = 0, failing_runs = 0, engine_cases = 0, engine_differ = 0;
  for (const RunData& r : runs) {
    all.add(r.counts);
    statuses.killed += r.statuses.killed;
    statuses.survived += r.statuses.survived;
    statuses.equivalent += r.statuses.equivalent;
    statuses.not_covered += r.statuses.not_covered;
    statuses.planner_errors += r.statuses.planner_errors;
    comparisons += static_cast<std::int64_t>(r.equivalences.size());
    refuted += r.refuted;
    engine_cases += r.engine.cases;
    engine_differ += r.engine.declared_disagreements;
    if (r.verdict == Verdict::kFails) ++failing_runs;
    worst = std::max(worst, r.verdict, [](Verdict a, Verdict b) {
      auto rank = [](Verdict v) { return v == Verdict::kNoCases ? 0 : static_cast<int>(v) + 1; };
      return rank(a) < rank(b);
    });
  }
  std::string text =
      grouped(static_cast<long long>(runs.size())) + (runs.size() == 1 ? " run" : " runs");
  if (failing_runs > 0) text += " (" + grouped(failing_runs) + " failing)";
  text += "; " + countsLine(all) + ".";
  if (statuses.total() > 0) text += " Campaigns: " + scoreLine(statuses) + ".";
  if (engine_cases > 0)
    text += " Run on the engine: " + grouped(engine_cases) + " cases, " + grouped(engine_differ) +
            " not bearing out the declared plan.";
  if (comparisons > 0) {
    text += " GPU: " + grouped(comparisons) + " comparisons, " + grouped(refuted) +
            " predictions refuted.";
  }
  d.lead(std::string("Verdict: ") + verdictName(worst) + ".", text);
  std::vector<std::vector<Cell>> rows;
  for (const RunData& r : runs) {
    rows.push_back(
        {std::to_string(r.run.id), r.run.command, ellipsis(r.verdict_text, 80),
         grouped(r.counts.total() + r.engine.cases), grouped(r.counts.violated),
         grouped(r.counts.findings), grouped(r.counts.not_modelled), grouped(r.counts.refused),
         r.statuses.total() > 0 ? std::to_string(r.statuses.killed) + "/" +
                                      std::to_string(r.statuses.killed + r.statuses.survived)
                                : "-",
         when(r.run.started_ms)});
  }
  d.table({"run", "command", "verdict", "cases", "violated", "engine findings", "not modelled",
           "refused by the engine", "mutants killed", "started"},
          rows);
  d.para("Store: " + store.path() +
         ". Engine findings are cases where SGLang's own plans violate " +
         "a property (docs/engine-findings.md); not modelled cases are gaps in seam's model.");
}

}  // namespace

Expected<std::string> renderReport(Store& store, ReportFormat format,
                                   const ReportOptions& options) {
  auto runs = selectRuns(store, options);
  if (!runs) return runs.status();
  std::vector<RunData> data;
  for (const RunRecord& r : *runs) {
    auto one = readRunData(store, r);
    if (!one) return one.status();
    data.push_back(std::move(*one));
  }
  Doc d(format, options.markdown_cap);
  renderSummary(d, store, data);
  for (const RunData& r : data) renderRunVerdict(d, r);
  BenchPlots bench;
  for (const RunData& r : data) renderRunTables(d, r, bench);
  if (d.html() && std::any_of(data.begin(), data.end(), hasRunPlots)) {
    d.heading(2, "Plots");
    for (const RunData& r : data) renderRunPlots(d, r);
  }
  if (!bench.empty()) renderBenchPlots(d, bench);
  if (Status s = renderGraphs(d, options.graphs, options.report_path); !s) return s;
  return d.finish("seam report");
}

Status writeReport(Store& store, const std::string& path, const ReportOptions& options) {
  const auto dot = path.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (ext != "md" && ext != "html") {
    return Status::invalid("-o \"" + ellipsis(path, 200) +
                           "\": the extension must be .md or .html");
  }
  ReportOptions at = options;
  at.report_path = path;
  auto text = renderReport(store, ext == "md" ? ReportFormat::kMarkdown : ReportFormat::kHtml, at);
  if (!text) return text.status();
  return writeOutputFile("-o", path, *text);
}

}  // namespace seam::reports
