// What each op kind does on a rank's device buffers (rank_executor.h): the
// cases of sim/src/replay.h's execLocal / execCollective, one function per
// kind, with the NCCL primitive that has the same effect on the rows. Where
// NCCL's primitive assumes equal slices (reduce-scatter, all-gather) and the
// rows are uneven, the op runs as all-reduce + slice or as one broadcast per
// member, and says so in a note.
//
// `ar_add_norm` on the hidden state runs as the fused one-shot kernel over
// peer memory (peer_kernels.h) where its group was planned fused, otherwise
// as ncclAllReduce followed by one add+norm kernel; add_norm is that kernel.
//
// Real mode rounds to bf16 after every op, as the CPU executor does. NCCL
// reduces in fp32 the bf16 values it is given and the result is rounded once;
// the CPU rounds after each pairwise add, so the two agree for groups of two
// and may differ in the last bf16 place beyond.
#include <algorithm>

#include "kernels.h"
#include "rank_executor.h"
#include "seam/backend/check.h"

namespace seam::backend::detail {

Status RankExecutor::allReduce(const Op& op, int index) {
  if (op.kind == OpKind::kArAddNorm && op.tensor == Tensor::kHidden) return arAddNorm(op, index);
  DeviceRows& b = bufferOf(op.tensor);
  const Group g = groupOf(op);
  record(index, bytesOf(b.rows));
  if (Status st = allReduceInPlace(g, b.data.get(), b.rows); !st) return st;
  return op.kind == OpKind::kArAddNorm ? addNorm(op, index) : Status::ok();
}

Status RankExecutor::arAddNorm(const Op& op, int index) {
  // The hidden state's partial rows summed over the group, added to the
  // residual, normed: one fused kernel where the group runs fused (the same
  // decision on every member, planPeerGroups), else NCCL + one add+norm kernel.
  const Group g = groupOf(op);
  const int rows = hidden_.rows;  // the sum's rows: the same on every member of a well-formed plan
  record(index, bytesOf(rows));
  const bool has_residual = residual_.present;
  if (!has_residual) {
    residual_.setLayout(hidden_);  // first layer: residual := the sum
  } else if (residual_.rows != rows) {
    note("rank " + std::to_string(rank_) + " op " + std::to_string(index) + " (ar_add_norm) adds " +
         std::to_string(rows) + " rows to a residual of " + std::to_string(residual_.rows));
  }
  const float* weight = norm_weights_.at({op.stack, op.stage}).get();
  const int gi = g.size() > 1 ? peerGroupOf(g.members) : -1;
  const auto fused = gi >= 0 ? fused_args_.find(gi) : fused_args_.end();
  if (fused != fused_args_.end()) {
    kernels::FusedArAddNormArgs a = fused->second;
    a.x = hidden_.data.get();
    a.residual = residual_.data.get();
    a.out = hidden_.data.get();
    a.rows = rows;
    a.h = h_;
    a.has_residual = has_residual;
    a.real = s_.real();
    a.weight = weight;
    a.ll = fusedSendsLl(s_.options.fused_protocol, rows, h_);
    SEAM_CUDA_CHECK(kernels::fusedArAddNorm(a, stream_->get()));
    op_path_[index] = a.ll ? ArAddNormPath::kFusedLl : ArAddNormPath::kFused;
  } else {
    if (g.size() > 1) {
      // Unrounded: the add+norm kernel rounds its input as roundIfReal would.
      recordNccl("all_reduce", static_cast<std::size_t>(rows) * h_);
      SEAM_NCCL_ISSUE(g.comm, ncclAllReduce(hidden_.data.get(), hidden_.data.get(), static_cast<std::size_t>(rows) * h_,
                                            ncclFloat, ncclSum, g.comm, stream_->get()));
    }
    SEAM_CUDA_CHECK(kernels::addNormRows(hidden_.data.get(), residual_.data.get(), hidden_.data.get(), rows, h_,
                                         has_residual, s_.real(), weight, stream_->get()));
    op_path_[index] = g.size() > 1 ? ArAddNormPath::kNccl : ArAddNormPath::kLocal;
  }
  finishNorm(hidden_, residual_, op);
  return Status::ok();
}

Status RankExecutor::reduceScatter(const Op& op, int index) {
  DeviceRows& b = bufferOf(op.tensor);
  const Group g = groupOf(op);
  const RowMap& rows = rowMap();
  record(index, bytesOf(b.rows));
  if (op.rows_in.kind == RowKind::kFull && op.axis == static_cast<std::int8_t>(Axis::kAttnCp)) {
    // attn_cp_reduce_scatter_output: member i keeps block i of the summed
    // full rows (the CP shards concatenated in rank order, equal in size).
    const int cnt = rows.count(RowKind::kAttention, rank_);
    expectLayout(b, RowKind::kFull, g.size() * cnt, op, index);
    if (Status st = reduceScatterChunks(g, b.data.get(), cnt); !st) return st;
    takeScratch(b);
    b.kind = RowKind::kAttention;
    b.rows = cnt;
    b.present = true;
    return Status::ok();
  }
  if (op.rows_in.kind == RowKind::kFull) {
    // reduce_scatterv, the DP return: sum the full rows over the group, keep
    // this shard's slot (in the padding mode the op's row count names, as
    // Replay::readSlot).
    expectLayout(b, RowKind::kFull, op.rows_in.count, op, index);
    if (Status st = allReduceInPlace(g, b.data.get(), b.rows); !st) return st;
    const DpPadding mode = fullModeOf(op, op.rows_in.count, rank_);
    const int slot = fullMap(mode).fullSlot(s_.topo.attnDpRank(rank_));
    const int cnt = rows.count(RowKind::kAttention, rank_);
    if (Status st = copyRows(scratch_.data.get(), b.row(slot, h_), cnt); !st) return st;
    takeScratch(b);
    b.kind = RowKind::kAttention;
    b.rows = cnt;
    b.present = true;
    return Status::ok();
  }
  if (rows.localSplit() == LocalSplit::kPaddedEqual && g.size() > 1) {
    // LayerNorm SP (layernorm_sp.reduce_scatter_token_rows): the shard's M
    // rows padded with zero rows to tp equal chunks of ceil(M / tp), one
    // ncclReduceScatter; member i keeps chunk i (padding rows past M included).
    const int chunk = rows.count(RowKind::kLocal, rank_);
    expectLayout(b, op.rows_in.kind, rows.count(op.rows_in.kind, rank_), op, index);
    if (Status st = zeroRows(b.row(b.rows, h_), g.size() * chunk - b.rows); !st) return st;
    if (Status st = reduceScatterChunks(g, b.data.get(), chunk); !st) return st;
    takeScratch(b);
    b.kind = RowKind::kLocal;
    b.rows = chunk;
    b.present = true;
    return Status::ok();
  }
  // Attention rows -> this rank's local slice of the sum. ncclReduceScatter
  // hands member i rows [i*c, (i+1)*c): it is the op's semantics exactly when
  // every member's slice has c rows at offset i*c (tensor_split of a shard
  // divisible by the group); otherwise all-reduce and keep the slice.
  expectLayout(b, op.rows_in.kind, rows.count(op.rows_in.kind, rank_), op, index);
  const int off = rows.localOffset(rank_);
  const int cnt = rows.count(RowKind::kLocal, rank_);
  bool uniform = g.size() > 1 && b.rows == g.size() * cnt;
  for (int i = 0; i < g.size() && uniform; ++i) {
    uniform = rows.count(RowKind::kLocal, g.members[i]) == cnt && rows.localOffset(g.members[i]) == i * cnt;
  }
  if (uniform) {
    if (Status st = reduceScatterChunks(g, b.data.get(), cnt); !st) return st;
  } else {
    if (g.size() > 1) note(std::string(opName(op.kind)) + " over slices of unequal size runs as all_reduce + slice");
    if (Status st = allReduceInPlace(g, b.data.get(), b.rows); !st) return st;
    if (Status st = copyRows(scratch_.data.get(), b.row(off, h_), cnt); !st) return st;
  }
  takeScratch(b);
  b.kind = RowKind::kLocal;
  b.rows = cnt;
  b.present = true;
  return Status::ok();
}

Status RankExecutor::allGather(const Op& op, int index) {
  // Local slices -> the shard's attention rows, each member's slice at its offset.
  DeviceRows& b = bufferOf(op.tensor);
  const Group g = groupOf(op);
  const RowMap& rows = rowMap();
  if (op.rows_out.kind == RowKind::kFull) {
    // attn_cp_interleave_gather: the CP shards (equal, padded) concatenated in rank order.
    const int mine = rows.count(RowKind::kAttention, rank_);
    const int cnt = rows.count(RowKind::kFull, rank_);
    expectLayout(b, RowKind::kAttention, mine, op, index);
    record(index, bytesOf(cnt));
    recordNccl("all_gather", static_cast<std::size_t>(mine) * h_);
    SEAM_NCCL_ISSUE(g.comm, ncclAllGather(b.data.get(), scratch_.data.get(), static_cast<std::size_t>(mine) * h_,
                                          ncclFloat, g.comm, stream_->get()));
    takeScratch(b);
    b.kind = RowKind::kFull;
    b.rows = g.size() * mine;
    b.present = true;
    return Status::ok();
  }
  const int cnt = rows.count(RowKind::kAttention, g.members.front());
  const int mine = rows.count(RowKind::kLocal, rank_);
  expectLayout(b, RowKind::kLocal, mine, op, index);
  record(index, bytesOf(cnt));
  if (rows.localSplit() == LocalSplit::kPaddedEqual && g.size() > 1) {
    // LayerNorm SP (layernorm_sp.all_gather_token_rows): every member's
    // chunk of ceil(M / tp) rows, one ncclAllGather, narrowed to the op's
    // rows (output[:total_rows]: the shard's M rows).
    recordNccl("all_gather", static_cast<std::size_t>(mine) * h_);
    SEAM_NCCL_ISSUE(g.comm, ncclAllGather(b.data.get(), scratch_.data.get(), static_cast<std::size_t>(mine) * h_,
                                          ncclFloat, g.comm, stream_->get()));
    takeScratch(b);
    b.kind = RowKind::kAttention;
    b.rows = std::min(g.size() * mine, std::max(cnt, static_cast<int>(op.rows_out.count)));
    b.present = true;
    // maybe_exit_gather: the final norm ran on the shards; these rows are the output.
    if (op.tensor == Tensor::kHidden && op.stage == s_.plan.stackSize(op.stack) && op.stack < s_.stacks) {
      pending_final_ = op.stack;
    }
    return Status::ok();
  }
  if (Status st = zeroRows(scratch_.data.get(), cnt); !st) return st;
  if (g.size() == 1) {
    if (Status st = copyRows(scratch_.row(rows.localOffset(rank_), h_), b.data.get(), b.rows); !st) return st;
  } else {
    bool uniform = cnt == g.size() * mine;
    for (int i = 0; i < g.size() && uniform; ++i) {
      uniform = rows.count(RowKind::kLocal, g.members[i]) == mine && rows.localOffset(g.members[i]) == i * mine;
    }
    if (uniform) {
      recordNccl("all_gather", static_cast<std::size_t>(mine) * h_);
      SEAM_NCCL_ISSUE(g.comm, ncclAllGather(b.data.get(), scratch_.data.get(), static_cast<std::size_t>(mine) * h_,
                                            ncclFloat, g.comm, stream_->get()));
    } else {
      // Uneven slices (all_gatherv): one broadcast per member, rooted at it, into its offset.
      note(std::string(opName(op.kind)) + " of slices of unequal size runs as grouped ncclBroadcast");
      const auto slice = [&](int i) {
        const int m = g.members[i];
        return std::pair{rows.localOffset(m), rows.count(RowKind::kLocal, m)};
      };
      if (Status st = broadcastEach(g, b.data.get(), scratch_.data.get(), slice); !st) return st;
    }
  }
  takeScratch(b);
  b.kind = RowKind::kAttention;
  b.rows = cnt;
  b.present = true;
  return Status::ok();
}

Status RankExecutor::broadcastEach(const Group& g, const float* mine, float* out,
                                   const std::function<std::pair<int, int>(int)>& slice) {
  recordNccl("broadcast", 0);
  SEAM_NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < g.size(); ++i) {
    const auto [offset, rows] = slice(i);
    if (rows == 0) continue;  // every member knows every count: skipped on all of them
    float* dst = out + static_cast<std::size_t>(offset) * h_;
    const ncclResult_t r = ncclBroadcast(i == g.me ? mine : dst, dst, static_cast<std::size_t>(rows) * h_, ncclFloat,
                                         i, g.comm, stream_->get());
    if (r != ncclSuccess && r != ncclInProgress) {
      (void)ncclGroupEnd();
      return ncclStatus(r, "ncclBroadcast", __FILE__, __LINE__);
    }
  }
  SEAM_NCCL_ISSUE(g.comm, ncclGroupEnd());
  return Status::ok();
}

Status RankExecutor::dispatch(const Op& op, int index) {
  recordNccl("send_recv", 0);
  // Every member receives every member's rows, concatenated in group order.
  DeviceRows& b = bufferOf(op.tensor);
  const Group g = groupOf(op);
  const RowMap& rows = rowMap();
  std::vector<int> count(g.size()), offset(g.size(), 0);
  for (int i = 0; i < g.size(); ++i) {
    count[i] = rows.count(op.rows_in.kind, g.members[i]);
    if (i) offset[i] = offset[i - 1] + count[i - 1];
  }
  const int total = offset.back() + count.back();
  expectLayout(b, op.rows_in.kind, count[g.me], op, index);
  record(index, bytesOf(total));
  if (Status st = copyRows(scratch_.row(offset[g.me], h_), b.data.get(), count[g.me]); !st) return st;
  if (g.size() > 1) {
    SEAM_NCCL_CHECK(ncclGroupStart());
    for (int i = 0; i < g.size(); ++i) {
      if (i == g.me) continue;
      // Both sides know both counts from the row map; empty messages are skipped on both.
      if (count[g.me] > 0) {
        const ncclResult_t r = ncclSend(b.data.get(), static_cast<std::size_t>(count[g.me]) * h_, ncclFloat, i, g.comm,
                                        stream_->get());
        if (r != ncclSuccess && r != ncclInProgress) {
          (void)ncclGroupEnd();
          return ncclStatus(r, "ncclSend", __FILE__, __LINE__);
        }
      }
      if (count[i] > 0) {
        const ncclResult_t r = ncclRecv(scratch_.row(offset[i], h_), static_cast<std::size_t>(count[i]) * h_, ncclFloat,
                                        i, g.comm, stream_->get());
        if (r != ncclSuccess && r != ncclInProgress) {
          (void)ncclGroupEnd();
          return ncclStatus(r, "ncclRecv", __FILE__, __LINE__);
        }
      }
    }
    SEAM_NCCL_ISSUE(g.comm, ncclGroupEnd());
  }
  takeScratch(b);
  b.kind = RowKind::kDispatched;
  b.rows = total;
  b.present = true;
  return Status::ok();
}

Status RankExecutor::combine(const Op& op, int index) {
  recordNccl("send_recv", 0);
  // Member i gets back segment i of every member's dispatched rows, summed
  // in member order (starting from zero, as the replay does).
  DeviceRows& b = bufferOf(op.tensor);
  const Group g = groupOf(op);
  const RowMap& rows = rowMap();
  std::vector<int> count(g.size()), seg(g.size(), 0);
  for (int i = 0; i < g.size(); ++i) {
    count[i] = rows.count(op.rows_out.kind, g.members[i]);
    if (i) seg[i] = seg[i - 1] + count[i - 1];
  }
  const int mine = count[g.me];
  expectLayout(b, RowKind::kDispatched, seg.back() + count.back(), op, index);
  record(index, bytesOf(seg.back() + count.back()));
  float* staging = staging_.data.get();
  const std::size_t seg_elems = static_cast<std::size_t>(mine) * h_;
  if (Status st = copyRows(staging + g.me * seg_elems, b.row(seg[g.me], h_), mine); !st) return st;
  if (g.size() > 1) {
    SEAM_NCCL_CHECK(ncclGroupStart());
    for (int i = 0; i < g.size(); ++i) {
      if (i == g.me) continue;
      if (count[i] > 0) {
        const ncclResult_t r = ncclSend(b.row(seg[i], h_), static_cast<std::size_t>(count[i]) * h_, ncclFloat, i,
                                        g.comm, stream_->get());
        if (r != ncclSuccess && r != ncclInProgress) {
          (void)ncclGroupEnd();
          return ncclStatus(r, "ncclSend", __FILE__, __LINE__);
        }
      }
      if (mine > 0) {
        const ncclResult_t r = ncclRecv(staging + i * seg_elems, seg_elems, ncclFloat, i, g.comm, stream_->get());
        if (r != ncclSuccess && r != ncclInProgress) {
          (void)ncclGroupEnd();
          return ncclStatus(r, "ncclRecv", __FILE__, __LINE__);
        }
      }
    }
    SEAM_NCCL_ISSUE(g.comm, ncclGroupEnd());
  }
  SEAM_CUDA_CHECK(kernels::sumSegments(staging, g.size(), seg_elems, scratch_.data.get(), s_.real(), stream_->get()));
  takeScratch(b);
  b.kind = op.rows_out.kind;
  b.rows = mine;
  b.present = true;
  return Status::ok();
}

Status RankExecutor::slice(const Op& op, int index) {
  // tensor_split(attn_tp)[i]: the rank's own slice, or another position's
  // when the plan says so (a wrong slice index, set by mutants).
  if (op.tbo_move) return tboMove(op, index);
  DeviceRows& b = bufferOf(op.tensor);
  if (op.rows_out.kind == RowKind::kSequence || op.rows_in.kind == RowKind::kSequence) return reorderCp(op, index);
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
  const int src = op.slice_of < 0 ? rank_ : s_.topo.groupOf(Axis::kAttnTp, rank_)[op.slice_of % atp];
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
  auto source = [&](int i) { return gather ? rows.gatheredRowOfSequence(rank_, i) : toks[i]; };  // -1: a pad row
  for (int i = 0; i < cnt;) {
    const int first = source(i);
    int run = 1;
    while (i + run < cnt && (first < 0 ? source(i + run) < 0 : source(i + run) == first + run)) ++run;
    Status st = first < 0 ? zeroRows(scratch_.row(i, h_), run) : copyRows(scratch_.row(i, h_), b.row(first, h_), run);
    if (!st) return st;
    i += run;
  }
  takeScratch(b);
  b.kind = to;
  b.rows = cnt;
  b.present = true;
  // The model's output under prefill CP is the gathered, reordered final norm.
  if (gather && op.stage == s_.plan.stackSize(op.stack) && op.stack < s_.stacks) pending_final_ = op.stack;
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
      SEAM_CUDA_CHECK(kernels::add(snap.data.get(), residual_.data.get(), static_cast<std::size_t>(snap.rows) * h_,
                                   s_.real(), stream_->get()));
    }
    return Status::ok();
  }
  if (op.tensor == Tensor::kResidual) {
    if (!residual_.present) {  // first layer: residual := hidden
      residual_.setLayout(hidden_);
      return copyRows(residual_.data.get(), hidden_.data.get(), hidden_.rows);
    }
    SEAM_CUDA_CHECK(kernels::add(residual_.data.get(), hidden_.data.get(), static_cast<std::size_t>(residual_.rows) * h_,
                                 s_.real(), stream_->get()));
    return Status::ok();
  }
  if (op.rows_in.kind == RowKind::kLocal && op.rows_out.kind == RowKind::kAttention) {
    // Input-scattered FFN input: the residual slice into this rank's rows of the sum.
    if (residual_.present && residual_.rows > 0) {
      const int off = rowMap().localOffset(rank_);
      SEAM_CUDA_CHECK(kernels::add(hidden_.data.get() + static_cast<std::size_t>(off) * h_, residual_.data.get(),
                                   static_cast<std::size_t>(residual_.rows) * h_, s_.real(), stream_->get()));
    }
    residual_.present = false;
    return Status::ok();
  }
  // hs += residual; residual := None
  if (residual_.present) {
    SEAM_CUDA_CHECK(kernels::add(hidden_.data.get(), residual_.data.get(), static_cast<std::size_t>(hidden_.rows) * h_,
                                 s_.real(), stream_->get()));
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
  SEAM_CUDA_CHECK(kernels::addNormRows(hidden_.data.get(), residual_.data.get(), hidden_.data.get(), residual_.rows, h_,
                                       has_residual, s_.real(), weight, stream_->get()));
  finishNorm(hidden_, residual_, op);
  return Status::ok();
}

Status RankExecutor::normInto(DeviceRows& target, const DeviceRows& source, const Op& op) {
  const float* weight = norm_weights_.at({op.stack, op.stage}).get();
  SEAM_CUDA_CHECK(kernels::normRows(source.data.get(), target.data.get(), source.rows, h_, s_.real(), weight,
                                    stream_->get()));
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
  const bool sp_shards = source.kind == RowKind::kLocal && rowMap().localSplit() == LocalSplit::kPaddedEqual;
  if (op.stage == s_.plan.stackSize(op.stack) && op.stack < s_.stacks && s_.plan.cp_layout == CpLayout::kReplicated &&
      !sp_shards) {
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
      return Status::invalid("rank " + std::to_string(rank_) + " projects into stack " + std::to_string(op.stack) +
                             " on half " + std::string(halfName(op.half)) + " of the batch");
    }
    // The MTP step's input projection: the previous stack's final output
    // plus this stack's embedding (numeric::projectRow).
    const DpPadding pad = x.kind == RowKind::kFull ? x.full_mode : s_.plan.padding;
    auto it = project_embed_.find({op.stack, x.kind, pad});
    if (it == project_embed_.end()) {
      return Status::invalid("rank " + std::to_string(rank_) + " projects into stack " + std::to_string(op.stack) +
                             " from " + std::string(rowKindName(x.kind)) + " rows");
    }
    SEAM_CUDA_CHECK(kernels::add(x.data.get(), it->second.get(), static_cast<std::size_t>(x.rows) * h_, s_.real(),
                                 stream_->get()));
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
  SEAM_CUBLAS_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, w.cols, x.rows, h_, &one, w.w_in.get(), w.cols,
                                x.data.get(), h_, &zero, mid_.get(), w.cols));
  SEAM_CUDA_CHECK(kernels::relu(mid_.get(), static_cast<std::size_t>(x.rows) * w.cols, s_.real(), stream_->get()));
  SEAM_CUBLAS_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, h_, x.rows, w.cols, &one, w.w_out.get(), h_,
                                mid_.get(), w.cols, &zero, out, h_));
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
  SEAM_CUBLAS_CHECK(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, experts, x.rows, h_, &one, m.router.get(),
                                experts, x.data.get(), h_, &zero, moe_scores_.get(), experts));
  if (s_.real()) {
    SEAM_CUDA_CHECK(kernels::roundBf16(moe_scores_.get(), static_cast<std::size_t>(x.rows) * experts, stream_->get()));
  }
  SEAM_CUDA_CHECK(kernels::topKGates(moe_scores_.get(), x.rows, experts, s_.moe.top_k, s_.real(), moe_gates_.get(),
                                     stream_->get()));
  for (size_t i = 0; i < m.experts.size(); ++i) {
    if (m.experts[i].cols == 0) continue;  // no columns of it here (numeric::moeShard skips it too)
    if (Status st = mlpSlice(m.experts[i], x, expert_out_.get()); !st) return st;
    SEAM_CUDA_CHECK(kernels::gatedAccumulate(scratch_.data.get(), expert_out_.get(), moe_gates_.get(), experts,
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
  if (!tbo_ || op.half == Half::kWhole || (op.tensor != Tensor::kHidden && op.tensor != Tensor::kResidual)) {
    return Status::invalid("rank " + std::to_string(rank_) + " op " + std::to_string(index) + ": a TBO " +
                           (op.kind == OpKind::kSlice ? "split" : "merge") + " of " +
                           std::string(tensorName(op.tensor)) + " on half " + std::string(halfName(op.half)) +
                           (tbo_ ? "" : " in a plan whose batch is not split"));
  }
  // Child A holds rows [0, split) of the shard's attention rows, B the rest
  // (the batch's buffers are parked in lane 0 while a half runs).
  DeviceRows& whole = op.tensor == Tensor::kResidual ? parked_residual_[0] : parked_hidden_[0];
  DeviceRows& half = bufferOf(op.tensor);
  const HalfRows where = halfRows(s_, rank_, op.half);
  const int offset = where.offset, cnt = where.count, total = where.total;
  if (offset + cnt > total) {
    return Status::invalid("rank " + std::to_string(rank_) + " op " + std::to_string(index) + ": half " +
                           std::string(halfName(op.half)) + "'s rows [" + std::to_string(offset) + ", " +
                           std::to_string(offset + cnt) + ") lie outside the batch's " + std::to_string(total));
  }
  record(index, bytesOf(cnt));
  if (op.kind == OpKind::kSlice) {
    expectLayout(whole, RowKind::kAttention, total, op, index);
    if (Status st = copyRows(half.data.get(), whole.row(offset, h_), cnt); !st) return st;
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
  return copyRows(whole.row(offset, h_), half.data.get(), cnt);
}

Status RankExecutor::forkOrMerge(const Op& op, int index) {
  record(index, bytesOf(hidden_.rows));
  if (!hidden_.present) {
    note("rank " + std::to_string(rank_) + " op " + std::to_string(index) + " (add of the branch) finds no hidden state");
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
         std::to_string(branch_.rows) + " " + std::string(rowKindName(branch_.kind)) + " rows into a hidden state on " +
         std::to_string(hidden_.rows) + " " + std::string(rowKindName(hidden_.kind)) + " rows; skipped");
    return Status::ok();
  }
  // Merge: hidden += branch (the CPU's addInto order), and the branch is spent.
  SEAM_CUDA_CHECK(kernels::add(hidden_.data.get(), branch_.data.get(), static_cast<std::size_t>(hidden_.rows) * h_,
                               s_.real(), stream_->get()));
  branch_.present = false;
  return Status::ok();
}

Status RankExecutor::send(const Op& op, int index) {
  const DeviceRows& b = op.tensor == Tensor::kResidual ? residual_ : hidden_;
  const int peer = rank_ + s_.topo.config().tp;
  record(index, bytesOf(b.rows));
  if (peer >= s_.plan.world()) {
    note("rank " + std::to_string(rank_) + " sends from the last pipeline stage: nobody receives it; skipped");
    return Status::ok();
  }
  if (b.rows == 0) return Status::ok();  // the receiver expects no rows either (same DP shard)
  SEAM_NCCL_ISSUE(world_comm_.get(), ncclSend(b.data.get(), static_cast<std::size_t>(b.rows) * h_, ncclFloat, peer,
                                              world_comm_.get(), stream_->get()));
  return Status::ok();
}

Status RankExecutor::recv(const Op& op, int index) {
  DeviceRows& b = op.tensor == Tensor::kResidual ? residual_ : hidden_;
  const int peer = rank_ - s_.topo.config().tp;
  b.kind = op.rows_out.kind;
  b.rows = op.rows_out.count;
  b.present = true;
  record(index, bytesOf(b.rows));
  if (peer < 0) return Status::invalid("rank " + std::to_string(rank_) + " receives on the first pipeline stage");
  if (b.rows == 0) return Status::ok();
  SEAM_NCCL_ISSUE(world_comm_.get(), ncclRecv(b.data.get(), static_cast<std::size_t>(b.rows) * h_, ncclFloat, peer,
                                              world_comm_.get(), stream_->get()));
  return Status::ok();
}

Status RankExecutor::exec(const Op& op, int index) {
  if (op.half != Half::kWhole && !tbo_) {
    return Status::invalid("rank " + std::to_string(rank_) + " op " + std::to_string(index) + " (" +
                           std::string(opName(op.kind)) + ") runs on half " + std::string(halfName(op.half)) +
                           " of a batch the plan does not split (no tbo_split)");
  }
  // Each op runs on its half's rows and buffers, in the plan's order: the
  // halves' collectives interleave on the same communicators exactly as the
  // plan issues them on every rank.
  if (tbo_) activate(op.half);
  switch (op.kind) {
    case OpKind::kAllReduce:
    case OpKind::kArAddNorm: return allReduce(op, index);
    case OpKind::kReduceScatter:
    case OpKind::kReduceScatterv: return reduceScatter(op, index);
    case OpKind::kAllGather:
    case OpKind::kAllGatherv: return allGather(op, index);
    case OpKind::kAllToAll:
      return op.rows_out.kind == RowKind::kDispatched ? dispatch(op, index) : combine(op, index);
    case OpKind::kDpGatherPartial:
    case OpKind::kDpGatherReplicate:
    case OpKind::kDpScatter:
    case OpKind::kDpReduceScatter: return dpOp(op, index);
    case OpKind::kSlice: return slice(op, index);
    case OpKind::kZeroFill: return zeroFill(op, index);
    case OpKind::kAdd: return add(op, index);
    case OpKind::kNorm:
      record(index, bytesOf(hidden_.rows));
      return normInto(hidden_, hidden_, op);
    case OpKind::kAddNorm: return addNorm(op, index);
    case OpKind::kCompute: return compute(op, index);
    case OpKind::kSnapshot: return snapshot(op, index);
    case OpKind::kSend: return send(op, index);
    case OpKind::kRecv: return recv(op, index);
  }
  return Status::internal("unknown op kind");
}

}  // namespace seam::backend::detail
