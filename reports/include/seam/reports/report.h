// `seam report`: Markdown or one self-contained HTML page built only from the
// store: every run with its counts per class or outcome, campaign tables,
// failing cases with their reproduce lines, GPU equivalence rows and the
// slowest ops of each GPU run.
#pragma once

#include <string>

#include "seam/reports/store.h"

namespace seam::reports {

enum class ReportFormat { kMarkdown, kHtml };

/// Renders the report of every run in `store`.
Expected<std::string> renderReport(Store& store, ReportFormat format);

/// Writes it to `path` (.md or .html decides the format), atomically.
Status writeReport(Store& store, const std::string& path);

}  // namespace seam::reports
