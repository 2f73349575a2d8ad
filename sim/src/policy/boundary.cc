// One boundary of either layer family, built from the declarations of its
// two sides only: the dispatch by producer and consumer, the embedding's
// entry, the entry read once nothing is owed any more, and the exit of an
// FFN on shared rows (dense, or MoE without an all-to-all backend), which
// both families have.
#include "plan_builder.h"

namespace seam::policy_detail {

PlanBuilder::Sides PlanBuilder::sidesOf(int stack, int from, int to, bool cut) const {
  const auto& kinds = stacks_[stack];
  const int n = static_cast<int>(kinds.size());
  Sides s;
  s.stack = stack;
  s.from = from;
  s.to = to;
  s.cut = cut;
  s.final_norm = to == n;
  s.producer = from >= 0 ? kinds[from] : LayerKind::kMamba;
  s.consumer = s.final_norm ? LayerKind::kMamba : kinds[to];
  s.consumer_ffn = !s.final_norm && isFfn(s.consumer);
  // The MTP step's last layer is marked last (is_last_layer) unless mutated.
  const bool mtp_unmarked = stack == 1 && schema_.on(Decision::kMtpNotMarkedLast);
  s.terminal = (s.final_norm && !mtp_unmarked) || cut;
  s.terminal_defers = s.final_norm && (schema_.on(Decision::kTerminalDefers) || mtp_unmarked);
  s.group = from >= 0 ? weightAxis(s.producer) : kNoAxis;
  if (legacyCutKeepsFusion(s)) {
    // The producer defers as if no cut were there; nobody completes the sum.
    s.terminal = false;
    s.terminal_defers = true;
  }
  return s;
}

// from == -1: the embedding (or the MTP input projection); to == stack size:
// the final norm. The first match decides: the variants that change every
// boundary (LayerNorm SP), then the layers' own shapes, then the producer.
PlanBuilder::Hand PlanBuilder::boundary(int stack, int from, int to, bool cut) {
  const Sides s = sidesOf(stack, from, to, cut);
  if (from < 0) return embeddingEntry(s);
  if (ln_sp_) return layerNormSpBoundary(s);
  if (branch_ && stack == 0) {
    // mlp0 -> attn1 and attn1 -> mlp1 are ordinary two-stage boundaries.
    const int role = from % spl_;
    if (role == 0 || role == 1 || role == 4)
      return branchBoundary(from, s.consumer, s.final_norm, s.group);
  }
  if (two_stage_ && isMixer(s.producer)) return twoStageIntoFfn(s.consumer);
  if (two_stage_ && ffnOnLocal(s.producer)) {
    // B3, tbo_exit_rows: a fully-DP dense FFN before a sparse layer hands on
    // attention rows once TBO is enabled (for every batch).
    const int n = static_cast<int>(stacks_[stack].size());
    const bool tbo_exit = tbo_flag_ && denseOnLocal(s.producer) && from + 2 < n &&
                          stacks_[stack][from + 2] == LayerKind::kMoe;
    return twoStageOutOfLocalFfn(s.consumer, s.final_norm || tbo_exit, tbo_exit);
  }
  if (input_scattered_ && !s.final_norm) return inputScatteredFfnExit(s);
  // What is left of a two-stage layer is an FFN on shared rows; a
  // single-stage producer may be any kind.
  if (isMixer(s.producer)) {
    Hand h = mixerExit(s);
    mtpMoeReducesAttentionOutput(s, h);
    return h;
  }
  if (a2aMoe(s.producer)) return localMoeExit(s);
  return sharedFfnExit(s);
}

// models/nemotron_h_mtp.py (NemotronHMTPMoEDecoderLayer.forward) @008b79d2:
// under DP attention, after an attention layer and with a residual, the MTP
// MoE layer all-reduces its input over attention TP itself, then runs
// NemotronHMoEDecoderLayer.forward, whose prepare_mlp (models/nemotron_h.py
// NemotronHMLPLikeDecoderLayer.forward @02c60328) completes the same
// attention-TP sum again. A one-rank group issues no call. Both policies
// model that model file; the naive baseline does not.
void PlanBuilder::mtpMoeReducesAttentionOutput(const Sides& s, Hand& h) const {
  if (s.stack != 1 || two_stage_ || naive_ || D_ == 1 || a_ == 1) return;
  if (s.producer != LayerKind::kAttention || s.consumer != LayerKind::kMoe) return;
  StepList entry;
  Step own{OpKind::kAllReduce, Tensor::kHidden, static_cast<std::int8_t>(Axis::kAttnTp)};
  own.site = EngineSite::kMtpMoeAttnTpAllReduce;
  entry.push_back(own);
  for (const Step& step : h.entry) entry.push_back(step);
  h.entry = entry;
}

// Complete on attention rows, reduced by the embedding itself: residual := hidden.
PlanBuilder::Hand PlanBuilder::embeddingEntry(const Sides& s) {
  Hand h;
  h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, false};
  residual_local_ = false;
  if (ln_sp_ && !s.final_norm) {
    h.entry.push_back(
        {OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention, RowKind::kLocal});
    h.entry.push_back(
        {OpKind::kAddNorm, Tensor::kHidden, kNoAxis, RowKind::kLocal, RowKind::kLocal});
    residual_local_ = true;
    h.residual_after = RowKind::kLocal;
    return h;
  }
  if (input_scattered_ && !s.final_norm) {
    // factories.py (_connect): with no producer the INPUT_SCATTERED variant
    // declares that the stack input owes SumGroup.TP, and VocabParallelEmbedding
    // skips its all-reduce inside maybe_input_scattered, so layer 0's entry
    // completes the embedding's vocab-shard partial with tp_reduce_scatter.
    // The MTP step's input is eh_proj's complete output, its zero residual
    // laid out on the slice already.
    const bool owes_tp = s.stack == 0;
    if (owes_tp) h.handoff = {RowKind::kAttention, SumGroup::kTp, Completer::kConsumerEntry, false};
    inputScatteredEntry(h.entry, owes_tp, false);
    h.residual_after = RowKind::kLocal;
    return h;
  }
  addEntryRead(h.entry, s.consumer, s.final_norm, /*residual_present=*/false,
               /*stack_start=*/true);
  return h;
}

void PlanBuilder::addEntryRead(StepList& steps, LayerKind consumer, bool final_norm,
                               bool residual_present, bool stack_start, bool after_ffn) {
  const bool ffn = !final_norm && isFfn(consumer);
  if (ffn && a2aMoe(consumer)) {
    if (legacy_ && !two_stage_ && (stack_start || after_ffn))
      return legacyA2aCompleteInputRead(steps);
    // _attn_tp_slice_update_read: complete input, slice hidden and residual.
    if (a_ > 1) {
      steps.push_back(
          {OpKind::kSlice, Tensor::kHidden, kNoAxis, RowKind::kAttention, RowKind::kLocal});
      if (residual_present && !schema_.on(Decision::kResidualNotSliced)) {
        steps.push_back(
            {OpKind::kSlice, Tensor::kResidual, kNoAxis, RowKind::kAttention, RowKind::kLocal});
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
      legacyCompleteInputRead(steps);
    } else {
      steps.push_back({OpKind::kAddNorm, Tensor::kHidden});
    }
  }
  if (ffn && D_ > 1) {
    // Replicate order: norm locally, then gather the normed rows over DP.
    steps.push_back({OpKind::kDpGatherReplicate, Tensor::kHidden,
                     static_cast<std::int8_t>(Axis::kTp), RowKind::kAttention, RowKind::kFull});
  }
}

// The FFN's return over DP when nothing picks a reduce-scatter: AR over the
// owed group, then dp_scatter (a local copy of this shard's slot).
void PlanBuilder::dpReturnSteps(StepList& steps, std::int8_t group) const {
  if (group != kNoAxis)
    steps.push_back({OpKind::kAllReduce, Tensor::kHidden, group, RowKind::kFull, RowKind::kFull});
  steps.push_back(
      {OpKind::kDpScatter, Tensor::kHidden, kNoAxis, RowKind::kFull, RowKind::kAttention});
}

// The steps that complete an FFN's sum on full rows and return this shard's
// rows over DP (ExitPolicy's dp_step, §6.6): reduce_scatterv, the DP
// reduce-scatter, or AR over the owed group + dp_scatter.
void PlanBuilder::dpCompleteSteps(StepList& complete, LayerKind producer, std::int8_t owed) const {
  // A reduce-scatter over tp completes the sum only when the owed group is the
  // whole TP group (otherwise it would also add the moe_dp replicas).
  const bool owes_tp = owed != kNoAxis && sameGroup(static_cast<Axis>(owed), Axis::kTp);
  const OpKind dp_step = !legacy_     ? strategyDpStep(producer, owes_tp)
                         : two_stage_ ? classicDpStep(owes_tp)
                                      : parentDpStep(owes_tp);
  if (dp_step != OpKind::kDpScatter) {
    Step step{dp_step, Tensor::kHidden, static_cast<std::int8_t>(Axis::kTp), RowKind::kFull,
              RowKind::kAttention};
    if (dp_step == OpKind::kReduceScatterv) {
      // _reduce_and_redistribute_output_varlen (the classic communicator's
      // _scatter_hidden_states calls it too) passes get_dp_global_num_tokens():
      // one size per attention-DP rank, to a call on the whole TP group.
      step.sizes = SplitSizes::kPerDpShard;
      step.site = EngineSite::kDpReduceScatterv;
    }
    complete.push_back(step);
  } else {
    dpReturnSteps(complete, owed);
  }
}

PlanBuilder::Hand PlanBuilder::sharedFfnExit(const Sides& s) {
  std::int8_t owed = s.group;
  if (owed != kNoAxis && s.producer == LayerKind::kDenseMlp &&
      schema_.on(Decision::kFfnReducesOverAttnTp)) {
    owed = a_ > 1 ? static_cast<std::int8_t>(Axis::kAttnTp) : kNoAxis;  // use_dp_attention_reduce
  }
  const bool may_defer = ffnMayDefer(s, owed);
  if (gathersOverCp(s.producer)) return cpShardedFfnExit(s, owed);
  if (D_ == 1) return ffnExitOnAttentionRows(s, owed, may_defer);
  return ffnExitOverDp(s, owed, may_defer);
}

// Without attention DP the FFN's output is on attention rows: complete it at
// the exit, or leave it (carried) for the next entry, fused where it can be.
PlanBuilder::Hand PlanBuilder::ffnExitOnAttentionRows(const Sides& s, std::int8_t owed,
                                                      bool may_defer) {
  Hand h;
  if (owed == kNoAxis) {
    h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
    addEntryRead(h.entry, s.consumer, s.final_norm, true, false, /*after_ffn=*/true);
    return h;
  }
  const SumGroup sum = s.producer == LayerKind::kMoe ? SumGroup::kMoeOutput : SumGroup::kTp;
  if ((may_defer || s.terminal_defers) && !schema_.on(Decision::kFfnKeepsSumFromMixer)) {
    h.handoff = {RowKind::kAttention, sum, Completer::kCarried, true};
    if (s.terminal_defers) {
      addEntryRead(h.entry, s.consumer, s.final_norm, true, false,
                   /*after_ffn=*/true);  // nobody completes it
      return h;
    }
    if (s.consumer_ffn) {
      // construction.py (StagePlan): an FFN stage has no carried fusions, so
      // prepare.py (_consumer_step) completes the sum with a plain all-reduce,
      // then reads its input as it would a complete one.
      h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, owed});
      addEntryRead(h.entry, s.consumer, s.final_norm, true, false, /*after_ffn=*/true);
    } else if (fusedEntryCompletes(static_cast<Axis>(owed))) {
      h.entry.push_back(attentionInputFusion(static_cast<Axis>(owed)));
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
  addEntryRead(h.entry, s.consumer, s.final_norm, true, false, /*after_ffn=*/true);
  return h;
}

// exit.py (_ffn_sum_can_move_to_next_layer @060c48f7): under DP attention an
// EAGLE-family speculative run (seam: an MTP step or EAGLE3 captures) keeps
// the all-reduce + dp_scatter return at the FFN's exit; a reduce-scatter
// return (_select_ffn_completion's separate branch) still leaves for the next
// layer. The legacy parent's rule is not read yet: it keeps seam's old plan.
bool PlanBuilder::speculativeKeepsDpReturn(const StepList& complete) const {
  const bool speculative = !c_.model.pattern.mtp.empty() || !c_.flags.capture.empty();
  return !legacy_ && D_ > 1 && speculative && complete.size() > 0 &&
         (complete.end() - 1)->kind == OpKind::kDpScatter;
}

// Under attention DP the FFN output is on full rows and returns over DP (§6.6).
PlanBuilder::Hand PlanBuilder::ffnExitOverDp(const Sides& s, std::int8_t owed, bool may_defer) {
  Hand h;
  StepList complete;
  dpCompleteSteps(complete, s.producer, owed);
  if (speculativeKeepsDpReturn(complete)) may_defer = false;
  if ((may_defer || s.terminal_defers) && !schema_.on(Decision::kFfnKeepsSumFromMixer)) {
    // UnreducedOutput(reduce_to_dp_local = dp_step, or AR + dp_scatter): run by the next entry.
    h.handoff = {RowKind::kFull, SumGroup::kDpReturn, Completer::kCarried, true};
    if (!s.terminal_defers) h.entry = complete;
    if (s.terminal_defers)
      h.entry.push_back(
          {OpKind::kDpScatter, Tensor::kHidden, kNoAxis, RowKind::kFull, RowKind::kAttention});
    addEntryRead(h.entry, s.consumer, s.final_norm, true, false, /*after_ffn=*/true);
    return h;
  }
  if (may_defer && schema_.on(Decision::kFfnKeepsSumFromMixer)) {
    h.handoff = {RowKind::kFull, SumGroup::kDpReturn, Completer::kCarried, true};
    h.exit = complete;
    // The next entry still runs the reduction it was told to expect.
    if (owed != kNoAxis) h.entry.push_back({OpKind::kAllReduce, Tensor::kHidden, owed});
    addEntryRead(h.entry, s.consumer, s.final_norm, true, false, /*after_ffn=*/true);
    return h;
  }
  h.handoff = {RowKind::kAttention, SumGroup::kNone, Completer::kNone, true};
  h.exit = complete;
  addEntryRead(h.entry, s.consumer, s.final_norm, true, false, /*after_ffn=*/true);
  return h;
}

}  // namespace seam::policy_detail
