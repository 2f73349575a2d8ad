// The training ledger's compute ops (training_replay.h). A forward kernel
// checks that its inputs hold complete values on the layout its kernel
// assumes (tokens and their order, the units the rank owns, the document
// resets) and writes fresh terms; a backward kernel checks the gradients of
// what its forward wrote, writes the gradients of what its forward read, and
// adds its tokens to the parameters' gradient accumulators.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "training/training_replay.h"

namespace seam::training {

std::set<int> Replay::srcs(const Buf& b) const {
  std::set<int> s;
  for (const Cell& c : b) s.insert(c.src);
  return s;
}

std::vector<int> Replay::headUnits(const Buf& b) const {
  std::set<int> s = srcs(b);
  return {s.begin(), s.end()};
}

/// Every token carries the same units; false (and a violation) otherwise.
bool Replay::rectangular(int r, const TrainingOp& op, const Buf& b, const std::string& what) {
  std::map<int, std::vector<int>> per;
  for (const Cell& c : b) per[c.token].push_back(c.unit);
  const std::vector<int>* first = nullptr;
  for (auto& [t, u] : per) {
    if (!first) first = &u;
    if (u != *first) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
              what + ": token " + std::to_string(t) + " carries other units than its neighbours",
              t);
      return false;
    }
  }
  return true;
}

/// The buffer's tokens are `want`, in that order; false (and a violation
/// naming the first misplaced token) otherwise.
bool Replay::sameTokens(int r, const TrainingOp& op, const Buf& b, const std::vector<int>& want,
                        const std::string& what) {
  const std::vector<int> got = distinctTokens(b);
  if (got == want) return true;
  std::string d = what + ": holds " + std::to_string(got.size()) + " tokens, the kernel assumes " +
                  std::to_string(want.size());
  int tok = -1;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (got[i] != want[i]) {
      d += "; position " + std::to_string(i) + " holds token " + std::to_string(got[i]) +
           " where token " + std::to_string(want[i]) +
           " belongs (order not restored, or the wrong shard)";
      tok = got[i];
      break;
    }
  }
  violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch, d, tok);
  return false;
}

bool Replay::anyTpSharded(const TrainingOp& op) const {
  for (int p : op.params) {
    if (T(p).tp_sharded && lay_.config().tp > 1) return true;
  }
  return false;
}

/// The units of `tensor` a GEMM on rank r reads or writes (its tp split).
std::set<int> Replay::expectedUnits(int tensor, int r) const {
  const TensorInfo& t = T(tensor);
  std::set<int> s;
  int lo = 0, n = t.units;
  if (t.tp_split && lay_.config().tp > 1) {
    n = t.units / lay_.config().tp;
    lo = lay_.coord(r).tp * n;
  }
  for (int u = lo; u < lo + n; ++u) s.insert(u);
  return s;
}

/// The kernel's cu_seqlens are the row's global document boundaries.
bool Replay::checkSegments(int r, const TrainingOp& op) {
  const std::vector<int> want = lay_.globalSegments();
  if (op.segments == want) return true;
  std::string g, w;
  for (int x : op.segments) g += (g.empty() ? "" : ",") + std::to_string(x);
  for (int x : want) w += (w.empty() ? "" : ",") + std::to_string(x);
  violate(r, op, Property::kOwedOnce, ViolationClass::kResetLeak,
          "the kernel resets at [" + g + "] but the row's documents end at [" + w +
              "]: state leaks across a document or resets inside one (boundaries must be global, "
              "pre-shard)");
  return false;
}

void Replay::forwardKernel(int r, const TrainingOp& op) {
  RankState& s = st_[r];
  for (int b : op.reads) {
    if (!hasBuf(r, op, b)) return;
  }
  // Values: every read cell complete.
  for (int b : op.reads) {
    const int rt = root(b);
    for (const Cell& c : s.bufs[b]) {
      if (!checkValue(r, op, c, rt, c.src)) return;
    }
  }
  bool ok = true;
  switch (op.kernel) {
    case Kernel::kNorm:
    case Kernel::kLinear:
    case Kernel::kAdd:
    case Kernel::kRouter:
    case Kernel::kLoss:
      ok = checkTokenLocalInputs(r, op);
      break;
    case Kernel::kConv:
    case Kernel::kSsd:
      ok = checkScanInputs(r, op);
      break;
    case Kernel::kGatedNorm:
      ok = checkGatedNormInputs(r, op);
      break;
    case Kernel::kAttention:
      ok = checkAttentionInputs(r, op);
      break;
    case Kernel::kExperts:
      ok = checkExpertInputs(r, op);
      break;
    case Kernel::kNone:
      break;
  }
  if (ok) writeForwardOutputs(r, op);
}

/// Norms, GEMMs, adds, the router and the loss: the rank's own tokens (all
/// of its CP shard under TP-sharded weights), every token the same units,
/// the units the rank's GEMM shard owns.
bool Replay::checkTokenLocalInputs(int r, const TrainingOp& op) {
  const RankState& s = st_[r];
  const std::vector<int>& want = anyTpSharded(op) ? lay_.cpTokens(r) : lay_.localTokens(r);
  for (int b : op.reads) {
    if (!sameTokens(r, op, s.bufs[b], want, T(b).name)) return false;
    if (!rectangular(r, op, s.bufs[b], T(b).name)) return false;
    const std::set<int> u = srcs(s.bufs[b]);
    const std::set<int> e = expectedUnits(root(b), r);
    if (T(root(b)).routed_from < 0 && u != e) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
              T(b).name + " holds " + std::to_string(u.size()) + " units where the GEMM needs " +
                  std::to_string(e.size()) + " (the rank's own)");
      return false;
    }
  }
  return true;
}

/// Mamba's causal conv1d and SSD scan: the whole row in global order, the
/// rank's own head block with the B/C groups its heads use (parameters
/// sliced to match), resets at the row's documents.
bool Replay::checkScanInputs(int r, const TrainingOp& op) {
  const RankState& s = st_[r];
  const training::Coord& co = lay_.coord(r);
  const std::vector<int> row = lay_.rowTokens(r);
  std::vector<int> heads;
  for (int b : op.reads) {
    if (!sameTokens(r, op, s.bufs[b], row, T(b).name + " (conv/SSD need the row in global order)"))
      return false;
    if (!rectangular(r, op, s.bufs[b], T(b).name)) return false;
    if (T(b).space == Space::kHeads && heads.empty()) heads = headUnits(s.bufs[b]);
  }
  const int mine = co.tp * lay_.config().cp + co.cp;
  if (heads != std::vector<int>{mine}) {
    violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
            "holds Mamba head blocks other than its own (block " + std::to_string(mine) + ")");
    return false;
  }
  const std::vector<int> groups = lay_.groupsOfBlock(mine);
  for (int b : op.reads) {
    const std::vector<int> u = headUnits(s.bufs[b]);
    if (T(b).space == Space::kHeads && u != heads) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
              T(b).name +
                  " holds other heads than x: ownership after seq->head differs between tensors");
      return false;
    }
    if (T(b).space == Space::kGroups && u != groups) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
              T(b).name + " holds B/C groups that are not the groups of the rank's heads");
      return false;
    }
  }
  for (int p : op.params) {
    const std::vector<int>& sl = s.slices[p];
    const std::vector<int>& want = T(p).space == Space::kGroups ? groups : heads;
    if (sl != want) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
              "uses " + T(p).name + (sl.empty() ? " unsliced" : " sliced to other units") +
                  " where the rank holds heads " + std::to_string(heads.front()));
      return false;
    }
  }
  return checkSegments(r, op);
}

/// Mamba's gated RMSNorm: the row or the CP shard, the same heads in every
/// input, whole norm groups (d_in / G each) on the rank.
bool Replay::checkGatedNormInputs(int r, const TrainingOp& op) {
  const RankState& s = st_[r];
  const std::vector<int> row = lay_.rowTokens(r);
  const Buf& y = s.bufs[op.reads[0]];
  const std::vector<int> got = distinctTokens(y);
  if (got != row && got != lay_.cpTokens(r)) {
    sameTokens(r, op, y, row, T(op.reads[0]).name);
    return false;
  }
  for (int b : op.reads) {
    if (!rectangular(r, op, s.bufs[b], T(b).name)) return false;
  }
  const std::vector<int> heads = headUnits(y);
  for (int b : op.reads) {
    if (headUnits(s.bufs[b]) != heads) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
              T(b).name + " holds other heads than y");
      return false;
    }
  }
  const auto& d = lay_.dims();
  const int blocks = lay_.headBlocks();
  const int hb = d.mamba_heads / blocks;
  const int per_group = d.mamba_heads / lay_.groupUnits();
  std::set<int> held(heads.begin(), heads.end());
  for (int b : heads) {
    const int g0 = b * hb / per_group, g1 = ((b + 1) * hb - 1) / per_group;
    for (int h = g0 * per_group; h < (g1 + 1) * per_group; ++h) {
      if (!held.count(h / hb)) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                "a norm group straddles ranks: head " + std::to_string(h) +
                    " of its group is elsewhere");
        return false;
      }
    }
  }
  for (int p : op.params) {
    if (!s.slices[p].empty() && s.slices[p] != heads) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
              "uses " + T(p).name + " sliced to other heads");
      return false;
    }
  }
  return true;
}

/// Varlen attention: queries on the row or the CP shard, every key of the
/// row exactly once (in order when the queries are the whole row), the KV
/// heads the rank's q heads attend, resets at the row's documents. After q
/// the reads are K's chunks then V's, as many of each: one (the whole row,
/// or Ulysses' heads) or one per CP rank (TE's p2p ring), whose keys
/// together are the row's.
bool Replay::checkAttentionInputs(int r, const TrainingOp& op) {
  const RankState& s = st_[r];
  const std::vector<int> row = lay_.rowTokens(r);
  const Buf& q = s.bufs[op.reads[0]];
  const std::vector<int> qt = distinctTokens(q);
  if (qt != row && qt != lay_.cpTokens(r)) {
    sameTokens(r, op, q, row, T(op.reads[0]).name);
    return false;
  }
  if (!rectangular(r, op, q, "q")) return false;
  std::set<int> need;
  for (int h : headUnits(q)) need.insert(lay_.kvOfQ(h));
  const size_t chunks = (op.reads.size() - 1) / 2;
  for (size_t first = 1; first + chunks <= op.reads.size() && chunks > 0; first += chunks) {
    std::vector<int> keys;
    for (size_t i = first; i < first + chunks; ++i) {
      const Buf& kv = s.bufs[op.reads[i]];
      const std::string what = T(op.reads[i]).name;
      if (!rectangular(r, op, kv, what)) return false;
      if (qt == row && chunks == 1 && !sameTokens(r, op, kv, row, "keys")) return false;
      const std::vector<int> t = distinctTokens(kv);
      keys.insert(keys.end(), t.begin(), t.end());
      if (need != srcs(kv)) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                "the q heads on this rank attend KV heads other than the ones it holds in " + what +
                    " (GQA grouping broken)");
        return false;
      }
    }
    std::sort(keys.begin(), keys.end());
    if (keys != row) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
              T(op.reads[first]).name +
                  (chunks > 1 ? " and the ring's other chunks" : std::string()) +
                  ": the keys are not every token of the row exactly once");
      return false;
    }
  }
  return checkSegments(r, op);
}

/// Grouped experts: every (token, expert) cell on the rank that owns the expert.
bool Replay::checkExpertInputs(int r, const TrainingOp& op) {
  const training::Coord& co = lay_.coord(r);
  for (const Cell& c : st_[r].bufs[op.reads[0]]) {
    if (lay_.expertOwner(c.unit) != (lay_.config().ep > 1 ? co.ep : 0)) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
              "token " + std::to_string(c.token) + " for expert " + std::to_string(c.unit) +
                  " reached a rank that does not own the expert",
              c.token);
      return false;
    }
  }
  return true;
}

/// Fresh terms of every tensor the kernel writes: on its input's cells
/// (kernels that keep the layout they read), or on the rank's tokens and
/// the units its GEMM shard owns.
void Replay::writeForwardOutputs(int r, const TrainingOp& op) {
  const RankState& s = st_[r];
  for (size_t w = 0; w < op.writes.size(); ++w) {
    const int id = op.writes[w];
    const TensorInfo& t = T(id);
    const int j = t.shards > 1 ? op.shard : 0;
    Buf out;
    const bool mirror = op.kernel == Kernel::kConv || op.kernel == Kernel::kSsd ||
                        op.kernel == Kernel::kGatedNorm || op.kernel == Kernel::kAttention ||
                        op.kernel == Kernel::kExperts;
    if (mirror) {
      const Buf& in = s.bufs[op.reads[std::min(w, op.reads.size() - 1)]];
      out.reserve(in.size());
      for (const Cell& c : in) {
        Cell n = c;
        if (op.kernel == Kernel::kExperts) n.src = n.unit;  // expert e's output, a unit of its own
        // A kernel's output on a replica is the rank's own copy: canonical units.
        if (T(op.reads[std::min(w, op.reads.size() - 1)]).reps > 1) n.unit = n.src;
        n.v = termHash(id, c.token, n.src, j);
        out.push_back(n);
      }
    } else {
      const std::vector<int>& toks =
          op.reads.empty() ? (anyTpSharded(op) ? lay_.cpTokens(r) : lay_.localTokens(r))
                           : distinctTokens(s.bufs[op.reads[0]]);
      const std::set<int> units = expectedUnits(id, r);
      out.reserve(toks.size() * units.size());
      for (int tok : toks) {
        for (int u : units)
          out.push_back(Cell{tok, static_cast<std::int16_t>(u), static_cast<std::int16_t>(u), -1,
                             termHash(id, tok, u, j)});
      }
    }
    put(r, op, id, std::move(out));
  }
}

void Replay::backwardKernel(int r, const TrainingOp& op) {
  const TrainingOp& f = plan_.ranks[r][op.conj_of];
  if (!checkOutputGradients(r, op, f)) return;
  writeInputGradients(r, op, f);
  accumulateParamGradients(r, op, f);
}

/// The gradients of what the forward kernel wrote: complete, on its layout
/// (a routed gradient: the MoE sum's, scaled once by the routing weight).
bool Replay::checkOutputGradients(int r, const TrainingOp& op, const TrainingOp& f) {
  const RankState& s = st_[r];
  for (size_t i = 0; i < op.reads.size(); ++i) {
    const int b = op.reads[i];
    if (!hasBuf(r, op, b)) return false;
    const int w = f.writes[i];
    const Buf& fw = s.bufs[w];
    const Buf& g = s.bufs[b];
    bool same = fw.size() == g.size();
    for (size_t k = 0; same && k < g.size(); ++k)
      same = fw[k].token == g[k].token && fw[k].unit == g[k].unit;
    if (!same) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
              T(b).name + " is not on the layout of the forward " + T(w).name);
      return false;
    }
    const bool routed = T(w).grad_value >= 0;
    const int want = routed ? T(w).grad_value : root(b);
    for (const Cell& c : g) {
      if (routed) {
        const std::uint64_t wt = routeWeight(T(w).layer, c.token, c.unit);
        if (detail::fieldMul(complete(want, c.token, 0), wt) == c.v) continue;
        violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                "reads the gradient of expert " + std::to_string(c.unit) + "'s output for token " +
                    std::to_string(c.token) + " not scaled exactly once by its routing weight",
                c.token, T(want).name, 1);
        return false;
      }
      if (!checkValue(r, op, c, want, c.src)) return false;
    }
  }
  return true;
}

/// Fresh gradient terms of what the forward kernel read, on its layout (j:
/// the consumer's slot among the root's consumers, or the expert's).
void Replay::writeInputGradients(int r, const TrainingOp& op, const TrainingOp& f) {
  const RankState& s = st_[r];
  for (size_t i = 0; i < op.writes.size(); ++i) {
    const int b = op.writes[i];
    const int fr = f.reads[i];
    const int g = root(b);
    const bool routed = f.kernel == Kernel::kExperts;
    const int reps = T(fr).reps;
    Buf out = s.bufs[fr];
    for (Cell& c : out) {
      const int j = routed ? kRoutedJ + c.unit * lay_.config().expertTp() + f.shard
                           : f.grad_j[i] + (c.unit - c.src * reps);
      if (routed) c.src = 0;
      c.v = termHash(g, c.token, c.src, j);
    }
    put(r, op, b, std::move(out));
  }
}

/// Parameter gradients: this kernel's tokens, on the units it used.
void Replay::accumulateParamGradients(int r, const TrainingOp& op, const TrainingOp& f) {
  const RankState& s = st_[r];
  const Buf* base =
      !f.reads.empty() ? &s.bufs[f.reads[0]] : (!f.writes.empty() ? &s.bufs[f.writes[0]] : nullptr);
  if (!base) return;
  const std::vector<int> toks = distinctTokens(*base);
  for (int p : f.params) {
    const TensorInfo& t = T(p);
    int j = t.shards > 1 ? f.shard : 0;
    if (t.space == Space::kGroups && t.shards > 1) {
      // A replicated group: this rank's replica index.
      for (int rd : f.reads) {
        if (T(rd).space == Space::kGroups && T(rd).reps > 1 && !s.bufs[rd].empty()) {
          const Cell& c = s.bufs[rd].front();
          j = c.unit - c.src * T(rd).reps;
          break;
        }
      }
    }
    if (t.routed_param) {
      std::map<int, std::vector<int>> per;
      for (const Cell& c : *base) per[c.unit].push_back(c.token);
      for (auto& [u, ts] : per) addGrad(r, op, p, u, ts, j);
      continue;
    }
    std::vector<int> units;
    if (!s.slices[p].empty()) {
      units = s.slices[p];
    } else if (t.space == Space::kHeads || t.space == Space::kGroups) {
      for (int rd : f.reads) {
        if (T(rd).space == t.space) {
          units = headUnits(s.bufs[rd]);
          break;
        }
      }
    } else {
      units = {t.tp_sharded && lay_.config().tp > 1 ? lay_.coord(r).tp : 0};
    }
    for (int u : units) addGrad(r, op, p, u, toks, j);
  }
}

}  // namespace seam::training
