#include "seam/sim/plan/lane_rows.h"

#include "seam/sim/plan/tbo.h"

namespace seam {

namespace {

DpPadding otherPadding(DpPadding mode) {
  return mode == DpPadding::kMaxLen ? DpPadding::kSumLen : DpPadding::kMaxLen;
}

}  // namespace

LaneRows::LaneRows(const Topology& topo, const Plan& plan, const Batch& batch,
                   const std::vector<int>* first_tokens)
    : rows(topo, batch, plan.padding, plan.cp_layout, first_tokens, plan.local_split),
      other_rows(topo, batch, otherPadding(plan.padding), plan.cp_layout, first_tokens,
                 plan.local_split),
      dp(plan.source.config, batch, plan.padding, plan.source.flags.dp_gatherv, plan.cp_layout) {}

std::vector<LaneRows> laneRowsOf(const Plan& plan, const Topology& topo) {
  std::vector<LaneRows> lanes;
  lanes.reserve(kHalfLanes);
  lanes.emplace_back(topo, plan, plan.source.batch, nullptr);
  for (int lane = 1; !plan.tbo_split.empty() && lane < kHalfLanes; ++lane) {
    const Half half = static_cast<Half>(lane);
    const std::vector<int> first = tboFirstTokens(plan.source.batch, plan.tbo_split, half);
    lanes.emplace_back(topo, plan, tboHalfBatch(plan.source.batch, plan.tbo_split, half), &first);
  }
  return lanes;
}

HalfRows halfRows(const std::vector<LaneRows>& lanes, int rank, Half half) {
  HalfRows h;
  h.total = lanes.front().rows.count(RowKind::kAttention, rank);
  const int lane = static_cast<int>(half);
  if (lane == 0 || lane >= static_cast<int>(lanes.size())) {
    h.count = h.total;
    return h;
  }
  h.offset = half == Half::kB ? lanes[1].rows.count(RowKind::kAttention, rank) : 0;
  h.count = lanes[lane].rows.count(RowKind::kAttention, rank);
  return h;
}

}  // namespace seam
