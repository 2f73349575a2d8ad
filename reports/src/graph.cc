#include "seam/reports/graph.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "seam/reports/output_file.h"

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

std::string kindText(LayerKind k) {
  switch (k) {
    case LayerKind::kMamba:
      return "M  Mamba-2";
    case LayerKind::kAttention:
      return "*  attention";
    case LayerKind::kDenseMlp:
      return "-  dense MLP";
    case LayerKind::kMoe:
      return "E  MoE";
    case LayerKind::kGatedDeltaNet:
      return "G  Gated DeltaNet";
    case LayerKind::kParallelMixer:
      return "P  attention || Mamba-2";
  }
  return "?";
}

std::string colorOf(SumGroup s) {
  switch (s) {
    case SumGroup::kNone:
      return "gray35";
    case SumGroup::kAttnTp:
      return "blue3";
    case SumGroup::kTp:
      return "firebrick3";
    case SumGroup::kMoeOutput:
      return "purple3";
    case SumGroup::kDpReturn:
      return "darkorange3";
  }
  return "black";
}

std::string steps(const OpKindList& kinds) {
  std::string out;
  for (OpKind k : kinds) out += (out.empty() ? "" : ", ") + std::string(opName(k));
  return out.empty() ? "-" : out;
}

std::string nodeName(int stack, int stage) {
  return "s" + std::to_string(stack) + "_" + std::to_string(stage);
}

const Boundary* matching(const Plan* other, const Boundary& b) {
  if (!other) return nullptr;
  for (const Boundary& o : other->boundaries) {
    if (o.stack == b.stack && o.from == b.from && o.to == b.to) return &o;
  }
  return nullptr;
}

/// The graph's title (the case, the policy, what it is drawn against) and
/// the attributes every node and edge shares.
void setGraphAttributes(Agraph_t* g, const Plan& plan, const Plan* against) {
  const Case& c = plan.source;
  std::string title = c.model.name + " '" + c.model.pattern.text() + "'\\n" + c.config.describe() +
                      "\\n" + c.flags.describe() + "; tokens " + c.batch.describe() + "; policy " +
                      plan.policy;
  if (against) title += " (red: differs from " + against->policy + ")";
  set(g, "label", title);
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

Agnode_t* addNode(Agraph_t* g, int stack, int stage, const std::string& label, const char* fill) {
  Agnode_t* n = agnode(g, const_cast<char*>(nodeName(stack, stage).c_str()), 1);
  set(n, "label", label);
  set(n, "style", "filled");
  set(n, "fillcolor", fill);
  return n;
}

/// One node per stage with its layer kind and rows, and an input and an
/// output node per stack.
void addStageNodes(Agraph_t* g, const Plan& plan) {
  const Case& c = plan.source;
  for (int stack = 0; stack < 2; ++stack) {
    const int n = plan.stackSize(stack);
    if (n == 0) continue;
    const std::string pre = stack == 1 ? "MTP " : "";
    addNode(g, stack, -1, pre + (stack == 1 ? "eh_proj input" : "embedding"), "gray92");
    addNode(g, stack, n, pre + "final norm (output)", "gray92");
  }
  int index_in_stack[2] = {0, 0};
  for (const StageInfo& s : plan.stages) {
    const int stage = index_in_stack[s.stack]++;
    // Two-stage and branch layers have several stages per decoder layer.
    const std::string layer = c.model.family != LayerFamily::kSingleStage
                                  ? " (layer " + std::to_string(s.layer) + ")"
                                  : "";
    const std::string rows = s.weight_axis == kNoAxis
                                 ? "weights replicated"
                                 : "weights split over " +
                                       std::string(axisName(static_cast<Axis>(s.weight_axis))) +
                                       " (" + std::to_string(s.shards) + ")";
    const bool mixer = isMixer(s.kind);
    addNode(g, s.stack, stage,
            std::string(s.stack == 1 ? "MTP " : "") + "stage " + std::to_string(stage) + layer +
                ": " + kindText(s.kind) + "\\n" + rows +
                (c.config.pp > 1 ? "\\npp rank " + std::to_string(s.pp_rank) : ""),
            mixer ? "lightcyan" : "lightyellow");
  }
}

/// A long stack snakes through columns of kRowsPerColumn stages (stage i on
/// row i mod kRowsPerColumn), so that a 52- or 88-layer model stays readable
/// on a screen.
void snakeLongStacks(Agraph_t* g, const Plan& plan) {
  constexpr int kRowsPerColumn = 14;
  for (int stack = 0; stack < 2; ++stack) {
    const int n = plan.stackSize(stack);
    if (n + 2 <= kRowsPerColumn) continue;
    for (int row = 0; row < kRowsPerColumn; ++row) {
      const std::string name = "rank_" + std::to_string(stack) + "_" + std::to_string(row);
      Agraph_t* sub = agsubg(g, const_cast<char*>(name.c_str()), 1);
      set(sub, "rank", "same");
      for (int i = row - 1; i <= n; i += kRowsPerColumn) {
        if (Agnode_t* node = agnode(g, const_cast<char*>(nodeName(stack, i).c_str()), 0)) {
          agsubnode(sub, node, 1);
        }
      }
    }
  }
}

/// One edge per boundary, labelled with its steps and coloured by the sum it
/// owes; thick and red where `against` plans it differently.
void addBoundaryEdges(Agraph_t* g, const Plan& plan, const Plan* against) {
  for (const Boundary& b : plan.boundaries) {
    Agnode_t* from = agnode(g, const_cast<char*>(nodeName(b.stack, b.from).c_str()), 0);
    Agnode_t* to = agnode(g, const_cast<char*>(nodeName(b.stack, b.to).c_str()), 0);
    if (!from || !to) continue;
    Agedge_t* e = agedge(g, from, to, nullptr, 1);
    std::string label = "exit: " + steps(b.exit_steps) + "\\nentry: " + steps(b.entry_steps);
    if (b.entry.owes != SumGroup::kNone) {
      label += "\\nowes " + std::string(sumGroupName(b.entry.owes)) + " (" +
               std::string(completerName(b.entry.completer)) + ")";
    }
    label += "\\n" + std::string(rowKindName(b.entry.rows)) + " rows" +
             (b.pipeline_cut ? ", pipeline cut" : "");
    std::string color = colorOf(b.entry.owes);
    std::string style = b.entry.completer == Completer::kCarried ? "dashed" : "solid";
    std::string width = b.entry.completer == Completer::kConsumerEntry ? "2" : "1.2";
    if (const Boundary* o = matching(against, b)) {
      if (!(o->exit_steps == b.exit_steps) || !(o->entry_steps == b.entry_steps) ||
          !(o->entry == b.entry)) {
        label += "\\n" + against->policy + ": exit " + steps(o->exit_steps) + " / entry " +
                 steps(o->entry_steps);
        color = "red";
        width = "3.5";
        set(e, "fontcolor", "red");
      }
    }
    set(e, "label", label);
    set(e, "color", color);
    set(e, "style", style);
    set(e, "penwidth", width);
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
                                          const std::string& format) {
  if (format != "svg" && format != "png" && format != "dot") {
    return Status::invalid("graph format \"" + format.substr(0, 16) +
                           "\" is not one of svg, png, dot");
  }
  SharedContext& shared = sharedContext();
  std::lock_guard<std::mutex> hold(shared.lock);
  GVC_t* gvc = shared.gvc.get();
  if (!gvc) return Status::internal("Graphviz: gvContext failed");
  Graph g(agopen(const_cast<char*>("seam"), Agdirected, nullptr));
  if (!g) return Status::internal("Graphviz: agopen failed");
  setGraphAttributes(g.get(), plan, against);
  addStageNodes(g.get(), plan);
  snakeLongStacks(g.get(), plan);
  addBoundaryEdges(g.get(), plan, against);
  return layOutAndRender(gvc, g.get(), format);
}

Status writeBoundaryGraph(const Plan& plan, const Plan* against, const std::string& path) {
  const auto dot = path.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  if (ext != "svg" && ext != "png" && ext != "dot") {
    return Status::invalid("-o \"" + path.substr(0, 200) +
                           "\": the extension must be .svg, .png or .dot");
  }
  auto bytes = renderBoundaryGraph(plan, against, ext);
  if (!bytes) return bytes.status();
  return writeOutputFile("-o", path, *bytes);
}

}  // namespace seam::reports
