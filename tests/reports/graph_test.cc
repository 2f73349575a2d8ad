#include "seam/reports/graph.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>

#include "../sim/case_builders.h"
#include "seam/sim/policy/policy.h"

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
  auto svg = renderBoundaryGraph(plan, nullptr, "svg");
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
  EXPECT_EQ(count(*svg, "legacy: exit all_reduce"), 2);
  auto same = renderBoundaryGraph(declared, &declared, "svg");
  ASSERT_TRUE(same.hasValue());
  EXPECT_EQ(count(*same, "stroke=\"red\""), 0);
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
