// The training family's cases (reference: training-layouts.md): PrimeRL's
// layout (FSDP/HSDP, Ulysses CP in Mamba and attention, EP) and Megatron's
// (TP + SP, zigzag CP with undo/redo around Mamba, all-gather KV attention CP,
// EP); a configuration, a packed row of documents, the engines' rules, and
// the space sweeps and campaigns walk.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/base/status.h"
#include "seam/sim/model/model.h"

namespace seam {

/// Which engine's layout a training plan follows.
enum class TrainingLayout : std::uint8_t {
  kPrimeRl,   ///< FSDP/HSDP x Ulysses CP x EP, no TP (training-layouts §1)
  kMegatron,  ///< TP + SP x zigzag CP x EP x DDP (training-layouts §2)
};
/// "primerl" or "megatron".
std::string_view layoutName(TrainingLayout layout);
/// "primerl" or "megatron"; the error names the value.
Expected<TrainingLayout> parseTrainingLayout(std::string_view name);

/// Megatron's moe_token_dispatcher_type (transformer_config.py, default
/// allgather); the flex dispatcher (DeepEP / HybridEP) is not modelled.
enum class MoeDispatcher : std::uint8_t {
  kAllGather,  ///< MoEAllGatherTokenDispatcher: tokens, probs and routing map gathered over tp_ep
  kAllToAll,   ///< MoEAlltoAllTokenDispatcher: counts gathered, tokens and probs all-to-all'd
};

/// Megatron's cp_comm_type (transformer_config.py; --cp-comm-type defaults to
/// p2p in arguments.py): how Transformer Engine's attention exchanges KV over
/// cp. a2a+p2p is not modelled.
enum class CpComm : std::uint8_t {
  kP2p,        ///< AttnFuncWithCPAndKVP2P: KV chunks passed around the CP ring, dKV back
  kAllGather,  ///< AttnFuncWithCPAndKVAllGather: K and V all-gathered, dK and dV reduce-scattered
  kA2a,        ///< AttnFuncWithCPAndQKVOA2A: q, k, v and the output all-to-all'd (heads over cp)
};

/// A training configuration. World = dp_replicate * dp * cp * tp.
struct TrainingConfig {
  TrainingLayout layout = TrainingLayout::kPrimeRl;
  int dp_replicate = 1;  ///< PrimeRL HSDP replicas (Megatron: 1)
  int dp = 1;            ///< PrimeRL dp_shard; Megatron data parallel
  int cp = 1;
  int tp = 1;  ///< Megatron only (PrimeRL has no TP on main)
  int ep = 1;
  /// Megatron expert_tensor_parallel_size; 0: tp, the engine's default
  /// (model_parallel_config.py). PrimeRL: 1.
  int etp = 0;
  bool sp = false;  ///< Megatron sequence parallel (the space turns it on iff tp > 1)
  // PrimeRL's options that change its collectives, at the engine's defaults
  // (prime-rl configs/trainer.py: ac, moe_router_dtype, reduce_dtype).
  bool recompute = true;    ///< full activation checkpointing of every layer (apply_ac)
  bool router_fp32 = true;  ///< the router its own fp32 FSDP unit (setup_fsdp)
  bool reduce_fp32 = true;  ///< FSDP gradient reductions in fp32 (MixedPrecisionPolicy)
  bool deepep = false;      ///< ep_comm_backend deepep (default torch: TorchTitan all-to-alls)
  /// Megatron moe_router_dtype fp32 (default None: the logits, hence the
  /// probs the dispatcher moves, in the input's bf16; router.py gating).
  bool probs_fp32 = false;
  /// Megatron moe_router_enable_expert_bias (default off): the routers'
  /// token counts all-reduced over tp x dp x cp after the backward.
  bool expert_bias = false;
  /// Megatron moe_token_dispatcher_type (default allgather).
  MoeDispatcher dispatcher = MoeDispatcher::kAllGather;
  /// Megatron cp_comm_type (default p2p).
  CpComm cp_comm = CpComm::kP2p;
  /// Megatron's attention under CP passes KV around the p2p ring.
  bool p2pRing() const {
    return layout == TrainingLayout::kMegatron && cp > 1 && cp_comm == CpComm::kP2p;
  }
  /// Megatron's attention under CP all-to-alls q, k, v and its output.
  bool attentionA2a() const {
    return layout == TrainingLayout::kMegatron && cp > 1 && cp_comm == CpComm::kA2a;
  }
  /// Megatron's MoE layers dispatch through the allgather dispatcher.
  bool allGatherDispatch() const {
    return layout == TrainingLayout::kMegatron && dispatcher == MoeDispatcher::kAllGather;
  }
  /// Bytes of one routing probability the Megatron dispatcher moves.
  std::int64_t probsBytes() const { return probs_fp32 ? 4 : 2; }
  int world() const { return dp_replicate * dp * cp * tp; }
  int dataReplicas() const { return dp_replicate * dp; }
  /// The experts' tensor-parallel size: etp, or tp when unset (PrimeRL: 1).
  int expertTp() const {
    if (layout == TrainingLayout::kPrimeRl) return 1;
    return etp > 0 ? etp : tp;
  }
  friend bool operator==(const TrainingConfig&, const TrainingConfig&) = default;
};
/// "dp_replicate=1 dp=2 cp=4 tp=1 ep=8 sp=off" (PrimeRL's options when not the default).
std::string describeConfig(const TrainingConfig& c);
/// Sets the engines' options from their CLI values: --ac on|off,
/// --router-dtype and --reduce-dtype float32|bfloat16, --ep-backend
/// torch|deepep (PrimeRL's); --router-dtype is also Megatron's
/// moe_router_dtype. An empty router dtype is the layout's default (PrimeRL
/// float32, Megatron bfloat16); the error names the bad value (and a
/// non-default PrimeRL-only option under the megatron layout).
Status applyEngineOptions(TrainingConfig& c, const std::string& ac, const std::string& router_dtype,
                          const std::string& reduce_dtype, const std::string& ep_backend = "torch");
/// Sets Megatron's --dispatcher allgather|alltoall (empty: allgather, the
/// engine's default); the error names the bad value, or says the option
/// applies to the megatron layout.
Status applyDispatcher(TrainingConfig& c, const std::string& dispatcher);
/// Sets Megatron's --cp-comm-type p2p|all_gather|a2a (empty: p2p, the
/// engine's default); a2a+p2p is not modelled; the error names the bad value,
/// or says the option applies to the megatron layout.
Status applyCpComm(TrainingConfig& c, const std::string& cp_comm_type);

/// One training case: a preset, a layout and config, and the packed row's
/// document lengths (every data-parallel replica packs the same lengths).
struct TrainingCase {
  const ModelPreset* model = nullptr;
  TrainingConfig config;
  std::vector<int> docs;
  int tokens() const;  ///< S, the packed row's length
};
/// The `seam check --family training ...` line that reproduces the case.
std::string reproduceTrainingCommand(const TrainingCase& c);

/// The engine's rules (divisibility, supported combinations): ok, refused with
/// the engine's reason, or not modelled (seam's gap).
Status validateTrainingCase(const TrainingCase& c);

/// Every configuration of `world` the layout's engine may be asked for, in a
/// fixed order (invalid ones included: validation refuses them, and sweeps
/// count them as refused); PrimeRL's each twice, at the engine's defaults
/// and with every engine option flipped (--ac off, bf16 router and
/// reductions, DeepEP under EP).
std::vector<TrainingConfig> trainingConfigs(TrainingLayout layout, int world);
/// The packed batches a sweep checks for a config: one document, and three
/// uneven ones (lengths the engine accepts: S % cp for PrimeRL, every
/// document % 2cp(*tp under SP) for Megatron).
std::vector<std::vector<int>> trainingBatches(const TrainingConfig& c);
/// The presets the training family has (nemotron-3-nano, nemotron-3-super).
std::vector<const ModelPreset*> trainingPresets();

}  // namespace seam
