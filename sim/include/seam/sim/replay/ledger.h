// The ledger executor (DESIGN §3): replays a plan on every rank symbolically
// and proves each owed sum completed exactly once. Each row holds a linear
// combination of terms of one token: e(t) the embedding, p(s, t, j) stage s's
// contribution from weight shard j, n(s, t) the normed input of stage s.
// Before every nonlinear op (norm, compute, snapshot, the final output) a row
// must equal e(t) + sum_{s'<s} sum_j p(s', t, j) with every coefficient 1.
//
// Two value domains share one replay (the op semantics are written once):
// - fast: each row is a fingerprint of its combination in GF(2^61 - 1), with
//   p(s, t, j) = a(s, j) * b(t) for pseudo-random a, b. Linear ops are field
//   additions; a wrong combination escapes only if a nonzero polynomial of
//   degree 2 vanishes at the chosen point (probability <= 2/p per check).
// - exact: each row is the explicit list of (term, coefficient). It finds and
//   classifies every violation (LedgerOptions::exact runs it from the start).
// The fast path hands any violation it finds to a traced replay: each row its
// fingerprint and a record of the sums that made it, checked as the fast
// domain checks (so it stops at the same wrong row as an exact replay, with
// the fast domain's chance of a miss) and explained by the wrong row's terms
// as the exact domain lists them, so every reported violation is classified
// and named exactly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seam/sim/plan/plan.h"

namespace seam {

/// The properties of DESIGN §4, numbered as there.
enum class Property : std::uint8_t {
  kBoundariesAgree = 1,
  kOwedOnce = 2,
  kResidualFollows = 3,
  kCollectivesMatch = 4,
  kOutputComplete = 5,
  kSnapshots = 6,
  kExecutorsAgree = 7,
  kCallSizes = 8,
  kPlanGeometry = 9,
};
std::string_view propertyName(Property p);      ///< "owed-once", ...
std::string_view propertySentence(Property p);  ///< "every partial sum is completed exactly once"

/// What went wrong, in the classes of DESIGN §3 plus the structural ones.
enum class ViolationClass : std::uint8_t {
  kNeverCompleted,      ///< a term has coefficient 0: a sum never completed, or a term dropped
  kCountedTwice,        ///< a term has coefficient k > 1: double reduction, residual added twice
  kForeignTerm,         ///< a term of another token, stage or shard: wrong group, mixed rows
  kPaddingLeak,         ///< a padding row read as a token
  kLayoutMismatch,      ///< operands on different rows (residual does not follow, wrong layout)
  kCollectiveMismatch,  ///< members of a group issue different collectives
  kDeadlock,            ///< no rank can make progress
  kMissingOutput,       ///< the final output is absent or on the wrong rows
  kBoundaryDisagrees,   ///< the two sides of a boundary declare different hand-offs
  /// training: a recurrent state or attention runs across a document boundary
  /// (or resets inside a document): boundaries not the global, pre-shard ones
  kResetLeak,
  kWrongSize,          ///< a call's rows or bytes are not those of the case
  kGeometryDisagrees,  ///< a plan field disagrees with the judges' geometry of the case
  kMissingSnapshot,    ///< a requested capture yields no snapshot, or one elsewhere
  kWrongScale,         ///< a term has a fractional coefficient: a reduction averaged or rescaled
};
inline constexpr int kViolationClassCount = static_cast<int>(ViolationClass::kWrongScale) + 1;
std::string_view violationClassName(ViolationClass c);

/// One violation, located.
struct Violation {
  Property property = Property::kOwedOnce;
  ViolationClass cls = ViolationClass::kNeverCompleted;
  int rank = -1;      ///< rank where it was seen (-1: not rank-specific)
  int op_index = -1;  ///< index into plan.ranks[rank]
  int stack = 0;
  int layer = -1;
  int stage = -1;
  Phase phase = Phase::kEntry;
  OpKind op = OpKind::kNorm;
  int token = -1;                ///< token whose row is wrong (-1: none)
  std::string term;              ///< the offending term, e.g. "p(s3 '*', t2, j1)"
  std::int64_t coefficient = 0;  ///< its coefficient (expected 1 or 0)
  std::string detail;            ///< one sentence in words
};

/// One line locating and explaining a violation: "owed-once violated
/// (counted-k-times) at layer 3 stage 3 entry add_norm (op #9), rank 1, token
/// 2: ..." (a value for reports and stores; nothing is printed).
std::string describeViolation(const Violation& v);

/// Options of one replay.
struct LedgerOptions {
  bool exact = false;      ///< run the exact domain from the start
  int max_violations = 1;  ///< stop after this many
};

/// The outcome of one replay.
struct LedgerResult {
  bool holds() const { return violations.empty(); }
  std::vector<Violation> violations;
  std::int64_t ops_executed = 0;  ///< op instances executed over all ranks
  bool used_exact = false;        ///< violations explained by their terms (exact or traced domain)
};

/// A reusable replayer: keeps the fast replay's scratch buffers between
/// plans, so a sweep thread allocates little after its first case (the exact
/// replay of a violated case frees its own). Not thread-safe; use one per
/// thread.
class Ledger {
 public:
  Ledger();
  ~Ledger();
  Ledger(const Ledger&) = delete;
  Ledger& operator=(const Ledger&) = delete;

  LedgerResult replay(const Plan& plan, const LedgerOptions& options = {});

 private:
  struct Scratch;
  Scratch* scratch_;
};

/// Convenience for one plan.
LedgerResult replayPlan(const Plan& plan, const LedgerOptions& options = {});

}  // namespace seam
