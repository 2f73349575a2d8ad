// Emission: the decided boundaries instantiated per rank with that rank's
// row counts (the ops of each entry, compute and exit, pipeline sends and
// receives, aux captures) and each op's byte count. The planner's hot path.
#include <algorithm>

#include "plan_builder.h"

namespace seam::policy_detail {

inline std::int64_t PlanBuilder::bytesOf(const Step& s, int rank) const {
  const std::int64_t row_bytes = activationRowBytes(c_.model.shape);
  const int in = rows_.count(s.in, rank);
  const int out = rows_.count(s.out, rank);
  if (local_split_ == LocalSplit::kPaddedEqual &&
      (s.kind == OpKind::kAllGather || s.kind == OpKind::kReduceScatter) &&
      (s.in == RowKind::kLocal || s.out == RowKind::kLocal)) {
    // The gathered (or padded, reduce-scattered) buffer: equal padded shards
    // over the collective's group (attn_tp; tp for LayerNorm SP and the
    // input-scattered latents, where the two are one group).
    return static_cast<std::int64_t>(a_) * rows_.count(RowKind::kLocal, rank) * row_bytes;
  }
  switch (s.kind) {
    case OpKind::kAllGather:
    case OpKind::kAllGatherv:
    case OpKind::kDpGatherPartial:
    case OpKind::kDpGatherReplicate:
      return out * row_bytes;  // the gathered buffer
    case OpKind::kAllToAll:
      return rows_.count(RowKind::kDispatched, rank) * row_bytes;  // the group's exchanged rows
    default:
      return std::max(in, out) * row_bytes;
  }
}

void PlanBuilder::emit(int rank, int stack, int stage, Phase phase, const Step& s) {
  if (s.skip_if_idle_shard && rows_.shardTokens(rank) == 0) return;
  if (s.attn_tp_rank0_only && rank % a_ != 0) return;
  if (s.cp_sharded_only && !cpShardedRank(rank)) return;
  // Built in place: a copy of a just-written Op would read it back in wide
  // loads over its narrow stores (a store-forwarding stall per op).
  Op& op = plan_.ranks[rank].emplace_back();
  op.stack = static_cast<std::uint8_t>(stack);
  op.layer = static_cast<std::int16_t>(stage < 0 ? stage : stage / spl_);
  op.stage = static_cast<std::int16_t>(stage);
  op.phase = phase;
  op.kind = s.kind;
  op.tensor = s.tensor;
  op.axis = s.axis;
  op.rows_in = {s.in, rows_.count(s.in, rank)};
  op.rows_out = {s.out, rows_.count(s.out, rank)};
  if (s.kind == OpKind::kReduceScatterv && s.in == RowKind::kFull) {
    // _reduce_and_redistribute_output_varlen writes into the local DP buffer
    // the split sizes get_dp_global_num_tokens() give this shard: its
    // local_dp_buffer_len rows (under MAX_LEN the longest entry; its tokens
    // first, then padding, which the value handed on drops as dp_scatter's does).
    op.rows_out.count = rows_.dpLocalRows(rank);
  }
  op.sizes = s.sizes;
  op.site = s.site;
  if (tbo_half_ && (s.kind == OpKind::kDpGatherPartial || s.kind == OpKind::kDpGatherReplicate)) {
    op.dp_buffer = dpGatherBuffer();
    op.site = EngineSite::kTboDpGather;
  }
  // The attention-TP moves are the plain collectives the communicator calls
  // (attn_tp_reduce_scatter_tensor, attn_tp_all_gather_into_tensor): equal
  // chunks of the padded batch (local_split_).
  op.bytes = bytesOf(s, rank);
}

// The common compute (one op on the stage's rows) here, kept small enough to
// fold into emitEntry; LayerNorm SP's and the all-to-all MoE's apart.
inline void PlanBuilder::emitCompute(int rank, int stack, int stage) {
  const LayerKind k = stacks_[stack][stage];
  const std::int8_t axis = weightAxis(k);
  if (ln_sp_) return emitLayerNormSpCompute(rank, stack, stage, axis);
  // LongCat-Flash's MoE computes on the branch's copy of its input.
  const Tensor t = branch_ && stack == 0 && stage % spl_ == 1 ? Tensor::kBranch : Tensor::kHidden;
  if (a2aMoe(k)) return emitAllToAllCompute(rank, stack, stage, t, axis);
  if (input_scattered_ && isMixer(k)) {
    // prepare.py (_hand_scattered_input_to_attention) @96bbe18f: with a QKV
    // hook and no DSA the attention reads its slice, and the hook all-gathers
    // the q/kv latents over tp after the projection, inside the attention.
    // The ledger's rows are per token, so the gather before the GEMM stands
    // for it; its bytes are the hidden state's (seam's shapes carry no
    // kv_lora_rank).
    emit(rank, stack, stage, Phase::kCompute,
         {OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp), RowKind::kLocal,
          RowKind::kAttention});
  }
  const RowKind rows = denseOnLocal(k) ? localRows()
                       : isFfn(k)      ? sharedFfnRows(k)
                                       : RowKind::kAttention;
  emit(rank, stack, stage, Phase::kCompute, {OpKind::kCompute, t, axis, rows, rows});
}

void PlanBuilder::emitLayerNormSpCompute(int rank, int stack, int stage, std::int8_t axis) {
  if (axis == kNoAxis) {
    emit(rank, stack, stage, Phase::kCompute,
         {OpKind::kCompute, Tensor::kHidden, axis, RowKind::kLocal, RowKind::kLocal});
    return;
  }
  // Column-parallel in: all_gather_token_rows over the TP group (the SP
  // group), narrowed to the M tokens; row-parallel out:
  // reduce_scatter_token_rows (the M rows padded to tp equal chunks), which
  // completes the stage's sum on the padded shards.
  const std::int8_t tp = static_cast<std::int8_t>(Axis::kTp);
  emit(rank, stack, stage, Phase::kCompute,
       {OpKind::kAllGather, Tensor::kHidden, tp, RowKind::kLocal, RowKind::kAttention});
  emit(rank, stack, stage, Phase::kCompute,
       {OpKind::kCompute, Tensor::kHidden, axis, RowKind::kAttention, RowKind::kAttention});
  emit(rank, stack, stage, Phase::kCompute,
       {OpKind::kReduceScatter, Tensor::kHidden, tp, RowKind::kAttention, RowKind::kLocal});
}

// Dispatch and combine over the EP group around the experts, on local rows.
void PlanBuilder::emitAllToAllCompute(int rank, int stack, int stage, Tensor t, std::int8_t axis) {
  const RowKind local = localRows();
  if (axis == kNoAxis) {
    emit(rank, stack, stage, Phase::kCompute, {OpKind::kCompute, t, axis, local, local});
    return;
  }
  emit(rank, stack, stage, Phase::kCompute,
       {OpKind::kAllToAll, t, axis, local, RowKind::kDispatched});
  emit(rank, stack, stage, Phase::kCompute,
       {OpKind::kCompute, t, axis, RowKind::kDispatched, RowKind::kDispatched});
  emit(rank, stack, stage, Phase::kCompute,
       {OpKind::kAllToAll, t, axis, RowKind::kDispatched, local});
}

void PlanBuilder::emitExit(int r, const Decided& d) {
  const Hand& h = d.hand;
  for (const Step& s : h.exit) emit(r, d.stack, d.from, Phase::kExit, s);
  if (d.cut) {
    const RowKind rows = h.handoff.rows == RowKind::kFull ? RowKind::kAttention : h.handoff.rows;
    const std::int8_t pp = static_cast<std::int8_t>(Axis::kPp);
    emit(r, d.stack, d.from, Phase::kExit, {OpKind::kSend, Tensor::kHidden, pp, rows, rows});
    if (h.handoff.residual)
      emit(r, d.stack, d.from, Phase::kExit, {OpKind::kSend, Tensor::kResidual, pp, rows, rows});
  }
}

void PlanBuilder::emitEntry(int r, const Decided& d) {
  const Hand& h = d.hand;
  const int stack = d.stack, from = d.from, to = d.to;
  const int n = static_cast<int>(stacks_[stack].size());
  if (d.cut) {
    const RowKind rows = h.handoff.rows == RowKind::kFull ? RowKind::kAttention : h.handoff.rows;
    const std::int8_t pp = static_cast<std::int8_t>(Axis::kPp);
    emit(r, stack, to, Phase::kEntry, {OpKind::kRecv, Tensor::kHidden, pp, rows, rows});
    if (h.handoff.residual)
      emit(r, stack, to, Phase::kEntry, {OpKind::kRecv, Tensor::kResidual, pp, rows, rows});
  }
  if (from < 0 && stack == 1) emitMtpInput(r);
  const bool capture =
      stack == 0 && to < n &&
      std::find(c_.flags.capture.begin(), c_.flags.capture.end(), to) != c_.flags.capture.end();
  if (capture && schema_.on(Decision::kSnapshotNotCompleted)) {
    // Mutant: the capture reads the residual before the entry completes the carried sum.
    emit(r, stack, to, Phase::kEntry, {OpKind::kSnapshot, Tensor::kSnapshot});
  }
  const bool engine_capture =
      capture && !two_stage_ && !schema_.on(Decision::kSnapshotNotCompleted);
  if (engine_capture) {
    // A single-stage capture runs before the entry and may change it (captures.cc).
    for (const Step& s : singleStageCapture(stack, from, to, h))
      emit(r, stack, to, Phase::kEntry, s);
  } else {
    for (const Step& s : h.entry) emit(r, stack, to, Phase::kEntry, s);
  }
  if (capture && two_stage_ && !schema_.on(Decision::kSnapshotNotCompleted)) emitCapture(r, d);
  if (to < n) emitCompute(r, stack, to);
}

// Two-stage layers: after the entry, which completed any carried sum.
void PlanBuilder::emitCapture(int r, const Decided& d) {
  const RowKind res_rows = d.hand.residual_after;
  emit(r, d.stack, d.to, Phase::kEntry,
       {OpKind::kSnapshot, Tensor::kSnapshot, kNoAxis, res_rows, res_rows});
  if (res_rows == RowKind::kLocal) {
    emit(r, d.stack, d.to, Phase::kEntry,
         {OpKind::kAllGather, Tensor::kSnapshot, static_cast<std::int8_t>(Axis::kAttnTp),
          RowKind::kLocal, RowKind::kAttention});
  }
}

void PlanBuilder::emitRank(int r) {
  // About four ops per stage (entry, compute, exit; more under DP).
  plan_.ranks[r].reserve(4 * plan_.stages.size() + 8);
  const int pr = ppRank(r);
  const int first = tboFirstStage();
  for (size_t i = 0; i < decided_.size(); ++i) {
    const Decided& d = decided_[i];
    if (first >= 0 && d.stack == 0 && d.to == first) {
      // The TBO layers run to the end of stack 0 on its last pipeline stage
      // (decide()): its final boundary. Other stages have nothing there.
      size_t last = i;
      while (decided_[last].stack != 0 || decided_[last].to != static_cast<int>(stacks_[0].size()))
        ++last;
      if (pr == d.consumer_pp) emitTbo(r, d, decided_[last]);
      i = last;
      continue;
    }
    if (d.from >= 0 && pr == d.producer_pp) emitExit(r, d);
    if (pr == d.consumer_pp) emitEntry(r, d);
  }
}

}  // namespace seam::policy_detail
