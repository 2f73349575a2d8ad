// A case: one model (a preset or a bare pattern), one parallel config, the
// flags that change boundaries, and a batch (tokens per DP shard). Policies
// turn a case into a plan (DESIGN §2.1, §2.4).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/base/status.h"
#include "seam/sim/model/model.h"
#include "seam/sim/model/parallel_config.h"
#include "seam/sim/model/pattern.h"

namespace seam {

/// MoE all-to-all backend (SGLang `--moe-a2a-backend`).
enum class A2aBackend : std::uint8_t { kNone, kDeepep };
/// DP attention padding of the gathered buffer (DpPaddingMode).
enum class DpPadding : std::uint8_t { kMaxLen, kSumLen };
/// How an FFN's sum returns over attention DP (comm.boundary_reduction).
enum class BoundaryReduction : std::uint8_t { kAr, kRs, kRsv, kRsRsv };
/// Forward mode of the batch.
enum class ForwardMode : std::uint8_t { kDecode, kExtend };

/// Flags that change boundaries. Defaults: what a plain `sglang serve` of a
/// hybrid model on Hopper does.
struct Flags {
  A2aBackend a2a = A2aBackend::kNone;
  bool fusion = true;  ///< fused all-reduce + add + RMSNorm available (FlashInfer, sm90/sm100)
  DpPadding dp_padding =
      DpPadding::kMaxLen;  ///< requested; hybrid-SSM with an idle rank forces MAX_LEN
  BoundaryReduction reduction = BoundaryReduction::kAr;
  ForwardMode mode = ForwardMode::kDecode;
  bool layernorm_sp = false;  ///< LayerNorm sequence parallel (refused for Nemotron-H)
  /// moe_dense_tp_size == 1 (enable_moe_dense_fully_dp): two-stage dense FFNs
  /// run on each rank's local rows with replicated weights and owe no sum.
  /// Nemotron-H declares dense_tp_size = tp for its MLPs and ignores it.
  bool dense_tp1 = false;
  /// enable_attn_tp_input_scattered (§6.5 INPUT_SCATTERED): on an extend
  /// batch the layer input is reduce-scattered over TP, the attention gathers
  /// its q/kv latents, and the FFN input adds the residual slice into the sum.
  bool input_scattered = false;
  /// SGLANG_DP_USE_GATHERV set: DP gathers use tp.all_gatherv of the
  /// shards' rows where the engine applies it (attn_tp 1, tp == attn_dp,
  /// SUM_LEN: dp_attention.is_dp_gatherv_active); elsewhere it has no effect.
  bool dp_gatherv = false;
  /// enable_two_batch_overlap (tbo.h): the sparse layers run on two halves
  /// of the batch whose ops interleave (DeepSeek decoder layers only).
  bool tbo = false;
  std::vector<int> capture;  ///< aux hidden-state snapshots before these stages (EAGLE3)

  /// "a2a=none fusion=on padding=max_len reduction=ar mode=decode"
  std::string describe() const;
  friend bool operator==(const Flags&, const Flags&) = default;
};

std::string_view a2aName(A2aBackend v);
std::string_view paddingName(DpPadding v);
std::string_view reductionName(BoundaryReduction v);
std::string_view modeName(ForwardMode v);
Expected<A2aBackend> parseA2a(std::string_view text);
Expected<DpPadding> parsePadding(std::string_view text);
Expected<BoundaryReduction> parseReduction(std::string_view text);
Expected<ForwardMode> parseMode(std::string_view text);
/// Parses --fusion: "on" (true) or "off".
Expected<bool> parseFusion(std::string_view text);
/// Parses --reduction as the case options spell it: a reduction, or "auto"
/// (nullopt), the engine's default for the model (engineDefaultReduction).
Expected<std::optional<BoundaryReduction>> parseReductionOption(std::string_view text);

/// Tokens of each attention-DP shard, in DP-rank order (0 = an idle rank).
struct Batch {
  std::vector<int> tokens;
  /// Rows each shard's forward runs on where the caller fixes them: a
  /// two-batch-overlap child's tbo_padded_len (tbo.h). Empty (every case
  /// built from options): the padding rules give them (rows.h, AttentionPad).
  std::vector<int> rows;
  int total() const;
  int maxShard() const;
  bool hasIdleShard() const;
  /// "4,0,3"
  std::string describe() const;
  friend bool operator==(const Batch&, const Batch&) = default;
};
/// Parses "4,0,3"; every entry 0..kMaxTokensPerShard, at least one token in all.
Expected<Batch> parseBatch(std::string_view text);
inline constexpr int kMaxTokensPerShard = 1 << 20;

/// The model side of a case: a preset's name and shapes, or a bare pattern
/// with shapes borrowed from a preset of the same family.
struct ModelRef {
  std::string name;  ///< preset name, or "pattern" for a bare pattern
  LayerFamily family = LayerFamily::kSingleStage;
  Pattern pattern;                    ///< main stack's stages (with cuts) and MTP stages
  ModelShape shape;                   ///< shapes used for byte counts and fit checks
  bool allow_reduce_scatter = false;  ///< ModelPreset::allow_reduce_scatter
  /// ModelPreset::architecture; a bare pattern takes its shape donor's.
  std::string architecture;
  /// Decoder layers per stage of `pattern`.
  int stagesPerLayer() const { return stagesPerLayerOf(family); }
};
/// The preset's pattern and shapes.
Expected<ModelRef> modelFromPreset(const ModelPreset& preset);
/// A bare pattern of `family`. Single-stage: shapes from nemotron-h-8b
/// (dense) or nemotron-3-nano (with an `E`). Two-stage (kTwoStage alphabet):
/// shapes from qwen3-8b (dense) or deepseek-v3 (with an `E`).
Expected<ModelRef> modelFromPattern(std::string_view pattern,
                                    LayerFamily family = LayerFamily::kSingleStage);
/// Parses "single-stage" / "two-stage" (the families a bare pattern can have).
Expected<LayerFamily> parsePatternFamily(std::string_view text);
/// Qwen3 dense (Qwen3ForCausalLM): two-stage layers of GQA attention (`*`,
/// no q_lora_rank) and dense MLPs only, the one architecture SGLang runs
/// LayerNorm SP on (layernorm_sp.SP_SUPPORTED_ARCHITECTURES).
bool isQwen3Dense(const ModelRef& model);

/// The boundary reduction SGLang picks for `model` when none is asked for
/// (arg_groups/boundary_reduction.py @0fbe7e46, model_boundary_reduction):
/// rsv for LongcatFlashForCausalLM, ar for Qwen3ForCausalLM, rs+rsv for
/// every other architecture, an unknown one included.
BoundaryReduction engineDefaultReduction(const ModelRef& model);

/// The flag values a space-wide command keeps (`seam sweep --fusion off
/// --reduction rs,rsv`): a case whose flags hold another value is left out.
/// An empty list keeps every value of its flag.
struct FlagFilter {
  std::vector<A2aBackend> a2a;
  std::vector<bool> fusion;
  std::vector<DpPadding> dp_padding;
  /// nullopt: the engine's default for the case's model (`--reduction auto`).
  std::vector<std::optional<BoundaryReduction>> reduction;
  std::vector<ForwardMode> mode;
  /// Whether a case of `model` with `flags` is kept.
  bool keeps(const ModelRef& model, const Flags& flags) const;
  /// " a2a=deepep reduction=auto,rs": each list given, "" when none is.
  std::string describe() const;
};

/// One case. `batch.tokens.size()` must equal `config.attn_dp`.
struct Case {
  ModelRef model;
  ParallelConfig config;
  Flags flags;
  Batch batch;
  /// What the engine decided at start-up that the options did not say, in
  /// words: "override: ..." where it changed an option as given, "default:
  /// ..." where it picked a value left to it (buildCase fills it; a plan's
  /// header prints each after "engine ").
  std::vector<std::string> engine_notes;
};

/// Checks the batch against the config (one entry per DP shard) and the
/// config against the model's shapes; the message names the bad value.
Status validateCase(const Case& c);

/// ServerArgs' start-up refusals (server_args.py @001067fffe33) of a whole
/// case, for every batch, ahead of anything a model or a batch refuses:
/// serverArgsMoeDp; check_server_args' "Pipeline parallelism is not
/// compatible with overlap schedule, speculative decoding" (pp > 1 with an
/// MTP step or an EAGLE3 capture; the overlap schedule it also names is
/// turned off for pp > 1 by _pipeline_parallel_overlap_disable, not refused);
/// _check_two_batch_overlap (--tbo with moe_a2a_backend none needs DP
/// attention). Status::refused with the engine's message, else ok.
Status serverArgsRefusal(const Case& c);

/// The `seam check` command line that reproduces `c` under `policy`.
std::string reproduceCommand(const Case& c, std::string_view policy);

}  // namespace seam
