// What `seam mutate` prints: a table per operator kind (mutants, killed,
// survived, equivalent, the property that killed first), one row per mutant,
// each survivor with its smallest case, each equivalent mutant with its
// argument, and the last line exactly
// "mutation score: K/N (P%), S survivors, E equivalent".
#pragma once

#include <string>

#include "seam/mutants/campaign.h"

namespace seam::reports {

std::string renderCampaign(const mutants::CampaignSpec& spec,
                           const mutants::CampaignResult& result);
std::string mutationScoreLine(const mutants::CampaignResult& result);

}  // namespace seam::reports
