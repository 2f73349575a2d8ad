// `seam sweep` and `seam mutate` split over the ranks of `mpirun -np N seam`
// (mpi_sweep.cc, mpi_campaign.cc): rank 0 opens the store, every rank runs
// its part and streams its rows to rank 0, which writes them as they come
// and prints the one summary; the other ranks print nothing and exit 0.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "command.h"
#include "mpi_world.h"
#include "seam/mutants/campaign.h"
#include "seam/properties/sweep.h"
#include "seam/reports/recorders.h"
#include "sweep_baseline.h"

namespace seam::tools {

/// How a sweep's end is written: its JUnit file (or ""), JSON or text, every
/// refusal reason or (text) the ten most frequent, and its baseline.
struct SweepOutput {
  std::string junit;
  bool json = false;
  bool verbose = false;
  RunBaseline baseline;
};

/// Rank 0 has opened the run (`opened`) or failed to (`open_status`).
int sweepUnderMpi(const MpiWorld& mpi, properties::SweepSpec spec,
                  std::optional<reports::StoredRun> opened, const Status& open_status,
                  const SweepOutput& output);
/// The end of a sweep's run, one process or many (cmd_sweep.cc): the
/// summary from every case row it stored, printed, its findings against the
/// baseline, and the exit code.
int finishSweep(reports::StoredRun& opened, const properties::SweepSpec& spec,
                const properties::SweepResult& live, const SweepOutput& output);

/// How a campaign's end is written: its JUnit file (or ""), whether a
/// survivor fails it, JSON or text, and (text) each mutant's wall time.
struct CampaignOutput {
  std::string junit;
  bool fail_on_survivor = false;
  bool json = false;
  bool verbose = false;
};

/// `decided`: the ids of the mutants a resumed run has stored (rank 0's).
int campaignUnderMpi(const MpiWorld& mpi, const mutants::CampaignSpec& spec,
                     std::optional<reports::StoredRun> opened, const Status& open_status,
                     const std::vector<std::string>& decided, const CampaignOutput& output);

/// The end of a campaign's run, one process or many (cmd_mutate.cc): marks it
/// finished, writes its JUnit XML, prints the summary (as JSON with `json`);
/// 1 when the baseline fails or (with `fail_on_survivor`) a mutant survives.
int finishCampaign(reports::Store& store, std::int64_t run_id, const mutants::CampaignSpec& spec,
                   const mutants::CampaignResult& result, const CampaignOutput& output);

/// The campaign's mutants in the order it runs them (empty: the registry).
std::vector<const mutants::Mutant*> campaignList(const mutants::CampaignSpec& spec);

}  // namespace seam::tools
