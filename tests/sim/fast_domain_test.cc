// The fast domain's whole-reduction helpers (ledger_domains.h): sumRows and
// fillSum must leave the values that the row-by-row replay makes, add() after
// add() in member order and fillRows per member, so the fast replay's checks
// answer as before.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/fingerprint.h"
#include "replay/ledger_domains.h"

namespace seam {
namespace {

using ledger_detail::FastDomain;
using ledger_detail::StackShape;
using Value = FastDomain::Value;

constexpr Value kTop = FastDomain::kPrime - 1;  // the largest reduced value

/// Member p's rows: values spread over the field, the top one included.
std::vector<Value> memberRows(size_t p, size_t rows) {
  std::vector<Value> v(rows);
  for (size_t i = 0; i < rows; ++i)
    v[i] = (i + p) % 3 == 0 ? kTop : detail::splitmix64(p * 1000 + i) & FastDomain::kPrime;
  for (Value& x : v) x = x == FastDomain::kPrime ? 0 : x;
  return v;
}

TEST(FastDomain, SumRowsIsTheMemberOrderSumOfAdds) {
  FastDomain d;
  // 300 members: the 128-bit sum passes 2^64 (300 top values), which add()
  // never sees (it reduces after every term).
  for (size_t n : {1u, 2u, 7u, 64u, 300u}) {
    const size_t rows = 5;
    std::vector<std::vector<Value>> members;
    for (size_t p = 0; p < n; ++p) members.push_back(memberRows(p, rows));
    std::vector<Value> want = members[0];
    for (size_t p = 1; p < n; ++p) {
      for (size_t i = 0; i < rows; ++i) d.add(want[i], members[p][i]);
    }
    std::vector<Value> got = members[0];
    std::vector<const Value*> src(n);
    for (size_t p = 1; p < n; ++p) src[p] = members[p].data();
    FastDomain::sumRows(got.data(), rows, src.data(), n);
    EXPECT_EQ(got, want) << n << " members";
  }
}

TEST(FastDomain, FillSumIsTheSumOfEachMembersFilledRows) {
  FastDomain d;
  d.prepare({StackShape{{4, 4}, {1, 2}}}, 6);
  // Token rows and padding rows, as a DP buffer's slots hold them.
  const std::vector<int> toks = {0, 3, -1, 5, -1, -1, 1};
  for (size_t n : {1u, 3u, 64u}) {
    std::vector<Value> coefficients(n);
    std::vector<std::uint64_t> junk(n);
    std::vector<Value> want(toks.size(), 0), row(toks.size());
    for (size_t p = 0; p < n; ++p) {
      coefficients[p] = d.partialCoefficient(0, 1, static_cast<int>(p % 4));
      junk[p] = 100 * p + 7;  // each member's junk ids, as its compute drew them
      d.fillRows(row.data(), toks.data(), toks.size(), coefficients[p], junk[p]);
      for (size_t i = 0; i < toks.size(); ++i) d.add(want[i], row[i]);
    }
    std::vector<Value> got(toks.size());
    d.fillSum(got.data(), toks.data(), toks.size(), coefficients.data(), junk.data(), n);
    EXPECT_EQ(got, want) << n << " members";
  }
}

}  // namespace
}  // namespace seam
