// `--format json` of sweep, prop, mutate and diff: one JSON object per run,
// for scripts. Each has "command", the run's "counts" (the numbers the text
// summary prints), its findings with the `seam check` (or `seam diff`) line
// that replays each, and "seconds". Nothing here prints (STYLE 5).
#pragma once

#include <string>

#include "seam/mutants/campaign.h"
#include "seam/properties/diff.h"
#include "seam/properties/prop.h"
#include "seam/properties/sweep.h"

namespace seam::reports {

std::string sweepJson(const properties::SweepSpec& spec, const properties::SweepResult& result);
std::string propJson(const properties::PropSpec& spec, const properties::PropResult& result);
std::string campaignJson(const mutants::CampaignSpec& spec, const mutants::CampaignResult& result);
std::string diffJson(const properties::DiffSpec& spec, const properties::DiffResult& result,
                     const std::string& worlds);

}  // namespace seam::reports
