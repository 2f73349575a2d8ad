// Property 4 for training plans, read off the plan without replaying it
// (training_ledger.h): every backward collective is the conjugate of the
// forward op it names, and on every group every member issues the same
// sequence of collectives.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "seam/sim/training/training_ledger.h"

namespace seam {

namespace {

Violation collectiveMismatch(int r, int i, const TrainingOp& op, const std::string& why) {
  Violation v;
  v.property = Property::kCollectivesMatch;
  v.cls = ViolationClass::kCollectiveMismatch;
  v.rank = r;
  v.op_index = i;
  v.layer = op.layer;
  v.stage = op.layer;
  v.phase = op.pass == Pass::kForward ? Phase::kCompute : Phase::kExit;
  v.op = op.kind;
  v.detail =
      std::string(op.pass == Pass::kForward ? "forward " : "backward ") + op.step + ": " + why;
  return v;
}

/// Backward collective `b` mirrors forward op `f`: the same group, the
/// mirrored all-to-all mode with swapped splits, or the other of all-gather
/// and reduce-scatter over the same split sizes.
bool isConjugate(const TrainingOp& f, const TrainingOp& b) {
  if (!(f.hasGroup() && f.ranks == b.ranks && f.axis == b.axis)) return false;
  if (f.kind == OpKind::kAllToAll) {
    const bool mode = (f.a2a == A2aMode::kSeqToHead && b.a2a == A2aMode::kHeadToSeq) ||
                      (f.a2a == A2aMode::kHeadToSeq && b.a2a == A2aMode::kSeqToHead) ||
                      ((f.a2a == A2aMode::kToExpert || f.a2a == A2aMode::kToSource) &&
                       b.a2a == A2aMode::kToSource);
    return b.kind == OpKind::kAllToAll && mode && b.in_splits == f.out_splits &&
           b.out_splits == f.in_splits;
  }
  // Uneven gathers and reduce-scatters (expert TP) keep their split sizes.
  const bool splits = b.in_splits == f.out_splits && b.out_splits == f.in_splits;
  return splits && ((f.kind == OpKind::kAllGather && b.kind == OpKind::kReduceScatter) ||
                    (f.kind == OpKind::kReduceScatter && b.kind == OpKind::kAllGather));
}

/// The first backward op whose forward is a collective it does not mirror.
std::vector<Violation> checkConjugates(const TrainingPlan& plan) {
  for (int r = 0; r < plan.world(); ++r) {
    const auto& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const TrainingOp& b = ops[i];
      if (b.pass != Pass::kBackward || b.conj_of < 0) continue;
      const TrainingOp& f = ops[b.conj_of];
      if (!b.hasGroup()) {
        // A forward collective's backward must be a collective too (§4.1).
        if (f.hasGroup()) {
          return {collectiveMismatch(r, i, b,
                                     "a local op undoes forward collective '" + f.step +
                                         "' (its conjugate is a collective)")};
        }
        continue;
      }
      if (!isConjugate(f, b)) {
        return {collectiveMismatch(r, i, b,
                                   "is not the conjugate of forward '" + f.step +
                                       "' (same group, mirrored, splits swapped)")};
      }
    }
  }
  return {};
}

/// Per group (its rank list), each member's collectives on it: (rank, op
/// indices), ranks in order of their first collective on the group.
using GroupSequences = std::map<std::vector<int>, std::vector<std::pair<int, std::vector<int>>>>;

GroupSequences groupSequences(const TrainingPlan& plan) {
  GroupSequences seqs;
  for (int r = 0; r < plan.world(); ++r) {
    const auto& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (!ops[i].hasGroup()) continue;
      auto& v = seqs[ops[i].ranks];
      if (v.empty() || v.back().first != r) {
        auto it = std::find_if(v.begin(), v.end(), [&](const auto& x) { return x.first == r; });
        if (it == v.end()) {
          v.push_back({r, {}});
          it = v.end() - 1;
        }
        it->second.push_back(i);
      } else {
        v.back().second.push_back(i);
      }
    }
  }
  return seqs;
}

/// The first group a member of which never issues a collective on it, or
/// issues another sequence than its first member.
std::vector<Violation> checkGroupSequences(const TrainingPlan& plan) {
  for (const auto& [group, members] : groupSequences(plan)) {
    const auto& [r0, idx0] = members.front();
    for (int m : group) {
      if (std::find_if(members.begin(), members.end(),
                       [&](const auto& x) { return x.first == m; }) == members.end()) {
        return {collectiveMismatch(
            r0, idx0.front(), plan.ranks[r0][idx0.front()],
            "rank " + std::to_string(m) + " of the group never issues a collective on it")};
      }
    }
    for (const auto& [r, idx] : members) {
      const size_t n = std::min(idx.size(), idx0.size());
      for (size_t k = 0; k < n; ++k) {
        const TrainingOp& a = plan.ranks[r0][idx0[k]];
        const TrainingOp& b = plan.ranks[r][idx[k]];
        const bool splits = !a.in_splits.empty() || !b.in_splits.empty();
        if (a.kind != b.kind || a.a2a != b.a2a || (!splits && a.bytes != b.bytes)) {
          return {collectiveMismatch(
              r, idx[k], b,
              "collective #" + std::to_string(k) + " on " + std::string(trainAxisName(b.axis)) +
                  " is " + std::string(opName(b.kind)) + " '" + b.step + "' (" +
                  std::to_string(b.bytes) + " B) on rank " + std::to_string(r) + " but " +
                  std::string(opName(a.kind)) + " '" + a.step + "' (" + std::to_string(a.bytes) +
                  " B) on rank " + std::to_string(r0))};
        }
      }
      if (idx.size() != idx0.size()) {
        return {collectiveMismatch(
            r, idx.empty() ? 0 : idx.back(), plan.ranks[r][idx.empty() ? 0 : idx.back()],
            "rank " + std::to_string(r) + " issues " + std::to_string(idx.size()) +
                " collectives on the group, rank " + std::to_string(r0) + " " +
                std::to_string(idx0.size()))};
      }
    }
  }
  return {};
}

}  // namespace

std::vector<Violation> checkTrainingCollectives(const TrainingPlan& plan) {
  std::vector<Violation> out = checkConjugates(plan);
  if (!out.empty()) return out;
  return checkGroupSequences(plan);
}

}  // namespace seam
