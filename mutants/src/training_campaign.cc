// Training campaigns: the baseline over the training case space, then every
// training mutant, each stopped at its first kill (first in case order).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "seam/mutants/campaign.h"

namespace seam::mutants {

int TrainingCampaignResult::killed() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(),
                                        [](const auto& o) { return o.status == MutantStatus::kKilled; }));
}
int TrainingCampaignResult::survived() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(),
                                        [](const auto& o) { return o.status == MutantStatus::kSurvived; }));
}
int TrainingCampaignResult::equivalent() const {
  return static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(),
                                        [](const auto& o) { return o.status == MutantStatus::kEquivalent; }));
}

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

constexpr std::int64_t kNone = INT64_MAX;

/// Runs body(i) for i in [0, n) on `jobs` threads, skipping indices for which skip(i) holds.
template <class Body, class Skip>
void parallelFor(std::int64_t n, int jobs, Body body, Skip skip) {
  std::atomic<std::int64_t> next{0};
  auto worker = [&]() {
    for (;;) {
      const std::int64_t i = next.fetch_add(1);
      if (i >= n) return;
      if (skip(i)) continue;
      body(i);
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
}

bool samePlan(const TrainingPlan& a, const TrainingPlan& b) { return a.ranks == b.ranks; }

}  // namespace

Expected<TrainingCampaignResult> runTrainingCampaign(const TrainingCampaignSpec& spec) {
  if (spec.jobs < 1) return Status::invalid("--jobs must be >= 1");
  const auto start = std::chrono::steady_clock::now();
  const std::vector<TrainingCase> cases = trainingCampaignCases(spec);
  TrainingCampaignResult result;
  result.cases = static_cast<std::int64_t>(cases.size());
  const std::int64_t n = result.cases;
  {
    std::atomic<std::int64_t> first{kNone};
    std::mutex mu;
    std::optional<Violation> v;
    parallelFor(n, spec.jobs, [&](std::int64_t i) {
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
    }, [&](std::int64_t i) { return i > first.load(); });
    if (first.load() != kNone) {
      result.baseline_holds = false;
      result.baseline_case = reproduceTrainingCommand(cases[first.load()]);
      result.baseline_violation = v;
      result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return result;
    }
  }
  std::vector<const Mutant*> mutants = spec.mutants;
  if (mutants.empty()) mutants.assign(trainingRegistry().begin(), trainingRegistry().end());
  for (const Mutant* m : mutants) {
    TrainingMutantOutcome o;
    o.mutant = m;
    std::atomic<std::int64_t> first{kNone}, applied{0}, differed{0};
    std::int64_t smallest = kNone;
    std::mutex mu;
    std::optional<Violation> kill;
    parallelFor(n, spec.jobs, [&](std::int64_t i) {
      auto base = buildTrainingPlan(cases[i]);
      if (!base) return;
      Expected<TrainingPlan> mutated = m->kind() == MutantKind::kDecision
                                           ? buildTrainingPlan(cases[i], m->trainingDecision())
                                           : Expected<TrainingPlan>(*base);
      if (!mutated) return;
      if (!m->applyTraining(*mutated)) return;
      applied.fetch_add(1);
      if (samePlan(*base, *mutated)) return;
      differed.fetch_add(1);
      LedgerResult r = checkTrainingPlan(*mutated);
      std::lock_guard<std::mutex> lock(mu);
      if (!r.holds()) {
        if (i < first.load()) {
          first = i;
          kill = r.violations.front();
        }
      } else if (smallest == kNone || cases[i].config.world() < cases[smallest].config.world()) {
        smallest = i;
      }
    }, [&](std::int64_t i) { return i > first.load(); });
    o.cases_run = first.load() != kNone ? first.load() + 1 : n;
    o.applied = applied.load();
    o.differed = differed.load();
    if (first.load() != kNone) {
      o.status = MutantStatus::kKilled;
      o.kill_index = first.load();
      o.kill_case = reproduceTrainingCommand(cases[o.kill_index]);
      o.kill_violation = kill;
    } else if (o.differed == 0) {
      o.status = MutantStatus::kEquivalent;
      o.argument = "its site occurs in none of the " + std::to_string(n) + " cases (or its plans equal the unmutated ones)";
    } else {
      o.status = MutantStatus::kSurvived;
      o.argument = "its plans differ on " + std::to_string(o.differed) + " cases and every property holds; smallest: " +
                   reproduceTrainingCommand(cases[smallest]);
    }
    result.outcomes.push_back(std::move(o));
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace seam::mutants
