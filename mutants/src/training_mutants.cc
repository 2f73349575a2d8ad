// The training plan edits: each finds the first site (by pass, layer, kind,
// step, occurrence) and edits it on every rank that has it, the way a planner
// bug would be the same everywhere; the collective swap is on one rank only.
#include "training_mutants.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

namespace seam::mutants {

namespace {

bool sameSlot(const TrainingOp& a, const TrainingOp& b) {
  return a.pass == b.pass && a.layer == b.layer && a.kind == b.kind && a.step == b.step &&
         a.axis == b.axis && a.transform == b.transform;
}

struct Site {
  TrainingOp op;
  int occurrence = 0;
};

std::optional<Site> firstSite(const TrainingPlan& plan,
                              const std::function<bool(const TrainingOp&)>& pred) {
  for (const auto& ops : plan.ranks) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!pred(ops[i])) continue;
      Site s{ops[i], 0};
      for (size_t k = 0; k < i; ++k) s.occurrence += sameSlot(ops[k], ops[i]);
      return s;
    }
  }
  return std::nullopt;
}

/// Edits the site on every rank; edit(ops, index) returns nothing.
bool editEverywhere(TrainingPlan& plan, const Site& s,
                    const std::function<void(std::vector<TrainingOp>&, int)>& edit) {
  bool any = false;
  for (auto& ops : plan.ranks) {
    int seen = 0;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (!sameSlot(ops[i], s.op)) continue;
      if (seen++ != s.occurrence) continue;
      edit(ops, i);
      any = true;
      break;
    }
  }
  return any;
}

bool isGradReduction(const TrainingOp& op) {
  return op.pass == Pass::kBackward && op.reads.empty() && !op.params.empty() &&
         op.ranks.size() > 1 &&
         (op.kind == OpKind::kReduceScatter || op.kind == OpKind::kAllReduce);
}

}  // namespace

bool dropGradReduction(TrainingPlan& plan) {
  auto s = firstSite(plan, isGradReduction);
  return s && editEverywhere(plan, *s, [](auto& ops, int i) { ops.erase(ops.begin() + i); });
}

bool duplicateGradReduction(TrainingPlan& plan) {
  auto s = firstSite(plan, isGradReduction);
  return s && editEverywhere(plan, *s,
                             [](auto& ops, int i) { ops.insert(ops.begin() + i + 1, ops[i]); });
}

bool dropSpNormGradSum(TrainingPlan& plan) {
  auto s = firstSite(
      plan, [](const TrainingOp& op) { return isGradReduction(op) && op.axis == TrainAxis::kTp; });
  return s && editEverywhere(plan, *s, [](auto& ops, int i) { ops.erase(ops.begin() + i); });
}

bool kvReplicaGradsNotSummed(TrainingPlan& plan) {
  const TrainingPlan* p = &plan;
  auto s = firstSite(plan, [p](const TrainingOp& op) {
    return op.transform == Transform::kSumRepeats &&
           p->tensors[op.writes[0]].space == Space::kKvHeads;
  });
  return s && editEverywhere(plan, *s, [](auto& ops, int i) { ops[i].perm = {0}; });
}

bool swapBackwardCollectivesOnOneRank(TrainingPlan& plan) {
  // The last rank issues two adjacent backward collectives in the other order
  // (PrimeRL #3195: a compiled graph moved the Ulysses all-to-all backward
  // across the FSDP reduce-scatter). Prefer a pair on different groups.
  const int r = plan.world() - 1;
  if (r < 1) return false;
  auto& ops = plan.ranks[r];
  int same_group = -1;
  for (int i = 0; i + 1 < static_cast<int>(ops.size()); ++i) {
    const TrainingOp& a = ops[i];
    const TrainingOp& b = ops[i + 1];
    if (a.pass != Pass::kBackward || !a.hasGroup() || !b.hasGroup() || a.ranks.size() < 2 ||
        b.ranks.size() < 2)
      continue;
    if (a == b) continue;
    if (a.ranks != b.ranks) {
      std::swap(ops[i], ops[i + 1]);
      return true;
    }
    if (same_group < 0) same_group = i;
  }
  if (same_group < 0) return false;
  std::swap(ops[same_group], ops[same_group + 1]);
  return true;
}

bool combineSplitsNotSwapped(TrainingPlan& plan) {
  auto s = firstSite(plan, [](const TrainingOp& op) {
    return op.pass == Pass::kForward && op.a2a == A2aMode::kToSource &&
           op.in_splits != op.out_splits;
  });
  return s && editEverywhere(plan, *s, [](auto& ops, int i) {
           std::swap(ops[i].in_splits, ops[i].out_splits);
         });
}

bool headSliceOffByOne(TrainingPlan& plan) {
  const int blocks = plan.source.config.cp * plan.source.config.tp;
  if (blocks < 2) return false;
  auto s = firstSite(plan, [](const TrainingOp& op) {
    return op.transform == Transform::kSliceParam && op.step == "slice head params";
  });
  return s && editEverywhere(plan, *s, [blocks](auto& ops, int i) {
           for (int& u : ops[i].unit_list) u = (u + 1) % blocks;
         });
}

bool dgradAlsoAllReduced(TrainingPlan& plan) {
  // Invariant 4.2.4: the dgrad entering a TP-sharded block is reduced by f
  // (an all-reduce) or by the SP reduce-scatter, never both.
  auto s = firstSite(plan, [](const TrainingOp& op) {
    return op.pass == Pass::kBackward && op.kind == OpKind::kReduceScatter &&
           op.axis == TrainAxis::kTp && !op.reads.empty();
  });
  return s && editEverywhere(plan, *s, [](auto& ops, int i) {
           TrainingOp ar = ops[i];
           ar.kind = OpKind::kAllReduce;
           ar.step = "tp all-reduce dgrad (f)";
           ar.writes = ar.reads;
           ar.conj_of = -1;
           ops.insert(ops.begin() + i, ar);
         });
}

bool gatherBackwardSlices(TrainingPlan& plan) {
  // Automodel #1260: the backward of an all-gather slices the rank's piece
  // instead of reduce-scattering the partial gradient.
  auto s = firstSite(plan, [](const TrainingOp& op) {
    return op.pass == Pass::kBackward && op.kind == OpKind::kReduceScatter && !op.reads.empty() &&
           op.conj_of >= 0;
  });
  return s && editEverywhere(plan, *s, [](auto& ops, int i) {
           TrainingOp& op = ops[i];
           op.kind = OpKind::kSlice;
           op.transform = Transform::kScatterSeq;
           op.axis = TrainAxis::kNone;  // keeps its rank list: which piece is its own
           op.step = "split (grad of all-gather)";
         });
}

bool kvRepeatTiled(TrainingPlan& plan) {
  // vllm-omni #5716's class: KV heads replicated in another order than the
  // contiguous GQA grouping of the q heads.
  const TrainingPlan* p = &plan;
  auto s = firstSite(plan, [p](const TrainingOp& op) {
    return op.pass == Pass::kForward && op.transform == Transform::kRepeat &&
           p->tensors[op.reads[0]].units > 1 && p->tensors[op.reads[0]].space == Space::kKvHeads;
  });
  return s && editEverywhere(plan, *s, [](auto& ops, int i) { ops[i].perm = {1}; });
}

bool gradReducedBeforeLastContribution(TrainingPlan& plan) {
  // gpt-neox #1259: the gradient reduction runs before the backward kernel
  // that adds the last contribution (a hook registered too early).
  auto s = firstSite(plan, isGradReduction);
  if (!s) return false;
  return editEverywhere(plan, *s, [](auto& ops, int i) {
    for (int k = i - 1; k >= 0; --k) {
      const TrainingOp& c = ops[k];
      if (c.pass != Pass::kBackward || c.kind != OpKind::kCompute) continue;
      const bool uses = std::any_of(c.params.begin(), c.params.end(), [&](std::int16_t p) {
        return std::find(ops[i].params.begin(), ops[i].params.end(), p) != ops[i].params.end();
      });
      if (!uses) continue;
      TrainingOp red = ops[i];
      ops.erase(ops.begin() + i);
      ops.insert(ops.begin() + k, red);
      return;
    }
  });
}

bool routingWeightsTwice(TrainingPlan& plan) {
  // Invariant 10: the routing weights (and routed_scaling_factor) are applied
  // once; here a second time on the weighted expert outputs.
  auto s = firstSite(plan, [](const TrainingOp& op) {
    return op.pass == Pass::kForward && op.transform == Transform::kRouteWeight;
  });
  return s && editEverywhere(plan, *s, [](auto& ops, int i) {
           TrainingOp again = ops[i];
           again.reads = again.writes;
           again.step = "routing weights (again)";
           ops.insert(ops.begin() + i + 1, again);
           // Backward ops name their forward op by index: shift those after it.
           for (TrainingOp& op : ops) {
             if (op.conj_of > i) ++op.conj_of;
           }
         });
}

/// The last rank leaves out its first op matching `pred` (the other ranks
/// keep theirs): a rank that takes another path through its hooks.
bool dropOnLastRank(TrainingPlan& plan, const std::function<bool(const TrainingOp&)>& pred) {
  if (plan.world() < 2) return false;
  auto& ops = plan.ranks[plan.world() - 1];
  const auto it = std::find_if(ops.begin(), ops.end(), pred);
  if (it == ops.end()) return false;
  ops.erase(it);
  return true;
}

bool recomputeCollectiveDroppedOnOneRank(TrainingPlan& plan) {
  // Activation checkpointing re-runs a block's forward collectives in
  // backward; a rank whose recompute skips one (a data-dependent branch in
  // the checkpointed region) leaves its group waiting.
  return dropOnLastRank(plan, [](const TrainingOp& op) {
    return op.recompute && op.hasGroup() && op.ranks.size() > 1;
  });
}

bool fsdpPrefetchMissingOnOneRank(TrainingPlan& plan) {
  // FSDP2 prefetches the next unit's all-gather from a pre-backward hook; a
  // rank on which the hook does not fire (or fires for another unit) issues
  // its all-gathers in another order than its shard group.
  return dropOnLastRank(plan, [](const TrainingOp& op) {
    return op.pass == Pass::kBackward && op.kind == OpKind::kAllGather && op.reads.empty() &&
           op.ranks.size() > 1;
  });
}

bool ringLastDkvStepDropped(TrainingPlan& plan) {
  // An off-by-one in the attention CP ring's backward loop (cp - 1 steps
  // where TE runs cp): the last exchange, the dKV alone, is never posted,
  // so each owner's dK and dV keep only its own contribution.
  bool any = false;
  for (OpKind kind : {OpKind::kSend, OpKind::kRecv}) {
    auto s = firstSite(plan, [&](const TrainingOp& op) {
      if (op.pass != Pass::kBackward || op.kind != kind || op.writes.size() + op.reads.size() != 2)
        return false;
      const TensorInfo& t = plan.tensors[op.kind == OpKind::kSend ? op.reads[0] : op.writes[0]];
      return t.name.rfind("d:", 0) == 0;  // the dKV slot alone
    });
    any |= s && editEverywhere(plan, *s, [](auto& ops, int i) { ops.erase(ops.begin() + i); });
  }
  return any;
}

bool ringBackwardTowardNextRank(TrainingPlan& plan) {
  // The backward ring run in the forward's direction (TE's backward sends to
  // the previous CP rank and receives from the next): each rank's sends and
  // receives of one exchange trade peers, on every rank. At cp 2 both
  // neighbours are the same rank, so the mutant changes nothing there.
  bool any = false;
  for (auto& ops : plan.ranks) {
    for (size_t i = 0; i + 1 < ops.size(); ++i) {
      TrainingOp& a = ops[i];
      TrainingOp& b = ops[i + 1];
      const bool pair = a.pass == Pass::kBackward && b.pass == Pass::kBackward &&
                        a.ranks.size() == 2 && b.ranks.size() == 2 &&
                        ((a.kind == OpKind::kSend && b.kind == OpKind::kRecv) ||
                         (a.kind == OpKind::kRecv && b.kind == OpKind::kSend));
      if (!pair) continue;
      TrainingOp& send = a.kind == OpKind::kSend ? a : b;
      TrainingOp& recv = a.kind == OpKind::kSend ? b : a;
      std::swap(send.ranks[1], recv.ranks[0]);
      any = true;
      ++i;
    }
  }
  return any;
}

}  // namespace seam::mutants
