// Private to sim/: the training ledger's replay (training_ledger.h), shared
// by the files that define it: the cells and rank state, the terms and their
// complete values in GF(2^61 - 1), and the Replay class. training_ledger.cc
// schedules it and checks the gradients; training_ledger_kernels.cc,
// training_ledger_local_ops.cc and training_ledger_collectives.cc define what
// each kind of op does to cells.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/fingerprint.h"
#include "seam/sim/training/training_ledger.h"
#include "training/training_layout.h"

namespace seam::training {

/// The j of an expert's contribution to a routed gradient: kRoutedJ +
/// expert * etp + the expert-TP shard that computed it (Megatron's expert
/// tensor parallelism splits each expert's GEMMs over etp ranks, so each
/// shard's input gradient is a partial sum).
inline constexpr int kRoutedJ = 2048;

/// term(tensor, token, unit, j): a nonzero field element fixed by its four
/// coordinates.
inline std::uint64_t termHash(int tensor, int token, int unit, int j) {
  const std::uint64_t key = (static_cast<std::uint64_t>(tensor) << 48) ^
                            (static_cast<std::uint64_t>(token) << 24) ^
                            (static_cast<std::uint64_t>(unit) << 12) ^
                            static_cast<std::uint64_t>(j) ^ (static_cast<std::uint64_t>(j) << 60);
  return detail::splitmix64(key) % (detail::kFieldPrime - 1) + 1;
}

/// The routing weight of (layer, token, expert) as a field element: the
/// weights are symbolic scalars, so a weight applied twice or not at all
/// leaves a value no complete combination has.
inline std::uint64_t routeWeight(int layer, int token, int expert) {
  return termHash(0x7fff, token, expert, 2048 + layer) % (detail::kFieldPrime - 2) + 2;
}

/// One (token, unit) position of a buffer and its value.
struct Cell {
  int token = 0;
  std::int16_t unit = 0;   ///< the label: where in the tensor's unit space it sits
  std::int16_t src = 0;    ///< the unit whose value it is (differs for replicas)
  std::int16_t from = -1;  ///< the rank that sent it in the last all-to-all
  std::uint64_t v = 0;
};
using Buf = std::vector<Cell>;

/// Keys [lo, hi) of a gradient's coverage (key j * T + token), each `coef` times.
struct Run {
  int lo, hi, coef;
};
/// One storage position of a parameter's gradient.
struct Slot {
  int unit = 0;  ///< the unit this storage position holds
  std::vector<std::pair<int, std::vector<Run>>>
      parts;  ///< (unit of the contribution, its coverage)
};

/// What one rank holds during the replay.
struct RankState {
  std::vector<Buf> bufs;
  std::vector<char> has;
  std::vector<std::vector<int>> slices;  // per param
  std::vector<std::vector<Slot>> grads;  // per param (empty: not a param)
  size_t pc = 0;
};

/// The tokens of a buffer in the order they first appear (each token's
/// cells are contiguous).
inline std::vector<int> distinctTokens(const Buf& b) {
  std::vector<int> out;
  for (const Cell& c : b) {
    if (out.empty() || out.back() != c.token) {
      out.push_back(c.token);
    }
  }
  return out;
}

/// One collective as its group issues it: the members, in group order, and
/// the op each member is at.
struct GroupCall {
  const std::vector<int>& members;
  std::vector<const TrainingOp*> ops;
  int size() const { return static_cast<int>(members.size()); }
};

/// The replay of one training plan on every rank.
class Replay {
 public:
  Replay(const TrainingPlan& plan, int max_violations);
  LedgerResult run();

 private:
  const TensorInfo& T(int id) const { return plan_.tensors[id]; }
  int root(int id) const {
    while (T(id).value_of >= 0) id = T(id).value_of;
    return id;
  }
  bool done() const { return static_cast<int>(result_.violations.size()) >= max_; }

  /// The complete value of a tensor's (token, unit).
  std::uint64_t complete(int id, int token, int unit) const {
    const TensorInfo& t = T(id);
    std::uint64_t v = 0;
    if (t.routed_from >= 0) {
      for (int e : lay_.route(t.layer, token)) {
        v = detail::fieldAdd(
            v, detail::fieldMul(routeWeight(t.layer, token, e), complete(t.routed_from, token, e)));
      }
      return v;
    }
    if (t.routed_grad) {
      const int etp = lay_.config().expertTp();
      for (int e : lay_.route(t.layer, token)) {
        for (int k = 0; k < etp; ++k)
          v = detail::fieldAdd(v, termHash(id, token, unit, kRoutedJ + e * etp + k));
      }
    }
    for (int j = 0; j < t.shards; ++j) v = detail::fieldAdd(v, termHash(id, token, unit, j));
    return v;
  }
  /// Compares a cell's value with the complete value; violation on mismatch.
  bool checkValue(int r, const TrainingOp& op, const Cell& c, int tensor, int unit) {
    const std::uint64_t want = complete(tensor, c.token, unit);
    if (c.v == want) return true;
    wrongValue(r, op, c, tensor, unit, want);
    return false;
  }
  bool hasBuf(int r, const TrainingOp& op, int b) {
    if (st_[r].has[b]) return true;
    violate(r, op, Property::kOwedOnce, ViolationClass::kMissingOutput,
            "reads " + T(b).name + ", which was never written");
    return false;
  }

  // training_ledger.cc: state, violations, scheduling, gradients.
  std::vector<int> storage(int p, int r) const;
  void violate(int r, const TrainingOp& op, Property p, ViolationClass cls, std::string detail,
               int token = -1, std::string term = {}, std::int64_t coef = 0);
  void wrongValue(int r, const TrainingOp& op, const Cell& c, int tensor, int unit,
                  std::uint64_t want);
  void put(int r, const TrainingOp& op, int buf, Buf cells);
  void addGrad(int r, const TrainingOp& op, int p, int unit, const std::vector<int>& tokens, int j);
  bool step(int r);
  void optimizerCheck();
  bool checkGradient(int r, const TensorInfo& t, const Slot& slot);
  std::vector<Run> expectedCoverage(const TensorInfo& t, int unit) const;

  // training_ledger_kernels.cc: compute ops, forward and backward.
  void forwardKernel(int r, const TrainingOp& op);
  bool checkTokenLocalInputs(int r, const TrainingOp& op);
  bool checkScanInputs(int r, const TrainingOp& op);
  bool checkGatedNormInputs(int r, const TrainingOp& op);
  bool checkAttentionInputs(int r, const TrainingOp& op);
  bool checkExpertInputs(int r, const TrainingOp& op);
  void writeForwardOutputs(int r, const TrainingOp& op);
  void backwardKernel(int r, const TrainingOp& op);
  bool checkOutputGradients(int r, const TrainingOp& op, const TrainingOp& f);
  void writeInputGradients(int r, const TrainingOp& op, const TrainingOp& f);
  void accumulateParamGradients(int r, const TrainingOp& op, const TrainingOp& f);
  std::set<int> srcs(const Buf& b) const;
  std::vector<int> headUnits(const Buf& b) const;
  bool rectangular(int r, const TrainingOp& op, const Buf& b, const std::string& what);
  bool sameTokens(int r, const TrainingOp& op, const Buf& b, const std::vector<int>& want,
                  const std::string& what);
  bool anyTpSharded(const TrainingOp& op) const;
  std::set<int> expectedUnits(int tensor, int r) const;
  bool checkSegments(int r, const TrainingOp& op);

  // training_ledger_local_ops.cc: slice and add rearrangements.
  void transform(int r, const TrainingOp& op);
  Buf repeatUnits(const TrainingOp& op, const Buf& in) const;
  bool keepOwnPiece(int r, const TrainingOp& op, const Buf& in, Buf& out);
  Buf sumRepeats(const TrainingOp& op, const Buf& in) const;
  bool reorder(int r, const TrainingOp& op, const Buf& in, Buf& out);
  Buf permuteByExpert(int r, const TrainingOp& op) const;
  bool sumOverExperts(int r, const TrainingOp& op, Buf& out);

  // training_ledger_collectives.cc: what each collective does to cells.
  void collective(const std::vector<int>& members);
  bool sameCollective(const GroupCall& g);
  bool reduceParamGrads(const GroupCall& g);
  const Buf& sent(const GroupCall& g, int i) const {
    return st_[g.members[i]].bufs[g.ops[i]->reads[0]];
  }
  bool exchange(const GroupCall& g, std::vector<Buf>& out);
  bool reduceCells(const GroupCall& g, std::vector<Buf>& out);
  bool scatterUneven(const GroupCall& g, const Buf& sum, std::vector<Buf>& out);
  bool seqToHead(const GroupCall& g, std::vector<Buf>& out);
  bool headToSeq(const GroupCall& g, std::vector<Buf>& out);
  void toExpert(const GroupCall& g, std::vector<Buf>& out) const;
  bool toSource(const GroupCall& g, std::vector<Buf>& out);
  bool receivedDeclaredSplits(const GroupCall& g, const std::vector<Buf>& out);
  void collectiveMismatch(const GroupCall& g, int i, const std::string& why);
  void pointToPoint(const GroupCall& g);
  /// A gradient buffer (`d:...`): a receive adds into it in backward.
  bool isGradient(int id) const { return T(root(id)).name.rfind("d:", 0) == 0; }

  const TrainingPlan& plan_;
  Layout lay_;
  int max_;
  int T_;
  std::vector<RankState> st_;
  LedgerResult result_;
};

}  // namespace seam::training
