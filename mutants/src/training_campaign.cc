// Training campaigns: the baseline over the training case space, then every
// training mutant, each stopped at its first kill (first in case order).
#include <atomic>
#include <chrono>
#include <mutex>

#include "campaign_run.h"
#include "seam/mutants/campaign.h"
#include "seam/sim/training/training_ledger.h"

namespace seam::mutants {

std::vector<TrainingCase> trainingCampaignCases(const TrainingCampaignSpec& spec) {
  std::vector<const ModelPreset*> models = spec.models.empty() ? trainingPresets() : spec.models;
  std::vector<TrainingCase> out;
  for (const ModelPreset* m : models) {
    for (TrainingLayout layout : spec.layouts) {
      for (int w : spec.worlds) {
        for (const TrainingConfig& c : trainingConfigs(layout, w)) {
          for (auto& docs : trainingBatches(c)) {
            TrainingCase tc{m, c, docs};
            if (validateTrainingCase(tc)) out.push_back(std::move(tc));
          }
        }
      }
    }
  }
  return out;
}

namespace {

/// Training cases are few and slow: handed out one at a time.
constexpr std::int64_t kChunk = 1;

bool samePlan(const TrainingPlan& a, const TrainingPlan& b) { return a.ranks == b.ranks; }

/// Plans and checks every case with no mutant; false (and the first failing
/// case, in case order, in `result`) when one fails.
bool runTrainingBaseline(const TrainingCampaignSpec& spec, const std::vector<TrainingCase>& cases,
                         CampaignResult& result) {
  std::atomic<std::int64_t> first{kNoCase};
  std::mutex mu;
  std::optional<Violation> v;
  parallelFor(
      static_cast<std::int64_t>(cases.size()), spec.jobs, kChunk,
      [&](std::int64_t i, Ledger&) {
        auto plan = buildTrainingPlan(cases[i]);
        LedgerResult r = plan ? checkTrainingPlan(*plan) : LedgerResult{};
        if (!plan) {
          Violation x;
          x.detail = "the planner fails: " + plan.status().message();
          r.violations.push_back(x);
        }
        if (r.holds()) return;
        std::lock_guard<std::mutex> lock(mu);
        if (i < first.load()) {
          first = i;
          v = r.violations.front();
        }
      },
      [&](std::int64_t i) { return i > first.load(); });
  if (first.load() == kNoCase) return true;
  result.baseline_holds = false;
  result.baseline_reproduce = reproduceTrainingCommand(cases[first.load()]);
  result.baseline_violation = v;
  return false;
}

/// One training mutant against the space, stopped at its first kill in case order.
MutantOutcome runTrainingMutant(const TrainingCampaignSpec& spec, const Mutant& m,
                                const std::vector<TrainingCase>& cases) {
  const std::int64_t n = static_cast<std::int64_t>(cases.size());
  MutantFindings found(n);
  parallelFor(
      n, spec.jobs, kChunk,
      [&](std::int64_t i, Ledger&) {
        auto base = buildTrainingPlan(cases[i]);
        if (!base) return;
        Expected<TrainingPlan> mutated = m.kind() == MutantKind::kDecision
                                             ? buildTrainingPlan(cases[i], m.trainingDecision())
                                             : Expected<TrainingPlan>(*base);
        if (!mutated) {
          found.plannerError(i, mutated.status().message());
          return;
        }
        if (!m.applyTraining(*mutated)) return;
        found.applied(i);
        if (samePlan(*base, *mutated)) return;
        found.differed(i);
        LedgerResult r = checkTrainingPlan(*mutated);
        if (!r.holds()) {
          found.killed(i, r.violations.front());
        } else {
          found.survived(i, [&](std::int64_t a, std::int64_t b) {
            return cases[a].config.world() < cases[b].config.world();
          });
        }
      },
      [&](std::int64_t i) { return found.decidedBefore(i); });
  MutantOutcome o = found.outcome(&m, n);
  if (o.status == MutantStatus::kKilled) {
    o.kill_reproduce =
        reproduceTrainingCommand(cases[o.kill_index]) + " --mutant " + std::string(m.id());
  } else if (o.status == MutantStatus::kEquivalent) {
    o.argument = "its site occurs in " + std::to_string(o.applied) + " of the " +
                 std::to_string(n) + " cases and every mutated plan equals the unmutated one";
  } else if (o.status == MutantStatus::kNotCovered) {
    o.argument = "its site occurs in none of the " + std::to_string(n) + " cases";
  } else if (o.status == MutantStatus::kPlannerError) {
    o.argument = "the mutated planner fails on " + std::to_string(o.planner_errors) +
                 " cases (not a kill): " + found.errorDetail() +
                 "; first: " + reproduceTrainingCommand(cases[found.firstError()]);
  } else {
    o.argument = "its plans differ on " + std::to_string(o.differed) +
                 " cases and every property holds; smallest: " +
                 reproduceTrainingCommand(cases[found.smallest()]);
  }
  return o;
}

}  // namespace

Expected<CampaignResult> runTrainingCampaign(const TrainingCampaignSpec& spec) {
  if (spec.jobs < 1) return Status::invalid("--jobs must be >= 1");
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&]() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  const std::vector<TrainingCase> cases = trainingCampaignCases(spec);
  CampaignResult result;
  result.cases = static_cast<std::int64_t>(cases.size());
  if (!runTrainingBaseline(spec, cases, result)) {
    result.seconds = elapsed();
    return result;
  }
  std::vector<const Mutant*> mutants = spec.mutants;
  if (mutants.empty()) mutants.assign(trainingRegistry().begin(), trainingRegistry().end());
  for (const Mutant* m : mutants) result.outcomes.push_back(runTrainingMutant(spec, *m, cases));
  result.seconds = elapsed();
  return result;
}

}  // namespace seam::mutants
