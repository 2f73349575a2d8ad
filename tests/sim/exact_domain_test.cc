// The exact domain's sharing of long sums (ledger_domains.h): rows that hold
// the same terms share one list, and a list changed in place is never taken
// for the sum it held before.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "replay/ledger_domains.h"

namespace seam {
namespace {

using ledger_detail::ExactDomain;
using ledger_detail::StackShape;
using ledger_detail::TermList;

/// A sum of `n` distinct partials of token `t` (long enough to be shared).
TermList partials(const ExactDomain& d, int stage, int t, int n) {
  TermList v;
  for (int j = 0; j < n; ++j) ExactDomain::addTerms(v, d.partial(0, stage, t, j));
  return v;
}

struct Domain {
  Domain() { d.prepare(stacks, 8); }
  std::vector<StackShape> stacks{StackShape{{64, 64, 64}, {1, 2, 3}}};
  ExactDomain d;
};

TEST(ExactDomain, TwoRanksAddingTheSameSumToEqualRowsEndWithOneList) {
  Domain x;
  // Two ranks' residual rows: equal terms in lists of their own.
  TermList r0 = x.d.embed(0, 3), r1 = x.d.embed(0, 3);
  const TermList s = partials(x.d, 0, 3, 32);
  x.d.add(r0, s);
  x.d.add(r1, s);
  EXPECT_EQ(r0.flat(), r1.flat());
  EXPECT_EQ(r0.id(), r1.id());  // one list: the same id
  // The next stage's sum, added to the now shared rows, is made once.
  const TermList s1 = partials(x.d, 1, 3, 32);
  x.d.add(r0, s1);
  x.d.add(r1, s1);
  EXPECT_EQ(r0.id(), r1.id());
  EXPECT_EQ(r0.size(), 65u);
}

TEST(ExactDomain, AListChangedInPlaceIsNotTakenForTheSumItHeldBefore) {
  Domain x;
  TermList a = partials(x.d, 0, 1, 20);
  const TermList copy_of_a = a;  // the same list as a
  const TermList b = partials(x.d, 1, 1, 20), c = partials(x.d, 2, 1, 20);
  x.d.add(a, b);  // a is now a + b, a list of its own
  x.d.add(a, c);  // ... which it changes in place: a + b + c
  TermList again = copy_of_a;
  x.d.add(again, b);  // must be a + b, not the list that held it
  EXPECT_EQ(again.size(), 40u);
  EXPECT_EQ(a.size(), 60u);
  TermList want = partials(x.d, 0, 1, 20);
  ExactDomain::addTerms(want, b);
  EXPECT_EQ(again.flat(), want.flat());
}

TEST(ExactDomain, AReductionSumsEveryMembersRowsInMemberOrderAndSharesEqualSums) {
  Domain x;
  // Two groups of four members whose rows hold the same partials.
  std::vector<std::vector<TermList>> members(4);
  for (int p = 0; p < 4; ++p) {
    for (int t = 0; t < 2; ++t) members[p].push_back(partials(x.d, 0, t, 16 * (p + 1)));
  }
  std::vector<TermList> sum0 = members[0], sum1 = members[0];
  const auto rows_of = [&](size_t p) -> const std::vector<TermList>& { return members[p]; };
  x.d.reduceCall(sum0, 4, rows_of, 0);
  x.d.reduceCall(sum1, 4, rows_of, 0);
  for (int t = 0; t < 2; ++t) {
    TermList want;
    for (int p = 0; p < 4; ++p) ExactDomain::addTerms(want, members[p][t]);
    EXPECT_EQ(sum0[t].flat(), want.flat());
    EXPECT_EQ(sum0[t].id(), sum1[t].id());
  }
  // Every partial j < 16 is in all four members' rows: coefficient 4.
  EXPECT_EQ(sum0[0].front().second, 4);
  EXPECT_EQ(sum0[0].size(), 64u);
}

TEST(ExactDomain, ARowJoinedWithLaterStagesSumsIsCheckedAsOneListAndChangesNoPart) {
  Domain x;
  const int t = 2;
  const TermList s0 = partials(x.d, 0, t, 64), s1 = partials(x.d, 1, t, 64);
  TermList row = x.d.embed(0, t);
  x.d.add(row, s0);  // held as e(t) joined with s0's list, then with s1's
  x.d.add(row, s1);
  EXPECT_EQ(row.size(), 129u);
  EXPECT_TRUE(x.d.holds(row, ledger_detail::Expect::kComplete, 0, 2, t));
  EXPECT_FALSE(x.d.holds(row, ledger_detail::Expect::kComplete, 0, 3, t));  // s2 never added
  // Changing a copy changes neither the row nor the sums it joined.
  TermList halved = row;
  ExactDomain::divideTerms(halved, 2);
  EXPECT_EQ(halved.back().first, ExactDomain::kDenominator);
  EXPECT_TRUE(x.d.holds(row, ledger_detail::Expect::kComplete, 0, 2, t));
  EXPECT_EQ(s0.size(), 64u);
  EXPECT_EQ(s0.back().second, 1);
  // A joined row that misses a stage is explained as one list would be.
  TermList partial_row = x.d.embed(0, t);
  x.d.add(partial_row, s0);
  const auto why = x.d.explain(partial_row, ledger_detail::Expect::kComplete, 0, 2, t);
  EXPECT_EQ(why.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(why.term, "p(s1, t2, j0)");
}

}  // namespace
}  // namespace seam
