#include "replay/traced_domain.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <queue>
#include <unordered_map>

namespace seam::ledger_detail {

namespace {

/// A rational coefficient num / den in lowest terms, den >= 1.
struct Fraction {
  std::int64_t num = 0, den = 1;
};

Fraction reduced(std::int64_t num, std::int64_t den) {
  if (num == 0) return {0, 1};
  const std::int64_t g = std::gcd(num, den);
  return {num / g, den / g};
}

Fraction plus(const Fraction& a, const Fraction& b) {
  if (a.den == 1 && b.den == 1) return {a.num + b.num, 1};
  const std::int64_t l = std::lcm(a.den, b.den);
  return reduced(a.num * (l / a.den) + b.num * (l / b.den), l);
}

}  // namespace

void TracedDomain::divide(std::vector<Value>& v, int d) const {
  const std::uint64_t inverse = detail::fieldInverse(static_cast<std::uint64_t>(d));
  for (Value& x : v) {
    if (x.ref == kZero) continue;  // (the exact domain's empty list stays empty)
    x = {detail::fieldMul(x.fp, inverse), made(x.ref, kQuotient | static_cast<std::uint64_t>(d))};
  }
}

TermList::List TracedDomain::terms(const Value& v) const {
  if (v.ref == kZero) return {};
  // Each node's coefficient in v, pushed from v down to the nodes it sums.
  // A node's refs are to earlier nodes, so taking the latest node reached
  // first finds every node's coefficient complete (each of its sums, made
  // later, taken before it). Only the nodes v reaches are visited.
  std::unordered_map<std::uint64_t, Fraction> coefficient;
  std::priority_queue<std::uint64_t> next;
  std::vector<std::pair<std::uint64_t, Fraction>> found;
  const auto give = [&](std::uint64_t ref, const Fraction& q) {
    if (ref < kNode) {
      found.emplace_back(ref, q);
      return;
    }
    const auto [it, first] = coefficient.try_emplace(ref & ~kNode);
    it->second = plus(it->second, q);
    if (first) next.push(ref & ~kNode);
  };
  give(v.ref, {1, 1});
  while (!next.empty()) {
    const std::uint64_t i = next.top();
    next.pop();
    const Fraction q = coefficient[i];
    if (q.num == 0) continue;
    const Node& n = nodes_[i];
    if (n.right >= kQuotient) {
      give(n.left, reduced(q.num, q.den * static_cast<std::int64_t>(n.right & ~kQuotient)));
    } else {
      give(n.left, q);
      give(n.right, q);
    }
  }
  // Equal keys summed, zeros dropped, over the least common denominator:
  // the one list of that value the exact domain keeps (ledger_domains.cc).
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::uint64_t, Fraction>> sums;
  for (const auto& [key, q] : found) {
    if (!sums.empty() && sums.back().first == key) {
      sums.back().second = plus(sums.back().second, q);
    } else {
      sums.emplace_back(key, q);
    }
  }
  std::int64_t den = 1;
  for (const auto& [key, q] : sums) {
    if (q.num != 0) den = std::lcm(den, q.den);
  }
  TermList::List out;
  out.reserve(sums.size() + 1);
  for (const auto& [key, q] : sums) {
    if (q.num != 0) out.emplace_back(key, q.num * (den / q.den));
  }
  if (den != 1 && !out.empty()) out.emplace_back(ExactDomain::kDenominator, den);
  return out;
}

}  // namespace seam::ledger_detail
