// The training ledger (training_ledger.h): replays a training plan over
// symbolic cells. A cell is (token, unit label, source unit, sender) with a
// value: a fingerprint in GF(2^61 - 1) of its integer combination of terms
// term(tensor, token, unit, j). Collectives act on cells exactly as the real
// collective acts on positions; kernels check their inputs (complete values,
// the token order and document resets their kernel assumes, the heads the
// rank owns) and write fresh terms; backward kernels write gradient terms and
// add each token's contribution to the parameters' gradient accumulators,
// which the optimizer-step check compares with "every token exactly once".
// This file holds the rank state, the violations, the schedule and the
// optimizer-step check.
#include <algorithm>
#include <numeric>
#include <string>

#include "training/training_replay.h"

namespace seam {

namespace training {

Replay::Replay(const TrainingPlan& plan, int max_violations)
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

/// The units of parameter p that rank r stores (its tp or ep shard).
std::vector<int> Replay::storage(int p, int r) const {
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

void Replay::violate(int r, const TrainingOp& op, Property p, ViolationClass cls,
                     std::string detail, int token, std::string term, std::int64_t coef) {
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
             (op.layer >= 0
                  ? " (layer " + std::to_string(op.layer) + " '" + std::string(1, op.block) + "')"
                  : "") +
             ": " + detail;
  result_.violations.push_back(std::move(v));
}

/// Why a cell does not hold `want`: nothing, a multiple of it, one
/// contribution or all but one, or terms that belong elsewhere.
void Replay::wrongValue(int r, const TrainingOp& op, const Cell& c, int tensor, int unit,
                        std::uint64_t want) {
  const TensorInfo& t = T(tensor);
  const std::string term =
      t.name + "(t" + std::to_string(c.token) + ", u" + std::to_string(unit) + ")";
  if (c.v == 0) {
    violate(r, op, Property::kOwedOnce, ViolationClass::kNeverCompleted,
            "reads " + term + " with no contribution", c.token, term, 0);
    return;
  }
  for (int k = 2; k <= 64; ++k) {
    if (c.v == detail::fieldMul(want, k)) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kCountedTwice,
              "reads " + term + " counted " + std::to_string(k) + " times (reduced more than once)",
              c.token, term, k);
      return;
    }
  }
  const int n = t.routed_grad || t.routed_from >= 0 ? 0 : t.shards;
  for (int j = 0; j < n && n <= 256; ++j) {
    const std::uint64_t h = termHash(tensor, c.token, unit, j);
    if (c.v == h || c.v == detail::fieldSub(want, h)) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kNeverCompleted,
              "reads " + term +
                  (c.v == h ? " holding only contribution " : " missing contribution ") +
                  std::to_string(j) + " of " + std::to_string(n) +
                  ": a sum over a group was never completed",
              c.token, term, c.v == h ? 1 : 0);
      return;
    }
  }
  violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
          "reads " + term +
              " holding terms of other tokens, units or contributions (wrong group, chunk or "
              "replica)",
          c.token, term, 1);
}

void Replay::put(int r, const TrainingOp& op, int buf, Buf cells) {
  RankState& s = st_[r];
  const bool in_place = std::find(op.reads.begin(), op.reads.end(), buf) != op.reads.end();
  if (op.pass == Pass::kBackward && s.has[buf] && !in_place) {
    Buf& old = s.bufs[buf];
    bool same = old.size() == cells.size();
    for (size_t i = 0; same && i < old.size(); ++i)
      same = old[i].token == cells[i].token && old[i].unit == cells[i].unit;
    if (!same) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kLayoutMismatch,
              "accumulates into " + T(buf).name + " with a different layout of tokens and units");
      return;
    }
    for (size_t i = 0; i < old.size(); ++i) old[i].v = detail::fieldAdd(old[i].v, cells[i].v);
    return;
  }
  s.bufs[buf] = std::move(cells);
  s.has[buf] = 1;
}

void Replay::addGrad(int r, const TrainingOp& op, int p, int unit, const std::vector<int>& tokens,
                     int j) {
  std::vector<Slot>& slots = st_[r].grads[p];
  Slot* slot = nullptr;
  for (Slot& s : slots) {
    if (s.unit == unit) slot = &s;
  }
  if (!slot) {
    violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
            "writes the gradient of " + T(p).name + " unit " + std::to_string(unit) +
                ", which this rank does not store");
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
      bool ready =
          !op.ranks.empty() && std::find(op.ranks.begin(), op.ranks.end(), r) != op.ranks.end();
      for (int m : op.ranks) {
        if (!ready) break;
        const auto& mo = plan_.ranks[m];
        ready =
            st_[m].pc < mo.size() && mo[st_[m].pc].hasGroup() && mo[st_[m].pc].ranks == op.ranks;
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
                "rank " + std::to_string(r) + " waits in " + std::string(opName(op.kind)) + " '" +
                    op.step + "' on " + std::string(trainAxisName(op.axis)) +
                    " while a member of that group waits in another collective");
        break;
      }
      break;
    }
  }
  if (!done()) optimizerCheck();
  return std::move(result_);
}

/// The coverage a unit's complete gradient has: every token (routed: the
/// tokens routed to the unit), every contribution j, once; as runs of keys
/// j * T + token.
std::vector<Run> Replay::expectedCoverage(const TensorInfo& t, int unit) const {
  std::vector<Run> want;
  for (int j = 0; j < t.shards; ++j) {
    if (!t.routed_param) {
      want.push_back({j * T_, (j + 1) * T_, 1});
      continue;
    }
    for (int tok = 0; tok < T_; ++tok) {
      const auto& rt = lay_.route(t.layer, tok);
      if (std::find(rt.begin(), rt.end(), unit) == rt.end()) continue;
      if (!want.empty() && want.back().hi == j * T_ + tok) {
        ++want.back().hi;
      } else {
        want.push_back({j * T_ + tok, j * T_ + tok + 1, 1});
      }
    }
  }
  return want;
}

/// One storage position of a gradient against its expected coverage, swept
/// as events; false (and a violation) at the first key that differs.
bool Replay::checkGradient(int r, const TensorInfo& t, const Slot& slot) {
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
      return false;
    }
  }
  const std::vector<Run> want = expectedCoverage(t, slot.unit);
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
    const auto in_want = std::find_if(want.begin(), want.end(),
                                      [&](const Run& w) { return w.lo <= key && key < w.hi; });
    const bool expected = in_want != want.end();
    const int have = acc + (expected ? 1 : 0);
    const std::string term = "grad " + t.name + "[u" + std::to_string(slot.unit) + "](t" +
                             std::to_string(tok) + (t.shards > 1 ? ", j" + std::to_string(j) : "") +
                             ")";
    if (!expected) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kForeignTerm,
              term + ": a token the unit never saw contributes", tok, term, have);
    } else if (have == 0) {
      violate(r, op, Property::kOwedOnce, ViolationClass::kNeverCompleted,
              term +
                  " is missing: the gradient was not reduced over a group whose ranks saw "
                  "other tokens or "
                  "other contributions",
              tok, term, 0);
    } else {
      violate(r, op, Property::kOwedOnce, ViolationClass::kCountedTwice,
              term + " is counted " + std::to_string(have) +
                  " times: the gradient was reduced more than once",
              tok, term, have);
    }
    return false;
  }
  return true;
}

/// After the last op: every stored gradient unit of every rank, the first
/// wrong one reported.
void Replay::optimizerCheck() {
  for (int r = 0; r < plan_.world() && !done(); ++r) {
    for (size_t p = 0; p < plan_.tensors.size() && !done(); ++p) {
      const TensorInfo& t = T(static_cast<int>(p));
      for (const Slot& slot : st_[r].grads[p]) {
        if (!checkGradient(r, t, slot)) return;
      }
    }
  }
}

}  // namespace training

LedgerResult replayTraining(const TrainingPlan& plan, int max_violations) {
  training::Replay replay(plan, max_violations);
  return replay.run();
}

LedgerResult checkTrainingPlan(const TrainingPlan& plan) {
  LedgerResult r;
  r.violations = checkTrainingCollectives(plan);
  if (!r.violations.empty()) return r;
  return replayTraining(plan, 1);
}

}  // namespace seam
