// The boundary planner behind buildPlan (policy.h), one class for the
// declared, legacy and naive policies: a map of what it decides and where.
// Each boundary is built from the declarations of its two sides only, once
// (it does not depend on the rank); ops are then emitted per rank.
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <memory>
#include <vector>

#include "seam/sim/base/status.h"
#include "seam/sim/model/case.h"
#include "seam/sim/plan/dp_gather.h"
#include "seam/sim/plan/plan.h"
#include "seam/sim/plan/rows.h"
#include "seam/sim/plan/tbo.h"
#include "seam/sim/policy/policy.h"

namespace seam::policy_detail {

/// One abstract step of an entry or exit, instantiated per rank.
struct Step {
  OpKind kind;
  Tensor tensor;
  std::int8_t axis = kNoAxis;
  RowKind in = RowKind::kAttention;
  RowKind out = RowKind::kAttention;
  bool skip_if_idle_shard = false;  ///< SGLang: "if rows > 0" (replicate-order AR)
  bool attn_tp_rank0_only =
      false;  ///< partial-order DP gather: only attn-TP rank 0 adds the residual
  bool cp_sharded_only =
      false;  ///< runs only where the rank's DP shard is CP-sharded (model-boundary CP gather)
  SplitSizes sizes = SplitSizes::kPerMember;  ///< v-collectives: the sizes the engine passes
  EngineSite site = EngineSite::kUnnamed;     ///< the engine call that issues it
};

/// The steps of one entry or exit: a handful, kept inline (no allocation on
/// the planner's hot path).
class StepList {
 public:
  static constexpr int kCapacity = 8;
  void push_back(const Step& s) {
    assert(size_ < kCapacity && "an entry or exit of more than 8 steps");
    steps_[size_++] = s;
  }
  const Step* begin() const { return steps_; }
  const Step* end() const { return steps_ + size_; }
  int size() const { return size_; }

 private:
  Step steps_[kCapacity];
  int size_ = 0;
};

/// Builds the plan of one case under one policy: refuse, decide every
/// boundary, emit every rank's ops.
class PlanBuilder {
 public:
  PlanBuilder(const Case& c, const Schema& schema, PolicyKind policy);

  /// The plan, or the refusal (policy.cc).
  Expected<Plan> build();
  /// The refusal every batch of the case's flag set gets, else ok
  /// (flagSetRefusal in policy.h; refusals.cc).
  Status flagSetRefusal() const;

 private:
  // ---- facts of the case (case_facts.cc; one-liners here) -----------------
  PolicyKind policy() const {
    return legacy_ ? PolicyKind::kLegacy : naive_ ? PolicyKind::kNaive : PolicyKind::kDeclared;
  }
  Axis postExpertsAxis() const;
  /// Whether two axes' groups of rank 0 are the same ranks (a table: the
  /// planner asks at every boundary, and each answer built two groups).
  bool sameGroup(Axis x, Axis y) const {
    return (same_groups_[static_cast<int>(x)] >> static_cast<int>(y)) & 1U;
  }
  static std::array<std::uint8_t, kAxisCount> sameGroups(const ParallelConfig& cfg);
  int axisSize(Axis axis) const { return groupSizeOf(cfg_, axis); }
  int world() const { return cfg_.world(); }
  int ppRank(int rank) const { return rank / cfg_.tp; }
  /// The pipeline stage of every stage of stack 0: the pattern's cuts, else
  /// SGLang's even split by decoder layer (the last stage takes the remainder).
  std::vector<int> ppOfStages() const;
  /// apply_flashinfer_allreduce_fusion may run at this batch.
  bool fusable() const;
  /// The next entry's fused kernel (AR + add + norm) completes a sum owed over `owed`.
  bool fusedEntryCompletes(Axis owed) const {
    return fusable() && sameGroup(owed, postExpertsAxis());
  }
  /// The group whose workspace the fused kernel of an attention input runs
  /// on: complete_attention_input passes use_attn_tp_group=False, and
  /// flashinfer_comm_fusion.py (ensure_workspace_initialized) then takes the
  /// MoE EP group when moe_ep > 1, else the MoE TP group, whatever group the
  /// carried sum is owed over.
  /// Named as the owed group where the two are the same ranks.
  Axis attentionInputKernelAxis(Axis owed) const {
    const Axis kernel = cfg_.moe_ep > 1 ? Axis::kMoeEp : Axis::kMoeTp;
    return sameGroup(kernel, owed) ? owed : kernel;
  }
  /// The fused step that completes a sum owed over `owed`, carried to an
  /// attention input.
  Step attentionInputFusion(Axis owed) const {
    Step s{OpKind::kArAddNorm, Tensor::kHidden,
           static_cast<std::int8_t>(attentionInputKernelAxis(owed))};
    s.site = EngineSite::kAttentionInputFusion;
    return s;
  }
  /// The boundary reduction strategy picks a reduce-scatter (rs, rs+rsv).
  bool useRs() const {
    return c_.flags.reduction == BoundaryReduction::kRs ||
           c_.flags.reduction == BoundaryReduction::kRsRsv;
  }
  /// on_cp_shards (_resolve_ffn): a GQA MoE whose moe_dp equals attn_cp runs
  /// on the CP shard; nothing is gathered for it.
  bool onCpShards(LayerKind ffn) const {
    return cp_ && !mla_ && ffn == LayerKind::kMoe && cfg_.moe_dp == cfg_.attn_cp;
  }
  /// On a CP-sharded batch an FFN on shared rows reads all the CP shards
  /// (its rows do not shard ATTN_CP): entry row "gathered == {CP}", exit
  /// row R - P == {CP}.
  /// Under attention DP the DP gather places the CP shards in their DP slot
  /// (gathered == {DP, CP}: cp_shard_counts) and dp_scatter takes the own
  /// shard back (R - P == {DP, CP}: dp_cp_take_back_output), so no CP move.
  bool gathersOverCp(LayerKind ffn) const {
    return cp_layout_ != CpLayout::kReplicated && D_ == 1 && isFfn(ffn) && !ffnOnLocal(ffn) &&
           !onCpShards(ffn);
  }
  /// The rank's DP shard is CP-sharded (each DP rank decides on its own batch).
  bool cpShardedRank(int rank) const {
    return cpShardsTokens(cp_layout_, c_.batch.tokens[dpPlaceOf(cfg_, rank).attn_dp_rank],
                          cfg_.attn_cp);
  }
  /// The group of that gather (_cp_moves): attn_cp for DSA/MLA
  /// (attn_cp_interleave_gather), the MoE-CP group for GQA (moe_cp_gather
  /// over _MOE_DP, aliased to attn_cp when attn_cp > moe_dp).
  std::int8_t cpGatherAxis() const {
    return static_cast<std::int8_t>(mla_ ? Axis::kAttnCp : Axis::kMoeDp);
  }
  bool a2aMoe(LayerKind k) const {
    return k == LayerKind::kMoe && c_.flags.a2a != A2aBackend::kNone;
  }
  /// A fully-DP dense FFN of a two-stage layer (moe_dense_tp_size == 1).
  bool denseOnLocal(LayerKind k) const {
    return two_stage_ && k == LayerKind::kDenseMlp && c_.flags.dense_tp1;
  }
  /// An FFN that runs on local rows and hands on a complete value (ffn_on_local_rows).
  bool ffnOnLocal(LayerKind k) const { return a2aMoe(k) || denseOnLocal(k); }
  /// Rows an a2a FFN runs on: local rows, which equal attention rows when attn_tp == 1.
  RowKind localRows() const { return a_ > 1 ? RowKind::kLocal : RowKind::kAttention; }
  /// Rows a shared (non-a2a) FFN runs on.
  RowKind sharedFfnRows(LayerKind ffn) const {
    return D_ > 1 || gathersOverCp(ffn) ? RowKind::kFull : RowKind::kAttention;
  }
  /// The group a stage's output owes its sum over (kNoAxis: complete).
  std::int8_t weightAxis(LayerKind k) const;

  // ---- the engine's refusals (refusals.cc), in the order it checks them ---
  /// The first rule the case breaks, else ok and the TBO layers (B1).
  /// `cp_sharded` (the batch takes the CONTEXT_PARALLEL variant, cp_batch_
  /// in build()) is all it reads of the batch: the rest is the model, the
  /// configuration and the flags, which is what lets flagSetRefusal decide
  /// a whole flag set from its two values.
  Status refuse(bool cp_sharded, LayerRange* tbo_layers) const;
  Status refuseTboModel() const;
  Status refuseLayerNormSpArgs() const;
  Status refuseLayerNormSpBatch() const;
  Status refuseInputScattered() const;
  Status refuseStageBoundaryCp() const;
  Status refuseA2aBackend(bool has_moe) const;
  Status refuseCpMoe(bool has_moe, bool cp_sharded) const;
  Status cpGaps() const;
  Status refuseTboLayers(bool cp_sharded, LayerRange* range) const;
  Status refuseTboCapture(bool cp_sharded, const LayerRange& range) const;
  Status branchGaps() const;

  // ---- what crosses a boundary -------------------------------------------
  /// What crosses a boundary.
  struct Hand {
    Handoff handoff;                               ///< declared hand-off
    StepList exit;                                 ///< producer exit steps
    StepList entry;                                ///< consumer entry steps
    RowKind residual_after = RowKind::kAttention;  ///< where the residual lies after the entry
  };
  /// One boundary as the functions that build it read it.
  struct Sides {
    int stack, from, to;
    bool cut;            ///< the producer's pipeline stage ends here (or the TBO split)
    bool final_norm;     ///< the consumer is the model's final norm
    LayerKind producer;  ///< (from >= 0)
    LayerKind consumer;  ///< kMamba at the final norm
    bool consumer_ffn;
    bool terminal;         ///< nothing may be deferred past this producer
    bool terminal_defers;  ///< mutants: the terminal stage defers its sum anyway
    std::int8_t group;     ///< the group the producer's output owes its sum over
  };

  // ---- policy rules (declared_policy.cc, legacy_policy.cc, naive_policy.cc)
  /// Declared: a mixer's TP sum may be left for the next mixer's entry.
  bool mixerMayCarry(const Sides& s) const;
  /// Declared (_sum_deferral_allowed): an FFN's sum may be left for the next entry.
  bool ffnMayDefer(const Sides& s, std::int8_t owed) const;
  /// Under DP attention with speculation, an all-reduce return stays at the FFN.
  bool speculativeKeepsDpReturn(const StepList& complete) const;
  /// LayerCommunicator._declared_sides under prefill CP: an FFN output may
  /// leave its sum (defer it, or leave it to a DP reduce-scatter).
  bool mayLeave(LayerKind ffn) const;
  /// The exit policy's dp_step: which step returns a sum over DP.
  OpKind strategyDpStep(LayerKind producer, bool owes_tp) const;
  /// Legacy: a stage leaves its sum only for the next layer's fused kernel.
  bool legacyMayLeave(std::int8_t owed) const;
  /// Legacy: an FFN whose input is already complete all-reduces a zero update.
  void legacyCompleteInputRead(StepList& steps) const;
  /// Legacy two-stage (classic _scatter_hidden_states): the DP return step.
  OpKind classicDpStep(bool owes_tp) const;
  /// Legacy single-stage (the parent's _scatter_hidden_states): the DP
  /// return step, with no strategy knob.
  OpKind parentDpStep(bool owes_tp) const;
  /// Legacy single-stage: an a2a MoE whose input is complete folds it and
  /// reduce-scatters the zero update onto local rows.
  void legacyA2aCompleteInputRead(StepList& steps) const;
  /// Legacy single-stage: the parent fuses a producer's reduction into the
  /// next layer across a pipeline cut too (no pipeline clause).
  bool legacyCutKeepsFusion(const Sides& s) const;
  /// A single-stage capture and the entry around it (captures.cc): the
  /// steps as the engine runs them before stage `to` (declared: stage.py
  /// capture_output; legacy: the parent's NemotronHModel forward).
  StepList singleStageCapture(int stack, int from, int to, const Hand& h) const;
  /// The axis a handoff's owed sum is completed over (kNoAxis: none).
  std::int8_t owedAxis(SumGroup owes) const;
  /// A producer may hand on a partial sum for the consumer to complete (not naive).
  bool handsOnPartials() const;
  /// A boundary may fuse a reduction with the next step (not naive).
  bool mayFuse() const;

  // ---- boundaries (boundary.cc, single_stage.cc, two_stage.cc, branch_layers.cc)
  /// The boundary between stage `from` and `to` of one stack (boundary.cc).
  Hand boundary(int stack, int from, int to, bool cut);
  Sides sidesOf(int stack, int from, int to, bool cut) const;
  /// The embedding (or the MTP input projection) into the first stage.
  Hand embeddingEntry(const Sides& s);
  /// The read of an entry once nothing is owed: add+norm, the move onto the consumer's rows.
  void addEntryRead(StepList& steps, LayerKind consumer, bool final_norm, bool residual_present,
                    bool stack_start, bool after_ffn = false);
  /// An FFN on shared rows (dense, or MoE without all-to-all), either family.
  Hand sharedFfnExit(const Sides& s);
  Hand ffnExitOnAttentionRows(const Sides& s, std::int8_t owed, bool may_defer);
  Hand ffnExitOverDp(const Sides& s, std::int8_t owed, bool may_defer);
  void dpReturnSteps(StepList& steps, std::int8_t group) const;
  void dpCompleteSteps(StepList& complete, LayerKind producer, std::int8_t owed) const;
  /// Single-stage (Nemotron-H) mixer exits and the all-to-all MoE's (single_stage.cc).
  Hand mixerIntoFfn(const Sides& s);
  Hand mixerExit(const Sides& s);
  /// The Nemotron-H MTP MoE layer's own attention-TP all-reduce before its entry.
  void mtpMoeReducesAttentionOutput(const Sides& s, Hand& h) const;
  Hand localMoeExit(const Sides& s);
  /// Two-stage layers (two_stage.cc): the attention output into the FFN
  /// (prepare_mlp, §5.3 / §6.3).
  Hand twoStageIntoFfn(LayerKind consumer);
  void intoFfnOnAttentionRows(Hand& h, LayerKind consumer, std::int8_t attn_tp, bool partial_in);
  void intoFfnOverDp(Hand& h, bool partial_in);
  /// An FFN on local rows (a2a MoE) into the next layer. `to_attention`: the
  /// exit gathers to attention rows for a stage that is not the final norm
  /// (TBO's exit rows).
  Hand twoStageOutOfLocalFfn(LayerKind consumer, bool final_norm, bool to_attention = false);
  /// An FFN exit on a CP-sharded batch: the shards' sum handed back.
  Hand cpShardedFfnExit(const Sides& s, std::int8_t owed);
  /// LayerNorm SP: every boundary on the SP shards.
  Hand layerNormSpBoundary(const Sides& s);
  /// Input-scattered attention (§6.5): an FFN's exit into the sliced entry.
  Hand inputScatteredFfnExit(const Sides& s);
  /// The entry of a mixer stage that reads a TP slice (tp_reduce_scatter or
  /// tp_slice, add+norm, latent gather).
  void inputScatteredEntry(StepList& steps, bool owes_tp, bool residual_on_attention_rows);
  /// LongCat-Flash (stack 0, branch_layers.cc): the boundary after the
  /// stage `from` of a branch layer, where that is attn0 (the MoE boundary),
  /// the MoE (branch output and mlp0's branch input) or mlp1 (the merge).
  Hand branchBoundary(int from, LayerKind consumer, bool final_norm, std::int8_t group);
  Hand branchOutput(bool last_layer, RowKind moe_rows, std::int8_t group);
  Hand mergeBranch(int from, bool final_norm, bool hands_on_local, std::int8_t group);

  // ---- the decide step (decide.cc) ----------------------------------------
  /// One boundary, decided once (rank-independent); emitted per rank.
  struct Decided {
    int stack, from, to;
    bool cut;
    int producer_pp, consumer_pp;
    Hand hand;
  };
  /// Stages and boundaries (after refuse()); the ranks' op lists sized.
  Status decide();
  void declareStages(const std::vector<int>& pp_of);
  void decideBoundaries(const std::vector<int>& pp_of);
  /// cp_gather_after_forward: the model boundary gathers the CP shards.
  static void gatherCpShardsAfterForward(StepList& entry, int attn_dp);
  /// The plan's record of a boundary: both sides' hand-offs and step kinds.
  static Boundary boundaryRecord(int stack, int from, int to, bool cut, const Hand& h);

  // ---- emission (emission.cc) ---------------------------------------------
  void emitRank(int r);
  /// The producer's exit steps (and the pipeline sends) of a boundary.
  void emitExit(int r, const Decided& d);
  /// The consumer's side: receives, the MTP input, captures, the entry
  /// steps and the consumer's compute.
  void emitEntry(int r, const Decided& d);
  /// The aux hidden-state capture before stage `d.to`, after its entry.
  void emitCapture(int r, const Decided& d);
  /// The MTP step's input projection and zero residual (branch_layers.cc).
  void emitMtpInput(int r);
  /// One step as rank `rank`'s op (nothing where the step skips the rank).
  void emit(int rank, int stack, int stage, Phase phase, const Step& s);
  // Called from emission.cc only (per stage, per op) and defined there
  // inline, so that each folds into its one caller as within one file.
  inline void emitCompute(int rank, int stack, int stage);
  inline std::int64_t bytesOf(const Step& s, int rank) const;
  void emitLayerNormSpCompute(int rank, int stack, int stage, std::int8_t axis);
  void emitAllToAllCompute(int rank, int stack, int stage, Tensor t, std::int8_t axis);

  // ---- two-batch overlap (two_batch_overlap.cc; tbo.h) --------------------
  /// The stack-0 stage where the TBO layers start (-1: the batch runs whole).
  int tboFirstStage() const { return tbo_first_layer_ < 0 ? -1 : tbo_first_layer_ * spl_; }
  /// A half builder (the same case on one half's batch) for the TBO layers.
  void makeHalves();
  /// Rank r's TBO layers: the split, both halves' ops in the engine's issue
  /// order (B4), the merge; `edge` is the boundary into the first TBO stage.
  void emitTbo(int r, const Decided& edge, const Decided& last);
  /// The ops one half builder emits for rank r over the TBO layers, each
  /// with its chunk (the operations strategy's stage).
  void emitHalfOps(int r, std::vector<Op>* ops, std::vector<int>* chunks);
  PlanBuilder& half(int k) { return *halves_->builders[k]; }
  /// The global buffer a DP gather of this builder is passed (DpBuffer).
  DpBuffer dpGatherBuffer() const;

  bool two_stage_;  ///< two-stage decoder layers (mixer, FFN per layer), else single-stage
  /// LongCat-Flash layers (five stages: attn0, MoE branch, mlp0, attn1,
  /// mlp1): the MoE runs on a copy of the input mlp0 reads (fork), completes
  /// its own sum and is merged into the layer output after mlp1's sum.
  bool branch_;
  bool input_scattered_;  ///< Flags::input_scattered (checked by refuse())
  /// Two-stage LayerNorm SP (§6.5 SEQUENCE_PARALLEL): every stage reads and
  /// writes local rows; its column linear gathers, its row linear
  /// reduce-scatters; the boundaries only add and norm.
  bool ln_sp_;
  /// Two-stage: the residual lies on local rows (an FFN on local rows left it
  /// there; the next attention input keeps it, §5.1 / §6.2). Decided in
  /// boundary order.
  bool residual_local_ = false;
  bool legacy_;  ///< the rules before stage declarations (PolicyKind::kLegacy)
  bool naive_;   ///< every stage completes its own sum at its exit (PolicyKind::kNaive)
  const Case& c_;
  Schema schema_;
  ParallelConfig cfg_;
  DpPadding padding_;
  /// kInterleave / kZigzag: MLA / GQA prefill CP shards the batch (an FFN
  /// on shared rows gathers the shards and hands its output back by
  /// reduce-scatter (MLA only) or take-back; the model boundary gathers the
  /// final output, cp_gather_after_forward).
  CpLayout cp_layout_;
  /// kPaddedEqual where the engine pads the batch to attn_tp (case_facts.cc).
  LocalSplit local_split_;
  AttentionPad attention_pad_;  ///< what attention rows hold (rows.h)
  RowCounts rows_;
  int T_, D_, a_;
  int total_tokens_;
  int spl_;  ///< stages per decoder layer
  /// Two-stage layers under attention CP (attn_cp > 1, --enable-prefill-cp).
  bool cp_;
  /// The attention is MLA (every MLA preset declares a q_lora_rank): prefill
  /// CP takes the DSA/MLA interleave path, else the GQA zigzag path.
  bool mla_;
  /// The batch is CP-sharded (the CONTEXT_PARALLEL variant); otherwise CP
  /// ranks hold the same rows (token_axis_sizes(cp_active=False)).
  bool cp_batch_;
  std::array<std::uint8_t, kAxisCount> same_groups_;  ///< sameGroup's table, bit y of entry x
  bool rank0_steps_ = false;  ///< some step runs on attention-TP rank 0 only
  Plan plan_;
  std::vector<std::vector<LayerKind>> stacks_;
  std::vector<Decided> decided_;
  /// Flags::tbo: enable_two_batch_overlap (the dense -> sparse exit rows
  /// resolve for every batch once it is set, B3).
  bool tbo_flag_ = c_.flags.tbo;
  /// First decoder layer of stack 0 that runs per half (B1); -1: none.
  int tbo_first_layer_ = -1;
  std::vector<int> tbo_split_;  ///< per DP shard (B2)
  /// This builder plans one TBO half of the declared policy: its DP gathers
  /// get the child batch's global buffer (DpBuffer; two_batch_overlap.cc).
  bool tbo_half_ = false;
  /// The case on each half's batch and its builder (the TBO layers' ops);
  /// allocated only for a batch that runs split.
  struct Halves {
    Case cases[2];
    std::unique_ptr<PlanBuilder> builders[2];
  };
  std::unique_ptr<Halves> halves_;
};

}  // namespace seam::policy_detail
