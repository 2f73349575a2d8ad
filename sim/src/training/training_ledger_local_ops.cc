// The training ledger's local rearrangements (training_replay.h): slice and
// add ops that move a rank's own cells without any exchange (repeats of KV
// heads and B/C groups and their sums, the zigzag reorders, a rank's piece
// of a row, the MoE permute and its sum over k, the routing weights).
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "training/training_replay.h"

namespace seam::training {

void Replay::transform(int r, const TrainingOp& op) {
  RankState& s = st_[r];
  for (int b : op.reads) {
    if (!hasBuf(r, op, b)) return;
  }
  Buf out;
  switch (op.transform) {
    case Transform::kSliceParam:
      for (int p : op.params) s.slices[p] = op.unit_list;
      return;
    case Transform::kRepeat:
      out = repeatUnits(op, s.bufs[op.reads[0]]);
      break;
    case Transform::kRouteWeight:
      out = s.bufs[op.reads[0]];
      for (Cell& c : out) c.v = detail::fieldMul(c.v, routeWeight(op.layer, c.token, c.unit));
      break;
    case Transform::kScatterSeq:
      if (!keepOwnPiece(r, op, s.bufs[op.reads[0]], out)) return;
      break;
    case Transform::kSumRepeats:
      out = sumRepeats(op, s.bufs[op.reads[0]]);
      break;
    case Transform::kReorder:
      if (!reorder(r, op, s.bufs[op.reads[0]], out)) return;
      break;
    case Transform::kPermute:
      out = permuteByExpert(r, op);
      break;
    case Transform::kSumOverK:
      if (!sumOverExperts(r, op, out)) return;
      break;
    default:
      return;
  }
  put(r, op, op.writes[0], std::move(out));
}

/// repeat_interleave (label u * reps + i); `perm` = {1} asks for a tile
/// (label i * units + u), the order that breaks GQA grouping.
Buf Replay::repeatUnits(const TrainingOp& op, const Buf& in) const {
  Buf out;
  const bool tile = !op.perm.empty();
  const int units = T(op.reads[0]).units;
  for (const Cell& c : in) {
    for (int i = 0; i < op.reps; ++i) {
      Cell n = c;
      n.unit = static_cast<std::int16_t>(tile ? i * units + c.unit : c.unit * op.reps + i);
      out.push_back(n);
    }
  }
  if (tile) {  // each token's cells in label order, as the tiled tensor lays them out
    for (size_t a = 0; a < out.size();) {
      size_t b = a;
      while (b < out.size() && out[b].token == out[a].token) ++b;
      std::stable_sort(out.begin() + a, out.begin() + b,
                       [](const Cell& x, const Cell& y) { return x.unit < y.unit; });
      a = b;
    }
  }
  return out;
}

/// Keep the rank's piece of the rows (a split with no data exchange).
bool Replay::keepOwnPiece(int r, const TrainingOp& op, const Buf& in, Buf& out) {
  const std::vector<int> toks = distinctTokens(in);
  const int n = static_cast<int>(op.ranks.size());
  const int pos =
      static_cast<int>(std::find(op.ranks.begin(), op.ranks.end(), r) - op.ranks.begin());
  if (n < 1 || pos >= n || toks.size() % n != 0) {
    violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
            "splits rows it cannot split evenly");
    return false;
  }
  const size_t per = toks.size() / n;
  std::set<int> mine(toks.begin() + pos * per, toks.begin() + (pos + 1) * per);
  for (const Cell& c : in) {
    if (mine.count(c.token)) out.push_back(c);
  }
  return true;
}

/// The backward of a repeat: each token's replicas (those `perm` names, or
/// all) summed onto their source unit.
Buf Replay::sumRepeats(const TrainingOp& op, const Buf& in) const {
  Buf out;
  std::map<std::pair<int, int>, size_t> at;
  const int reps = T(op.reads[0]).reps;
  for (const Cell& c : in) {
    const int i = c.unit - c.src * reps;
    if (!op.perm.empty() && std::find(op.perm.begin(), op.perm.end(), i) == op.perm.end()) continue;
    auto key = std::make_pair(c.token, static_cast<int>(c.src));
    auto it = at.find(key);
    if (it == at.end()) {
      at[key] = out.size();
      Cell n = c;
      n.unit = c.src;
      out.push_back(n);
    } else {
      out[it->second].v = detail::fieldAdd(out[it->second].v, c.v);
    }
  }
  return out;
}

/// out[i] = in[perm[i]]; false when the permutation is not of the buffer's size.
bool Replay::reorder(int r, const TrainingOp& op, const Buf& in, Buf& out) {
  if (op.perm.size() != in.size()) {
    violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
            "a permutation of " + std::to_string(op.perm.size()) + " positions on " +
                std::to_string(in.size()) + " cells");
    return false;
  }
  for (int i : op.perm) out.push_back(in[i]);
  return true;
}

/// Forward: a token's cell copied to each of its top-k (token, expert)
/// cells (only the experts `unit_list` names when it is not empty: the
/// allgather dispatcher's local_map). Backward of the sum over k: each
/// (token, expert) cell of the second read gets its token's summed gradient.
Buf Replay::permuteByExpert(int r, const TrainingOp& op) const {
  const RankState& s = st_[r];
  Buf out;
  const auto& keep = op.unit_list;
  if (op.reads.size() == 1) {
    for (const Cell& c : s.bufs[op.reads[0]]) {
      for (int e : lay_.route(op.layer, c.token)) {
        if (!keep.empty() && std::find(keep.begin(), keep.end(), e) == keep.end()) continue;
        Cell n = c;
        n.unit = static_cast<std::int16_t>(e);
        n.src = 0;
        out.push_back(n);
      }
    }
    return out;
  }
  std::map<int, std::uint64_t> val;
  for (const Cell& c : s.bufs[op.reads[0]]) val[c.token] = detail::fieldAdd(val[c.token], c.v);
  for (const Cell& c : s.bufs[op.reads[1]]) {
    Cell n = c;
    n.v = val.count(c.token) ? val[c.token] : 0;
    out.push_back(n);
  }
  return out;
}

/// Unpermute: each token of the second read gets the sum of its (token,
/// expert) cells; false when cells of a token the rank does not hold came back.
bool Replay::sumOverExperts(int r, const TrainingOp& op, Buf& out) {
  const RankState& s = st_[r];
  std::map<int, std::uint64_t> val;
  for (const Cell& c : s.bufs[op.reads[0]]) val[c.token] = detail::fieldAdd(val[c.token], c.v);
  for (int t : distinctTokens(s.bufs[op.reads[1]])) {
    out.push_back(Cell{t, 0, 0, -1, val.count(t) ? val[t] : 0});
    val.erase(t);
  }
  if (!val.empty()) {
    violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
            "expert outputs of token " + std::to_string(val.begin()->first) +
                " came back to a rank that does not hold it",
            val.begin()->first);
    return false;
  }
  return true;
}

}  // namespace seam::training
