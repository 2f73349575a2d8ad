// Where SGLang's code issues an op of a declared plan. The declared policy
// models what the engine does, bugs included, so a violation on a case the
// engine runs is a finding about the engine: the site names the file and
// function that make the call, for the finding's report.
#pragma once

#include <cstdint>
#include <string_view>

namespace seam {

/// The engine call that issues an op; kUnnamed where the planner names none.
/// Ids are stable: stores and JSON refer to them by engineSiteName.
enum class EngineSite : std::uint8_t {
  kUnnamed,
  /// The fused all-reduce + add + RMSNorm completing the sum a previous stage
  /// left for an attention-like stage's input (complete_attention_input).
  kAttentionInputFusion,
  /// The fused all-reduce + add + RMSNorm completing a mixer's attention-TP
  /// sum at an FFN's input (complete_ffn_input).
  kFfnInputFusion,
  /// The reduce_scatterv that returns an FFN's sum over attention DP
  /// (_reduce_and_redistribute_output_varlen).
  kDpReduceScatterv,
  /// The attention-TP reduce-scatter onto an FFN's local rows, whose output
  /// chunk is tensor_split's (attn_tp_reduce_scatter).
  kAttnTpReduceScatter,
  /// The Nemotron-H MTP MoE layer's own attention-TP all-reduce of an
  /// attention layer's output under DP attention, before its communicator's
  /// FFN input (NemotronHMTPMoEDecoderLayer.forward).
  kMtpMoeAttnTpAllReduce,
  /// The DP gather of an FFN's input inside a two-batch-overlap half, whose
  /// child batch publishes no global DP buffer (dp_gather ->
  /// get_global_dp_buffer under _StageExecutor.next's set_dp_buffer_len).
  kTboDpGather,
};
inline constexpr int kEngineSiteCount = 7;

/// What the engine calls at a site and where, in SGLang's sources.
struct EngineSiteInfo {
  std::string_view name;   ///< stable id, e.g. "dp-reduce-scatterv"
  std::string_view call;   ///< the call as the engine makes it
  std::string_view where;  ///< file (function) @commit, under python/sglang/srt/
};

/// The site's description; kUnnamed has empty fields.
const EngineSiteInfo& engineSiteInfo(EngineSite site);

}  // namespace seam
