// Two-batch overlap (tbo.h; docs/research/serving-dp-gather-tbo.md): the
// layers that run per half are planned by two half builders, the same case
// on each half's batch; a rank's program splits the batch at the first TBO
// stage, interleaves the halves' ops in the engine's issue order and merges
// the halves before the final norm.
#include <cassert>
#include <memory>
#include <vector>

#include "plan_builder.h"
#include "seam/sim/plan/tbo.h"

namespace seam::policy_detail {

void PlanBuilder::makeHalves() {
  tbo_split_ = tboSplit(c_.batch);
  halves_ = std::make_unique<Halves>();
  for (int k = 0; k < 2; ++k) {
    Case& half_case = halves_->cases[k];
    half_case = c_;
    half_case.batch =
        tboHalfBatch(cfg_, c_.batch, attention_pad_, tbo_split_, k == 0 ? Half::kA : Half::kB);
    halves_->builders[k] = std::make_unique<PlanBuilder>(half_case, schema_, policy());
    half(k).tbo_half_ = policy() == PolicyKind::kDeclared;
    const Status st = half(k).decide();
    assert(st.isOk() &&
           "a half is refused exactly when its batch is (refuse() does not read the batch's size)");
    (void)st;
  }
}

DpBuffer PlanBuilder::dpGatherBuffer() const {
  // filter_batch (two_batch_overlap.py @0099dee6) gives a child
  // global_dp_buffer_len None, or its own token range (end - start) under
  // moe_dense_tp_size 1, and no global token list; _StageExecutor.next
  // (operations.py @04bb08ae) publishes exactly that before every stage, so
  // the half's dp_gather (layer_boundary/ops.py @01b5f572) asks
  // get_global_dp_buffer for a buffer of that length. The legacy policy's
  // parent-era executor skipped the publish when the length was None (the
  // guard that sglang PR #13730 removed); it keeps the gathered buffer.
  return c_.flags.dense_tp1 ? DpBuffer::kChildRows : DpBuffer::kUnset;
}

void PlanBuilder::emitHalfOps(int r, std::vector<Op>* ops, std::vector<int>* chunks) {
  const int first = tboFirstStage();
  const int n = static_cast<int>(stacks_[0].size());
  const TboSchedule schedule = tboSchedule(c_.flags.mode);
  for (const Decided& d : decided_) {
    if (d.stack != 0 || d.to < first) continue;
    if (d.to > first) emitExit(r, d);
    if (d.to < n) emitEntry(r, d);
  }
  ops->swap(plan_.ranks[r]);
  chunks->resize(ops->size());
  for (size_t i = 0; i < ops->size(); ++i)
    (*chunks)[i] = tboChunk((*ops)[i], first / spl_, schedule);
}

void PlanBuilder::emitTbo(int r, const Decided& edge, const Decided& last) {
  std::vector<Op>& out = plan_.ranks[r];
  if (edge.from >= 0) emitExit(r, edge);
  const std::int64_t row_bytes = activationRowBytes(c_.model.shape);
  const int first = tboFirstStage();
  const int n = static_cast<int>(stacks_[0].size());
  // One half's rows cut from (kSlice) or added back into (kAdd) the whole batch.
  auto move = [&](OpKind kind, Tensor tensor, int k, int stage, Phase phase, RowKind rows) {
    Op op;
    op.layer = static_cast<std::int16_t>(stage / spl_);
    op.stage = static_cast<std::int16_t>(stage);
    op.phase = phase;
    op.kind = kind;
    op.tensor = tensor;
    const Rows whole{rows, rows_.count(rows, r)};
    const Rows part{rows, half(k).rows_.count(rows, r)};
    op.rows_in = kind == OpKind::kSlice ? whole : part;
    op.rows_out = kind == OpKind::kSlice ? part : whole;
    op.bytes = part.count * row_bytes;
    op.half = k == 0 ? Half::kA : Half::kB;
    op.tbo_move = true;
    out.push_back(op);
  };
  // The split (B3, tbo_split_moves): attention rows are cut as they are;
  // local rows are completed and gathered for the whole batch first
  // (update_attn_tp_gather_output: hs += residual, AG(attn_tp), residual
  // := None), then each half takes its attention-TP slice.
  const bool local = edge.hand.handoff.rows == RowKind::kLocal && a_ > 1;
  bool residual = edge.hand.handoff.residual;
  if (local) {
    emit(r, 0, first, Phase::kEntry,
         {OpKind::kAdd, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
    emit(r, 0, first, Phase::kEntry,
         {OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kAttnTp),
          RowKind::kLocal, RowKind::kAttention});
    residual = false;
  }
  // _model_forward_filter_inputs cuts child A's hidden state and residual,
  // then child B's (each zero-padded to its tbo_padded_len).
  for (int k = 0; k < 2; ++k) {
    for (Tensor t : {Tensor::kHidden, Tensor::kResidual}) {
      if (t == Tensor::kResidual && !residual) continue;
      move(OpKind::kSlice, t, k, first, Phase::kEntry, RowKind::kAttention);
    }
  }
  std::vector<Op> ops[2];
  std::vector<int> chunks[2];
  for (int k = 0; k < 2; ++k) {
    if (local) {
      half(k).emit(
          r, 0, first, Phase::kEntry,
          {OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention, RowKind::kLocal});
    }
    half(k).emitHalfOps(r, &ops[k], &chunks[k]);
    for (Op& op : ops[k]) op.half = k == 0 ? Half::kA : Half::kB;
  }
  const TboSchedule schedule = tboSchedule(c_.flags.mode);
  const int layers = (n - first) / spl_;
  interleaveHalves(ops[0], chunks[0], ops[1], chunks[1], layers * schedule.yields_per_layer + 1,
                   schedule.delta, &out);
  // The merge: each half's real rows back into the whole batch; no collective.
  assert(last.hand.handoff.rows == RowKind::kAttention &&
         "the last TBO layer hands on attention rows");
  for (Tensor t : {Tensor::kHidden, Tensor::kResidual}) {
    if (t == Tensor::kResidual && !last.hand.handoff.residual) continue;
    for (int k = 0; k < 2; ++k) move(OpKind::kAdd, t, k, n - 1, Phase::kExit, RowKind::kAttention);
  }
  emitEntry(r, last);  // the final norm, on the merged tensor
}

}  // namespace seam::policy_detail
