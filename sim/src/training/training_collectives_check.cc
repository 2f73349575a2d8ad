// Property 4 for training plans, read off the plan without replaying it
// (training_ledger.h): every backward collective is the conjugate of the
// forward op it names, on every group every member issues the same
// sequence of collectives, and every send has its receive of the same bytes
// at a CP ring neighbour.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "seam/sim/training/training_ledger.h"
#include "training/training_layout.h"

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

bool pointToPoint(const TrainingOp& op) {
  return op.kind == OpKind::kSend || op.kind == OpKind::kRecv;
}

GroupSequences groupSequences(const TrainingPlan& plan) {
  GroupSequences seqs;
  for (int r = 0; r < plan.world(); ++r) {
    const auto& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      if (!ops[i].hasGroup() || pointToPoint(ops[i])) continue;
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

/// Where a send or receive of rank r must go: the next CP rank for a
/// forward send or a backward receive, the previous one otherwise (TE's
/// ring: forward KV toward the next rank, backward KV and dKV toward the
/// previous); -1 when the op names no pair with r at its own end.
int ringPeer(const training::Layout& lay, int r, const TrainingOp& op) {
  if (op.ranks.size() != 2 || op.ranks[op.kind == OpKind::kSend ? 0 : 1] != r) return -1;
  const std::vector<int> g = lay.group(TrainAxis::kCp, r);
  const auto at = std::find(g.begin(), g.end(), r) - g.begin();
  const int n = static_cast<int>(g.size());
  const bool to_next = (op.kind == OpKind::kSend) == (op.pass == Pass::kForward);
  return g[(at + (to_next ? 1 : n - 1)) % n];
}

/// Every send and receive is on the CP ring, with its neighbour in the
/// ring's direction, and on each (sender, receiver) channel the sender's
/// sends and the receiver's receives pair up in order with equal bytes.
std::vector<Violation> checkPointToPoint(const TrainingPlan& plan) {
  const training::Layout lay(plan.source);
  // (sender, receiver) -> the ops, in order: sends on the sender, receives on the receiver.
  std::map<std::pair<int, int>, std::pair<std::vector<int>, std::vector<int>>> channels;
  for (int r = 0; r < plan.world(); ++r) {
    const auto& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const TrainingOp& op = ops[i];
      if (!pointToPoint(op)) continue;
      const int want = ringPeer(lay, r, op);
      const int peer = op.ranks.size() == 2 ? op.ranks[op.kind == OpKind::kSend ? 1 : 0] : -1;
      if (want < 0 || peer != want) {
        return {collectiveMismatch(
            r, i, op,
            std::string(op.kind == OpKind::kSend ? "sends to rank " : "receives from rank ") +
                std::to_string(peer) + ", not its CP ring neighbour " + std::to_string(want))};
      }
      auto& ch = channels[{op.ranks[0], op.ranks[1]}];
      (op.kind == OpKind::kSend ? ch.first : ch.second).push_back(i);
    }
  }
  for (const auto& [pair, ch] : channels) {
    const auto& [sends, recvs] = ch;
    const auto& [src, dst] = pair;
    for (size_t k = 0; k < std::max(sends.size(), recvs.size()); ++k) {
      if (k >= sends.size() || k >= recvs.size()) {
        const bool unmatched_send = k < sends.size();
        const int r = unmatched_send ? src : dst;
        const int i = unmatched_send ? sends[k] : recvs[k];
        return {collectiveMismatch(
            r, i, plan.ranks[r][i],
            unmatched_send ? "no receive on rank " + std::to_string(dst) + " matches this send"
                           : "no send on rank " + std::to_string(src) + " matches this receive")};
      }
      const TrainingOp& s = plan.ranks[src][sends[k]];
      const TrainingOp& v = plan.ranks[dst][recvs[k]];
      if (s.bytes != v.bytes) {
        return {collectiveMismatch(dst, recvs[k], v,
                                   "receives " + std::to_string(v.bytes) + " B where send #" +
                                       std::to_string(k) + " of rank " + std::to_string(src) +
                                       " sends " + std::to_string(s.bytes) + " B")};
      }
    }
  }
  return {};
}

}  // namespace

std::vector<Violation> checkTrainingCollectives(const TrainingPlan& plan) {
  std::vector<Violation> out = checkConjugates(plan);
  if (!out.empty()) return out;
  out = checkGroupSequences(plan);
  if (!out.empty()) return out;
  return checkPointToPoint(plan);
}

}  // namespace seam
