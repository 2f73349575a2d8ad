// Schema version 5: `seam sweep --engine`'s rows, one per case and policy,
// stored, read back in case order, folded into the conformance table that
// the console, the JSON summary and the report print.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "seam/reports/engine_view.h"
#include "seam/reports/report.h"
#include "seam/reports/store.h"
#include "store_test_support.h"

namespace seam::reports {
namespace {

using store_test::openOrDie;
using store_test::rawSql;
using store_test::sampleRun;
using store_test::tempPath;

EngineCaseRecord row(std::int64_t index, const std::string& policy, const std::string& family,
                     const std::string& agreement, const std::string& divergence = "") {
  return {.case_index = index,
          .policy = policy,
          .model = "nemotron-h-8b",
          .config = "pp=1 tp=2",
          .flags = "decode",
          .batch = "tokens 4",
          .family = family,
          .engine = "sglang 0.5.20 (pypi, single-file)",
          .engine_verdict = agreement == "engine-refused" ? "refused" : "ran",
          .agreement = agreement,
          .divergence = divergence,
          .reproduce = "seam check --case " + std::to_string(index) + " --engine sglang"};
}

/// Three cases: one agrees under both policies, one the engine refuses, one
/// differs from the declared plan and agrees with the legacy one.
std::vector<EngineCaseRecord> threeCases() {
  return {row(0, "declared", "tp", "agrees"),
          row(0, "legacy", "tp", "agrees"),
          row(1, "declared", "tp+dp", "engine-refused", "moe_dp needs attention CP"),
          row(1, "legacy", "tp+dp", "engine-refused", "moe_dp needs attention CP"),
          row(5, "declared", "tp+dp", "differs", "extra-call at communicator.py:1263:fn"),
          row(5, "legacy", "tp+dp", "agrees")};
}

TEST(EngineRows, AreStoredOnePerCaseAndPolicyAndReadBackInCaseOrder) {
  const std::string path = tempPath("engine_rows.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun("sweep --engine", "world=2");
  ASSERT_TRUE(store.beginRun(run).isOk());
  std::vector<EngineCaseRecord> rows = threeCases();
  for (auto it = rows.rbegin(); it != rows.rend(); ++it)
    ASSERT_TRUE(store.addEngineCase(run.id, *it).isOk());
  auto back = store.engineCases(run.id);
  ASSERT_TRUE(back.hasValue()) << back.status().message();
  ASSERT_EQ(back->size(), 6u);
  EXPECT_EQ((*back)[0].case_index, 0);
  EXPECT_EQ((*back)[0].policy, "declared");
  EXPECT_EQ((*back)[4].divergence, "extra-call at communicator.py:1263:fn");
  EXPECT_EQ((*back)[4].reproduce, "seam check --case 5 --engine sglang");
  auto indices = store.engineCaseIndices(run.id);
  ASSERT_TRUE(indices.hasValue());
  EXPECT_EQ(*indices, (std::vector<std::int64_t>{0, 1, 5}));
  EXPECT_EQ(rawSql(path, "SELECT count(*) FROM engine_cases"), "6");
}

TEST(EngineRows, AVersionFourStoreGainsTheTableKeepingItsRuns) {
  const std::string path = tempPath("v4_engine.db");
  ASSERT_TRUE(createStoreOfVersion(path, 4).isOk());
  ASSERT_EQ(rawSql(path,
                   "INSERT INTO runs VALUES (1, 'sweep', 'a', 'v', '', '', '', '', 1, 2, 'c'); "
                   "SELECT count(*) FROM sqlite_master WHERE name = 'engine_cases'"),
            "0");
  {
    Store store = openOrDie(path);
    auto runs = store.runs();
    ASSERT_TRUE(runs.hasValue());
    ASSERT_EQ(runs->size(), 1u);
    EXPECT_EQ((*runs)[0].seam_commit, "c");
    auto none = store.engineCases(1);
    ASSERT_TRUE(none.hasValue());
    EXPECT_TRUE(none->empty());
  }
  EXPECT_EQ(rawSql(path, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
}

TEST(EngineConformanceFold, CountsCasesOncePerFamilyAndEachPolicysClasses) {
  const EngineConformance c = foldEngineCases(threeCases());
  EXPECT_EQ(c.engine, "sglang 0.5.20 (pypi, single-file)");
  EXPECT_EQ(c.cases, 3);
  // The refused case is not counted against the plan; the differing one is.
  EXPECT_EQ(c.declared_disagreements, 1);
  const ConformanceRow& dp = c.rows.at({"nemotron-h-8b", "tp+dp"});
  EXPECT_EQ(dp.cases, 2);
  EXPECT_EQ(dp.by_policy.at("declared").at("differs"), 1);
  EXPECT_EQ(dp.by_policy.at("legacy").at("agrees"), 1);
  ASSERT_EQ(c.classes.size(), 1u);
  const ConformanceClass& k =
      c.classes.at("declared").at("differs: extra-call at communicator.py:1263:fn");
  EXPECT_EQ(k.cases, 1);
  EXPECT_EQ(k.reproduce, "seam check --case 5 --engine sglang");
}

TEST(EngineConformanceFold, LeavesPlanRefusedAndCpuGapCasesUnjudgedNotAgainstThePlan) {
  std::vector<EngineCaseRecord> rows = threeCases();
  rows.push_back(row(7, "declared", "tp+cp", "plan-refused", "seam refuses attention CP"));
  rows.push_back(row(8, "declared", "tp+cp", "cpu-gap", "cpu-gap: DeepEP"));
  const EngineConformance c = foldEngineCases(rows);
  EXPECT_EQ(c.cases, 5);
  EXPECT_EQ(c.declared_disagreements, 1);
  EXPECT_EQ(c.declared_unjudged, 2);
  EXPECT_EQ(c.classes.at("declared").size(), 3u);
  EXPECT_NE(renderConformance(c, 3).find("; 2 not judged (seam refuses what the engine ran, or "
                                         "the CPU lacks what it needs)"),
            std::string::npos);
}

TEST(EngineConformanceFold, PrintsTheTableTheClassesAndTheJsonCounts) {
  const EngineConformance c = foldEngineCases(threeCases());
  const std::string text = renderConformance(c, 3);
  EXPECT_NE(text.find("  nemotron-h-8b tp+dp: 2 | differs 1, engine-refused 1 | agrees 1, "
                      "engine-refused 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  declared differs: extra-call at communicator.py:1263:fn (1 case), e.g. "
                      "seam check --case 5 --engine sglang\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("3 cases given to the engine (1 refused by its argument checks); 1 where "
                      "its run does not bear out the declared plan"),
            std::string::npos)
      << text;
  const auto json = nlohmann::json::parse(conformanceJson(c, "world=2"));
  EXPECT_EQ(json["counts"]["cases"], 3);
  EXPECT_EQ(json["counts"]["declared_disagreements"], 1);
  EXPECT_EQ(json["families"][1]["declared"]["differs"], 1);
  EXPECT_EQ(json["divergences"]["declared"][0]["reproduce"], "seam check --case 5 --engine sglang");
}

TEST(EngineConformanceReport, FailsTheRunAndDrawsItsTable) {
  const std::string path = tempPath("engine_report.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun("sweep --engine", "world=2");
  ASSERT_TRUE(store.beginRun(run).isOk());
  for (const EngineCaseRecord& r : threeCases()) ASSERT_TRUE(store.addEngineCase(run.id, r).isOk());
  ASSERT_TRUE(store.finishRun(run.id).isOk());
  auto md = renderReport(store, ReportFormat::kMarkdown, {});
  ASSERT_TRUE(md.hasValue()) << md.status().message();
  EXPECT_NE(md->find("fails: 1 of 3 cases differ from what sglang 0.5.20 (pypi, single-file) ran"),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("| nemotron-h-8b | tp+dp | 2 | differs 1, engine-refused 1 | agrees 1, "
                     "engine-refused 1 |"),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("`seam check --case 5 --engine sglang`"), std::string::npos) << *md;
}

}  // namespace
}  // namespace seam::reports
