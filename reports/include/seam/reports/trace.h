// Engine traces: a JSON-lines recording of an engine's calls, one object per
// call (the format `seam plan --format jsonl --rank all` writes), read into a
// Plan so that `seam check` and `seam diff` run on real recordings.
//
// Each line: {"rank": R, "layer": L, "stage": S, "phase": "entry|compute|exit",
//  "op": "<op kind>", "tensor": "hidden|residual|snapshot",
//  "group": "<axis>"|null, "ranks": [..]|null,
//  "rows_in": {"layout": "attention|local|full|dispatched|none", "count": N},
//  "rows_out": {...}, "bytes": B, "stack": 1 (optional, MTP step)}.
// "group_size" is accepted and checked when present.
#pragma once

#include <string>

#include "seam/sim/base/status.h"
#include "seam/sim/plan/plan.h"

namespace seam::reports {

/// Reads `path` into a plan of `skeleton`'s case: the skeleton (the policy's
/// plan of the same case) supplies the stages and the resolved padding; the
/// trace supplies every rank's ops, in file order. A bad or truncated file is
/// refused with one line naming the file, the line number and the problem;
/// a group whose ranks are not seam's group for that rank and axis is refused
/// too (the recording and the modelled topology disagree). A case that
/// runs two-batch overlap is refused: the format has no half per op.
Expected<Plan> importTrace(const std::string& path, const Plan& skeleton);

}  // namespace seam::reports
