#include "sweep_baseline.h"

#include "command.h"
#include "seam/reports/output_file.h"

namespace seam::tools {

namespace {

/// New findings listed (text) or carried (JSON), each with its `seam check`
/// line: as many as the failures a sweep lists.
constexpr std::size_t kListedNew = 20;

}  // namespace

void addBaselineOptions(CLI::App* sub, BaselineOptions& o) {
  sub->add_option("--baseline", o.read,
                  "accepted findings (a seam store's latest such run, or a --write-baseline "
                  "file): only new findings fail the run");
  sub->add_option(
      "--write-baseline", o.write,
      "write every finding of this run to this JSON file (a --baseline for later runs)");
}

Expected<RunBaseline> prepareBaseline(const BaselineOptions& o, std::string_view command,
                                      const std::string& db, const std::string& junit) {
  RunBaseline b;
  b.command = std::string(command);
  b.write = o.write;
  if (!o.write.empty()) {
    // A JSON baseline may be rewritten in place (read first, written last); a store never.
    std::vector<reports::NamedFile> others = {{"--db", db}};
    if (!junit.empty()) others.emplace_back("--junit", junit);
    if (!o.read.empty() && reports::looksLikeStore(o.read))
      others.emplace_back("--baseline", o.read);
    if (Status s = reports::checkOutputFile("--write-baseline", o.write, others); !s) return s;
  }
  if (!o.read.empty()) {
    auto known = reports::readBaseline(o.read, command);
    if (!known) return known.status();
    b.known = std::move(*known);
  }
  return b;
}

Expected<BaselineEnd> endBaseline(const RunBaseline& b, reports::Store& store,
                                  std::int64_t run_id) {
  BaselineEnd end;
  if (!b.known && b.write.empty()) return end;
  auto findings = reports::runFindings(store, run_id, b.command);
  if (!findings) return findings.status();
  if (!b.write.empty()) {
    const std::string json = reports::baselineJson(b.command, *findings, kSeamVersion);
    if (Status s = reports::writeOutputFile("--write-baseline", b.write, json); !s) return s;
    end.wrote = "wrote baseline \"" + b.write + "\": " + std::to_string(findings->size()) +
                (findings->size() == 1 ? " finding\n" : " findings\n");
  }
  if (b.known) end.verdict = reports::judgeFindings(*b.known, *findings);
  return end;
}

std::string withBaseline(std::string output, const BaselineEnd& end, bool json) {
  if (json)
    return end.verdict ? reports::withBaselineJson(output, *end.verdict, kListedNew) : output;
  output += end.wrote;
  if (end.verdict) output += reports::renderBaselineVerdict(*end.verdict, kListedNew);
  return output;
}

int baselineExit(bool findings, const BaselineEnd& end) {
  if (end.verdict) return end.verdict->fresh.empty() ? kExitOk : kExitPropertyFailed;
  return findings ? kExitPropertyFailed : kExitOk;
}

}  // namespace seam::tools
