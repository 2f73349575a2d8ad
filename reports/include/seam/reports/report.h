// `seam report`: Markdown or one self-contained HTML page built only from the
// store: every run with its counts per class or outcome, campaign tables,
// failing cases with their reproduce lines, GPU equivalence rows and the
// slowest ops of each GPU run.
#pragma once

#include <string>
#include <vector>

#include "seam/reports/store.h"

namespace seam::reports {

enum class ReportFormat { kMarkdown, kHtml };

/// Renders the report of every run in `store`; `graphs` are SVG files
/// (boundary graphs from `seam graph`) embedded in the HTML page, linked
/// from the Markdown.
Expected<std::string> renderReport(Store& store, ReportFormat format,
                                   const std::vector<std::string>& graphs = {});

/// Writes it to `path` (.md or .html decides the format), atomically.
Status writeReport(Store& store, const std::string& path,
                   const std::vector<std::string>& graphs = {});

}  // namespace seam::reports
