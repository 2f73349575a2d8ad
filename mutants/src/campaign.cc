#include "seam/mutants/campaign.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "campaign_run.h"

namespace seam::mutants {

std::string_view statusName(MutantStatus s) {
  switch (s) {
    case MutantStatus::kKilled:
      return "killed";
    case MutantStatus::kSurvived:
      return "survived";
    case MutantStatus::kEquivalent:
      return "equivalent";
  }
  return "?";
}

int CampaignResult::killed() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(), [](const auto& o) {
    return o.status == MutantStatus::kKilled;
  }));
}
int CampaignResult::survived() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(), [](const auto& o) {
    return o.status == MutantStatus::kSurvived;
  }));
}
int CampaignResult::equivalent() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(), [](const auto& o) {
    return o.status == MutantStatus::kEquivalent;
  }));
}

std::vector<Case> campaignCases(const CampaignSpec& spec) {
  std::vector<Case> out;
  for (const auto& m : spec.models) {
    if (!m.model) continue;
    for (int world : spec.worlds) {
      for (Case& c : properties::enumerateCases(*m.model, world)) out.push_back(std::move(c));
    }
  }
  return out;
}

namespace {

/// Plans are the same when every rank runs the same ops on the same
/// communicators: an axis renamed to another whose group has the same ranks
/// (attn_tp == tp without DP attention) changes nothing that runs.
bool samePlan(const Plan& a, const Plan& b) {
  if (a.ranks == b.ranks) return true;
  if (a.ranks.size() != b.ranks.size()) return false;
  const Topology topo(a.source.config);
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    const auto& x = a.ranks[r];
    const auto& y = b.ranks[r];
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] == y[i]) continue;
      Op renamed = y[i];
      renamed.axis = x[i].axis;
      if (!(renamed == x[i]) || !x[i].hasGroup() || !y[i].hasGroup()) return false;
      if (topo.groupOf(x[i].groupAxis(), static_cast<int>(r)) !=
          topo.groupOf(y[i].groupAxis(), static_cast<int>(r))) {
        return false;
      }
    }
  }
  return true;
}

/// A case's size, for "the smallest case": layers, then world, then tokens.
std::tuple<int, int, int> sizeOf(const Case& c) {
  return {c.model.pattern.size() + static_cast<int>(c.model.pattern.mtp.size()), c.config.world(),
          c.batch.total()};
}

constexpr std::int64_t kChunk = 32;

/// Plans and checks every case of the space with no mutant. Returns the
/// cases the engine does not refuse (the campaign's space); `result` gets
/// the refusals and the first failing case.
std::vector<Case> runBaseline(const CampaignSpec& spec, CampaignResult& result) {
  std::vector<Case> all = campaignCases(spec);
  std::vector<char> refused(all.size(), 0);
  std::vector<char> failed(all.size(), 0);
  std::vector<std::optional<Violation>> baseline_violation(all.size());
  parallelFor(
      static_cast<std::int64_t>(all.size()), spec.jobs, kChunk,
      [&](std::int64_t i, Ledger& ledger) {
        auto plan = buildPlan(all[i], spec.policy, spec.schema);
        if (!plan) {
          refused[i] = plan.status().code() == StatusCode::kRefused;
          if (!refused[i]) {
            failed[i] = 1;
            Violation v;
            v.detail = plan.status().message();
            baseline_violation[i] = v;
          }
          return;
        }
        auto verdict = properties::checkPlan(*plan, ledger);
        if (!verdict.holds()) {
          failed[i] = 1;
          baseline_violation[i] = verdict.firstViolation();
        }
      },
      [](std::int64_t) { return false; });
  std::vector<Case> cases;
  cases.reserve(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    if (failed[i] && result.baseline_holds) {
      result.baseline_holds = false;
      result.baseline_case = all[i];
      result.baseline_reproduce = reproduceCommand(all[i], policyName(spec.policy));
      result.baseline_violation = baseline_violation[i];
    }
    if (refused[i]) {
      ++result.baseline_refused;
    } else {
      cases.push_back(std::move(all[i]));
    }
  }
  return cases;
}

/// Why a mutant whose plans never differ is equivalent.
std::string equivalenceArgument(const Mutant& m, const MutantOutcome& o, std::int64_t n) {
  if (m.kind() == MutantKind::kDecision) {
    return "planning with this decision flipped gives the unmutated plan on all " +
           std::to_string(n) + " cases: no case of this space reaches the decision site";
  }
  return o.applied == 0
             ? "its site occurs in none of the " + std::to_string(n) +
                   " cases: every mutated plan is the unmutated plan"
             : "its plans run the same ops on the same communicators as the "
               "unmutated plans on all " +
                   std::to_string(o.applied) + " cases where its site occurs (none of the other " +
                   std::to_string(n - o.applied) + " has it)";
}

/// One mutant against the space, stopped at its first kill in case order.
MutantOutcome runMutant(const CampaignSpec& spec, const Mutant& m, const std::vector<Case>& cases) {
  const std::int64_t n = static_cast<std::int64_t>(cases.size());
  MutantFindings found;
  parallelFor(
      n, spec.jobs, kChunk,
      [&](std::int64_t i, Ledger& ledger) {
        auto base = buildPlan(cases[i], spec.policy, spec.schema);
        if (!base) return;
        const Schema flipped{spec.schema.flipped | m.schema().flipped};
        Expected<Plan> mutated = m.kind() == MutantKind::kDecision
                                     ? buildPlan(cases[i], spec.policy, flipped)
                                     : Expected<Plan>(*base);
        if (!mutated) {
          // The mutated planner refuses or fails where the real one plans: killed.
          Violation v;
          v.detail = "the mutated planner fails: " + mutated.status().message();
          found.killed(i, v);
          return;
        }
        if (m.kind() == MutantKind::kPlan && !m.apply(*mutated)) return;
        found.applied();
        if (samePlan(*base, *mutated)) return;
        found.differed();
        auto verdict = properties::checkPlan(*mutated, ledger);
        if (!verdict.holds()) {
          found.killed(i, verdict.firstViolation());
        } else {
          found.survived(i, [&](std::int64_t a, std::int64_t b) {
            return sizeOf(cases[a]) < sizeOf(cases[b]);
          });
        }
      },
      [&](std::int64_t i) { return found.decidedBefore(i); });
  MutantOutcome o = found.outcome(&m, n);
  if (o.status == MutantStatus::kKilled) {
    o.kill_case = cases[o.kill_index];
    o.kill_reproduce = reproduceCommand(cases[o.kill_index], policyName(spec.policy));
  } else if (o.status == MutantStatus::kEquivalent) {
    o.argument = equivalenceArgument(m, o, n);
  } else {
    o.smallest = cases[found.smallest()];
    o.argument = "its plans differ on " + std::to_string(o.differed) +
                 " cases and every property holds on all of them; smallest: " +
                 reproduceCommand(cases[found.smallest()], policyName(spec.policy));
  }
  return o;
}

}  // namespace

Expected<CampaignResult> runCampaign(const CampaignSpec& spec, CampaignListener* listener) {
  if (spec.jobs < 1)
    return Status::invalid("--jobs " + std::to_string(spec.jobs) + " must be >= 1");
  for (int w : spec.worlds) {
    if (w < 1 || w > kMaxWorld)
      return Status::invalid("world " + std::to_string(w) + " is out of range");
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&]() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  CampaignResult result;
  // The space, without the cases the engine refuses (they plan under no mutant).
  const std::vector<Case> cases = runBaseline(spec, result);
  result.cases = static_cast<std::int64_t>(cases.size());
  if (listener) listener->onBaseline(result.cases, result.baseline_holds);
  if (!result.baseline_holds) {
    result.seconds = elapsed();
    return result;
  }
  std::vector<const Mutant*> mutants = spec.mutants;
  if (mutants.empty()) mutants.assign(registry().begin(), registry().end());
  int done = 0;
  for (const Mutant* m : mutants) {
    std::optional<MutantOutcome> stored = listener ? listener->recalled(*m) : std::nullopt;
    if (stored) {
      stored->mutant = m;
      result.outcomes.push_back(*stored);
    } else {
      result.outcomes.push_back(runMutant(spec, *m, cases));
    }
    if (listener)
      listener->onMutant(result.outcomes.back(), ++done, static_cast<int>(mutants.size()));
  }
  result.seconds = elapsed();
  return result;
}

}  // namespace seam::mutants
