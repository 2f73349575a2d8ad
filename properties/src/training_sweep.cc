#include "seam/properties/training_sweep.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "seam/sim/model/config_space.h"
#include "seam/sim/training/training_ledger.h"
#include "sweep_tally.h"

namespace seam::properties {

std::vector<TrainingCase> trainingSweepCases(const TrainingSweepSpec& spec,
                                             std::vector<int>* tally_of) {
  const std::vector<const ModelPreset*> models =
      spec.models.empty() ? trainingPresets() : spec.models;
  std::vector<TrainingCase> out;
  int tally = 0;
  for (const ModelPreset* m : models) {
    for (TrainingLayout layout : spec.layouts) {
      for (const TrainingConfig& c : trainingConfigs(layout, spec.world)) {
        for (auto& docs : trainingBatches(c)) {
          out.push_back(TrainingCase{m, c, docs});
          if (tally_of) tally_of->push_back(tally);
        }
      }
      ++tally;
    }
  }
  return out;
}

Expected<SweepResult> runTrainingSweep(const TrainingSweepSpec& spec) {
  if (spec.world < 1 || spec.world > kMaxWorld) {
    return Status::invalid("--world " + std::to_string(spec.world) + " is not in 1.." +
                           std::to_string(kMaxWorld));
  }
  if (spec.jobs < 1)
    return Status::invalid("--jobs " + std::to_string(spec.jobs) + " must be >= 1");
  const auto start = std::chrono::steady_clock::now();
  std::vector<int> tally_of;
  const std::vector<TrainingCase> cases = trainingSweepCases(spec, &tally_of);
  SweepResult result;
  for (const ModelPreset* m : spec.models.empty() ? trainingPresets() : spec.models) {
    for (TrainingLayout layout : spec.layouts) {
      ModelTally& t = result.per_model.emplace_back();
      t.model = std::string(m->name);
      t.layout = layout;
    }
  }
  struct Outcome {
    bool refused = false;
    std::string refusal;
    std::optional<Violation> violation;
    double seconds = 0;
  };
  std::vector<Outcome> outcomes(cases.size());
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= cases.size()) return;
      const auto t0 = std::chrono::steady_clock::now();
      Outcome& o = outcomes[i];
      auto plan = buildTrainingPlan(cases[i]);
      if (!plan) {
        o.refused = plan.status().code() == StatusCode::kRefused;
        o.refusal = plan.status().message();
        if (!o.refused) {
          Violation v;
          v.cls = ViolationClass::kMissingOutput;
          v.detail = "the planner could not plan this case: " + o.refusal;
          o.violation = v;
        }
      } else {
        LedgerResult r = checkTrainingPlan(*plan);
        if (!r.holds()) o.violation = r.violations.front();
      }
      o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < spec.jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  std::map<std::string, std::int64_t> refusals;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Outcome& o = outcomes[i];
    ModelTally& t = result.per_model[tally_of[i]];
    t.seconds += o.seconds;
    ++t.run_here;
    if (countCase(result, t, refusals, o.refused, o.refusal, o.violation.has_value(),
                  spec.max_failures)) {
      result.failures.push_back({static_cast<std::int64_t>(i), describeViolation(*o.violation),
                                 reproduceTrainingCommand(cases[i])});
    }
  }
  result.cases = result.checked + result.refused;
  result.run_here = result.cases;
  result.refusals = sortedRefusals(refusals);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace seam::properties
