// Property 4 on call arguments (call_arguments.h). GroupCoordinator's
// reduce_scatterv and all_gatherv assert len(sizes) == world_size
// (distributed/parallel_state.py @0005973a), so a list of another length
// fails on every member: the collective cannot complete. FlashInfer's fused
// all-reduce + add + RMSNorm (flashinfer_allreduce_residual_rmsnorm,
// layers/flashinfer_comm_fusion.py @00f6ebe5) asserts that its input has at
// most max_token_num rows, 2048 unless the caller passes another, and the
// caller (complete_attention_input's forward_with_allreduce_fusion) passes
// none: a fused call on more rows fails on every member. A DP gather
// allocates its output with get_global_dp_buffer, torch.empty of the
// published global_dp_buffer_len rows (layers/dp_attention.py @00161092): a
// length of None raises on every rank, and a TBO child's own token range
// cannot hold the gather of every DP shard (all_gather_into_tensor wants
// tp times the input; the all-reduce path reads the child's global token
// list, which is None).
#include "seam/properties/call_arguments.h"

#include <set>
#include <string>
#include <tuple>

#include "op_violation.h"
#include "seam/sim/replay/judge_rows.h"
#include "static_judges.h"

namespace seam::properties {

namespace {

/// The rows FlashInfer's fused kernel accepts: its max_token_num default.
/// The judge's own constant, not the planner's gate (which decides where to
/// fuse; this is what the kernel can run).
constexpr int kFusedKernelMaxRows = 2048;

bool takesSizes(OpKind kind) {
  return kind == OpKind::kReduceScatterv || kind == OpKind::kAllGatherv;
}

/// The length of the sizes list an op is passed, counted from the case.
int sizesLength(const Op& op, const JudgeGroups& groups) {
  switch (op.sizes) {
    case SplitSizes::kPerDpShard:
      return groups.config().attn_dp;
    case SplitSizes::kPerMember:
      break;
  }
  return groups.groupSize(op.groupAxis());
}

/// What in `op`'s arguments makes its call fail (kNone: nothing); group
/// sizes are the judges' (JudgeGroups, asked for at the first call that takes sizes).
enum class ArgumentFault { kNone, kFusedRows, kNoDpBuffer, kChildDpBuffer, kSizes };
ArgumentFault argumentFault(const Op& op, const ParallelConfig& cfg, JudgeScratch& scratch) {
  if (op.kind == OpKind::kArAddNorm && op.rows_in.count > kFusedKernelMaxRows)
    return ArgumentFault::kFusedRows;
  if (op.dp_buffer == DpBuffer::kUnset) return ArgumentFault::kNoDpBuffer;
  if (op.dp_buffer == DpBuffer::kChildRows) return ArgumentFault::kChildDpBuffer;
  if (!takesSizes(op.kind) || !op.hasGroup()) return ArgumentFault::kNone;
  const JudgeGroups& groups = scratch.groups(cfg);
  return sizesLength(op, groups) == groups.groupSize(op.groupAxis()) ? ArgumentFault::kNone
                                                                     : ArgumentFault::kSizes;
}

/// Why `fault` makes `op`'s call fail, in words.
std::string faultText(ArgumentFault fault, const Op& op, const JudgeGroups& groups) {
  switch (fault) {
    case ArgumentFault::kNone:
      break;
    case ArgumentFault::kFusedRows:
      return "the fused all-reduce + add + RMSNorm runs on " + std::to_string(op.rows_in.count) +
             " rows; FlashInfer's kernel takes at most " + std::to_string(kFusedKernelMaxRows) +
             " (max_token_num), so the call fails on every member";
    case ArgumentFault::kNoDpBuffer:
      return std::string(opName(op.kind)) +
             " is passed no global DP buffer (global_dp_buffer_len None in a two-batch-overlap "
             "half): get_global_dp_buffer cannot allocate it, so the gather fails on every rank";
    case ArgumentFault::kChildDpBuffer:
      return std::string(opName(op.kind)) +
             " is passed a global DP buffer of the half's own token range, not of every DP "
             "shard's rows, and no global token list: the gather cannot fit its group";
    case ArgumentFault::kSizes:
      return std::string(opName(op.kind)) + " over " + std::string(axisName(op.groupAxis())) +
             " (" + std::to_string(groups.groupSize(op.groupAxis())) + " ranks) is passed " +
             std::to_string(sizesLength(op, groups)) +
             " sizes, one per attention-DP shard: the call needs one per member, so it fails on "
             "every rank of the group";
  }
  return "";
}

}  // namespace

std::vector<Violation> checkCallArguments(const Plan& plan) {
  JudgeScratch scratch;
  scratch.same_ops.compare(plan);
  return checkCallArguments(plan, scratch);
}

std::vector<Violation> checkCallArguments(const Plan& plan, JudgeScratch& scratch) {
  std::vector<Violation> out;
  std::set<std::tuple<int, int, int, int>> seen;  // (stack, stage, phase, kind) sites reported
  for (int r = 0; r < plan.world(); ++r) {
    // The rank before's ops: every site they fail at is reported already.
    if (scratch.same_ops.asBefore(r)) continue;
    const std::vector<Op>& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const Op& op = ops[i];
      const ArgumentFault fault = argumentFault(op, plan.source.config, scratch);
      if (fault == ArgumentFault::kNone) continue;
      if (!seen.insert({op.stack, op.stage, static_cast<int>(op.phase), static_cast<int>(op.kind)})
               .second)
        continue;
      out.push_back(opViolation(plan, r, i, Property::kCollectivesMatch,
                                ViolationClass::kCollectiveMismatch,
                                faultText(fault, op, scratch.groups(plan.source.config))));
    }
  }
  return out;
}

}  // namespace seam::properties
