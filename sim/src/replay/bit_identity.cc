#include "seam/sim/replay/bit_identity.h"

#include <algorithm>

#include "replay/arithmetic_domain.h"
#include "replay/replay.h"

namespace seam {

namespace {

int stackCount(const Plan& plan) { return plan.source.model.pattern.mtp.empty() ? 1 : 2; }

}  // namespace

ArithmeticOutput arithmeticOf(const Plan& plan) {
  ledger_detail::Replay<ledger_detail::ArithmeticDomain> replay;
  LedgerOptions options;
  options.max_violations = 1;
  const LedgerResult r = replay.run(plan, options);
  ArithmeticOutput out;
  if (!r.holds()) {
    out.failure = describeViolation(r.violations.front());
    return out;
  }
  const int tokens = plan.source.batch.total();
  const int stacks = stackCount(plan);
  out.rows.assign(stacks, std::vector<std::uint64_t>(tokens, 0));
  for (int s : plan.source.flags.capture) {
    if (std::any_of(out.snapshots.begin(), out.snapshots.end(),
                    [&](const auto& p) { return p.first == s; }))
      continue;
    out.snapshots.emplace_back(s, std::vector<std::uint64_t>(tokens, 0));
  }
  // As runPlanNumeric assembles its output: a token's row is its first
  // holder's in rank order (another holder's other expression is a
  // disagreement); a snapshot's, the last copy's.
  std::vector<std::vector<bool>> seen(stacks, std::vector<bool>(tokens, false));
  replay.visitOutputs(
      [&](int stack, int t, std::uint64_t row) {
        if (stack >= stacks) return;
        out.held.push_back(row);
        if (!seen[stack][t]) {
          seen[stack][t] = true;
          out.rows[stack][t] = row;
        } else if (out.rows[stack][t] != row) {
          out.ranks_disagree = true;
        }
      },
      [&](int stage, int t, std::uint64_t row) {
        auto it = std::find_if(out.snapshots.begin(), out.snapshots.end(),
                               [&](const auto& p) { return p.first == stage; });
        if (it != out.snapshots.end()) it->second[t] = row;
      });
  return out;
}

BitIdentityPrediction predictBitIdentity(const Plan& a, const Plan& b) {
  const ArithmeticOutput x = arithmeticOf(a);
  const ArithmeticOutput y = arithmeticOf(b);
  if (!x.failure.empty()) return {false, "plan A does not run: " + x.failure};
  if (!y.failure.empty()) return {false, "plan B does not run: " + y.failure};
  if (x.rows.size() != y.rows.size()) return {false, "the plans have different stacks"};
  for (size_t s = 0; s < x.rows.size(); ++s) {
    for (size_t t = 0; t < x.rows[s].size() && t < y.rows[s].size(); ++t) {
      if (x.rows[s][t] != y.rows[s][t]) {
        return {false, "token " + std::to_string(t) + " of " +
                           (s == 0 ? "the main stack" : "the MTP step") +
                           " is computed by other roundings (another order or grouping of its "
                           "sums, or a GEMM of "
                           "another size)"};
      }
    }
  }
  if (x.held != y.held) {
    return {false, std::string("the first holders of every token agree, but another rank "
                               "holding a token computes it another way in plan ") +
                       (x.ranks_disagree   ? "A"
                        : y.ranks_disagree ? "B"
                                           : "A or B") +
                       " (or the plans hold their outputs on other ranks)"};
  }
  for (const auto& snap : x.snapshots) {
    const int stage = snap.first;
    const auto it = std::find_if(y.snapshots.begin(), y.snapshots.end(),
                                 [&](const auto& p) { return p.first == stage; });
    if (it == y.snapshots.end() || it->second != snap.second) {
      return {false, "the snapshot before stage " + std::to_string(stage) +
                         " is computed by other roundings"};
    }
  }
  return {true, ""};
}

PredictionVerdict judgePrediction(bool predicted_identical, bool observed_identical) {
  if (predicted_identical)
    return observed_identical ? PredictionVerdict::kHolds : PredictionVerdict::kRefuted;
  return observed_identical ? PredictionVerdict::kUntested : PredictionVerdict::kHolds;
}

std::string_view predictionVerdictName(PredictionVerdict v) {
  switch (v) {
    case PredictionVerdict::kHolds:
      return "holds";
    case PredictionVerdict::kRefuted:
      return "refuted";
    case PredictionVerdict::kUntested:
      return "untested (other roundings, the same bits on this run)";
  }
  return "?";
}

}  // namespace seam
