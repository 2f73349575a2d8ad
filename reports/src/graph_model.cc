#include "graph_model.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace seam::reports {

namespace {

/// The work an op does, without what only names it (its engine call).
bool sameWork(const Op& a, const Op& b) {
  return a.kind == b.kind && a.tensor == b.tensor && a.axis == b.axis && a.phase == b.phase &&
         a.rows_in == b.rows_in && a.rows_out == b.rows_out && a.bytes == b.bytes &&
         a.half == b.half && a.sizes == b.sizes && a.divide_by == b.divide_by &&
         a.chunk_shift == b.chunk_shift && a.slice_of == b.slice_of && a.dp_fault == b.dp_fault &&
         a.tbo_move == b.tbo_move;
}

using BoundaryKey = std::tuple<int, int, int>;  // stack, from, to

/// Per boundary, per rank: the ops of the producer's exit and the consumer's entry.
std::map<BoundaryKey, std::vector<std::vector<const Op*>>> opsAtBoundaries(const Plan& plan) {
  std::map<std::pair<int, int>, BoundaryKey> exit_of, entry_of;  // (stack, stage) -> boundary
  for (const Boundary& b : plan.boundaries) {
    exit_of[{b.stack, b.from}] = {b.stack, b.from, b.to};
    entry_of[{b.stack, b.to}] = {b.stack, b.from, b.to};
  }
  std::map<BoundaryKey, std::vector<std::vector<const Op*>>> out;
  for (std::size_t r = 0; r < plan.ranks.size(); ++r) {
    for (const Op& op : plan.ranks[r]) {
      const auto& side = op.phase == Phase::kExit ? exit_of : entry_of;
      if (op.phase == Phase::kCompute) continue;
      const auto it = side.find({op.stack, op.stage});
      if (it == side.end()) continue;
      auto& per_rank = out[it->second];
      per_rank.resize(plan.ranks.size());
      per_rank[r].push_back(&op);
    }
  }
  return out;
}

/// "" when every rank runs the same work at the boundary, else what differs
/// first: "rank R: OP at N vs OP".
std::string firstOpDifference(const std::vector<std::vector<const Op*>>* a,
                              const std::vector<std::vector<const Op*>>* b) {
  static const std::vector<const Op*> kNone;
  const std::size_t ranks = std::max(a ? a->size() : 0, b ? b->size() : 0);
  for (std::size_t r = 0; r < ranks; ++r) {
    const auto& x = a && r < a->size() ? (*a)[r] : kNone;
    const auto& y = b && r < b->size() ? (*b)[r] : kNone;
    for (std::size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
      if (i < x.size() && i < y.size() && sameWork(*x[i], *y[i])) continue;
      auto name = [&](const std::vector<const Op*>& ops) {
        return i < ops.size() ? std::string(opName(ops[i]->kind)) + "[" +
                                    std::string(tensorName(ops[i]->tensor)) + "]"
                              : std::string("nothing");
      };
      return "rank " + std::to_string(r) + " step " + std::to_string(i + 1) + ": " + name(x) +
             " vs " + name(y);
    }
  }
  return "";
}

/// What must repeat for stage `s` to fold with stage `s - period`.
struct StageSignature {
  const StageInfo* info = nullptr;
  const Boundary* into = nullptr;
  bool differs = false, snapshot = false;
  int reads_norm_offset = 0, joins_offset = 0;
  bool operator==(const StageSignature& o) const {
    const StageInfo& a = *info;
    const StageInfo& b = *o.info;
    const bool stage_same = a.kind == b.kind && a.weight_axis == b.weight_axis &&
                            a.shards == b.shards && a.pp_rank == b.pp_rank &&
                            a.terminal == b.terminal && reads_norm_offset == o.reads_norm_offset &&
                            joins_offset == o.joins_offset;
    const bool into_same = (into == nullptr) == (o.into == nullptr) &&
                           (!into || (into->exit == o.into->exit && into->entry == o.into->entry &&
                                      into->pipeline_cut == o.into->pipeline_cut &&
                                      into->exit_steps == o.into->exit_steps &&
                                      into->entry_steps == o.into->entry_steps));
    return stage_same && into_same && differs == o.differs && snapshot == o.snapshot;
  }
};

}  // namespace

std::vector<BoundaryDiff> diffBoundaries(const Plan& plan, const Plan* against) {
  std::vector<BoundaryDiff> out(plan.boundaries.size());
  if (!against) return out;
  const auto mine = opsAtBoundaries(plan);
  const auto theirs = opsAtBoundaries(*against);
  for (std::size_t i = 0; i < plan.boundaries.size(); ++i) {
    const Boundary& b = plan.boundaries[i];
    for (const Boundary& o : against->boundaries) {
      if (o.stack == b.stack && o.from == b.from && o.to == b.to) out[i].other = &o;
    }
    const BoundaryKey key{b.stack, b.from, b.to};
    const auto m = mine.find(key);
    const auto t = theirs.find(key);
    out[i].first_op_difference = firstOpDifference(m == mine.end() ? nullptr : &m->second,
                                                   t == theirs.end() ? nullptr : &t->second);
    const bool ops_same = out[i].first_op_difference.empty();
    const Boundary* o = out[i].other;
    const bool steps_same = o && o->exit_steps == b.exit_steps && o->entry_steps == b.entry_steps &&
                            o->entry == b.entry && o->exit == b.exit;
    out[i].differs = !steps_same || !ops_same;
    out[i].ops_only = steps_same && !ops_same;
  }
  return out;
}

std::set<std::pair<int, int>> snapshotStages(const Plan& plan) {
  std::set<std::pair<int, int>> out;
  if (plan.ranks.empty()) return out;
  for (const Op& op : plan.ranks[0]) {
    if (op.kind == OpKind::kSnapshot) out.insert({op.stack, op.stage});
  }
  return out;
}

std::vector<GraphItem> stackItems(const Plan& plan, int stack,
                                  const std::vector<BoundaryDiff>& diffs,
                                  const std::set<std::pair<int, int>>& snapshots, bool fold) {
  const int n = plan.stackSize(stack);
  std::vector<StageSignature> sig(n);
  for (int s = 0; s < n; ++s) {
    const StageInfo& info = plan.stages[plan.stageIndex(stack, s)];
    sig[s].info = &info;
    sig[s].snapshot = snapshots.count({stack, s}) > 0;
    sig[s].reads_norm_offset = info.reads_norm_of < 0 ? 0 : info.reads_norm_of - s;
    sig[s].joins_offset = info.joins_at < 0 ? 0 : info.joins_at - s;
  }
  for (std::size_t i = 0; i < plan.boundaries.size(); ++i) {
    const Boundary& b = plan.boundaries[i];
    if (b.stack != stack || b.to < 0 || b.to >= n) continue;
    sig[b.to].into = &b;
    sig[b.to].differs = diffs[i].differs;
  }
  std::vector<GraphItem> items{{GraphItem::kInput, -1}};
  int s = 0;
  while (s < n) {
    int best_period = 0, best_blocks = 0;
    for (int p = 1; fold && p <= 4; ++p) {
      int j = s + p;
      while (j < n && sig[j] == sig[j - p]) ++j;
      const int blocks = (j - s) / p;
      if (blocks >= kMinFoldBlocks && blocks * p > best_blocks * best_period) {
        best_period = p;
        best_blocks = blocks;
      }
    }
    if (best_blocks == 0) {
      items.push_back({GraphItem::kStage, s});
      ++s;
      continue;
    }
    const int p = best_period;
    for (int k = 0; k < p; ++k) items.push_back({GraphItem::kStage, s + k});
    items.push_back({GraphItem::kFold, s + p, s + p * (best_blocks - 1) - 1, p, best_blocks - 2});
    for (int k = 0; k < p; ++k) items.push_back({GraphItem::kStage, s + p * (best_blocks - 1) + k});
    s += p * best_blocks;
  }
  items.push_back({GraphItem::kOutput, n});
  return items;
}

std::string sumColour(SumGroup s) {
  switch (s) {
    case SumGroup::kNone:
      return "#595959";
    case SumGroup::kAttnTp:
      return "#0000CD";
    case SumGroup::kTp:
      return "#CD2626";
    case SumGroup::kMoeOutput:
      return "#7D26CD";
    case SumGroup::kDpReturn:
      return "#CD6600";
  }
  return "#000000";
}

namespace {

std::string steps(const OpKindList& kinds) {
  std::string out;
  for (OpKind k : kinds) out += (out.empty() ? "" : ", ") + std::string(opName(k));
  return out.empty() ? "-" : out;
}

}  // namespace

std::vector<std::string> boundaryLines(const Boundary& b, const BoundaryDiff& d,
                                       const std::string& other_policy) {
  std::vector<std::string> lines = {"exit: " + steps(b.exit_steps),
                                    "entry: " + steps(b.entry_steps)};
  if (b.entry.owes != SumGroup::kNone) {
    lines.push_back("owes " + std::string(sumGroupName(b.entry.owes)) + " (" +
                    std::string(completerName(b.entry.completer)) + ")");
  }
  lines.push_back(std::string(rowKindName(b.entry.rows)) + " rows" +
                  (b.pipeline_cut ? ", pipeline cut" : ""));
  if (!d.differs) return lines;
  if (!d.other) {
    lines.push_back("DIFFERS: " + other_policy + " has no such boundary");
  } else if (d.ops_only) {
    lines.push_back("DIFFERS from " + other_policy + " (same steps): " + d.first_op_difference);
  } else {
    lines.push_back("DIFFERS: " + other_policy + ": exit " + steps(d.other->exit_steps) +
                    " / entry " + steps(d.other->entry_steps));
  }
  return lines;
}

std::string kindText(LayerKind k) {
  switch (k) {
    case LayerKind::kMamba:
      return "M  Mamba-2";
    case LayerKind::kAttention:
      return "*  attention";
    case LayerKind::kDenseMlp:
      return "-  dense MLP";
    case LayerKind::kMoe:
      return "E  MoE";
    case LayerKind::kGatedDeltaNet:
      return "G  Gated DeltaNet";
    case LayerKind::kParallelMixer:
      return "P  attention || Mamba-2";
  }
  return "?";
}

}  // namespace seam::reports
