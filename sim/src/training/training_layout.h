// Private to sim/: the facts of a training case both the planner and the
// ledger need (rank coordinates, groups, which tokens and units a rank holds
// where, the model's training dimensions, routing). The ledger derives its
// expectations from these, never from the plan it checks.
#pragma once

#include <cstdint>
#include <vector>

#include "seam/sim/training/training_plan.h"

namespace seam::training {

/// The model's dimensions as the training layouts use them.
struct Dims {
  int hidden = 0;
  int q_heads = 0, kv_heads = 0, head_dim = 0;
  int mamba_heads = 0, mamba_head_dim = 0, groups = 0, state = 0;  ///< groups 0: unknown
  int experts = 0, top_k = 0, expert_inter = 0, shared_inter = 0;
  int latent = 0;  ///< latent MoE size (0: none)
  int vocab = 0;   ///< embedding and lm_head rows
  int conv_kernel = 4;
  std::vector<LayerKind> layers;
};
Dims dimsOf(const ModelPreset& m);

/// A rank's coordinates.
struct Coord {
  int rep = 0;  ///< HSDP replica (PrimeRL)
  int dp = 0;   ///< data shard within the replica
  int cp = 0;
  int tp = 0;
  int data = 0;      ///< data replica index: which packed row (rep * dp + dp)
  int fsdp = 0;      ///< PrimeRL: position in dp_shard x cp (dp * cp + cp)
  int ep = 0;        ///< position in the EP group
  int etp = 0;       ///< Megatron: position in the expert-TP group
  int ep_group = 0;  ///< which EP group
};

/// Everything about a case's mesh and token layout.
class Layout {
 public:
  explicit Layout(const TrainingCase& c);
  const TrainingCase& source() const { return *c_; }
  const TrainingConfig& config() const { return c_->config; }
  const Dims& dims() const { return dims_; }
  int world() const { return c_->config.world(); }
  int tokens() const { return s_; }  ///< S per row
  int replicas() const { return c_->config.dataReplicas(); }
  const Coord& coord(int rank) const { return coords_[rank]; }
  /// The members of rank's group on `axis`, in group order.
  std::vector<int> group(TrainAxis axis, int rank) const;
  /// Rank's tokens at layer boundaries (global ids data * S + i), in layout order:
  /// PrimeRL contiguous CP chunk; Megatron per-document zigzag, then its SP piece.
  const std::vector<int>& localTokens(int rank) const { return local_[rank]; }
  /// Megatron: the CP rank's tokens before the SP split (== localTokens without SP).
  const std::vector<int>& cpTokens(int rank) const { return cp_local_[rank]; }
  /// Every token of the rank's row, in global order.
  std::vector<int> rowTokens(int rank) const;
  /// Global cu_seqlens of a row (positions 0..S).
  std::vector<int> globalSegments() const;
  /// cu_seqlens of a rank's own shard (what a layer sees without pre-shard lengths).
  std::vector<int> localSegments(int rank) const;
  /// Mamba head blocks (units of the heads space): cp * tp blocks.
  int headBlocks() const { return config().cp * config().tp; }
  /// Groups space units (G, or 1 when unknown and not split).
  int groupUnits() const { return dims_.groups > 0 ? dims_.groups : 1; }
  /// The B/C groups the heads of block b use.
  std::vector<int> groupsOfBlock(int b) const;
  /// The KV head q head h attends (GQA groups q heads contiguously).
  int kvOfQ(int h) const { return h / (dims_.q_heads / dims_.kv_heads); }
  /// The top-k experts of a global token at a layer (distinct, deterministic).
  const std::vector<int>& route(int layer, int token) const;
  /// The EP member owning expert e.
  int expertOwner(int e) const { return e / (dims_.experts / config().ep); }

 private:
  const TrainingCase* c_;
  Dims dims_;
  int s_ = 0;
  std::vector<Coord> coords_;
  std::vector<std::vector<int>> local_, cp_local_;
  std::vector<std::vector<std::vector<int>>> routes_;  // [layer][token]
};

}  // namespace seam::training
