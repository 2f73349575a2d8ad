// The boundary graph as a Mermaid flowchart, for Markdown that GitHub draws
// (a pull-request comment, a job summary): the same items, folds, snapshots
// and differences as the Graphviz drawing (graph_model.h), styled per link.
#include <map>

#include "graph_model.h"
#include "seam/reports/graph.h"

namespace seam::reports {

namespace {

/// Text inside a quoted Mermaid label: quotes and angle brackets as entities.
std::string quoted(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') {
      o += "#quot;";
    } else if (c == '<') {
      o += "#lt;";
    } else if (c == '>') {
      o += "#gt;";
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string id(int stack, int stage) {
  return "s" + std::to_string(stack) + "_" + (stage < 0 ? "in" : std::to_string(stage));
}

std::string joinedBr(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "<br/>") + l;
  return out;
}

class Flowchart {
 public:
  void node(const std::string& name, const std::string& label, const char* open = "[",
            const char* close = "]") {
    text_ += "  " + name + open + quoted(label) + close + "\n";
  }
  void link(const std::string& a, const std::string& z, const std::string& label,
            const std::string& style, bool dotted = false) {
    text_ += "  " + a + (dotted ? " -.- " : " --> ") +
             (label.empty() ? "" : "|" + quoted(label) + "|") + z + "\n";
    styles_ += "  linkStyle " + std::to_string(links_++) + " " + style + "\n";
  }
  void raw(const std::string& line) { text_ += line; }
  std::string finish() const { return text_ + styles_; }

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

void addLegend(Flowchart& f, bool diff, bool snapshots, const std::string& other) {
  f.raw("  subgraph legend [legend]\n");
  int k = 0;
  auto entry = [&](const std::string& colour, const std::string& text) {
    const std::string name = "legend" + std::to_string(k++);
    f.node(name, text);
    f.raw("  style " + name + " fill:#ffffff,stroke:" + colour + ",color:" + colour +
          ",stroke-width:2px\n");
  };
  for (SumGroup g : {SumGroup::kNone, SumGroup::kAttnTp, SumGroup::kTp, SumGroup::kMoeOutput,
                     SumGroup::kDpReturn}) {
    entry(sumColour(g), g == SumGroup::kNone ? "owes no sum"
                                             : "owes the " + std::string(sumGroupName(g)) + " sum");
  }
  entry("#000000", "dashed: carried into the next entry");
  if (diff) entry(kDiffersColour, "thick magenta: differs from " + other);
  if (snapshots) entry(kSnapshotColour, "aux hidden-state snapshot");
  f.raw("  end\n");
}

}  // namespace

std::string renderMermaidGraph(const Plan& plan, const Plan* against, const GraphOptions& options) {
  const Case& c = plan.source;
  const std::vector<BoundaryDiff> diffs = diffBoundaries(plan, against);
  const auto snapshots = snapshotStages(plan);
  std::string title = c.model.name + " " + c.config.describe() + "; policy " + plan.policy;
  if (against) {
    int n = 0;
    for (const BoundaryDiff& d : diffs) n += d.differs ? 1 : 0;
    title += "; " + std::to_string(n) + " of " + std::to_string(diffs.size()) +
             " boundaries differ from " + against->policy;
  }
  Flowchart f;
  f.raw("---\ntitle: " + quoted(title) + "\n---\nflowchart TB\n");
  const std::string other = against ? against->policy : "";
  addLegend(f, against != nullptr, !snapshots.empty(), other);
  for (int stack = 0; stack < 2; ++stack) {
    const int n = plan.stackSize(stack);
    if (n == 0) continue;
    const std::string pre = stack == 1 ? "MTP " : "";
    std::map<int, std::string> name_of;  // stage -> drawn node; a fold under its first stage
    std::map<int, int> fold_last;        // a fold's last stage -> its first
    for (const GraphItem& it : stackItems(plan, stack, diffs, snapshots, options.fold)) {
      const std::string name =
          it.kind == GraphItem::kFold ? "fold" + id(stack, it.stage) : id(stack, it.stage);
      name_of[it.stage] = name;
      if (it.kind == GraphItem::kInput) {
        f.node(name, pre + (stack == 1 ? "eh_proj input" : "embedding"));
      } else if (it.kind == GraphItem::kOutput) {
        f.node(name, pre + "final norm (output)");
      } else if (it.kind == GraphItem::kFold) {
        fold_last[it.last] = it.stage;
        f.node(name, "stages " + std::to_string(it.stage) + " to " + std::to_string(it.last) +
                         " folded: " + std::to_string(it.blocks) + " more blocks of " +
                         std::to_string(it.period) + " exactly as above");
      } else {
        const StageInfo& s = plan.stages[plan.stageIndex(stack, it.stage)];
        f.node(name, pre + "stage " + std::to_string(it.stage) + ": " + kindText(s.kind));
        if (snapshots.count({stack, it.stage})) {
          f.node("snap" + name, "aux snapshot before " + pre + "stage " + std::to_string(it.stage),
                 "[/", "/]");
          f.link(name, "snap" + name, "", std::string("stroke:") + kSnapshotColour, true);
        }
      }
    }
    for (std::size_t i = 0; i < plan.boundaries.size(); ++i) {
      const Boundary& b = plan.boundaries[i];
      if (b.stack != stack) continue;
      const auto from = name_of.find(b.from);
      const auto to = name_of.find(b.to);
      if (from != name_of.end() && to != name_of.end()) {
        f.link(from->second, to->second, joinedBr(boundaryLines(b, diffs[i], other)),
               linkStyle(b, diffs[i]));
      } else if (to != name_of.end() && fold_last.count(b.from)) {
        f.link(name_of[fold_last[b.from]], to->second, "", linkStyle(b, diffs[i]));
      }
    }
  }
  return f.finish();
}

}  // namespace seam::reports
