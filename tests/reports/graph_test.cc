#include "seam/reports/graph.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include "../sim/case_builders.h"
#include "seam/properties/diff.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"

namespace seam::reports {
namespace {

Plan planOf(const Case& c, PolicyKind p = PolicyKind::kDeclared) {
  auto plan = buildPlan(c, p);
  EXPECT_TRUE(plan.hasValue()) << plan.status().message();
  return *plan;
}

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(Graph, DrawsOneNodePerStagePlusInputAndOutputAndOneEdgePerBoundary) {
  auto h8b = modelFromPreset(**findPreset("nemotron-h-8b"));
  ASSERT_TRUE(h8b.hasValue());
  Case c;
  c.model = *h8b;
  c.config = {.tp = 4};
  c.batch.tokens = {4};
  const Plan plan = planOf(c);
  auto svg = renderBoundaryGraph(plan, nullptr, "svg", {.fold = false});
  ASSERT_TRUE(svg.hasValue()) << svg.status().message();
  EXPECT_EQ(count(*svg, "class=\"node\""), 52 + 2);
  EXPECT_EQ(count(*svg, "class=\"edge\""), 53);
  // Colour by the owed sum: attention-TP partials and carried TP sums.
  EXPECT_GT(count(*svg, "stroke=\"#0000cd\""), 0);  // blue3: owes attn_tp
  EXPECT_GT(count(*svg, "stroke-dasharray"), 0);    // dashed: carried to the next entry
}

TEST(Graph, ATwoStageStackGetsANodePerStageLabelledWithItsDecoderLayer) {
  const Plan plan = planOf(seam::testing::twoStageCase("*-*E*E", {.tp = 4, .moe_ep = 4}, {4}, [] {
    Flags f;
    f.a2a = A2aBackend::kDeepep;
    return f;
  }()));
  auto svg = renderBoundaryGraph(plan, nullptr, "svg");
  ASSERT_TRUE(svg.hasValue()) << svg.status().message();
  EXPECT_EQ(count(*svg, "class=\"node\""), 6 + 2);
  EXPECT_EQ(count(*svg, "class=\"edge\""), 7);
  EXPECT_EQ(count(*svg, "stage 3 (layer 1): E &#160;MoE"), 1) << "two stages per decoder layer";
  EXPECT_EQ(count(*svg, "stage 4 (layer 2): * &#160;attention"), 1);
}

TEST(Graph, TheDiffGraphHighlightsTheBoundariesWhereThePoliciesDiffer) {
  Flags off;
  off.fusion = false;
  const Case c = seam::testing::patternCase("M-M*-", {.tp = 2}, {4}, off);
  const Plan declared = planOf(c);
  const Plan legacy = planOf(c, PolicyKind::kLegacy);
  auto svg = renderBoundaryGraph(declared, &legacy, "svg");
  ASSERT_TRUE(svg.hasValue());
  // The two boundaries whose sum legacy completes at the producer's exit.
  EXPECT_EQ(count(*svg, "DIFFERS: legacy: exit all_reduce"), 2);
  EXPECT_NE(svg->find("2 of 6 boundaries differ from legacy"), std::string::npos);
  auto same = renderBoundaryGraph(declared, &declared, "svg");
  ASSERT_TRUE(same.hasValue());
  EXPECT_EQ(count(*same, "DIFFERS"), 0);
  EXPECT_NE(same->find("0 of 6 boundaries differ from declared"), std::string::npos);
}

/// A preset's case at `config` with 4 tokens per DP shard.
Case presetCase(const char* preset, ParallelConfig config) {
  auto model = modelFromPreset(**findPreset(preset));
  EXPECT_TRUE(model.hasValue());
  Case c;
  c.model = *model;
  c.config = config;
  c.batch.tokens.assign(config.attn_dp, 4);
  return c;
}

TEST(Graph, ADiffGraphMarksTheSnapshotBoundariesWhereSeamDiffSaysTheCaseDiffers) {
  Case c = presetCase("nemotron-h-8b", {.tp = 2});
  c.flags.capture = {1, 26, 49};
  auto planted = buildPlan(c, PolicyKind::kDeclared, Schema::with(Decision::kSnapshotNotCompleted));
  ASSERT_TRUE(planted.hasValue()) << planted.status().message();
  const Plan declared = planOf(c);
  // seam diff's judge (the ledger, no graph code) says the two differ.
  Ledger ledger;
  ASSERT_EQ(properties::diffPlans(*planted, declared, ledger).cls,
            properties::DiffClass::kValuesDiffer);
  auto svg = renderBoundaryGraph(*planted, &declared, "svg");
  ASSERT_TRUE(svg.hasValue()) << svg.status().message();
  EXPECT_NE(svg->find("3 of 53 boundaries differ from declared"), std::string::npos);
  // Each captured stage is drawn with its snapshot, and the boundary into it
  // differs though its steps are the same: the snapshot moved.
  EXPECT_EQ(count(*svg, "aux hidden&#45;state snapshot at its entry"), 3) << *svg;
  EXPECT_EQ(count(*svg, "DIFFERS from declared (same steps): rank 0 step 1: snapshot["), 3);
  // The differing edges, and only they, are drawn in magenta, which no sum uses.
  EXPECT_EQ(count(*svg, "stroke=\"#ff00ff\""), 3 * 3)
      << "per edge: a double line and its arrowhead";
  // A legend names every colour and style.
  for (const char* entry :
       {"owes the attn_tp sum", "owes the tp sum", "dashed: carried into the next entry",
        "double, magenta: differs from declared",
        "double green border: the entry takes an aux snapshot"}) {
    EXPECT_NE(svg->find(entry), std::string::npos) << entry;
  }
  // The thick swatch is the heavy line (a bold light one draws no thicker),
  // drawn just left of its words, not a title's width away.
  std::smatch swatch, words;
  ASSERT_TRUE(std::regex_search(*svg, swatch, std::regex(R"re(x="([0-9.]+)"[^>]*>━━━<)re")));
  ASSERT_TRUE(std::regex_search(*svg, words, std::regex(R"re(x="([0-9.]+)"[^>]*>[^<]*thick: )re")));
  const double gap = std::stod(words[1].str()) - std::stod(swatch[1].str());
  EXPECT_GT(gap, 0);
  EXPECT_LT(gap, 40) << "points between the swatch and its words";
}

/// The width of an SVG in points.
double svgWidth(const std::string& svg) {
  std::smatch m;
  const std::regex width(R"(<svg width="([0-9.]+)pt")");
  return std::regex_search(svg, m, width) ? std::stod(m[1].str()) : -1;
}

TEST(Graph, LongRunsOfIdenticalBlocksAreFoldedSoA124StageModelStaysNarrow) {
  const Plan plan = planOf(presetCase("deepseek-v3", {.tp = 8, .attn_dp = 8}));
  ASSERT_EQ(plan.stages.size(), 124u);
  auto folded = renderBoundaryGraph(plan, nullptr, "svg");
  auto full = renderBoundaryGraph(plan, nullptr, "svg", {.fold = false});
  ASSERT_TRUE(folded.hasValue() && full.hasValue());
  // Layers 3 to 58 repeat (attention, MoE): the first and last pair are drawn,
  // the 55 pairs between are one node.
  EXPECT_NE(folded->find("stages 8 to 117 folded:"), std::string::npos) << *folded;
  EXPECT_NE(folded->find("55 more blocks of 2 stages exactly as above"), std::string::npos);
  EXPECT_EQ(count(*folded, "stage 60 (layer 30)"), 0);
  EXPECT_EQ(count(*full, "stage 60 (layer 30)"), 1);
  EXPECT_LT(svgWidth(*folded), 1000);
  EXPECT_GT(svgWidth(*full), 3000);
  // A fold keeps what it folds exactly: differing boundaries fold only with
  // blocks that differ alike, and the title counts them all.
  const Plan legacy = planOf(plan.source, PolicyKind::kLegacy);
  auto diff = renderBoundaryGraph(plan, &legacy, "svg");
  auto diff_full = renderBoundaryGraph(plan, &legacy, "svg", {.fold = false});
  ASSERT_TRUE(diff.hasValue() && diff_full.hasValue());
  std::smatch m;
  const std::regex title(R"(([0-9]+) of 126 boundaries differ from legacy)");
  ASSERT_TRUE(std::regex_search(*diff_full, m, title));
  EXPECT_NE(diff->find(m[0].str()), std::string::npos);
}

TEST(Graph, TheMermaidGraphHasTheSameFoldsDifferencesAndSnapshots) {
  Case c = presetCase("nemotron-h-8b", {.tp = 2});
  c.flags.capture = {1, 26, 49};
  auto planted = buildPlan(c, PolicyKind::kDeclared, Schema::with(Decision::kSnapshotNotCompleted));
  ASSERT_TRUE(planted.hasValue());
  const Plan declared = planOf(c);
  auto mmd = renderBoundaryGraph(*planted, &declared, "mmd");
  ASSERT_TRUE(mmd.hasValue());
  EXPECT_NE(mmd->find("flowchart TB\n"), std::string::npos);
  EXPECT_NE(mmd->find("3 of 53 boundaries differ from declared"), std::string::npos);
  EXPECT_EQ(count(*mmd, "stroke:#FF00FF,stroke-width:4px"), 3);
  EXPECT_EQ(count(*mmd, "[/\"aux snapshot before stage "), 3);
  EXPECT_NE(mmd->find("folded:"), std::string::npos);
  // A label never carries a raw quote or bracket that would end it.
  EXPECT_EQ(count(*mmd, "<"), count(*mmd, "<br/>"));
}

TEST(Graph, WritesPngAndRefusesABadExtensionOrPath) {
  const Plan plan = planOf(seam::testing::patternCase("M-", {.tp = 2}, {4}));
  const std::string png = ::testing::TempDir() + "seam_graph_" + std::to_string(getpid()) + ".png";
  ASSERT_TRUE(writeBoundaryGraph(plan, nullptr, png).isOk());
  std::ifstream in(png, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "PNG");
  std::remove(png.c_str());
  EXPECT_EQ(writeBoundaryGraph(plan, nullptr, "/tmp/x.jpg").code(), StatusCode::kInvalidInput);
  EXPECT_EQ(writeBoundaryGraph(plan, nullptr, "/nonexistent/dir/x.svg").code(),
            StatusCode::kInvalidInput);
  EXPECT_FALSE(renderBoundaryGraph(plan, nullptr, "gif").hasValue());
}

}  // namespace
}  // namespace seam::reports
