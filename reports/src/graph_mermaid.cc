// The boundary graph as a Mermaid flowchart, for Markdown that GitHub draws
// (a pull-request comment, a job summary): the same items, folds, snapshots,
// violations and differences as the Graphviz drawing (graph_model.h), styled
// per node class and per link. A stack's items run down balanced columns
// (subgraphs with their own direction, joined left to right), so a 52-layer
// model is a few columns, not one tall one.
#include <algorithm>
#include <map>

#include "graph_model.h"
#include "seam/reports/graph.h"

namespace seam::reports {

namespace {

/// One line of a label: what would end the quoted label or start an entity
/// or a tag is written as an entity code (Mermaid's #code; form).
std::string labelLine(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"') {
      o += "#quot;";
    } else if (c == '<') {
      o += "#lt;";
    } else if (c == '>') {
      o += "#gt;";
    } else if (c == '#') {
      o += "#35;";
    } else {
      o += c;
    }
  }
  return o;
}

/// A quoted label of several lines. Mermaid breaks a label's line at `<br>`
/// (the form its flowchart documentation uses; GitHub draws it so): the
/// lines are escaped one by one and joined with a bare `<br>`.
std::string quoted(const std::vector<std::string>& lines) {
  std::string o;
  for (const std::string& l : lines) o += (o.empty() ? "" : "<br>") + labelLine(l);
  return "\"" + o + "\"";
}

std::string id(int stack, int stage) {
  return "s" + std::to_string(stack) + "_" + (stage < 0 ? "in" : std::to_string(stage));
}

/// Node classes: the fills of the Graphviz drawing (graph_model.h), and a
/// plain box for the verdict of a case that holds.
const char* const kClassDefs[] = {
    "classDef mixer fill:#E0FFFF,stroke:#333333",
    "classDef ffn fill:#FFFFE0,stroke:#333333",
    "classDef io fill:#EBEBEB,stroke:#333333",
    "classDef fold fill:#FFFFFF,stroke:#333333,stroke-dasharray:5 3",
    "classDef violated fill:#FFC8C8,stroke:#8B0000,stroke-width:3px,color:#000000",
    "classDef snapshot fill:#FFFFFF,stroke:#2E8B57,stroke-width:2px",
    "classDef note fill:#FFFFFF,stroke:#333333",
};

class Flowchart {
 public:
  void node(const std::string& name, const std::vector<std::string>& label, const char* cls,
            const char* open = "[", const char* close = "]") {
    text_ += "    " + name + open + quoted(label) + close + (*cls ? ":::" : "") + cls + "\n";
  }
  void link(const std::string& a, const std::string& z, const std::vector<std::string>& label,
            const std::string& style, bool dotted = false) {
    text_ += "  " + a + (dotted ? " -.- " : " --> ") +
             (label.empty() ? "" : "|" + quoted(label) + "|") + " " + z + "\n";
    styles_ += "  linkStyle " + std::to_string(links_++) + " " + style + "\n";
  }
  /// A link that only places `z` after `a` (Mermaid's `~~~`): no line, no style.
  void invisible(const std::string& a, const std::string& z) {
    text_ += "  " + a + " ~~~ " + z + "\n";
    ++links_;
  }
  void raw(const std::string& line) { text_ += line; }
  std::string finish() const {
    std::string defs;
    for (const char* d : kClassDefs) defs += "  " + std::string(d) + "\n";
    return text_ + defs + styles_;
  }

 private:
  std::string text_, styles_;
  int links_ = 0;
};

std::string linkStyle(const Boundary& b, const BoundaryDiff& d) {
  std::string s = "stroke:" + (d.differs ? std::string(kDiffersColour) : sumColour(b.entry.owes)) +
                  ",stroke-width:" + (d.differs ? "4px" : "1.5px");
  if (b.entry.completer == Completer::kCarried) s += ",stroke-dasharray:6 4";
  return s;
}

/// The legend, a column of its own (its nodes share one rank, so left to
/// right stacks them): the checker's verdict, what each link colour and
/// style means, each difference key spelled out once, then a swatch of each
/// kind of node drawn.
void addLegend(Flowchart& f, const GraphContent& g) {
  f.raw("  subgraph legend [\"legend\"]\n    direction LR\n");
  int k = 0;
  auto entry = [&](const std::string& colour, const std::string& text) {
    const std::string name = "legend" + std::to_string(k++);
    f.node(name, {text}, "");
    f.raw("    style " + name + " fill:#ffffff,stroke:" + colour + ",color:" + colour +
          ",stroke-width:2px\n");
  };
  auto swatch = [&](const char* cls, const std::string& text) {
    f.node("legend" + std::to_string(k++), {text}, cls);
  };
  if (!g.verdict.empty()) f.node("verdict", g.verdict, g.violated ? "violated" : "note");
  for (SumGroup s : {SumGroup::kNone, SumGroup::kAttnTp, SumGroup::kTp, SumGroup::kMoeOutput,
                     SumGroup::kDpReturn}) {
    entry(sumColour(s), s == SumGroup::kNone ? "owes no sum"
                                             : "owes the " + std::string(sumGroupName(s)) + " sum");
  }
  entry("#000000", "dashed: carried into the next entry");
  if (g.diff) {
    entry(kDiffersColour, "thick magenta: differs from " + g.other + "; its mark says how");
    for (std::size_t i = 0; i < g.keys.text.size(); ++i) {
      const int n = g.keys.boundaries[i];
      entry(kDiffersColour, differenceMark(static_cast<int>(i) + 1) + " " + g.keys.text[i] + " (" +
                                std::to_string(n) + (n == 1 ? " boundary)" : " boundaries)"));
    }
  }
  if (g.mixer) swatch("mixer", "a mixer: Mamba-2, attention, ...");
  if (g.ffn) swatch("ffn", "an FFN: dense MLP or MoE");
  swatch("io", "the input and the final norm (output)");
  if (!g.violations.empty())
    swatch("violated", "VIOLATED: a property's first violation is seen at this stage");
  if (!g.snapshots.empty()) swatch("snapshot", "an aux hidden-state snapshot (before its stage)");
  if (g.folds) swatch("fold", "folded: repeats of the blocks above");
  f.raw("  end\n");
}

/// A drawn edge: from one item to the next, labelled or not.
struct Edge {
  int from = 0, to = 0;  // item indices
  std::vector<std::string> label;
  std::string style;
};

/// The edges of one stack's items: one per drawn boundary, labelled with its
/// steps; out of a fold, the boundary it ends with, unlabelled.
std::vector<Edge> stackEdges(const Plan& plan, int stack, const GraphContent& g) {
  const std::vector<GraphItem>& items = g.items[stack];
  std::map<int, int> item_of;    // stage (a fold under its first) -> item index
  std::map<int, int> fold_last;  // a fold's last stage -> its item index
  for (std::size_t i = 0; i < items.size(); ++i) {
    item_of[items[i].stage] = static_cast<int>(i);
    if (items[i].kind == GraphItem::kFold) fold_last[items[i].last] = static_cast<int>(i);
  }
  std::vector<Edge> edges;
  for (std::size_t i = 0; i < plan.boundaries.size(); ++i) {
    const Boundary& b = plan.boundaries[i];
    if (b.stack != stack) continue;
    const auto from = item_of.find(b.from);
    const auto to = item_of.find(b.to);
    if (to == item_of.end()) continue;
    if (from != item_of.end()) {
      edges.push_back(
          {from->second, to->second, boundaryLines(b, g.keys.key_of[i]), linkStyle(b, g.diffs[i])});
    } else if (fold_last.count(b.from)) {
      edges.push_back({fold_last[b.from], to->second, {}, linkStyle(b, g.diffs[i])});
    }
  }
  return edges;
}

std::string columnId(int stack, int column) {
  return "s" + std::to_string(stack) + "_col" + std::to_string(column);
}

std::string itemId(int stack, const GraphItem& it) {
  return it.kind == GraphItem::kFold ? "fold" + id(stack, it.stage) : id(stack, it.stage);
}

/// The node of one item, and its snapshot's node beside it.
void addItem(Flowchart& f, const Plan& plan, int stack, const GraphItem& it,
             const GraphContent& g) {
  const std::string pre = stack == 1 ? "MTP " : "";
  const std::string name = itemId(stack, it);
  std::vector<std::string> label;
  const char* cls = "io";
  if (it.kind == GraphItem::kInput) {
    label = {pre + (stack == 1 ? "eh_proj input" : "embedding")};
  } else if (it.kind == GraphItem::kOutput) {
    label = {pre + "final norm (output)"};
  } else if (it.kind == GraphItem::kFold) {
    label = {"stages " + std::to_string(it.stage) + " to " + std::to_string(it.last) + " folded:",
             std::to_string(it.blocks) + " more blocks of " + std::to_string(it.period) +
                 " exactly as above"};
    cls = "fold";
  } else {
    const StageInfo& s = plan.stages[plan.stageIndex(stack, it.stage)];
    label = {pre + "stage " + std::to_string(it.stage) + ": " + kindText(s.kind)};
    cls = isMixer(s.kind) ? "mixer" : "ffn";
  }
  const auto marks =
      it.kind == GraphItem::kFold ? g.violations.end() : g.violations.find({stack, it.stage});
  if (it.kind != GraphItem::kInput && marks != g.violations.end()) {
    label.insert(label.end(), marks->second.begin(), marks->second.end());
    cls = "violated";
  }
  f.node(name, label, cls);
  if (it.kind == GraphItem::kStage && g.snapshots.count({stack, it.stage})) {
    f.node("snap" + name, {"aux snapshot before " + pre + "stage " + std::to_string(it.stage)},
           "snapshot", "[/", "/]");
    f.link(name, "snap" + name, {}, std::string("stroke:") + kSnapshotColour, true);
  }
}

/// What a column's title calls an item: "embedding", "stage 12", "output".
std::string itemText(int stack, const GraphItem& it, bool last) {
  if (it.kind == GraphItem::kInput) return stack == 1 ? "eh_proj input" : "embedding";
  if (it.kind == GraphItem::kOutput) return "output";
  return "stage " + std::to_string(it.kind == GraphItem::kFold && last ? it.last : it.stage);
}

/// One stack: its items in balanced columns, each a subgraph laid out top to
/// bottom, the links inside a column between its nodes, the links from one
/// column to the next between the columns (a subgraph keeps its own
/// direction only while no link crosses its border).
void addStack(Flowchart& f, const Plan& plan, int stack, const GraphContent& g) {
  const std::vector<GraphItem>& items = g.items[stack];
  const int n = static_cast<int>(items.size());
  const int per_column = itemsPerColumn(n);
  const std::vector<Edge> edges = stackEdges(plan, stack, g);
  auto column = [&](int item) { return item / per_column; };
  for (int c = 0; c * per_column < n; ++c) {
    const int first = c * per_column;
    const int last = std::min(n, first + per_column) - 1;
    f.raw("  subgraph " + columnId(stack, c) + " [" +
          quoted({(stack == 1 ? "MTP: " : "") + itemText(stack, items[first], false) + " to " +
                  itemText(stack, items[last], true)}) +
          "]\n    direction TB\n");
    for (int i = first; i <= last; ++i) addItem(f, plan, stack, items[i], g);
    for (const Edge& e : edges) {
      if (column(e.from) == c && column(e.to) == c)
        f.link(itemId(stack, items[e.from]), itemId(stack, items[e.to]), e.label, e.style);
    }
    f.raw("  end\n");
  }
  for (const Edge& e : edges) {
    if (column(e.from) != column(e.to))
      f.link(columnId(stack, column(e.from)), columnId(stack, column(e.to)), e.label, e.style);
  }
}

}  // namespace

std::string renderMermaidGraph(const Plan& plan, const Plan* against, const GraphOptions& options) {
  const Case& c = plan.source;
  const GraphContent g = graphContent(plan, against, options);
  std::string title = c.model.name + " " + c.config.describe() + "; policy " + plan.policy;
  if (against) {
    int n = 0;
    for (const BoundaryDiff& d : g.diffs) n += d.differs ? 1 : 0;
    title += "; " + std::to_string(n) + " of " + std::to_string(g.diffs.size()) +
             " boundaries differ from " + against->policy;
  }
  Flowchart f;
  // The title is YAML: a double-quoted string needs only its quotes and
  // backslashes escaped.
  std::string yaml;
  for (char ch : title)
    yaml += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
  f.raw("---\ntitle: \"" + yaml + "\"\n---\nflowchart LR\n");
  addLegend(f, g);
  // The legend, the main stack's columns and the MTP stack's, left to right.
  std::string before = "legend";
  for (int stack = 0; stack < 2; ++stack) {
    if (g.items[stack].empty()) continue;
    addStack(f, plan, stack, g);
    f.invisible(before, columnId(stack, 0));
    before = columnId(stack, (static_cast<int>(g.items[stack].size()) - 1) /
                                 itemsPerColumn(static_cast<int>(g.items[stack].size())));
  }
  return f.finish();
}

}  // namespace seam::reports
