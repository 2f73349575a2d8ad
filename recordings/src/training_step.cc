// What a training run's step issues outside the model's forward and
// backward, as a recording shows it (docs/recordings.md#training-recordings).
//
// PrimeRL (PrimeIntellect-ai/prime-rl @559b447), trainer/rl/train.py `train`:
// after the micro-batches' backward, `clip_grad_norm_` (trainer/utils.py)
// runs whenever optim.max_norm is set (default 1.0; None under the DeepEP
// backend, configs/trainer.py), through torchtitan's `clip_grad_norm_`
// (distributed/utils.py @23e4dfc). With EP, `_clip_grad_norm_with_ep` takes
// the experts' gradient norm, then the other parameters', each a DTensor
// whose placements are partial on every mesh dimension the gradients are
// sharded over; `full_tensor()` reduces each such dimension in mesh order
// (pytorch torch/distributed/tensor/_redistribute.py @012e4b96
// `generate_greedy_transform_infos`: Partial -> Replicate per dimension, one
// all-reduce each, a dimension of one rank skipped). FSDP2 puts its own
// dimension first and the EP one after (fsdp/_fully_shard/_fsdp_param.py
// @010ae4a8 `_init_sharding_spec_tp`: DeviceMesh._concatenate([dp, ep])),
// and replicates over dp_replicate under HSDP (no reduction there). Both
// are main-branch copies; prime-rl's lock pins torch 2.11.0. So: the
// experts' norm all-reduced over dp_shard_mod_ep, then over ep; the other
// parameters' over dp_shard_cp; each one fp32 element. Without EP, one
// all-reduce over dp_shard_cp. These are owed.
//
// After the optimizer step, `Tensors.compute_stats` (trainer/utils.py)
// gathers the step's metrics on the default process group:
// all_gather_object of the keys (two list all_gathers), then per key
// `flexible_all_gather` (two list all_gathers); with enable_token_export a
// barrier precedes the clipping. How many and how large depend on the run's
// metrics, so they are not owed: a call of those ops on the default process
// group, which the model never uses, is counted outside the model.
//
// Megatron-Core (NVIDIA/Megatron-LM main; stored snapshots read:
// training/training.py @001b00c `train_step`, training/utils.py,
// core/optimizer/__init__.py @0044db1 `get_megatron_optimizer`,
// core/optimizer/optimizer.py @0011998 `ChainedOptimizer`,
// core/optimizer/clip_grads.py @0293807 `get_grad_norm_fp32`,
// pretrain_mamba.py @000ab9d `loss_func`), at its defaults (Adam, bf16
// without a loss scaler, clip_grad 1.0, no distributed optimizer, no
// log_num_zeros_in_grad, pp 1). The optimizer is a ChainedOptimizer of the
// dense parameters' optimizer (grad-stats group: the model-parallel group,
// tp x pp) and, when the experts leave the dense buffer (ep > 1 or etp !=
// tp: use_expert_pgs), the experts' (tp_ep_pp). Its step asks each for its
// gradient norm (the groups are distinct objects, so never "shared"): one
// fp32 all-reduce over each group, dense first. train_step then all-reduces
// update_successful (int32, logical_and_across_model_parallel_group) and the
// norm (fp32 max, reduce_max_stat_across_model_parallel_group) over the
// model-parallel group, and, on the last pipeline stage, each loss report
// ([loss sum, tokens]: 'lm loss', two fp32) over dp x cp. Megatron issues
// these on a group of one rank too; seam's plans owe no call on a group of
// one rank, so neither does this (docs/limitations.md).
#include <string_view>

#include "align_core.h"

namespace seam::recordings {

namespace {

/// fp32: the gradient norm is one float element.
constexpr std::int64_t kNormBytes = 4;
/// Megatron's update_successful flag: one int32.
constexpr std::int64_t kFlagBytes = 4;
/// Megatron's loss report: the loss sum and the token count, two fp32.
constexpr std::int64_t kLossBytes = 8;

/// The members of `rank`'s group on `axis`, as the plan's ops there name
/// them (those that issue a call, so the group is one the judge maps);
/// empty when none (a group of one rank).
std::vector<int> groupOn(const std::vector<TrainingOp>& ops, TrainAxis axis) {
  for (const TrainingOp& op : ops)
    if (op.axis == axis && issuesCall(op)) return op.ranks;
  return {};
}

}  // namespace

bool issuesCall(const TrainingOp& op) {
  return op.hasGroup() && op.ranks.size() > 1 && callKindOf(op.kind).has_value();
}

std::vector<StepCall> stepLevelCalls(const TrainingPlan& plan, int rank) {
  std::vector<StepCall> out;
  const TrainingConfig& k = plan.source.config;
  const auto& ops = plan.ranks[rank];
  const auto add = [&](TrainAxis axis, const char* what, std::int64_t bytes = kNormBytes) {
    std::vector<int> group = groupOn(ops, axis);
    if (!group.empty()) out.push_back({CallKind::kAllReduce, std::move(group), bytes, what});
  };
  if (k.layout == TrainingLayout::kMegatron) {
    add(TrainAxis::kTp, "get_grad_norm_fp32: the dense parameters' gradient norm (tp)");
    const bool expert_optimizer = plan.source.model != nullptr && plan.source.model->hasMoe() &&
                                  (k.ep > 1 || k.expertTp() != k.tp);
    if (expert_optimizer)
      add(TrainAxis::kTpEp, "get_grad_norm_fp32: the experts' gradient norm (tp_ep)");
    add(TrainAxis::kTp, "train_step: update_successful, logical and (tp)", kFlagBytes);
    add(TrainAxis::kTp, "train_step: the gradient norm, max (tp)");
    add(TrainAxis::kDpCp, "train_step: the 'lm loss' report, [sum, tokens] (dp_cp)", kLossBytes);
    return out;
  }
  if (k.deepep) return out;
  if (k.ep > 1) {
    add(TrainAxis::kExpertDp, "clip_grad_norm_: the experts' gradient norm (dp_shard_mod_ep)");
    add(TrainAxis::kEp, "clip_grad_norm_: the experts' gradient norm (ep)");
    add(TrainAxis::kFsdp, "clip_grad_norm_: the other parameters' gradient norm (dp_shard_cp)");
  } else {
    add(TrainAxis::kFsdp, "clip_grad_norm_: the gradient norm (dp_shard_cp)");
  }
  return out;
}

bool outsideTheModel(const TrainingPlan& plan, const RecordedGroup& group,
                     const RecordedCall& call) {
  if (plan.source.config.layout != TrainingLayout::kPrimeRl || !group.default_pg) return false;
  std::string_view op = call.op;
  if (const auto colon = op.find(':'); colon != std::string_view::npos) op.remove_prefix(colon + 1);
  return op == "all_gather" || op == "all_reduce_barrier" || op == "barrier";
}

}  // namespace seam::recordings
