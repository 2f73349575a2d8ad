// Model presets: the released checkpoints of reference/checkpoints.json with
// their real shapes, compiled into the binary, and the shape rules a parallel
// config must satisfy for a model (head and expert divisibility).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "seam/sim/base/status.h"
#include "seam/sim/model/parallel_config.h"
#include "seam/sim/model/pattern.h"

namespace seam {

/// A shape value the sources do not establish.
inline constexpr int kUnknown = -1;
/// A shape value that does not apply (MoE fields of a dense model).
inline constexpr int kNotApplicable = 0;

/// How a model's decoder layers are built (DESIGN §2.2).
enum class LayerFamily : std::uint8_t {
  kSingleStage,     ///< Nemotron-H: one pattern character = one layer = one stage
  kTwoStage,        ///< classic decoder layer: mixer stage then FFN stage
  kParallelHybrid,  ///< Falcon-H1: attention || Mamba-2 on one input, summed, then MLP
  /// LongCat-Flash: per layer attention, then a MoE branch beside a dense
  /// chain (MLP, attention, MLP) that reads the same normed input; the
  /// branch is merged into the layer's output.
  kBranchMerge,
};
/// Stages of one decoder layer in the stack the planner runs.
inline int stagesPerLayerOf(LayerFamily family) {
  return family == LayerFamily::kSingleStage ? 1 : family == LayerFamily::kBranchMerge ? 5 : 2;
}
std::string_view familyName(LayerFamily family);

/// Real shapes of one checkpoint. kUnknown / kNotApplicable as above.
struct ModelShape {
  int hidden = kNotApplicable;                   ///< hidden size h
  int heads = kNotApplicable;                    ///< attention query heads
  int kv_heads = kNotApplicable;                 ///< attention KV heads
  int head_dim = kNotApplicable;                 ///< attention head dim
  int mamba_heads = kNotApplicable;              ///< Mamba-2 heads
  int mamba_head_dim = kNotApplicable;           ///< Mamba-2 head dim
  int mamba_groups = kNotApplicable;             ///< Mamba-2 n_groups (B/C groups)
  int ssm_state = kNotApplicable;                ///< SSM state size
  int ffn_intermediate = kNotApplicable;         ///< dense MLP, or routed-expert intermediate
  int moe_experts = kNotApplicable;              ///< routed experts
  int moe_top_k = kNotApplicable;                ///< experts per token
  int moe_shared_intermediate = kNotApplicable;  ///< shared-expert intermediate
  int dense_intermediate =
      kNotApplicable;  ///< dense layers' MLP when the model also has MoE layers (DeepSeek)
  int q_lora_rank = kNotApplicable;  ///< MLA q_lora_rank (input-scattered attention needs one)
};

/// One released checkpoint.
struct ModelPreset {
  std::string_view name;          ///< the CLI name, e.g. "nemotron-h-8b"
  std::string_view display_name;  ///< the name in checkpoints.md, e.g. "Nemotron-H-8B"
  /// The checkpoint's config.json `architectures` class SGLang dispatches on,
  /// e.g. "NemotronHForCausalLM"; "" for a checkpoint SGLang has no class for.
  std::string_view architecture;
  LayerFamily family;
  int layers;                    ///< decoder layers (single stage: pattern length)
  std::string_view pattern;      ///< exact pattern; kMixerOnly alphabet for two-stage; "" if none
  std::string_view mtp_pattern;  ///< MTP pattern, "" when none is declared
  /// Two-stage and parallel-hybrid models: the stack stage by stage in the
  /// kTwoStage alphabet (each decoder layer's mixer, then its FFN; `/` then
  /// the MTP decoder layer). "" for single-stage models.
  std::string_view stages;
  /// The classic LayerCommunicator's allow_reduce_scatter: the FFN may skip
  /// its all-reduce for a DP reduce-scatter (the legacy policy of two-stage
  /// layers reads it).
  bool allow_reduce_scatter = false;
  ModelShape shape;
  std::string_view source;  ///< where the shapes come from

  bool hasMoe() const { return shape.moe_experts > 0; }
  /// The stack the planner runs, parsed: single-stage models their pattern
  /// plus MTP pattern; two-stage and parallel-hybrid models their stages.
  Expected<Pattern> parsedPattern() const;
  /// Decoder layers per stage: 2 for two-stage stacks, 1 for single-stage.
  int stagesPerLayer() const { return stagesPerLayerOf(family); }
};

/// Every preset, in the order of checkpoints.json.
std::span<const ModelPreset> presets();
/// The preset named `name` (CLI name, case-insensitive), or an error listing the names.
Expected<const ModelPreset*> findPreset(std::string_view name);
/// The model seam runs on when none is named.
inline constexpr std::string_view kDefaultModel = "nemotron-3-nano";

/// The shape rules of SGLang's layers for one model under one config
/// (NemotronHAttention: heads % attn_tp == 0, KV heads divisible or
/// replicated; Mamba heads and groups sharded over attn_tp; experts % moe_ep;
/// a dense model has no MoE axes). The message names the values.
Status fitsModel(const ModelPreset& model, const ParallelConfig& config);

}  // namespace seam
