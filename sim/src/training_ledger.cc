// The training ledger (training.h): replays a training plan over symbolic
// cells. A cell is (token, unit label, source unit, sender) with a value: a
// fingerprint in GF(2^61 - 1) of its integer combination of terms
// term(tensor, token, unit, j). Collectives act on cells exactly as the real
// collective acts on positions; kernels check their inputs (complete values,
// the token order and document resets their kernel assumes, the heads the
// rank owns) and write fresh terms; backward kernels write gradient terms and
// add each token's contribution to the parameters' gradient accumulators,
// which the optimizer-step check compares with "every token exactly once".
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "seam/sim/training.h"
#include "training_layout.h"

namespace seam {

namespace {

using training::Layout;

constexpr std::uint64_t kP = (1ULL << 61) - 1;
/// The j of an expert's contribution to a routed gradient: kRoutedJ + expert.
constexpr int kRoutedJ = 2048;
std::uint64_t addm(std::uint64_t a, std::uint64_t b) {
  std::uint64_t s = a + b;
  return s >= kP ? s - kP : s;
}
std::uint64_t subm(std::uint64_t a, std::uint64_t b) { return a >= b ? a - b : a + kP - b; }
std::uint64_t mulm(std::uint64_t a, std::uint64_t b) {
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  std::uint64_t lo = static_cast<std::uint64_t>(p & kP), hi = static_cast<std::uint64_t>(p >> 61);
  return addm(lo, hi);
}
std::uint64_t termHash(int tensor, int token, int unit, int j) {
  std::uint64_t x = (static_cast<std::uint64_t>(tensor) << 48) ^ (static_cast<std::uint64_t>(token) << 24) ^
                    (static_cast<std::uint64_t>(unit) << 12) ^ static_cast<std::uint64_t>(j) ^
                    (static_cast<std::uint64_t>(j) << 60);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return (x % (kP - 1)) + 1;
}

/// The routing weight of (layer, token, expert) as a field element: the
/// weights are symbolic scalars, so a weight applied twice or not at all
/// leaves a value no complete combination has.
std::uint64_t routeWeight(int layer, int token, int expert) {
  return termHash(0x7fff, token, expert, 2048 + layer) % (kP - 2) + 2;
}

struct Cell {
  int token = 0;
  std::int16_t unit = 0;  ///< the label: where in the tensor's unit space it sits
  std::int16_t src = 0;   ///< the unit whose value it is (differs for replicas)
  std::int16_t from = -1; ///< the rank that sent it in the last all-to-all
  std::uint64_t v = 0;
};
using Buf = std::vector<Cell>;

struct Run {
  int lo, hi, coef;
};
struct Slot {
  int unit = 0;                               ///< the unit this storage position holds
  std::vector<std::pair<int, std::vector<Run>>> parts;  ///< (unit of the contribution, its coverage)
};

struct RankState {
  std::vector<Buf> bufs;
  std::vector<char> has;
  std::vector<std::vector<int>> slices;  // per param
  std::vector<std::vector<Slot>> grads;  // per param (empty: not a param)
  size_t pc = 0;
};

std::vector<int> distinctTokens(const Buf& b) {
  std::vector<int> out;
  for (const Cell& c : b) {
    if (out.empty() || out.back() != c.token) {
      out.push_back(c.token);
    }
  }
  return out;
}

class Replay {
 public:
  Replay(const TrainingPlan& plan, int max_violations)
      : plan_(plan), lay_(plan.source), max_(max_violations), T_(lay_.tokens() * lay_.replicas()) {
    st_.resize(plan.world());
    for (RankState& s : st_) {
      s.bufs.resize(plan.tensors.size());
      s.has.assign(plan.tensors.size(), 0);
      s.slices.resize(plan.tensors.size());
      s.grads.resize(plan.tensors.size());
    }
    for (int r = 0; r < plan.world(); ++r) {
      for (size_t p = 0; p < plan.tensors.size(); ++p) {
        if (plan.tensors[p].name.rfind("param:", 0) != 0) continue;
        for (int u : storage(static_cast<int>(p), r)) st_[r].grads[p].push_back(Slot{u, {}});
      }
    }
  }

  LedgerResult run();

 private:
  const TensorInfo& T(int id) const { return plan_.tensors[id]; }
  int root(int id) const {
    while (T(id).value_of >= 0) id = T(id).value_of;
    return id;
  }
  bool done() const { return static_cast<int>(result_.violations.size()) >= max_; }

  std::vector<int> storage(int p, int r) const {
    const TensorInfo& t = T(p);
    const training::Coord& c = lay_.coord(r);
    int lo = 0, n = t.units;
    if (t.tp_sharded && lay_.config().tp > 1) {
      n = t.units / lay_.config().tp;
      lo = c.tp * n;
    }
    if (t.ep_sharded && lay_.config().ep > 1) {
      n = t.units / lay_.config().ep;
      lo = c.ep * n;
    }
    std::vector<int> out(n);
    std::iota(out.begin(), out.end(), lo);
    return out;
  }

  /// The complete value of a tensor's (token, unit).
  std::uint64_t complete(int id, int token, int unit) const {
    const TensorInfo& t = T(id);
    std::uint64_t v = 0;
    if (t.routed_from >= 0) {
      for (int e : lay_.route(t.layer, token)) {
        v = addm(v, mulm(routeWeight(t.layer, token, e), complete(t.routed_from, token, e)));
      }
      return v;
    }
    if (t.routed_grad) {
      for (int e : lay_.route(t.layer, token)) v = addm(v, termHash(id, token, unit, kRoutedJ + e));
    }
    for (int j = 0; j < t.shards; ++j) v = addm(v, termHash(id, token, unit, j));
    return v;
  }

  void violate(int r, const TrainingOp& op, Property p, ViolationClass cls, std::string detail, int token = -1,
               std::string term = {}, std::int64_t coef = 0) {
    if (done()) return;
    Violation v;
    v.property = p;
    v.cls = cls;
    v.rank = r;
    v.op_index = static_cast<int>(st_[r].pc);
    v.layer = op.layer;
    v.stage = op.layer;
    v.phase = op.pass == Pass::kForward ? Phase::kCompute : Phase::kExit;
    v.op = op.kind;
    v.token = token;
    v.term = std::move(term);
    v.coefficient = coef;
    v.detail = std::string(op.pass == Pass::kForward ? "forward " : "backward ") + op.step +
               (op.layer >= 0 ? " (layer " + std::to_string(op.layer) + " '" + std::string(1, op.block) + "')" : "") +
               ": " + detail;
    result_.violations.push_back(std::move(v));
  }

  /// Compares a cell's value with the complete value; violation on mismatch.
  bool checkValue(int r, const TrainingOp& op, const Cell& c, int tensor, int unit) {
    const std::uint64_t want = complete(tensor, c.token, unit);
    if (c.v == want) return true;
    const TensorInfo& t = T(tensor);
    const std::string term = t.name + "(t" + std::to_string(c.token) + ", u" + std::to_string(unit) + ")";
    if (c.v == 0) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kNeverCompleted, "reads " + term + " with no contribution",
              c.token, term, 0);
      return false;
    }
    for (int k = 2; k <= 64; ++k) {
      if (c.v == mulm(want, k)) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kCountedTwice,
                "reads " + term + " counted " + std::to_string(k) + " times (reduced more than once)", c.token, term, k);
        return false;
      }
    }
    const int n = t.routed_grad || t.routed_from >= 0 ? 0 : t.shards;
    for (int j = 0; j < n && n <= 256; ++j) {
      const std::uint64_t h = termHash(tensor, c.token, unit, j);
      if (c.v == h || c.v == subm(want, h)) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kNeverCompleted,
                "reads " + term + (c.v == h ? " holding only contribution " : " missing contribution ") +
                    std::to_string(j) + " of " + std::to_string(n) + ": a sum over a group was never completed",
                c.token, term, c.v == h ? 1 : 0);
        return false;
      }
    }
    violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
            "reads " + term + " holding terms of other tokens, units or contributions (wrong group, chunk or replica)",
            c.token, term, 1);
    return false;
  }

  std::set<int> srcs(const Buf& b) const {
    std::set<int> s;
    for (const Cell& c : b) s.insert(c.src);
    return s;
  }
  /// Every token carries the same units; false (and a violation) otherwise.
  bool rectangular(int r, const TrainingOp& op, const Buf& b, const std::string& what) {
    std::map<int, std::vector<int>> per;
    for (const Cell& c : b) per[c.token].push_back(c.unit);
    const std::vector<int>* first = nullptr;
    for (auto& [t, u] : per) {
      if (!first) first = &u;
      if (u != *first) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
                what + ": token " + std::to_string(t) + " carries other units than its neighbours", t);
        return false;
      }
    }
    return true;
  }
  bool sameTokens(int r, const TrainingOp& op, const Buf& b, const std::vector<int>& want, const std::string& what) {
    const std::vector<int> got = distinctTokens(b);
    if (got == want) return true;
    std::string d = what + ": holds " + std::to_string(got.size()) + " tokens, the kernel assumes " +
                    std::to_string(want.size());
    int tok = -1;
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
      if (got[i] != want[i]) {
        d += "; position " + std::to_string(i) + " holds token " + std::to_string(got[i]) + " where token " +
             std::to_string(want[i]) + " belongs (order not restored, or the wrong shard)";
        tok = got[i];
        break;
      }
    }
    violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch, d, tok);
    return false;
  }
  bool hasBuf(int r, const TrainingOp& op, int b) {
    if (st_[r].has[b]) return true;
    violate(r, op, Property::kOwedOnce, ViolationClass::kMissingOutput, "reads " + T(b).name + ", which was never written");
    return false;
  }
  bool anyTpSharded(const TrainingOp& op) const {
    for (int p : op.params) {
      if (T(p).tp_sharded && lay_.config().tp > 1) return true;
    }
    return false;
  }
  std::set<int> expectedUnits(int tensor, int r) const {
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
  bool checkSegments(int r, const TrainingOp& op) {
    const std::vector<int> want = lay_.globalSegments();
    if (op.segments == want) return true;
    std::string g, w;
    for (int x : op.segments) g += (g.empty() ? "" : ",") + std::to_string(x);
    for (int x : want) w += (w.empty() ? "" : ",") + std::to_string(x);
    violate(r, op, Property::kOwedOnce, ViolationClass::kResetLeak,
            "the kernel resets at [" + g + "] but the row's documents end at [" + w +
                "]: state leaks across a document or resets inside one (boundaries must be global, pre-shard)");
    return false;
  }

  void forwardKernel(int r, const TrainingOp& op);
  void backwardKernel(int r, const TrainingOp& op);
  void transform(int r, const TrainingOp& op);
  void collective(const std::vector<int>& members);
  bool step(int r);
  void put(int r, const TrainingOp& op, int buf, Buf cells);
  void addGrad(int r, const TrainingOp& op, int p, int unit, const std::vector<int>& tokens, int j);
  void optimizerCheck();
  std::vector<int> headUnits(const Buf& b) const {
    std::set<int> s = srcs(b);
    return {s.begin(), s.end()};
  }

  const TrainingPlan& plan_;
  Layout lay_;
  int max_;
  int T_;
  std::vector<RankState> st_;
  LedgerResult result_;
};

void Replay::put(int r, const TrainingOp& op, int buf, Buf cells) {
  RankState& s = st_[r];
  const bool in_place = std::find(op.reads.begin(), op.reads.end(), buf) != op.reads.end();
  if (op.pass == Pass::kBackward && s.has[buf] && !in_place) {
    Buf& old = s.bufs[buf];
    bool same = old.size() == cells.size();
    for (size_t i = 0; same && i < old.size(); ++i) same = old[i].token == cells[i].token && old[i].unit == cells[i].unit;
    if (!same) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
              "accumulates into " + T(buf).name + " with a different layout of tokens and units");
      return;
    }
    for (size_t i = 0; i < old.size(); ++i) old[i].v = addm(old[i].v, cells[i].v);
    return;
  }
  s.bufs[buf] = std::move(cells);
  s.has[buf] = 1;
}

void Replay::addGrad(int r, const TrainingOp& op, int p, int unit, const std::vector<int>& tokens, int j) {
  std::vector<Slot>& slots = st_[r].grads[p];
  Slot* slot = nullptr;
  for (Slot& s : slots) {
    if (s.unit == unit) slot = &s;
  }
  if (!slot) {
    violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
            "writes the gradient of " + T(p).name + " unit " + std::to_string(unit) + ", which this rank does not store");
    return;
  }
  std::vector<int> keys;
  keys.reserve(tokens.size());
  for (int t : tokens) keys.push_back(j * T_ + t);
  std::sort(keys.begin(), keys.end());
  std::vector<Run>* cov = nullptr;
  for (auto& [u, c] : slot->parts) {
    if (u == unit) cov = &c;
  }
  if (!cov) {
    slot->parts.push_back({unit, {}});
    cov = &slot->parts.back().second;
  }
  for (size_t i = 0; i < keys.size();) {
    size_t k = i + 1;
    while (k < keys.size() && keys[k] == keys[k - 1] + 1) ++k;
    cov->push_back({keys[i], keys[k - 1] + 1, 1});
    i = k;
  }
}

void Replay::forwardKernel(int r, const TrainingOp& op) {
  RankState& s = st_[r];
  const training::Coord& co = lay_.coord(r);
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
  const std::vector<int> row = lay_.rowTokens(r);
  auto isSpace = [&](int b, Space sp) { return T(b).space == sp; };
  switch (op.kernel) {
    case Kernel::kNorm:
    case Kernel::kLinear:
    case Kernel::kAdd:
    case Kernel::kRouter:
    case Kernel::kLoss: {
      const std::vector<int>& want = anyTpSharded(op) ? lay_.cpTokens(r) : lay_.localTokens(r);
      for (int b : op.reads) {
        if (!sameTokens(r, op, s.bufs[b], want, T(b).name)) return;
        if (!rectangular(r, op, s.bufs[b], T(b).name)) return;
        const std::set<int> u = srcs(s.bufs[b]);
        const std::set<int> e = expectedUnits(root(b), r);
        if (T(root(b)).routed_from < 0 && u != e) {
          violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
                  T(b).name + " holds " + std::to_string(u.size()) + " units where the GEMM needs " +
                      std::to_string(e.size()) + " (the rank's own)");
          return;
        }
      }
      break;
    }
    case Kernel::kConv:
    case Kernel::kSsd: {
      std::vector<int> heads;
      for (int b : op.reads) {
        if (!sameTokens(r, op, s.bufs[b], row, T(b).name + " (conv/SSD need the row in global order)")) return;
        if (!rectangular(r, op, s.bufs[b], T(b).name)) return;
        if (isSpace(b, Space::kHeads) && heads.empty()) heads = headUnits(s.bufs[b]);
      }
      const int mine = co.tp * lay_.config().cp + co.cp;
      if (heads != std::vector<int>{mine}) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                "holds Mamba head blocks other than its own (block " + std::to_string(mine) + ")");
        return;
      }
      const std::vector<int> groups = lay_.groupsOfBlock(mine);
      for (int b : op.reads) {
        const std::vector<int> u = headUnits(s.bufs[b]);
        if (isSpace(b, Space::kHeads) && u != heads) {
          violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                  T(b).name + " holds other heads than x: ownership after seq->head differs between tensors");
          return;
        }
        if (isSpace(b, Space::kGroups) && u != groups) {
          violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                  T(b).name + " holds B/C groups that are not the groups of the rank's heads");
          return;
        }
      }
      for (int p : op.params) {
        const std::vector<int>& sl = s.slices[p];
        const std::vector<int>& want = T(p).space == Space::kGroups ? groups : heads;
        if (sl != want) {
          violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                  "uses " + T(p).name + (sl.empty() ? " unsliced" : " sliced to other units") +
                      " where the rank holds heads " + std::to_string(heads.front()));
          return;
        }
      }
      if (!checkSegments(r, op)) return;
      break;
    }
    case Kernel::kGatedNorm: {
      const Buf& y = s.bufs[op.reads[0]];
      const std::vector<int> got = distinctTokens(y);
      if (got != row && got != lay_.cpTokens(r)) {
        sameTokens(r, op, y, row, T(op.reads[0]).name);
        return;
      }
      for (int b : op.reads) {
        if (!rectangular(r, op, s.bufs[b], T(b).name)) return;
      }
      const std::vector<int> heads = headUnits(y);
      for (int b : op.reads) {
        if (headUnits(s.bufs[b]) != heads) {
          violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm, T(b).name + " holds other heads than y");
          return;
        }
      }
      // Norm groups (d_in / G each) must lie whole on the rank.
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
                    "a norm group straddles ranks: head " + std::to_string(h) + " of its group is elsewhere");
            return;
          }
        }
      }
      for (int p : op.params) {
        if (!s.slices[p].empty() && s.slices[p] != heads) {
          violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm, "uses " + T(p).name + " sliced to other heads");
          return;
        }
      }
      break;
    }
    case Kernel::kAttention: {
      const Buf& q = s.bufs[op.reads[0]];
      const Buf& kv = s.bufs[op.reads[1]];
      const std::vector<int> qt = distinctTokens(q);
      if (qt != row && qt != lay_.cpTokens(r)) {
        sameTokens(r, op, q, row, T(op.reads[0]).name);
        return;
      }
      if (!rectangular(r, op, q, "q") || !rectangular(r, op, kv, "kv")) return;
      std::vector<int> kt = distinctTokens(kv);
      if (qt == row) {
        if (!sameTokens(r, op, kv, row, "keys")) return;
      } else {
        std::vector<int> sorted = kt;
        std::sort(sorted.begin(), sorted.end());
        if (sorted != row) {
          violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
                  "the keys are not every token of the row exactly once");
          return;
        }
      }
      std::set<int> need;
      for (int h : headUnits(q)) need.insert(lay_.kvOfQ(h));
      const std::set<int> have = srcs(kv);
      if (need != have) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                "the q heads on this rank attend KV heads other than the ones it holds (GQA grouping broken)");
        return;
      }
      if (!checkSegments(r, op)) return;
      break;
    }
    case Kernel::kExperts: {
      for (const Cell& c : s.bufs[op.reads[0]]) {
        if (lay_.expertOwner(c.unit) != (lay_.config().ep > 1 ? co.ep : 0)) {
          violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                  "token " + std::to_string(c.token) + " for expert " + std::to_string(c.unit) +
                      " reached a rank that does not own the expert",
                  c.token);
          return;
        }
      }
      break;
    }
    case Kernel::kNone: break;
  }
  // Outputs.
  for (size_t w = 0; w < op.writes.size(); ++w) {
    const int id = op.writes[w];
    const TensorInfo& t = T(id);
    const int j = t.shards > 1 ? op.shard : 0;
    Buf out;
    const bool mirror = op.kernel == Kernel::kConv || op.kernel == Kernel::kSsd || op.kernel == Kernel::kGatedNorm ||
                        op.kernel == Kernel::kAttention || op.kernel == Kernel::kExperts;
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
      const std::vector<int>& toks = op.reads.empty() ? (anyTpSharded(op) ? lay_.cpTokens(r) : lay_.localTokens(r))
                                                      : distinctTokens(s.bufs[op.reads[0]]);
      const std::set<int> units = expectedUnits(id, r);
      out.reserve(toks.size() * units.size());
      for (int tok : toks) {
        for (int u : units) out.push_back(Cell{tok, static_cast<std::int16_t>(u), static_cast<std::int16_t>(u), -1,
                                               termHash(id, tok, u, j)});
      }
    }
    put(r, op, id, std::move(out));
  }
}

void Replay::backwardKernel(int r, const TrainingOp& op) {
  RankState& s = st_[r];
  const TrainingOp& f = plan_.ranks[r][op.conj_of];
  // Inputs: the gradients of what the forward kernel wrote, complete, on its layout.
  for (size_t i = 0; i < op.reads.size(); ++i) {
    const int b = op.reads[i];
    if (!hasBuf(r, op, b)) return;
    const int w = f.writes[i];
    const Buf& fw = s.bufs[w];
    const Buf& g = s.bufs[b];
    bool same = fw.size() == g.size();
    for (size_t k = 0; same && k < g.size(); ++k) same = fw[k].token == g[k].token && fw[k].unit == g[k].unit;
    if (!same) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
              T(b).name + " is not on the layout of the forward " + T(w).name);
      return;
    }
    const bool routed = T(w).grad_value >= 0;
    const int want = routed ? T(w).grad_value : root(b);
    for (const Cell& c : g) {
      if (routed) {
        // The MoE sum's gradient, scaled by the cell's routing weight.
        const std::uint64_t wt = routeWeight(T(w).layer, c.token, c.unit);
        if (mulm(complete(want, c.token, 0), wt) == c.v) continue;
        violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                "reads the gradient of expert " + std::to_string(c.unit) + "'s output for token " +
                    std::to_string(c.token) + " not scaled exactly once by its routing weight",
                c.token, T(want).name, 1);
        return;
      }
      if (!checkValue(r, op, c, want, c.src)) return;
    }
  }
  // Outputs: the gradients of what the forward kernel read, on its layout.
  for (size_t i = 0; i < op.writes.size(); ++i) {
    const int b = op.writes[i];
    const int fr = f.reads[i];
    const int g = root(b);
    const bool routed = f.kernel == Kernel::kExperts;
    const int reps = T(fr).reps;
    Buf out = s.bufs[fr];
    for (Cell& c : out) {
      const int j = routed ? kRoutedJ + c.unit : f.grad_j[i] + (c.unit - c.src * reps);
      if (routed) c.src = 0;
      c.v = termHash(g, c.token, c.src, j);
    }
    put(r, op, b, std::move(out));
  }
  // Parameter gradients: this kernel's tokens, on the units it used.
  const Buf* base = !f.reads.empty() ? &s.bufs[f.reads[0]] : (!f.writes.empty() ? &s.bufs[f.writes[0]] : nullptr);
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
    case Transform::kRepeat: {
      // repeat_interleave (label u * reps + i); `perm` = {1} asks for a tile
      // (label i * units + u), the order that breaks GQA grouping.
      const bool tile = !op.perm.empty();
      const int units = T(op.reads[0]).units;
      for (const Cell& c : s.bufs[op.reads[0]]) {
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
          std::stable_sort(out.begin() + a, out.begin() + b, [](const Cell& x, const Cell& y) { return x.unit < y.unit; });
          a = b;
        }
      }
      break;
    }
    case Transform::kRouteWeight:
      out = s.bufs[op.reads[0]];
      for (Cell& c : out) c.v = mulm(c.v, routeWeight(op.layer, c.token, c.unit));
      break;
    case Transform::kScatterSeq: {
      // Keep the rank's piece of the rows (a split with no data exchange).
      const Buf& in = s.bufs[op.reads[0]];
      const std::vector<int> toks = distinctTokens(in);
      const int n = static_cast<int>(op.ranks.size());
      const int pos = static_cast<int>(std::find(op.ranks.begin(), op.ranks.end(), r) - op.ranks.begin());
      if (n < 1 || pos >= n || toks.size() % n != 0) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch, "splits rows it cannot split evenly");
        return;
      }
      const size_t per = toks.size() / n;
      std::set<int> mine(toks.begin() + pos * per, toks.begin() + (pos + 1) * per);
      for (const Cell& c : in) {
        if (mine.count(c.token)) out.push_back(c);
      }
      break;
    }
    case Transform::kSumRepeats: {
      std::map<std::pair<int, int>, size_t> at;
      const int reps = T(op.reads[0]).reps;
      for (const Cell& c : s.bufs[op.reads[0]]) {
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
          out[it->second].v = addm(out[it->second].v, c.v);
        }
      }
      break;
    }
    case Transform::kReorder: {
      const Buf& in = s.bufs[op.reads[0]];
      if (op.perm.size() != in.size()) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
                "a permutation of " + std::to_string(op.perm.size()) + " positions on " + std::to_string(in.size()) + " cells");
        return;
      }
      for (int i : op.perm) out.push_back(in[i]);
      break;
    }
    case Transform::kPermute: {
      if (op.reads.size() == 1) {
        for (const Cell& c : s.bufs[op.reads[0]]) {
          for (int e : lay_.route(op.layer, c.token)) {
            Cell n = c;
            n.unit = static_cast<std::int16_t>(e);
            n.src = 0;
            out.push_back(n);
          }
        }
      } else {
        std::map<int, std::uint64_t> val;
        for (const Cell& c : s.bufs[op.reads[0]]) val[c.token] = addm(val[c.token], c.v);
        for (const Cell& c : s.bufs[op.reads[1]]) {
          Cell n = c;
          n.v = val.count(c.token) ? val[c.token] : 0;
          out.push_back(n);
        }
      }
      break;
    }
    case Transform::kSumOverK: {
      std::map<int, std::uint64_t> val;
      for (const Cell& c : s.bufs[op.reads[0]]) val[c.token] = addm(val[c.token], c.v);
      for (int t : distinctTokens(s.bufs[op.reads[1]])) {
        out.push_back(Cell{t, 0, 0, -1, val.count(t) ? val[t] : 0});
        val.erase(t);
      }
      if (!val.empty()) {
        violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                "expert outputs of token " + std::to_string(val.begin()->first) + " came back to a rank that does not hold it",
                val.begin()->first);
        return;
      }
      break;
    }
    default:
      return;
  }
  put(r, op, op.writes[0], std::move(out));
}

void Replay::collective(const std::vector<int>& members) {
  const int n = static_cast<int>(members.size());
  std::vector<const TrainingOp*> ops(n);
  for (int i = 0; i < n; ++i) ops[i] = &plan_.ranks[members[i]][st_[members[i]].pc];
  const TrainingOp& o0 = *ops[0];
  // The members must issue the same collective.
  for (int i = 1; i < n; ++i) {
    const TrainingOp& o = *ops[i];
    const bool splits = !o.in_splits.empty() || !o0.in_splits.empty();
    if (o.kind != o0.kind || o.a2a != o0.a2a || (!splits && o.bytes != o0.bytes) || o.params.size() != o0.params.size()) {
      violate(members[i], o, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
              "rank " + std::to_string(members[i]) + " issues " + std::string(opName(o.kind)) + " '" + o.step + "' (" +
                  std::to_string(o.bytes) + " B) while rank " + std::to_string(members[0]) + " issues " +
                  std::string(opName(o0.kind)) + " '" + o0.step + "' (" + std::to_string(o0.bytes) + " B) on " +
                  std::string(trainAxisName(o.axis)));
      return;
    }
  }
  if (o0.kind == OpKind::kAllToAll && !o0.in_splits.empty()) {
    for (int i = 0; i < n; ++i) {
      for (int k = 0; k < n; ++k) {
        if (ops[i]->in_splits.size() != static_cast<size_t>(n) || ops[k]->out_splits.size() != static_cast<size_t>(n) ||
            ops[i]->in_splits[k] != ops[k]->out_splits[i]) {
          violate(members[i], *ops[i], Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                  "all-to-all split sizes disagree between ranks " + std::to_string(members[i]) + " and " +
                      std::to_string(members[k]) + " (splits not swapped?)");
          return;
        }
      }
    }
  }
  auto advance = [&]() {
    for (int m : members) ++st_[m].pc;
  };
  // Parameter collectives: FSDP all-gathers (no gradient effect) and gradient reductions.
  if (o0.reads.empty()) {
    if (o0.kind == OpKind::kReduceScatter || o0.kind == OpKind::kAllReduce) {
      for (size_t pi = 0; pi < o0.params.size(); ++pi) {
        const int p = o0.params[pi];
        std::vector<Slot> sum = st_[members[0]].grads[p];
        for (int i = 1; i < n; ++i) {
          const int pm = ops[i]->params[pi];
          const std::vector<Slot>& other = st_[members[i]].grads[pm];
          if (other.size() != sum.size()) {
            violate(members[i], *ops[i], Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
                    "gradient buffers of different sizes reduced together");
            return;
          }
          for (size_t k = 0; k < sum.size(); ++k) {
            for (const auto& part : other[k].parts) {
              // Not a structured binding: clang 14 (the fuzz build) cannot
              // capture one in a lambda.
              const auto& u = part.first;
              const auto& cov = part.second;
              auto it = std::find_if(sum[k].parts.begin(), sum[k].parts.end(), [&](const auto& x) { return x.first == u; });
              if (it == sum[k].parts.end()) {
                sum[k].parts.push_back({u, cov});
              } else {
                it->second.insert(it->second.end(), cov.begin(), cov.end());
              }
            }
          }
        }
        for (int i = 0; i < n; ++i) st_[members[i]].grads[ops[i]->params[pi]] = sum;
      }
    }
    advance();
    return;
  }
  std::vector<Buf> out(n);
  auto in = [&](int i) -> const Buf& { return st_[members[i]].bufs[ops[i]->reads[0]]; };
  for (int i = 0; i < n; ++i) {
    if (!st_[members[i]].has[ops[i]->reads[0]]) {
      violate(members[i], *ops[i], Property::kOwedOnce, ViolationClass::kMissingOutput,
              "sends " + T(ops[i]->reads[0]).name + ", which was never written");
      return;
    }
  }
  auto bad = [&](int i, const std::string& why) {
    violate(members[i], *ops[i], Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch, why);
  };
  switch (o0.kind) {
    case OpKind::kAllGather:
      for (int i = 0; i < n; ++i) {
        for (int k = 0; k < n; ++k) out[i].insert(out[i].end(), in(k).begin(), in(k).end());
      }
      break;
    case OpKind::kAllReduce:
    case OpKind::kReduceScatter: {
      Buf sum = in(0);
      for (int k = 1; k < n; ++k) {
        const Buf& b = in(k);
        if (b.size() != sum.size()) return bad(k, "reduces buffers of different sizes");
        for (size_t c = 0; c < b.size(); ++c) {
          if (b[c].token != sum[c].token || b[c].unit != sum[c].unit) {
            violate(members[k], *ops[k], Property::kOwedOnce, ViolationClass::kForeignTerm,
                    "sums token " + std::to_string(b[c].token) + " into token " + std::to_string(sum[c].token) +
                        "'s position (members hold different rows)",
                    b[c].token);
            return;
          }
          sum[c].v = addm(sum[c].v, b[c].v);
        }
      }
      if (o0.kind == OpKind::kAllReduce) {
        for (int i = 0; i < n; ++i) out[i] = sum;
      } else {
        const std::vector<int> toks = distinctTokens(sum);
        if (toks.size() % n != 0) return bad(0, "reduce-scatters " + std::to_string(toks.size()) + " rows over " + std::to_string(n));
        const size_t per = toks.size() / n;
        for (int i = 0; i < n; ++i) {
          std::set<int> mine(toks.begin() + i * per, toks.begin() + (i + 1) * per);
          for (const Cell& c : sum) {
            if (mine.count(c.token)) out[i].push_back(c);
          }
        }
      }
      break;
    }
    case OpKind::kAllToAll:
      switch (o0.a2a) {
        case A2aMode::kSeqToHead:
          for (int k = 0; k < n; ++k) {
            std::vector<int> labels;
            for (const Cell& c : in(k)) {
              if (std::find(labels.begin(), labels.end(), c.unit) == labels.end()) labels.push_back(c.unit);
            }
            if (labels.size() % n != 0) return bad(k, "splits " + std::to_string(labels.size()) + " units over " + std::to_string(n));
            const size_t per = labels.size() / n;
            for (int i = 0; i < n; ++i) {
              std::set<int> chunk(labels.begin() + i * per, labels.begin() + (i + 1) * per);
              for (const Cell& c : in(k)) {
                if (chunk.count(c.unit)) out[i].push_back(c);
              }
            }
          }
          break;
        case A2aMode::kHeadToSeq: {
          std::vector<std::vector<std::vector<int>>> pieces(n);
          for (int k = 0; k < n; ++k) {
            const std::vector<int> toks = distinctTokens(in(k));
            if (toks.size() % n != 0) return bad(k, "splits " + std::to_string(toks.size()) + " rows over " + std::to_string(n));
            const size_t per = toks.size() / n;
            for (int i = 0; i < n; ++i) pieces[k].emplace_back(toks.begin() + i * per, toks.begin() + (i + 1) * per);
          }
          // Token-major: each token's units from member 0, then member 1, ...
          std::map<int, std::vector<const Cell*>> per;
          for (int k = 0; k < n; ++k) {
            for (const Cell& c : in(k)) per[c.token].push_back(&c);
          }
          for (int i = 0; i < n; ++i) {
            for (int k = 1; k < n; ++k) {
              if (pieces[k][i] != pieces[0][i]) {
                violate(members[k], *ops[k], Property::kOwedOnce, ViolationClass::kLayoutMismatch,
                        "head->seq: members hold the rows in different orders, so heads of different tokens are joined");
                return;
              }
            }
            for (int t : pieces[0][i]) {
              for (const Cell* c : per[t]) out[i].push_back(*c);
            }
          }
          break;
        }
        case A2aMode::kToExpert:
          for (int k = 0; k < n; ++k) {
            for (const Cell& c : in(k)) {
              Cell x = c;
              x.from = static_cast<std::int16_t>(members[k]);
              out[lay_.expertOwner(c.unit)].push_back(x);
            }
          }
          break;
        case A2aMode::kToSource: {
          std::vector<Buf> recv(n);
          for (int k = 0; k < n; ++k) {
            for (const Cell& c : in(k)) {
              const auto it = std::find(members.begin(), members.end(), c.from);
              if (it == members.end()) return bad(k, "a cell returns to a rank outside the group");
              Cell x = c;
              x.from = static_cast<std::int16_t>(members[k]);
              recv[it - members.begin()].push_back(x);
            }
          }
          for (int i = 0; i < n; ++i) {
            const Buf& tmpl = st_[members[i]].bufs[ops[i]->reads[1]];
            std::map<std::pair<int, int>, Cell> got;
            for (const Cell& c : recv[i]) got[{c.token, c.unit}] = c;
            if (got.size() != tmpl.size() || recv[i].size() != tmpl.size()) {
              violate(members[i], *ops[i], Property::kOwedOnce, ViolationClass::kLayoutMismatch,
                      "receives " + std::to_string(recv[i].size()) + " (token, expert) cells where " +
                          std::to_string(tmpl.size()) + " left");
              return;
            }
            for (const Cell& t : tmpl) {
              auto it = got.find({t.token, t.unit});
              if (it == got.end()) {
                violate(members[i], *ops[i], Property::kOwedOnce, ViolationClass::kForeignTerm,
                        "a (token, expert) cell that never left this rank came back", t.token);
                return;
              }
              out[i].push_back(it->second);
            }
          }
          break;
        }
        case A2aMode::kNone: return bad(0, "an all-to-all without a mode");
      }
      break;
    default:
      return bad(0, "not a training collective");
  }
  // Declared splits must be what moved.
  for (int i = 0; i < n && !ops[i]->out_splits.empty(); ++i) {
    std::vector<int> cnt(n, 0);
    for (const Cell& c : out[i]) {
      if (ops[i]->a2a == A2aMode::kToExpert) {
        const auto it = std::find(members.begin(), members.end(), c.from);
        if (it != members.end()) ++cnt[it - members.begin()];
      }
    }
    if (ops[i]->a2a == A2aMode::kToExpert && cnt != ops[i]->out_splits) {
      return bad(i, "receives other counts than its split sizes declare");
    }
  }
  for (int i = 0; i < n; ++i) put(members[i], *ops[i], ops[i]->writes[0], std::move(out[i]));
  advance();
}

bool Replay::step(int r) {
  RankState& s = st_[r];
  const auto& ops = plan_.ranks[r];
  bool progressed = false;
  while (s.pc < ops.size() && !done()) {
    const TrainingOp& op = ops[s.pc];
    if (op.hasGroup()) break;
    if (op.kind == OpKind::kCompute) {
      op.pass == Pass::kForward ? forwardKernel(r, op) : backwardKernel(r, op);
    } else {
      transform(r, op);
    }
    ++result_.ops_executed;
    ++s.pc;
    progressed = true;
  }
  return progressed;
}

void Replay::optimizerCheck() {
  for (int r = 0; r < plan_.world() && !done(); ++r) {
    for (size_t p = 0; p < plan_.tensors.size() && !done(); ++p) {
      const TensorInfo& t = T(static_cast<int>(p));
      for (const Slot& slot : st_[r].grads[p]) {
        TrainingOp op;
        op.pass = Pass::kBackward;
        op.layer = static_cast<std::int16_t>(t.layer);
        op.step = "optimizer step";
        op.kind = OpKind::kCompute;
        st_[r].pc = plan_.ranks[r].size();
        for (const auto& [u, cov] : slot.parts) {
          if (u != slot.unit) {
            violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                    "the gradient of " + t.name + " unit " + std::to_string(slot.unit) + " holds unit " +
                        std::to_string(u) + "'s (reduced over the wrong group)",
                    -1, t.name, 1);
            return;
          }
        }
        // Expected: every token (routed: the tokens routed to the unit), every contribution j, once;
        // as runs of keys j * T + token, swept against the accumulated runs.
        std::vector<Run> want;
        for (int j = 0; j < t.shards; ++j) {
          if (!t.routed_param) {
            want.push_back({j * T_, (j + 1) * T_, 1});
            continue;
          }
          for (int tok = 0; tok < T_; ++tok) {
            const auto& rt = lay_.route(t.layer, tok);
            if (std::find(rt.begin(), rt.end(), slot.unit) == rt.end()) continue;
            if (!want.empty() && want.back().hi == j * T_ + tok) {
              ++want.back().hi;
            } else {
              want.push_back({j * T_ + tok, j * T_ + tok + 1, 1});
            }
          }
        }
        std::vector<std::pair<int, int>> ev;  // (key, delta of have - want)
        for (const Run& w : want) {
          ev.push_back({w.lo, -1});
          ev.push_back({w.hi, +1});
        }
        for (const auto& [u, cov] : slot.parts) {
          for (const Run& run : cov) {
            ev.push_back({run.lo, run.coef});
            ev.push_back({run.hi, -run.coef});
          }
        }
        std::sort(ev.begin(), ev.end());
        int acc = 0;
        for (size_t e = 0; e < ev.size();) {
          const int key = ev[e].first;
          while (e < ev.size() && ev[e].first == key) acc += ev[e++].second;
          if (acc == 0 || e == ev.size()) continue;
          const int tok = key % T_, j = key / T_;
          const auto in_want = std::find_if(want.begin(), want.end(), [&](const Run& w) { return w.lo <= key && key < w.hi; });
          const bool expected = in_want != want.end();
          const int have = acc + (expected ? 1 : 0);
          const std::string term = "grad " + t.name + "[u" + std::to_string(slot.unit) + "](t" + std::to_string(tok) +
                                   (t.shards > 1 ? ", j" + std::to_string(j) : "") + ")";
          if (!expected) {
            violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
                    term + ": a token the unit never saw contributes", tok, term, have);
          } else if (have == 0) {
            violate(r, op, Property::kOwedOnce, ViolationClass::kNeverCompleted,
                    term + " is missing: the gradient was not reduced over a group whose ranks saw other tokens or "
                           "other contributions",
                    tok, term, 0);
          } else {
            violate(r, op, Property::kOwedOnce, ViolationClass::kCountedTwice,
                    term + " is counted " + std::to_string(have) + " times: the gradient was reduced more than once",
                    tok, term, have);
          }
          return;
        }
      }
    }
  }
}

LedgerResult Replay::run() {
  const int W = plan_.world();
  for (;;) {
    bool progressed = false;
    for (int r = 0; r < W && !done(); ++r) progressed |= step(r);
    if (done()) break;
    // Collectives whose every member is waiting on a collective over the same group.
    for (int r = 0; r < W && !done(); ++r) {
      const auto& ops = plan_.ranks[r];
      if (st_[r].pc >= ops.size()) continue;
      const TrainingOp& op = ops[st_[r].pc];
      if (!op.hasGroup()) continue;
      bool ready = !op.ranks.empty() && std::find(op.ranks.begin(), op.ranks.end(), r) != op.ranks.end();
      for (int m : op.ranks) {
        if (!ready) break;
        const auto& mo = plan_.ranks[m];
        ready = st_[m].pc < mo.size() && mo[st_[m].pc].hasGroup() && mo[st_[m].pc].ranks == op.ranks;
      }
      if (!ready) continue;
      collective(op.ranks);
      result_.ops_executed += static_cast<std::int64_t>(op.ranks.size());
      progressed = true;
    }
    if (done()) break;
    bool finished = true;
    for (int r = 0; r < W; ++r) finished &= st_[r].pc >= plan_.ranks[r].size();
    if (finished) break;
    if (!progressed) {
      for (int r = 0; r < W; ++r) {
        if (st_[r].pc >= plan_.ranks[r].size()) continue;
        const TrainingOp& op = plan_.ranks[r][st_[r].pc];
        violate(r, op, Property::kCollectivesMatch, ViolationClass::kDeadlock,
                "rank " + std::to_string(r) + " waits in " + std::string(opName(op.kind)) + " '" + op.step + "' on " +
                    std::string(trainAxisName(op.axis)) + " while a member of that group waits in another collective");
        break;
      }
      break;
    }
  }
  if (!done()) optimizerCheck();
  return std::move(result_);
}

}  // namespace

LedgerResult replayTraining(const TrainingPlan& plan, int max_violations) {
  Replay replay(plan, max_violations);
  return replay.run();
}

std::vector<Violation> checkTrainingCollectives(const TrainingPlan& plan) {
  std::vector<Violation> out;
  auto fail = [&](int r, int i, const TrainingOp& op, std::string why) {
    Violation v;
    v.property = Property::kCollectivesMatch;
    v.cls = ViolationClass::kCollectiveMismatch;
    v.rank = r;
    v.op_index = i;
    v.layer = op.layer;
    v.stage = op.layer;
    v.phase = op.pass == Pass::kForward ? Phase::kCompute : Phase::kExit;
    v.op = op.kind;
    v.detail = std::string(op.pass == Pass::kForward ? "forward " : "backward ") + op.step + ": " + why;
    out.push_back(std::move(v));
  };
  // Conjugates: every backward collective mirrors the forward op it names.
  for (int r = 0; r < plan.world() && out.empty(); ++r) {
    const auto& ops = plan.ranks[r];
    for (int i = 0; i < static_cast<int>(ops.size()) && out.empty(); ++i) {
      const TrainingOp& b = ops[i];
      if (b.pass != Pass::kBackward || b.conj_of < 0) continue;
      const TrainingOp& f = ops[b.conj_of];
      if (!b.hasGroup()) {
        // A forward collective's backward must be a collective too (§4.1).
        if (f.hasGroup()) fail(r, i, b, "a local op undoes forward collective '" + f.step + "' (its conjugate is a collective)");
        continue;
      }
      bool ok = f.hasGroup() && f.ranks == b.ranks && f.axis == b.axis;
      if (ok && f.kind == OpKind::kAllToAll) {
        const bool mode = (f.a2a == A2aMode::kSeqToHead && b.a2a == A2aMode::kHeadToSeq) ||
                          (f.a2a == A2aMode::kHeadToSeq && b.a2a == A2aMode::kSeqToHead) ||
                          ((f.a2a == A2aMode::kToExpert || f.a2a == A2aMode::kToSource) && b.a2a == A2aMode::kToSource);
        ok = b.kind == OpKind::kAllToAll && mode && b.in_splits == f.out_splits && b.out_splits == f.in_splits;
      } else if (ok) {
        ok = (f.kind == OpKind::kAllGather && b.kind == OpKind::kReduceScatter) ||
             (f.kind == OpKind::kReduceScatter && b.kind == OpKind::kAllGather);
      }
      if (!ok) fail(r, i, b, "is not the conjugate of forward '" + f.step + "' (same group, mirrored, splits swapped)");
    }
  }
  if (!out.empty()) return out;
  // Per group, every member's sequence of collectives on it.
  std::map<std::vector<int>, std::vector<std::pair<int, std::vector<int>>>> seqs;  // group -> (rank, op indices)
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
  for (const auto& [group, members] : seqs) {
    for (int m : group) {
      if (std::find_if(members.begin(), members.end(), [&](const auto& x) { return x.first == m; }) == members.end()) {
        const auto& [r0, idx0] = members.front();
        fail(r0, idx0.front(), plan.ranks[r0][idx0.front()],
             "rank " + std::to_string(m) + " of the group never issues a collective on it");
        return out;
      }
    }
    const auto& [r0, idx0] = members.front();
    for (const auto& [r, idx] : members) {
      const size_t n = std::min(idx.size(), idx0.size());
      for (size_t k = 0; k < n; ++k) {
        const TrainingOp& a = plan.ranks[r0][idx0[k]];
        const TrainingOp& b = plan.ranks[r][idx[k]];
        const bool splits = !a.in_splits.empty() || !b.in_splits.empty();
        if (a.kind != b.kind || a.a2a != b.a2a || (!splits && a.bytes != b.bytes)) {
          fail(r, idx[k], b,
               "collective #" + std::to_string(k) + " on " + std::string(trainAxisName(b.axis)) + " is " +
                   std::string(opName(b.kind)) + " '" + b.step + "' (" + std::to_string(b.bytes) + " B) on rank " +
                   std::to_string(r) + " but " + std::string(opName(a.kind)) + " '" + a.step + "' (" +
                   std::to_string(a.bytes) + " B) on rank " + std::to_string(r0));
          return out;
        }
      }
      if (idx.size() != idx0.size()) {
        fail(r, idx.empty() ? 0 : idx.back(), plan.ranks[r][idx.empty() ? 0 : idx.back()],
             "rank " + std::to_string(r) + " issues " + std::to_string(idx.size()) + " collectives on the group, rank " +
                 std::to_string(r0) + " " + std::to_string(idx0.size()));
        return out;
      }
    }
  }
  return out;
}

LedgerResult checkTrainingPlan(const TrainingPlan& plan) {
  LedgerResult r;
  r.violations = checkTrainingCollectives(plan);
  if (!r.violations.empty()) return r;
  return replayTraining(plan, 1);
}

}  // namespace seam
