// What each local op kind does on a rank's device buffers (rank_executor.h):
// the replay's local ops (sim/src/replay/replay_local_ops.h) and TBO lanes
// (replay_lanes.h), one function per kind, and exec, which hands every op to
// its function (the collectives: rank_collectives.cc, the DP ops: rank_dp.cc).
// add_norm is the add+norm kernel; compute runs a stage's GEMMs with cuBLAS
// (a MoE stage routes as numeric::moeShard). Real mode rounds to bf16 after
// every op, as the CPU executor does.
#include <algorithm>

#include "kernels.h"
#include "rank_executor.h"
#include "seam/backend/check.h"

namespace seam::backend::detail {

Status RankExecutor::exec(const Op& op, int index) {
  if (op.half != Half::kWhole && !tbo_) {
    return Status::invalid("rank " + std::to_string(rank_) + " op " + std::to_string(index) + " (" +
                           std::string(opName(op.kind)) + ") runs on half " +
                           std::string(halfName(op.half)) +
                           " of a batch the plan does not split (no tbo_split)");
  }
  // Each op runs on its half's rows and buffers, in the plan's order: the
  // halves' collectives interleave on the same communicators exactly as the
  // plan issues them on every rank.
  if (tbo_) activate(op.half);
  switch (op.kind) {
    case OpKind::kAllReduce:
    case OpKind::kArAddNorm:
      return allReduce(op, index);
    case OpKind::kReduceScatter:
    case OpKind::kReduceScatterv:
      return reduceScatter(op, index);
    case OpKind::kAllGather:
    case OpKind::kAllGatherv:
      return allGather(op, index);
    case OpKind::kAllToAll:
      return op.rows_out.kind == RowKind::kDispatched ? dispatch(op, index) : combine(op, index);
    case OpKind::kDpGatherPartial:
    case OpKind::kDpGatherReplicate:
    case OpKind::kDpScatter:
    case OpKind::kDpReduceScatter:
      return dpOp(op, index);
    case OpKind::kSlice:
      return slice(op, index);
    case OpKind::kZeroFill:
      return zeroFill(op, index);
    case OpKind::kAdd:
      return add(op, index);
    case OpKind::kNorm:
      record(index, bytesOf(hidden_.rows));
      return normInto(hidden_, hidden_, op);
    case OpKind::kAddNorm:
      return addNorm(op, index);
    case OpKind::kCompute:
      return compute(op, index);
    case OpKind::kSnapshot:
      return snapshot(op, index);
    case OpKind::kSend:
      return send(op, index);
    case OpKind::kRecv:
      return recv(op, index);
  }
  return Status::internal("unknown op kind");
}

Status RankExecutor::slice(const Op& op, int index) {
  // tensor_split(attn_tp)[i]: the rank's own slice, or another position's
  // when the plan says so (a wrong slice index, set by mutants).
  if (op.tbo_move) return tboMove(op, index);
  DeviceRows& b = bufferOf(op.tensor);
  if (op.rows_out.kind == RowKind::kSequence || op.rows_in.kind == RowKind::kSequence)
    return reorderCp(op, index);
  if (op.rows_in.kind == RowKind::kFull) {
    // attn_cp_take_back_output: this CP rank's block of the gathered rows (or
    // another position's, when the plan says so).
    const int acp = s_.topo.groupSize(Axis::kAttnCp);
    const int cnt = rowMap().count(RowKind::kAttention, rank_);
    expectLayout(b, RowKind::kFull, acp * cnt, op, index);
    const int c = op.slice_of < 0 ? s_.topo.attnCpRank(rank_) : op.slice_of % acp;
    record(index, bytesOf(cnt));
    if (Status st = copyRows(scratch_.data.get(), b.row(c * cnt, h_), cnt); !st) return st;
    takeScratch(b);
    b.kind = RowKind::kAttention;
    b.rows = cnt;
    return Status::ok();
  }
  expectLayout(b, RowKind::kAttention, rowMap().count(RowKind::kAttention, rank_), op, index);
  const int atp = s_.topo.groupSize(Axis::kAttnTp);
  const int src =
      op.slice_of < 0 ? rank_ : s_.topo.groupOf(Axis::kAttnTp, rank_)[op.slice_of % atp];
  const int off = rowMap().localOffset(src);
  const int cnt = rowMap().count(RowKind::kLocal, src);
  record(index, bytesOf(cnt));
  // LayerNorm SP's last chunks may lie past the shard's rows: padding, zeroed.
  const int held = std::clamp(b.rows - off, 0, cnt);
  if (Status st = copyRows(scratch_.data.get(), b.row(off, h_), held); !st) return st;
  if (Status st = zeroRows(scratch_.row(held, h_), cnt - held); !st) return st;
  takeScratch(b);
  b.kind = RowKind::kLocal;
  b.rows = cnt;
  return Status::ok();
}

Status RankExecutor::reorderCp(const Op& op, int index) {
  // cp_gather_after_forward's reorder (gathered CP shards -> sequence order)
  // or the MTP step's cp_shard_hidden_states (sequence order -> this rank's
  // padded shard, pad rows zeroed), as Replay does: one copy per run of
  // consecutive source rows.
  DeviceRows& b = bufferOf(op.tensor);
  const bool gather = op.rows_out.kind == RowKind::kSequence;
  const RowMap& rows = rowMap();
  const RowKind from = gather ? RowKind::kFull : RowKind::kSequence;
  const RowKind to = gather ? RowKind::kSequence : RowKind::kAttention;
  expectLayout(b, from, rows.count(from, rank_), op, index);
  const int cnt = rows.count(to, rank_);
  record(index, bytesOf(cnt));
  const std::vector<int>& toks = rows.tokens(RowKind::kAttention, rank_);
  auto source = [&](int i) {
    return gather ? rows.gatheredRowOfSequence(rank_, i) : toks[i];
  };  // -1: a pad row
  for (int i = 0; i < cnt;) {
    const int first = source(i);
    int run = 1;
    while (i + run < cnt && (first < 0 ? source(i + run) < 0 : source(i + run) == first + run))
      ++run;
    Status st = first < 0 ? zeroRows(scratch_.row(i, h_), run)
                          : copyRows(scratch_.row(i, h_), b.row(first, h_), run);
    if (!st) return st;
    i += run;
  }
  takeScratch(b);
  b.kind = to;
  b.rows = cnt;
  b.present = true;
  // The model's output under prefill CP is the gathered, reordered final norm.
  if (gather && op.stage == s_.plan.stackSize(op.stack) && op.stack < s_.stacks)
    pending_final_ = op.stack;
  return Status::ok();
}

Status RankExecutor::zeroFill(const Op& op, int index) {
  DeviceRows& b = bufferOf(op.tensor);
  b.kind = op.rows_out.kind;
  b.rows = rowMap().count(b.kind, rank_);
  b.present = true;
  record(index, bytesOf(b.rows));
  return zeroRows(b.data.get(), b.rows);
}

Status RankExecutor::add(const Op& op, int index) {
  if (op.tbo_move) return tboMove(op, index);
  if (op.tensor == Tensor::kBranch) return forkOrMerge(op, index);
  record(index, bytesOf(hidden_.rows));
  if (op.tensor == Tensor::kSnapshot) {
    // Legacy capture: snapshot += residual.
    DeviceRows& snap = bufferOf(Tensor::kSnapshot);
    if (residual_.present && snap.rows == residual_.rows) {
      SEAM_CUDA_CHECK(kernels::add(snap.data.get(), residual_.data.get(),
                                   static_cast<std::size_t>(snap.rows) * h_, s_.real(),
                                   stream_->get()));
    }
    return Status::ok();
  }
  if (op.tensor == Tensor::kResidual) {
    if (!residual_.present) {  // first layer: residual := hidden
      residual_.setLayout(hidden_);
      return copyRows(residual_.data.get(), hidden_.data.get(), hidden_.rows);
    }
    SEAM_CUDA_CHECK(kernels::add(residual_.data.get(), hidden_.data.get(),
                                 static_cast<std::size_t>(residual_.rows) * h_, s_.real(),
                                 stream_->get()));
    return Status::ok();
  }
  if (op.rows_in.kind == RowKind::kLocal && op.rows_out.kind == RowKind::kAttention) {
    // Input-scattered FFN input: the residual slice into this rank's rows of the sum.
    if (residual_.present && residual_.rows > 0) {
      const int off = rowMap().localOffset(rank_);
      SEAM_CUDA_CHECK(kernels::add(
          hidden_.data.get() + static_cast<std::size_t>(off) * h_, residual_.data.get(),
          static_cast<std::size_t>(residual_.rows) * h_, s_.real(), stream_->get()));
    }
    residual_.present = false;
    return Status::ok();
  }
  // hs += residual; residual := None
  if (residual_.present) {
    SEAM_CUDA_CHECK(kernels::add(hidden_.data.get(), residual_.data.get(),
                                 static_cast<std::size_t>(hidden_.rows) * h_, s_.real(),
                                 stream_->get()));
  }
  residual_.present = false;
  return Status::ok();
}

Status RankExecutor::addNorm(const Op& op, int index) {
  // residual += hidden (residual := hidden on the first layer), hidden = norm(residual).
  if (op.kind == OpKind::kAddNorm) record(index, bytesOf(hidden_.rows));
  const bool has_residual = residual_.present;
  if (!has_residual) residual_.setLayout(hidden_);
  const float* weight = norm_weights_.at({op.stack, op.stage}).get();
  SEAM_CUDA_CHECK(kernels::addNormRows(hidden_.data.get(), residual_.data.get(), hidden_.data.get(),
                                       residual_.rows, h_, has_residual, s_.real(), weight,
                                       stream_->get()));
  finishNorm(hidden_, residual_, op);
  return Status::ok();
}

Status RankExecutor::normInto(DeviceRows& target, const DeviceRows& source, const Op& op) {
  const float* weight = norm_weights_.at({op.stack, op.stage}).get();
  SEAM_CUDA_CHECK(kernels::normRows(source.data.get(), target.data.get(), source.rows, h_,
                                    s_.real(), weight, stream_->get()));
  finishNorm(target, source, op);
  return Status::ok();
}

void RankExecutor::finishNorm(DeviceRows& target, const DeviceRows& source, const Op& op) {
  target.setLayout(source);
  target.present = true;
  // The final norm of a stack writes the stack's output rows (copied after
  // the op's timing event, see run()).
  // Under prefill CP the output is that of the model boundary's reorder.
  // Under LayerNorm SP it runs on the padded shards and the exit gather's rows are the output.
  const bool sp_shards =
      source.kind == RowKind::kLocal && rowMap().localSplit() == LocalSplit::kPaddedEqual;
  if (op.stage == s_.plan.stackSize(op.stack) && op.stack < s_.stacks &&
      s_.plan.cp_layout == CpLayout::kReplicated && !sp_shards) {
    pending_final_ = op.stack;
  }
}

Status RankExecutor::compute(const Op& op, int index) {
  // A branch stage (LongCat-Flash's MoE) computes on the branch's copy of its input.
  DeviceRows& x = op.tensor == Tensor::kBranch ? branch_ : hidden_;
  record(index, bytesOf(x.rows));
  if (op.stage < 0) {
    if (lane_ != 0) {
      // project_embed_ holds the batch's rows only (no TBO plan projects inside a half).
      return Status::invalid("rank " + std::to_string(rank_) + " projects into stack " +
                             std::to_string(op.stack) + " on half " +
                             std::string(halfName(op.half)) + " of the batch");
    }
    // The MTP step's input projection: the previous stack's final output
    // plus this stack's embedding (numeric::projectRow).
    const DpPadding pad = x.kind == RowKind::kFull ? x.full_mode : s_.plan.padding;
    auto it = project_embed_.find({op.stack, x.kind, pad});
    if (it == project_embed_.end()) {
      return Status::invalid("rank " + std::to_string(rank_) + " projects into stack " +
                             std::to_string(op.stack) + " from " +
                             std::string(rowKindName(x.kind)) + " rows");
    }
    SEAM_CUDA_CHECK(kernels::add(x.data.get(), it->second.get(),
                                 static_cast<std::size_t>(x.rows) * h_, s_.real(), stream_->get()));
    return Status::ok();
  }
  // y = relu(x W_in[:, J]) W_out[J, :] over this rank's shard J of the inner
  // columns (a MoE stage: of its shared expert), into scratch_.
  const int si = s_.plan.stageIndex(op.stack, op.stage);
  if (x.rows == 0) return Status::ok();
  if (Status st = mlpSlice(shards_.at(si), x, scratch_.data.get()); !st) return st;
  const auto moe = moe_shards_.find(si);
  if (moe != moe_shards_.end()) {
    if (Status st = routedExperts(moe->second, x); !st) return st;
  }
  takeScratch(x);
  return Status::ok();
}

Status RankExecutor::mlpSlice(const StageShard& w, const DeviceRows& x, float* out) {
  if (w.cols == 0) return zeroRows(out, x.rows);  // an empty shard contributes zeros
  // Row-major products through column-major cuBLAS: C^T = B^T A^T.
  const float one = 1.0f, zero = 0.0f;
  SEAM_CUBLAS_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, w.cols, x.rows, h_, &one,
                                w.w_in.get(), w.cols, x.data.get(), h_, &zero, mid_.get(), w.cols));
  SEAM_CUDA_CHECK(kernels::relu(mid_.get(), static_cast<std::size_t>(x.rows) * w.cols, s_.real(),
                                stream_->get()));
  SEAM_CUBLAS_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, h_, x.rows, w.cols, &one,
                                w.w_out.get(), h_, mid_.get(), w.cols, &zero, out, h_));
  return roundIfReal(out, x.rows);
}

Status RankExecutor::routedExperts(const MoeShard& m, const DeviceRows& x) {
  // numeric::moeShard on every row at once: router scores (a GEMM), the
  // top-k kernel's dense gates, then each owned expert over all the rows and
  // its gated output added onto scratch_'s shared slice where a row chose it,
  // experts in ascending order on one stream (no atomics: the sum order is
  // fixed, real mode is deterministic).
  const int experts = s_.moe.experts;
  const float one = 1.0f, zero = 0.0f;
  SEAM_CUBLAS_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, experts, x.rows, h_, &one,
                                m.router.get(), experts, x.data.get(), h_, &zero, moe_scores_.get(),
                                experts));
  if (s_.real()) {
    SEAM_CUDA_CHECK(kernels::roundBf16(moe_scores_.get(),
                                       static_cast<std::size_t>(x.rows) * experts, stream_->get()));
  }
  SEAM_CUDA_CHECK(kernels::topKGates(moe_scores_.get(), x.rows, experts, s_.moe.top_k, s_.real(),
                                     moe_gates_.get(), stream_->get()));
  for (size_t i = 0; i < m.experts.size(); ++i) {
    if (m.experts[i].cols == 0) continue;  // no columns of it here (numeric::moeShard skips it too)
    if (Status st = mlpSlice(m.experts[i], x, expert_out_.get()); !st) return st;
    SEAM_CUDA_CHECK(
        kernels::gatedAccumulate(scratch_.data.get(), expert_out_.get(), moe_gates_.get(), experts,
                                 m.first_expert + static_cast<int>(i), x.rows, h_, stream_->get()));
  }
  return roundIfReal(scratch_.data.get(), x.rows);
}

Status RankExecutor::snapshot(const Op& op, int index) {
  // Pool entry 0 is bufferOf's; snapshot op k of the iteration takes entry k + 1.
  DeviceRows& b = snapshot_pool_[1 + snapshots_taken_++];
  // tensor hidden: legacy's copy of the hidden state; otherwise the residual.
  const DeviceRows& src = op.tensor == Tensor::kHidden ? hidden_ : residual_;
  b.setLayout(src);
  record(index, bytesOf(src.present ? src.rows : 0));
  if (src.present) {
    if (Status st = copyRows(b.data.get(), src.data.get(), src.rows); !st) return st;
  }
  snapshots_.push_back({op.stack, op.stage, &b});
  return Status::ok();
}

void RankExecutor::activate(Half half) {
  const int lane = static_cast<int>(half);
  if (lane == lane_) return;
  // Swaps of owning handles: no copy, no launch.
  std::swap(hidden_, parked_hidden_[lane_]);
  std::swap(residual_, parked_residual_[lane_]);
  std::swap(hidden_, parked_hidden_[lane]);
  std::swap(residual_, parked_residual_[lane]);
  lane_ = lane;
}

Status RankExecutor::tboMove(const Op& op, int index) {
  if (!tbo_ || op.half == Half::kWhole ||
      (op.tensor != Tensor::kHidden && op.tensor != Tensor::kResidual)) {
    return Status::invalid("rank " + std::to_string(rank_) + " op " + std::to_string(index) +
                           ": a TBO " + (op.kind == OpKind::kSlice ? "split" : "merge") + " of " +
                           std::string(tensorName(op.tensor)) + " on half " +
                           std::string(halfName(op.half)) +
                           (tbo_ ? "" : " in a plan whose batch is not split"));
  }
  // Child A takes rows [0, split) of the shard's padded attention rows, B
  // the rest, each zero-padded to its tbo_padded_len (the batch's buffers
  // are parked in lane 0 while a half runs).
  DeviceRows& whole = op.tensor == Tensor::kResidual ? parked_residual_[0] : parked_hidden_[0];
  DeviceRows& half = bufferOf(op.tensor);
  const HalfRows where = halfRows(s_.lanes, rank_, op.half);
  const int offset = where.offset, taken = where.taken, cnt = where.count, total = where.total;
  if (offset + taken > total || taken > cnt) {
    return Status::invalid("rank " + std::to_string(rank_) + " op " + std::to_string(index) +
                           ": half " + std::string(halfName(op.half)) + "'s rows [" +
                           std::to_string(offset) + ", " + std::to_string(offset + taken) +
                           ") lie outside the batch's " + std::to_string(total) + " or its own " +
                           std::to_string(cnt));
  }
  record(index, bytesOf(cnt));
  if (op.kind == OpKind::kSlice) {
    expectLayout(whole, RowKind::kAttention, total, op, index);
    if (Status st = copyRows(half.data.get(), whole.row(offset, h_), taken); !st) return st;
    if (Status st = zeroRows(half.row(taken, h_), cnt - taken); !st) return st;
    half.kind = RowKind::kAttention;
    half.rows = cnt;
    half.present = true;
    if (op.half == Half::kB) whole.present = false;  // both halves took their rows
    return Status::ok();
  }
  // The merge copies the half's rows into the batch-sized tensor; rows no
  // half writes stay zero, as in the replay.
  expectLayout(half, RowKind::kAttention, cnt, op, index);
  if (!whole.present) {
    whole.kind = RowKind::kAttention;
    whole.rows = total;
    whole.present = true;
    if (Status st = zeroRows(whole.data.get(), total); !st) return st;
  } else {
    expectLayout(whole, RowKind::kAttention, total, op, index);
  }
  return copyRows(whole.row(offset, h_), half.data.get(), taken);
}

Status RankExecutor::forkOrMerge(const Op& op, int index) {
  record(index, bytesOf(hidden_.rows));
  if (!hidden_.present) {
    note("rank " + std::to_string(rank_) + " op " + std::to_string(index) +
         " (add of the branch) finds no hidden state");
    return Status::ok();
  }
  if (!branch_.present) {
    // Fork: the branch takes a copy of the (normed) hidden state.
    branch_.setLayout(hidden_);
    return copyRows(branch_.data.get(), hidden_.data.get(), hidden_.rows);
  }
  if (branch_.kind != hidden_.kind || branch_.rows != hidden_.rows) {
    // The ledger refuses such a plan; the replay stops there, so nothing is merged.
    note("rank " + std::to_string(rank_) + " op " + std::to_string(index) + " merges a branch on " +
         std::to_string(branch_.rows) + " " + std::string(rowKindName(branch_.kind)) +
         " rows into a hidden state on " + std::to_string(hidden_.rows) + " " +
         std::string(rowKindName(hidden_.kind)) + " rows; skipped");
    return Status::ok();
  }
  // Merge: hidden += branch (the CPU's addInto order), and the branch is spent.
  SEAM_CUDA_CHECK(kernels::add(hidden_.data.get(), branch_.data.get(),
                               static_cast<std::size_t>(hidden_.rows) * h_, s_.real(),
                               stream_->get()));
  branch_.present = false;
  return Status::ok();
}

}  // namespace seam::backend::detail
