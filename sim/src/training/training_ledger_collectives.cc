// The training ledger's collectives (training_replay.h): what each moves,
// cell by cell, as the real collective moves positions. The members must
// issue the same collective; parameter collectives act on the gradient
// accumulators; the others gather, reduce, scatter or all-to-all the cells
// of the buffer each member sends.
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "training/training_replay.h"

namespace seam::training {

void Replay::collectiveMismatch(const GroupCall& g, int i, const std::string& why) {
  violate(g.members[i], *g.ops[i], Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
          why);
}

void Replay::collective(const std::vector<int>& members) {
  GroupCall g{members, std::vector<const TrainingOp*>(members.size())};
  const int n = g.size();
  for (int i = 0; i < n; ++i) g.ops[i] = &plan_.ranks[members[i]][st_[members[i]].pc];
  for (const TrainingOp* o : g.ops) {
    if (o->kind == OpKind::kSend || o->kind == OpKind::kRecv) {
      pointToPoint(g);
      return;
    }
  }
  if (!sameCollective(g)) return;
  auto advance = [&]() {
    for (int m : members) ++st_[m].pc;
  };
  // Parameter collectives: FSDP all-gathers (no gradient effect) and gradient reductions.
  if (g.ops[0]->reads.empty()) {
    if (reduceParamGrads(g)) advance();
    return;
  }
  for (int i = 0; i < n; ++i) {
    if (!st_[members[i]].has[g.ops[i]->reads[0]]) {
      violate(members[i], *g.ops[i], Property::kOwedOnce, ViolationClass::kMissingOutput,
              "sends " + T(g.ops[i]->reads[0]).name + ", which was never written");
      return;
    }
  }
  std::vector<Buf> out(n);
  if (!exchange(g, out) || !receivedDeclaredSplits(g, out)) return;
  for (int i = 0; i < n; ++i) put(members[i], *g.ops[i], g.ops[i]->writes[0], std::move(out[i]));
  advance();
}

/// A send and its receive (group {sender, receiver}), met as NCCL meets them:
/// the sender at its send, the receiver at the receive from it. The buffers
/// arrive cell for cell; in backward a gradient received adds into the
/// receiver's buffer (TE's dKV accumulates), any other buffer is replaced
/// (the KV the backward's ring passes again).
void Replay::pointToPoint(const GroupCall& g) {
  const TrainingOp& s = *g.ops[0];
  const TrainingOp& v = *g.ops[g.size() - 1];
  if (g.size() != 2 || s.kind != OpKind::kSend || v.kind != OpKind::kRecv) {
    collectiveMismatch(
        g, 0,
        "rank " + std::to_string(g.members[0]) + " issues " + std::string(opName(s.kind)) + " '" +
            s.step + "' while rank " + std::to_string(g.members.back()) + " issues " +
            std::string(opName(v.kind)) + " '" + v.step + "' (a send meets no receive)");
    return;
  }
  const int src = g.members[0], dst = g.members[1];
  std::int64_t held = 0;
  for (int b : s.reads) {
    if (!st_[src].has[b]) {
      violate(src, s, Property::kOwedOnce, ViolationClass::kMissingOutput,
              "sends " + T(b).name + ", which was never written");
      return;
    }
    held += static_cast<std::int64_t>(st_[src].bufs[b].size()) * T(b).unit_bytes;
  }
  if (s.bytes != v.bytes || s.reads.size() != v.writes.size() || held != s.bytes) {
    collectiveMismatch(g, 1,
                       "rank " + std::to_string(dst) + " receives " + std::to_string(v.bytes) +
                           " B in " + std::to_string(v.writes.size()) + " buffers where rank " +
                           std::to_string(src) + " sends " + std::to_string(s.bytes) + " B in " +
                           std::to_string(s.reads.size()) + " (" + std::to_string(held) +
                           " B held)");
    return;
  }
  for (size_t k = 0; k < s.reads.size(); ++k) {
    Buf cells = st_[src].bufs[s.reads[k]];
    for (Cell& c : cells) c.from = static_cast<std::int16_t>(src);
    const int w = v.writes[k];
    if (isGradient(w)) {
      put(dst, v, w, std::move(cells));
    } else {
      st_[dst].bufs[w] = std::move(cells);
      st_[dst].has[w] = 1;
    }
  }
  ++st_[src].pc;
  ++st_[dst].pc;
}

/// The members issue the same collective (kind, mode, bytes unless split
/// lists say the sizes, parameters), and all-to-all split lists that match
/// pairwise.
bool Replay::sameCollective(const GroupCall& g) {
  const int n = g.size();
  const TrainingOp& o0 = *g.ops[0];
  for (int i = 1; i < n; ++i) {
    const TrainingOp& o = *g.ops[i];
    const bool splits = !o.in_splits.empty() || !o0.in_splits.empty();
    if (o.kind != o0.kind || o.a2a != o0.a2a || (!splits && o.bytes != o0.bytes) ||
        o.params.size() != o0.params.size()) {
      collectiveMismatch(
          g, i,
          "rank " + std::to_string(g.members[i]) + " issues " + std::string(opName(o.kind)) + " '" +
              o.step + "' (" + std::to_string(o.bytes) + " B) while rank " +
              std::to_string(g.members[0]) + " issues " + std::string(opName(o0.kind)) + " '" +
              o0.step + "' (" + std::to_string(o0.bytes) + " B) on " +
              std::string(trainAxisName(o.axis)));
      return false;
    }
  }
  if (o0.kind != OpKind::kAllToAll || o0.in_splits.empty()) return true;
  for (int i = 0; i < n; ++i) {
    for (int k = 0; k < n; ++k) {
      if (g.ops[i]->in_splits.size() != static_cast<size_t>(n) ||
          g.ops[k]->out_splits.size() != static_cast<size_t>(n) ||
          g.ops[i]->in_splits[k] != g.ops[k]->out_splits[i]) {
        collectiveMismatch(g, i,
                           "all-to-all split sizes disagree between ranks " +
                               std::to_string(g.members[i]) + " and " +
                               std::to_string(g.members[k]) + " (splits not swapped?)");
        return false;
      }
    }
  }
  return true;
}

/// A reduce-scatter or all-reduce of gradients: every member's accumulators
/// of each parameter become the union of the members' coverage (an
/// all-gather of parameters changes no gradient).
bool Replay::reduceParamGrads(const GroupCall& g) {
  const int n = g.size();
  const TrainingOp& o0 = *g.ops[0];
  if (o0.kind != OpKind::kReduceScatter && o0.kind != OpKind::kAllReduce) return true;
  for (size_t pi = 0; pi < o0.params.size(); ++pi) {
    const int p = o0.params[pi];
    std::vector<Slot> sum = st_[g.members[0]].grads[p];
    for (int i = 1; i < n; ++i) {
      const int pm = g.ops[i]->params[pi];
      const std::vector<Slot>& other = st_[g.members[i]].grads[pm];
      if (other.size() != sum.size()) {
        collectiveMismatch(g, i, "gradient buffers of different sizes reduced together");
        return false;
      }
      for (size_t k = 0; k < sum.size(); ++k) {
        for (const auto& part : other[k].parts) {
          // Not a structured binding: clang 14 (the fuzz build) cannot
          // capture one in a lambda.
          const auto& u = part.first;
          const auto& cov = part.second;
          auto it = std::find_if(sum[k].parts.begin(), sum[k].parts.end(),
                                 [&](const auto& x) { return x.first == u; });
          if (it == sum[k].parts.end()) {
            sum[k].parts.push_back({u, cov});
          } else {
            it->second.insert(it->second.end(), cov.begin(), cov.end());
          }
        }
      }
    }
    for (int i = 0; i < n; ++i) st_[g.members[i]].grads[g.ops[i]->params[pi]] = sum;
  }
  return true;
}

/// What each member receives (`out`, by member), by the collective's kind
/// and all-to-all mode; false (and a violation) when it cannot move them.
bool Replay::exchange(const GroupCall& g, std::vector<Buf>& out) {
  const int n = g.size();
  const TrainingOp& o0 = *g.ops[0];
  switch (o0.kind) {
    case OpKind::kAllGather:
      for (int i = 0; i < n; ++i) {
        // An uneven gather (output_split_sizes) receives what each member sends.
        const std::vector<int>& want = g.ops[i]->out_splits;
        for (int k = 0; k < n && !want.empty(); ++k) {
          if (want.size() != static_cast<size_t>(n) ||
              static_cast<int>(sent(g, k).size()) != want[k]) {
            collectiveMismatch(g, i,
                               "gathers " + std::to_string(sent(g, k).size()) +
                                   " cells from rank " + std::to_string(g.members[k]) +
                                   " where its output split sizes declare other counts");
            return false;
          }
        }
        for (int k = 0; k < n; ++k)
          out[i].insert(out[i].end(), sent(g, k).begin(), sent(g, k).end());
      }
      return true;
    case OpKind::kAllReduce:
    case OpKind::kReduceScatter:
      return reduceCells(g, out);
    case OpKind::kAllToAll:
      switch (o0.a2a) {
        case A2aMode::kSeqToHead:
          return seqToHead(g, out);
        case A2aMode::kHeadToSeq:
          return headToSeq(g, out);
        case A2aMode::kToExpert:
          toExpert(g, out);
          return true;
        case A2aMode::kToSource:
          return toSource(g, out);
        case A2aMode::kNone:
          collectiveMismatch(g, 0, "an all-to-all without a mode");
          return false;
      }
      return true;
    default:
      collectiveMismatch(g, 0, "not a training collective");
      return false;
  }
}

/// All-reduce (every member the sum) and reduce-scatter (member i the sum's
/// i-th piece of rows): the members must hold the same cells.
bool Replay::reduceCells(const GroupCall& g, std::vector<Buf>& out) {
  const int n = g.size();
  Buf sum = sent(g, 0);
  for (int k = 1; k < n; ++k) {
    const Buf& b = sent(g, k);
    if (b.size() != sum.size()) {
      collectiveMismatch(g, k, "reduces buffers of different sizes");
      return false;
    }
    for (size_t c = 0; c < b.size(); ++c) {
      if (b[c].token != sum[c].token || b[c].unit != sum[c].unit) {
        violate(g.members[k], *g.ops[k], Property::kOwedOnce, ViolationClass::kForeignTerm,
                "sums token " + std::to_string(b[c].token) + " into token " +
                    std::to_string(sum[c].token) + "'s position (members hold different rows)",
                b[c].token);
        return false;
      }
      sum[c].v = detail::fieldAdd(sum[c].v, b[c].v);
    }
  }
  if (g.ops[0]->kind == OpKind::kAllReduce) {
    for (int i = 0; i < n; ++i) out[i] = sum;
    return true;
  }
  if (!g.ops[0]->in_splits.empty()) return scatterUneven(g, sum, out);
  const std::vector<int> toks = distinctTokens(sum);
  if (toks.size() % n != 0) {
    collectiveMismatch(
        g, 0, "reduce-scatters " + std::to_string(toks.size()) + " rows over " + std::to_string(n));
    return false;
  }
  const size_t per = toks.size() / n;
  for (int i = 0; i < n; ++i) {
    std::set<int> mine(toks.begin() + i * per, toks.begin() + (i + 1) * per);
    for (const Cell& c : sum) {
      if (mine.count(c.token)) out[i].push_back(c);
    }
  }
  return true;
}

/// An uneven reduce-scatter (input_split_sizes, the same list on every
/// member): member i gets the i-th run of in_splits[i] cells of the sum.
bool Replay::scatterUneven(const GroupCall& g, const Buf& sum, std::vector<Buf>& out) {
  const int n = g.size();
  const std::vector<int>& splits = g.ops[0]->in_splits;
  size_t total = 0;
  for (int x : splits) total += static_cast<size_t>(std::max(x, 0));
  for (int i = 0; i < n; ++i) {
    if (g.ops[i]->in_splits != splits || splits.size() != static_cast<size_t>(n) ||
        total != sum.size()) {
      collectiveMismatch(g, i,
                         "reduce-scatters " + std::to_string(sum.size()) +
                             " cells by input split sizes that are not the group's or do not "
                             "add up to them");
      return false;
    }
  }
  size_t at = 0;
  for (int i = 0; i < n; ++i) {
    out[i].assign(sum.begin() + static_cast<std::ptrdiff_t>(at),
                  sum.begin() + static_cast<std::ptrdiff_t>(at + splits[i]));
    at += splits[i];
  }
  return true;
}

/// Ulysses seq->head: each member's units split into n contiguous chunks,
/// chunk i to member i, received rank-major.
bool Replay::seqToHead(const GroupCall& g, std::vector<Buf>& out) {
  const int n = g.size();
  for (int k = 0; k < n; ++k) {
    std::vector<int> labels;
    for (const Cell& c : sent(g, k)) {
      if (std::find(labels.begin(), labels.end(), c.unit) == labels.end()) labels.push_back(c.unit);
    }
    if (labels.size() % n != 0) {
      collectiveMismatch(
          g, k, "splits " + std::to_string(labels.size()) + " units over " + std::to_string(n));
      return false;
    }
    const size_t per = labels.size() / n;
    for (int i = 0; i < n; ++i) {
      std::set<int> chunk(labels.begin() + i * per, labels.begin() + (i + 1) * per);
      for (const Cell& c : sent(g, k)) {
        if (chunk.count(c.unit)) out[i].push_back(c);
      }
    }
  }
  return true;
}

/// Ulysses head->seq: each member's rows split into n contiguous pieces,
/// piece i to member i, each token's units joined from member 0, 1, ...
bool Replay::headToSeq(const GroupCall& g, std::vector<Buf>& out) {
  const int n = g.size();
  std::vector<std::vector<std::vector<int>>> pieces(n);
  for (int k = 0; k < n; ++k) {
    const std::vector<int> toks = distinctTokens(sent(g, k));
    if (toks.size() % n != 0) {
      collectiveMismatch(
          g, k, "splits " + std::to_string(toks.size()) + " rows over " + std::to_string(n));
      return false;
    }
    const size_t per = toks.size() / n;
    for (int i = 0; i < n; ++i)
      pieces[k].emplace_back(toks.begin() + i * per, toks.begin() + (i + 1) * per);
  }
  // Token-major: each token's units from member 0, then member 1, ...
  std::map<int, std::vector<const Cell*>> per;
  for (int k = 0; k < n; ++k) {
    for (const Cell& c : sent(g, k)) per[c.token].push_back(&c);
  }
  for (int i = 0; i < n; ++i) {
    for (int k = 1; k < n; ++k) {
      if (pieces[k][i] != pieces[0][i]) {
        violate(g.members[k], *g.ops[k], Property::kOwedOnce, ViolationClass::kLayoutMismatch,
                "head->seq: members hold the rows in different orders, so heads of "
                "different tokens are joined");
        return false;
      }
    }
    for (int t : pieces[0][i]) {
      for (const Cell* c : per[t]) out[i].push_back(*c);
    }
  }
  return true;
}

/// EP dispatch: each (token, expert) cell to the member owning the expert,
/// marked with the rank it came from.
void Replay::toExpert(const GroupCall& g, std::vector<Buf>& out) const {
  for (int k = 0; k < g.size(); ++k) {
    for (const Cell& c : sent(g, k)) {
      Cell x = c;
      x.from = static_cast<std::int16_t>(g.members[k]);
      out[lay_.expertOwner(c.unit)].push_back(x);
    }
  }
}

/// EP combine (and every backward of a dispatch): each cell back to the rank
/// it came from, in the order of that rank's template buffer (the second read).
bool Replay::toSource(const GroupCall& g, std::vector<Buf>& out) {
  const int n = g.size();
  std::vector<Buf> recv(n);
  for (int k = 0; k < n; ++k) {
    for (const Cell& c : sent(g, k)) {
      const auto it = std::find(g.members.begin(), g.members.end(), c.from);
      if (it == g.members.end()) {
        collectiveMismatch(g, k, "a cell returns to a rank outside the group");
        return false;
      }
      Cell x = c;
      x.from = static_cast<std::int16_t>(g.members[k]);
      recv[it - g.members.begin()].push_back(x);
    }
  }
  for (int i = 0; i < n; ++i) {
    const Buf& tmpl = st_[g.members[i]].bufs[g.ops[i]->reads[1]];
    std::map<std::pair<int, int>, Cell> got;
    for (const Cell& c : recv[i]) got[{c.token, c.unit}] = c;
    if (got.size() != tmpl.size() || recv[i].size() != tmpl.size()) {
      violate(g.members[i], *g.ops[i], Property::kOwedOnce, ViolationClass::kLayoutMismatch,
              "receives " + std::to_string(recv[i].size()) + " (token, expert) cells where " +
                  std::to_string(tmpl.size()) + " left");
      return false;
    }
    for (const Cell& t : tmpl) {
      auto it = got.find({t.token, t.unit});
      if (it == got.end()) {
        violate(g.members[i], *g.ops[i], Property::kOwedOnce, ViolationClass::kForeignTerm,
                "a (token, expert) cell that never left this rank came back", t.token);
        return false;
      }
      out[i].push_back(it->second);
    }
  }
  return true;
}

/// An EP dispatch receives from each member what its split sizes declare.
bool Replay::receivedDeclaredSplits(const GroupCall& g, const std::vector<Buf>& out) {
  const int n = g.size();
  for (int i = 0; i < n && !g.ops[i]->out_splits.empty(); ++i) {
    std::vector<int> cnt(n, 0);
    for (const Cell& c : out[i]) {
      if (g.ops[i]->a2a == A2aMode::kToExpert) {
        const auto it = std::find(g.members.begin(), g.members.end(), c.from);
        if (it != g.members.end()) ++cnt[it - g.members.begin()];
      }
    }
    if (g.ops[i]->a2a == A2aMode::kToExpert && cnt != g.ops[i]->out_splits) {
      collectiveMismatch(g, i, "receives other counts than its split sizes declare");
      return false;
    }
  }
  return true;
}

}  // namespace seam::training
