// The judges' own lowering of the plan's DP ops (dp_gather_partial,
// dp_gather_replicate, dp_scatter, dp_reduce_scatter) into the collectives
// and copies SGLang's layers/dp_attention.py runs, and the DP buffer it
// works on, written from the engine's rules (docs/research/
// serving-dp-gather-tbo.md A1-A8, docs/modelling/sglang.md) without the
// planner's DpGeometry or lowerDpOp. The ledger replays these steps and
// property 4 matches their collectives; the CUDA executor and `seam plan
// --lower-dp` run lowerDpOp, and the agreement tests (tests/sim/
// judge_agreement.h) hold the two to the same steps on every DP op of the
// world-8 and world-16 sweeps' plans and of generated batches, every
// planted DpFault included.
#pragma once

#include <cstdint>
#include <vector>

#include "seam/sim/model/parallel_config.h"
#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/plan/rows.h"

namespace seam {

/// The gathered DP buffer of one padding mode (_dp_gather's global tokens).
struct JudgeDpBuffer {
  struct Entry {
    int tokens = 0;  ///< B_d
    int rows = 0;    ///< local_dp_buffer_len: B_d aligned to attn_tp, or the longest (MAX_LEN)
    int start = 0;   ///< first row of the shard's slot
    int start_unaligned = 0;  ///< where the slot starts counted from raw tokens (a DpFault)
    int held = 0;     ///< the attention rows the shard's ranks hold: B_d, the longest aligned
                      ///< entry (AttentionPad::kDpBuffer) or B_d aligned (kAlignedEntry)
    int cp_rows = 0;  ///< a CP-sharded shard: rows of each CP shard; else 0
    std::vector<int> cp_tokens, cp_start;  ///< per CP rank: token rows, first row in the slot
  };
  DpPadding mode = DpPadding::kMaxLen;
  int rows = 0;          ///< global_dp_buffer_len
  bool gatherv = false;  ///< is_dp_gatherv_active
  std::vector<Entry> entries;
};

/// The buffer of a batch of `n` tokens per DP shard in padding `mode`;
/// `gatherv_env`: SGLANG_DP_USE_GATHERV; `cp`: the judged CP layout; `pad`:
/// what the attention rows hold (the same whatever `mode`: a DP op of the
/// other mode meets them as they are); `held`: each shard's attention rows
/// where fixed (a TBO child's tbo_padded_len), else empty.
JudgeDpBuffer judgeDpBuffer(const ParallelConfig& config, const std::vector<int>& n, DpPadding mode,
                            bool gatherv_env, CpLayout cp, AttentionPad pad = AttentionPad::kTokens,
                            const std::vector<int>& held = {});

/// The steps rank (attention TP position i, CP position c, DP shard d) runs
/// for DP op `op` on buffer `b`, each row `row_bytes` long, honouring the
/// fault the op carries (Op::dp_fault).
void judgeLowerDp(const Op& op, const ParallelConfig& config, const JudgeDpBuffer& b, int i, int c,
                  int d, std::int64_t row_bytes, DpLowering* out);

}  // namespace seam
