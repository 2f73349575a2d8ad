#include "seam/reports/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "seam/properties/engine_finding.h"
#include "seam/reports/gpu_import.h"

namespace seam::reports {
namespace {

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "seam_report_" + std::to_string(getpid()) + "_" + name;
}

TEST(Report, ShowsEveryRunWithItsCountsFailuresMutantsAndGpuRows) {
  const std::string db = temp("a.db");
  for (const char* s : {"", "-wal", "-shm"}) std::remove((db + s).c_str());
  auto store = Store::open(db);
  ASSERT_TRUE(store.hasValue());
  RunRecord sweep{.command = "sweep", .args = "world=2"};
  ASSERT_TRUE(store->beginRun(sweep).isOk());
  CaseRecord ok{.index = 0, .model = "m", .group = "nemotron-h-8b", .outcome = CaseOutcome::kHolds};
  CaseRecord bad{.index = 1,
                 .model = "m",
                 .group = "nemotron-h-8b",
                 .outcome = CaseOutcome::kViolated,
                 .reproduce = "seam check --pattern 'M-' --tp 2"};
  ASSERT_TRUE(store->addCase(sweep.id, ok, {}).isOk());
  ASSERT_TRUE(
      store->addCase(sweep.id, bad, {{2, false, "never-completed", "owed-once violated <here>"}})
          .isOk());
  RunRecord mutate{.command = "mutate", .args = "worlds=2"};
  ASSERT_TRUE(store->beginRun(mutate).isOk());
  ASSERT_TRUE(store->putMutant(mutate.id, {"plan.x", "plan", "drop it", "killed", "", 3}).isOk());
  ASSERT_TRUE(store
                  ->putMutant(mutate.id,
                              {"decision.y", "decision", "flip", "equivalent", "never reached", 9})
                  .isOk());
  RunRecord gpu{.command = "gpu run", .args = "seam-gpu run", .gpu = "2x NVIDIA H200"};
  ASSERT_TRUE(store->beginRun(gpu).isOk());
  ASSERT_TRUE(store->addEquivalence(gpu.id, {0, "gpu:declared", 1, "reference", 1, true, true, 0.0})
                  .isOk());
  TimingRecord t;
  t.op_kind = "all_reduce";
  t.group = "tp/2";
  t.median_us = 12.5;
  ASSERT_TRUE(store->addTiming(gpu.id, t).isOk());

  auto md = renderReport(*store, ReportFormat::kMarkdown);
  ASSERT_TRUE(md.hasValue()) << md.status().message();
  EXPECT_EQ(md->rfind("# seam report\n\n**Verdict: fails.** 3 runs (1 failing); 2 cases: 1 hold, 1 "
                      "violated (0 engine findings), 0 not modelled, 0 refused by the engine.",
                      0),
            0u)
      << *md;
  EXPECT_NE(md->find("| nemotron-h-8b | 1 | 1 | 0 | 0 | 0 | 2 |"), std::string::npos) << *md;
  // The failure comes before the tables, with its reproduce line as code.
  EXPECT_LT(
      md->find("- case #1: owed-once violated \\<here><br>`seam check --pattern 'M-' --tp 2`"),
      md->find("| nemotron-h-8b |"))
      << *md;
  EXPECT_NE(md->find("mutation score: 1/1 (100.0%), 0 survived; coverage: 2/2 reached (0 not "
                     "covered), 1 equivalent, 0 planner errors"),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("| gpu:declared | reference | yes | yes |"), std::string::npos);
  EXPECT_NE(md->find("12.50"), std::string::npos);
  auto html = renderReport(*store, ReportFormat::kHtml);
  ASSERT_TRUE(html.hasValue());
  EXPECT_EQ(html->rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html->find("owed-once violated &lt;here&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(writeReport(*store, temp("x.pdf")).code(), StatusCode::kInvalidInput);
  // Boundary graphs are embedded in the HTML page (it stays self-contained).
  const std::string svg = temp("g.svg");
  { std::ofstream(svg) << "<?xml version=\"1.0\"?>\n<svg width=\"10\"><g id=\"node1\"/></svg>\n"; }
  auto with_graph = renderReport(*store, ReportFormat::kHtml, {.graphs = {svg}});
  ASSERT_TRUE(with_graph.hasValue()) << with_graph.status().message();
  // Scaled to the page: no fixed width wider than it.
  EXPECT_NE(with_graph->find(
                "<div class=\"graph\"><svg style=\"width:10px;max-width:100%;height:auto\">"),
            std::string::npos)
      << *with_graph;
  EXPECT_FALSE(
      renderReport(*store, ReportFormat::kHtml, {.graphs = {temp("missing.svg")}}).hasValue());
  std::remove(svg.c_str());
  for (const char* s : {"", "-wal", "-shm"}) std::remove((db + s).c_str());
}

/// Occurrences of `needle` in `text`.
int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(Report, GroupsASweepsEngineFindingsBySglangCallWithTheirFirstReproduceLine) {
  const std::string db = temp("findings.db");
  for (const char* s : {"", "-wal", "-shm"}) std::remove((db + s).c_str());
  auto store = Store::open(db);
  ASSERT_TRUE(store.hasValue());
  RunRecord sweep{.command = "sweep", .args = "world=4"};
  ASSERT_TRUE(store->beginRun(sweep).isOk());
  Violation v;
  v.detail = "the call cannot run";
  const std::string finding = properties::failureText(v, "g.rsv() at ops.py (f) @abc");
  for (int i = 0; i < 3; ++i) {
    CaseRecord c{.index = i,
                 .model = "m",
                 .group = "g",
                 .outcome = CaseOutcome::kViolated,
                 .reproduce = "seam check --tp " + std::to_string(4 + i)};
    ASSERT_TRUE(store->addCase(sweep.id, c, {{4, false, "collective-mismatch", finding}}).isOk());
  }
  CaseRecord plain{.index = 3,
                   .model = "m",
                   .group = "g",
                   .outcome = CaseOutcome::kViolated,
                   .reproduce = "seam check --tp 8"};
  ASSERT_TRUE(store->addCase(sweep.id, plain, {{2, false, "never-completed", "not one"}}).isOk());
  auto md = renderReport(*store, ReportFormat::kMarkdown);
  ASSERT_TRUE(md.hasValue()) << md.status().message();
  EXPECT_NE(md->find("**Verdict: fails: 1 violation (unfinished: still running or interrupted).**"),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("- 3 cases: SGLang calls g.rsv() at ops.py (f) @abc. First: "),
            std::string::npos)
      << *md;
  EXPECT_NE(md->find("<br>`seam check --tp 4`"), std::string::npos) << *md;
  EXPECT_EQ(md->find("`seam check --tp 5`"), std::string::npos) << *md;  // one line per call
  EXPECT_NE(md->find("- case #3: not one<br>`seam check --tp 8`"), std::string::npos) << *md;
  EXPECT_NE(md->find("| g | 0 | 4 | 3 | 0 | 0 | 4 |"), std::string::npos) << *md;
}

TEST(Report, DrawsTheBenchRunsOfTheCommittedGpuResultsAsInlineSvgPlots) {
  const std::string db = temp("bench.db");
  for (const char* s : {"", "-wal", "-shm"}) std::remove((db + s).c_str());
  auto store = Store::open(db);
  ASSERT_TRUE(store.hasValue());
  const std::string raw = std::string(SEAM_SOURCE_DIR) + "/tests/reports/data/";
  for (const char* f : {"gpuperf_bench_h8b_decode.json", "gpuperf_bench_h8b_extend_4096.json",
                        "gpuperf_bench_h8b_extend_8192.json"}) {
    auto file = readGpuJson(raw + f, "seam 0.1.0");
    ASSERT_TRUE(file.hasValue()) << file.status().message();
    ASSERT_TRUE(writeGpuResult(*store, *file).hasValue());
  }
  auto html = renderReport(*store, ReportFormat::kHtml);
  ASSERT_TRUE(html.hasValue()) << html.status().message();
  // Three plots, self-contained: no script, nothing fetched (the SVG
  // namespace is the only address).
  EXPECT_EQ(count(*html, "<svg xmlns=\"http://www.w3.org/2000/svg\""), 3);
  EXPECT_EQ(count(*html, "<script"), 0);
  EXPECT_EQ(count(*html, "http"), 3);
  EXPECT_NE(html->find("Collectives: inside the plan vs bare NCCL"), std::string::npos);
  EXPECT_NE(html->find("fused, hidden 2688 (run 1)"), std::string::npos);
  EXPECT_NE(html->find("NCCL + add+norm, hidden 4096 (run 1)"), std::string::npos);
  EXPECT_NE(html->find("run 1, rank 1"), std::string::npos);
  // A point per collective on each side (1 + 2 + 2), one per fused size and
  // path (24 sizes x 2), tooltips on each; bars: 2 ranks x 3.
  const auto plots = html->substr(html->find("GPU bench plots"));
  EXPECT_EQ(count(plots, "<circle"), 2 * 5 + 2 * 24);
  EXPECT_EQ(count(plots, "<rect x=") - 3, 2 * 3);  // less the three backgrounds
  // The same store renders the same bytes.
  EXPECT_EQ(*renderReport(*store, ReportFormat::kHtml), *html);
  auto md = renderReport(*store, ReportFormat::kMarkdown);
  ASSERT_TRUE(md.hasValue());
  EXPECT_EQ(count(*md, "<svg"), 0);
  EXPECT_NE(md->find("## GPU bench plots"), std::string::npos);
  for (const char* s : {"", "-wal", "-shm"}) std::remove((db + s).c_str());
}

}  // namespace
}  // namespace seam::reports
