// The report's shape for its readers: verdict first, a not-modelled column,
// command lines as code (GitHub), one run picked, a size cap that says what it
// left out, texts cut only with an ellipsis, plots of sweeps and campaigns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include "seam/reports/report.h"
#include "seam/sim/base/status.h"

namespace seam::reports {
namespace {

std::string temp(const std::string& name) {
  return ::testing::TempDir() + "seam_layout_" + std::to_string(getpid()) + "_" + name;
}

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

/// A store with a sweep (a violation, a not-modelled and an engine refusal),
/// a passing prop run and a campaign.
class ReportLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* s : {"", "-wal", "-shm"}) std::remove((db_ + s).c_str());
    auto store = Store::open(db_);
    ASSERT_TRUE(store.hasValue());
    store_.emplace(std::move(*store));
    RunRecord sweep{.command = "sweep", .args = "world=2", .finished_ms = 1};
    ASSERT_TRUE(store_->beginRun(sweep).isOk());
    ASSERT_TRUE(store_->finishRun(sweep.id).isOk());
    const CaseRecord cases[] = {
        {.index = 0, .config = "tp=2", .group = "m", .outcome = CaseOutcome::kHolds},
        {.index = 1,
         .config = "tp=2",
         .group = "m",
         .outcome = CaseOutcome::kViolated,
         .reproduce = "seam check --pattern 'M*E*-' --tp 2"},
        {.index = 2,
         .config = "tp=1",
         .group = "m",
         .outcome = CaseOutcome::kRefused,
         .refusal = std::string(kNotModelledPrefix) + "a gap"},
        {.index = 3,
         .config = "tp=1",
         .group = "n",
         .outcome = CaseOutcome::kRefused,
         .refusal = "the engine asserts"},
    };
    for (const CaseRecord& c : cases) {
      const std::vector<VerdictRecord> v = {{2, false, "never-completed", "at 'M*E*-' a sum"}};
      ASSERT_TRUE(
          store_
              ->addCase(sweep.id, c,
                        c.outcome == CaseOutcome::kViolated ? v : std::vector<VerdictRecord>{})
              .isOk());
    }
    RunRecord prop{.command = "prop", .args = "cases=300 seed=1"};
    ASSERT_TRUE(store_->beginRun(prop).isOk());
    ASSERT_TRUE(store_->finishRun(prop.id).isOk());
    RunRecord mutate{.command = "mutate", .args = "worlds=2"};
    ASSERT_TRUE(store_->beginRun(mutate).isOk());
    ASSERT_TRUE(
        store_->putMutant(mutate.id, {"plan.site-drop-collective", "plan", "d", "killed"}).isOk());
    ASSERT_TRUE(
        store_->putMutant(mutate.id, {"decision.y", "decision", "f", "survived", "why"}).isOk());
    ASSERT_TRUE(store_->finishRun(mutate.id).isOk());
  }
  void TearDown() override {
    store_.reset();
    for (const char* s : {"", "-wal", "-shm"}) std::remove((db_ + s).c_str());
  }
  std::string render(ReportFormat f, const ReportOptions& o = {}) {
    auto text = renderReport(*store_, f, o);
    EXPECT_TRUE(text.hasValue()) << text.status().message();
    return text.hasValue() ? *text : "";
  }
  std::string db_ = temp("s.db");
  std::optional<Store> store_;
};

TEST_F(ReportLayout, TheVerdictAndEveryRunsFailuresComeBeforeAnyTable) {
  const std::string md = render(ReportFormat::kMarkdown);
  const auto verdict = md.find(
      "**Verdict: fails.** 3 runs (2 failing); 4 cases: 1 hold, 1 violated "
      "(0 engine findings), 1 not modelled, 1 refused by the engine.");
  EXPECT_EQ(verdict, md.find("\n\n") + 2) << md;
  const auto first_table_after_summary = md.find("| group |");
  EXPECT_LT(md.find("## Run 1: seam sweep: fails"), first_table_after_summary);
  EXPECT_LT(md.find("`seam check --pattern 'M*E*-' --tp 2`"), first_table_after_summary);
  EXPECT_LT(md.find("survived: decision.y: why"), first_table_after_summary);
  // A passing prop run says what it tried.
  EXPECT_NE(md.find("**Verdict: holds.** 300 generated cases, every property held."),
            std::string::npos)
      << md;
}

TEST_F(ReportLayout, NotModelledCasesHaveAColumnOfTheirOwn) {
  const std::string md = render(ReportFormat::kMarkdown);
  EXPECT_NE(md.find("| group | holds | violated | of them engine findings | not modelled | refused "
                    "by the engine | cases |"),
            std::string::npos);
  EXPECT_NE(md.find("| m | 1 | 1 | 0 | 1 | 0 | 3 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| n | 0 | 0 | 0 | 0 | 1 | 1 |"), std::string::npos) << md;
}

TEST_F(ReportLayout, MarkdownCommandLinesAreCodeSpansAndOtherTextCannotRenderAsEmphasis) {
  const std::string md = render(ReportFormat::kMarkdown);
  // Every M*E*- outside a code span is escaped.
  for (auto at = md.find("M*E*-"); at != std::string::npos; at = md.find("M*E*-", at + 1)) {
    const auto line_start = md.rfind('\n', at) + 1;
    const std::string before = md.substr(line_start, at - line_start);
    EXPECT_EQ(count(before, "`") % 2, 1) << "outside a code span: " << md.substr(line_start, 120);
  }
  EXPECT_NE(md.find("at 'M\\*E\\*-' a sum"), std::string::npos) << md;
  EXPECT_EQ(markdownCodeSpan("a|b"), "`a\\|b`");  // a pipe would end a table cell
  EXPECT_EQ(markdownCodeSpan("x`y"), "`` x`y ``");
  EXPECT_EQ(escapeMarkdown("all_reduce _x_ <b>"), "all_reduce \\_x\\_ \\<b>");
}

TEST_F(ReportLayout, OneRunIsPickedByIdOrAsTheLatestAndAnUnknownIdIsNamed) {
  const std::string one = render(ReportFormat::kMarkdown, {.run = 2});
  EXPECT_NE(one.find("1 run; 0 cases"), std::string::npos) << one;
  EXPECT_NE(one.find("## Run 2: seam prop"), std::string::npos);
  EXPECT_EQ(one.find("## Run 1"), std::string::npos);
  const std::string latest = render(ReportFormat::kMarkdown, {.latest = true});
  EXPECT_NE(latest.find("## Run 3: seam mutate: fails"), std::string::npos) << latest;
  EXPECT_EQ(latest.find("## Run 2"), std::string::npos);
  auto bad = renderReport(*store_, ReportFormat::kHtml, {.run = 9});
  ASSERT_FALSE(bad.hasValue());
  EXPECT_EQ(bad.status().message(), "--run 9: the store has runs 1 to 3");
}

TEST_F(ReportLayout, AMarkdownReportOverItsCapLeavesOutWholeSectionsAndNamesThem) {
  const std::string full = render(ReportFormat::kMarkdown);
  const std::size_t cap = 8192;
  RunRecord big{.command = "sweep", .args = std::string(3000, 'a')};
  ASSERT_TRUE(store_->beginRun(big).isOk());
  for (int i = 0; i < 40; ++i) {
    CaseRecord c{.index = i,
                 .group = "g" + std::to_string(i),
                 .outcome = CaseOutcome::kViolated,
                 .reproduce = "seam check --tp " + std::to_string(i) + std::string(200, ' ')};
    ASSERT_TRUE(store_->addCase(big.id, c, {{2, false, "x", std::string(300, 'v')}}).isOk());
  }
  const std::string md = render(ReportFormat::kMarkdown, {.markdown_cap = cap});
  EXPECT_LE(md.size(), cap);
  EXPECT_NE(md.find("**This report was cut to fit 8,192 bytes.** Left out"), std::string::npos);
  EXPECT_NE(md.find("Run 4 in tables: seam sweep"), md.rfind("Left out")) << md;
  EXPECT_EQ(md.find("**Verdict: fails.**"), md.find("\n\n") + 2);  // still on top
  EXPECT_EQ(full.find("This report was cut"), std::string::npos);
  // The HTML page is never cut.
  EXPECT_EQ(render(ReportFormat::kHtml, {.markdown_cap = cap}).find("was cut"), std::string::npos);
}

TEST_F(ReportLayout, TextIsCutOnlyWithAnEllipsisAndNeverInsideAUtf8Character) {
  EXPECT_EQ(ellipsis("abcdef", 6), "abcdef");
  EXPECT_EQ(ellipsis("abcdef", 4), "abc\xE2\x80\xA6");
  EXPECT_EQ(ellipsis("ab\xC3\xA9"
                     "cd",
                     4),
            "ab\xE2\x80\xA6");  // é is two bytes: kept whole or not at all
  EXPECT_EQ(grouped(157001), "157,001");
  EXPECT_EQ(grouped(12), "12");
}

TEST_F(ReportLayout, TheHtmlPagePlotsTheSweepPerModelAndConfigurationAndMutantsByOperatorKind) {
  const std::string html = render(ReportFormat::kHtml);
  EXPECT_NE(html.find("Run 1: outcome per model (share of its cases)"), std::string::npos);
  EXPECT_NE(html.find("Run 1: outcome per configuration (row) and model"), std::string::npos);
  // One cell per (model, configuration) with cases: m at tp=1 and tp=2, n at tp=1.
  EXPECT_NE(html.find("<title>m, tp=2: 2 cases: 1 hold, 1 violated"), std::string::npos) << html;
  EXPECT_NE(html.find("<title>m, tp=1: 1 case: 0 hold, 0 violated, 1 not modelled"),
            std::string::npos);
  EXPECT_NE(html.find("<title>n, tp=1: "), std::string::npos);
  EXPECT_EQ(count(html, "<title>n, tp=2"), 0);
  EXPECT_NE(html.find("Run 3: mutants by operator kind"), std::string::npos);
  EXPECT_NE(html.find("<title>plan, per site: 1 killed</title>"), std::string::npos) << html;
  EXPECT_NE(html.find("<title>decision: 1 survived</title>"), std::string::npos);
  // Every plot scales to the page.
  EXPECT_NE(html.find(".plots svg{max-width:100%;height:auto"), std::string::npos);
  EXPECT_EQ(count(html, "<script"), 0);
}

TEST_F(ReportLayout, MermaidGraphsAreBlocksInTheMarkdownAndLinkedFromTheHtmlNotPasted) {
  const std::string mmd = temp("g.mmd");
  { std::ofstream(mmd) << "flowchart TB\n  a --> b\n"; }
  const std::string md = render(ReportFormat::kMarkdown, {.graphs = {mmd}});
  EXPECT_NE(md.find("```mermaid\nflowchart TB\n  a --> b\n```"), std::string::npos) << md;
  // The page beside the graph links it by its name and carries none of its source.
  const std::string page = temp("report.html");
  ASSERT_TRUE(writeReport(*store_, page, {.graphs = {mmd}}).isOk());
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string name = mmd.substr(mmd.rfind('/') + 1);
  EXPECT_NE(html.find("<a href=\"" + name + "\">" + name + "</a>"), std::string::npos) << html;
  EXPECT_EQ(html.find("flowchart TB"), std::string::npos);
  EXPECT_EQ(html.find("a --&gt; b"), std::string::npos);
  std::remove(page.c_str());
  const std::string txt = temp("g.txt");
  { std::ofstream(txt) << "hello"; }
  auto bad = renderReport(*store_, ReportFormat::kHtml, {.graphs = {txt}});
  ASSERT_FALSE(bad.hasValue());
  EXPECT_NE(bad.status().message().find("neither an SVG file nor a .mmd (Mermaid) file"),
            std::string::npos);
  std::remove(mmd.c_str());
  std::remove(txt.c_str());
}

TEST_F(ReportLayout, HtmlKeepsCountsAndCommandNamesOnOneLineAndLetsTheVerdictWrap) {
  const std::string html = render(ReportFormat::kHtml);
  // Broken anywhere, a narrow column showed "ru n" and "157,0 01".
  EXPECT_NE(html.find("td.w{white-space:nowrap}"), std::string::npos);
  EXPECT_NE(html.find("th{background:#eee;overflow-wrap:normal}"), std::string::npos);
  EXPECT_NE(html.find("<tr><td class=\"w\">1</td><td class=\"w\">sweep</td><td>"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("<td class=\"w\"><code>"), std::string::npos);
}

}  // namespace
}  // namespace seam::reports
