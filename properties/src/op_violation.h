// Private to properties/: a violation located at one op of one rank, for the
// static judges (check_judges.cc, call_arguments.cc).
#pragma once

#include <string>
#include <utility>

#include "seam/sim/plan/plan.h"
#include "seam/sim/replay/ledger.h"

namespace seam::properties {

/// A violation at op `index` of rank `rank` (index < 0: the rank only).
inline Violation opViolation(const Plan& plan, int rank, int index, Property p, ViolationClass c,
                             std::string detail) {
  Violation v;
  v.property = p;
  v.cls = c;
  v.rank = rank;
  if (index >= 0) {
    const Op& op = plan.ranks[rank][index];
    v.op_index = index;
    v.stack = op.stack;
    v.layer = op.layer;
    v.stage = op.stage;
    v.phase = op.phase;
    v.op = op.kind;
  }
  v.detail = std::move(detail);
  return v;
}

}  // namespace seam::properties
