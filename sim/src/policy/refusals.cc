// The engine's rules for what it will not run, one function per rule family,
// checked in the engine's order (start-up arguments, then construction, then
// the per-batch gates); seam's own gaps (kNotModelled) come after the engine's
// refusals of the same family, which take precedence. The messages name the
// engine's check so that a refusal can be looked up.
#include <string>
#include <string_view>
#include <vector>

#include "plan_builder.h"
#include "seam/sim/plan/tbo.h"

namespace seam::policy_detail {
namespace {

/// StagePlan.branch_rows raises NotImplementedError on any batch variant but
/// ORDINARY (layer_boundary/construction.py).
constexpr std::string_view kBranchNeedsOrdinaryRows =
    "branch transport requires ordinary batch rows (NotImplementedError in StagePlan.branch_rows)";

}  // namespace

Status PlanBuilder::refuse(bool cp_sharded, LayerRange* tbo_layers) const {
  if (Status st = serverArgsRefusal(c_); !st) return st;
  if (Status st = refuseTboModel(); !st) return st;
  if (Status st = refuseLayerNormSpArgs(); !st) return st;
  if (Status st = refuseLayerNormSpBatch(); !st) return st;
  if (Status st = refuseInputScattered(); !st) return st;
  if (Status st = refuseStageBoundaryCp(); !st) return st;
  bool has_moe = false;
  for (const auto& stack : stacks_)
    for (LayerKind k : stack) has_moe = has_moe || k == LayerKind::kMoe;
  if (Status st = refuseA2aBackend(has_moe); !st) return st;
  if (Status st = refuseCpMoe(has_moe, cp_sharded); !st) return st;
  if (Status st = cpGaps(); !st) return st;
  if (Status st = refuseTboLayers(cp_sharded, tbo_layers); !st) return st;
  return branchGaps();
}

// refuse() reads of the batch only whether it is CP-sharded. Where it gives
// one answer either way (or attention CP is off, so no batch is), no batch
// can change that answer.
Status PlanBuilder::flagSetRefusal() const {
  LayerRange ignored;
  const Status whole = refuse(false, &ignored);
  if (whole || !cp_) return whole;
  const Status sharded = refuse(true, &ignored);
  const bool same = sharded.code() == whole.code() && sharded.message() == whole.message();
  return same ? whole : Status::ok();
}

// Engine refusals of --enable-two-batch-overlap (B1, B5), ahead of the
// variants TBO turns off (the start-up one: serverArgsRefusal).
Status PlanBuilder::refuseTboModel() const {
  if (!tbo_flag_) return Status::ok();
  bool sparse = false, attention = true;
  for (LayerKind k : stacks_[0]) {
    sparse = sparse || k == LayerKind::kMoe;
    attention = attention && (isFfn(k) || k == LayerKind::kAttention);
  }
  // OperationsStrategy.init_new_tbo knows DeepseekV2, Qwen3Moe and MiMoV2
  // decoder layers; seam's two-stage stacks of MLA attention and MoE are DeepSeek's.
  if (c_.model.family != LayerFamily::kTwoStage || !mla_ || !sparse || !attention) {
    return Status::refused(
        "two-batch overlap runs DeepSeek-V2/V3, Qwen3-MoE and MiMo-V2 decoder layers only: "
        "OperationsStrategy.init_new_tbo raises NotImplementedError for " +
        c_.model.name + "'s layers");
  }
  if (input_scattered_) {
    return Status::refused(
        "input-scattered attention never runs on a two-batch-overlap batch (its per-batch gate "
        "requires not can_run_tbo); the engine runs the ordinary variant");
  }
  return Status::ok();
}

// validate_layernorm_sp (arg_groups/layernorm_sp_hook.py), at startup,
// so ahead of the per-batch gate: SP_SUPPORTED_ARCHITECTURES is
// {Qwen3ForCausalLM}; tp > 1; no attention DP; no speculative decoding.
Status PlanBuilder::refuseLayerNormSpArgs() const {
  if (!c_.flags.layernorm_sp) return Status::ok();
  const std::string sp = "LayerNorm sequence parallel (--enable-layernorm-sp) ";
  if (!isQwen3Dense(c_.model)) {
    return Status::refused(
        sp +
        "is only supported for ['Qwen3ForCausalLM'] (Qwen3 dense: GQA attention and dense "
        "MLPs); " +
        (c_.model.name == "pattern" ? "pattern " + c_.model.pattern.text() : c_.model.name) +
        " is not (ValueError in validate_layernorm_sp)");
  }
  if (T_ <= 1) {
    return Status::refused(
        sp +
        "requires tp_size > 1: there is no sequence to shard across a single TP rank "
        "(ValueError in validate_layernorm_sp)");
  }
  if (D_ > 1) {
    return Status::refused(sp +
                           "is not compatible with attention DP (attn_dp=" + std::to_string(D_) +
                           "): SP shards the sequence across the full TP group (ValueError in "
                           "validate_layernorm_sp)");
  }
  if (!c_.model.pattern.mtp.empty() || !c_.flags.capture.empty()) {
    return Status::refused(
        sp +
        "is not compatible with speculative decoding (an MTP step or EAGLE3 aux capture): "
        "the captured aux hidden states would be sequence-sharded (ValueError in "
        "validate_layernorm_sp)");
  }
  return Status::ok();
}

// SEQUENCE_PARALLEL runs on extend batches (layernorm_sp.runs_sp).
Status PlanBuilder::refuseLayerNormSpBatch() const {
  if (!ln_sp_) return Status::ok();
  if (c_.flags.mode != ForwardMode::kExtend) {
    return Status::refused(
        "LayerNorm sequence parallel runs on extend batches only (layernorm_sp.runs_sp)");
  }
  if (legacy_)
    return Status::refused("the classic (Gen A) communicator has no LayerNorm-SP variant");
  if (branch_) {
    return Status::refused(std::string(kBranchNeedsOrdinaryRows) +
                           " (LongCat-Flash on a LayerNorm-SP batch)");
  }
  if (naive_) return Status::notModelled("a naive baseline of LayerNorm sequence parallel");
  if (c_.flags.dense_tp1) {
    return Status::notModelled(
        "LayerNorm sequence parallel with fully-DP dense FFNs (moe_dense_tp_size 1)");
  }
  return Status::ok();
}

// AttnTpContext.init_context and the per-batch gate (§6.5): otherwise the
// engine runs the ordinary variant.
Status PlanBuilder::refuseInputScattered() const {
  if (!input_scattered_) return Status::ok();
  const std::string no = "the engine does not run input-scattered attention ";
  if (!two_stage_ || c_.model.shape.q_lora_rank <= 0) {
    return Status::refused(no + "without an MLA attention with q_lora_rank (" + c_.model.name +
                           " has none)");
  }
  if (legacy_)
    return Status::refused("the classic (Gen A) communicator has no input-scattered mode");
  if (naive_) return Status::notModelled("a naive baseline of input-scattered attention");
  if (T_ == 1) return Status::refused(no + "at tp=1");
  if (D_ > 1)
    return Status::refused(no + "under DP attention (attn_dp=" + std::to_string(D_) + ")");
  if (c_.flags.a2a != A2aBackend::kNone)
    return Status::refused(no + "with an all-to-all MoE backend");
  if (c_.flags.dense_tp1) return Status::refused(no + "with fully-DP dense FFNs");
  if (c_.flags.mode != ForwardMode::kExtend)
    return Status::refused(no + "on a decode batch (extend only)");
  if (!c_.flags.capture.empty()) return Status::refused(no + "with EAGLE3 aux capture");
  // No gate on the tokens: tp_reduce_scatter asserts tokens % tp == 0, but the
  // eager forward pads an input-scattered batch to a multiple of tp first
  // (prepare_attn_tp_scatter_input; resolveAttentionPad in rows.cc).
  // LongCat-Flash declares qkv_latent_func, so the batch takes the INPUT_SCATTERED variant.
  if (branch_) {
    return Status::refused(std::string(kBranchNeedsOrdinaryRows) +
                           " (LongCat-Flash on an input-scattered batch)");
  }
  return Status::ok();
}

// models/nemotron_h_utils.py: make_stage_boundary refuses these.
Status PlanBuilder::refuseStageBoundaryCp() const {
  if (!two_stage_ && cfg_.attn_cp > 1) {
    return Status::refused(
        "Nemotron-H refuses attention context parallel (attn_cp=" + std::to_string(cfg_.attn_cp) +
        "): NotImplementedError in make_stage_boundary");
  }
  return Status::ok();
}

Status PlanBuilder::refuseA2aBackend(bool has_moe) const {
  if (c_.flags.a2a != A2aBackend::kNone && has_moe && cfg_.moe_ep != cfg_.tp) {
    // SGLang sets ep_size = tp_size for the DeepEP backend.
    return Status::refused(
        "the deepep all-to-all backend runs with moe_ep == tp (SGLang sets ep_size = tp_size); "
        "got moe_ep=" +
        std::to_string(cfg_.moe_ep) + " tp=" + std::to_string(cfg_.tp));
  }
  if (c_.flags.a2a != A2aBackend::kNone && !has_moe) {
    return Status::refused("an all-to-all MoE backend needs a MoE layer; the pattern has none");
  }
  return Status::ok();
}

// factories._reject_unsupported_cp_moe (construction time, any batch), then
// the CP batch's gates.
Status PlanBuilder::refuseCpMoe(bool has_moe, bool cp_sharded) const {
  if (!cp_) return Status::ok();
  const bool tp_moe = has_moe && c_.flags.a2a == A2aBackend::kNone;
  if (has_moe && c_.flags.a2a != A2aBackend::kNone && D_ > 1 && !mla_) {
    return Status::refused(
        "a MoE dispatched per DP shard under attention DP and GQA prefill CP "
        "(_reject_unsupported_cp_moe)");
  }
  if (tp_moe && cfg_.moe_dp == cfg_.attn_cp && mla_) {
    return Status::refused(
        "a MoE on the TP group with moe_dp_size == attn_cp_size under DSA or MLA prefill CP "
        "(_reject_unsupported_cp_moe)");
  }
  if (tp_moe && cfg_.moe_dp == cfg_.attn_cp && D_ > 1) {
    return Status::refused(
        "a MoE on the TP group with moe_dp_size == attn_cp_size under attention DP and "
        "attention CP (_reject_unsupported_cp_moe)");
  }
  if (input_scattered_) {
    // _input_can_be_scattered: not _generic_prefill_cp_shards_tokens(); the
    // engine silently runs the ordinary variant (the same case).
    return Status::refused(
        "input-scattered attention is excluded under prefill CP (_input_can_be_scattered); "
        "the engine runs the ordinary variant");
  }
  if (cp_sharded && branch_) {
    return Status::refused(std::string(kBranchNeedsOrdinaryRows) +
                           " (LongCat-Flash under a CP-sharded extend batch)");
  }
  if (cp_sharded && mla_ && (a_ > 1 || D_ > 1)) {
    return Status::refused(
        "attn_cp_gather asserts attn_dp_size == 1 and attn_tp_size == 1 (MLA prefill CP, "
        "attn_tp=" +
        std::to_string(a_) + " attn_dp=" + std::to_string(D_) + ")");
  }
  return Status::ok();
}

// seam's gaps under attention CP, after all the engine's refusals above.
Status PlanBuilder::cpGaps() const {
  if (cp_ && legacy_) {
    return Status::notModelled("the classic (Gen A) tables under attention CP (attn_cp=" +
                               std::to_string(cfg_.attn_cp) + "; Gen B's MOE_FULL rows)");
  }
  if (cp_ && ln_sp_) {
    // SP shards the sequence over the whole TP group (get_parallel().tp_group),
    // while attention CP replicates the rows and attention weights over attn_cp.
    return Status::notModelled(
        "LayerNorm sequence parallel under attention CP (attn_cp=" + std::to_string(cfg_.attn_cp) +
        "): SP's padded shards span the TP group");
  }
  return Status::ok();
}

// B1: the DeepSeek model's layer range; a dense FFN inside it asserts.
Status PlanBuilder::refuseTboLayers(bool cp_sharded, LayerRange* range) const {
  if (!tbo_flag_) return Status::ok();
  const int layers = static_cast<int>(stacks_[0].size()) / spl_;
  int fkdr = layers;
  for (int l = 0; l < layers && fkdr == layers; ++l) {
    if (stacks_[0][l * spl_ + 1] == LayerKind::kMoe) fkdr = l;
  }
  // Each pipeline stage decides its own range (tboLayers). A stage that
  // starts after fkdr hands layers [0, end) to the TBO path, PPMissingLayer
  // first, and the engine raises on the first batch that can run TBO
  // (every batch here); so only the last stage can run split, and its
  // halves merge before the final norm: no half crosses a pipeline cut.
  const std::vector<int> pp_of = ppOfStages();
  int start = 0;  // the first layer of the last pipeline stage
  while (start < layers && pp_of[start * spl_] != pp_of.back()) ++start;
  *range = tboLayers(fkdr, start, layers);
  if (!range->empty() && range->first < start) {
    return Status::refused(
        "two-batch overlap under pipeline parallelism: pipeline stage " +
        std::to_string(pp_of.back()) + " starts at layer " + std::to_string(start) +
        ", after first_k_dense_replace=" + std::to_string(fkdr) +
        ", so DeepseekV2Model.forward hands layers [0, " + std::to_string(layers) +
        ") to the TBO path, PPMissingLayer first, and OperationsStrategy.init_new_tbo raises "
        "NotImplementedError (sglang issue #12427)");
  }
  for (int l = range->first; l < range->last; ++l) {
    if (stacks_[0][l * spl_ + 1] != LayerKind::kMoe) {
      return Status::refused("DeepSeek asserts \"dense layer TBO not yet implemented\": layer " +
                             std::to_string(l) + " of the two-batch-overlap range [" +
                             std::to_string(range->first) + ", " + std::to_string(range->last) +
                             ") has a dense FFN");
    }
  }
  return refuseTboCapture(cp_sharded, *range);
}

// EAGLE3 captures (layers_to_capture) are taken in the whole-batch layer
// loop only; the TBO path and its children (aux_hidden_states_buffer =
// None in filter_batch) capture nothing.
Status PlanBuilder::refuseTboCapture(bool cp_sharded, const LayerRange& range) const {
  for (int stage : c_.flags.capture) {
    if (!range.empty() && !cp_sharded && stage >= range.first * spl_) {
      return Status::refused(
          "EAGLE3 aux capture before layer " + std::to_string(stage / spl_) +
          " inside the two-batch-overlap range [" + std::to_string(range.first) + ", " +
          std::to_string(range.last) +
          "): DeepseekV2Model.forward captures aux hidden states "
          "only in its whole-batch layer loop, so the engine never captures it and the "
          "EAGLE3 draft reads fewer aux states than it was built for");
    }
  }
  return Status::ok();
}

// Branches run only on ORDINARY batches (serving-boundaries §10); seam's gaps.
Status PlanBuilder::branchGaps() const {
  if (!branch_) return Status::ok();
  if (legacy_)
    return Status::notModelled(
        "the classic LongCat-Flash communicator (branch layers under legacy)");
  if (c_.flags.dense_tp1) {
    return Status::notModelled(
        "LongCat-Flash branch layers with fully-DP dense MLPs (moe_dense_tp_size 1: "
        "mlp0 and mlp1 on local rows)");
  }
  return Status::ok();
}

}  // namespace seam::policy_detail
