// `seam report`: Markdown (GitHub-flavoured: a pull-request comment, an
// Actions job summary) or one self-contained HTML page built only from the
// store, verdict first: the overall verdict, then each run's verdict and
// failures with their reproduce lines, then tables (counts per group and
// outcome, campaigns by operator kind, GPU comparisons, the slowest ops),
// then plots (HTML) and boundary graphs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "seam/reports/store.h"

namespace seam::reports {

enum class ReportFormat { kMarkdown, kHtml };

/// GitHub's limit on a job summary is 1 MiB; a Markdown report stays under it.
inline constexpr std::size_t kMarkdownCapBytes = 1000 * 1000;

struct ReportOptions {
  /// Boundary graphs from `seam graph`: .svg files are drawn in the HTML page
  /// (and linked from the Markdown), .mmd files are Mermaid blocks in the
  /// Markdown (GitHub draws them) and linked from the HTML page.
  std::vector<std::string> graphs;
  /// Where the report is written (writeReport sets it): the HTML page links a
  /// .mmd by its path from the report's folder. Empty: as given.
  std::string report_path;
  std::optional<std::int64_t> run;  ///< only this run
  bool latest = false;              ///< only the newest run
  /// A Markdown report longer than this loses whole sections from its end
  /// and says which.
  std::size_t markdown_cap = kMarkdownCapBytes;
};

/// `text` cut to at most `max` bytes (UTF-8 sequences kept whole), ending
/// in "…" when cut.
std::string ellipsis(const std::string& text, std::size_t max);
/// A number with thousands separators: 157001 -> "157,001".
std::string grouped(long long n);
/// Text for GitHub-flavoured Markdown: what would render as emphasis, code,
/// a link, HTML or a table cell's end is escaped (`M*E*-` stays as written).
std::string escapeMarkdown(const std::string& text);
/// `text` as a Markdown code span that also survives a table cell.
std::string markdownCodeSpan(const std::string& text);

/// Renders the report of the runs of `store` that `options` selects; an
/// unknown --run is an error naming the ids the store has.
Expected<std::string> renderReport(Store& store, ReportFormat format,
                                   const ReportOptions& options = {});

/// Writes it to `path` (.md or .html decides the format), atomically.
Status writeReport(Store& store, const std::string& path, const ReportOptions& options = {});

}  // namespace seam::reports
