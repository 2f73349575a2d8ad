#include "report_doc.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "svg_plot.h"

namespace seam::reports {

std::string ellipsis(const std::string& text, std::size_t max) {
  if (text.size() <= max) return text;
  std::size_t cut = max > 1 ? max - 1 : 0;
  // Back up to the start of a UTF-8 sequence (continuation bytes are 10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "\xE2\x80\xA6";
}

std::string grouped(long long n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

Doc::Doc(ReportFormat f, std::size_t markdown_cap) : f_(f), cap_(markdown_cap) {}

std::string Doc::escapeHtml(const std::string& s) { return escapeXml(s); }

std::string escapeMarkdown(const std::string& s) {
  auto word = [&](std::size_t i) {
    return i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) != 0);
  };
  std::string o;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\n') {
      o += ' ';
      continue;
    }
    // What GitHub would render as emphasis, code, links, HTML or a cell's
    // end; an underscore only where it can open or close emphasis (not
    // inside all_reduce). Paragraphs never start with a block mark.
    const bool special = std::string_view("\\`*[]<|~").find(c) != std::string_view::npos ||
                         (c == '_' && !(i > 0 && word(i - 1) && word(i + 1)));
    if (special) o += '\\';
    o += c;
  }
  return o;
}

std::string markdownCodeSpan(const std::string& s) {
  std::string body;
  bool tick = false;
  for (char c : s) {
    if (c == '\n') c = ' ';
    if (c == '`') tick = true;
    // Inside a table a pipe ends the cell unless escaped, code span or not.
    if (c == '|') body += '\\';
    body += c;
  }
  return tick ? "`` " + body + " ``" : "`" + body + "`";
}

void Doc::heading(int level, const std::string& text) {
  endList();
  if (level <= 2) sections_.emplace_back(out_.size(), text);
  if (!html()) {
    out_ += std::string(level, '#') + " " + escapeMarkdown(text) + "\n\n";
    return;
  }
  const std::string l = std::to_string(level);
  out_ += "<h" + l + ">" + escapeHtml(text) + "</h" + l + ">\n";
}

void Doc::para(const std::string& text) {
  endList();
  out_ += html() ? "<p>" + escapeHtml(text) + "</p>\n" : escapeMarkdown(text) + "\n\n";
}

void Doc::lead(const std::string& strong, const std::string& rest) {
  endList();
  out_ += html() ? "<p class=\"lead\"><strong>" + escapeHtml(strong) + "</strong> " +
                       escapeHtml(rest) + "</p>\n"
                 : "**" + escapeMarkdown(strong) + "** " + escapeMarkdown(rest) + "\n\n";
}

void Doc::code(const std::string& text) {
  endList();
  out_ += html() ? "<pre>" + escapeHtml(text) + "</pre>\n" : "```\n" + text + "\n```\n\n";
}

void Doc::item(const std::string& text, const std::string& command) {
  if (!in_list_) out_ += html() ? "<ul>\n" : "";
  in_list_ = true;
  if (html()) {
    out_ += "<li>" + escapeHtml(text) +
            (command.empty() ? "" : "<br><code>" + escapeHtml(command) + "</code>") + "</li>\n";
  } else {
    out_ += "- " + escapeMarkdown(text) +
            (command.empty() ? "" : "<br>" + markdownCodeSpan(command)) + "\n";
  }
}

void Doc::endList() {
  if (!in_list_) return;
  in_list_ = false;
  out_ += html() ? "</ul>\n" : "\n";
}

namespace {

/// A short cell without spaces (a count, an id, a command name, a time) is
/// kept on one line: broken anywhere, a narrow column shows "157,0 01".
bool isWord(const Cell& c) {
  constexpr std::size_t kLongestWord = 24;
  return !c.is_code && !c.text.empty() && c.text.size() <= kLongestWord &&
         c.text.find(' ') == std::string::npos;
}

}  // namespace

std::string Doc::cell(const Cell& c) const {
  if (html()) return c.is_code ? "<code>" + escapeHtml(c.text) + "</code>" : escapeHtml(c.text);
  return c.is_code ? markdownCodeSpan(c.text) : escapeMarkdown(c.text);
}

void Doc::table(const std::vector<std::string>& header,
                const std::vector<std::vector<Cell>>& rows) {
  endList();
  if (!html()) {
    auto row = [&](const std::vector<Cell>& cells) {
      std::string l = "|";
      for (const auto& c : cells) l += " " + cell(c) + " |";
      out_ += l + "\n";
    };
    row(std::vector<Cell>(header.begin(), header.end()));
    std::string sep = "|";
    for (std::size_t i = 0; i < header.size(); ++i) sep += "---|";
    out_ += sep + "\n";
    for (const auto& r : rows) row(r);
    out_ += "\n";
    return;
  }
  out_ += "<div class=\"table\"><table><tr>";
  for (const auto& h : header) out_ += "<th>" + escapeHtml(h) + "</th>";
  out_ += "</tr>\n";
  for (const auto& r : rows) {
    out_ += "<tr>";
    for (const auto& c : r) out_ += (isWord(c) ? "<td class=\"w\">" : "<td>") + cell(c) + "</td>";
    out_ += "</tr>\n";
  }
  out_ += "</table></div>\n";
}

void Doc::rawHtml(const std::string& text) {
  if (!html()) return;
  endList();
  out_ += text;
}

void Doc::rawMarkdown(const std::string& text) {
  if (html()) return;
  endList();
  out_ += text;
}

namespace {

constexpr const char* kStyle =
    "body{font-family:sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:0.5em 0 1.5em}"
    "td,th{border:1px solid #bbb;padding:3px 8px;font-size:13px;text-align:left;"
    "vertical-align:top;overflow-wrap:anywhere}"
    "th{background:#eee;overflow-wrap:normal}td.w{white-space:nowrap}div.table{max-width:100%;"
    "overflow-x:auto}"
    "pre{background:#f6f6f6;padding:8px;white-space:pre-wrap;overflow-wrap:anywhere}"
    "code{background:#f6f6f6;overflow-wrap:anywhere;font-size:12px}"
    "p.lead{font-size:1.15em}"
    ".graph svg,.plots svg{max-width:100%;height:auto;display:block;margin:0.5em 0}";

}  // namespace

std::string Doc::finish(const std::string& title) const {
  std::string body = out_;
  if (in_list_) body += html() ? "</ul>\n" : "\n";
  if (html()) {
    return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
           "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>" +
           escapeHtml(title) + "</title>\n<style>" + kStyle + "</style></head><body>\n" + body +
           "</body></html>\n";
  }
  if (body.size() <= cap_) return body;
  // Leave out whole sections from the end until the rest and the note fit.
  std::vector<std::string> left_out;
  std::size_t keep = body.size();
  for (auto it = sections_.rbegin(); it != sections_.rend() && keep + 4096 > cap_; ++it) {
    keep = it->first;
    left_out.push_back(it->second);
  }
  if (keep + 4096 > cap_) keep = cap_ > 4096 ? cap_ - 4096 : 0;  // one huge section: cut it
  std::reverse(left_out.begin(), left_out.end());
  std::string note = "\n---\n\n**This report was cut to fit " +
                     grouped(static_cast<long long>(cap_)) +
                     " bytes.** Left out (render the HTML report, or pick one run with `--run`): ";
  std::string names;
  for (const std::string& s : left_out) {
    const std::string next = (names.empty() ? "" : "; ") + escapeMarkdown(s);
    if (names.size() + next.size() > 3000) {
      names += "; and " + std::to_string(left_out.size()) + " sections in all";
      break;
    }
    names += next;
  }
  return body.substr(0, keep) + note + (names.empty() ? "the end of the last section" : names) +
         ".\n";
}

}  // namespace seam::reports
