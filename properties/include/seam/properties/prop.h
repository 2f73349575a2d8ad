// `seam prop` as a library call: rapidcheck generates cases (generators.h),
// checks that each declared plan satisfies properties 1-6, 8 and 9, and shrinks a
// failure to a minimal case. The result is a value: the violation in words,
// the RC_PARAMS value and the `seam check` line that reproduce it. Nothing is
// printed (STYLE 5); the same seed replays the same run (STYLE 8).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "seam/properties/generators.h"
#include "seam/sim/base/status.h"
#include "seam/sim/model/case.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"

namespace seam::properties {

/// What to run.
struct PropSpec {
  int cases = 100;         ///< passing cases before the property holds (rapidcheck max_success)
  std::uint64_t seed = 0;  ///< rapidcheck seed; the same seed replays the same cases and shrinks
  int world = 0;           ///< 0: generated from kGeneratedWorlds; else 1..kMaxWorld
  int max_layers = kDefaultMaxLayers;  ///< longest generated pattern
  Schema schema;                       ///< planner mutant switched on (none by default)
  int max_size = 100;                  ///< rapidcheck max_size (patterns reach max_layers at 100)
  bool shrink = true;  ///< false: report the first failing case as found (RC_PARAMS noshrink=1)
  /// After each generated case and each shrink tried: the cases generated so
  /// far and the shrinks tried (0 until a case fails). Called on the calling thread.
  std::function<void(int cases, int shrinks_tried)> on_progress;
};

/// The outcome. A failing property is a value, not an error.
struct PropResult {
  bool passed = true;
  /// Cases generated and checked before the verdict (the failing one included).
  int cases_run = 0;
  /// Of those, combinations the engine refuses (they hold vacuously).
  int refused = 0;
  /// The violation in words, describeViolation's line (empty when passed).
  std::string failure;
  /// The shrunk case's first violation (absent when passed, or when the case could not be planned).
  std::optional<Violation> violation;
  /// The RC_PARAMS value that replays this run, e.g. "seed=7 max_success=500 max_size=100".
  std::string rc_params;
  /// The `seam check` command of the shrunk case, with the planted decision's
  /// --decision (empty when passed).
  std::string reproduce;
  /// Shrink steps rapidcheck took to reach it.
  int shrinks = 0;
  /// The shrunk counterexample.
  std::optional<Case> shrunk;
  /// Wall time, seconds.
  double seconds = 0;
};

/// Runs the property "every generated case's declared plan satisfies
/// properties 1-6, 8 and 9" under rapidcheck. Bad spec (cases < 1, world out of range,
/// max_layers < 1, max_size < 0) -> kInvalidInput naming the value; a
/// rapidcheck error (a generator that gave up) -> kInternal.
Expected<PropResult> runProp(const PropSpec& spec);

/// The RC_PARAMS value that replays `spec`: "seed=S max_success=N max_size=M"
/// (plus "noshrink=1" when shrinking is off).
std::string rcParams(const PropSpec& spec);

/// Applies an RC_PARAMS value (rapidcheck's syntax: seed, max_success,
/// max_size, noshrink; verbose_* are accepted and ignored) on top of `spec`.
/// A reproduce= string is refused: seam replays a run from its seed.
Status applyRcParams(std::string_view text, PropSpec& spec);

/// The name of a planner decision, e.g. "ffn-keeps-sum-from-mixer": what
/// --decision takes and, after "decision.", the id of its mutant.
std::string_view decisionName(Decision d);
/// Inverse of decisionName. Also accepts the mutant id ("decision.NAME") and
/// the snake-case spelling of earlier versions ("ffn_keeps_sum_from_mixer");
/// the error lists the names.
Expected<Decision> parseDecision(std::string_view name);
/// The decisions `schema` flips, by name, comma-separated; "none" when none
/// (how a run's arguments record them).
std::string decisionList(const Schema& schema);
/// " --decision NAME" for each decision `schema` flips ("" when none): what a
/// `seam check` line needs to replay a case planned under `schema`.
std::string decisionFlags(const Schema& schema);

}  // namespace seam::properties
