// Mutation campaigns (DESIGN §5): a baseline over the case space with no
// mutant (a broken baseline must not count as kills), then every mutant
// against the space, each stopped at its first kill (first in trial order).
// Statuses as Mull reports them (MutantStatus); the score is killed over
// killed + survived, with the coverage beside it (mutate_view.h).
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
  /// Which site of each case a site operator mutates, and the order in which
  /// the cases are tried: 0 tries them in case order; any other seed in an
  /// order drawn from it (so that the cases tried up to a kill measure how
  /// rare the killing cases are, not where they sit in the enumeration).
  std::uint64_t seed = 0;
  /// Also the cases at the token bounds of the planner's gates (the fusion
  /// gate's 2048 and 2049 tokens), a few per model and world.
  bool bound_cases = false;
};

/// The case space of a campaign, in its fixed order (models x worlds x the
/// bound cases, then the sweep's configs, flags and batches).
std::vector<Case> campaignCases(const CampaignSpec& spec);

/// What became of a mutant (Mull's statuses): killed by a property;
/// survived (its plans differ somewhere and every property holds); not
/// covered (no case of the space reaches its site); equivalent (its site is
/// reached and every mutated plan runs what the unmutated one runs: checked
/// plan by plan); planner error (the mutated planner fails where the real
/// one plans, and no property killed it: reported apart, not a kill).
enum class MutantStatus { kKilled, kSurvived, kEquivalent, kNotCovered, kPlannerError };
std::string_view statusName(MutantStatus s);
/// The rule: killed when a case's mutated plan violates a property; else
/// survived when some plan differed; else a planner error when the mutated
/// planner failed somewhere; else equivalent when some case reached its
/// site (every plan there equal to its parent), not covered when none did.
MutantStatus statusFrom(bool killed, std::int64_t differed, std::int64_t planner_errors,
                        std::int64_t applied);
/// The status named `name` (as statusName spells it); nullopt if none.
std::optional<MutantStatus> parseStatus(std::string_view name);

/// The site a campaign mutates in the case at index `case_index` of a plan
/// with `sites` sites (0 <= result < sites): drawn from the seed, the
/// mutant's id and the case, so a kill is replayed by its site alone.
int sampledSite(std::uint64_t seed, std::string_view mutant_id, std::int64_t case_index, int sites);

/// What became of one mutant, in a serving or a training campaign.
struct MutantOutcome {
  const Mutant* mutant = nullptr;
  MutantStatus status = MutantStatus::kSurvived;
  std::int64_t cases_run = 0;  ///< cases tried up to the verdict, in trial order (deterministic)
  std::int64_t applied = 0;    ///< cases where its site was reached
  std::int64_t differed = 0;   ///< cases where its plan differed from the unmutated one
  std::int64_t planner_errors = 0;  ///< cases where the mutated planner failed
  double seconds = 0;               ///< wall time of this mutant (0 when recalled)
  // killed:
  std::int64_t kill_index = -1;
  int kill_site = 0;              ///< the site mutated in the killing case (`--site`)
  std::optional<Case> kill_case;  ///< serving: the killing case (training: kill_reproduce)
  std::string kill_reproduce;     ///< the `seam check` line that reproduces the kill
  std::optional<Violation> kill_violation;
  /// survived, serving: the smallest case where the plan differs and every
  /// property holds (training names its reproduce line in `argument`).
  std::optional<Case> smallest;
  std::string argument;  ///< why equivalent, not covered, a planner error, or what survived
};

/// A serving campaign's baseline that holds, as a resumed run may take it
/// from the store instead of checking it again: which cases of
/// campaignCases(spec) it kept and how many it left out, and why.
struct BaselineSummary {
  std::int64_t space = 0;            ///< campaignCases(spec).size()
  std::int64_t refused = 0;          ///< cases the engine refuses
  std::int64_t engine_findings = 0;  ///< cases left out as engine findings
  std::vector<std::int64_t> kept;    ///< indices into campaignCases(spec), ascending
};

/// What a listener recalls of a stored baseline (resume): the baseline, or
/// why a stored one is not taken (a phrase; empty when none was stored).
struct BaselineRecall {
  std::optional<BaselineSummary> baseline;
  std::string why_not;
};

/// The result of a campaign, serving or training.
struct CampaignResult {
  std::int64_t cases = 0;  ///< size of the (non-refused) space
  /// Serving: the cases the engine refuses, left out (a training space is
  /// enumerated without them).
  std::int64_t baseline_refused = 0;
  /// Serving, declared policy: the cases where the engine's own plan violates
  /// a property (engine findings, properties/engine_finding.h), left out: a
  /// mutant cannot be killed where the parent already fails.
  std::int64_t baseline_engine_findings = 0;
  bool baseline_holds = true;
  std::optional<Case> baseline_case;  ///< serving: the first failing baseline case
  std::string baseline_reproduce;     ///< the `seam check` line of the first failing case
  std::optional<Violation> baseline_violation;
  /// Serving, resumed: the baseline was the stored one (recalledBaseline),
  /// not checked again; else why a stored one was not taken ("" when none).
  bool baseline_reused = false;
  std::string baseline_not_reused;
  std::vector<MutantOutcome> outcomes;  ///< registry order
  double seconds = 0;
  std::uint64_t seed = 0;  ///< the spec's seed
  int count(MutantStatus s) const;
  int killed() const { return count(MutantStatus::kKilled); }
  int survived() const { return count(MutantStatus::kSurvived); }
  int equivalent() const { return count(MutantStatus::kEquivalent); }
  int notCovered() const { return count(MutantStatus::kNotCovered); }
  int plannerErrors() const { return count(MutantStatus::kPlannerError); }
};

/// The `seam check` line that replays a kill: the case, --mutant and --site.
std::string killReproduce(const Case& c, PolicyKind policy, const Mutant& m, int site);

/// Progress and per-mutant notifications (called from the calling thread).
class CampaignListener {
 public:
  virtual ~CampaignListener() = default;
  /// Baseline cases checked so far of `total`; called from the worker
  /// threads (a listener that draws serialises itself).
  virtual void onBaselineProgress(std::int64_t done, std::int64_t total) {}
  virtual void onBaseline(std::int64_t cases, bool holds) {}
  virtual void onMutant(const MutantOutcome& outcome, int done, int total) {}
  /// A stored outcome for `mutant` (resume): return it to skip the mutant.
  virtual std::optional<MutantOutcome> recalled(const Mutant& mutant) { return std::nullopt; }
  /// A baseline that holds, checked case by case (stored for a resumed run).
  virtual void onBaselineChecked(const BaselineSummary& baseline) {}
  /// The stored baseline of this campaign's space of `space` cases (resume):
  /// returned, it is taken instead of checking the baseline again (the
  /// listener vouches that the same space and planner made it; one that does
  /// not fit `space` is not taken). Asked once, before the baseline.
  virtual BaselineRecall recalledBaseline(std::int64_t space) { return {}; }
};

/// Runs the campaign. A failing baseline stops it (baseline_holds = false,
/// no mutant run). A baseline recalled from `listener` gives the same cases
/// as the one it stands for, so the result is the same.
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
