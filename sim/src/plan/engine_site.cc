// The engine call sites the declared policy names, read in sgl-project/sglang
// at the commits given (docs/modelling/sglang.md lists what each one does).
#include "seam/sim/plan/engine_site.h"

#include <array>

namespace seam {

namespace {

constexpr std::array<EngineSiteInfo, kEngineSiteCount> kSites = {{
    {"", "", ""},
    {"attention-input-fusion",
     "norm.forward_with_allreduce_fusion(use_attn_tp_group=False): flashinfer's fused "
     "all-reduce + add + RMSNorm on the MoE EP group's workspace (the MoE TP group's at ep 1)",
     "layers/communicator/fusions/allreduce.py (complete_attention_input) @060c48f7; "
     "layers/flashinfer_comm_fusion.py (ensure_workspace_initialized) @00f6ebe5"},
    {"ffn-input-fusion",
     "norm.forward_with_allreduce_fusion(use_attn_tp_group=True): flashinfer's fused "
     "all-reduce + add + RMSNorm on the attention TP group's workspace",
     "layers/communicator/fusions/allreduce.py (complete_ffn_input) @060c48f7"},
    {"dp-reduce-scatterv",
     "tp_group.reduce_scatterv(hidden_states, sizes=get_dp_global_num_tokens()): one size "
     "per attention-DP rank, on the TP group",
     "layers/communicator/ops.py (_reduce_and_redistribute_output_varlen) @0bca4c6f; "
     "distributed/parallel_state.py (GroupCoordinator.reduce_scatterv) @0005973a"},
    {"attn-tp-reduce-scatter",
     "attn_tp_reduce_scatter_tensor(hidden_states.tensor_split(attn_tp_size)[attn_tp_rank], "
     "hidden_states): the output is tensor_split's chunk, unequal when the rows do not divide "
     "attn_tp (a CP shard is aligned to 2 x attn_cp only)",
     "layers/layer_boundary/ops.py (attn_tp_reduce_scatter) @51c248bd; "
     "layers/cp/padding.py (pad_logical_token_to_physical) @9fea3e9b"},
    {"mtp-moe-attn-tp-all-reduce",
     "attn_tp_all_reduce(hidden_states) in the MTP MoE layer after an attention layer under DP "
     "attention, before the layer communicator's FFN input completes the same attention-TP sum",
     "models/nemotron_h_mtp.py (NemotronHMTPMoEDecoderLayer.forward) @008b79d2; "
     "models/nemotron_h.py (NemotronHMLPLikeDecoderLayer.forward: prepare_mlp) @02c60328"},
    {"tbo-dp-gather",
     "dp_gather(hidden_states) -> get_global_dp_buffer(tp_group): torch.empty of "
     "global_dp_buffer_len rows, which the TBO child batch leaves None (its own token range "
     "under moe_dense_tp_size 1) and the stage executor publishes before every stage",
     "batch_overlap/two_batch_overlap.py (TboForwardBatchPreparer.filter_batch) @0099dee6; "
     "batch_overlap/operations.py (_StageExecutor.next) @04bb08ae; "
     "layers/layer_boundary/ops.py (dp_gather, dp_gather_sum) @01b5f572; "
     "layers/dp_attention.py (get_global_dp_buffer) @00161092"},
}};

}  // namespace

const EngineSiteInfo& engineSiteInfo(EngineSite site) { return kSites[static_cast<int>(site)]; }

}  // namespace seam
