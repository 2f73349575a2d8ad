// The case options shared by `seam plan`, `seam check`, `seam diff`, `seam
// graph`, `seam import` and seam-gpu (and the space leaves of `seam sweep`,
// `seam configs`): bound to a CaseSpec (sim/case_spec.h builds the Case) and
// the plan options (--policy, --decision, --trace) beside it.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "seam/sim/model/case_spec.h"
#include "seam/sim/model/config_space.h"
#include "seam/sim/policy/policy.h"

namespace seam::tools {

/// The case and how to plan it.
struct CaseOptions : CaseSpec {
  std::string policy = "declared";
  std::string decision;  ///< a planner decision to flip (what `seam prop --decision` planted)
  std::string trace;     ///< an engine trace (JSON lines) to use instead of the policy's ops
};

/// The plan the options ask for: the policy's plan of the case, or, with
/// --trace, the trace's ops on that case's stages.
Expected<Plan> buildCasePlan(const CaseOptions& o, const Case& c);

/// The policy's plan of the case (--policy, --decision); no trace.
Expected<Plan> buildPolicyPlan(const CaseOptions& o, const Case& c);

/// Whether the options plan the engine as it runs: the declared policy, no
/// decision, no trace (a violation is then an engine finding).
inline bool plansEngineAsRun(const CaseOptions& o) {
  return o.policy == "declared" && o.decision.empty() && o.trace.empty();
}

/// Parallel leaves a space-wide command fixes (`seam configs`, `seam sweep`).
struct FilterOptions {
  std::optional<int> pp, tp, dp, cp, ep, moe_dp;
  ConfigFilter filter() const {
    return {.pp = pp, .tp = tp, .attn_dp = dp, .attn_cp = cp, .moe_ep = ep, .moe_dp = moe_dp};
  }
};

/// Adds --pp --tp --dp --cp --ep --moe-dp as optional fixed leaves.
void addFilterOptions(CLI::App* sub, FilterOptions& o);

/// Adds --a2a --fusion --dp-padding --reduction --mode as lists of the flag
/// values a space keeps (buildFlagFilter parses them as the case options').
void addFlagFilterOptions(CLI::App* sub, FlagFilterSpec& o);

/// Refuses, naming the option, a case option given where it does not apply:
/// the training options without --family training, --dense-tp on a bare
/// single-stage pattern, --decision or --policy beside --trace.
Status checkCaseOptionsApply(const CLI::App& sub, const CaseOptions& o);

/// Adds the case options to a subcommand (checkCaseOptionsApply runs once
/// it is parsed).
void addCaseOptions(CLI::App* sub, CaseOptions& o);

}  // namespace seam::tools
