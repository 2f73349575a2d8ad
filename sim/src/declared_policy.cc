// The boundary policies (declared, legacy, naive) for single-stage hybrid
// layers (Nemotron-H: serving-boundaries.md §9.2 (5), §9.3) and for
// two-stage decoder layers (attention then FFN: the classic tables of §5 for
// legacy, the declared equivalents of §6 for declared; DeepSeek-V3, Qwen3,
// Qwen3-Next, and Falcon-H1 whose parallel mixer is one attn-TP partial, §10).
// Each boundary is built from the declarations of its two sides only.
//
// Decisions are made once per boundary (they do not depend on the rank);
// ops are then emitted per rank with that rank's row counts. The schema
// switch (policy.h) flips named decision sites for planner mutants.
#include <algorithm>
#include <array>
#include <cassert>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/dp_gather.h"
#include "seam/sim/policy.h"
#include "seam/sim/rows.h"
#include "seam/sim/tbo.h"

namespace seam {

std::string_view policyName(PolicyKind policy) {
  switch (policy) {
    case PolicyKind::kDeclared: return "declared";
    case PolicyKind::kLegacy: return "legacy";
    case PolicyKind::kNaive: return "naive";
  }
  return "?";
}

Expected<PolicyKind> parsePolicy(std::string_view name) {
  if (name == "declared") return PolicyKind::kDeclared;
  if (name == "legacy") return PolicyKind::kLegacy;
  if (name == "naive") return PolicyKind::kNaive;
  return Status::invalid("--policy \"" + std::string(name.substr(0, 64)) + "\" is not one of declared, legacy, naive");
}

namespace {

/// FUSE_ALLREDUCE_MAX_BATCH_SIZE of the FlashInfer gate.
constexpr int kFuseMaxTokens = 2048;

/// StagePlan.branch_rows raises NotImplementedError on any batch variant but
/// ORDINARY (layer_boundary/construction.py).
constexpr std::string_view kBranchNeedsOrdinaryRows =
    "branch transport requires ordinary batch rows (NotImplementedError in StagePlan.branch_rows)";

/// The batch takes the CONTEXT_PARALLEL variant (prefill CP shards its
/// tokens): an extend batch the CP strategy can apply to (layers/cp/). Zigzag
/// (GQA) needs every sequence to hold at least max(128, 2cp) tokens; seam's
/// batch is one sequence per DP shard. Interleave (MLA) needs sum >= cp.
bool cpShardsBatch(const Case& c, bool mla) {
  const int cp = c.config.attn_cp;
  if (c.flags.mode != ForwardMode::kExtend || cp <= 1) return false;
  for (int tokens : c.batch.tokens) {
    if (mla ? tokens >= cp : tokens >= std::max(kZigzagMinTokens, 2 * cp)) return true;
  }
  return false;
}

/// The rows a case's batch takes over attention CP on a CP-sharded extend
/// batch of a two-stage stack: interleaved for MLA with attn_tp = attn_dp = 1
/// (any other MLA CP batch is refused by attn_cp_gather's assert), zigzag for
/// GQA (moe_dp is 1 or attn_cp: serverArgsMoeDp), under attention DP too: there
/// each DP shard long enough is sharded (rows.h), the others stay replicated.
CpLayout cpLayoutOf(const Case& c) {
  const bool mla = c.model.shape.q_lora_rank > 0;
  if (c.model.family == LayerFamily::kSingleStage || !cpShardsBatch(c, mla)) return CpLayout::kReplicated;
  if (mla) return c.config.attnTp() == 1 && c.config.attn_dp == 1 ? CpLayout::kInterleave : CpLayout::kReplicated;
  return CpLayout::kZigzag;
}

/// One abstract step of an entry or exit, instantiated per rank.
struct Step {
  OpKind kind;
  Tensor tensor;
  std::int8_t axis = kNoAxis;
  RowKind in = RowKind::kAttention;
  RowKind out = RowKind::kAttention;
  bool skip_if_idle_shard = false;  ///< SGLang: "if rows > 0" (replicate-order AR)
  bool attn_tp_rank0_only = false;  ///< partial-order DP gather: only attn-TP rank 0 adds the residual
  bool cp_sharded_only = false;     ///< runs only where the rank's DP shard is CP-sharded (model-boundary CP gather)
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

/// How a stage's FFN runs (single-stage FFNs only).
enum class FfnRows { kShared, kLocal };  // kShared: attention (D == 1) or full (D > 1) rows

class DeclaredBuilder {
 public:
  DeclaredBuilder(const Case& c, const Schema& schema, PolicyKind policy)
      : two_stage_(c.model.family != LayerFamily::kSingleStage),
        branch_(c.model.family == LayerFamily::kBranchMerge),
        input_scattered_(c.flags.input_scattered),
        ln_sp_(two_stage_ && c.flags.layernorm_sp),
        legacy_(policy == PolicyKind::kLegacy),
        naive_(policy == PolicyKind::kNaive),
        c_(c),
        schema_(schema),
        cfg_(c.config),
        padding_(resolvePadding(c)),
        cp_layout_(cpLayoutOf(c)),
        rows_(c.config, c.batch, padding_, cp_layout_, ln_sp_ ? LocalSplit::kPaddedEqual : LocalSplit::kTensorSplit),
        T_(cfg_.tp),
        D_(cfg_.attn_dp),
        a_(cfg_.attnTp()),
        total_tokens_(c.batch.total()),
        spl_(c.model.stagesPerLayer()),
        cp_(two_stage_ && cfg_.attn_cp > 1),
        mla_(c.model.shape.q_lora_rank > 0),
        cp_batch_(cp_ && cpShardsBatch(c, mla_)),
        same_groups_(sameGroups(cfg_)) {}

  Expected<Plan> build();

 private:
  // ---- facts ------------------------------------------------------------
  Status refuse();
  Axis postExpertsAxis() const;
  /// Whether two axes' groups of rank 0 are the same ranks (a table: the
  /// planner asks at every boundary, and each answer built two groups).
  bool sameGroup(Axis x, Axis y) const { return (same_groups_[static_cast<int>(x)] >> static_cast<int>(y)) & 1U; }
  static std::array<std::uint8_t, kAxisCount> sameGroups(const ParallelConfig& cfg) {
    std::array<std::vector<int>, kAxisCount> groups;
    for (Axis a : kAllAxes) groups[static_cast<int>(a)] = groupMembers(cfg, a, 0);
    std::array<std::uint8_t, kAxisCount> same{};
    for (int x = 0; x < kAxisCount; ++x) {
      for (int y = 0; y < kAxisCount; ++y) {
        if (groups[x] == groups[y]) same[x] = static_cast<std::uint8_t>(same[x] | (1U << y));
      }
    }
    return same;
  }
  int axisSize(Axis axis) const { return groupSizeOf(cfg_, axis); }
  int world() const { return cfg_.world(); }
  int ppRank(int rank) const { return rank / cfg_.tp; }
  /// The pipeline stage of every stage of stack 0: the pattern's cuts, else
  /// SGLang's even split by decoder layer (the last stage takes the remainder).
  std::vector<int> ppOfStages() const;
  bool fusable() const;
  /// LayerCommunicator._declared_sides under prefill CP: the GQA CP moves
  /// have no reduce-scatter, so an FFN output may leave its sum (defer it,
  /// or leave it to a DP reduce-scatter) only when the FFN runs on CP shards
  /// (on_cp_shards: a MoE with moe_dp == attn_cp). MLA CP may leave it on any
  /// batch that is not CP-sharded. Without CP: always.
  /// The boundary reduction strategy picks a reduce-scatter (rs, rs+rsv).
  bool useRs() const {
    return c_.flags.reduction == BoundaryReduction::kRs || c_.flags.reduction == BoundaryReduction::kRsRsv;
  }
  bool mayLeave(LayerKind ffn) const {
    if (!cp_ || mla_) return true;
    return onCpShards(ffn);
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
    return cp_layout_ != CpLayout::kReplicated && D_ == 1 && isFfn(ffn) && !ffnOnLocal(ffn) && !onCpShards(ffn);
  }
  /// The rank's DP shard is CP-sharded (each DP rank decides on its own batch).
  bool cpShardedRank(int rank) const {
    return cpShardsTokens(cp_layout_, c_.batch.tokens[dpPlaceOf(cfg_, rank).attn_dp_rank], cfg_.attn_cp);
  }
  /// The group of that gather (_cp_moves): attn_cp for DSA/MLA
  /// (attn_cp_interleave_gather), the MoE-CP group for GQA (moe_cp_gather
  /// over _MOE_DP, aliased to attn_cp when attn_cp > moe_dp).
  std::int8_t cpGatherAxis() const { return static_cast<std::int8_t>(mla_ ? Axis::kAttnCp : Axis::kMoeDp); }
  bool a2aMoe(LayerKind k) const { return k == LayerKind::kMoe && c_.flags.a2a != A2aBackend::kNone; }
  /// A fully-DP dense FFN of a two-stage layer (moe_dense_tp_size == 1).
  bool denseOnLocal(LayerKind k) const { return two_stage_ && k == LayerKind::kDenseMlp && c_.flags.dense_tp1; }
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

  // ---- steps ------------------------------------------------------------
  struct Hand {            // what crosses a boundary
    Handoff handoff;       // declared hand-off
    StepList exit;   // producer exit steps
    StepList entry;  // consumer entry steps
    RowKind residual_after = RowKind::kAttention;  // where the residual lies after the entry
  };
  /// One boundary, decided once (rank-independent); emitted per rank.
  struct Decided {
    int stack, from, to;
    bool cut;
    int producer_pp, consumer_pp;
    Hand hand;
  };
  /// Stages and boundaries (after refuse()); the ranks' op lists sized.
  Status decide();
  void emitRank(int r);
  /// The producer's exit steps (and the pipeline sends) of a boundary.
  void emitExit(int r, const Decided& d);
  /// The consumer's side: receives, the MTP input, captures, the entry
  /// steps and the consumer's compute.
  void emitEntry(int r, const Decided& d);
  // ---- two-batch overlap (tbo.h) ----------------------------------------
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

  Hand boundary(int stack, int from, int to, bool cut);
  /// Legacy aux capture before the consumer's entry (a completed copy).
  StepList legacyCapture(int stack, int from, const Hand& h) const;
  /// Two-stage layers: the attention output into the FFN (prepare_mlp, §5.3 / §6.3).
  Hand twoStageIntoFfn(LayerKind consumer);
  /// LongCat-Flash (stack 0): the boundary after the stage `from` of a
  /// branch layer, where that is attn0 (the MoE boundary), the MoE (branch
  /// output and mlp0's branch input) or mlp1 (the merge).
  Hand branchBoundary(int from, LayerKind consumer, bool final_norm, std::int8_t group);
  /// Input-scattered attention (§6.5): the entry of a mixer stage that reads
  /// a TP slice (tp_reduce_scatter or tp_slice, add+norm, latent gather).
  void inputScatteredEntry(StepList& steps, bool owes_tp, bool residual_on_attention_rows);
  /// Two-stage layers: an FFN on local rows (a2a MoE) into the next layer.
  /// `to_attention`: the exit gathers to attention rows for a stage that is not the final norm (TBO's exit rows).
  Hand twoStageOutOfLocalFfn(LayerKind consumer, bool final_norm, bool cut, bool to_attention = false);
  void addEntryRead(StepList& steps, LayerKind consumer, bool final_norm, bool residual_present,
                    bool stack_start, bool after_ffn = false);
  void dpReturnSteps(StepList& steps, std::int8_t group) const;
  void dpCompleteSteps(StepList& complete, LayerKind producer, std::int8_t owed) const;

  // ---- emission ---------------------------------------------------------
  void emit(int rank, int stack, int stage, Phase phase, const Step& s);
  void emitCompute(int rank, int stack, int stage);
  std::int64_t bytesOf(const Step& s, int rank) const;

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
  /// The case on each half's batch and its builder (the TBO layers' ops);
  /// allocated only for a batch that runs split.
  struct Halves {
    Case cases[2];
    std::unique_ptr<DeclaredBuilder> builders[2];
  };
  std::unique_ptr<Halves> halves_;
  DeclaredBuilder& half(int k) { return *halves_->builders[k]; }
};

std::vector<int> DeclaredBuilder::ppOfStages() const {
  const int n0 = static_cast<int>(stacks_[0].size());
  std::vector<int> pp_of(n0, 0);
  const auto& cuts = c_.model.pattern.cuts;
  if (!cuts.empty()) {
    for (int i = 0, k = 0; i < n0; ++i) {
      while (k < static_cast<int>(cuts.size()) && cuts[k] <= i) ++k;
      pp_of[i] = k;
    }
  } else {
    // By decoder layer: both stages of a two-stage layer on one pipeline stage.
    const int per = n0 / spl_ / cfg_.pp;
    for (int i = 0; i < n0; ++i) pp_of[i] = std::min(i / spl_ / std::max(per, 1), cfg_.pp - 1);
  }
  return pp_of;
}

Status DeclaredBuilder::refuse() {
  if (Status st = serverArgsRefusal(c_); !st) return st;
  if (tbo_flag_) {
    // Engine refusals of --enable-two-batch-overlap (B1, B5), ahead of the
    // variants TBO turns off (the start-up one: serverArgsRefusal).
    bool sparse = false, attention = true;
    for (LayerKind k : stacks_[0]) {
      sparse = sparse || k == LayerKind::kMoe;
      attention = attention && (isFfn(k) || k == LayerKind::kAttention);
    }
    // OperationsStrategy.init_new_tbo knows DeepseekV2, Qwen3Moe and MiMoV2
    // decoder layers; seam's two-stage stacks of MLA attention and MoE are DeepSeek's.
    if (c_.model.family != LayerFamily::kTwoStage || !mla_ || !sparse || !attention) {
      return Status::refused("two-batch overlap runs DeepSeek-V2/V3, Qwen3-MoE and MiMo-V2 decoder layers only: "
                             "OperationsStrategy.init_new_tbo raises NotImplementedError for " + c_.model.name +
                             "'s layers");
    }
    if (input_scattered_) {
      return Status::refused("input-scattered attention never runs on a two-batch-overlap batch (its per-batch gate "
                             "requires not can_run_tbo); the engine runs the ordinary variant");
    }
  }
  if (c_.flags.layernorm_sp) {
    // validate_layernorm_sp (arg_groups/layernorm_sp_hook.py), at startup,
    // so ahead of the per-batch gate: SP_SUPPORTED_ARCHITECTURES is
    // {Qwen3ForCausalLM}; tp > 1; no attention DP; no speculative decoding.
    const std::string sp = "LayerNorm sequence parallel (--enable-layernorm-sp) ";
    if (!isQwen3Dense(c_.model)) {
      return Status::refused(sp + "is only supported for ['Qwen3ForCausalLM'] (Qwen3 dense: GQA attention and dense "
                             "MLPs); " + (c_.model.name == "pattern" ? "pattern " + c_.model.pattern.text()
                                                                      : c_.model.name) +
                             " is not (ValueError in validate_layernorm_sp)");
    }
    if (T_ <= 1) {
      return Status::refused(sp + "requires tp_size > 1: there is no sequence to shard across a single TP rank "
                             "(ValueError in validate_layernorm_sp)");
    }
    if (D_ > 1) {
      return Status::refused(sp + "is not compatible with attention DP (attn_dp=" + std::to_string(D_) +
                             "): SP shards the sequence across the full TP group (ValueError in validate_layernorm_sp)");
    }
    if (!c_.model.pattern.mtp.empty() || !c_.flags.capture.empty()) {
      return Status::refused(sp + "is not compatible with speculative decoding (an MTP step or EAGLE3 aux capture): "
                             "the captured aux hidden states would be sequence-sharded (ValueError in "
                             "validate_layernorm_sp)");
    }
  }
  if (ln_sp_) {
    // SEQUENCE_PARALLEL runs on extend batches (layernorm_sp.runs_sp).
    if (c_.flags.mode != ForwardMode::kExtend) {
      return Status::refused("LayerNorm sequence parallel runs on extend batches only (layernorm_sp.runs_sp)");
    }
    if (legacy_) return Status::refused("the classic (Gen A) communicator has no LayerNorm-SP variant");
    if (branch_) {
      return Status::refused(std::string(kBranchNeedsOrdinaryRows) + " (LongCat-Flash on a LayerNorm-SP batch)");
    }
    if (naive_) return Status::notModelled("a naive baseline of LayerNorm sequence parallel");
    if (c_.flags.dense_tp1) {
      return Status::notModelled("LayerNorm sequence parallel with fully-DP dense FFNs (moe_dense_tp_size 1)");
    }
  }
  if (input_scattered_) {
    // AttnTpContext.init_context and the per-batch gate (§6.5): otherwise the
    // engine runs the ordinary variant.
    const std::string no = "the engine does not run input-scattered attention ";
    if (!two_stage_ || c_.model.shape.q_lora_rank <= 0) {
      return Status::refused(no + "without an MLA attention with q_lora_rank (" + c_.model.name + " has none)");
    }
    if (legacy_) return Status::refused("the classic (Gen A) communicator has no input-scattered mode");
    if (naive_) return Status::notModelled("a naive baseline of input-scattered attention");
    if (T_ == 1) return Status::refused(no + "at tp=1");
    if (D_ > 1) return Status::refused(no + "under DP attention (attn_dp=" + std::to_string(D_) + ")");
    if (c_.flags.a2a != A2aBackend::kNone) return Status::refused(no + "with an all-to-all MoE backend");
    if (c_.flags.dense_tp1) return Status::refused(no + "with fully-DP dense FFNs");
    if (c_.flags.mode != ForwardMode::kExtend) return Status::refused(no + "on a decode batch (extend only)");
    if (!c_.flags.capture.empty()) return Status::refused(no + "with EAGLE3 aux capture");
    if (total_tokens_ % T_ != 0) {
      return Status::refused("tp_reduce_scatter asserts tokens % tp_size == 0 (" + std::to_string(total_tokens_) +
                             " tokens, tp=" + std::to_string(T_) + ")");
    }
    // LongCat-Flash declares qkv_latent_func, so the batch takes the INPUT_SCATTERED variant.
    if (branch_) {
      return Status::refused(std::string(kBranchNeedsOrdinaryRows) + " (LongCat-Flash on an input-scattered batch)");
    }
  }
  // models/nemotron_h_utils.py: make_stage_boundary refuses these.
  if (!two_stage_ && cfg_.attn_cp > 1) {
    return Status::refused("Nemotron-H refuses attention context parallel (attn_cp=" +
                           std::to_string(cfg_.attn_cp) + "): NotImplementedError in make_stage_boundary");
  }
  bool has_moe = false;
  for (const auto& stack : stacks_)
    for (LayerKind k : stack) has_moe = has_moe || k == LayerKind::kMoe;
  if (c_.flags.a2a != A2aBackend::kNone && has_moe && cfg_.moe_ep != cfg_.tp) {
    // SGLang sets ep_size = tp_size for the DeepEP backend.
    return Status::refused("the deepep all-to-all backend runs with moe_ep == tp (SGLang sets ep_size = tp_size); "
                           "got moe_ep=" + std::to_string(cfg_.moe_ep) + " tp=" + std::to_string(cfg_.tp));
  }
  if (c_.flags.a2a != A2aBackend::kNone && !has_moe) {
    return Status::refused("an all-to-all MoE backend needs a MoE layer; the pattern has none");
  }
  if (cp_) {
    // factories._reject_unsupported_cp_moe (construction time, any batch).
    const bool tp_moe = has_moe && c_.flags.a2a == A2aBackend::kNone;
    if (has_moe && c_.flags.a2a != A2aBackend::kNone && D_ > 1 && !mla_) {
      return Status::refused("a MoE dispatched per DP shard under attention DP and GQA prefill CP "
                             "(_reject_unsupported_cp_moe)");
    }
    if (tp_moe && cfg_.moe_dp == cfg_.attn_cp && mla_) {
      return Status::refused("a MoE on the TP group with moe_dp_size == attn_cp_size under DSA or MLA prefill CP "
                             "(_reject_unsupported_cp_moe)");
    }
    if (tp_moe && cfg_.moe_dp == cfg_.attn_cp && D_ > 1) {
      return Status::refused("a MoE on the TP group with moe_dp_size == attn_cp_size under attention DP and "
                             "attention CP (_reject_unsupported_cp_moe)");
    }
    if (input_scattered_) {
      // _input_can_be_scattered: not _generic_prefill_cp_shards_tokens(); the
      // engine silently runs the ordinary variant (the same case).
      return Status::refused("input-scattered attention is excluded under prefill CP (_input_can_be_scattered); "
                             "the engine runs the ordinary variant");
    }
    if (cp_batch_ && branch_) {
      return Status::refused(std::string(kBranchNeedsOrdinaryRows) +
                             " (LongCat-Flash under a CP-sharded extend batch)");
    }
    if (cp_batch_ && mla_ && (a_ > 1 || D_ > 1)) {
      return Status::refused("attn_cp_gather asserts attn_dp_size == 1 and attn_tp_size == 1 (MLA prefill CP, "
                             "attn_tp=" + std::to_string(a_) + " attn_dp=" + std::to_string(D_) + ")");
    }
  }
  // seam's gaps come after the engine's refusals, which take precedence.
  if (cp_ && legacy_) {
    return Status::notModelled("the classic (Gen A) tables under attention CP (attn_cp=" +
                               std::to_string(cfg_.attn_cp) + "; Gen B's MOE_FULL rows)");
  }
  if (cp_ && ln_sp_) {
    // SP shards the sequence over the whole TP group (get_parallel().tp_group),
    // while attention CP replicates the rows and attention weights over attn_cp.
    return Status::notModelled("LayerNorm sequence parallel under attention CP (attn_cp=" +
                               std::to_string(cfg_.attn_cp) + "): SP's padded shards span the TP group");
  }
  if (tbo_flag_) {
    // B1: the DeepSeek model's layer range; a dense FFN inside it asserts.
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
    const LayerRange range = tboLayers(fkdr, start, layers);
    if (!range.empty() && range.first < start) {
      return Status::refused("two-batch overlap under pipeline parallelism: pipeline stage " +
                             std::to_string(pp_of.back()) + " starts at layer " + std::to_string(start) +
                             ", after first_k_dense_replace=" + std::to_string(fkdr) +
                             ", so DeepseekV2Model.forward hands layers [0, " + std::to_string(layers) +
                             ") to the TBO path, PPMissingLayer first, and OperationsStrategy.init_new_tbo raises "
                             "NotImplementedError (sglang issue #12427)");
    }
    for (int l = range.first; l < range.last; ++l) {
      if (stacks_[0][l * spl_ + 1] != LayerKind::kMoe) {
        return Status::refused("DeepSeek asserts \"dense layer TBO not yet implemented\": layer " + std::to_string(l) +
                               " of the two-batch-overlap range [" + std::to_string(range.first) + ", " +
                               std::to_string(range.last) + ") has a dense FFN");
      }
    }
    // EAGLE3 captures (layers_to_capture) are taken in the whole-batch layer
    // loop only; the TBO path and its children (aux_hidden_states_buffer =
    // None in filter_batch) capture nothing.
    for (int stage : c_.flags.capture) {
      if (!range.empty() && !cp_batch_ && stage >= range.first * spl_) {
        return Status::refused("EAGLE3 aux capture before layer " + std::to_string(stage / spl_) +
                               " inside the two-batch-overlap range [" + std::to_string(range.first) + ", " +
                               std::to_string(range.last) + "): DeepseekV2Model.forward captures aux hidden states "
                               "only in its whole-batch layer loop, so the engine never captures it and the "
                               "EAGLE3 draft reads fewer aux states than it was built for");
      }
    }
    // can_run_tbo (B2): every split is a number (tbo.h), so every batch runs
    // split, except a CP-sharded batch, which the runtime gate keeps whole
    // (research note B7). A batch that is not CP-sharded under attn_cp > 1
    // (decode; an extend batch too short to shard) splits: every attn_cp
    // replica holds the DP shard's rows whole and cuts them at the same token
    // (TboDPAttentionPreparer, per rank from its local batch), and each half
    // runs the whole batch's boundaries on its rows (the halves' builders
    // decide on their own batches, which are not CP-sharded either).
    if (!range.empty() && !cp_batch_) tbo_first_layer_ = range.first;
  }
  if (branch_) {
    // Branches run only on ORDINARY batches (serving-boundaries §10).
    if (legacy_) return Status::notModelled("the classic LongCat-Flash communicator (branch layers under legacy)");
    if (c_.flags.dense_tp1) {
      return Status::notModelled("LongCat-Flash branch layers with fully-DP dense MLPs (moe_dense_tp_size 1: "
                                 "mlp0 and mlp1 on local rows)");
    }
  }
  return Status::ok();
}

// post_experts_reduction_group(): tp when the EP and MoE-TP reductions merge
// (moe_ep > 1, moe_tp > 1, moe_dp == 1); else the EP group if moe_ep > 1;
// else the MoE-TP group.
Axis DeclaredBuilder::postExpertsAxis() const {
  if (cfg_.moe_ep > 1 && cfg_.moeTp() > 1 && cfg_.moe_dp == 1) return Axis::kTp;
  if (cfg_.moe_ep > 1) return Axis::kMoeEp;
  return Axis::kMoeTp;
}

// apply_flashinfer_allreduce_fusion: available, no DP attention, tp > 1,
// 0 < tokens <= 2048.
bool DeclaredBuilder::fusable() const {
  return !naive_ && c_.flags.fusion && D_ == 1 && T_ > 1 && total_tokens_ > 0 && total_tokens_ <= kFuseMaxTokens;
}

std::int8_t DeclaredBuilder::weightAxis(LayerKind k) const {
  Axis axis;
  if (isMixer(k)) {
    axis = Axis::kAttnTp;  // o_proj / out_proj are row-parallel over attn_tp
  } else if (denseOnLocal(k)) {
    return kNoAxis;  // replicated weights on every rank
  } else if (k == LayerKind::kDenseMlp) {
    axis = Axis::kTp;  // dense_tp_size = tp
  } else if (a2aMoe(k)) {
    axis = Axis::kMoeEp;  // dispatch/combine over the EP group
  } else {
    axis = postExpertsAxis();
  }
  return axisSize(axis) > 1 ? static_cast<std::int8_t>(axis) : kNoAxis;
}

// The read of an entry once nothing is owed any more: add+norm, and the move
// onto the rows the consumer reads.
void DeclaredBuilder::addEntryRead(StepList& steps, LayerKind consumer, bool final_norm,
                                   bool residual_present, bool stack_start, bool after_ffn) {
  const bool ffn = !final_norm && isFfn(consumer);
  if (ffn && a2aMoe(consumer)) {
    // _attn_tp_slice_update_read: complete input, slice hidden and residual.
    if (a_ > 1) {
      steps.push_back({OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention, RowKind::kLocal});
      if (residual_present && !schema_.on(Decision::kResidualNotSliced)) {
        steps.push_back({OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
      }
    }
    steps.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, localRows(), localRows()});
    return;
  }
  if (stack_start && schema_.on(Decision::kStackNeverEntered)) {
    steps.push_back({OpKind::kNorm, Tensor::kHidden});  // residual never set from the embedding
  } else {
    if (stack_start && ffn && schema_.on(Decision::kStackStartFfnWithResidual)) {
      // Reads a residual that does not exist yet: the embedding lands in it twice.
      steps.push_back({OpKind::kAdd, Tensor::kResidual});
    }
    if (legacy_ && ffn && (stack_start || after_ffn)) {
      // Legacy: an FFN whose input is already complete folds it into the
      // residual and all-reduces a zero update (previous_leaves_attention_partial
      // is false), then adds and norms as if the update were a partial.
      const Axis group = D_ > 1 ? Axis::kAttnTp : Axis::kTp;
      steps.push_back({OpKind::kAdd, Tensor::kResidual});
      steps.push_back({OpKind::kZeroFill, Tensor::kHidden});
      if (axisSize(group) > 1 && D_ == 1 && fusable()) {
        steps.push_back({OpKind::kArAddNorm, Tensor::kHidden, static_cast<std::int8_t>(group)});
      } else {
        if (axisSize(group) > 1) {
          steps.push_back({OpKind::kAllReduce, Tensor::kHidden, static_cast<std::int8_t>(group), RowKind::kAttention,
                           RowKind::kAttention, /*skip_if_idle_shard=*/D_ > 1});
        }
        steps.push_back({OpKind::kAddNorm, Tensor::kHidden});
      }
    } else {
      steps.push_back({OpKind::kAddNorm, Tensor::kHidden});
    }
  }
  if (ffn && D_ > 1) {
    // Replicate order: norm locally, then gather the normed rows over DP.
    steps.push_back({OpKind::kDpGatherReplicate, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp),
                     RowKind::kAttention, RowKind::kFull});
  }
}

// The FFN's return over DP when nothing picks a reduce-scatter: AR over the
// owed group, then dp_scatter (a local copy of this shard's slot).
void DeclaredBuilder::dpReturnSteps(StepList& steps, std::int8_t group) const {
  if (group != kNoAxis) steps.push_back({OpKind::kAllReduce, Tensor::kHidden, group, RowKind::kFull, RowKind::kFull});
  steps.push_back({OpKind::kDpScatter, Tensor::kHidden, kNoAxis, RowKind::kFull, RowKind::kAttention});
}

// The steps that complete an FFN's sum on full rows and return this shard's
// rows over DP (ExitPolicy's dp_step, §6.6): reduce_scatterv, the DP
// reduce-scatter, or AR over the owed group + dp_scatter.
void DeclaredBuilder::dpCompleteSteps(StepList& complete, LayerKind producer, std::int8_t owed) const {
  const BoundaryReduction strategy = c_.flags.reduction;
  // may_reduce_scatterv = use_rsv and may_leave; may_reduce_scatter = use_rs and may_scatter.
  const bool strategy_rsv =
      mayLeave(producer) && (strategy == BoundaryReduction::kRsv || strategy == BoundaryReduction::kRsRsv);
  const bool strategy_rs =
      mayLeave(producer) && (strategy == BoundaryReduction::kRs || strategy == BoundaryReduction::kRsRsv);
  // A reduce-scatter over tp completes the sum only when the owed group is the
  // whole TP group (otherwise it would also add the moe_dp replicas).
  const bool owes_tp = owed != kNoAxis && sameGroup(static_cast<Axis>(owed), Axis::kTp);
  OpKind dp_step = OpKind::kDpScatter;  // kDpScatter = none picked
  if (two_stage_ && legacy_) {
    // Classic _scatter_hidden_states (Gen A): dp_reduce_scatter when the model
    // allows it and the padding is MAX_LEN, else the FFN all-reduces and
    // dp_scatter copies this shard's slot; no reduce_scatterv before Gen B.
    if (c_.model.allow_reduce_scatter && padding_ == DpPadding::kMaxLen && owes_tp) dp_step = OpKind::kDpReduceScatter;
  } else if (strategy_rsv && c_.flags.a2a == A2aBackend::kNone && cfg_.moe_ep == D_ && owes_tp) {
    dp_step = OpKind::kReduceScatterv;  // should_use_dp_reduce_scatterv
  } else if (strategy_rs && padding_ == DpPadding::kMaxLen && owes_tp) {
    dp_step = OpKind::kDpReduceScatter;
  }
  if (dp_step != OpKind::kDpScatter) {
    complete.push_back({dp_step, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp), RowKind::kFull,
                        RowKind::kAttention});
  } else {
    dpReturnSteps(complete, owed);
  }
}

// The boundary between stage `from` and `to` of one stack. from == -1: the
// embedding (or the MTP input projection); to == stack size: the final norm.
DeclaredBuilder::Hand DeclaredBuilder::boundary(int stack, int from, int to, bool cut) {
  const auto& kinds = stacks_[stack];
  const int n = static_cast<int>(kinds.size());
  const bool final_norm = to == n;
  const LayerKind consumer = final_norm ? LayerKind::kMamba : kinds[to];
  const bool consumer_ffn = !final_norm && isFfn(consumer);
  // The MTP step's last layer is marked last (is_last_layer) unless mutated.
  const bool mtp_unmarked = stack == 1 && schema_.on(Decision::kMtpNotMarkedLast);
  const bool terminal = (final_norm && !mtp_unmarked) || cut;
  const bool terminal_defers = final_norm && (schema_.on(Decision::kTerminalDefers) || mtp_unmarked);
  Hand h;

  if (from < 0) {
    // Embedding (complete on attention rows, reduced by the embedding itself): residual := hidden.
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, false};
    residual_local_ = false;
    if (ln_sp_ && !final_norm) {
      h.entry.push_back({OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention, RowKind::kLocal});
      h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
      residual_local_ = true;
      h.residual_after = RowKind::kLocal;
      return h;
    }
    if (input_scattered_ && !final_norm) {
      // The MTP step's zero residual is laid out on the slice already.
      inputScatteredEntry(h.entry, false, false);
      h.residual_after = RowKind::kLocal;
      return h;
    }
    addEntryRead(h.entry, consumer, final_norm, /*residual_present=*/false, /*stack_start=*/true);
    return h;
  }

  const LayerKind producer = kinds[from];
  const std::int8_t group = weightAxis(producer);
  if (ln_sp_) {
    // The stage's row linear reduce-scattered its output: complete local rows.
    h.handoff = {RowKind::kLocal, SumGroup::kNone, Completer::kNone, true};
    if (final_norm) {
      // The model's final norm (add + RMSNorm) runs on the SP shards; the
      // LogitsProcessor's maybe_exit_gather then all-gathers them over TP and
      // narrows to the M tokens (sp_exit_gather) before the LM head.
      h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
      h.entry.push_back({OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp), RowKind::kLocal,
                         RowKind::kAttention});
      residual_local_ = false;
      return h;
    }
    h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
    h.residual_after = RowKind::kLocal;
    return h;
  }
  if (branch_ && stack == 0 && !ln_sp_) {
    // mlp0 -> attn1 and attn1 -> mlp1 are ordinary two-stage boundaries.
    const int role = from % spl_;
    if (role == 0 || role == 1 || role == 4) return branchBoundary(from, consumer, final_norm, group);
  }
  if (two_stage_ && isMixer(producer)) return twoStageIntoFfn(consumer);
  if (two_stage_ && ffnOnLocal(producer)) {
    // B3, tbo_exit_rows: a fully-DP dense FFN before a sparse layer hands on
    // attention rows once TBO is enabled (for every batch).
    const bool tbo_exit = tbo_flag_ && denseOnLocal(producer) && from + 2 < n && kinds[from + 2] == LayerKind::kMoe;
    return twoStageOutOfLocalFfn(consumer, final_norm || tbo_exit, cut, tbo_exit);
  }
  if (input_scattered_ && !final_norm) {
    // The FFN's sum is left for the next layer's tp_reduce_scatter when it is
    // a TP sum (may_reduce_scatter, not terminal); otherwise the exit
    // completes (also before a pipeline send) and the next entry slices.
    const bool rs = !terminal && group != kNoAxis && sameGroup(static_cast<Axis>(group), Axis::kTp) &&
                    c_.model.allow_reduce_scatter;
    h.handoff = {RowKind::kAttention, rs ? SumGroup::kTp : SumGroup::kNone,
                 rs ? Completer::kCarried : Completer::kNone, true};
    if (!rs && group != kNoAxis) h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, group});
    inputScatteredEntry(h.entry, rs, true);
    h.residual_after = RowKind::kLocal;
    return h;
  }

  if (isMixer(producer)) {
    // Mixer output: attention rows; owes ATTN_TP iff attn_tp > 1.
    const bool owes = group != kNoAxis;
    if (owes && consumer_ffn && !naive_) {
      // always_partial: the mixer never reduces; the FFN entry completes it.
      // Across a pipeline cut the partial is sent unreduced (TestStackEnds).
      h.handoff = {RowKind::kAttention, SumGroup::kAttnTp, Completer::kConsumerEntry, true};
      if (a2aMoe(consumer)) {
        const OpKind rs = OpKind::kReduceScatter;
        h.entry.push_back({rs, Tensor::kHidden, group, RowKind::kAttention, RowKind::kLocal});
        if (!schema_.on(Decision::kResidualNotSliced)) {
          h.entry.push_back({OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
        }
        h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
      } else if (D_ == 1) {
        if (fusable()) {
          h.entry.push_back({OpKind::kArAddNorm, Tensor::kHidden, group});
        } else {
          h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, group});
          h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
        }
      } else if (schema_.on(Decision::kDpGatherSumResidualEveryRank)) {
        // Classic partial order, but every attention-TP rank adds the residual.
        h.entry.push_back({OpKind::kAdd, Tensor::kHidden});
        h.entry.push_back({OpKind::kDpGatherPartial, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp),
                           RowKind::kAttention, RowKind::kFull});
        h.entry.push_back({OpKind::kDpScatter, Tensor::kResidual, kNoAxis, RowKind::kFull, RowKind::kAttention});
        h.entry.push_back({OpKind::kNorm, Tensor::kHidden, kNoAxis, RowKind::kFull, RowKind::kFull});
      } else {
        // Replicate order (reads_before_dp_gather): AR(attn_tp) if rows > 0, add+norm, gather.
        h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, group, RowKind::kAttention, RowKind::kAttention,
                           /*skip_if_idle_shard=*/true});
        addEntryRead(h.entry, consumer, false, true, false);
      }
      return h;
    }
    // Legacy (skip_reduce = feeds_mlp_layer or fuse_mlp_allreduce): a mixer
    // feeding a mixer leaves its sum only when the fused kernel takes it.
    const bool carry = !naive_ && owes && !final_norm && !consumer_ffn && !terminal && T_ > 1 && D_ == 1 &&
                       (!legacy_ || (fusable() && sameGroup(Axis::kTp, postExpertsAxis())));
    if ((carry || (owes && terminal_defers)) && !schema_.on(Decision::kMixerKeepsFusedSum)) {
      // MixerExit defers: UnreducedOutput(tp), completed by the next entry.
      h.handoff = {RowKind::kAttention, SumGroup::kTp, Completer::kCarried, true};
      if (!terminal_defers) {
        const std::int8_t tp = static_cast<std::int8_t>(Axis::kTp);
        if (fusable() && sameGroup(Axis::kTp, postExpertsAxis())) {
          h.entry.push_back({OpKind::kArAddNorm, Tensor::kHidden, tp});
        } else {
          h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, tp});
          h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
        }
        if (!final_norm) return h;
      }
      addEntryRead(h.entry, consumer, final_norm, true, false);
      return h;
    }
    if (carry && schema_.on(Decision::kMixerKeepsFusedSum)) {
      // Mutant: the mixer reduces at its exit *and* hands the sum on as carried.
      h.handoff = {RowKind::kAttention, SumGroup::kTp, Completer::kCarried, true};
      h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, group});
      h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp)});
      h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
      return h;
    }
    // Completed at the mixer's exit.
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
    if (owes) h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, group});
    addEntryRead(h.entry, consumer, final_norm, true, false);
    return h;
  }

  if (a2aMoe(producer)) {
    // Complete local rows after the combine; exit_rows = ATTENTION: add the
    // residual into the output, then gather over attention TP.
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, false};
    h.exit.push_back({OpKind::kAdd, Tensor::kHidden, kNoAxis, localRows(), localRows()});
    if (a_ > 1) {
      h.exit.push_back({OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kAttnTp),
                        RowKind::kLocal, RowKind::kAttention});
    }
    addEntryRead(h.entry, consumer, final_norm, false, false, /*after_ffn=*/true);
    return h;
  }

  // A shared-row FFN (dense, or MoE without an all-to-all backend).
  std::int8_t owed = group;
  if (owed != kNoAxis && producer == LayerKind::kDenseMlp && schema_.on(Decision::kFfnReducesOverAttnTp)) {
    owed = a_ > 1 ? static_cast<std::int8_t>(Axis::kAttnTp) : kNoAxis;  // use_dp_attention_reduce
  }
  // _sum_deferral_allowed: not (ep > 1 and moe_tp > 1 and not mergeable).
  const bool hybrid_ep_tp =
      producer == LayerKind::kMoe && cfg_.moe_ep > 1 && cfg_.moeTp() > 1 && postExpertsAxis() != Axis::kTp;
  // Legacy: the FFN skips its all-reduce only for the fused kernel of the
  // next layer's input (should_fuse_mlp_allreduce_with_next_layer), never
  // under DP attention.
  const bool may_defer = !naive_ && T_ > 1 && !terminal && !final_norm && !consumer_ffn && !hybrid_ep_tp &&
                         total_tokens_ > 0 && mayLeave(producer) &&
                         (!legacy_ || (D_ == 1 && owed != kNoAxis && fusable() &&
                                       sameGroup(static_cast<Axis>(owed), postExpertsAxis())));
  if (gathersOverCp(producer)) {
    // Exit row R - P == {CP} on a CP-sharded batch (may_leave is false: no
    // deferral): MLA's attn_cp_reduce_scatter_output when the strategy allows
    // a reduce-scatter, else AR over the owed
    // group and the take-back slice (attn_cp_take_back_output, or GQA's
    // moe_cp_take_back_output: narrow(rank * max, rows[rank]) of the padded
    // shards, which are all the physical length). _select_exit_move reduce-
    // scatters only over a sum group whose ranks are attn_cp's, else raises;
    // under interleave CP (attn_tp = attn_dp = 1, moe_dp = 1: serverArgsMoeDp)
    // every TP FFN's sum group spans the whole TP group, which is attn_cp.
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
    const std::int8_t cp = static_cast<std::int8_t>(Axis::kAttnCp);
    if (!naive_ && mla_ && useRs() && owed != kNoAxis) {
      h.exit.push_back({OpKind::kReduceScatter, Tensor::kHidden, cp, RowKind::kFull, RowKind::kAttention});
    } else {
      if (owed != kNoAxis) h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, owed, RowKind::kFull, RowKind::kFull});
      h.exit.push_back({OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kFull, RowKind::kAttention});
    }
    addEntryRead(h.entry, consumer, final_norm, true, false, /*after_ffn=*/true);
    return h;
  }
  if (D_ == 1) {
    if (owed == kNoAxis) {
      h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
      addEntryRead(h.entry, consumer, final_norm, true, false, /*after_ffn=*/true);
      return h;
    }
    const SumGroup sum = producer == LayerKind::kMoe ? SumGroup::kMoeOutput : SumGroup::kTp;
    if ((may_defer || terminal_defers) && !schema_.on(Decision::kFfnKeepsSumFromMixer)) {
      h.handoff = {RowKind::kAttention, sum, Completer::kCarried, true};
      if (terminal_defers) {
        addEntryRead(h.entry, consumer, final_norm, true, false, /*after_ffn=*/true);  // nobody completes it
        return h;
      }
      if (fusable() && sameGroup(static_cast<Axis>(owed), postExpertsAxis())) {
        h.entry.push_back({OpKind::kArAddNorm, Tensor::kHidden, owed});
      } else {
        h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, owed});
        h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
      }
      return h;
    }
    if (may_defer && schema_.on(Decision::kFfnKeepsSumFromMixer)) {
      // Mutant: the FFN completes its own sum, yet the mixer still completes it.
      h.handoff = {RowKind::kAttention, sum, Completer::kCarried, true};
      h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, owed});
      h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, owed});
      h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
      return h;
    }
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
    h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, owed});
    addEntryRead(h.entry, consumer, final_norm, true, false, /*after_ffn=*/true);
    return h;
  }

  // D > 1: the FFN output is on full rows and returns over DP (§6.6).
  StepList complete;
  dpCompleteSteps(complete, producer, owed);
  if ((may_defer || terminal_defers) && !schema_.on(Decision::kFfnKeepsSumFromMixer)) {
    // UnreducedOutput(reduce_to_dp_local = dp_step, or AR + dp_scatter): run by the next entry.
    h.handoff = {RowKind::kFull, SumGroup::kDpReturn, Completer::kCarried, true};
    if (!terminal_defers) h.entry = complete;
    if (terminal_defers) h.entry.push_back({OpKind::kDpScatter, Tensor::kHidden, kNoAxis, RowKind::kFull,
                                            RowKind::kAttention});
    addEntryRead(h.entry, consumer, final_norm, true, false, /*after_ffn=*/true);
    return h;
  }
  if (may_defer && schema_.on(Decision::kFfnKeepsSumFromMixer)) {
    h.handoff = {RowKind::kFull, SumGroup::kDpReturn, Completer::kCarried, true};
    h.exit = complete;
    // The next entry still runs the reduction it was told to expect.
    if (owed != kNoAxis) h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, owed});
    addEntryRead(h.entry, consumer, final_norm, true, false, /*after_ffn=*/true);
    return h;
  }
  h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
  h.exit = complete;
  addEntryRead(h.entry, consumer, final_norm, true, false, /*after_ffn=*/true);
  return h;
}

// LongCat-Flash's branch layer (models/longcat_flash.py, layer_boundary/
// adapters/branch.py): the boundaries around the MoE branch, by the role of
// the producer in the layer. Rows move by move_rows (gather over attention
// TP, then DP; cut over DP, then attention TP). Without an a2a backend the
// MoE and both MLPs run on shared rows (attention rows, or under DP
// attention the gathered full rows) and the layer hands on attention rows.
// With one (is_moe_input_scattered_across_dp_ranks) the MoE reads local rows
// and hands on local rows, except in the model's last layer (output_rows).
DeclaredBuilder::Hand DeclaredBuilder::branchBoundary(int from, LayerKind consumer, bool final_norm,
                                                      std::int8_t group) {
  const int role = from % spl_;
  const bool a2a = a2aMoe(LayerKind::kMoe);
  // The rows the MoE boundary prepares (incoming.need); never CP-sharded: refuse().
  const RowKind moe_rows = a2a ? localRows() : sharedFfnRows(LayerKind::kMoe);
  // The rows the MoE's layer hands on (outgoing.need): the last layer hands
  // attention rows to the final norm; under a2a the others hand on local rows.
  const int layer_end = from - role + spl_ - 1;  // mlp1 of this layer
  const bool last_layer = layer_end == static_cast<int>(stacks_[0].size()) - 1;
  const bool hands_on_local = a2a && !last_layer && a_ > 1;
  const std::int8_t attn_tp = static_cast<std::int8_t>(Axis::kAttnTp);
  Hand h;
  if (role == 0) {
    // attn0 into the MoE boundary: prepare (under a2a, the reduce-scatter onto
    // local rows), then the branch takes a copy of the normed input
    // (self.mlp(hidden_states.clone())).
    Hand h0 = twoStageIntoFfn(consumer);
    h0.entry.push_back({OpKind::kAdd, Tensor::kBranch, kNoAxis, moe_rows, moe_rows});
    return h0;
  }
  if (role == 1) {
    // branch_output: the MoE's complete output moved to the rows the layer
    // hands on. Without a2a LongcatFlashMoE completes it with its TP
    // all-reduce, and under DP the move cuts ATTN_DP (dp_scatter of this
    // shard's slot). With a2a the combine completed it and the all-reduce is
    // skipped (get_moe_a2a_backend().is_none() is false); only the last layer
    // gathers it over attention TP.
    h.handoff = {moe_rows, SumGroup::kNone, Completer::kNone, true};
    if (a2a) {
      if (last_layer && a_ > 1) {
        h.exit.push_back({OpKind::kAllGather, Tensor::kBranch, attn_tp, RowKind::kLocal, RowKind::kAttention});
      }
      // branch_input: mlp0 (a dense FFN on shared rows) reads the input the
      // MoE boundary read, gathered over attention TP, then DP; its residual
      // is gathered back to attention rows (the dense FFN's residual_to).
      if (a_ > 1) {
        h.entry.push_back({OpKind::kAllGather, Tensor::kHidden, attn_tp, RowKind::kLocal, RowKind::kAttention});
      }
      if (D_ > 1) {
        h.entry.push_back({OpKind::kDpGatherReplicate, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp),
                           RowKind::kAttention, RowKind::kFull});
      }
      if (a_ > 1) {
        h.entry.push_back({OpKind::kAllGather, Tensor::kResidual, attn_tp, RowKind::kLocal, RowKind::kAttention});
      }
      residual_local_ = false;
      return h;
    }
    // mlp0 reads the input the MoE boundary read (branch_input: the same rows).
    if (group != kNoAxis) h.exit.push_back({OpKind::kAllReduce, Tensor::kBranch, group, moe_rows, moe_rows});
    if (D_ > 1) h.exit.push_back({OpKind::kDpScatter, Tensor::kBranch, kNoAxis, RowKind::kFull, RowKind::kAttention});
    return h;
  }
  assert(role == 4 && "the other branch-layer boundaries are ordinary two-stage ones");
  // merge_branch: export completes mlp1's outstanding sum (an all-reduce;
  // under DP its return over DP as the exit policy picks it), both hidden
  // state and residual move to the rows the MoE's layer hands on (under a2a
  // a cut to this rank's attention-TP slice), then the MoE contribution is
  // added; the next layer's input (or the final norm) adds and norms.
  h.handoff = {hands_on_local ? RowKind::kLocal : RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
  const LayerKind producer = stacks_[0][from];
  if (D_ > 1) {
    dpCompleteSteps(h.exit, producer, group);
  } else if (group != kNoAxis) {
    h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, group});
  }
  if (hands_on_local) {
    h.exit.push_back({OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention, RowKind::kLocal});
    h.exit.push_back({OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
  }
  h.exit.push_back({OpKind::kAdd, Tensor::kBranch, kNoAxis, h.handoff.rows, h.handoff.rows});
  if (hands_on_local && !final_norm) {
    // The next attention input from local rows: add+norm on the slice, then
    // the normed rows gathered over attention TP; the residual stays local.
    h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
    h.entry.push_back({OpKind::kAllGather, Tensor::kHidden, attn_tp, RowKind::kLocal, RowKind::kAttention});
    h.residual_after = RowKind::kLocal;
    residual_local_ = true;
    return h;
  }
  h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
  return h;
}

// prepare_mlp of a two-stage layer: the attention output (an attn-TP partial
// when attn_tp > 1) into the FFN. Classic get_fn rows #1, #3, #5 and Gen D
// _select_entry_step rows 2, 6a, 6b, 6c, 6d; the residual follows.
DeclaredBuilder::Hand DeclaredBuilder::twoStageIntoFfn(LayerKind consumer) {
  Hand h;
  const std::int8_t attn_tp = a_ > 1 ? static_cast<std::int8_t>(Axis::kAttnTp) : kNoAxis;
  const bool owes = attn_tp != kNoAxis;
  h.handoff = {RowKind::kAttention, owes ? SumGroup::kAttnTp : SumGroup::kNone,
               owes ? Completer::kConsumerEntry : Completer::kNone, true};
  if (owes && naive_) {
    // Naive: o_proj reduces its own output.
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
    h.exit.push_back({OpKind::kAllReduce, Tensor::kHidden, attn_tp});
  }
  const bool partial_in = owes && !naive_;
  if (input_scattered_) {
    // _tp_sum_with_residual_read: the residual slice into this rank's rows of
    // the attention partial, one all-reduce over TP, which is the new
    // residual; then the norm.
    h.entry.push_back({OpKind::kAdd, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kAttention});
    h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp)});
    h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
    residual_local_ = false;
    return h;
  }
  if (ffnOnLocal(consumer)) {
    // _scatter_hidden_states_and_residual: RS(attn_tp) completes and slices;
    // the residual is sliced unless it already lies on local rows.
    if (a_ > 1) {
      h.entry.push_back({partial_in ? OpKind::kReduceScatter : OpKind::kSlice, Tensor::kHidden,
                         partial_in ? attn_tp : kNoAxis, RowKind::kAttention, RowKind::kLocal});
      if (!residual_local_ && !schema_.on(Decision::kResidualNotSliced)) {
        h.entry.push_back({OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
      }
      residual_local_ = true;
    }
    h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, localRows(), localRows()});
    h.residual_after = localRows();
    return h;
  }
  if (residual_local_) {
    // _gather_hidden_states_and_residual step 2: a dense FFN after a layer whose
    // FFN ran on local rows gathers the residual back over attention TP.
    h.entry.push_back({OpKind::kAllGather, Tensor::kResidual, attn_tp, RowKind::kLocal, RowKind::kAttention});
    residual_local_ = false;
  }
  if (D_ == 1) {
    if (!partial_in) {
      h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
    } else if (fusable()) {
      h.entry.push_back({OpKind::kArAddNorm, Tensor::kHidden, attn_tp});
    } else {
      h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, attn_tp});
      h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
    }
    if (gathersOverCp(consumer)) {
      // Entry row "gathered == {CP}" (_then_attn_cp_gather /
      // _then_moe_cp_gather): complete and norm on the own shard as above,
      // then gather the shards (equal, padded) in CP rank order; the
      // residual stays on the shard.
      h.entry.push_back({OpKind::kAllGather, Tensor::kHidden, cpGatherAxis(), RowKind::kAttention, RowKind::kFull});
    }
    return h;
  }
  const std::int8_t tp = static_cast<std::int8_t>(Axis::kTp);
  if (partial_in) {
    // The partial order (classic #3 with attn_dp > 1; Gen D row 6c: two-stage
    // models read after the DP gather): attn-TP rank 0 adds the residual,
    // dp_gather_partial completes the attn-TP sum while gathering, the
    // residual comes back by dp_scatter, the norm runs on full rows.
    const bool every_rank = schema_.on(Decision::kDpGatherSumResidualEveryRank);
    Step add{OpKind::kAdd, Tensor::kHidden};
    add.attn_tp_rank0_only = !every_rank;
    h.entry.push_back(add);
    h.entry.push_back({OpKind::kDpGatherPartial, Tensor::kHidden, tp, RowKind::kAttention, RowKind::kFull});
    h.entry.push_back({OpKind::kDpScatter, Tensor::kResidual, kNoAxis, RowKind::kFull, RowKind::kAttention});
    h.entry.push_back({OpKind::kNorm, Tensor::kHidden, kNoAxis, RowKind::kFull, RowKind::kFull});
    return h;
  }
  // attn_tp == 1 (or naive): the input is complete. Declared (row 6d):
  // add+norm locally, dp_gather_replicate. Legacy (classic, attn_tp == 1):
  // the norm runs before the gather, which is still dp_gather_partial.
  h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden});
  h.entry.push_back({legacy_ ? OpKind::kDpGatherPartial : OpKind::kDpGatherReplicate, Tensor::kHidden, tp,
                     RowKind::kAttention, RowKind::kFull});
  return h;
}

// An FFN on local rows (a2a MoE: dispatch/combine inside) hands on complete
// local rows. The next attention input adds and norms on the slice and
// gathers the normed rows (classic §5.2 _scattered_to_tp_attn_full; Gen D
// row 5); the residual stays on local rows. The last layer gathers first
// (_gather: hs += residual, AG(attn_tp)) and the final norm has no residual.
// A pipeline cut sends both on local rows (the stage end is not the model's
// last layer).
DeclaredBuilder::Hand DeclaredBuilder::twoStageOutOfLocalFfn(LayerKind consumer, bool final_norm, bool cut,
                                                              bool to_attention) {
  Hand h;
  const std::int8_t attn_tp = static_cast<std::int8_t>(Axis::kAttnTp);
  h.handoff = {localRows(), SumGroup::kNone, Completer::kNone, true};
  if (final_norm) {
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, false};
    h.exit.push_back({OpKind::kAdd, Tensor::kHidden, kNoAxis, localRows(), localRows()});
    if (a_ > 1) h.exit.push_back({OpKind::kAllGather, Tensor::kHidden, attn_tp, RowKind::kLocal, RowKind::kAttention});
    residual_local_ = false;
    if (to_attention) {
      addEntryRead(h.entry, consumer, false, /*residual_present=*/false, false);
    } else {
      h.entry.push_back({OpKind::kNorm, Tensor::kHidden});
    }
    return h;
  }
  if (cut) {
    // The receiving stage's attention input reads the local rows as above.
  }
  h.entry.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, localRows(), localRows()});
  if (a_ > 1) h.entry.push_back({OpKind::kAllGather, Tensor::kHidden, attn_tp, RowKind::kLocal, RowKind::kAttention});
  h.residual_after = localRows();
  return h;
}

// Legacy aux capture (serving-boundaries §9.2 (3), TestNemotronAuxCapture):
// before the entry, a copy of the hidden state is all-reduced over the group
// its sum is owed over and the residual added to it; after a mixer with
// attn_tp == 1 the attention all-reduce still runs, over a group of one
// rank (tensor_model_parallel_all_reduce returns at once there; the call
// stays in the call sequence). The declared capture reads the residual after
// the entry instead, which completes the sum once.
StepList DeclaredBuilder::legacyCapture(int stack, int from, const Hand& h) const {
  StepList steps;
  const RowKind rows = h.handoff.rows == RowKind::kFull ? RowKind::kAttention : h.handoff.rows;
  steps.push_back({OpKind::kSnapshot, Tensor::kHidden, kNoAxis, rows, rows});
  std::int8_t group = kNoAxis;
  switch (h.handoff.owes) {
    case SumGroup::kAttnTp: group = static_cast<std::int8_t>(Axis::kAttnTp); break;
    case SumGroup::kTp: group = static_cast<std::int8_t>(Axis::kTp); break;
    case SumGroup::kMoeOutput: group = static_cast<std::int8_t>(postExpertsAxis()); break;
    default:
      if (from >= 0 && isMixer(stacks_[stack][from]) && a_ == 1) group = static_cast<std::int8_t>(Axis::kAttnTp);
      break;
  }
  if (group != kNoAxis) steps.push_back({OpKind::kAllReduce, Tensor::kSnapshot, group, rows, rows});
  if (h.handoff.residual) steps.push_back({OpKind::kAdd, Tensor::kSnapshot, kNoAxis, rows, rows});
  return steps;
}

void DeclaredBuilder::inputScatteredEntry(StepList& steps, bool owes_tp, bool residual_on_attention_rows) {
  const std::int8_t tp = static_cast<std::int8_t>(Axis::kTp);
  if (owes_tp) {
    steps.push_back({OpKind::kReduceScatter, Tensor::kHidden, tp, RowKind::kAttention, RowKind::kLocal});
  } else {
    steps.push_back({OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention, RowKind::kLocal});
  }
  if (residual_on_attention_rows) {
    steps.push_back({OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
  }
  steps.push_back({OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
  // The attention's QKV hook gathers the latents over TP (tp_gather).
  steps.push_back({OpKind::kAllGather, Tensor::kHidden, tp, RowKind::kLocal, RowKind::kAttention});
  residual_local_ = true;
}

std::int64_t DeclaredBuilder::bytesOf(const Step& s, int rank) const {
  const std::int64_t row_bytes = activationRowBytes(c_.model.shape);
  const int in = rows_.count(s.in, rank);
  const int out = rows_.count(s.out, rank);
  if (ln_sp_ && (s.kind == OpKind::kAllGather || s.kind == OpKind::kReduceScatter) &&
      (s.in == RowKind::kLocal || s.out == RowKind::kLocal)) {
    // The gathered (or padded, reduce-scattered) buffer: tp equal padded shards.
    return static_cast<std::int64_t>(T_) * rows_.count(RowKind::kLocal, rank) * row_bytes;
  }
  switch (s.kind) {
    case OpKind::kAllGather:
    case OpKind::kAllGatherv:
    case OpKind::kDpGatherPartial:
    case OpKind::kDpGatherReplicate:
      return out * row_bytes;  // the gathered buffer
    case OpKind::kAllToAll:
      return rows_.count(RowKind::kDispatched, rank) * row_bytes;  // the group's exchanged rows
    default:
      return std::max(in, out) * row_bytes;
  }
}

void DeclaredBuilder::emit(int rank, int stack, int stage, Phase phase, const Step& s) {
  if (s.skip_if_idle_shard && rows_.shardTokens(rank) == 0) return;
  if (s.attn_tp_rank0_only && rank % a_ != 0) return;
  if (s.cp_sharded_only && !cpShardedRank(rank)) return;
  // Built in place: a copy of a just-written Op would read it back in wide
  // loads over its narrow stores (a store-forwarding stall per op).
  Op& op = plan_.ranks[rank].emplace_back();
  op.stack = static_cast<std::uint8_t>(stack);
  op.layer = static_cast<std::int16_t>(stage < 0 ? stage : stage / spl_);
  op.stage = static_cast<std::int16_t>(stage);
  op.phase = phase;
  op.kind = s.kind;
  op.tensor = s.tensor;
  op.axis = s.axis;
  op.rows_in = {s.in, rows_.count(s.in, rank)};
  op.rows_out = {s.out, rows_.count(s.out, rank)};
  // Uneven attention-TP splits use the variable-size collectives; LayerNorm
  // SP's padded shards are equal, its collectives the plain ones.
  const bool local_side = s.in == RowKind::kLocal || s.out == RowKind::kLocal;
  if ((s.axis == static_cast<std::int8_t>(Axis::kAttnTp) || local_side) && rows_.shardTokens(rank) % a_ != 0 && !ln_sp_) {
    if (op.kind == OpKind::kReduceScatter) op.kind = OpKind::kReduceScatterv;
    if (op.kind == OpKind::kAllGather) op.kind = OpKind::kAllGatherv;
  }
  op.bytes = bytesOf(s, rank);
}

void DeclaredBuilder::emitCompute(int rank, int stack, int stage) {
  const LayerKind k = stacks_[stack][stage];
  const std::int8_t axis = weightAxis(k);
  if (ln_sp_ && axis != kNoAxis) {
    // Column-parallel in: all_gather_token_rows over the TP group (the SP
    // group), narrowed to the M tokens; row-parallel out:
    // reduce_scatter_token_rows (the M rows padded to tp equal chunks), which
    // completes the stage's sum on the padded shards.
    const std::int8_t tp = static_cast<std::int8_t>(Axis::kTp);
    emit(rank, stack, stage, Phase::kCompute, {OpKind::kAllGather, Tensor::kHidden, tp, RowKind::kLocal, RowKind::kAttention});
    emit(rank, stack, stage, Phase::kCompute, {OpKind::kCompute, Tensor::kHidden, axis, RowKind::kAttention, RowKind::kAttention});
    emit(rank, stack, stage, Phase::kCompute, {OpKind::kReduceScatter, Tensor::kHidden, tp, RowKind::kAttention, RowKind::kLocal});
    return;
  }
  if (ln_sp_) {
    emit(rank, stack, stage, Phase::kCompute, {OpKind::kCompute, Tensor::kHidden, axis, RowKind::kLocal, RowKind::kLocal});
    return;
  }
  // LongCat-Flash's MoE computes on the branch's copy of its input.
  const Tensor t = branch_ && stack == 0 && stage % spl_ == 1 ? Tensor::kBranch : Tensor::kHidden;
  if (a2aMoe(k)) {
    const RowKind local = localRows();
    if (axis != kNoAxis) {
      emit(rank, stack, stage, Phase::kCompute, {OpKind::kAllToAll, t, axis, local, RowKind::kDispatched});
      emit(rank, stack, stage, Phase::kCompute,
           {OpKind::kCompute, t, axis, RowKind::kDispatched, RowKind::kDispatched});
      emit(rank, stack, stage, Phase::kCompute, {OpKind::kAllToAll, t, axis, RowKind::kDispatched, local});
    } else {
      emit(rank, stack, stage, Phase::kCompute, {OpKind::kCompute, t, axis, local, local});
    }
    return;
  }
  const RowKind rows = denseOnLocal(k) ? localRows() : isFfn(k) ? sharedFfnRows(k) : RowKind::kAttention;
  emit(rank, stack, stage, Phase::kCompute, {OpKind::kCompute, t, axis, rows, rows});
}

Status DeclaredBuilder::decide() {
  stacks_.push_back(c_.model.pattern.layers);
  if (!c_.model.pattern.mtp.empty()) stacks_.push_back(c_.model.pattern.mtp);
  if (Status st = refuse(); !st) return st;

  plan_.policy = std::string(policyName(legacy_ ? PolicyKind::kLegacy : naive_ ? PolicyKind::kNaive : PolicyKind::kDeclared));
  plan_.source = c_;
  plan_.padding = padding_;
  plan_.cp_layout = cp_layout_;
  plan_.local_split = ln_sp_ ? LocalSplit::kPaddedEqual : LocalSplit::kTensorSplit;
  plan_.ranks.assign(world(), {});
  const size_t stage_count = c_.model.pattern.layers.size() + c_.model.pattern.mtp.size();
  plan_.boundaries.reserve(stage_count + 2);
  plan_.stages.reserve(stage_count);

  const std::vector<int> pp_of = ppOfStages();
  const int last_pp = cfg_.pp - 1;

  for (int stack = 0; stack < static_cast<int>(stacks_.size()); ++stack) {
    const auto& kinds = stacks_[stack];
    const int n = static_cast<int>(kinds.size());
    for (int s = 0; s < n; ++s) {
      StageInfo info;
      info.stack = static_cast<std::uint8_t>(stack);
      info.layer = s / spl_;
      info.kind = kinds[s];
      info.weight_axis = weightAxis(kinds[s]);
      info.shards = info.weight_axis == kNoAxis ? 1 : axisSize(static_cast<Axis>(info.weight_axis));
      info.pp_rank = stack == 0 ? pp_of[s] : last_pp;
      // The MTP stack's layer (stack 1) is an ordinary two-stage layer.
      const bool branch_layer = branch_ && stack == 0;
      if (branch_layer && s % spl_ == 1) info.joins_at = std::min(s + spl_ - 1, n);  // merged after mlp1's sum
      if (branch_layer && s % spl_ == 2) info.reads_norm_of = s - 1;                 // mlp0 reads the MoE's input
      info.terminal = s == n - 1;
      plan_.stages.push_back(info);
    }
  }

  // Decide every boundary once (rank-independent), then emit.
  decided_.reserve(plan_.stages.size() + stacks_.size());
  for (int stack = 0; stack < static_cast<int>(stacks_.size()); ++stack) {
    const int n = static_cast<int>(stacks_[stack].size());
    auto ppOf = [&](int s) { return stack == 0 ? pp_of[s] : last_pp; };
    for (int from = -1; from < n; ++from) {
      const int to = from + 1;
      const bool cut = from >= 0 && to < n && ppOf(from) != ppOf(to);
      // The producer before the TBO split completes its sum (the split moves
      // rows only, B3): terminal, like a pipeline cut.
      const bool split_edge = stack == 0 && from >= 0 && to == tboFirstStage();
      Hand h = boundary(stack, from, to, cut || split_edge);
      if (to == n && cp_layout_ != CpLayout::kReplicated) {
        // cp_gather_after_forward: the final output stays on the CP shard;
        // the model boundary all-gathers the shards over attn_cp and puts the
        // tokens back in sequence order (a local reorder, expressed as a
        // slice onto sequence rows).
        // Under attention DP full rows are the DP buffer: the shards land on
        // cp_gathered rows, and only DP shards the strategy sharded gather.
        const RowKind gathered = D_ > 1 ? RowKind::kCpGathered : RowKind::kFull;
        Step gather{OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kAttnCp), RowKind::kAttention,
                    gathered};
        Step reorder{OpKind::kSlice, Tensor::kHidden, kNoAxis, gathered, RowKind::kSequence};
        gather.cp_sharded_only = reorder.cp_sharded_only = true;
        h.entry.push_back(gather);
        h.entry.push_back(reorder);
      }
      Boundary b;
      b.stack = static_cast<std::uint8_t>(stack);
      b.from = from;
      b.to = to;
      b.pipeline_cut = cut;
      // The exit side is what the producer's exit does; the entry side is what
      // the consumer's entry was built to expect (they differ only under mutants).
      b.entry = h.handoff;
      b.exit = h.handoff;
      const bool exit_completes = std::any_of(h.exit.begin(), h.exit.end(), [](const Step& s) {
        return reduces(s.kind) || s.kind == OpKind::kDpScatter;
      });
      if (exit_completes && h.handoff.completer == Completer::kCarried) {
        b.exit.owes = SumGroup::kNone;
        b.exit.completer = Completer::kNone;
        b.exit.rows = RowKind::kAttention;
      }
      b.exit_steps.reserve(h.exit.size());
      for (const Step& s : h.exit) b.exit_steps.push_back(s.kind);
      b.entry_steps.reserve(h.entry.size());
      for (const Step& s : h.entry) b.entry_steps.push_back(s.kind);
      plan_.boundaries.push_back(std::move(b));
      const int consumer_pp = to < n ? ppOf(to) : last_pp;
      const int producer_pp = from >= 0 ? ppOf(from) : consumer_pp;
      decided_.push_back({stack, from, to, cut, producer_pp, consumer_pp, h});
    }
  }
  for (const Decided& d : decided_) {
    for (const Step& s : d.hand.entry) rank0_steps_ = rank0_steps_ || s.attn_tp_rank0_only;
  }
  return Status::ok();
}

void DeclaredBuilder::emitExit(int r, const Decided& d) {
  const Hand& h = d.hand;
  for (const Step& s : h.exit) emit(r, d.stack, d.from, Phase::kExit, s);
  if (d.cut) {
    const RowKind rows = h.handoff.rows == RowKind::kFull ? RowKind::kAttention : h.handoff.rows;
    const std::int8_t pp = static_cast<std::int8_t>(Axis::kPp);
    emit(r, d.stack, d.from, Phase::kExit, {OpKind::kSend, Tensor::kHidden, pp, rows, rows});
    if (h.handoff.residual) emit(r, d.stack, d.from, Phase::kExit, {OpKind::kSend, Tensor::kResidual, pp, rows, rows});
  }
}

void DeclaredBuilder::emitEntry(int r, const Decided& d) {
  const Hand& h = d.hand;
  const int stack = d.stack, from = d.from, to = d.to;
  const int n = static_cast<int>(stacks_[stack].size());
  if (d.cut) {
    const RowKind rows = h.handoff.rows == RowKind::kFull ? RowKind::kAttention : h.handoff.rows;
    const std::int8_t pp = static_cast<std::int8_t>(Axis::kPp);
    emit(r, stack, to, Phase::kEntry, {OpKind::kRecv, Tensor::kHidden, pp, rows, rows});
    if (h.handoff.residual) emit(r, stack, to, Phase::kEntry, {OpKind::kRecv, Tensor::kResidual, pp, rows, rows});
  }
  if (from < 0 && stack == 1) {
    // MTP input: eh_proj over [enorm(embedding), hnorm(final hidden)] is the
    // step's input; the draft layers start without a residual.
    // Under prefill CP the draft model's forward shards its inputs again
    // (cp_shard_model_inputs shards spec_info.hidden_states): this rank's
    // CP shard of the gathered final hidden state.
    if (cp_layout_ != CpLayout::kReplicated && cpShardedRank(r)) {
      emit(r, stack, -1, Phase::kCompute, {OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kSequence,
                                           RowKind::kAttention});
    }
    emit(r, stack, -1, Phase::kCompute, {OpKind::kCompute, Tensor::kHidden, kNoAxis});
    // The zero residual lies on the rows the first MTP layer reads (local
    // rows for an all-to-all MoE), like the hidden state it is added to.
    // LayerNorm SP slices onto local rows even when attn_tp == 1.
    const RowKind res_rows = ln_sp_ ? RowKind::kLocal
                             : a2aMoe(stacks_[1][0]) || input_scattered_ ? localRows()
                                                                         : RowKind::kAttention;
    emit(r, stack, -1, Phase::kCompute, {OpKind::kZeroFill, Tensor::kResidual, kNoAxis, res_rows, res_rows});
  }
  const bool capture = stack == 0 && to < n &&
      std::find(c_.flags.capture.begin(), c_.flags.capture.end(), to) != c_.flags.capture.end();
  if (capture && schema_.on(Decision::kSnapshotNotCompleted)) {
    // Mutant: the capture reads the residual before the entry completes the carried sum.
    emit(r, stack, to, Phase::kEntry, {OpKind::kSnapshot, Tensor::kSnapshot});
  }
  const bool legacy_capture = capture && legacy_ && !two_stage_ && !schema_.on(Decision::kSnapshotNotCompleted);
  if (legacy_capture) {
    for (const Step& s : legacyCapture(stack, from, h)) emit(r, stack, to, Phase::kEntry, s);
  }
  for (const Step& s : h.entry) emit(r, stack, to, Phase::kEntry, s);
  // Aux hidden-state capture before stage `to`: the entry completed any carried sum.
  if (capture && !legacy_capture && !schema_.on(Decision::kSnapshotNotCompleted)) {
    const RowKind res_rows = two_stage_ ? h.residual_after
                             : a2aMoe(stacks_[0][to]) ? localRows() : RowKind::kAttention;
    emit(r, stack, to, Phase::kEntry, {OpKind::kSnapshot, Tensor::kSnapshot, kNoAxis, res_rows, res_rows});
    if (res_rows == RowKind::kLocal) {
      emit(r, stack, to, Phase::kEntry, {OpKind::kAllGather, Tensor::kSnapshot,
                                         static_cast<std::int8_t>(Axis::kAttnTp), RowKind::kLocal,
                                         RowKind::kAttention});
    }
  }
  if (to < n) emitCompute(r, stack, to);
}

void DeclaredBuilder::emitRank(int r) {
  // About four ops per stage (entry, compute, exit; more under DP).
  plan_.ranks[r].reserve(4 * plan_.stages.size() + 8);
  const int pr = ppRank(r);
  const int first = tboFirstStage();
  for (size_t i = 0; i < decided_.size(); ++i) {
    const Decided& d = decided_[i];
    if (first >= 0 && d.stack == 0 && d.to == first) {
      // The TBO layers run to the end of stack 0 on its last pipeline stage
      // (decide()): its final boundary. Other stages have nothing there.
      size_t last = i;
      while (decided_[last].stack != 0 || decided_[last].to != static_cast<int>(stacks_[0].size())) ++last;
      if (pr == d.consumer_pp) emitTbo(r, d, decided_[last]);
      i = last;
      continue;
    }
    if (d.from >= 0 && pr == d.producer_pp) emitExit(r, d);
    if (pr == d.consumer_pp) emitEntry(r, d);
  }
}

void DeclaredBuilder::makeHalves() {
  tbo_split_ = tboSplit(c_.batch);
  halves_ = std::make_unique<Halves>();
  for (int k = 0; k < 2; ++k) {
    Case& half_case = halves_->cases[k];
    half_case = c_;
    half_case.batch = tboHalfBatch(c_.batch, tbo_split_, k == 0 ? Half::kA : Half::kB);
    halves_->builders[k] = std::make_unique<DeclaredBuilder>(half_case, schema_, legacy_ ? PolicyKind::kLegacy
                                                                         : naive_ ? PolicyKind::kNaive
                                                                                  : PolicyKind::kDeclared);
    const Status st = half(k).decide();
    assert(st.isOk() && "a half is refused exactly when its batch is (refuse() does not read the batch's size)");
    (void)st;
  }
}

void DeclaredBuilder::emitHalfOps(int r, std::vector<Op>* ops, std::vector<int>* chunks) {
  const int first = tboFirstStage();
  const int n = static_cast<int>(stacks_[0].size());
  const TboSchedule schedule = tboSchedule(c_.flags.mode);
  for (const Decided& d : decided_) {
    if (d.stack != 0 || d.to < first) continue;
    if (d.to > first) emitExit(r, d);
    if (d.to < n) emitEntry(r, d);
  }
  ops->swap(plan_.ranks[r]);
  chunks->resize(ops->size());
  for (size_t i = 0; i < ops->size(); ++i) (*chunks)[i] = tboChunk((*ops)[i], first / spl_, schedule);
}

void DeclaredBuilder::emitTbo(int r, const Decided& edge, const Decided& last) {
  std::vector<Op>& out = plan_.ranks[r];
  if (edge.from >= 0) emitExit(r, edge);
  const std::int64_t row_bytes = activationRowBytes(c_.model.shape);
  const int first = tboFirstStage();
  const int n = static_cast<int>(stacks_[0].size());
  auto move = [&](OpKind kind, Tensor tensor, int k, int stage, Phase phase, RowKind rows) {
    Op op;
    op.layer = static_cast<std::int16_t>(stage / spl_);
    op.stage = static_cast<std::int16_t>(stage);
    op.phase = phase;
    op.kind = kind;
    op.tensor = tensor;
    const Rows whole{rows, rows_.count(rows, r)};
    const Rows part{rows, half(k).rows_.count(rows, r)};
    op.rows_in = kind == OpKind::kSlice ? whole : part;
    op.rows_out = kind == OpKind::kSlice ? part : whole;
    op.bytes = part.count * row_bytes;
    op.half = k == 0 ? Half::kA : Half::kB;
    op.tbo_move = true;
    out.push_back(op);
  };
  // The split (B3, tbo_split_moves): attention rows are cut as they are;
  // local rows are completed and gathered for the whole batch first
  // (update_attn_tp_gather_output: hs += residual, AG(attn_tp), residual
  // := None), then each half takes its attention-TP slice.
  const bool local = edge.hand.handoff.rows == RowKind::kLocal && a_ > 1;
  bool residual = edge.hand.handoff.residual;
  if (local) {
    emit(r, 0, first, Phase::kEntry, {OpKind::kAdd, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
    emit(r, 0, first, Phase::kEntry, {OpKind::kAllGather, Tensor::kHidden, static_cast<std::int8_t>(Axis::kAttnTp),
                                      RowKind::kLocal, RowKind::kAttention});
    residual = false;
  }
  for (Tensor t : {Tensor::kHidden, Tensor::kResidual}) {
    if (t == Tensor::kResidual && !residual) continue;
    for (int k = 0; k < 2; ++k) move(OpKind::kSlice, t, k, first, Phase::kEntry, RowKind::kAttention);
  }
  std::vector<Op> ops[2];
  std::vector<int> chunks[2];
  for (int k = 0; k < 2; ++k) {
    if (local) {
      half(k).emit(r, 0, first, Phase::kEntry, {OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention,
                                                  RowKind::kLocal});
    }
    half(k).emitHalfOps(r, &ops[k], &chunks[k]);
    for (Op& op : ops[k]) op.half = k == 0 ? Half::kA : Half::kB;
  }
  const TboSchedule schedule = tboSchedule(c_.flags.mode);
  const int layers = (n - first) / spl_;
  interleaveHalves(ops[0], chunks[0], ops[1], chunks[1], layers * schedule.yields_per_layer + 1, schedule.delta, &out);
  // The merge: each half's real rows back into the whole batch; no collective.
  assert(last.hand.handoff.rows == RowKind::kAttention && "the last TBO layer hands on attention rows");
  for (Tensor t : {Tensor::kHidden, Tensor::kResidual}) {
    if (t == Tensor::kResidual && !last.hand.handoff.residual) continue;
    for (int k = 0; k < 2; ++k) move(OpKind::kAdd, t, k, n - 1, Phase::kExit, RowKind::kAttention);
  }
  emitEntry(r, last);  // the final norm, on the merged tensor
}

Expected<Plan> DeclaredBuilder::build() {
  if (Status st = decide(); !st) return st;
  if (tbo_first_layer_ >= 0) makeHalves();

  // Ranks whose programs are identical (same pipeline stage and the same row
  // counts in every layout, of the batch and of each half) share one
  // emission; the others copy it.
  constexpr int kSignature = 1 + kHalfLanes * kRowKindCount;
  std::vector<int> representative(world(), -1);
  std::vector<std::pair<std::array<int, kSignature>, int>> classes;  // few: linear search
  for (int r = 0; r < world(); ++r) {
    std::array<int, kSignature> signature{};
    // Ranks that skip a rank-0-only step have another program.
    const bool rank0 = rank0_steps_ || (halves_ && (half(0).rank0_steps_ || half(1).rank0_steps_));
    signature[0] = ppRank(r) * 2 + (rank0 && r % a_ != 0 ? 1 : 0);
    for (int k = 0; k < kRowKindCount; ++k) {
      signature[k + 1] = rows_.count(static_cast<RowKind>(k), r);
      for (int h = 0; h < 2 && halves_; ++h) {
        signature[(h + 1) * kRowKindCount + k + 1] = half(h).rows_.count(static_cast<RowKind>(k), r);
      }
    }
    for (const auto& [sig, rep] : classes) {
      if (sig == signature) {
        representative[r] = rep;
        break;
      }
    }
    if (representative[r] < 0) {
      representative[r] = r;
      classes.emplace_back(signature, r);
    }
  }

  for (int r = 0; r < world(); ++r) {
    if (representative[r] != r) {
      plan_.ranks[r] = plan_.ranks[representative[r]];
      continue;
    }
    emitRank(r);
  }
  plan_.tbo_split = tbo_split_;
  return std::move(plan_);
}

}  // namespace

Expected<Plan> buildPlan(const Case& c, PolicyKind policy, const Schema& schema) {
  if (Status st = validateCase(c); !st) return st;
  switch (policy) {
    case PolicyKind::kDeclared:
    case PolicyKind::kLegacy:
    case PolicyKind::kNaive:
      return DeclaredBuilder(c, schema, policy).build();
  }
  return Status::internal("unknown policy");
}

}  // namespace seam
