// `--baseline FILE` and `--write-baseline FILE` of `seam sweep` (with or
// without --engine): the findings a team accepted, read before the run
// starts, and at its end the run's findings (reports/known_findings.h)
// written out and split into baselined and new; the run then exits 1 on new
// findings only.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "seam/reports/known_findings.h"

namespace seam::tools {

struct BaselineOptions {
  std::string read;   ///< --baseline FILE: a seam store or a --write-baseline file
  std::string write;  ///< --write-baseline FILE
};

/// Adds --baseline and --write-baseline.
void addBaselineOptions(CLI::App* sub, BaselineOptions& o);

/// What a run's end does with its findings.
struct RunBaseline {
  std::string command;                     ///< reports::kSweepRun or kEngineSweepRun
  std::optional<reports::Baseline> known;  ///< --baseline, read
  std::string write;                       ///< --write-baseline ("": none)
};

/// Reads --baseline and checks --write-baseline's path (beside --db and
/// --junit, and a store given as --baseline) before anything runs or is
/// opened: every error one line naming the file, nothing written.
Expected<RunBaseline> prepareBaseline(const BaselineOptions& o, std::string_view command,
                                      const std::string& db, const std::string& junit);

/// The findings of a finished run against its baseline.
struct BaselineEnd {
  std::optional<reports::BaselineVerdict> verdict;  ///< with --baseline
  std::string wrote;  ///< with --write-baseline: the line that says so
};

/// Reads the run's findings from the store, writes --write-baseline and
/// judges them against --baseline.
Expected<BaselineEnd> endBaseline(const RunBaseline& b, reports::Store& store, std::int64_t run_id);

/// The run's output (text or JSON) with what the baseline says added.
std::string withBaseline(std::string output, const BaselineEnd& end, bool json);

/// The exit code: without --baseline, 1 when the run has findings; with it,
/// 1 only when some are new.
int baselineExit(bool findings, const BaselineEnd& end);

}  // namespace seam::tools
