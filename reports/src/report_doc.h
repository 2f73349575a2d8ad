// The text of `seam report` in either format: GitHub-flavoured Markdown (a
// pull-request comment, an Actions job summary) or one self-contained HTML
// page. Cells are escaped for the target; command lines are code (a code span
// in Markdown, so `M*E*-` never renders as emphasis); a cut text always ends
// in an ellipsis; a Markdown text over the size GitHub accepts is cut at a
// section boundary and says which sections it left out.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "seam/reports/report.h"

namespace seam::reports {

/// A table cell: plain text, or a command line drawn as code.
struct Cell {
  Cell(std::string t) : text(std::move(t)) {}  // NOLINT: cells are mostly plain strings
  Cell(const char* t) : text(t) {}             // NOLINT
  static Cell code(std::string t) {
    Cell c(std::move(t));
    c.is_code = true;
    return c;
  }
  std::string text;
  bool is_code = false;
};

class Doc {
 public:
  /// Markdown output above `markdown_cap` bytes is cut (see finish()).
  Doc(ReportFormat f, std::size_t markdown_cap);
  ReportFormat format() const { return f_; }
  bool html() const { return f_ == ReportFormat::kHtml; }
  /// A heading; levels 1 and 2 start a section finish() may leave out whole.
  void heading(int level, const std::string& text);
  void para(const std::string& text);
  /// A paragraph whose first words are strong: "**Verdict: fails.** ...".
  void lead(const std::string& strong, const std::string& rest);
  /// A block of command lines or arguments.
  void code(const std::string& text);
  /// A list of items, each plain text followed by an optional command line.
  void item(const std::string& text, const std::string& command = "");
  void endList();
  void table(const std::vector<std::string>& header, const std::vector<std::vector<Cell>>& rows);
  /// Raw HTML (ignored in Markdown) and raw Markdown (ignored in HTML).
  void rawHtml(const std::string& text);
  void rawMarkdown(const std::string& text);
  /// The whole document. Markdown above the cap loses its last sections
  /// (whole, from the end) and gains a closing note naming them.
  std::string finish(const std::string& title) const;

  static std::string escapeHtml(const std::string& s);

 private:
  std::string cell(const Cell& c) const;
  ReportFormat f_;
  std::size_t cap_;
  bool in_list_ = false;
  std::string out_;
  /// Where each section began in out_, and its heading.
  std::vector<std::pair<std::size_t, std::string>> sections_;
};

}  // namespace seam::reports
