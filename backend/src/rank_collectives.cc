// The collectives and point-to-point ops on a rank's device buffers
// (rank_executor.h): the replay's collectives (sim/src/replay/
// replay_collectives.h), one function per kind, with the NCCL primitive that
// has the same effect on the rows. Where NCCL's primitive assumes equal
// slices (reduce-scatter, all-gather) and the rows are uneven, the op runs as
// all-reduce + slice or as one broadcast per member, and says so in a note.
//
// `ar_add_norm` on the hidden state runs as the fused one-shot kernel over
// peer memory (peer_kernels.h) where its group was planned fused, otherwise
// as ncclAllReduce followed by one add+norm kernel.
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
      SEAM_NCCL_ISSUE(g.comm, ncclAllReduce(hidden_.data.get(), hidden_.data.get(),
                                            static_cast<std::size_t>(rows) * h_, ncclFloat, ncclSum,
                                            g.comm, stream_->get()));
    }
    SEAM_CUDA_CHECK(kernels::addNormRows(hidden_.data.get(), residual_.data.get(),
                                         hidden_.data.get(), rows, h_, has_residual, s_.real(),
                                         weight, stream_->get()));
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
    uniform = rows.count(RowKind::kLocal, g.members[i]) == cnt &&
              rows.localOffset(g.members[i]) == i * cnt;
  }
  if (uniform) {
    if (Status st = reduceScatterChunks(g, b.data.get(), cnt); !st) return st;
  } else {
    if (g.size() > 1)
      note(std::string(opName(op.kind)) +
           " over slices of unequal size runs as all_reduce + slice");
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
    SEAM_NCCL_ISSUE(g.comm, ncclAllGather(b.data.get(), scratch_.data.get(),
                                          static_cast<std::size_t>(mine) * h_, ncclFloat, g.comm,
                                          stream_->get()));
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
    SEAM_NCCL_ISSUE(g.comm, ncclAllGather(b.data.get(), scratch_.data.get(),
                                          static_cast<std::size_t>(mine) * h_, ncclFloat, g.comm,
                                          stream_->get()));
    takeScratch(b);
    b.kind = RowKind::kAttention;
    b.rows = std::min(g.size() * mine, std::max(cnt, static_cast<int>(op.rows_out.count)));
    b.present = true;
    // maybe_exit_gather: the final norm ran on the shards; these rows are the output.
    if (op.tensor == Tensor::kHidden && op.stage == s_.plan.stackSize(op.stack) &&
        op.stack < s_.stacks) {
      pending_final_ = op.stack;
    }
    return Status::ok();
  }
  if (Status st = zeroRows(scratch_.data.get(), cnt); !st) return st;
  if (g.size() == 1) {
    if (Status st = copyRows(scratch_.row(rows.localOffset(rank_), h_), b.data.get(), b.rows); !st)
      return st;
  } else {
    bool uniform = cnt == g.size() * mine;
    for (int i = 0; i < g.size() && uniform; ++i) {
      uniform = rows.count(RowKind::kLocal, g.members[i]) == mine &&
                rows.localOffset(g.members[i]) == i * mine;
    }
    if (uniform) {
      recordNccl("all_gather", static_cast<std::size_t>(mine) * h_);
      SEAM_NCCL_ISSUE(g.comm, ncclAllGather(b.data.get(), scratch_.data.get(),
                                            static_cast<std::size_t>(mine) * h_, ncclFloat, g.comm,
                                            stream_->get()));
    } else {
      // Uneven slices (all_gatherv): one broadcast per member, rooted at it, into its offset.
      note(std::string(opName(op.kind)) +
           " of slices of unequal size runs as grouped ncclBroadcast");
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
    const ncclResult_t r =
        ncclBroadcast(i == g.me ? mine : dst, dst, static_cast<std::size_t>(rows) * h_, ncclFloat,
                      i, g.comm, stream_->get());
    if (r != ncclSuccess && r != ncclInProgress) {
      (void)ncclGroupEnd();
      return ncclStatus(r, "ncclBroadcast", __FILE__, __LINE__);
    }
  }
  SEAM_NCCL_ISSUE(g.comm, ncclGroupEnd());
  return Status::ok();
}

Status RankExecutor::exchangeEach(const Group& g, const RowsToSend& send,
                                  const RowsToReceive& recv) {
  SEAM_NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < g.size(); ++i) {
    if (i == g.me) continue;
    // Both sides know both counts from the row map; empty messages are skipped on both.
    const auto [src, out_rows] = send(i);
    if (out_rows > 0) {
      const ncclResult_t r = ncclSend(src, static_cast<std::size_t>(out_rows) * h_, ncclFloat, i,
                                      g.comm, stream_->get());
      if (r != ncclSuccess && r != ncclInProgress) {
        (void)ncclGroupEnd();
        return ncclStatus(r, "ncclSend", __FILE__, __LINE__);
      }
    }
    const auto [dst, in_rows] = recv(i);
    if (in_rows > 0) {
      const ncclResult_t r = ncclRecv(dst, static_cast<std::size_t>(in_rows) * h_, ncclFloat, i,
                                      g.comm, stream_->get());
      if (r != ncclSuccess && r != ncclInProgress) {
        (void)ncclGroupEnd();
        return ncclStatus(r, "ncclRecv", __FILE__, __LINE__);
      }
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
  if (Status st = copyRows(scratch_.row(offset[g.me], h_), b.data.get(), count[g.me]); !st)
    return st;
  if (g.size() > 1) {
    const auto send = [&](int) { return std::pair<const float*, int>{b.data.get(), count[g.me]}; };
    const auto recv = [&](int i) { return std::pair{scratch_.row(offset[i], h_), count[i]}; };
    if (Status st = exchangeEach(g, send, recv); !st) return st;
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
    const auto send = [&](int i) {
      return std::pair<const float*, int>{b.row(seg[i], h_), count[i]};
    };
    const auto recv = [&](int i) { return std::pair{staging + i * seg_elems, mine}; };
    if (Status st = exchangeEach(g, send, recv); !st) return st;
  }
  SEAM_CUDA_CHECK(kernels::sumSegments(staging, g.size(), seg_elems, scratch_.data.get(), s_.real(),
                                       stream_->get()));
  takeScratch(b);
  b.kind = op.rows_out.kind;
  b.rows = mine;
  b.present = true;
  return Status::ok();
}

Status RankExecutor::send(const Op& op, int index) {
  const DeviceRows& b = op.tensor == Tensor::kResidual ? residual_ : hidden_;
  const int peer = rank_ + s_.topo.config().tp;
  record(index, bytesOf(b.rows));
  if (peer >= s_.plan.world()) {
    note("rank " + std::to_string(rank_) +
         " sends from the last pipeline stage: nobody receives it; skipped");
    return Status::ok();
  }
  if (b.rows == 0) return Status::ok();  // the receiver expects no rows either (same DP shard)
  SEAM_NCCL_ISSUE(world_comm_.get(), ncclSend(b.data.get(), static_cast<std::size_t>(b.rows) * h_,
                                              ncclFloat, peer, world_comm_.get(), stream_->get()));
  return Status::ok();
}

Status RankExecutor::recv(const Op& op, int index) {
  DeviceRows& b = op.tensor == Tensor::kResidual ? residual_ : hidden_;
  const int peer = rank_ - s_.topo.config().tp;
  b.kind = op.rows_out.kind;
  b.rows = op.rows_out.count;
  b.present = true;
  record(index, bytesOf(b.rows));
  if (peer < 0)
    return Status::invalid("rank " + std::to_string(rank_) +
                           " receives on the first pipeline stage");
  if (b.rows == 0) return Status::ok();
  SEAM_NCCL_ISSUE(world_comm_.get(), ncclRecv(b.data.get(), static_cast<std::size_t>(b.rows) * h_,
                                              ncclFloat, peer, world_comm_.get(), stream_->get()));
  return Status::ok();
}

}  // namespace seam::backend::detail
