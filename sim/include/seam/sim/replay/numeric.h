// The numeric model of a plan's values (DESIGN §6), shared by the CPU
// executor (numeric_executor.h) and the CUDA/NCCL backend so that both run
// the same arithmetic on the same inputs and weights.
//
// Exact mode: every input and weight is a small integer, every stage is
// y_j = relu(x W_in[:, J_j]) W_out[J_j, :] over its shard j's inner columns
// J_j (column-parallel in-projection, row-parallel out-projection, so a
// shard's output really is a partial sum), and the norm surrogate returns
// values to the grid {-2..2}. With few nonzeros per weight column every
// partial sum stays far below 2^24, so fp32 adds are exact in any order: a
// correct plan is bit-identical to the single-rank reference on any machine,
// and a wrong one differs, with one blind spot the ledger does not share:
// the surrogate is taken mod 5, so a term counted k = 1 (mod 5) times (6, 11,
// ...) is invisible once it reaches a norm.
//
// Real mode: bf16 values (rounded after every op), RMSNorm, weights drawn
// from a fixed pseudo-random normal-like distribution; bit-identity then
// holds only between plans that reduce the same values in the same order.
//
// MoE stages (`E`) route: a router picks each token's top-k experts, each a
// small MLP, gated and summed, plus a shared expert where the model has one
// (moeShard below).
#pragma once

#include <cstdint>
#include <vector>

#include "seam/sim/base/status.h"
#include "seam/sim/model/model.h"
#include "seam/sim/replay/moe_routing.h"

namespace seam::numeric {

enum class Mode : std::uint8_t { kExact, kReal };

/// Sizes of the numeric model. Exact mode runs small rows by default; the
/// GPU backend may use a preset's real hidden size.
struct Shape {
  int hidden = 16;  ///< row width h
  int inner = 64;   ///< inner width of every stage (split over its weight shards)
};

/// Nonzeros per weight column in exact mode (keeps sums tiny).
inline constexpr int kExactNonzerosPerColumn = 2;
/// Embedding values in exact mode lie in [-kGrid, kGrid].
inline constexpr int kGrid = 2;
/// Value written into padding rows (a row read as a token shows it). Not a
/// multiple of 5: exact mode's norm surrogate works mod 5, so 1e6 added to a
/// token's row vanished at the next norm (w * 1e6 = 0 mod 5 for every weight);
/// 1000003 * w is nonzero mod 5 for w in 1..4. Still exact in fp32 (< 2^24 / 4).
inline constexpr float kPaddingValue = 1000003.0f;

/// Row-major dense weights of one stage, generated deterministically from
/// (stack, stage) and the mode.
struct StageWeights {
  int hidden = 0, inner = 0;
  std::vector<float> w_in;   ///< hidden x inner, row-major
  std::vector<float> w_out;  ///< inner x hidden, row-major
  std::vector<float> norm;   ///< RMSNorm weight (hidden), real mode only
};
StageWeights stageWeights(int stack, int stage, Mode mode, const Shape& shape);

/// The input row of token t to stack `stack` (the embedding; the MTP step's
/// eh_proj output for stack 1 is computed from it, see projectRow).
std::vector<float> embedRow(int stack, int token, Mode mode, const Shape& shape);
/// The vocab shard (of `shards`) whose VocabParallelEmbedding rows hold
/// `token`'s embedding; the other shards' unreduced outputs are zero there.
inline int embedShardOwner(int token, int shards) { return shards <= 1 ? 0 : token % shards; }

/// Shard j of `shards`: the inner columns [begin, end) (tensor_split: the
/// first inner % shards shards take one more).
struct ColumnRange {
  int begin = 0, end = 0;
};
ColumnRange shardColumns(int inner, int shards, int j);

/// y = relu(x W_in[:, cols]) W_out[cols, :], into `out` (h floats). Real mode
/// rounds the result to bf16.
void stageShard(const StageWeights& w, ColumnRange cols, const float* x, float* out, Mode mode);

/// The norm: exact mode maps each element to ((v mod 5) + 5) mod 5 - 2;
/// real mode RMSNorm(v) * weight, rounded to bf16.
void normRow(const float* v, float* out, int h, Mode mode, const std::vector<float>& weight);

/// The MTP step's input projection: from the main stack's final output row of
/// token t to stack 1's input (exact: the output plus stack 1's embedding row).
void projectRow(const float* final_output, float* out, int stack, int token, Mode mode,
                const Shape& shape);

// ---- MoE stages ------------------------------------------------------------------

/// Routed experts of every numeric MoE stage: small for speed, and divisible
/// by every moe_ep the config space yields up to world 16 (moe_ep divides tp
/// and the preset's expert count, a power of two: 1..16). A larger moe_ep
/// (worlds beyond 16) takes moe_ep experts, one per EP rank (moeShape).
inline constexpr int kNumericExperts = 16;
/// Nonzeros per router column in exact mode (integer scores in [-8, 8]: ties
/// are common, so the tie rule is exercised).
inline constexpr int kRouterNonzerosPerColumn = 4;

/// The numeric MoE of a model: `experts` routed experts of `expert_inner`
/// columns, `top_k` per token, and a shared expert of `shared_inner` columns
/// (0: none). Widths scale with Shape::inner as the preset's do: the shared
/// expert is Shape::inner wide, a routed expert inner * routed / shared.
struct MoeShape {
  int experts = 0;
  int top_k = 0;
  int expert_inner = 0;
  int shared_inner = 0;
};
/// The numeric MoE of `model` run at `shape` over `moe_ep` EP ranks.
MoeShape moeShape(const ModelShape& model, int moe_ep, const Shape& shape);

/// Weights of one MoE stage: the router (hidden x experts, row-major), each
/// routed expert's in/out projections, and the shared expert, whose
/// StageWeights also carry the stage's norm weight (real mode).
struct MoeWeights {
  MoeShape moe;
  std::vector<float> router;
  std::vector<StageWeights> experts;
  StageWeights shared;
};
MoeWeights moeWeights(int stack, int stage, Mode mode, const Shape& shape, const MoeShape& moe);

/// What shard j of the `shards` a MoE stage's weights are split over owns:
/// the experts of its EP slice, the moe_tp column slice of each, and its
/// slice of the shared expert. A group of moe_ep * moe_tp shards (the merged
/// TP group) is EP-major, as SGLang numbers it (shard = ep * moe_tp + tp).
struct MoeSlice {
  ColumnRange experts;      ///< routed experts [begin, end)
  ColumnRange expert_cols;  ///< columns of each of them
  ColumnRange shared_cols;  ///< columns of the shared expert
};
MoeSlice moeSlice(const MoeShape& moe, int j, int shards, int moe_ep);

/// The router of one row: the top-k experts in rank order and their gates
/// (topKGates over scores x W_router; real mode rounds the scores to bf16).
struct Routing {
  std::vector<int> experts;
  std::vector<float> gates;
};
Routing routeRow(const MoeWeights& w, const float* x, Mode mode);

/// Shard `slice`'s contribution to one row: its shared-expert slice, then,
/// in ascending expert order, gate * expert(x) over the row's chosen experts
/// it owns (each on its column slice, as stageShard), summed in fp32; real
/// mode rounds the sum to bf16. A shard owning none of them contributes its
/// shared slice only.
void moeShard(const MoeWeights& w, const MoeSlice& slice, const float* x, float* out, Mode mode);

/// fp32 -> bf16 -> fp32, round to nearest even (real mode after every op).
float roundBf16(float v);

/// Distance of two floats in fp32 units in the last place, across the sign.
std::int64_t ulpDistance(float x, float y);
/// True when `v` is exactly a bf16 value (its low 16 bits are zero).
bool isBf16(float v);

}  // namespace seam::numeric
