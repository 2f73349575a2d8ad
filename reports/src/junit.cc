// JUnit XML rendering (junit.h). Text is escaped here once, so callers pass
// raw strings.

#include "seam/reports/junit.h"

#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <string_view>

#include "seam/reports/output_file.h"

namespace seam::reports {
namespace {

bool isContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

/// The length of the well-formed UTF-8 sequence at `text[i]` (lead byte >=
/// 0x80), or 0 when it is not one (RFC 3629: no overlongs, no surrogates).
std::size_t utf8Length(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = at(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (at(1) < lo || at(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (!isContinuation(at(k))) return 0;
  }
  return n;
}

/// Appends `text` escaped for XML 1.0: the five markup characters as
/// entities; control characters XML cannot carry (all below 0x20 but tab, LF,
/// CR) and the non-characters U+FFFE/U+FFFF dropped; malformed UTF-8 replaced
/// by U+FFFD. In attributes tab, LF and CR become character references, which
/// survive attribute-value normalisation.
void appendEscaped(std::string& out, std::string_view text, bool attribute) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        case '\t':
          out += attribute ? "&#9;" : "\t";
          break;
        case '\n':
          out += attribute ? "&#10;" : "\n";
          break;
        case '\r':  // a raw CR would be read as LF, in text too
          out += "&#13;";
          break;
        default:
          if (c >= 0x20) out += static_cast<char>(c);
      }
      ++i;
      continue;
    }
    const std::size_t n = utf8Length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    const std::string_view sequence = text.substr(i, n);
    if (sequence != "\xEF\xBF\xBE" && sequence != "\xEF\xBF\xBF") out += sequence;
    i += n;
  }
}

std::string escaped(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  appendEscaped(out, text, attribute);
  return out;
}

/// Seconds with millisecond resolution, independent of the C locale; a time
/// under a millisecond keeps microseconds, so that it does not read as 0.
std::string seconds(double s) {
  if (!std::isfinite(s) || s < 0) s = 0;
  char buffer[64];
  const int digits = s > 0 && s < 0.001 ? 6 : 3;
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, s, std::chars_format::fixed, digits);
  return std::string(buffer, result.ptr);
}

/// ISO 8601 in UTC without a zone, as the Ant schema's timestamp pattern has it.
std::string timestamp(std::int64_t ms) {
  const std::time_t t = ms > 0 ? static_cast<std::time_t>(ms / 1000) : std::time(nullptr);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &utc);
  return buffer;
}

std::string thisHost() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

struct Counts {
  std::size_t tests = 0, failures = 0, skipped = 0;
  double seconds = 0;

  void add(const JunitCase& c) {
    ++tests;
    if (c.failed) {
      ++failures;  // a case both failed and skipped counts (and is written) as failed
    } else if (c.skipped) {
      ++skipped;
    }
    if (std::isfinite(c.seconds) && c.seconds > 0) seconds += c.seconds;
  }

  /// The schema's <testsuites> has no skipped attribute; <testsuite> has one.
  std::string attributes(bool with_skipped) const {
    return " tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) +
           "\" errors=\"0\"" +
           (with_skipped ? " skipped=\"" + std::to_string(skipped) + "\"" : std::string()) +
           " time=\"" + reports::seconds(seconds) + "\"";
  }
};

void appendCase(std::string& xml, const JunitCase& c) {
  xml += "    <testcase name=\"" + escaped(c.name, true) + "\" classname=\"" +
         escaped(c.classname, true) + "\" time=\"" + seconds(c.seconds) + "\"";
  std::string inner;
  if (c.failed) {
    inner += "      <failure message=\"" + escaped(c.message, true) + "\" type=\"violation\">" +
             escaped(c.body.empty() ? c.message : c.body, false) + "</failure>\n";
  } else if (c.skipped) {
    inner += "      <skipped message=\"" + escaped(c.message, true) + "\"/>\n";
  }
  if (!c.output.empty())
    inner += "      <system-out>" + escaped(c.output, false) + "</system-out>\n";
  xml += inner.empty() ? "/>\n" : ">\n" + inner + "    </testcase>\n";
}

std::string render(const JunitDoc& doc) {
  // Suites in the order of their first case; an empty suite name is the document's.
  std::vector<std::string> suites;
  std::map<std::string, std::vector<const JunitCase*>> members;
  auto suiteOf = [&](const JunitCase& c) -> const std::string& {
    return c.suite.empty() ? doc.name : c.suite;
  };
  for (const JunitCase& c : doc.cases) {
    auto& list = members[suiteOf(c)];
    if (list.empty()) suites.push_back(suiteOf(c));
    list.push_back(&c);
  }
  if (suites.empty()) suites.push_back(doc.name);  // readers expect one <testsuite>

  Counts all;
  for (const JunitCase& c : doc.cases) all.add(c);
  const std::string stamp = timestamp(doc.started_ms);
  const std::string host = doc.hostname.empty() ? thisHost() : doc.hostname;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += "<testsuites name=\"" + escaped(doc.name, true) + "\"" + all.attributes(false) + ">\n";
  for (const std::string& suite : suites) {
    Counts counts;
    for (const JunitCase* c : members[suite]) counts.add(*c);
    xml += "  <testsuite name=\"" + escaped(suite, true) + "\"" + counts.attributes(true) +
           " timestamp=\"" + stamp + "\" hostname=\"" + escaped(host, true) + "\">\n";
    for (const JunitSuite& s : doc.suites) {
      if (s.name != suite || s.properties.empty()) continue;
      xml += "    <properties>\n";
      for (const auto& [name, value] : s.properties) {
        xml += "      <property name=\"" + escaped(name, true) + "\" value=\"" +
               escaped(value, true) + "\"/>\n";
      }
      xml += "    </properties>\n";
    }
    for (const JunitCase* c : members[suite]) appendCase(xml, *c);
    xml += "  </testsuite>\n";
  }
  xml += "</testsuites>\n";
  return xml;
}

}  // namespace

Status writeJunit(const std::string& path, const JunitDoc& doc) {
  return writeOutputFile("--junit", path, render(doc));
}

}  // namespace seam::reports
