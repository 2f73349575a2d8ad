// The traced domain (traced_domain.h): a row recorded as the sums and
// quotients that made it is checked by its fingerprint and explained by its
// terms. The expected terms are written out by hand from the rows' making;
// the expected explanations follow DESIGN §3's order of classes (padding,
// foreign term, fraction, counted k times, never completed).
#include "replay/traced_domain.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "replay/ledger_domains.h"

namespace seam {
namespace {

using ledger_detail::ExactDomain;
using ledger_detail::Expect;
using ledger_detail::StackShape;
using ledger_detail::TermList;
using ledger_detail::TracedDomain;
using Value = TracedDomain::Value;

/// Two stages of two weight shards each; stage s joins the complete value
/// at stage s + 1. Token 3 is the row under test.
struct Domains {
  Domains() {
    d.prepare(stacks, 8);
    x.prepare(stacks, 8);
  }
  /// p(s, t, j) in the traced domain.
  Value p(int s, int t, int j) const { return d.compute({}, 0, s, t, j, 2, 0, 0); }
  /// The list a + b + ... in the exact domain, from its atoms.
  TermList list(std::initializer_list<TermList> parts) const {
    TermList v;
    for (const TermList& a : parts) ExactDomain::addTerms(v, a);
    return v;
  }
  std::vector<StackShape> stacks{StackShape{{2, 2}, {1, 2}}};
  TracedDomain d;
  ExactDomain x;
};

TEST(TracedDomain, TheCompleteValueHoldsAndListsItsThreeTermsOnce) {
  Domains s;
  Value r = s.d.embed(0, 3);
  s.d.add(r, s.p(0, 3, 0));
  s.d.add(r, s.p(0, 3, 1));
  // Before stage 1: e(t3) + p(s0, t3, j0) + p(s0, t3, j1).
  EXPECT_TRUE(s.d.holds(r, Expect::kComplete, 0, 1, 3));
  EXPECT_FALSE(s.d.holds(r, Expect::kComplete, 0, 2, 3));  // p(s1, ...) missing
  const TermList want = s.list({s.x.embed(0, 3), s.x.partial(0, 0, 3, 0), s.x.partial(0, 0, 3, 1)});
  EXPECT_EQ(s.d.terms(r), want.flat());
}

TEST(TracedDomain, ASumAddedTwiceThroughOneRecordCountsItsTermsTwice) {
  Domains s;
  Value sum = s.p(0, 3, 0);
  s.d.add(sum, s.p(0, 3, 1));
  Value r = s.d.embed(0, 3);
  s.d.add(r, sum);
  s.d.add(r, sum);  // the same record reached twice
  EXPECT_FALSE(s.d.holds(r, Expect::kComplete, 0, 1, 3));
  const TermList::List terms = s.d.terms(r);
  ASSERT_EQ(terms.size(), 3u);
  EXPECT_EQ(terms[0].second, 1);  // e(t3)
  EXPECT_EQ(terms[1].second, 2);  // p(s0, t3, j0)
  EXPECT_EQ(terms[2].second, 2);  // p(s0, t3, j1)
  const auto x = s.d.explain(r, Expect::kComplete, 0, 1, 3);
  EXPECT_EQ(x.cls, ViolationClass::kCountedTwice);
  EXPECT_EQ(x.term, "p(s0, t3, j0)");
  EXPECT_EQ(x.coefficient, 2);
}

TEST(TracedDomain, AQuotientIsListedInLowestTermsOverOneDenominator) {
  Domains s;
  // (p0 + p0) / 2 is p0: the complete value holds, with no denominator.
  std::vector<Value> half{s.p(0, 3, 0)};
  s.d.add(half[0], s.p(0, 3, 0));
  s.d.divide(half, 2);
  Value r = s.d.embed(0, 3);
  s.d.add(r, half[0]);
  s.d.add(r, s.p(0, 3, 1));
  EXPECT_TRUE(s.d.holds(r, Expect::kComplete, 0, 1, 3));
  EXPECT_EQ(s.d.terms(r).size(), 3u);
  // (p0 + p0 + p0) / 2: p0 with coefficient 3/2, kept as 3 over 2.
  std::vector<Value> odd{s.p(0, 3, 0)};
  s.d.add(odd[0], s.p(0, 3, 0));
  s.d.add(odd[0], s.p(0, 3, 0));
  s.d.divide(odd, 2);
  const TermList::List terms = s.d.terms(odd[0]);
  ASSERT_EQ(terms.size(), 2u);
  EXPECT_EQ(terms[0].second, 3);
  EXPECT_EQ(terms[1], TermList::Term(ExactDomain::kDenominator, 2));
  const auto x = s.d.explain(odd[0], Expect::kComplete, 0, 1, 3);
  EXPECT_EQ(x.cls, ViolationClass::kWrongScale);
  EXPECT_EQ(x.term, "p(s0, t3, j0)");
  EXPECT_EQ(x.coefficient, 3);
  EXPECT_EQ(x.denominator, 2);
}

TEST(TracedDomain, PaddingThenAForeignTokenThenAMissingTermAreNamed) {
  Domains s;
  Value leak = s.d.embed(0, 3);
  s.d.add(leak, s.d.junk(7));
  EXPECT_EQ(s.d.explain(leak, Expect::kComplete, 0, 0, 3).cls, ViolationClass::kPaddingLeak);
  EXPECT_EQ(s.d.explain(leak, Expect::kComplete, 0, 0, 3).term, "junk#7");
  Value foreign = s.d.embed(0, 3);
  s.d.add(foreign, s.p(0, 3, 0));
  s.d.add(foreign, s.p(0, 5, 1));  // token 5's partial on token 3's row
  const auto f = s.d.explain(foreign, Expect::kComplete, 0, 1, 3);
  EXPECT_EQ(f.cls, ViolationClass::kForeignTerm);
  EXPECT_EQ(f.term, "p(s0, t5, j1)");
  EXPECT_EQ(f.foreign_token, 5);
  Value missing = s.d.embed(0, 3);
  s.d.add(missing, s.p(0, 3, 0));
  EXPECT_FALSE(s.d.holds(missing, Expect::kComplete, 0, 1, 3));
  const auto m = s.d.explain(missing, Expect::kComplete, 0, 1, 3);
  EXPECT_EQ(m.cls, ViolationClass::kNeverCompleted);
  EXPECT_EQ(m.term, "p(s0, t3, j1)");
}

TEST(TracedDomain, ZeroTakesWhatIsAddedAndANormIsItsOneTerm) {
  Domains s;
  Value z = s.d.zero();
  EXPECT_TRUE(s.d.terms(z).empty());
  s.d.add(z, s.p(1, 2, 1));
  EXPECT_EQ(s.d.terms(z), s.x.partial(0, 1, 2, 1).flat());
  const Value n = s.d.norm(z, 0, 1, 2, 0);
  EXPECT_TRUE(s.d.holds(n, Expect::kNormed, 0, 1, 2));
  EXPECT_FALSE(s.d.holds(n, Expect::kNormed, 0, 0, 2));
  EXPECT_EQ(s.d.terms(n), s.x.normed(0, 1, 2).flat());
}

}  // namespace
}  // namespace seam
