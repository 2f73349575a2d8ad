// The judges' DP lowering (judge_dp.h), organised by what each rank does
// with the buffer rather than by op kind first: which rows it holds, whether
// it writes them into the zeroed buffer, which collectives follow, and what
// it reads back. The rules (dp_attention.py @060c48f7): _dp_gather picks
// all_gatherv (SGLANG_DP_USE_GATHERV), the all-reduce path (SUM_LEN, or any
// attention CP, or a CP-sharded shard), or the all-gather path (MAX_LEN:
// attn_tp 1 directly, else an attn_tp reduce-scatter of the replicated or
// partial rows first); dp_scatter copies the rank's slot (its own CP shard's
// token rows on a CP-sharded shard); dp_reduce_scatter reduce-scatters over
// tp and re-gathers a slot over attn_tp (and attn_cp), or all-reduces and
// narrows when the buffer does not split into tp equal chunks under CP.
#include "seam/sim/replay/judge_dp.h"

#include <utility>

namespace seam {

namespace {

/// Appends steps to one rank's lowering.
class Steps {
 public:
  Steps(DpLowering* out, std::int64_t row_bytes) : out_(out), rb_(row_bytes) { out_->clear(); }
  void collective(DpStepKind kind, Axis axis, int in, int out, std::int64_t moved_rows,
                  int offset = 0) {
    out_->push_back({kind, static_cast<std::int8_t>(axis), in, out, offset, moved_rows * rb_});
  }
  void local(DpStepKind kind, int in, int out, int offset, std::int64_t touched_rows) {
    out_->push_back({kind, kNoAxis, in, out, offset, touched_rows * rb_});
  }
  /// Bring `rows` rows to `held` rows: drop the rows past them, or pad with
  /// computed pad rows (a slot shorter than the attention rows, or the
  /// attention rows shorter than local_dp_buffer_len).
  void fitTo(int rows, int held) {
    if (rows > held) out_->push_back({DpStepKind::kTrim, kNoAxis, rows, held, 0, 0});
    if (rows < held)
      out_->push_back({DpStepKind::kPadLocal, kNoAxis, rows, held, 0, (held - rows) * rb_});
  }

 private:
  DpLowering* out_;
  std::int64_t rb_;
};

/// Where rank c's token rows of entry e start in the buffer, under the fault.
int cpRowsAt(const Op& op, const JudgeDpBuffer::Entry& e, int c) {
  if (op.dp_fault == DpFault::kCpShardOffsetDropped) return e.start;
  const int base = op.dp_fault == DpFault::kUnalignedSlots ? e.start_unaligned : e.start;
  return base + e.cp_start[c];
}

/// Whether this rank copies its rows into the zeroed buffer: a partial sum
/// is written by every attention-TP rank, a replicated value by position 0
/// only (kWriterRuleSwapped: the other way round).
bool writesItsRows(const Op& op, int i) {
  const bool partial = op.kind == OpKind::kDpGatherPartial;
  if (op.dp_fault == DpFault::kWriterRuleSwapped) return !partial || i == 0;
  return partial || i == 0;
}

void gather(const Op& op, const ParallelConfig& k, const JudgeDpBuffer& b, int i, int c, int d,
            Steps& s) {
  const JudgeDpBuffer::Entry& e = b.entries[d];
  const int G = b.rows, L = e.rows, atp = k.tp / (k.attn_dp * k.attn_cp);
  if (e.cp_rows > 0) {
    // Every CP rank holds its own shard and writes its token rows.
    s.local(DpStepKind::kZeroGlobal, e.cp_rows, G, 0, G);
    const int n = e.cp_tokens[c];
    if (writesItsRows(op, i) && n > 0) s.local(DpStepKind::kWriteSlot, n, G, cpRowsAt(op, e, c), n);
    s.collective(DpStepKind::kAllReduce, Axis::kTp, G, G, G);
    return;
  }
  // The held rows become local_dp_buffer_len rows: pad rows after the tokens,
  // or (a padded local batch meeting the other mode's shorter entry) cut.
  s.fitTo(e.held, L);
  const int at = op.dp_fault == DpFault::kUnalignedSlots ? e.start_unaligned : e.start;
  if (b.gatherv) {
    s.collective(DpStepKind::kAllGatherv, Axis::kTp, L, G, G, at);
  } else if (k.attn_cp > 1 || b.mode == DpPadding::kSumLen) {
    s.local(DpStepKind::kZeroGlobal, L, G, 0, G);
    if (writesItsRows(op, i) && c == 0 && L > 0) s.local(DpStepKind::kWriteSlot, L, G, at, L);
    s.collective(DpStepKind::kAllReduce, Axis::kTp, G, G, G);
  } else if (atp == 1) {
    s.collective(DpStepKind::kAllGather, Axis::kTp, L, G, G);
  } else {
    const bool zero =
        op.kind == OpKind::kDpGatherReplicate && i != 0 && op.dp_fault != DpFault::kSkipZeroFill;
    if (zero) s.local(DpStepKind::kZeroLocal, L, L, 0, L);
    s.collective(DpStepKind::kReduceScatter, Axis::kAttnTp, L, L / atp, L);
    s.collective(DpStepKind::kAllGather, Axis::kTp, L / atp, G, G);
  }
}

void scatter(const Op& op, const ParallelConfig& k, const JudgeDpBuffer& b, int c, int d,
             Steps& s) {
  const JudgeDpBuffer::Entry& e = b.entries[d];
  if (e.cp_rows > 0) {
    // dp_cp_take_back_output: the own CP shard's token rows, then its pad rows.
    const int from = op.dp_fault == DpFault::kCpPeerShard ? (c + 1) % k.attn_cp : c;
    const int n = e.cp_tokens[from];
    s.local(DpStepKind::kReadSlot, b.rows, n, cpRowsAt(op, e, from), n);
    if (e.cp_rows > n) s.local(DpStepKind::kPadLocal, n, e.cp_rows, 0, e.cp_rows - n);
    return;
  }
  const int at = op.dp_fault == DpFault::kUnalignedSlots ? e.start_unaligned : e.start;
  s.local(DpStepKind::kReadSlot, b.rows, e.rows, at, e.rows);
  s.fitTo(e.rows, e.held);
}

void reduceScatter(const Op& op, const ParallelConfig& k, const JudgeDpBuffer& b, int d, Steps& s) {
  const JudgeDpBuffer::Entry& e = b.entries[d];
  const int G = b.rows, T = k.tp, atp = T / (k.attn_dp * k.attn_cp);
  if (k.attn_cp > 1 && G % T != 0) {
    // Slots aligned to attn_tp, not attn_cp * attn_tp: all-reduce, then narrow.
    s.collective(DpStepKind::kAllReduce, Axis::kTp, G, G, G);
    const int at = op.dp_fault == DpFault::kUnalignedSlots ? e.start_unaligned : d * e.rows;
    s.local(DpStepKind::kReadSlot, G, e.rows, at, e.rows);
    s.fitTo(e.rows, e.held);
    return;
  }
  int rows = G / T;
  s.collective(DpStepKind::kReduceScatter, Axis::kTp, G, rows, G);
  // With attn_tp or attn_cp > 1 a slot's tp chunks lie on its attention ranks.
  const std::pair<Axis, int> regather[] = {{Axis::kAttnTp, atp}, {Axis::kAttnCp, k.attn_cp}};
  for (const auto& [axis, size] : regather) {
    if (T == k.attn_dp || size <= 1) continue;
    s.collective(DpStepKind::kAllGather, axis, rows, rows * size, rows * size);
    rows *= size;
  }
  s.fitTo(rows, e.held);
}

}  // namespace

void judgeLowerDp(const Op& op, const ParallelConfig& k, const JudgeDpBuffer& b, int i, int c,
                  int d, std::int64_t row_bytes, DpLowering* out) {
  Steps s(out, row_bytes);
  if (op.kind == OpKind::kDpGatherPartial || op.kind == OpKind::kDpGatherReplicate) {
    gather(op, k, b, i, c, d, s);
  } else if (op.kind == OpKind::kDpScatter) {
    scatter(op, k, b, c, d, s);
  } else if (op.kind == OpKind::kDpReduceScatter) {
    reduceScatter(op, k, b, d, s);
  }
}

}  // namespace seam
