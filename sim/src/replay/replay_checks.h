// Private to sim/: the violations of Replay (replay.h includes this at its
// end): where a violation is located, the checks of a buffer's rows against
// the expected values and of its layout against an op's, and their sentences.
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "replay/replay.h"

namespace seam::ledger_detail {

inline std::string rankList(const std::vector<int>& g) {
  std::string s = "[";
  for (size_t i = 0; i < g.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(g[i]);
  }
  s += ']';
  return s;
}

template <class Domain>
inline Violation Replay<Domain>::at(int rank, Property p, ViolationClass c, std::string detail) {
  Violation v;
  v.property = p;
  v.cls = c;
  v.rank = rank;
  if (rank >= 0) {
    const auto& ops = plan_->ranks[rank];
    const size_t pc = std::min(ranks_[rank].pc, ops.empty() ? 0 : ops.size() - 1);
    if (!ops.empty()) {
      const Op& op = ops[pc];
      v.op_index = static_cast<int>(pc);
      v.stack = op.stack;
      v.layer = op.layer;
      v.stage = op.stage;
      v.phase = op.phase;
      v.op = op.kind;
    }
  }
  v.detail = std::move(detail);
  return v;
}

template <class Domain>
inline bool Replay<Domain>::checkRows(int rank, Buffer& b, Expect e, int stack, int stage,
                                      Property p) {
  const auto& toks = tokensOf(b, rank);
  const size_t n = std::min(b.v.size(), toks.size());
  size_t i = 0;
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    const Value want = domain_.expectedCoefficient(e, stack, stage);
    // An unwritten norm on other tokens' rows (another layout) is written first.
    if (b.unwritten != nullptr && b.unwritten != &toks && *b.unwritten != toks) materialize(b);
    const std::vector<Value>& v = rowsOf(b);
    const std::uint64_t stamp = b.shared != nullptr ? b.shared->stamp : 0;
    if (b.unwritten != nullptr) {
      // Every token row is point(c, t) on these tokens: all hold, or the
      // first token row is the first wrong one (points are nonzero).
      if (b.unwritten_coefficient == want) {
        i = n;
      } else {
        while (i < n && toks[i] == kPaddingRow) ++i;
      }
    } else if (n >= kHeldRows && knownToHold(v, n, toks, want, stamp)) {
      i = n;
    } else {
      i = domain_.firstWrong(v.data(), toks.data(), n, want);
      if (i == n && n >= kHeldRows) rememberHeld(v, n, toks, want, stamp);
    }
  } else {
    while (i < n && (toks[i] == kPaddingRow || domain_.holds(b.v[i], e, stack, stage, toks[i])))
      ++i;
  }
  if (i < n) {
    const int t = toks[i];
    Violation v = at(rank, p, ViolationClass::kNeverCompleted, "");
    v.token = t;
    if constexpr (requires { Domain::kNamesTerms; }) {
      const Explanation x = domain_.explain(b.v[i], e, stack, stage, t);
      v.cls = x.cls;
      v.term = x.term;
      v.coefficient = x.coefficient;
      v.detail = describe(x, e, stack, stage, t);
    } else {
      v.detail = "row of token " + std::to_string(t) + " is not the expected value";
    }
    report(std::move(v));
    return false;
  }
  return true;
}

template <class Domain>
inline bool Replay<Domain>::knownToHold(const std::vector<Value>& v, size_t n,
                                        const std::vector<int>& toks, std::uint64_t coefficient,
                                        std::uint64_t stamp) const {
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    // firstWrong reads the first n rows of v and of toks and the
    // coefficient, nothing else: the same inputs give the same answer.
    // Shared rows keep their values while their stamp lasts.
    for (const Held& h : held_) {
      if (h.toks == &toks && h.coefficient == coefficient && h.v.size() == n &&
          ((stamp != 0 && h.stamp == stamp) || std::equal(h.v.begin(), h.v.end(), v.begin())))
        return true;
    }
  }
  return false;
}

template <class Domain>
inline void Replay<Domain>::rememberHeld(const std::vector<Value>& v, size_t n,
                                         const std::vector<int>& toks, std::uint64_t coefficient,
                                         std::uint64_t stamp) {
  if constexpr (std::is_same_v<Domain, FastDomain>) {
    Held& h = held_[held_next_];
    held_next_ = (held_next_ + 1) % held_.size();
    h.toks = &toks;
    h.coefficient = coefficient;
    h.stamp = stamp;
    h.v.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n));
  }
}

template <class Domain>
inline std::string Replay<Domain>::describe(const Explanation& x, Expect e, int stack, int stage,
                                            int t) {
  const std::string want = e == Expect::kComplete
                               ? "the complete hidden state before stage " + std::to_string(stage)
                               : "the normed input of stage " + std::to_string(stage);
  const std::string tok = "token " + std::to_string(t);
  switch (x.cls) {
    case ViolationClass::kNeverCompleted:
      return tok + " should hold " + want + " but " + x.term +
             " has coefficient 0: a sum never completed";
    case ViolationClass::kCountedTwice:
      return tok + " should hold " + want + " but " + x.term + " has coefficient " +
             std::to_string(x.coefficient) + ": counted " + std::to_string(x.coefficient) +
             " times";
    case ViolationClass::kForeignTerm:
      return tok + " should hold " + want + " but holds " + x.term +
             (x.foreign_token >= 0 ? " of token " + std::to_string(x.foreign_token) : "") +
             ": summed over the wrong group or mixed with other rows";
    case ViolationClass::kWrongScale:
      return tok + " should hold " + want + " but " + x.term + " has coefficient " +
             std::to_string(x.coefficient) + "/" + std::to_string(x.denominator) +
             ": a sum averaged or rescaled";
    case ViolationClass::kPaddingLeak:
      return tok + " should hold " + want + " but holds padding (" + x.term +
             "): a padding row read as a token";
    default:
      return tok + ": " + x.term;
  }
}

template <class Domain>
inline bool Replay<Domain>::expectKind(int r, const Buffer& b, RowKind kind, const Op& op,
                                       const char* what) {
  const bool size_ok =
      kind == RowKind::kFull
          ? static_cast<int>(b.v.size()) == lane_->fullMap(b.full_mode).count(kind, r)
          : static_cast<int>(b.v.size()) == rows().count(kind, r);
  if (b.present && b.kind == kind && size_ok) return true;
  layoutViolation(r, Property::kOwedOnce,
                  std::string(opName(op.kind)) + " expects " + what + " on " +
                      std::string(rowKindName(kind)) + " rows but finds " +
                      (b.present ? std::string(rowKindName(b.kind)) + " rows (" +
                                       std::to_string(b.v.size()) + ")"
                                 : std::string("no value")));
  return false;
}

template <class Domain>
inline bool Replay<Domain>::residualFollows(int r, const RankState& st, const Op& op) {
  if (!st.residual.present) return true;
  if (st.residual.kind == st.hidden.kind && st.residual.v.size() == st.hidden.v.size()) return true;
  layoutViolation(r, Property::kResidualFollows,
                  std::string(opName(op.kind)) + " adds a residual on " +
                      std::string(rowKindName(st.residual.kind)) + " rows (" +
                      std::to_string(st.residual.v.size()) + ") to a hidden state on " +
                      std::string(rowKindName(st.hidden.kind)) + " rows (" +
                      std::to_string(st.hidden.v.size()) + ")");
  return false;
}

template <class Domain>
inline bool Replay<Domain>::equalChunks(const std::vector<int>& members, const Op& op) {
  if (op.kind != OpKind::kAllGather && op.kind != OpKind::kReduceScatter) return true;
  const int chunk = rows().count(RowKind::kLocal, members.front());
  for (int m : members) {
    if (rows().count(RowKind::kLocal, m) == chunk) continue;
    report(at(m, Property::kCollectivesMatch, ViolationClass::kCollectiveMismatch,
              std::string(opName(op.kind)) + " of unequal chunks (" + std::to_string(chunk) +
                  " and " + std::to_string(rows().count(RowKind::kLocal, m)) +
                  " local rows): a real run corrupts memory"));
    return false;
  }
  return true;
}

}  // namespace seam::ledger_detail
