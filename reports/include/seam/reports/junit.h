// JUnit XML for CI systems (GitHub and GitLab test reporters, Jenkins): the
// shape the widely used Jenkins/Ant JUnit schema describes, which
// tests/reports/data/junit.xsd restates and the tests validate against.
// Names are stable across runs (no index, seed or count in them), so that a
// CI's test history follows each testcase.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "seam/mutants/campaign.h"
#include "seam/properties/prop.h"
#include "seam/properties/sweep.h"
#include "seam/reports/store.h"

namespace seam::reports {

/// One <testcase>.
struct JunitCase {
  std::string suite;  ///< its <testsuite>; empty: the document's name
  std::string classname;
  std::string name;
  double seconds = 0;
  bool failed = false;
  bool skipped = false;
  /// A failure's message attribute (the property that failed) or a skip's reason.
  std::string message;
  /// A failure's text (the line that replays it); empty: the message again.
  std::string body;
  /// <system-out>: what a passing (or failing) testcase has to say.
  std::string output;
};

/// A <testsuite>'s <properties>, by suite name.
struct JunitSuite {
  std::string name;
  std::vector<std::pair<std::string, std::string>> properties;
};

struct JunitDoc {
  std::string name;                ///< the <testsuites> name and the default suite
  std::int64_t started_ms = 0;     ///< every suite's timestamp (unix ms); 0: now
  std::string hostname;            ///< every suite's hostname; empty: this machine's
  std::vector<JunitSuite> suites;  ///< properties of the suites that have any
  std::vector<JunitCase> cases;    ///< suites in the order of their first case
};

/// Writes `doc` to `path` atomically (temp file + rename); text is escaped
/// here, so callers pass raw strings. A bad path is a one-line Status.
Status writeJunit(const std::string& path, const JunitDoc& doc);

/// A sweep's run, read back from the store row by row (memory for its
/// groups, not its cases): one testsuite per model, one
/// testcase per model x parallel configuration (named by the configuration).
/// Refusals are counts (the suite's properties and the testcase's output),
/// never skipped testcases; a testcase fails when one of its cases violates a
/// property (message: the property; text: the reproduce lines). A
/// testcase's time is its model's worker time (`live`) shared by case count.
Status writeSweepJunit(Store& store, const RunRecord& run, const properties::SweepResult& live,
                       const std::string& path);

/// A prop run: one testcase named by the property (and the planted
/// decision), failed with the shrunk case's line; RC_PARAMS and the counts
/// as the suite's properties.
Status writePropJunit(const properties::PropSpec& spec, const properties::PropResult& result,
                      const std::string& path);

/// A campaign: one testcase per mutant (named by its id), survivors as
/// failures, a kill's output naming the killing case and its replay line,
/// mutants left out of the score skipped with their status.
Status writeCampaignJunit(const mutants::CampaignResult& result, const std::string& path);

}  // namespace seam::reports
