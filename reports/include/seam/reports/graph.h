// Boundary graphs for code review (DESIGN §8): one node per stage with its
// rows, one edge per boundary labelled with its exit and entry steps,
// coloured by the sum it owes (deferred sums dashed into the next entry),
// aux snapshots beside the stage they are taken before, the stages where the
// checker finds a property violated, a legend of every colour, and long runs
// of identical stages folded into one node. Drawn in-process with Graphviz
// (cgraph + gvc: svg, png, dot) or written as a Mermaid flowchart (mmd:
// GitHub draws it in Markdown). Against a second plan, the boundaries where
// the two differ (in steps, handoffs or any rank's ops, snapshots included)
// are drawn as magenta double lines marked with a key that the legend
// spells out once, and the title says how many differ.
#pragma once

#include <string>

#include "seam/properties/check.h"
#include "seam/sim/base/status.h"
#include "seam/sim/plan/plan.h"

namespace seam::reports {

struct GraphOptions {
  /// Fold runs of identical blocks of stages (graph_model.h); off: every stage.
  bool fold = true;
  /// The checker's verdict on the drawn plan (properties::checkPlan): each
  /// violated property's first violation is marked at its stage and the
  /// title names the first violation, or says that every property holds.
  /// Null: the graph is not judged and its title says nothing of it.
  const properties::PlanVerdict* verdict = nullptr;
  /// The SGLang call behind the first violation when the plan is the engine's
  /// as it runs (properties::engineFindingSite): the title calls it an engine
  /// finding. Empty: a plain violation.
  std::string engine_site;
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
