#include "seam/sim/plan/lane_rows.h"

#include "seam/sim/plan/tbo.h"

namespace seam {

namespace {

DpPadding otherPadding(DpPadding mode) {
  return mode == DpPadding::kMaxLen ? DpPadding::kSumLen : DpPadding::kMaxLen;
}

}  // namespace

LaneRows::LaneRows(const Topology& topo, const Case& c, DpPadding padding, CpLayout cp_layout,
                   LocalSplit local_split, AttentionPad pad, const Batch& batch,
                   const std::vector<int>* first_tokens)
    : rows(topo, batch, padding, cp_layout, first_tokens, local_split, pad),
      other_rows(topo, batch, otherPadding(padding), cp_layout, first_tokens, local_split, pad),
      dp(c.config, batch, padding, c.flags.dp_gatherv, cp_layout, pad) {}

std::vector<LaneRows> laneRowsOf(const Plan& plan, const Topology& topo) {
  return laneRowsOf(plan.source, plan.padding, plan.cp_layout, plan.local_split, plan.attention_pad,
                    plan.tbo_split, topo);
}

std::vector<LaneRows> laneRowsOf(const Case& c, DpPadding padding, CpLayout cp_layout,
                                 LocalSplit local_split, AttentionPad pad,
                                 const std::vector<int>& tbo_split, const Topology& topo) {
  std::vector<LaneRows> lanes;
  lanes.reserve(kHalfLanes);
  lanes.emplace_back(topo, c, padding, cp_layout, local_split, pad, c.batch, nullptr);
  for (int lane = 1; !tbo_split.empty() && lane < kHalfLanes; ++lane) {
    const Half half = static_cast<Half>(lane);
    const std::vector<int> first = tboFirstTokens(c.batch, tbo_split, half);
    lanes.emplace_back(topo, c, padding, cp_layout, local_split, pad,
                       tboHalfBatch(c.config, c.batch, pad, tbo_split, half), &first);
  }
  return lanes;
}

DpLayouts dpLayoutsOf(const Plan& plan, Half half) {
  const Case& c = plan.source;
  return DpLayouts(c.config,
                   tboHalfBatch(c.config, c.batch, plan.attention_pad, plan.tbo_split, half),
                   plan.padding, c.flags.dp_gatherv, plan.cp_layout, plan.attention_pad);
}

HalfRows halfRows(const std::vector<LaneRows>& lanes, int rank, Half half) {
  HalfRows h;
  h.total = lanes.front().rows.count(RowKind::kAttention, rank);
  const int lane = static_cast<int>(half);
  if (lane == 0 || lane >= static_cast<int>(lanes.size())) {
    h.count = h.taken = h.total;
    return h;
  }
  // The split token: child A's tokens (its sequence rows).
  const int split = lanes[1].rows.count(RowKind::kSequence, rank);
  h.offset = half == Half::kB ? split : 0;
  h.taken = half == Half::kB ? h.total - split : split;
  h.count = lanes[lane].rows.count(RowKind::kAttention, rank);
  return h;
}

}  // namespace seam
