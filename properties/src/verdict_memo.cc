#include "seam/properties/verdict_memo.h"

#include <cstring>

namespace seam::properties {

namespace {

/// Equal bytes are equal fields (an Op's padding bytes that differ can only
/// make two equal lists look unequal: a kept verdict missed, never a wrong one).
bool sameOps(const std::vector<Op>& a, const std::vector<Op>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(Op)) == 0);
}

/// `f` with the two flags the judges never read set to their defaults.
Flags judgedFlags(Flags f) {
  const Flags defaults;
  f.fusion = defaults.fusion;
  f.reduction = defaults.reduction;
  return f;
}

/// Everything but the ranks' ops (model: its name; the memo's callers hold one model).
bool sameShell(const Plan& a, const Plan& b) {
  const Case& x = a.source;
  const Case& y = b.source;
  return a.world() == b.world() && a.policy == b.policy && x.model.name == y.model.name &&
         x.config == y.config && x.batch == y.batch &&
         judgedFlags(x.flags) == judgedFlags(y.flags) && a.padding == b.padding &&
         a.cp_layout == b.cp_layout && a.local_split == b.local_split &&
         a.attention_pad == b.attention_pad && a.stages == b.stages &&
         a.boundaries == b.boundaries && a.tbo_split == b.tbo_split;
}

}  // namespace

void VerdictMemo::clear() {
  entries_.clear();
  bytes_ = 0;
}

bool VerdictMemo::matches(const Entry& e, const Plan& plan) {
  if (!sameShell(e.shell, plan)) return false;
  for (int r = 0; r < plan.world(); ++r) {
    if (!sameOps(plan.ranks[r], e.ops[e.rank_ops[r]])) return false;
  }
  return true;
}

const CaseVerdict* VerdictMemo::find(const Plan& plan) const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (matches(*it, plan)) return &it->verdict;
  }
  return nullptr;
}

void VerdictMemo::keep(const Plan& plan, const CaseVerdict& verdict) {
  Entry e;
  e.verdict = verdict;
  e.rank_ops.reserve(plan.ranks.size());
  for (int r = 0; r < plan.world(); ++r) {
    // Ranks of one group often run the same ops: a run of equal ranks shares one copy.
    if (r == 0 || !sameOps(plan.ranks[r], e.ops.back())) {
      e.ops.push_back(plan.ranks[r]);
      e.bytes += plan.ranks[r].size() * sizeof(Op);
    }
    e.rank_ops.push_back(static_cast<int>(e.ops.size()) - 1);
    if (e.bytes > budget_) return;
  }
  e.shell.policy = plan.policy;
  e.shell.source = plan.source;
  e.shell.padding = plan.padding;
  e.shell.cp_layout = plan.cp_layout;
  e.shell.local_split = plan.local_split;
  e.shell.attention_pad = plan.attention_pad;
  e.shell.stages = plan.stages;
  e.shell.boundaries = plan.boundaries;
  e.shell.tbo_split = plan.tbo_split;
  e.shell.ranks.resize(plan.ranks.size());  // world() only: the ops are in `ops`
  bytes_ += e.bytes;
  entries_.push_back(std::move(e));
  while (bytes_ > budget_) {
    bytes_ -= entries_.front().bytes;
    entries_.pop_front();
  }
}

}  // namespace seam::properties
