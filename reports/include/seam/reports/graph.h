// Boundary graphs for code review (DESIGN §8), drawn in-process with
// Graphviz (cgraph + gvc): one node per stage with its rows, one edge per
// boundary labelled with its exit and entry steps, coloured by the sum it
// owes (deferred sums dashed into the next entry); against a second plan,
// the boundaries where the two differ are drawn thick and red with the other
// side's steps.
#pragma once

#include <string>

#include "seam/sim/base/status.h"
#include "seam/sim/plan/plan.h"

namespace seam::reports {

/// The graph of `plan` (and its differences from `against`, when given) in
/// `format`: "svg", "png" or "dot". Returns the rendered bytes.
Expected<std::string> renderBoundaryGraph(const Plan& plan, const Plan* against,
                                          const std::string& format);

/// Writes it to `path`; the format is taken from the extension (.svg, .png,
/// .dot); a bad extension or path is a one-line error.
Status writeBoundaryGraph(const Plan& plan, const Plan* against, const std::string& path);

}  // namespace seam::reports
