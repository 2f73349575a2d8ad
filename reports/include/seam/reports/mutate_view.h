// What `seam mutate` prints: a table per operator kind (mutants and each
// status, the property that killed first), one row per mutant (status, cases
// tried, cases that reached its site, time, the killing case and site), the
// replay line of every kill, each survivor with its smallest case, each
// other status with its argument, and the last line the score with the
// coverage beside it (scoreLine).
#pragma once

#include <string>
#include <vector>

#include "seam/mutants/campaign.h"

namespace seam::reports {

/// How many mutants of a campaign ended in each status.
struct StatusCounts {
  int killed = 0, survived = 0, equivalent = 0, not_covered = 0, planner_errors = 0;
  int total() const { return killed + survived + equivalent + not_covered + planner_errors; }
  /// Counts a status by its name (statusName); an unknown name counts nowhere.
  void add(std::string_view status);
};
StatusCounts countStatuses(const mutants::CampaignResult& result);

/// "mutation score: K/(K+S) (P%), S survived; coverage: C/N reached
/// (U not covered), E equivalent, X planner errors". The score counts only
/// mutants whose site the space reached and that did not end in a planner
/// error: killed / (killed + survived).
std::string scoreLine(const StatusCounts& counts);

/// The campaign's console text: what the score measures, the baseline, the
/// tables and each mutant's end, then the score. `verbose`: also each
/// mutant's wall time.
std::string renderCampaign(const mutants::CampaignSpec& spec, const mutants::CampaignResult& result,
                           bool verbose = false);
std::string mutationScoreLine(const mutants::CampaignResult& result);

}  // namespace seam::reports
