// The LongCat-Flash branch cases, two-batch-overlap and LayerNorm SP cases
// the GPU tests run (executor_plans_test.cc), shared with the CPU test that checks, without a
// GPU, that each plans, holds in the ledger and runs bit-identical to the
// reference on the CPU executor (plan_lanes_test.cc).
#pragma once

#include <vector>

#include "../sim/case_builders.h"
#include "seam/sim/model/case.h"

namespace seam::testing {

/// LongCat-Flash (the preset: 28 layers of attn0, MoE branch, mlp0, attn1, mlp1).
inline Case longcatCase(ParallelConfig config, std::vector<int> tokens, Flags flags = {}) {
  return presetCase("longcat-flash", config, std::move(tokens), std::move(flags));
}

inline Flags tboFlags(A2aBackend a2a, ForwardMode mode = ForwardMode::kDecode) {
  Flags f;
  f.a2a = a2a;
  f.mode = mode;
  f.tbo = true;
  return f;
}

/// Branch cases of `world` ranks (1 or 2): TP, DP attention (the branch's
/// own dp_scatter), an idle DP rank, SUM_LEN, a reduce-scatter DP return, the
/// deepep all-to-all (with DP attention too).
inline std::vector<Case> branchCases(int world) {
  // The deepep all-to-all: the MoE branch dispatches and combines on local
  // rows and owes no all-reduce; the merge cuts the hidden state to them.
  Flags deepep;
  deepep.a2a = A2aBackend::kDeepep;
  Flags deepep_extend = deepep;
  deepep_extend.mode = ForwardMode::kExtend;
  if (world == 1) return {longcatCase({}, {3}), longcatCase({}, {1}), longcatCase({}, {3}, deepep)};
  Flags sum_len;
  sum_len.dp_padding = DpPadding::kSumLen;
  Flags rs;
  rs.reduction = BoundaryReduction::kRs;
  return {longcatCase({.tp = 2}, {4}),
          longcatCase({.tp = 2}, {5}),
          longcatCase({.tp = 2, .attn_dp = 2}, {3, 2}),
          longcatCase({.tp = 2, .attn_dp = 2}, {4, 0}),
          longcatCase({.tp = 2, .attn_dp = 2}, {3, 2}, sum_len),
          longcatCase({.tp = 2, .attn_dp = 2}, {3, 2}, rs),
          longcatCase({.tp = 2, .moe_ep = 2}, {5}, deepep),
          longcatCase({.tp = 2, .moe_ep = 2}, {5}, deepep_extend),
          longcatCase({.tp = 2, .attn_dp = 2, .moe_ep = 2}, {3, 2}, deepep)};
}

/// DeepSeek-style TBO cases of `world` ranks (1 or 2), decode and extend:
/// the deepep all-to-all, DP attention (the halves' own DP gathers), both,
/// an idle DP rank, a fully-DP dense layer, SUM_LEN, the MTP step after the
/// merge, attention-CP replicas.
inline std::vector<Case> tboCases(int world) {
  std::vector<Case> out;
  for (ForwardMode mode : {ForwardMode::kDecode, ForwardMode::kExtend}) {
    const Flags deepep = tboFlags(A2aBackend::kDeepep, mode);
    if (world == 1) {
      out.push_back(twoStageCase("*-*E*E", {}, {4}, deepep));
      out.push_back(twoStageCase("*-*E*E", {}, {5}, deepep));
      continue;
    }
    const Flags none = tboFlags(A2aBackend::kNone, mode);
    out.push_back(twoStageCase("*-*E*E", {.tp = 2, .moe_ep = 2}, {5}, deepep));
    out.push_back(twoStageCase("*-*E*E", {.tp = 2, .attn_dp = 2}, {3, 2}, none));
    out.push_back(twoStageCase("*-*E*E", {.tp = 2, .attn_dp = 2}, {3, 0}, none));
    out.push_back(twoStageCase("*-*E*E", {.tp = 2, .attn_dp = 2, .moe_ep = 2}, {3, 2}, deepep));
  }
  if (world == 1) {
    out.push_back(twoStageCase("*-*E*E/*E", {}, {4}, tboFlags(A2aBackend::kDeepep)));
    return out;
  }
  Flags dense_dp = tboFlags(A2aBackend::kDeepep);
  dense_dp.dense_tp1 = true;
  out.push_back(twoStageCase("*-*E*E", {.tp = 2, .moe_ep = 2}, {6}, dense_dp));
  Flags sum_len = tboFlags(A2aBackend::kNone);
  sum_len.dp_padding = DpPadding::kSumLen;
  out.push_back(twoStageCase("*-*E*E", {.tp = 2, .attn_dp = 2}, {3, 2}, sum_len));
  out.push_back(
      twoStageCase("*-*E*E/*E", {.tp = 2, .moe_ep = 2}, {4}, tboFlags(A2aBackend::kDeepep)));
  // Attention CP on a batch it does not shard (decode; an extend batch of
  // fewer tokens than attn_cp): both ranks hold the whole batch and split it alike.
  // MLA CP as _deepseek_family_overrides runs it: deepep, ep = tp, fully-DP dense FFNs.
  Flags cp_decode = tboFlags(A2aBackend::kDeepep);
  cp_decode.dense_tp1 = true;
  Flags cp_extend = tboFlags(A2aBackend::kDeepep, ForwardMode::kExtend);
  cp_extend.dense_tp1 = true;
  out.push_back(twoStageCase("*-*E*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {5}, cp_decode));
  out.push_back(twoStageCase("*-*E*E", {.tp = 2, .attn_cp = 2, .moe_ep = 2}, {1}, cp_extend));
  return out;
}

/// LayerNorm SP cases (Qwen3 dense, extend, tp = 2; layernorm_sp.shard_token_rows):
/// M = 5 (chunks of 3, one padding row), an even M = 4, M = 1 (the second
/// chunk all padding), and the bare two-stage stack.
inline std::vector<Case> layerNormSpCases() {
  Flags sp;
  sp.mode = ForwardMode::kExtend;
  sp.layernorm_sp = true;
  return {presetCase("qwen3-8b", {.tp = 2}, {5}, sp), presetCase("qwen3-8b", {.tp = 2}, {4}, sp),
          presetCase("qwen3-8b", {.tp = 2}, {1}, sp), twoStageCase("*-*-", {.tp = 2}, {5}, sp)};
}

}  // namespace seam::testing
