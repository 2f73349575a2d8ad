// Mutation campaigns (DESIGN §5): a baseline over the case space with no
// mutant (a broken baseline must not count as kills), then every mutant
// against the space, each stopped at its first kill (first in case order).
// A mutant whose plans equal the unmutated plans on every case of the space
// is equivalent, with that argument; one whose plans differ somewhere while
// every property holds survives, shown by its smallest such case.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "seam/mutants/mutant.h"
#include "seam/properties/sweep.h"
#include "seam/sim/training/training_case.h"

namespace seam::mutants {

/// The case space and the mutants of a campaign.
struct CampaignSpec {
  std::vector<properties::SweepModel> models;
  std::vector<int> worlds = {2, 4, 8, 16};
  PolicyKind policy = PolicyKind::kDeclared;
  /// The planner's own decisions (none flipped for a real campaign); decision
  /// mutants flip theirs on top. A schema that breaks the policy makes the
  /// baseline fail, which aborts the campaign.
  Schema schema;
  std::vector<const Mutant*> mutants;  ///< empty: the whole registry
  int jobs = 1;
};

/// The case space of a campaign, in its fixed order (models x worlds x the
/// sweep's configs, flags and batches).
std::vector<Case> campaignCases(const CampaignSpec& spec);

enum class MutantStatus { kKilled, kSurvived, kEquivalent };
std::string_view statusName(MutantStatus s);

/// What became of one mutant, in a serving or a training campaign.
struct MutantOutcome {
  const Mutant* mutant = nullptr;
  MutantStatus status = MutantStatus::kSurvived;
  std::int64_t cases_run = 0;  ///< cases up to the verdict, in case order (deterministic)
  std::int64_t applied = 0;    ///< cases where its site existed (plan mutants) or it planned
  std::int64_t differed = 0;   ///< cases where its plan differed from the unmutated one
  // killed:
  std::int64_t kill_index = -1;
  std::optional<Case> kill_case;  ///< serving: the killing case (training: kill_reproduce)
  std::string kill_reproduce;     ///< the `seam check` line that reproduces the kill
  std::optional<Violation> kill_violation;
  /// survived, serving: the smallest case where the plan differs and every
  /// property holds (training names its reproduce line in `argument`).
  std::optional<Case> smallest;
  std::string argument;  ///< why equivalent, or what the survivor shows
};

/// The result of a campaign, serving or training.
struct CampaignResult {
  std::int64_t cases = 0;  ///< size of the (non-refused) space
  /// Serving: the cases the engine refuses, left out (a training space is
  /// enumerated without them).
  std::int64_t baseline_refused = 0;
  bool baseline_holds = true;
  std::optional<Case> baseline_case;  ///< serving: the first failing baseline case
  std::string baseline_reproduce;     ///< the `seam check` line of the first failing case
  std::optional<Violation> baseline_violation;
  std::vector<MutantOutcome> outcomes;  ///< registry order
  double seconds = 0;
  int killed() const;
  int survived() const;
  int equivalent() const;
};

/// Progress and per-mutant notifications (called from the calling thread).
class CampaignListener {
 public:
  virtual ~CampaignListener() = default;
  virtual void onBaseline(std::int64_t cases, bool holds) {}
  virtual void onMutant(const MutantOutcome& outcome, int done, int total) {}
  /// A stored outcome for `mutant` (resume): return it to skip the mutant.
  virtual std::optional<MutantOutcome> recalled(const Mutant& mutant) { return std::nullopt; }
};

/// Runs the campaign. A failing baseline stops it (baseline_holds = false,
/// no mutant run).
Expected<CampaignResult> runCampaign(const CampaignSpec& spec,
                                     CampaignListener* listener = nullptr);

/// A campaign of the training family: the training mutants against the
/// training case space (presets x layouts x worlds x configs x batches). A
/// spec of its own: the space is training presets and layouts, with no
/// pattern, policy or schema; its outcomes and result are the serving types.
struct TrainingCampaignSpec {
  std::vector<const ModelPreset*> models;  ///< empty: trainingPresets()
  std::vector<TrainingLayout> layouts = {TrainingLayout::kPrimeRl, TrainingLayout::kMegatron};
  std::vector<int> worlds = {2, 4, 8};
  std::vector<const Mutant*> mutants;  ///< empty: trainingRegistry()
  int jobs = 1;
};

/// The planned (not refused) cases of a training campaign, in its fixed order.
std::vector<TrainingCase> trainingCampaignCases(const TrainingCampaignSpec& spec);

/// Runs a training campaign (baseline first; a failing baseline stops it).
Expected<CampaignResult> runTrainingCampaign(const TrainingCampaignSpec& spec);

}  // namespace seam::mutants
