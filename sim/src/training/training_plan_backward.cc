// The training planner's backward (training_plan_builder.h): per rank, the
// conjugate of each forward op in reverse (§4.1), with each layer's gradient
// reductions where the engine issues them (FSDP reduce-scatter hooks;
// Megatron's finalize_model_grads TP all-reduce and DDP over dp x cp), and
// the gradient tensors those ops read and write.
#include <algorithm>
#include <iterator>
#include <string>

#include "training/training_plan_builder.h"

namespace seam::training {

/// Megatron's backward (PrimeRL's: training_plan_fsdp.cc): the conjugates
/// in reverse, a column-parallel GEMM's sequence-parallel input gathered
/// again for its weight gradient, and the gradient reductions of
/// finalize_model_grads after the whole backward.
void Builder::backward() {
  for (int r = 0; r < W(); ++r) {
    std::vector<TrainingOp> bwd;
    const std::vector<TrainingOp>& f = fwd_[r];
    std::vector<char> done(f.size(), 0);
    for (int i = static_cast<int>(f.size()) - 1; i >= 0; --i) {
      if (done[i]) continue;
      if (f[i].kernel == Kernel::kAttention && k().p2pRing()) {
        attentionRingBackward(f, i, r, bwd, done);
        continue;
      }
      if (f[i].kernel == Kernel::kAttention && k().attentionA2a()) {
        attentionA2aBackward(f, i, r, bwd, done);
        continue;
      }
      // TE's QKVO all-to-all backward sends the saved output to the head
      // layout again (seq->head) before the output gradient's all-to-all.
      if (f[i].kind == OpKind::kAllToAll && f[i].step == kA2aOut) {
        TrainingOp again = f[i];
        again.recompute = true;
        again.a2a = A2aMode::kSeqToHead;
        std::swap(again.reads, again.writes);
        again.step = "cp a2a seq->head saved attn out";
        bwd.push_back(std::move(again));
      }
      if (f[i].kernel == Kernel::kAttention && k().cp > 1) {
        attentionCpBackward(f, i, r, bwd, done);
        continue;
      }
      // TE LayerNormLinear / Linear (and ColumnParallelLinear) backward under
      // SP: the saved local input is all-gathered again before the dgrad GEMM,
      // whose reduce-scatter (the conjugate of the forward gather) follows.
      if (f[i].kind == OpKind::kCompute && i > 0 && f[i - 1].step == "sp all-gather" &&
          !f[i].reads.empty() && f[i].reads[0] == f[i - 1].writes[0]) {
        TrainingOp again = f[i - 1];
        again.recompute = true;
        again.step = "sp all-gather (backward, for wgrad)";
        bwd.push_back(std::move(again));
      }
      bool keep = false;
      TrainingOp b = conjugate(f[i], i, r, &keep);
      if (keep) bwd.push_back(std::move(b));
    }
    finalizeGrads(bwd, r);
    fwd_[r].insert(fwd_[r].end(), std::make_move_iterator(bwd.begin()),
                   std::make_move_iterator(bwd.end()));
  }
}

/// TE's AttnFuncWithCPAndKVAllGather.backward on rank r for the attention
/// kernel at forward index i: K and V all-gathered again over cp, the
/// kernel's backward, then dK and dV reduce-scattered in that order (the
/// forward gathers marked done).
void Builder::attentionCpBackward(const std::vector<TrainingOp>& f, int i, int r,
                                  std::vector<TrainingOp>& bwd, std::vector<char>& done) {
  std::vector<int> gathers;  // the forward K and V all-gathers, in forward order
  for (int j = i - 1; j >= 0 && f[j].layer == f[i].layer; --j) {
    if (f[j].kind == OpKind::kAllGather && !f[j].reads.empty() && f[j].axis == TrainAxis::kCp)
      gathers.insert(gathers.begin(), j);
  }
  for (int j : gathers) {
    TrainingOp again = f[j];
    again.recompute = true;
    again.step += " (backward)";
    bwd.push_back(std::move(again));
  }
  bool keep = false;
  TrainingOp b = conjugate(f[i], i, r, &keep);
  if (keep) bwd.push_back(std::move(b));
  for (int j : gathers) {
    bwd.push_back(conjugate(f[j], j, r, &keep));
    done[j] = 1;
  }
}

namespace {
/// The name of the reduce-scatter that undoes all-gather `f` in backward.
std::string gatherBackwardStep(const TrainingOp& f) {
  if (f.step == kProbsGather) return "etp reduce-scatter probs grads";
  if (f.step == kProbsGatherTpEp) return "tp_ep reduce-scatter probs grads";
  if (f.reads.empty()) return "cp reduce-scatter logprobs grads";
  if (f.step == "sp all-gather") return "sp reduce-scatter (dgrad)";
  if (f.axis == TrainAxis::kCp) return "cp reduce-scatter dkv";
  return f.axis == TrainAxis::kTpEp ? "tp_ep reduce-scatter token grads"
                                    : "etp reduce-scatter token grads";
}
}  // namespace

/// The backward of forward op `f` (the index-th of rank r); *keep false when
/// it has none (FSDP parameter gathers, parameter slices, ops the gradients
/// need no conjugate of).
TrainingOp Builder::conjugate(const TrainingOp& f, int index, int r, bool* keep) {
  *keep = true;
  TrainingOp b = f;
  b.pass = Pass::kBackward;
  b.conj_of = index;
  b.reads.clear();
  b.writes.clear();
  auto g = [&](int buf) { return static_cast<std::int16_t>(gradOf(buf)); };
  switch (f.kind) {
    case OpKind::kCompute:
      for (auto w : f.writes) b.reads.push_back(g(w));
      for (auto rd : f.reads) b.writes.push_back(g(rd));
      b.bytes = 0;
      for (auto w : b.writes) b.bytes += cells_[w][r] * plan_.tensors[w].unit_bytes;
      return b;
    case OpKind::kAllToAll:
      if (f.reads.empty()) {
        // The EP counts exchange runs under no_grad; Megatron's probs
        // all-to-all returns their gradient over the swapped splits.
        *keep = f.step == kProbsAllToAll;
        b.a2a = A2aMode::kToSource;
        std::swap(b.in_splits, b.out_splits);
        b.bytes = f.recv_bytes;
        b.recv_bytes = f.bytes;
        return b;
      }
      b.reads = {g(f.writes[0])};
      b.writes = {g(f.reads[0])};
      if (f.a2a == A2aMode::kSeqToHead) b.a2a = A2aMode::kHeadToSeq;
      if (f.a2a == A2aMode::kHeadToSeq) b.a2a = A2aMode::kSeqToHead;
      if (f.a2a == A2aMode::kToExpert || f.a2a == A2aMode::kToSource) {
        // DeepEP: dispatch.backward = combine and combine.backward = dispatch, same handle:
        // every cell goes back where it came from, in the order it left.
        b.a2a = A2aMode::kToSource;
        b.reads.push_back(f.reads[0]);
      }
      std::swap(b.in_splits, b.out_splits);
      if (!f.in_splits.empty()) {  // the backward sends what the forward received
        b.bytes = f.recv_bytes;
        b.recv_bytes = f.bytes;
      }
      return b;
    case OpKind::kAllGather:
      // Uneven gathers (expert TP) reduce-scatter with the same split sizes.
      std::swap(b.in_splits, b.out_splits);
      b.kind = OpKind::kReduceScatter;
      b.step = gatherBackwardStep(f);
      if (f.reads.empty()) {
        // An FSDP parameter all-gather (its gradient reduction is the
        // unit's) or a loss statistic; of those only the log-probs have a
        // gradient, reduce-scattered back (torch.distributed.nn all_gather),
        // and Megatron's probs gathered over expert TP or tp_ep.
        *keep = f.step == kLogprobsGather || f.step == kProbsGather || f.step == kProbsGatherTpEp;
        return b;
      }
      b.reads = {g(f.writes[0])};
      b.writes = {g(f.reads[0])};
      return b;
    case OpKind::kReduceScatter:
      std::swap(b.in_splits, b.out_splits);
      b.kind = OpKind::kAllGather;
      b.reads = {g(f.writes[0])};
      b.writes = {g(f.reads[0])};
      b.step = f.axis == TrainAxis::kExpertTp ? "etp all-gather expert output grads"
               : f.axis == TrainAxis::kTpEp   ? "tp_ep all-gather expert output grads"
                                              : "sp all-gather (grad)";
      b.bytes = f.bytes;
      return b;
    case OpKind::kSlice:
    case OpKind::kAdd:
      switch (f.transform) {
        case Transform::kSliceParam:
          *keep = false;  // the gradient lands in the slice (the kernels write it there)
          return b;
        case Transform::kRepeat:
          b.kind = OpKind::kAdd;
          b.transform = Transform::kSumRepeats;
          b.step = "sum repeated grads";
          b.reads = {g(f.writes[0])};
          b.writes = {g(f.reads[0])};
          return b;
        case Transform::kReorder: {
          b.reads = {g(f.writes[0])};
          b.writes = {g(f.reads[0])};
          std::vector<int> inv(f.perm.size());
          for (size_t i = 0; i < f.perm.size(); ++i) inv[f.perm[i]] = static_cast<int>(i);
          b.perm = std::move(inv);
          return b;
        }
        case Transform::kSumOverK:
          b.kind = OpKind::kSlice;
          b.transform = Transform::kPermute;
          b.step = "permute grads by expert";
          b.reads = {g(f.writes[0]), f.reads[0]};
          b.writes = {g(f.reads[0])};
          return b;
        case Transform::kRouteWeight:
          b.reads = {g(f.writes[0])};
          b.writes = {g(f.reads[0])};
          return b;
        case Transform::kPermute:
          b.kind = OpKind::kAdd;
          b.transform = Transform::kSumOverK;
          b.step = "sum expert grads over k";
          b.reads = {g(f.writes[0]), f.reads[0]};
          b.writes = {g(f.reads[0])};
          return b;
        default:
          *keep = false;
          return b;
      }
    default:
      *keep = false;
      return b;
  }
}

/// Megatron's finalize_model_grads on rank r, appended to `out`: DDP's
/// finish_grad_sync first (no overlap by default: one bucket of the dense
/// parameters over dp x cp, then one of the experts over expert-DP), then
/// the sequence-parallel parameters' gradients, coalesced into one
/// all-reduce over tp (_allreduce_non_tensor_model_parallel_grads). The
/// experts join the dense bucket when neither ep > 1 nor etp != tp: their
/// parameters keep allreduce = True (extensions/transformer_engine.py
/// use_expert_pgs), which is what DDP groups buffers by.
void Builder::finalizeGrads(std::vector<TrainingOp>& out, int r) {
  auto reduce = [&](TrainAxis axis, int layer_of, const std::vector<int>& params,
                    const std::string& step) {
    if (params.empty()) return;
    std::vector<int> g = lay_.group(axis, r);
    if (g.size() < 2) return;
    TrainingOp op;
    op.pass = Pass::kBackward;
    op.layer = static_cast<std::int16_t>(layer_of);
    op.kind = OpKind::kAllReduce;
    op.axis = axis;
    op.ranks = std::move(g);
    op.step = step;
    for (int p : params) op.params.push_back(static_cast<std::int16_t>(p));
    op.bytes = paramBytes(params);
    out.push_back(std::move(op));
  };
  std::vector<int> dense, experts, tp_sum;
  for (const LayerParams& lp : layer_params_) {
    dense.insert(dense.end(), lp.dense.begin(), lp.dense.end());
    experts.insert(experts.end(), lp.experts.begin(), lp.experts.end());
    tp_sum.insert(tp_sum.end(), lp.tp_sum.begin(), lp.tp_sum.end());
  }
  if (k().ep == 1 && k().expertTp() == k().tp) {
    dense.insert(dense.end(), experts.begin(), experts.end());
    experts.clear();
  }
  reduce(TrainAxis::kDpCp, -1, dense, "ddp all-reduce grads (one bucket)");
  reduce(TrainAxis::kExpertDp, -1, experts, "expert-dp all-reduce grads (one bucket)");
  reduce(TrainAxis::kTp, -1, tp_sum, "tp all-reduce sequence-parallel grads (coalesced)");
  expertBiasCounts(out, r);
}

/// Megatron's _update_router_expert_bias (finalize_model_grads.py, after the
/// gradient reductions) when moe_router_enable_expert_bias is on: every MoE
/// router's local_tokens_per_expert (fp32, one per expert) stacked and
/// all-reduced over tp x dp x cp (moe_utils.py get_updated_expert_bias).
/// Counts, not gradients: collectives-match checks it, owed-once has no sum.
void Builder::expertBiasCounts(std::vector<TrainingOp>& out, int r) {
  const auto& d = lay_.dims();
  const auto moe = std::count(d.layers.begin(), d.layers.end(), LayerKind::kMoe);
  std::vector<int> g = lay_.group(TrainAxis::kTpDpCp, r);
  if (!k().expert_bias || moe == 0 || g.size() < 2) return;
  TrainingOp op;
  op.pass = Pass::kBackward;
  op.layer = -1;
  op.kind = OpKind::kAllReduce;
  op.axis = TrainAxis::kTpDpCp;
  op.ranks = std::move(g);
  op.step = "tp_dp_cp all-reduce expert-bias token counts";
  op.bytes = static_cast<std::int64_t>(moe) * d.experts * 4;
  out.push_back(std::move(op));
}

/// The gradient tensor of a root: `d:<root>`.
int Builder::gradRoot(int rt) {
  if (plan_.tensors[rt].grad >= 0) return plan_.tensors[rt].grad;
  const TensorInfo f = plan_.tensors[rt];
  const int id = tensor("d:" + f.name, f.space, f.units, f.unit_bytes, f.layer, f.tp_split);
  plan_.tensors[rt].grad = id;
  return id;
}
/// The gradient buffer of a buffer.
int Builder::gradOf(int b) {
  if (plan_.tensors[b].grad >= 0) return plan_.tensors[b].grad;
  const int rt = root(b);
  if (rt == b) {
    const int id = gradRoot(b);
    cells_[id] = cells_[b];
    return id;
  }
  const int g = gradRoot(rt);
  const TensorInfo f = plan_.tensors[b];
  const int id = tensor("d:" + f.name, f.space, f.units, f.unit_bytes, f.layer, f.tp_split);
  plan_.tensors[id].value_of = g;
  plan_.tensors[id].reps = f.reps;
  plan_.tensors[b].grad = id;
  cells_[id] = cells_[b];
  return id;
}

/// Gradient roots: complete = every consumer's contributions.
void Builder::completeGradients() {
  for (size_t i = 0; i < plan_.tensors.size(); ++i) {
    TensorInfo& t = plan_.tensors[i];
    if (t.grad < 0 || t.value_of >= 0) continue;
    TensorInfo& g = plan_.tensors[t.grad];
    const int n = i < consumers_.size() ? consumers_[i] : 0;
    g.shards = t.routed_grad ? n : std::max(1, n);  // a routed gradient may have no plain consumer
    g.routed_grad = t.routed_grad;
    g.layer = t.layer;
    t.routed_grad = false;  // the forward value is an ordinary one; its gradient is routed
  }
  for (auto [ye, ms] : moe_sums_) plan_.tensors[ye].grad_value = plan_.tensors[ms].grad;
}

}  // namespace seam::training
