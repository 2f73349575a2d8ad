// Private to sim/: the value domain that explains a violation the fast replay
// found (ledger.cc). A row is its fast fingerprint and a record of how it was
// made (a term, or the sum or quotient of rows made before), so that a check
// costs what the fast domain's does and only a wrong row's terms are listed,
// as the exact domain's list of that row (ledger_domains.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/fingerprint.h"
#include "replay/ledger_domains.h"

namespace seam::ledger_detail {

/// Rows as fingerprints with their making recorded. Checks compare the
/// fingerprints, as the fast domain does: a row that is the expected value
/// has its fingerprint, and one that is not (any other sum of terms) has
/// another but with the chance the fast domain's checks already rest on (a
/// nonzero polynomial of degree 2 vanishing at the fixed random point, at
/// most 2/2^61 per check). So a replay over this domain meets the exact
/// replay's first wrong row, and explains it from the terms its record
/// sums to, the exact domain's list of that row.
class TracedDomain {
 public:
  /// A row: its fingerprint and its record, a term key (below kNode), a
  /// made row (kNode | index into nodes_), or kZero.
  struct Value {
    std::uint64_t fp = 0;
    std::uint64_t ref = kZero;
  };
  /// The replay explains a wrong row by its terms (replay_checks.h).
  static constexpr bool kNamesTerms = true;

  void prepare(const std::vector<StackShape>& stacks, int tokens) {
    fast_.prepare(stacks, tokens);
    exact_.prepare(stacks, tokens);
    nodes_.clear();
  }
  Value zero() const { return {}; }
  /// a += b: a record of the sum (a row of zero takes b as it is).
  void add(Value& a, const Value& b) const {
    if (b.ref == kZero) return;
    if (a.ref == kZero) {
      a = b;
      return;
    }
    a = {detail::fieldAdd(a.fp, b.fp), made(a.ref, b.ref)};
  }
  Value embed(int stack, int t) const {
    return {fast_.embed(stack, t), ExactDomain::key(ExactDomain::kE, stack, 0, t, 0)};
  }
  Value embedShard(int stack, int t, int j, int n) const {
    return {fast_.embedShard(stack, t, j, n), ExactDomain::key(ExactDomain::kE, stack, 0, t, j)};
  }
  Value junk(std::uint64_t id) const { return {fast_.junk(id), ExactDomain::junkKey(id)}; }
  Value norm(const Value&, int stack, int stage, int t, std::uint64_t junk_id) const {
    if (t < 0) return junk(junk_id);
    return {fast_.normed(stack, stage, t), ExactDomain::key(ExactDomain::kN, stack, stage, t, 0)};
  }
  Value compute(const Value&, int stack, int stage, int t, int j, int, std::uint64_t junk_id,
                int) const {
    if (t < 0) return junk(junk_id);
    return {fast_.partial(stack, stage, t, j),
            ExactDomain::key(ExactDomain::kP, stack, stage, t, j)};
  }
  Value project(const Value&, int stack, int t, std::uint64_t junk_id, int) const {
    return t < 0 ? junk(junk_id) : embed(stack, t);
  }
  Value projectShard(const Value&, int stack, int t, int j, int, std::uint64_t junk_id, int) const {
    if (t < 0) return junk(junk_id);
    return {fast_.projectShard(0, stack, t, j, 0, 0, 0),
            ExactDomain::key(ExactDomain::kP, stack, -1, t, j)};
  }
  /// As ExactDomain::joinColumns, each part compared with its column shard
  /// by fingerprint.
  Value joinColumns(const std::vector<Value>& parts, int stack, int t, std::uint64_t junk_id,
                    int) const {
    if (t < 0) return junk(junk_id);
    const int k = (*exact_.stacks_)[stack].column_shards;
    bool whole = static_cast<int>(parts.size()) == k;
    Value sum;
    for (size_t j = 0; j < parts.size(); ++j) {
      whole = whole && parts[j].fp == projectShard({}, stack, t, static_cast<int>(j), k, 0, 0).fp;
      add(sum, parts[j]);
    }
    return whole ? embed(stack, t) : sum;
  }
  bool holds(const Value& v, Expect e, int stack, int stage, int t) const {
    return fast_.holds(v.fp, e, stack, stage, t);
  }
  /// Every value divided by d (d >= 1): a record of each quotient.
  void divide(std::vector<Value>& v, int d) const;
  /// Why `v` is not what was expected: ExactDomain::explain of its terms.
  Explanation explain(const Value& v, Expect e, int stack, int stage, int t) const {
    return exact_.explain(TermList(terms(v)), e, stack, stage, t);
  }
  /// The terms `v` sums to, as the exact domain lists them: sorted by key,
  /// none of coefficient 0, over the least common denominator (an entry
  /// keyed ExactDomain::kDenominator last when it is not 1).
  TermList::List terms(const Value& v) const;

 private:
  static constexpr std::uint64_t kZero = ~std::uint64_t{0};
  static constexpr std::uint64_t kNode = std::uint64_t{1} << 63;
  /// A quotient's second field: kQuotient | d (a record's fields are refs below it).
  static constexpr std::uint64_t kQuotient = std::uint64_t{1} << 62 | kNode;
  /// A made row: the sum of two refs, or a ref and kQuotient | d.
  struct Node {
    std::uint64_t left, right;
  };
  std::uint64_t made(std::uint64_t left, std::uint64_t right) const {
    nodes_.push_back({left, right});
    return kNode | (nodes_.size() - 1);
  }
  FastDomain fast_;
  ExactDomain exact_;
  /// Every made row of the replay, in the order made (a node's refs are to
  /// earlier nodes): one entry per add, where the exact domain kept a list.
  mutable std::vector<Node> nodes_;
};

}  // namespace seam::ledger_detail
