// A violation on a plan of the declared policy with nothing planted is a
// finding about the engine, since that policy models what SGLang's code
// does, bugs included. This names the engine call behind it, for the
// console, JUnit, the store and the report.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "seam/sim/plan/plan.h"
#include "seam/sim/policy/policy.h"
#include "seam/sim/replay/ledger.h"

namespace seam::properties {

/// Whether a plan of `policy` built with `schema` is the engine as it runs:
/// the declared policy with no decision flipped (not a trace, not a mutant).
bool modelsEngineAsRun(PolicyKind policy, const Schema& schema);

/// The engine call behind `v` on `plan` (a plan for which modelsEngineAsRun
/// held): "<call> at <file (function) @commit>" of the op the violation
/// names, else of the nearest op before it in the same stage and phase that
/// carries one (a sum counted twice is seen where it is read); "" when none does.
std::string engineFindingSite(const Plan& plan, const Violation& v);

/// What joins a violation's words to the engine call behind it, in the text
/// of a failing case (console, JUnit, the store, the report).
inline constexpr std::string_view kEngineFindingMark = "; engine finding: SGLang calls ";

/// The words of a failing case: the violation, then, for an engine finding,
/// kEngineFindingMark and the call (`engine_site` empty: the violation only).
std::string failureText(const Violation& v, const std::string& engine_site);

/// Whether a failing case's words (failureText) report an engine finding.
bool isEngineFinding(std::string_view failure_text);

/// failureText's words cut in two: the violation, and the engine call (empty
/// when the words report no engine finding).
std::pair<std::string_view, std::string_view> splitFailureText(std::string_view failure_text);

}  // namespace seam::properties
