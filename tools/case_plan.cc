// buildCasePlan: the policy's plan of a case, or an engine trace on it. Only
// in `seam` (it reads traces through reports/), not in `seam-gpu`.
#include "case_options.h"
#include "seam/reports/trace.h"

namespace seam::tools {

Expected<Plan> buildCasePlan(const CaseOptions& o, const Case& c) {
  auto plan = buildPolicyPlan(o, c);
  if (!plan || o.trace.empty()) return plan;
  return reports::importTrace(o.trace, *plan);
}

}  // namespace seam::tools
