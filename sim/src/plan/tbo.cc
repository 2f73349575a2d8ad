#include "seam/sim/plan/tbo.h"

#include <algorithm>
#include <cassert>

#include "seam/sim/plan/dp_gather.h"

namespace seam {

std::vector<int> tboSplit(const Batch& batch) {
  std::vector<int> split(batch.tokens.size());
  for (size_t d = 0; d < split.size(); ++d) split[d] = batch.tokens[d] / 2;
  return split;
}

Batch tboHalfBatch(const ParallelConfig& config, const Batch& batch, AttentionPad pad,
                   const std::vector<int>& split, Half half) {
  if (half == Half::kWhole) return batch;
  // The parent's padded rows (the MAX_LEN mode only places slots; the
  // attention rows do not depend on it).
  const DpGeometry parent(config, batch, DpPadding::kMaxLen, false, CpLayout::kReplicated, pad);
  const int a = config.attnTp();
  Batch out;
  out.tokens.resize(batch.tokens.size());
  out.rows.resize(batch.tokens.size());
  for (size_t d = 0; d < split.size(); ++d) {
    const int p = parent.attentionRows(static_cast<int>(d));
    out.tokens[d] = half == Half::kA ? split[d] : batch.tokens[d] - split[d];
    out.rows[d] = dpAlignedTokens(half == Half::kA ? split[d] : p - split[d], a);
  }
  return out;
}

std::vector<int> tboFirstTokens(const Batch& batch, const std::vector<int>& split, Half half) {
  std::vector<int> first(batch.tokens.size(), 0);
  int offset = 0;
  for (size_t d = 0; d < first.size(); ++d) {
    first[d] = offset + (half == Half::kB ? split[d] : 0);
    offset += batch.tokens[d];
  }
  return first;
}

LayerRange tboLayers(int fkdr, int start, int end) {
  if (fkdr > start && fkdr < end) return {fkdr, end};
  // The engine resets both ends to 0 here, so the TBO path gets layers
  // [0, end) of the model's list, the PPMissingLayers before `start` first.
  if (fkdr < start) return {0, end};
  return {start, start};
}

TboSchedule tboSchedule(ForwardMode mode) {
  // _compute_moe_deepseek_blog_decode / _prefill (operations_strategy.py
  // @0e02cef9). Decode, 5 yields a layer: prepare_attn, attn.prepare |
  // attn.core, prepare_mlp, gate, select | dispatch_a, shared | dispatch_b,
  // experts, combine_a | combine_b | output, postprocess_layer, which the
  // concatenated list joins to the next layer's first chunk. Prefill, 2:
  // prepare_attn .. dispatch_a | dispatch_b, experts, combine_a | shared,
  // combine_b, output, postprocess_layer (joined likewise).
  if (mode == ForwardMode::kDecode)
    return TboSchedule{.yields_per_layer = 5, .delta = 2, .core = 1, .dispatch = 2, .experts = 3};
  return TboSchedule{.yields_per_layer = 2, .delta = 0, .core = 0, .dispatch = 0, .experts = 1};
}

int tboChunk(const Op& op, int first_layer, const TboSchedule& s) {
  const int base = (op.layer - first_layer) * s.yields_per_layer;
  if (op.stage % 2 == 0)
    return base + (op.phase == Phase::kEntry ? 0 : s.core);  // the attention stage
  switch (op.phase) {
    case Phase::kEntry:
      return base + s.core;
    case Phase::kCompute:
      return base + (op.kind == OpKind::kAllToAll && op.rows_out.kind == RowKind::kDispatched
                         ? s.dispatch
                         : s.experts);
    case Phase::kExit:
      return base + s.yields_per_layer;
  }
  return base;
}

namespace {

// Appends the ops of one chunk; `pos` walks the half's ops.
void appendChunk(const std::vector<Op>& ops, const std::vector<int>& chunk, int which, size_t* pos,
                 std::vector<Op>* out) {
  while (*pos < ops.size() && chunk[*pos] == which) out->push_back(ops[(*pos)++]);
}

}  // namespace

void interleaveHalves(const std::vector<Op>& a, const std::vector<int>& chunk_a,
                      const std::vector<Op>& b, const std::vector<int>& chunk_b, int chunks,
                      int delta, std::vector<Op>* out) {
  assert(a.size() == chunk_a.size() && b.size() == chunk_b.size() && "one chunk per op");
  size_t pa = 0, pb = 0;
  for (int k = 0; k < delta; ++k) appendChunk(a, chunk_a, k, &pa, out);
  for (int i = 0; i + delta < chunks; ++i) {
    appendChunk(a, chunk_a, delta + i, &pa, out);
    appendChunk(b, chunk_b, i, &pb, out);
  }
  for (int k = std::max(chunks - delta, 0); k < chunks; ++k) appendChunk(b, chunk_b, k, &pb, out);
  assert(pa == a.size() && pb == b.size() && "every op in a chunk below `chunks`");
}

}  // namespace seam
