// Sweeps: every case of a case space (presets x valid configs x the flag
// values a model supports x a few batch shapes, one with an idle DP rank)
// checked on several threads, deterministic in order and shardable (i/n).
// Results are values; progress goes to a listener (STYLE 5).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "seam/properties/check.h"
#include "seam/sim/model/case.h"
#include "seam/sim/model/config_space.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/training/training_case.h"

namespace seam::properties {

/// One model of a sweep: a preset (or bare pattern) and, when it cannot be
/// modelled, why not.
struct SweepModel {
  std::string name;
  std::optional<ModelRef> model;  ///< absent: not modelled (see `why_not`)
  std::string why_not;
};

/// What to sweep.
struct SweepSpec {
  std::vector<SweepModel> models;
  int world = 8;
  ConfigFilter filter;  ///< leaves fixed by the user
  FlagFilter flags;     ///< flag values kept (--a2a, --fusion, ...; none given: every one)
  PolicyKind policy = PolicyKind::kDeclared;
  Schema schema;          ///< planner mutant switched on (none by default)
  int jobs = 1;           ///< worker threads
  Shard shard;            ///< part of the case space this process takes
  int max_failures = 20;  ///< failing cases kept (the first ones, in case order)
  /// Indices (in sweep order) already finished by an interrupted run: not run
  /// again (--resume). Sorted ascending.
  std::vector<std::int64_t> skip;
};

/// The models seam sweeps by default: every preset, in checkpoints.json order.
std::vector<SweepModel> defaultSweepModels();
/// One preset by name, or a bare pattern (name "pattern").
Expected<SweepModel> sweepModel(std::string_view preset_or_empty,
                                std::string_view pattern_or_empty);
/// The models of a space-wide command: the one preset or bare pattern given
/// (not both), or defaultSweepModels() when neither is.
Expected<std::vector<SweepModel>> sweepModels(std::string_view preset_or_empty,
                                              std::string_view pattern_or_empty);

/// Every case of one model at one world, in the fixed sweep order:
/// configs (ConfigSpace order) x flags x batches; `flags` leaves out the
/// flag sets it does not keep.
std::vector<Case> enumerateCases(const ModelRef& model, int world, const ConfigFilter& filter = {},
                                 const FlagFilter& flags = {});

/// A failing case.
struct SweepFailure {
  std::int64_t index = 0;  ///< position in the sweep order
  std::string text;        ///< the violation in words
  std::string reproduce;   ///< the `seam check` line that reproduces it
  /// An engine finding (the declared policy, nothing planted): the engine
  /// call behind the violation (engine_finding.h); empty otherwise, or when
  /// the op names no call.
  std::string engine_site;
};

/// One finished case, handed to listeners (for the store).
struct CaseResult {
  std::int64_t index = 0;   ///< position in the sweep order
  int model = 0;            ///< index into SweepSpec::models
  const Case* c = nullptr;  ///< valid during the callback only
  bool refused = false;
  std::string refusal;  ///< the engine's reason
  std::optional<Violation> violation;
  std::string engine_site;  ///< see SweepFailure::engine_site
  std::uint64_t plan_hash = 0;
};

/// Totals for one model (training sweeps: one model under one layout).
struct ModelTally {
  std::string model;
  std::optional<TrainingLayout> layout;  ///< training sweeps: the layout
  std::string why_not;                   ///< non-empty: not modelled
  std::int64_t checked = 0;              ///< cases planned and replayed
  std::int64_t refused = 0;              ///< cases refused (counted apart from checked)
  std::int64_t not_modelled = 0;  ///< of the refused: seam's gaps (isNotModelled), not the engine's
  std::int64_t violated = 0;      ///< checked cases with a violation
  double seconds = 0;             ///< worker time spent on this model
  /// Of its cases, those this run computed in `seconds` (a resumed run's
  /// others were read from the store): the numerator of its rate.
  std::int64_t run_here = 0;
};

/// The totals of a sweep, serving or training.
struct SweepResult {
  std::int64_t cases = 0;  ///< checked + refused
  std::int64_t checked = 0;
  std::int64_t refused = 0;       ///< the engine's refusals and seam's gaps
  std::int64_t not_modelled = 0;  ///< of the refused: seam's gaps
  std::int64_t violated = 0;
  /// Of the violated cases this process ran, the engine findings, by the
  /// engine call behind them (engine_finding.h).
  std::map<std::string, std::int64_t> engine_findings;
  std::int64_t run_here = 0;  ///< cases this process ran (the others were resumed)
  double seconds = 0;         ///< wall time of this process
  std::vector<ModelTally> per_model;
  std::vector<SweepFailure> failures;  ///< the first max_failures, in case order
  /// Reasons of refusal with their counts, most frequent first.
  std::vector<std::pair<std::string, std::int64_t>> refusals;
};

/// Progress callbacks; called from worker threads, serialized by the sweep.
class SweepListener {
 public:
  virtual ~SweepListener() = default;
  virtual void onProgress(std::int64_t done, std::int64_t total) {}
  /// The model whose cases are finishing now (called when it changes).
  virtual void onModel(const std::string& model) {}
  /// A finished chunk of cases (not necessarily in index order).
  virtual void onCases(const std::vector<CaseResult>& chunk) {}
};

/// A stable hash of a plan's ops (stored with each case: the same plan
/// always hashes the same, on every machine).
std::uint64_t planHash(const Plan& plan);

/// Refusal reasons with their counts, most frequent first (ties by text).
std::vector<std::pair<std::string, std::int64_t>> sortedRefusals(
    const std::map<std::string, std::int64_t>& counts);

/// Runs the sweep, one model x configuration at a time: each finished case
/// goes to `listener` and into the totals, and none is kept beyond that (but
/// the first max_failures), so memory does not grow with the number of cases.
/// Fails only on bad input (e.g. a world out of range).
Expected<SweepResult> runSweep(const SweepSpec& spec, SweepListener* listener = nullptr);

}  // namespace seam::properties
