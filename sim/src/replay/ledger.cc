// The ledger (ledger.h): the names and sentences of its properties and
// violations, and the replay of a plan (replay.h) over the fast domain,
// then, for every reported violation, over the traced domain, which names
// the wrong rows' terms as the exact domain does (or over the exact domain
// from the start).
#include "seam/sim/replay/ledger.h"

#include <optional>
#include <string>

#include "replay/ledger_domains.h"
#include "replay/replay.h"
#include "replay/traced_domain.h"

namespace seam {

std::string_view propertyName(Property p) {
  switch (p) {
    case Property::kBoundariesAgree:
      return "boundaries-agree";
    case Property::kOwedOnce:
      return "owed-once";
    case Property::kResidualFollows:
      return "residual-follows";
    case Property::kCollectivesMatch:
      return "collectives-match";
    case Property::kOutputComplete:
      return "output-complete";
    case Property::kSnapshots:
      return "snapshots";
    case Property::kExecutorsAgree:
      return "executors-agree";
    case Property::kCallSizes:
      return "call-sizes";
    case Property::kPlanGeometry:
      return "plan-geometry";
  }
  return "?";
}

std::string_view propertySentence(Property p) {
  switch (p) {
    case Property::kBoundariesAgree:
      return "the two sides of every boundary declare the same rows, sum and completer";
    case Property::kOwedOnce:
      return "every partial sum is completed exactly once";
    case Property::kResidualFollows:
      return "the residual holds the hidden state's tokens, in order, at every add";
    case Property::kCollectivesMatch:
      return "every member of a group issues the same collectives with the same sizes";
    case Property::kOutputComplete:
      return "every token's final value is present, complete and on the rows the next consumer "
             "reads (attention "
             "rows; all of a CP-sharded DP shard's tokens in order)";
    case Property::kSnapshots:
      return "every aux snapshot equals the complete hidden state at its boundary";
    case Property::kExecutorsAgree:
      return "the numeric executor matches the single-rank reference bit for bit";
    case Property::kCallSizes:
      return "every op's rows and bytes are the case's (rows from the judges' geometry, hidden "
             "size, bf16)";
    case Property::kPlanGeometry:
      return "the plan's padding, CP layout, local split, attention rows, TBO split and stages are "
             "those the "
             "judges derive from the case";
  }
  return "?";
}

std::string_view violationClassName(ViolationClass c) {
  switch (c) {
    case ViolationClass::kNeverCompleted:
      return "never-completed";
    case ViolationClass::kCountedTwice:
      return "counted-k-times";
    case ViolationClass::kForeignTerm:
      return "foreign-term";
    case ViolationClass::kPaddingLeak:
      return "padding-leak";
    case ViolationClass::kLayoutMismatch:
      return "layout-mismatch";
    case ViolationClass::kCollectiveMismatch:
      return "collective-mismatch";
    case ViolationClass::kDeadlock:
      return "deadlock";
    case ViolationClass::kMissingOutput:
      return "missing-output";
    case ViolationClass::kBoundaryDisagrees:
      return "boundary-disagrees";
    case ViolationClass::kWrongSize:
      return "wrong-size";
    case ViolationClass::kGeometryDisagrees:
      return "geometry-disagrees";
    case ViolationClass::kMissingSnapshot:
      return "missing-snapshot";
    case ViolationClass::kWrongScale:
      return "wrong-scale";
    case ViolationClass::kResetLeak:
      return "reset-leak";
  }
  return "?";
}

std::string describeViolation(const Violation& v) {
  std::string s = std::string(propertyName(v.property)) + " violated (" +
                  std::string(violationClassName(v.cls)) + ")";
  if (v.stage >= 0 || v.op_index >= 0) {
    s += " at ";
    if (v.stack == 1) s += "MTP ";
    s += "layer " + std::to_string(v.layer) + " stage " + std::to_string(v.stage) + " " +
         std::string(phaseName(v.phase));
    if (v.op_index >= 0)
      s += " " + std::string(opName(v.op)) + " (op #" + std::to_string(v.op_index) + ")";
  }
  if (v.rank >= 0) s += ", rank " + std::to_string(v.rank);
  if (v.token >= 0) s += ", token " + std::to_string(v.token);
  return s + ": " + v.detail;
}

struct Ledger::Scratch {
  std::optional<ledger_detail::Replay<ledger_detail::FastDomain>> fast;
};

Ledger::Ledger() : scratch_(new Scratch) {}
Ledger::~Ledger() { delete scratch_; }

LedgerResult Ledger::replay(const Plan& plan, const LedgerOptions& options) {
  if (options.exact) {
    ledger_detail::Replay<ledger_detail::ExactDomain> replay;
    LedgerResult exact = replay.run(plan, options);
    exact.used_exact = true;
    return exact;
  }
  if (!scratch_->fast) scratch_->fast.emplace();
  LedgerResult fast = scratch_->fast->run(plan, options);
  if (fast.holds()) return fast;
  // Every violation is reported with the exact domain's classes and terms.
  // The traced replay checks as the fast one does, so it meets the exact
  // replay's violations, and lists only a wrong row's terms (the exact
  // domain kept a list per row: most of a violated case's time). The fast
  // replay's buffers are freed first (a large case's are tens of MB at world
  // 128), and the traced replay's state is not kept for the next case.
  scratch_->fast.reset();
  ledger_detail::Replay<ledger_detail::TracedDomain> replay;
  LedgerResult traced = replay.run(plan, options);
  traced.used_exact = true;
  return traced;
}

LedgerResult replayPlan(const Plan& plan, const LedgerOptions& options) {
  Ledger ledger;
  return ledger.replay(plan, options);
}

}  // namespace seam
