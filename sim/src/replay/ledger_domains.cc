#include "replay/ledger_domains.h"

#include <algorithm>
#include <cassert>
#include <numeric>

#include "base/fingerprint.h"

namespace seam::ledger_detail {

namespace {

// The points the fingerprints are evaluated at: fixed, so that every run of
// seam is reproducible.
using detail::splitmix64;
constexpr auto splitmix = splitmix64;

std::uint64_t point(std::uint64_t domain, std::uint64_t a, std::uint64_t b = 0,
                    std::uint64_t c = 0) {
  std::uint64_t h = splitmix(domain * 0x100000001b3ULL + a);
  h = splitmix(h ^ (b + 0x632be59bd9b4e019ULL));
  h = splitmix(h ^ (c + 0x8cb92ba72f3d8dd7ULL));
  h &= FastDomain::kPrime;
  return h == 0 ? 1 : (h >= FastDomain::kPrime ? h - FastDomain::kPrime + 1 : h);
}

}  // namespace

void FastDomain::prepare(const std::vector<StackShape>& stacks, int tokens) {
  if (static_cast<int>(b_.size()) < tokens) {
    for (int t = static_cast<int>(b_.size()); t < tokens; ++t) b_.push_back(point(1, t));
  }
  a_embed_.resize(stacks.size());
  a_embed_shard_.resize(stacks.size());
  a_column_.resize(stacks.size());
  a_partial_.resize(stacks.size());
  a_normed_.resize(stacks.size());
  prefix_.resize(stacks.size());
  for (size_t k = 0; k < stacks.size(); ++k) {
    const auto& shards = stacks[k].shards;
    const int n = static_cast<int>(shards.size());
    a_embed_[k] = point(2, k);
    // The vocab shards' parts: random but the last, which makes them sum to a_e.
    auto& parts = a_embed_shard_[k];
    parts.assign(std::max(1, stacks[k].embed_shards), a_embed_[k]);
    for (size_t j = 0; j + 1 < parts.size(); ++j) {
      parts[j] = point(5, k, j);
      addMod(parts.back(), kPrime - parts[j]);
    }
    a_column_[k].resize(std::max(1, stacks[k].column_shards));
    for (size_t j = 0; j < a_column_[k].size(); ++j) a_column_[k][j] = point(6, k, j);
    a_partial_[k].resize(n);
    a_normed_[k].resize(n + 1);
    prefix_[k].resize(n + 1);
    for (int s = 0; s <= n; ++s) a_normed_[k][s] = point(4, k, s);
    // Each stage's sum enters the complete value from its join point on
    // (the next stage, or where a branch is merged).
    std::vector<Value> joining(n + 1, 0);
    for (int s = 0; s < n; ++s) {
      auto& row = a_partial_[k][s];
      row.resize(shards[s]);
      Value sum = 0;
      for (int j = 0; j < shards[s]; ++j) {
        row[j] = point(3, k, s, j);
        addMod(sum, row[j]);
      }
      addMod(joining[stacks[k].joins_at[s]], sum);
    }
    prefix_[k][0] = a_embed_[k];
    addMod(prefix_[k][0], joining[0]);
    for (int s = 1; s <= n; ++s) {
      prefix_[k][s] = prefix_[k][s - 1];
      addMod(prefix_[k][s], joining[s]);
    }
  }
}

namespace {

using ExactValue = TermList::List;

/// A value's denominator (1 without the entry), and its entry removed.
std::int64_t takeDenominator(ExactValue& v, std::uint64_t key) {
  if (v.empty() || v.back().first != key) return 1;
  const std::int64_t d = v.back().second;
  v.pop_back();
  return d;
}

/// Numerators over `den`, reduced to lowest terms; the entry appended when
/// the denominator is not 1.
void putDenominator(ExactValue& v, std::int64_t den, std::uint64_t key) {
  std::int64_t g = den;
  for (const auto& term : v) g = std::gcd(g, term.second);
  if (g > 1) {
    for (auto& term : v) term.second /= g;
    den /= g;
  }
  if (den != 1 && !v.empty()) v.emplace_back(key, den);
}

}  // namespace

void ExactDomain::divideTerms(Value& value, std::int64_t d) {
  if (value.empty()) return;
  ExactValue& v = value.own();
  const std::int64_t den = takeDenominator(v, kDenominator);
  putDenominator(v, den * d, kDenominator);
}

void TermList::append(const TermList& b) {
  const bool own_leaf = node_->leaf() && node_.use_count() == 1;
  if (size() + b.size() >= kJoinFrom && (b.size() >= kJoinFrom || !own_leaf) &&
      std::max(node_->depth, b.node_->depth) < kMaxDepth) {
    node_ = std::make_shared<Node>(node_, b.node_);
    return;
  }
  // Grown to the exact size, as a merge's list is: a replay holds many sums at once.
  List& terms = own(b.size());
  if (terms.capacity() < terms.size() + b.size()) terms.reserve(terms.size() + b.size());
  b.each([&terms](const Term& t) {
    terms.push_back(t);
    return true;
  });
}

bool TermList::operator==(const TermList& o) const {
  if (node_ == o.node_) return true;
  if (size() != o.size()) return false;
  const List* mine = leaf();
  const List copy = mine ? List{} : flat();
  const List& x = mine ? *mine : copy;
  size_t i = 0;
  return o.each([&](const Term& t) { return x[i++] == t; });
}

void ExactDomain::addTerms(Value& a, const Value& b) {
  if (b.empty()) return;
  // 0 + b is b (whole numbers: a fraction's list is reduced, as the merge would make it).
  if (a.empty() && b.back().first != kDenominator) {
    a = b;
    return;
  }
  // Every term of b sorts after a's (a later stage's partials onto a sum).
  if (!a.empty() && a.back().first != kDenominator && b.back().first != kDenominator &&
      a.back().first < b.front().first) {
    a.append(b);
    return;
  }
  if (const TermList::List* terms = b.leaf()) {
    addLists(a.own(b.size()), *terms);
  } else {
    addLists(a.own(b.size()), b.flat());
  }
}

void ExactDomain::addLists(ExactValue& a, const ExactValue& b) {
  if (b.empty()) return;
  if ((!a.empty() && a.back().first == kDenominator) || b.back().first == kDenominator) {
    // Fractions (a divided reduction): over the common denominator.
    ExactValue x = b;
    const std::int64_t da = takeDenominator(a, kDenominator);
    const std::int64_t db = takeDenominator(x, kDenominator);
    const std::int64_t l = std::lcm(da, db);
    for (auto& term : a) term.second *= l / da;
    for (auto& term : x) term.second *= l / db;
    addLists(a, x);
    putDenominator(a, l, kDenominator);
    return;
  }
  if (a.empty() || a.back().first < b.front().first) {
    // Every term of b sorts after a's (a later stage's partials onto a sum):
    // the merge below would append b. Grown to the exact size, as the
    // merge's list is: a replay holds many long sums at once.
    if (a.capacity() < a.size() + b.size()) a.reserve(a.size() + b.size());
    a.insert(a.end(), b.begin(), b.end());
    return;
  }
  ExactValue out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && a[i].first < b[j].first)) {
      out.push_back(a[i++]);
    } else if (i == a.size() || b[j].first < a[i].first) {
      out.push_back(b[j++]);
    } else {
      const std::int64_t c = a[i].second + b[j].second;
      if (c != 0) out.emplace_back(a[i].first, c);
      ++i;
      ++j;
    }
  }
  a = std::move(out);
}

namespace {

/// `node` when it is alive and still holds the terms it had as `id`.
template <class Node>
std::shared_ptr<Node> alive(const std::weak_ptr<Node>& node, std::uint64_t id) {
  std::shared_ptr<Node> held = node.lock();
  return held && held->id == id ? held : nullptr;
}

}  // namespace

void ExactDomain::add(Value& a, const Value& b) const {
  if (b.empty()) return;
  // Ids are never reused, so a pair of them names one pair of term lists.
  const std::pair<std::uint64_t, std::uint64_t> pair{a.id(), b.id()};
  if (auto it = by_operands_.find(pair); it != by_operands_.end()) {
    if (auto held = alive(it->second.node, it->second.id)) {
      a.node_ = std::move(held);
      return;
    }
  }
  addTerms(a, b);
  if (a.size() < kShareFrom) return;
  share(a);
  by_operands_[pair] = {a.node_, a.id()};
}

void ExactDomain::share(Value& a) const {
  // Hashed by its length and its first and last terms (equal lists hash
  // alike; hashing every term of every long sum cost more than the replay),
  // and only a few lists of one hash compared term by term.
  constexpr size_t kCompared = 4;
  std::uint64_t h = detail::splitmix64(a.size() ^ a.front().first) + a.front().second;
  h = detail::splitmix64(h ^ a.back().first) + static_cast<std::uint64_t>(a.back().second);
  auto [it, end] = by_terms_.equal_range(h);
  for (size_t compared = 0; it != end && compared < kCompared; ++compared) {
    std::shared_ptr<TermList::Node> held = alive(it->second.node, it->second.id);
    if (!held) {
      it = by_terms_.erase(it);
      continue;
    }
    if (held == a.node_) return;
    TermList other;
    other.node_ = held;
    if (other == a) {
      a.node_ = std::move(held);
      return;
    }
    ++it;
  }
  by_terms_.emplace(h, Made{a.node_, a.id()});
  if (by_terms_.size() + by_operands_.size() < prune_at_) return;
  const auto gone = [](const auto& entry) { return !alive(entry.second.node, entry.second.id); };
  std::erase_if(by_terms_, gone);
  std::erase_if(by_operands_, gone);
  prune_at_ = std::max<size_t>(1024, 2 * (by_terms_.size() + by_operands_.size()));
}

template <class Term>
bool ExactDomain::eachExpected(Expect e, int stack, int stage, int t, Term&& term) const {
  if (e == Expect::kNormed) return term(key(kN, stack, stage, t, 0));
  for (int j = 0; j < (*stacks_)[stack].embed_shards; ++j) {
    if (!term(key(kE, stack, 0, t, j))) return false;
  }
  const auto& shards = (*stacks_)[stack].shards;
  const auto& joins = (*stacks_)[stack].joins_at;
  for (int s = 0; s < static_cast<int>(shards.size()); ++s) {
    if (joins[s] > stage) continue;
    for (int j = 0; j < shards[s]; ++j) {
      if (!term(key(kP, stack, s, t, j))) return false;
    }
  }
  return true;
}

bool ExactDomain::holds(const Value& v, Expect e, int stack, int stage, int t) const {
  keys_.clear();
  eachExpected(e, stack, stage, t, [this](std::uint64_t k) {
    keys_.push_back(k);
    return true;
  });
  if (v.size() != keys_.size()) return false;
  size_t i = 0;
  return v.each(
      [&](const TermList::Term& term) { return term.first == keys_[i++] && term.second == 1; });
}

TermList::List ExactDomain::expected(Expect e, int stack, int stage, int t) const {
  ExactValue v;
  eachExpected(e, stack, stage, t, [&v](std::uint64_t k) {
    v.emplace_back(k, 1);
    return true;
  });
  // Made in key order: e before p, then by stage, then by shard.
  assert(std::is_sorted(v.begin(), v.end()));
  return v;
}

std::string ExactDomain::termName(std::uint64_t k) {
  const auto kind = static_cast<Kind>(k >> 61);
  if (kind == kJ) return "junk#" + std::to_string(k & ((std::uint64_t{1} << 60) - 1));
  const int stack = static_cast<int>((k >> 60) & 1);
  const int stage = static_cast<int>((k >> 46) & 0x3fff) - 1;
  const int t = static_cast<int>((k >> 22) & 0xffffff);
  const int j = static_cast<int>(k & 0x3fffff);
  const std::string pre = stack ? "mtp:" : "";
  switch (kind) {
    case kE:
      return pre + "e(t" + std::to_string(t) + (j > 0 ? ", j" + std::to_string(j) : "") + ")";
    case kP:
      return pre + "p(s" + std::to_string(stage) + ", t" + std::to_string(t) + ", j" +
             std::to_string(j) + ")";
    case kN:
      return pre + "n(s" + std::to_string(stage) + ", t" + std::to_string(t) + ")";
    default:
      return "?";
  }
}

Explanation ExactDomain::explain(const Value& value, Expect e, int stack, int stage, int t) const {
  const ExactValue want = expected(e, stack, stage, t);
  ExactValue v = value.flat();
  const std::int64_t den = takeDenominator(v, kDenominator);
  // Padding leak first, then a foreign term, then a term with a fractional
  // coefficient, then a term counted k > 1 times, then a term never
  // completed (DESIGN §3's classes).
  for (const auto& [k, c] : v) {
    if ((k >> 61) == kJ) return {ViolationClass::kPaddingLeak, termName(k), c};
  }
  for (const auto& [k, c] : v) {
    const bool wanted =
        std::binary_search(want.begin(), want.end(), std::make_pair(k, std::int64_t{1}));
    if (!wanted) {
      const int tok = static_cast<int>((k >> 22) & 0xffffff);
      return {ViolationClass::kForeignTerm, termName(k), c, tok != t ? tok : -1};
    }
  }
  for (const auto& [k, c] : v) {
    if (den != 1 && c % den != 0) {
      Explanation x{ViolationClass::kWrongScale, termName(k), c};
      x.denominator = den;
      return x;
    }
  }
  for (const auto& [k, c] : v) {
    if (c > 1 || c < 0) return {ViolationClass::kCountedTwice, termName(k), c};
  }
  for (const auto& [k, c] : want) {
    auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(k, std::int64_t{0}),
                               [](const auto& x, const auto& y) { return x.first < y.first; });
    if (it == v.end() || it->first != k) return {ViolationClass::kNeverCompleted, termName(k), 0};
  }
  return {ViolationClass::kForeignTerm, "?", 0};
}

}  // namespace seam::ledger_detail
