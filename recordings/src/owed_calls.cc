// The collectives a plan owes one rank, as a recording would show them: a
// collective op as itself, a DP op as the collectives the judges' own
// lowering issues (judge_dp.h, what dp_attention.py runs; never the
// planner's lowerDpOp), in elements (rows times the hidden size: every
// activation the plan moves is one row of h elements). Groups, the rank's
// place in them and the DP buffers are the judges' (judge_rows.h,
// judge_geometry.h), as the ledger and property 4 take them.
#include <algorithm>
#include <iterator>

#include "align_core.h"
#include "seam/sim/replay/judge_dp.h"

namespace seam::recordings {

namespace {

/// SGLang's custom all-reduce (distributed/device_communicators/
/// custom_all_reduce.py `CustomAllreduce`, `should_custom_ar`): groups of
/// these sizes, inputs under 8 MiB whose size is a multiple of 16 bytes (on
/// CUDA; one node, NVLink between every pair beyond two ranks, which a
/// recording does not say: --custom-all-reduce off when the run lacked it).
constexpr int kCustomArGroupSizes[] = {2, 4, 6, 8};
constexpr std::int64_t kCustomArMaxBytes = std::int64_t{8192} * 1024;
constexpr std::int64_t kCustomArAlignBytes = 16;

/// The route GroupCoordinator picks (parallel_state.py @0005973a):
/// `all_reduce` takes custom all-reduce first when it applies, else NCCL;
/// `all_gatherv` and `reduce_scatterv` always run on the pynccl
/// communicator (pynccl.py @06c48ca8: grouped ncclBroadcast / ncclReduce
/// calls, one per member, or one ncclAllGather when every member's size is
/// the same); the fused kernel is the plan's own op.
Route routeOf(OpKind op, CallKind call, int group_size, std::int64_t bytes,
              const RecordingRoutes& routes) {
  if (routes.sees_kernels) return Route::kNccl;
  if (op == OpKind::kArAddNorm) return Route::kFusedKernel;
  if (call == CallKind::kAllGatherv || call == CallKind::kReduceScatterv)
    return routes.sees_pynccl ? Route::kNccl : Route::kPynccl;
  if (call != CallKind::kAllReduce || !routes.custom_all_reduce) return Route::kNccl;
  const bool size_fits = std::find(std::begin(kCustomArGroupSizes), std::end(kCustomArGroupSizes),
                                   group_size) != std::end(kCustomArGroupSizes);
  if (size_fits && bytes < kCustomArMaxBytes && bytes % kCustomArAlignBytes == 0)
    return Route::kCustomAllReduce;
  return Route::kNccl;
}

std::int64_t rowElements(const Plan& plan) {
  const int h = plan.source.model.shape.hidden;
  return h > 0 ? h : 1;
}

void addOp(const Plan& plan, const JudgeGroups& groups, int rank, int i, int pass,
           std::int64_t row_bytes, const RecordingRoutes& routes, std::vector<OwedCall>* out) {
  const Op& op = plan.ranks[rank][i];
  const auto kind = callKindOf(op.kind);
  if (!kind || !op.hasGroup() || groups.groupSize(op.groupAxis()) == 1) return;
  const std::int64_t h = rowElements(plan);
  OwedCall c;
  c.kind = *kind;
  c.axis = op.axis;
  c.group = op.axis;
  c.in_size = op.rows_in.count * h;
  c.out_size = op.rows_out.count * h;
  // An all-to-all's split depends on the routing, which no recording holds.
  c.in_known = c.out_known = *kind != CallKind::kAllToAll;
  c.op_index = i;
  c.pass = pass;
  const int me = groups.rankIn(op.groupAxis(), rank);
  if (*kind == CallKind::kSend) c.peer = me + 1, c.out_size = c.in_size;
  if (*kind == CallKind::kRecv) c.peer = me - 1, c.in_size = c.out_size;
  c.route = routeOf(op.kind, c.kind, groups.groupSize(op.groupAxis()), op.rows_in.count * row_bytes,
                    routes);
  out->push_back(c);
}

}  // namespace

ServingJudge::ServingJudge(const Plan& plan)
    : groups(plan.source.config), geometry(judgeGeometry(plan.source)) {
  // Whether the batch runs split is the plan's (its ops run on halves);
  // where it splits is the judges' (the ledger's rule, replay_run.h).
  const std::vector<int>& split =
      plan.tbo_split.empty() || geometry.tbo_split.empty() ? plan.tbo_split : geometry.tbo_split;
  lanes = judgeLanes(plan.source, groups, geometry, split);
}

std::vector<OwedCall> owedCalls(const Plan& plan, int rank, int passes,
                                const RecordingRoutes& routes) {
  return owedCalls(plan, ServingJudge(plan), rank, passes, routes);
}

std::vector<OwedCall> owedCalls(const Plan& plan, const ServingJudge& judge, int rank, int passes,
                                const RecordingRoutes& routes) {
  std::vector<OwedCall> out;
  const JudgeGroups& groups = judge.groups;
  const std::int64_t row_bytes = judge.geometry.row_bytes;
  const std::int64_t h = rowElements(plan);
  const int i_tp = groups.rankIn(Axis::kAttnTp, rank), i_cp = groups.rankIn(Axis::kAttnCp, rank),
            i_dp = groups.rankIn(Axis::kAttnDp, rank);
  DpLowering steps;
  const auto& ops = plan.ranks[rank];
  for (int pass = 0; pass < passes; ++pass) {
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      if (!(isDpOp(op.kind) && communicates(op.kind))) {
        addOp(plan, groups, rank, i, pass, row_bytes, routes, &out);
        continue;
      }
      const auto lane = static_cast<std::size_t>(op.half);
      // A half the judges do not split, or rows of neither padding mode:
      // the ledger and property 9 report the plan.
      if (lane >= judge.lanes.size()) continue;
      const JudgeDpBuffer* buffer = judge.lanes[lane].dpOfFullRows(dpFullRowsOf(op));
      if (buffer == nullptr) continue;
      judgeLowerDp(op, groups.config(), *buffer, i_tp, i_cp, i_dp, row_bytes, &steps);
      for (const DpStep& s : steps) {
        const auto axis = static_cast<Axis>(s.axis);
        if (!isCollectiveStep(s.kind) || groups.groupSize(axis) == 1) continue;
        OwedCall c;
        c.kind = *callKindOf(s.opKind());
        c.axis = s.axis;
        c.group = s.axis;
        c.in_size = s.rows_in * h;
        c.out_size = s.rows_out * h;
        c.op_index = i;
        c.pass = pass;
        c.route = routeOf(op.kind, c.kind, groups.groupSize(axis), s.rows_in * row_bytes, routes);
        out.push_back(c);
      }
    }
  }
  return out;
}

std::string_view routeName(Route route) {
  switch (route) {
    case Route::kNccl:
      return "nccl";
    case Route::kCustomAllReduce:
      return "custom all-reduce";
    case Route::kFusedKernel:
      return "fused all-reduce + add + RMSNorm";
    case Route::kPynccl:
      return "pynccl";
    case Route::kDeepEp:
      return "DeepEP";
  }
  return "?";
}

std::string describeOwed(const Plan& plan, int rank, const OwedCall& owed) {
  const Op& op = plan.ranks[rank][owed.op_index];
  const std::int64_t h = rowElements(plan);
  std::string s = "layer " + std::to_string(op.layer) + " stage " + std::to_string(op.stage);
  if (op.stack == 1) s += " of the MTP step";
  s += ' ';
  s += phaseName(op.phase);
  s += ' ';
  s += opName(op.kind);
  if (isDpOp(op.kind)) {
    s += " (its ";
    s += callKindName(owed.kind);
    s += ')';
  }
  s += " over ";
  s += axisName(static_cast<Axis>(owed.axis));
  s += ", " + std::to_string(owed.in_size / h) + " rows in, " + std::to_string(owed.out_size / h) +
       " out";
  if (op.phase != Phase::kCompute) {
    const int from = op.phase == Phase::kEntry ? op.stage - 1 : op.stage;
    s += " (boundary " + std::to_string(from) + "->" + std::to_string(from + 1) + ")";
  }
  if (owed.pass > 0) s += ", pass " + std::to_string(owed.pass + 1);
  return s;
}

}  // namespace seam::recordings
