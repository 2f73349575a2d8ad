// Property 4 on call arguments (call_arguments.h). GroupCoordinator's
// reduce_scatterv and all_gatherv assert len(sizes) == world_size
// (distributed/parallel_state.py @0005973a), so a list of another length
// fails on every member: the collective cannot complete.
#include "seam/properties/call_arguments.h"

#include <set>
#include <string>
#include <tuple>

#include "op_violation.h"

namespace seam::properties {

namespace {

bool takesSizes(OpKind kind) {
  return kind == OpKind::kReduceScatterv || kind == OpKind::kAllGatherv;
}

/// The length of the sizes list an op is passed, counted from the case.
int sizesLength(const Op& op, const ParallelConfig& cfg) {
  switch (op.sizes) {
    case SplitSizes::kPerDpShard:
      return cfg.attn_dp;
    case SplitSizes::kPerMember:
      break;
  }
  return groupSizeOf(cfg, op.groupAxis());
}

}  // namespace

std::vector<Violation> checkCallArguments(const Plan& plan) {
  const ParallelConfig& cfg = plan.source.config;
  std::vector<Violation> out;
  std::set<std::tuple<int, int, int, int>> seen;  // (stack, stage, phase, kind) sites reported
  for (int r = 0; r < plan.world(); ++r) {
    const std::vector<Op>& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      if (!takesSizes(op.kind) || !op.hasGroup()) continue;
      const int members = groupSizeOf(cfg, op.groupAxis());
      const int given = sizesLength(op, cfg);
      if (given == members) continue;
      if (!seen.insert({op.stack, op.stage, static_cast<int>(op.phase), static_cast<int>(op.kind)})
               .second)
        continue;
      Violation v = opViolation(
          plan, r, i, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
          std::string(opName(op.kind)) + " over " + std::string(axisName(op.groupAxis())) + " (" +
              std::to_string(members) + " ranks) is passed " + std::to_string(given) +
              " sizes, one per attention-DP shard: the call needs one per member, so it fails on "
              "every rank of the group");
      out.push_back(std::move(v));
    }
  }
  return out;
}

}  // namespace seam::properties
