// What `seam report` knows of one run, read from the store once: its counts
// and verdict, its failures with their reproduce lines, and the tallies its
// tables and plots draw. A sweep's case rows are folded into counts as they
// are read, so a report of a 400,000-case store holds only the tallies.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "report_bench.h"
#include "report_doc.h"
#include "seam/reports/engine_view.h"
#include "seam/reports/mutate_view.h"
#include "seam/reports/store.h"

namespace seam::reports {

/// Case counts by kind of outcome. A violated case is an engine finding when
/// its failure names the SGLang call that makes it (engine_finding.h); a
/// refused case is not modelled when seam, not the engine, has the gap.
struct OutcomeCounts {
  std::int64_t holds = 0, violated = 0, findings = 0, not_modelled = 0, refused = 0;
  std::int64_t total() const { return holds + violated + not_modelled + refused; }
  void add(const OutcomeCounts& o);
};

/// The engine's finding by SGLang call: how many cases, and the first one.
struct FindingGroup {
  std::int64_t cases = 0;
  std::string first_violation, first_reproduce;
};

/// A violated case that is not an engine finding.
struct Failure {
  std::int64_t index = 0;
  std::string violation, reproduce;
};

enum class Verdict { kHolds, kFindings, kFails, kNoCases };

struct RunData {
  RunRecord run;
  OutcomeCounts counts;
  std::map<std::string, OutcomeCounts> by_group;
  /// A sweep's counts by (model, configuration).
  std::map<std::pair<std::string, std::string>, OutcomeCounts> by_model_config;
  std::map<std::string, FindingGroup> findings;
  std::vector<Failure> failures;  ///< the first kMaxFailures
  std::int64_t more_failures = 0;
  std::vector<MutantRecord> mutants;
  std::map<std::string, KillRecord> kill_of;
  StatusCounts statuses;
  std::vector<EquivalenceRecord> equivalences;
  int refuted = 0;
  std::vector<TimingRecord> timings;
  std::vector<CaseRecord> bench_cases;  ///< kept for `gpu bench` runs only
  std::int64_t prop_cases = 0;          ///< a prop run's generated cases (its arguments)
  EngineConformance engine;             ///< a `sweep --engine` run's table
  Verdict verdict = Verdict::kNoCases;
  std::string verdict_text;  ///< "fails: 3 violations", "holds", ...
};

inline constexpr int kMaxFailures = 20;

/// Reads run `run` and everything the report says of it.
Expected<RunData> readRunData(Store& store, const RunRecord& run);

/// "fails", "engine findings", "holds", "no cases".
const char* verdictName(Verdict v);

/// "157,001 cases: 29,067 hold, 840 violated (840 engine findings), ...".
std::string countsLine(const OutcomeCounts& c);

/// The run sections of the report: verdict and failures, then tables, then
/// (HTML) plots of sweeps and campaigns.
void renderRunVerdict(Doc& d, const RunData& r);
void renderRunTables(Doc& d, const RunData& r, BenchPlots& plots);
bool hasRunPlots(const RunData& r);
void renderRunPlots(Doc& d, const RunData& r);

std::string when(std::int64_t ms);

}  // namespace seam::reports
