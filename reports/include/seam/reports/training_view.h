// The views of the training family: `seam plan|check --family training`,
// `seam sweep --family training` and `seam mutate --family training`.
#pragma once

#include <string>

#include "seam/mutants/campaign.h"
#include "seam/properties/training_sweep.h"
#include "seam/reports/table.h"
#include "seam/sim/training/training_ledger.h"

namespace seam::reports {

/// One rank's ops (text table or the JSON object of DESIGN §9 with the
/// training fields added; jsonl: one op per line).
std::string renderTrainingPlan(const TrainingPlan& plan, int rank, Format format);
/// The verdict of `seam check --family training`.
std::string renderTrainingVerdict(const TrainingPlan& plan, const LedgerResult& result,
                                  Format format);
/// Per (model, layout) lines, the refusals, the failures, then exactly
/// "N cases, K violations, R cases/s".
std::string renderTrainingSweep(const properties::TrainingSweepSpec& spec,
                                const properties::SweepResult& r);
/// One line per mutant, then "mutation score: K/N (P%), S survivors, E equivalent".
std::string renderTrainingCampaign(const mutants::TrainingCampaignSpec& spec,
                                   const mutants::CampaignResult& r);

}  // namespace seam::reports
