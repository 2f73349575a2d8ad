#include "case_options.h"

#include "command.h"
#include "memory_budget.h"
#include "seam/properties/prop.h"

namespace seam::tools {

void addFilterOptions(CLI::App* sub, FilterOptions& o) {
  sub->add_option("--pp", o.pp, "fix the pipeline stages");
  sub->add_option("--tp", o.tp, "fix tp (ranks per pipeline stage)");
  sub->add_option("--dp", o.dp, "fix attention DP (attn_dp)");
  sub->add_option("--cp", o.cp, "fix attention CP (attn_cp)");
  sub->add_option("--ep", o.ep, "fix MoE expert parallel (moe_ep)");
  sub->add_option("--moe-dp", o.moe_dp, "fix MoE data parallel (moe_dp)");
}

void addFlagFilterOptions(CLI::App* sub, FlagFilterSpec& o) {
  sub->add_option("--a2a", o.a2a,
                  "keep the cases of these MoE all-to-all backends (a list): none, deepep");
  sub->add_option("--fusion", o.fusion,
                  "keep the cases with fused all-reduce+add+RMSNorm on or off (a list)");
  sub->add_option("--dp-padding", o.dp_padding,
                  "keep the cases of these DP paddings (a list): max_len, sum_len");
  sub->add_option("--reduction", o.reduction,
                  "keep the cases of these FFN returns over DP (a list): auto (the model's "
                  "default), ar, rs, rsv, rs+rsv");
  sub->add_option("--mode", o.mode,
                  "keep the cases of these forward modes (a list): decode, extend");
}

void addCaseOptions(CLI::App* sub, CaseOptions& o) {
  sub->add_option("--model", o.model, "model preset (see `seam models`)");
  sub->add_option("--pattern", o.pattern, "a bare pattern instead of a preset, e.g. 'M-*E-'");
  sub->add_option(
         "--family", o.family,
         "layers of a bare --pattern: single-stage (Nemotron-H, M * - E) or two-stage "
         "(mixer M * G P then FFN - E per decoder layer, e.g. '*-*E'); or training (a preset "
         "under --layout primerl|megatron, forward and backward)")
      ->capture_default_str();
  sub->add_option("--layout", o.layout, "--family training: primerl|megatron")
      ->capture_default_str();
  sub->add_option("--dp-replicate", o.dp_replicate, "--family training: PrimeRL HSDP replicas")
      ->capture_default_str();
  sub->add_option("--docs", o.docs,
                  "--family training: document lengths of the packed row, e.g. 5,2,9");
  sub->add_option("--ac", o.ac, "--family training: PrimeRL activation checkpointing on|off")
      ->capture_default_str();
  sub->add_option("--router-dtype", o.router_dtype,
                  "--family training: moe_router_dtype float32|bfloat16 (default: PrimeRL "
                  "float32, Megatron bfloat16)");
  sub->add_option("--reduce-dtype", o.reduce_dtype,
                  "--family training: PrimeRL FSDP reduce_dtype float32|bfloat16")
      ->capture_default_str();
  sub->add_option("--ep-backend", o.ep_backend,
                  "--family training: PrimeRL ep_comm_backend torch|deepep")
      ->capture_default_str();
  sub->add_option("--etp", o.etp,
                  "--family training: Megatron expert_tensor_parallel_size (default: tp)");
  sub->add_option("--expert-bias", o.expert_bias,
                  "--family training: Megatron moe_router_enable_expert_bias on|off")
      ->capture_default_str();
  sub->add_option("--dispatcher", o.dispatcher,
                  "--family training: Megatron moe_token_dispatcher_type allgather|alltoall "
                  "(default: allgather)");
  sub->add_option("--cp-comm-type", o.cp_comm_type,
                  "--family training: Megatron cp_comm_type p2p|all_gather|a2a (default: p2p)");
  sub->add_option("--pp", o.pp, "pipeline stages")->capture_default_str();
  sub->add_option("--tp", o.tp, "ranks per pipeline stage")->capture_default_str();
  sub->add_option("--dp", o.dp, "attention DP (attn_dp; DP attention when > 1)")
      ->capture_default_str();
  sub->add_option("--cp", o.cp, "attention CP (attn_cp)")->capture_default_str();
  sub->add_option("--ep", o.ep, "MoE expert parallel (moe_ep)")->capture_default_str();
  sub->add_option("--moe-dp", o.moe_dp, "MoE data parallel (moe_dp)")->capture_default_str();
  sub->add_option("--tokens", o.tokens, "tokens per DP shard, e.g. 4,0,3 (default 4 each)");
  sub->add_option("--a2a", o.a2a, "MoE all-to-all backend: none|deepep")->capture_default_str();
  sub->add_option("--fusion", o.fusion, "fused all-reduce+add+RMSNorm available: on|off")
      ->capture_default_str();
  sub->add_option("--dp-padding", o.dp_padding, "DP padding: max_len|sum_len")
      ->capture_default_str();
  sub->add_option(
         "--reduction", o.reduction,
         "FFN return over DP: auto|ar|rs|rsv|rs+rsv (auto: SGLang's default for the model)")
      ->capture_default_str();
  sub->add_option("--mode", o.mode, "forward mode: decode|extend")->capture_default_str();
  sub->add_flag("--ln-sp", o.ln_sp, "LayerNorm sequence parallel");
  sub->add_flag(
      "--input-scattered", o.input_scattered,
      "input-scattered attention (enable_attn_tp_input_scattered; extend batches of MLA models)");
  sub->add_flag(
      "--dp-gatherv", o.dp_gatherv,
      "SGLANG_DP_USE_GATHERV: DP gathers as tp all_gatherv (attn_tp 1, tp == dp, sum_len)");
  sub->add_flag("--tbo", o.tbo,
                "two-batch overlap (enable_two_batch_overlap; DeepSeek decoder layers, with --a2a "
                "deepep or --dp > 1)");
  sub->add_option("--dense-tp", o.dense_tp,
                  "dense FFN TP size of two-stage layers: tp|1 (1 = moe_dense_tp_size 1, fully DP)")
      ->capture_default_str();
  sub->add_option("--capture", o.capture,
                  "aux hidden-state snapshots before these stages, e.g. 2,5");
  sub->add_option("--policy", o.policy, "boundary policy: declared|legacy|naive")
      ->capture_default_str();
  sub->add_option("--decision", o.decision,
                  "plan with this planner decision flipped (a planted bug)");
  sub->add_option("--trace", o.trace,
                  "an engine trace (JSON lines, see README) to check instead of the policy's plan");
  // Checked once the command line is parsed, so that the error is CLI11's
  // one line and comes before anything is read or built.
  sub->parse_complete_callback([sub, &o] {
    if (Status s = checkCaseOptionsApply(*sub, o); !s) throw CLI::ValidationError(s.message());
  });
}

Status checkCaseOptionsApply(const CLI::App& sub, const CaseOptions& o) {
  if (!isTraining(o)) {
    if (Status s = refuseGiven(sub,
                               {"--layout", "--dp-replicate", "--docs", "--etp", "--expert-bias",
                                "--dispatcher", "--cp-comm-type"},
                               "--family training");
        !s) {
      return s;
    }
  }
  // A bare single-stage pattern has no dense FFN stage of its own.
  if (!o.pattern.empty() && o.family == "single-stage") {
    if (Status s = refuseGiven(sub, {"--dense-tp"},
                               "two-stage layers (--family two-stage or a two-stage preset)");
        !s) {
      return s;
    }
  }
  if (sub.count("--trace") > 0) {
    if (Status s =
            refuseGiven(sub, {"--decision", "--policy"},
                        "a policy's plan; a --trace is an engine's recording, judged as it is");
        !s) {
      return s;
    }
  }
  return Status::ok();
}

Expected<Plan> buildPolicyPlan(const CaseOptions& o, const Case& c) {
  if (Status s = checkCaseMemory(c); !s) return s;
  auto policy = parsePolicy(o.policy);
  if (!policy) return policy.status();
  Schema schema;
  if (!o.decision.empty()) {
    auto d = properties::parseDecision(o.decision);
    if (!d) return d.status();
    schema = Schema::with(*d);
  }
  return buildPlan(c, *policy, schema);
}

}  // namespace seam::tools
