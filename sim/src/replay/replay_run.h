// Private to sim/: the run of Replay (replay.h includes this at its end): the
// setup of a plan's lanes, stacks and ranks, the rounds that schedule every
// rank's ops and collectives, the deadlock report, the end-of-plan checks
// and the outputs a finished run reports.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "replay/replay.h"

namespace seam::ledger_detail {

template <class Domain>
inline LedgerResult Replay<Domain>::run(const Plan& plan, const LedgerOptions& options) {
  plan_ = &plan;
  options_ = options;
  result_ = LedgerResult{};
  // The groups are the config's alone: a sweep's cases of one config share them.
  if (!topo_ || !(topo_->config() == plan.source.config)) topo_.emplace(plan.source.config);
  // Rows and stages from the judges' geometry of the case, never from the
  // plan's fields (property 9 holds those to it), and the rows' tokens and
  // the groups from the judges' own derivation (judge_rows.h), never from
  // RowMap or Topology, and the DP lowering from judge_dp.h, never lowerDpOp:
  // a fault in the planner's padding, CP layout, local split, attention rows,
  // TBO split, stages, row contents, groups or DP lowering cannot move the
  // ledger with it. Whether the batch runs split is the plan's (its ops run on
  // halves); a plan that splits a batch the case does not is property 9's to
  // report, and its halves are the plan's to replay it at all.
  const JudgeGeometry g = judgeGeometry(plan.source);
  const std::vector<int>& split =
      plan.tbo_split.empty() || g.tbo_split.empty() ? plan.tbo_split : g.tbo_split;
  lanes_ = judgeLanes(plan.source, *topo_, g, split);
  stages_ = g.stages;
  useLane(0);
  tbo_ = lanes_.size() > 1;
  row_bytes_ = activationRowBytes(plan.source.model.shape);
  shapeStacks();
  // The rows remembered to hold point into the last plan's token lists.
  held_.resize(kHeld);
  for (Held& h : held_) h.toks = nullptr;
  domain_.prepare(stacks_, std::max(1, rows().totalTokens()));
  ++runs_;
  if (lowered_.size() < static_cast<size_t>(plan.world()) * kDpKinds)
    lowered_.resize(static_cast<size_t>(plan.world()) * kDpKinds);
  resetRanks();
  embed();
  mailbox_.clear();
  junk_ = 0;
  schedule();
  useLane(0);
  if (!stopped()) finalChecks();
  return std::move(result_);
}

template <class Domain>
inline void Replay<Domain>::shapeStacks() {
  stacks_.assign(2, {});
  for (const JudgeStage& s : stages_) {
    StackShape& shape = stacks_[s.stack];
    const int index = static_cast<int>(shape.shards.size());
    shape.shards.push_back(s.shards);
    shape.joins_at.push_back(s.joins_at < 0 ? index + 1 : s.joins_at);
  }
  // VocabParallelEmbedding (vocab_parallel_embedding.py forward) skips its
  // TP all-reduce inside maybe_input_scattered: the case the engine runs with
  // input-scattered attention starts from each TP rank's vocab-shard part
  // (sglang PR #10568; the reason PR #21215 gives for a multimodal bug).
  const ParallelConfig& cfg = plan_->source.config;
  if (plan_->source.flags.input_scattered && cfg.tp > 1) stacks_[0].embed_shards = cfg.tp;
  // Nemotron-H's MTP eh_proj (nemotron_h_mtp.py @008b79d2) is a
  // ColumnParallelLinear over tp, or under DP attention over attention TP.
  if (stacks_.size() > 1 && plan_->source.model.family == LayerFamily::kSingleStage)
    stacks_[1].column_shards = static_cast<int>(topo_->groupOf(columnAxis(), 0).size());
  // Stages are stored stack 0 first, each stack in order.
  stage_base_[0] = 0;
  stage_base_[1] = static_cast<int>(stacks_[0].shards.size());
  if (stacks_[1].shards.empty()) stacks_.resize(1);
}

template <class Domain>
inline void Replay<Domain>::resetRanks() {
  const int world = plan_->world();
  ranks_.resize(world);
  if (tbo_) {
    parked_.resize(world);
    for (Parked& p : parked_) {
      for (int lane = 0; lane < kHalfLanes; ++lane)
        p.hidden[lane].present = p.residual[lane].present = false;
    }
  }
  for (RankState& st : ranks_) {
    st.hidden.present = false;
    st.hidden.unwritten = nullptr;  // (the last plan's token lists are gone)
    st.hidden.shared.reset();
    st.residual.present = false;
    st.lane = 0;
    st.branch.present = false;
    st.snaps.clear();
    st.pc = 0;
    st.final_done[0] = st.final_done[1] = false;
  }
}

template <class Domain>
inline void Replay<Domain>::embed() {
  for (int r = 0; r < plan_->world(); ++r) {
    Buffer& h = ranks_[r].hidden;
    h.kind = RowKind::kAttention;
    h.present = true;
    const auto& toks = rows().tokens(RowKind::kAttention, r);
    h.v.resize(toks.size());
    // CP shard padding rows hold no token. A sharded embedding: rank r holds
    // vocab shard r % tp (its TP group is its pipeline stage's tp block).
    const int n = stacks_[0].embed_shards;
    for (size_t i = 0; i < toks.size(); ++i) {
      h.v[i] = toks[i] == kPaddingRow ? freshJunk()
               : n > 1                ? domain_.embedShard(0, toks[i], r % n, n)
                                      : domain_.embed(0, toks[i]);
    }
  }
}

template <class Domain>
template <class OnFinal, class OnSnapshot>
inline void Replay<Domain>::visitOutputs(OnFinal&& on_final, OnSnapshot&& on_snapshot) const {
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    for (const Snap& snap : ranks_[rank].snaps) {
      if (snap.stack != 0 || snap.stage < 0) continue;
      const auto& toks = rows().tokens(snap.buf.kind, static_cast<int>(rank));
      for (size_t i = 0; i < toks.size() && i < snap.buf.v.size(); ++i) {
        if (toks[i] >= 0) on_snapshot(snap.stage, toks[i], snap.buf.v[i]);
      }
    }
  }
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    for (int stack = 0; stack < 2; ++stack) {
      if (!ranks_[rank].final_done[stack]) continue;
      const Buffer& buf = ranks_[rank].finals[stack];
      const auto& toks = rows().tokens(buf.kind, static_cast<int>(rank));
      for (size_t i = 0; i < toks.size() && i < buf.v.size(); ++i) {
        if (toks[i] >= 0) on_final(stack, toks[i], buf.v[i]);
      }
    }
  }
}

template <class Domain>
inline void Replay<Domain>::schedule() {
  const int world = plan_->world();
  while (!stopped()) {
    bool progress = false;
    bool all_done = true;
    for (int r = 0; r < world && !stopped(); ++r) progress |= runLocal(r);
    if (stopped()) return;
    for (int r = 0; r < world && !stopped(); ++r) {
      const auto& ops = plan_->ranks[r];
      if (ranks_[r].pc >= ops.size()) continue;
      all_done = false;
      const Op& op = ops[ranks_[r].pc];
      if (op.kind == OpKind::kRecv) {
        progress |= tryRecv(r);
      } else if (communicates(op.kind) && op.kind != OpKind::kSend) {
        progress |= tryCollective(r);
      } else {
        progress = true;  // advanced by a collective run from a lower rank this round
      }
    }
    if (stopped() || all_done) return;
    if (!progress) {
      reportDeadlock();
      return;
    }
  }
}

template <class Domain>
inline bool Replay<Domain>::runLocal(int r) {
  const auto& ops = plan_->ranks[r];
  bool ran = false;
  RankState& st = ranks_[r];
  while (st.pc < ops.size() && !stopped()) {
    const Op& op = ops[st.pc];
    if (tbo_) activate(r, op.half);
    // Only a norm and a compute read an unwritten norm's or compute's rows
    // as they are, and they, an add_norm and a DP op an all-reduce's shared
    // rows (a collective waits for tryCollective, which decides).
    const bool collective = op.kind != OpKind::kSend && communicates(op.kind);
    if (collective &&
        !(op.hasGroup() && topo_->groupSize(op.groupAxis()) == 1 && op.kind != OpKind::kRecv))
      break;
    if (op.kind == OpKind::kAddNorm || op.kind == OpKind::kDpScatter) {
      fillUnwritten(st.hidden);  // (they read shared rows as they are)
    } else if (op.kind != OpKind::kNorm && op.kind != OpKind::kCompute) {
      materialize(st.hidden);
    }
    if (op.kind == OpKind::kSend) {
      doSend(r, op);
    } else if (collective) {
      // A "collective" on a group of one rank runs locally.
      execCollective(topo_->groupOf(op.groupAxis(), r), op);
      if (stopped()) return ran;
    } else {
      execLocal(r, op);
      if (stopped()) return ran;
    }
    ++st.pc;
    ++result_.ops_executed;
    ran = true;
  }
  return ran;
}

template <class Domain>
inline bool Replay<Domain>::tryCollective(int r) {
  const Op& op = plan_->ranks[r][ranks_[r].pc];
  if (!op.hasGroup()) {
    report(at(r, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
              std::string(opName(op.kind)) + " names no group"));
    return false;
  }
  const auto& members = topo_->groupOf(op.groupAxis(), r);
  if (members.front() != r) return false;  // the group's lowest rank runs it
  const int comm = topo_->communicator(op.groupAxis(), r);
  for (int m : members) {
    const auto& mops = plan_->ranks[m];
    if (ranks_[m].pc >= mops.size()) return false;
    const Op& mop = mops[ranks_[m].pc];
    if (!communicates(mop.kind) || mop.kind == OpKind::kSend || mop.kind == OpKind::kRecv)
      return false;
    if (!mop.hasGroup() || topo_->communicator(mop.groupAxis(), m) != comm) return false;
  }
  // Every member waits on this communicator: their calls must agree. The
  // two DP gathers issue the same collectives (their lowerings differ in
  // local steps only; runDpOp compares each collective).
  const auto gather = [](OpKind k) {
    return k == OpKind::kDpGatherPartial || k == OpKind::kDpGatherReplicate;
  };
  for (int m : members) {
    const Op& mop = plan_->ranks[m][ranks_[m].pc];
    if (mop.half != op.half) {
      // TBO: each half's collectives are calls of their own, on the same communicator.
      report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                "on " + std::string(axisName(op.groupAxis())) + " " + rankList(members) + " rank " +
                    std::to_string(r) + " issues half " + std::string(halfName(op.half)) + "'s " +
                    std::string(opName(op.kind)) + " while rank " + std::to_string(m) +
                    " issues half " + std::string(halfName(mop.half)) + "'s " +
                    std::string(opName(mop.kind))));
      return false;
    }
    if ((mop.kind != op.kind && !(gather(mop.kind) && gather(op.kind))) || mop.bytes != op.bytes) {
      report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                "on " + std::string(axisName(op.groupAxis())) + " " + rankList(members) + " rank " +
                    std::to_string(r) + " issues " + std::string(opName(op.kind)) + " of " +
                    std::to_string(op.bytes) + " bytes while rank " + std::to_string(m) +
                    " issues " + std::string(opName(mop.kind)) + " of " +
                    std::to_string(mop.bytes) + " bytes"));
      return false;
    }
  }
  if (tbo_) {
    for (int m : members) activate(m, op.half);
  }
  // An all-reduce of the hidden state sums unwritten rows as they are
  // (allReduce writes them first otherwise), and so may a DP op's lowering
  // (startDpOp writes every member's hidden state, or takes it unwritten).
  const bool sums_hidden = ((op.kind == OpKind::kAllReduce || op.kind == OpKind::kArAddNorm) &&
                            op.tensor == Tensor::kHidden) ||
                           isDpOp(op.kind);
  if (!sums_hidden) {
    for (int m : members) materialize(ranks_[m].hidden);
  }
  execCollective(members, op);
  if (stopped()) return false;
  for (int m : members) {
    ++ranks_[m].pc;
    ++result_.ops_executed;
  }
  return true;
}

template <class Domain>
inline void Replay<Domain>::reportDeadlock() {
  const int world = plan_->world();
  for (int r = 0; r < world; ++r) {
    const auto& ops = plan_->ranks[r];
    if (ranks_[r].pc >= ops.size()) continue;
    const Op& op = ops[ranks_[r].pc];
    std::string detail = "rank " + std::to_string(r) + " waits in " + std::string(opName(op.kind));
    if (op.hasGroup()) {
      const auto& members = topo_->groupOf(op.groupAxis(), r);
      detail += " on " + std::string(axisName(op.groupAxis())) + " " + rankList(members);
      for (int m : members) {
        const auto& mops = plan_->ranks[m];
        if (ranks_[m].pc >= mops.size()) {
          detail += " but rank " + std::to_string(m) + " has finished";
          break;
        }
        const Op& mop = mops[ranks_[m].pc];
        if (m != r && (!mop.hasGroup() || topo_->communicator(mop.groupAxis(), m) !=
                                              topo_->communicator(op.groupAxis(), r))) {
          detail += " while rank " + std::to_string(m) + " waits in " +
                    std::string(opName(mop.kind)) +
                    (mop.hasGroup() ? " on " + std::string(axisName(mop.groupAxis())) : "");
          break;
        }
      }
    }
    report(at(r, Property::kCollectivesMatch, ViolationClass::kDeadlock,
              detail + ": a real run hangs"));
    return;
  }
}

template <class Domain>
inline void Replay<Domain>::finalChecks() {
  const int world = plan_->world();
  const int last_pp = topo_->config().pp - 1;
  for (int r = 0; r < world && !stopped(); ++r) {
    RankState& st = ranks_[r];
    for (Snap& s : st.snaps) {
      if (s.stage < 0) continue;
      if (!s.buf.present || s.buf.kind != RowKind::kAttention ||
          static_cast<int>(s.buf.v.size()) != rows().shardTokens(r)) {
        report(at(
            r, Property::kSnapshots, ViolationClass::kLayoutMismatch,
            "the snapshot before stage " + std::to_string(s.stage) + " is " +
                (s.buf.present ? "on " + std::string(rowKindName(s.buf.kind)) + " rows" : "empty") +
                ", not on attention rows"));
        return;
      }
      if (!checkRows(r, s.buf, Expect::kComplete, s.stack, s.stage, Property::kSnapshots)) return;
    }
    if (st.branch.present) {
      // A fork (an add on an empty branch) whose contribution no merge ever
      // added into the hidden state: its terms never reach the output.
      report(at(r, Property::kOwedOnce, ViolationClass::kNeverCompleted,
                "rank " + std::to_string(r) +
                    " ends the plan holding a branch that was forked and never merged"));
      return;
    }
    if (topo_->rankIn(Axis::kPp, r) == last_pp) {
      for (size_t k = 0; k < stacks_.size(); ++k) {
        if (!st.final_done[k]) {
          report(at(-1, Property::kOutputComplete, ViolationClass::kMissingOutput,
                    "rank " + std::to_string(r) + " never produces the final output of stack " +
                        std::to_string(k)));
          result_.violations.back().rank = r;
          return;
        }
      }
    }
  }
}

}  // namespace seam::ledger_detail
