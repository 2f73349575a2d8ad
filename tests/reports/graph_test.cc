#include "seam/reports/graph.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "../sim/case_builders.h"
#include "seam/properties/check.h"
#include "seam/properties/diff.h"
#include "seam/properties/engine_finding.h"
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
  EXPECT_EQ(count(*svg, "class=\"node\""), 52 + 2 + 1) << "and the legend";
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
  EXPECT_EQ(count(*svg, "class=\"node\""), 6 + 2 + 1) << "and the legend";
  EXPECT_EQ(count(*svg, "class=\"edge\""), 7);
  EXPECT_EQ(count(*svg, "stage 3 (layer 1): E &#160;MoE"), 1) << "two stages per decoder layer";
  EXPECT_EQ(count(*svg, "stage 4 (layer 2): * &#160;attention"), 1);
}

/// The declared and the legacy plans of `c` with the fused all-reduce off
/// (where legacy completes sums at the producer's exit).
std::pair<Plan, Plan> declaredAndLegacyUnfused(Case c) {
  c.flags.fusion = false;
  return {planOf(c), planOf(c, PolicyKind::kLegacy)};
}

TEST(Graph, TheDiffGraphHighlightsTheBoundariesWhereThePoliciesDiffer) {
  const auto [declared, legacy] =
      declaredAndLegacyUnfused(seam::testing::patternCase("M-M*-", {.tp = 2}, {4}));
  auto svg = renderBoundaryGraph(declared, &legacy, "svg");
  ASSERT_TRUE(svg.hasValue());
  // The two boundaries whose sum legacy completes at the producer's exit:
  // their edges carry the mark, the legend says once what it means.
  EXPECT_EQ(count(*svg, "legacy: exit all_reduce"), 1);
  EXPECT_EQ(count(*svg, "≠1<"), 2 + 1) << "two edges and the legend";
  EXPECT_NE(svg->find("(2 boundaries)"), std::string::npos);
  EXPECT_NE(svg->find("2 of 6 boundaries differ from legacy"), std::string::npos);
  auto same = renderBoundaryGraph(declared, &declared, "svg");
  ASSERT_TRUE(same.hasValue());
  EXPECT_EQ(count(*same, "≠"), 0);
  EXPECT_NE(same->find("0 of 6 boundaries differ from declared"), std::string::npos);
}

/// The boundaries where two plans' exit or entry steps differ, counted
/// without the graph's code.
int boundariesWhoseStepsDiffer(const Plan& a, const Plan& b) {
  int n = 0;
  for (const Boundary& x : a.boundaries) {
    for (const Boundary& y : b.boundaries) {
      if (x.stack == y.stack && x.from == y.from && x.to == y.to &&
          (x.exit_steps != y.exit_steps || x.entry_steps != y.entry_steps))
        ++n;
    }
  }
  return n;
}

TEST(Graph, RepeatedDifferencesAreSpelledOutOnceInTheLegendAndMarkedShortlyOnEachEdge) {
  const auto [declared, legacy] =
      declaredAndLegacyUnfused(seam::testing::presetCase("nemotron-3-nano", {.tp = 2}, {4}));
  const int differ = boundariesWhoseStepsDiffer(declared, legacy);
  ASSERT_GT(differ, 20) << "legacy completes every MoE's and Mamba's sum at its exit";
  for (const char* format : {"svg", "mmd"}) {
    auto text = renderBoundaryGraph(declared, &legacy, format, {.fold = false});
    ASSERT_TRUE(text.hasValue()) << format;
    // One difference, drawn on every boundary that has it: its words appear
    // once, its mark once per edge and once in the legend.
    EXPECT_EQ(count(*text, "legacy: exit all_reduce / entry add_norm"), 1) << format;
    EXPECT_EQ(count(*text, "(" + std::to_string(differ) + " boundaries)"), 1) << format;
    EXPECT_EQ(count(*text, "≠1"), differ + 1) << format;
    EXPECT_EQ(count(*text, "≠2"), 0) << format;
    EXPECT_EQ(count(*text, "DIFFERS"), 0) << format;
  }
}

/// The case of an engine finding (docs/engine-findings.md: the MTP MoE layer
/// of nemotron-3-super under DP attention sums the attention output twice):
/// `seam check --pattern 'M-/*E' --tp 4 --dp 2 --reduction ar`.
Case mtpFindingCase() {
  Flags ar;
  ar.reduction = BoundaryReduction::kAr;
  return seam::testing::patternCase("M-/*E", {.tp = 4, .attn_dp = 2}, {4, 4}, ar);
}

/// `text` as Graphviz writes it into an SVG.
std::string inSvg(std::string text) {
  for (auto [from, to] : {std::pair<std::string, std::string>{"-", "&#45;"}, {"'", "&#39;"}}) {
    for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  }
  return text;
}

/// The SVG group of the node named `name` (its <title>), "" when none.
std::string svgNode(const std::string& svg, const std::string& name) {
  const auto at = svg.find("<title>" + name + "</title>");
  if (at == std::string::npos) return "";
  return svg.substr(at, svg.find("</g>", at) - at);
}

TEST(Graph, AGraphOfAViolatedCaseMarksTheStageWhereTheCheckerSeesTheViolationAndItsLegendSaysSo) {
  const Plan plan = planOf(mtpFindingCase());
  Ledger ledger;
  const auto verdict = properties::checkPlan(plan, ledger, properties::Depth::kAll);
  const auto first = verdict.firstViolation();
  ASSERT_TRUE(first.has_value()) << "the case is an engine finding";
  const std::string site = properties::engineFindingSite(plan, *first);
  ASSERT_FALSE(site.empty());
  const GraphOptions options{.verdict = &verdict, .engine_site = site};
  const std::string node = "s" + std::to_string(first->stack) + "_" + std::to_string(first->stage);
  const std::string mark = "VIOLATED: " + std::string(propertyName(first->property));

  auto svg = renderBoundaryGraph(plan, nullptr, "svg", options);
  ASSERT_TRUE(svg.hasValue()) << svg.status().message();
  const std::string marked = svgNode(*svg, node);
  ASSERT_FALSE(marked.empty()) << node << " is drawn";
  EXPECT_NE(marked.find(inSvg(mark)), std::string::npos) << marked;
  EXPECT_NE(marked.find("fill=\"#ffc8c8\""), std::string::npos) << marked;
  EXPECT_NE(marked.find("stroke=\"#8b0000\""), std::string::npos) << marked;
  EXPECT_NE(svg->find(inSvg("first violation: " + std::string(propertyName(first->property)))),
            std::string::npos);
  EXPECT_NE(svg->find("an engine finding: SGLang calls"), std::string::npos);
  // The legend explains every node colour drawn, the violation's included.
  for (const char* entry : {"a mixer: Mamba-2, attention, ...", "an FFN: dense MLP or MoE",
                            "the input and the final norm (output)",
                            "VIOLATED: a property's first violation is seen at this stage"}) {
    EXPECT_EQ(count(*svg, inSvg(entry)), 1) << entry;
  }
  // A stage the checker does not name is not marked.
  EXPECT_EQ(svgNode(*svg, "s0_1").find("VIOLATED"), std::string::npos);

  auto dot = renderBoundaryGraph(plan, nullptr, "dot", options);
  ASSERT_TRUE(dot.hasValue());
  EXPECT_NE(dot->find("fillcolor=\"#FFC8C8\""), std::string::npos);

  auto mmd = renderBoundaryGraph(plan, nullptr, "mmd", options);
  ASSERT_TRUE(mmd.hasValue());
  const auto line = mmd->find("    " + node + "[\"");
  ASSERT_NE(line, std::string::npos) << *mmd;
  const std::string text = mmd->substr(line, mmd->find('\n', line) - line);
  EXPECT_NE(text.find(mark), std::string::npos) << text;
  EXPECT_NE(text.find(":::violated"), std::string::npos) << text;
  EXPECT_NE(mmd->find("VIOLATED: a property's first violation is seen at this stage\"]:::violated"),
            std::string::npos);
  EXPECT_NE(mmd->find("classDef violated fill:#FFC8C8"), std::string::npos);
}

TEST(Graph, AHealthyCaseGraphCarriesNoViolationMarkAndSaysThatEveryPropertyHolds) {
  const Case c = seam::testing::presetCase("nemotron-h-8b", {.tp = 4}, {4});
  const Plan plan = planOf(c);
  Ledger ledger;
  const auto verdict = properties::checkPlan(plan, ledger, properties::Depth::kAll);
  ASSERT_TRUE(verdict.holds());
  for (const char* format : {"svg", "mmd"}) {
    auto text = renderBoundaryGraph(plan, nullptr, format, {.verdict = &verdict});
    ASSERT_TRUE(text.hasValue()) << format;
    EXPECT_EQ(count(*text, "VIOLATED"), 0) << format;
    EXPECT_EQ(count(*text, ":::violated"), 0) << format;
    EXPECT_EQ(count(*text, "#ffc8c8") + count(*text, "#FFC8C8\""), 0) << format;
    EXPECT_EQ(count(*text, "checked: every property holds"), 1) << format;
  }
  // Without a verdict the graph says nothing of one.
  auto unjudged = renderBoundaryGraph(plan, nullptr, "svg");
  ASSERT_TRUE(unjudged.hasValue());
  EXPECT_EQ(count(*unjudged, "checked:"), 0);
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
  // Two ways to differ (the snapshot's tensor, or an all-reduce in its place),
  // each spelled out once in the legend.
  EXPECT_EQ(count(*svg, "declared has the same steps, other ops: rank 0 step 1: snapshot["), 2);
  EXPECT_NE(svg->find("(2 boundaries)"), std::string::npos);
  EXPECT_NE(svg->find("(1 boundary)"), std::string::npos);
  // The differing edges, and only they, are drawn in magenta, which no sum uses.
  EXPECT_EQ(count(*svg, "stroke=\"#ff00ff\""), 3 * 3)
      << "per edge: a double line and its arrowhead";
  // A legend names every colour and style.
  for (const char* entry :
       {"owes the attn_tp sum", "owes the tp sum", "dashed: carried into the next entry",
        "double, magenta: differs from declared",
        "green double border: the entry takes an aux snapshot"}) {
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
  EXPECT_NE(mmd->find("3 of 53 boundaries differ from declared"), std::string::npos);
  EXPECT_EQ(count(*mmd, "stroke:#FF00FF,stroke-width:4px"), 3);
  EXPECT_EQ(count(*mmd, "[/\"aux snapshot before stage "), 3);
  EXPECT_NE(mmd->find("folded:"), std::string::npos);
  // A label never carries a raw quote or bracket that would end it; its only
  // tag is the line break.
  EXPECT_EQ(count(*mmd, "<"), count(*mmd, "<br>"));
}

/// The Mermaid subgraphs of `mmd` (id -> the node ids defined in it) and
/// its links (from, to).
struct MermaidShape {
  std::map<std::string, std::vector<std::string>> nodes_of;
  std::map<std::string, std::string> direction_of;
  std::vector<std::pair<std::string, std::string>> links;
};
MermaidShape shapeOf(const std::string& mmd) {
  MermaidShape shape;
  std::string inside;
  const std::regex subgraph(R"(^\s*subgraph (\w+) )"), direction(R"(^\s*direction (\w+)$)"),
      node(R"(^\s*(\w+)\[)"), link(R"(^\s*(\w+) (?:-->|-\.-|~~~) (?:\|"[^"]*"\| )?(\w+)$)");
  std::istringstream in(mmd);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, subgraph)) {
      inside = m[1];
      shape.nodes_of[inside];
    } else if (line == "  end") {
      inside.clear();
    } else if (std::regex_search(line, m, direction) && !inside.empty()) {
      shape.direction_of[inside] = m[1];
    } else if (std::regex_search(line, m, link)) {
      shape.links.emplace_back(m[1], m[2]);
    } else if (std::regex_search(line, m, node) && !inside.empty()) {
      shape.nodes_of[inside].push_back(m[1]);
    }
  }
  return shape;
}

TEST(Graph, TheMermaidGraphBreaksLinesWithBrAndRunsA52StageStackDownColumnsLaidOutLeftToRight) {
  const Plan plan = planOf(presetCase("nemotron-h-8b", {.tp = 8}));
  ASSERT_EQ(plan.stages.size(), 52u);
  auto mmd = renderBoundaryGraph(plan, nullptr, "mmd", {.fold = false});
  ASSERT_TRUE(mmd.hasValue());
  // Line breaks in the form Mermaid documents, never an escaped or XHTML tag.
  EXPECT_EQ(count(*mmd, "<br/>"), 0);
  EXPECT_EQ(count(*mmd, "#lt;br"), 0);
  EXPECT_GT(count(*mmd, "<br>"), 53);
  EXPECT_NE(mmd->find("\nflowchart LR\n"), std::string::npos);
  const MermaidShape shape = shapeOf(*mmd);
  // 52 stages, the embedding and the final norm: in columns of at most 14,
  // each laid out top to bottom.
  int columns = 0;
  std::size_t drawn = 0;
  std::map<std::string, std::string> column_of;
  for (const auto& [id, nodes] : shape.nodes_of) {
    if (id.rfind("s0_col", 0) != 0) continue;
    ++columns;
    drawn += nodes.size();
    EXPECT_LE(nodes.size(), 14u) << id;
    EXPECT_EQ(shape.direction_of.count(id) ? shape.direction_of.at(id) : "", "TB") << id;
    for (const std::string& n : nodes) column_of[n] = id;
  }
  EXPECT_EQ(drawn, 52u + 2);
  EXPECT_GE(columns, 4);
  // A subgraph keeps its direction only while no link crosses its border:
  // links join nodes of one column, or columns (and the legend) themselves.
  for (const auto& [from, to] : shape.links) {
    const bool nodes = column_of.count(from) && column_of.count(to);
    const bool groups = shape.nodes_of.count(from) && shape.nodes_of.count(to);
    EXPECT_TRUE(groups || (nodes && column_of[from] == column_of[to])) << from << " -> " << to;
  }
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
