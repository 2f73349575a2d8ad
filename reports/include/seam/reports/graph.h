// Boundary graphs for code review (DESIGN §8): one node per stage with its
// rows, one edge per boundary labelled with its exit and entry steps,
// coloured by the sum it owes (deferred sums dashed into the next entry),
// aux snapshots beside the stage they are taken before, a legend, and long
// runs of identical stages folded into one node. Drawn in-process with
// Graphviz (cgraph + gvc: svg, png, dot) or written as a Mermaid flowchart
// (mmd: GitHub draws it in Markdown). Against a second plan, the boundaries
// where the two differ (in steps, handoffs or any rank's ops, snapshots
// included) are drawn as magenta double lines with the other side's steps,
// and the title says how many differ.
#pragma once

#include <string>

#include "seam/sim/base/status.h"
#include "seam/sim/plan/plan.h"

namespace seam::reports {

struct GraphOptions {
  /// Fold runs of identical blocks of stages (graph_model.h); off: every stage.
  bool fold = true;
};

/// The graph of `plan` (and its differences from `against`, when given) in
/// `format`: "svg", "png", "dot" or "mmd". Returns the rendered bytes.
Expected<std::string> renderBoundaryGraph(const Plan& plan, const Plan* against,
                                          const std::string& format,
                                          const GraphOptions& options = {});

/// The same graph as a Mermaid flowchart.
std::string renderMermaidGraph(const Plan& plan, const Plan* against,
                               const GraphOptions& options = {});

/// Writes it to `path`; the format is taken from the extension (.svg, .png,
/// .dot, .mmd); a bad extension or path is a one-line error.
Status writeBoundaryGraph(const Plan& plan, const Plan* against, const std::string& path,
                          const GraphOptions& options = {});

}  // namespace seam::reports
