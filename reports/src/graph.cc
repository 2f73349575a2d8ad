#include "seam/reports/graph.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "graph_model.h"
#include "seam/reports/output_file.h"
#include "svg_plot.h"

namespace seam::reports {

namespace {

// Owning wrappers (STYLE 9): the context and the graph are released once.
struct ContextDeleter {
  void operator()(GVC_t* c) const { gvFreeContext(c); }
};
struct GraphDeleter {
  void operator()(Agraph_t* g) const { agclose(g); }
};
using Context = std::unique_ptr<GVC_t, ContextDeleter>;
using Graph = std::unique_ptr<Agraph_t, GraphDeleter>;

// One Graphviz context for the process, made on first use and never freed:
// Graphviz 2.42 (Debian 12) keeps a font-name cache across contexts that
// points into a freed context, so a second context's layout reads freed
// memory (found by ASan: heap-use-after-free in textspan_size under
// gvLayout). Graphviz is not thread-safe either: one render at a time.
struct SharedContext {
  std::mutex lock;
  Context gvc{gvContext()};
};
SharedContext& sharedContext() {
  static SharedContext* shared = new SharedContext;  // leaked on purpose: outlives every render
  return *shared;
}

void set(void* obj, const char* key, const std::string& value) {
  agsafeset(obj, const_cast<char*>(key), const_cast<char*>(value.c_str()), const_cast<char*>(""));
}

std::string nodeName(int stack, int stage) {
  return "s" + std::to_string(stack) + "_" + std::to_string(stage);
}

std::string itemName(int stack, const GraphItem& item) {
  return item.kind == GraphItem::kFold
             ? "fold" + std::to_string(stack) + "_" + std::to_string(item.stage)
             : nodeName(stack, item.stage);
}

std::string joined(const std::vector<std::string>& lines, const char* sep) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : sep) + l;
  return out;
}

/// The legend, as rows of an HTML-like table of two columns: a swatch of
/// each colour or line style the graph's edges use and what it means, a diff
/// graph's difference keys spelled out once, then the fill and border of
/// each kind of node it draws. It is a node of its own (legendNode), so
/// that it keeps its natural width under a wider title.
std::string legendRows(const GraphContent& content) {
  auto row = [](const std::string& colour, const std::string& swatch, const std::string& text) {
    return "<TR><TD ALIGN=\"LEFT\"><FONT COLOR=\"" + colour + "\">" + swatch +
           "</FONT></TD><TD ALIGN=\"LEFT\">&#160;" + text + "</TD></TR>";
  };
  // A node's swatch: a small box with its fill and border.
  auto box = [](const char* fill, const char* border, int width, const std::string& text) {
    return "<TR><TD ALIGN=\"LEFT\"><TABLE BORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"0\">"
           "<TR><TD FIXEDSIZE=\"TRUE\" WIDTH=\"26\" HEIGHT=\"13\" BGCOLOR=\"" +
           std::string(fill) + "\" COLOR=\"" + border + "\" BORDER=\"" + std::to_string(width) +
           "\"></TD></TR></TABLE></TD><TD ALIGN=\"LEFT\">&#160;" + text + "</TD></TR>";
  };
  auto heading = [](const std::string& text) {
    return "<TR><TD ALIGN=\"LEFT\" COLSPAN=\"2\"><I>" + text + "</I></TD></TR>";
  };
  const std::string line = "&#9472;&#9472;&#9472;";
  std::string rows = heading("edges (boundaries)");
  for (SumGroup g : {SumGroup::kNone, SumGroup::kAttnTp, SumGroup::kTp, SumGroup::kMoeOutput,
                     SumGroup::kDpReturn}) {
    rows += row(
        sumColour(g), line,
        g == SumGroup::kNone ? "owes no sum" : "owes the " + std::string(sumGroupName(g)) + " sum");
  }
  rows += row("#000000", "&#9548;&#9548;&#9548;", "dashed: carried into the next entry");
  // A bold light line draws no thicker in most fonts; the heavy one does.
  rows += row("#000000", "&#9473;&#9473;&#9473;", "thick: the consumer's entry completes it");
  if (content.diff) {
    const std::string other = escapeXml(content.other);
    rows += row(kDiffersColour, "&#9552;&#9552;&#9552;",
                "double, magenta: differs from " + other + "; its mark says how:");
    for (std::size_t k = 0; k < content.keys.text.size(); ++k) {
      const int n = content.keys.boundaries[k];
      rows +=
          row(kDiffersColour, "&#160;&#160;" + escapeXml(differenceMark(static_cast<int>(k) + 1)),
              escapeXml(content.keys.text[k]) + " (" + std::to_string(n) +
                  (n == 1 ? " boundary)" : " boundaries)"));
    }
  }
  rows += heading("nodes (stages)");
  if (content.mixer) rows += box(kMixerFill, "#000000", 1, "a mixer: Mamba-2, attention, ...");
  if (content.ffn) rows += box(kFfnFill, "#000000", 1, "an FFN: dense MLP or MoE");
  rows += box(kEndFill, "#000000", 1, "the input and the final norm (output)");
  if (!content.violations.empty()) {
    rows += box(kViolatedFill, kViolatedBorder, 3,
                "VIOLATED: a property's first violation is seen at this stage");
  }
  if (!content.snapshots.empty()) {
    rows +=
        box("#FFFFFF", kSnapshotColour, 2, "green double border: the entry takes an aux snapshot");
  }
  if (content.folds) rows += row("#000000", "&#8942;", "folded: repeats of the blocks above");
  return rows;
}

/// The graph's title (the case, the policy, how many boundaries differ from
/// `against`, the checker's verdict) and the attributes every node and edge
/// shares.
void setGraphAttributes(Agraph_t* g, const Plan& plan, const Plan* against,
                        const GraphContent& content) {
  const Case& c = plan.source;
  // A long pattern (DeepSeek-V3's is 124 letters) is wrapped, not one wide line.
  std::string pattern = c.model.pattern.text();
  for (std::size_t at = 64; at < pattern.size(); at += 65) pattern.insert(at, "\n");
  std::string title = c.model.name + " '" + pattern + "'";
  title = escapeXml(title);
  for (auto at = title.find('\n'); at != std::string::npos; at = title.find('\n', at))
    title.replace(at, 1, "<BR/>");
  title +=
      "<BR/>" + escapeXml(c.config.describe()) + "<BR/>" +
      escapeXml(c.flags.describe() + "; tokens " + c.batch.describe() + "; policy " + plan.policy);
  if (!c.flags.capture.empty()) {
    std::string at;
    for (int k : c.flags.capture) at += (at.empty() ? "" : ",") + std::to_string(k);
    title += "<BR/>captures before stages " + at;
  }
  if (against) {
    int n = 0;
    for (const BoundaryDiff& d : content.diffs) n += d.differs ? 1 : 0;
    title += "<BR/><B>" + std::to_string(n) + " of " + std::to_string(content.diffs.size()) +
             " boundaries differ from " + escapeXml(against->policy) + "</B>";
  }
  for (const std::string& line : content.verdict) {
    title += "<BR/>" + (content.violated ? "<FONT COLOR=\"" + std::string(kViolatedBorder) +
                                               "\"><B>" + escapeXml(line) + "</B></FONT>"
                                         : escapeXml(line));
  }
  agsafeset(g, const_cast<char*>("label"), agstrdup_html(g, const_cast<char*>(title.c_str())),
            const_cast<char*>(""));
  set(g, "labelloc", "t");
  set(g, "fontname", "Helvetica");
  set(g, "fontsize", "14");
  set(g, "rankdir", "TB");
  set(g, "newrank", "true");
  set(g, "nodesep", "0.25");
  set(g, "ranksep", "0.35");
  agattr(g, AGNODE, const_cast<char*>("shape"), const_cast<char*>("box"));
  agattr(g, AGNODE, const_cast<char*>("fontname"), const_cast<char*>("Helvetica"));
  agattr(g, AGNODE, const_cast<char*>("fontsize"), const_cast<char*>("11"));
  agattr(g, AGEDGE, const_cast<char*>("fontname"), const_cast<char*>("Helvetica"));
  agattr(g, AGEDGE, const_cast<char*>("fontsize"), const_cast<char*>("9"));
}

/// The legend as a node, made before the stacks so that dot orders it,
/// and the columns after it, from the left.
Agnode_t* addLegendNode(Agraph_t* g, const GraphContent& content) {
  Agnode_t* n = agnode(g, const_cast<char*>("legend"), 1);
  const std::string label =
      "<TABLE BORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">" + legendRows(content) + "</TABLE>";
  agsafeset(n, const_cast<char*>("label"), agstrdup_html(g, const_cast<char*>(label.c_str())),
            const_cast<char*>(""));
  set(n, "shape", "plaintext");
  set(n, "fontsize", "14");
  return n;
}

/// Holds the main stack's input under the legend (an invisible edge), and
/// the MTP stack's input beside it, on the same rank: tied to the legend
/// too, dot would draw the MTP stack between the main stack's columns.
void holdUnderLegend(Agraph_t* g, Agnode_t* legend, int stack) {
  Agnode_t* input = agnode(g, const_cast<char*>(nodeName(stack, -1).c_str()), 1);
  if (stack == 0) {
    set(agedge(g, legend, input, nullptr, 1), "style", "invis");
    return;
  }
  Agraph_t* inputs = agsubg(g, const_cast<char*>("inputs"), 1);
  set(inputs, "rank", "same");
  agsubnode(inputs, agnode(g, const_cast<char*>(nodeName(0, -1).c_str()), 1), 1);
  agsubnode(inputs, input, 1);
}

Agnode_t* addNode(Agraph_t* g, const std::string& name, const std::string& label,
                  const char* fill) {
  Agnode_t* n = agnode(g, const_cast<char*>(name.c_str()), 1);
  set(n, "label", label);
  set(n, "style", "filled");
  set(n, "fillcolor", fill);
  return n;
}

std::string stageLabel(const Plan& plan, int stack, int stage) {
  const Case& c = plan.source;
  const StageInfo& s = plan.stages[plan.stageIndex(stack, stage)];
  // Two-stage and branch layers have several stages per decoder layer.
  const std::string layer =
      c.model.family != LayerFamily::kSingleStage ? " (layer " + std::to_string(s.layer) + ")" : "";
  const std::string rows = s.weight_axis == kNoAxis
                               ? "weights replicated"
                               : "weights split over " +
                                     std::string(axisName(static_cast<Axis>(s.weight_axis))) +
                                     " (" + std::to_string(s.shards) + ")";
  return std::string(stack == 1 ? "MTP " : "") + "stage " + std::to_string(stage) + layer + ": " +
         kindText(s.kind) + "\\n" + rows +
         (c.config.pp > 1 ? "\\npp rank " + std::to_string(s.pp_rank) : "");
}

/// The nodes of one stack's items: input, stages (one whose entry takes an
/// aux snapshot with a double green border and a line saying so, one where a
/// property is violated filled red with a thick border and its marks),
/// folds, output. A long stack snakes through balanced columns
/// (itemsPerColumn).
void addStackNodes(Agraph_t* g, const Plan& plan, int stack, const std::vector<GraphItem>& items,
                   const std::set<std::pair<int, int>>& snapshots,
                   const ViolationMarks& violations) {
  const std::string pre = stack == 1 ? "MTP " : "";
  const int n = static_cast<int>(items.size());
  const int per_column = itemsPerColumn(n);
  std::vector<Agraph_t*> rows;
  for (int row = 0; per_column < n && row < per_column; ++row) {
    const std::string name = "rank_" + std::to_string(stack) + "_" + std::to_string(row);
    rows.push_back(agsubg(g, const_cast<char*>(name.c_str()), 1));
    set(rows.back(), "rank", "same");
  }
  for (int i = 0; i < n; ++i) {
    const GraphItem& it = items[i];
    std::string label;
    const char* fill = kEndFill;
    bool snapshot = false;
    if (it.kind == GraphItem::kInput) {
      label = pre + (stack == 1 ? "eh_proj input" : "embedding");
    } else if (it.kind == GraphItem::kOutput) {
      label = pre + "final norm (output)";
    } else if (it.kind == GraphItem::kFold) {
      label = "\xE2\x8B\xAE stages " + std::to_string(it.stage) + " to " + std::to_string(it.last) +
              " folded:\\n" + std::to_string(it.blocks) + " more blocks of " +
              std::to_string(it.period) + (it.period == 1 ? " stage" : " stages") +
              " exactly as above";
      fill = "white";
    } else {
      snapshot = snapshots.count({stack, it.stage}) > 0;
      label = stageLabel(plan, stack, it.stage) +
              (snapshot ? "\\naux hidden-state snapshot at its entry" : "");
      fill = isMixer(plan.stages[plan.stageIndex(stack, it.stage)].kind) ? kMixerFill : kFfnFill;
    }
    // A fold never holds a violation (stackItems), nor is one seen at the input.
    const auto marks = it.kind == GraphItem::kFold || it.kind == GraphItem::kInput
                           ? violations.end()
                           : violations.find({stack, it.stage});
    if (marks != violations.end()) {
      label += "\\n" + joined(marks->second, "\\n");
      fill = kViolatedFill;
    }
    Agnode_t* node = addNode(g, itemName(stack, it), label, fill);
    if (it.kind == GraphItem::kFold) set(node, "style", "dashed");
    if (snapshot) {
      set(node, "color", kSnapshotColour);
      set(node, "peripheries", "2");
      set(node, "penwidth", "1.5");
    }
    if (marks != violations.end()) {
      set(node, "color", kViolatedBorder);
      set(node, "penwidth", "3");
    }
    if (per_column < n) agsubnode(rows[i % per_column], node, 1);
  }
}

void styleEdge(Agedge_t* e, const Boundary& b, const BoundaryDiff& d) {
  if (d.differs) {
    // A double line in a colour no sum uses: visible at any zoom, not a sum.
    set(e, "color", std::string(kDiffersColour) + ":white:" + kDiffersColour);
    set(e, "penwidth", "2");
    set(e, "fontcolor", kDiffersColour);
  } else {
    set(e, "color", sumColour(b.entry.owes));
    set(e, "penwidth", b.entry.completer == Completer::kConsumerEntry ? "2" : "1.2");
  }
  set(e, "style", b.entry.completer == Completer::kCarried ? "dashed" : "solid");
}

/// One edge per drawn boundary, labelled with its steps and coloured by the
/// sum it owes; into and out of a fold, the boundary the fold starts with
/// and the one it ends with, unlabelled.
void addEdges(Agraph_t* g, const Plan& plan, int stack, const std::vector<GraphItem>& items,
              const std::vector<BoundaryDiff>& diffs, const DifferenceKeys& keys) {
  std::map<int, const GraphItem*> drawn;    // stage (-1 input, n output) -> its item
  std::map<int, const GraphItem*> fold_at;  // first folded stage -> the fold
  for (const GraphItem& it : items) {
    if (it.kind == GraphItem::kFold) {
      fold_at[it.stage] = &it;
    } else {
      drawn[it.stage] = &it;
    }
  }
  for (std::size_t i = 0; i < plan.boundaries.size(); ++i) {
    const Boundary& b = plan.boundaries[i];
    if (b.stack != stack) continue;
    const GraphItem* from = nullptr;
    const GraphItem* to = nullptr;
    bool labelled = true;
    if (drawn.count(b.from) && drawn.count(b.to)) {
      from = drawn[b.from];
      to = drawn[b.to];
    } else if (drawn.count(b.from) && fold_at.count(b.to)) {
      from = drawn[b.from];
      to = fold_at[b.to];
    } else if (drawn.count(b.to) && !drawn.count(b.from)) {
      for (const auto& [first, fold] : fold_at) {
        if (fold->last == b.from) from = fold;
      }
      to = drawn[b.to];
      labelled = false;
    }
    if (!from || !to) continue;
    Agnode_t* a = agnode(g, const_cast<char*>(itemName(stack, *from).c_str()), 0);
    Agnode_t* z = agnode(g, const_cast<char*>(itemName(stack, *to).c_str()), 0);
    if (!a || !z) continue;
    Agedge_t* e = agedge(g, a, z, nullptr, 1);
    set(e, "label", labelled ? joined(boundaryLines(b, keys.key_of[i]), "\\n") : "");
    styleEdge(e, b, diffs[i]);
  }
}

/// Lays the graph out with dot and renders it in `format`.
Expected<std::string> layOutAndRender(GVC_t* gvc, Agraph_t* g, const std::string& format) {
  if (gvLayout(gvc, g, "dot") != 0) return Status::internal("Graphviz: dot layout failed");
  char* data = nullptr;
  unsigned int length = 0;
  const int rc = gvRenderData(gvc, g, format.c_str(), &data, &length);
  std::string out;
  if (rc == 0 && data) out.assign(data, length);
  if (data) gvFreeRenderData(data);
  gvFreeLayout(gvc, g);
  if (rc != 0)
    return Status::internal("Graphviz: rendering " + format + " failed (is its plugin installed?)");
  return out;
}

}  // namespace

Expected<std::string> renderBoundaryGraph(const Plan& plan, const Plan* against,
                                          const std::string& format, const GraphOptions& options) {
  if (format == "mmd") return renderMermaidGraph(plan, against, options);
  if (format != "svg" && format != "png" && format != "dot") {
    return Status::invalid("graph format \"" + format.substr(0, 16) +
                           "\" is not one of svg, png, dot, mmd");
  }
  SharedContext& shared = sharedContext();
  std::lock_guard<std::mutex> hold(shared.lock);
  GVC_t* gvc = shared.gvc.get();
  if (!gvc) return Status::internal("Graphviz: gvContext failed");
  Graph g(agopen(const_cast<char*>("seam"), Agdirected, nullptr));
  if (!g) return Status::internal("Graphviz: agopen failed");
  const GraphContent content = graphContent(plan, against, options);
  setGraphAttributes(g.get(), plan, against, content);
  Agnode_t* legend = addLegendNode(g.get(), content);
  for (int stack = 0; stack < 2; ++stack) {
    if (content.items[stack].empty()) continue;
    holdUnderLegend(g.get(), legend, stack);
    addStackNodes(g.get(), plan, stack, content.items[stack], content.snapshots,
                  content.violations);
    addEdges(g.get(), plan, stack, content.items[stack], content.diffs, content.keys);
  }
  return layOutAndRender(gvc, g.get(), format);
}

Status writeBoundaryGraph(const Plan& plan, const Plan* against, const std::string& path,
                          const GraphOptions& options) {
  const auto dot = path.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (ext != "svg" && ext != "png" && ext != "dot" && ext != "mmd") {
    return Status::invalid("-o \"" + path.substr(0, 200) +
                           "\": the extension must be .svg, .png, .dot or .mmd");
  }
  auto bytes = renderBoundaryGraph(plan, against, ext, options);
  if (!bytes) return bytes.status();
  return writeOutputFile("-o", path, *bytes);
}

}  // namespace seam::reports
