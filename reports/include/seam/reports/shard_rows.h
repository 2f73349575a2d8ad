// The rows one process of a run produced, handed on as they finish and
// turned into bytes, so that another process writes them into the store:
// under mpirun every rank runs its part of a sweep or a campaign and rank 0
// writes the one store, each batch as it arrives (tools/ moves the bytes
// over MPI; nothing here knows MPI).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "seam/mutants/campaign.h"
#include "seam/properties/sweep.h"
#include "seam/reports/store.h"

namespace seam::reports {

/// A case row with its failing verdicts, as SweepRecorder stores it.
using CaseRows = std::pair<CaseRecord, std::vector<VerdictRecord>>;

/// The rows of a chunk of finished sweep cases (SweepRecorder's conversion).
std::vector<CaseRows> caseRows(const std::vector<properties::CaseResult>& chunk,
                               const properties::SweepSpec& spec);

/// What one process of a sweep did: its case rows and its part of the live
/// totals (cases it ran, its wall time, worker time per model). Under mpirun
/// a rank sends one per batch of rows, then one with its totals alone.
struct SweepShardRows {
  std::vector<CaseRows> cases;
  std::int64_t run_here = 0;
  double seconds = 0;
  std::vector<double> model_seconds;  ///< per SweepSpec::models entry
  std::vector<std::int64_t>
      model_run_here;  ///< per SweepSpec::models entry: cases this rank computed
};

/// Hands a sweep's rows on in batches of SweepRecorder::kBatchCases as its
/// cases finish (the last, shorter batch on flush()), forwarding progress to
/// `next`. `sink` runs under the sweep's listener lock.
class SweepBatcher : public properties::SweepListener {
 public:
  using Sink = std::function<void(std::vector<CaseRows>)>;
  SweepBatcher(const properties::SweepSpec& spec, properties::SweepListener* next, Sink sink)
      : spec_(spec), next_(next), sink_(std::move(sink)) {}
  void onProgress(std::int64_t done, std::int64_t total) override;
  void onModel(const std::string& model) override;
  void onCases(const std::vector<properties::CaseResult>& chunk) override;
  /// Hands on the rows of the batch not yet full (none: nothing happens).
  void flush();

 private:
  const properties::SweepSpec& spec_;
  properties::SweepListener* next_;
  Sink sink_;
  std::vector<CaseRows> pending_;
};

/// A rank's totals of its part of a sweep, without rows (its last word).
SweepShardRows sweepTotals(const properties::SweepResult& result);
/// The live totals of a sweep under mpirun: rank 0's result (`root`) with
/// the cases every rank ran, the slowest rank's wall time, and each model's
/// time and cases summed over the ranks (`ranks` in rank order, rank 0 first).
properties::SweepResult mergeSweepTotals(const properties::SweepResult& root,
                                         const std::vector<SweepShardRows>& ranks);

std::string encodeSweepShard(const SweepShardRows& shard);
Expected<SweepShardRows> decodeSweepShard(const std::string& bytes);

/// Writes case rows into a run, kBatchCases per transaction, in index order;
/// a transaction that fails is rolled back (the store freed for other
/// writers) and its error returned.
Status writeCaseRows(Store& store, std::int64_t run_id, std::vector<CaseRows> rows);

/// The store rows of one decided mutant (CampaignRecorder's conversion).
struct MutantRows {
  MutantRecord mutant;
  std::optional<KillRecord> kill;
};
MutantRows mutantRows(const mutants::MutantOutcome& outcome, PolicyKind policy);
/// The outcome a campaign's summary shows, rebuilt from stored rows (what a
/// resumed campaign recalls). Null `mutant` when `rows.mutant.id` is unknown.
mutants::MutantOutcome outcomeFromRows(const mutants::Mutant* mutant, const MutantRows& rows);

/// One process's share of a campaign (a rank's under mpirun): the mutants
/// with an id in `share` run; every other one is passed over as if recalled
/// (so the baseline runs even when the share is empty). Each decided
/// mutant's rows go to `sink` as it is decided; progress over the share goes
/// to `next`.
class CampaignShare : public mutants::CampaignListener {
 public:
  using Sink = std::function<void(MutantRows)>;
  CampaignShare(PolicyKind policy, std::set<std::string> share, mutants::CampaignListener* next,
                Sink sink)
      : policy_(policy), share_(std::move(share)), next_(next), sink_(std::move(sink)) {}
  void onBaselineProgress(std::int64_t done, std::int64_t total) override {
    if (next_) next_->onBaselineProgress(done, total);
  }
  void onBaseline(std::int64_t cases, bool holds) override;
  void onMutant(const mutants::MutantOutcome& outcome, int done, int total) override;
  std::optional<mutants::MutantOutcome> recalled(const mutants::Mutant& mutant) override;

 private:
  bool mine(const mutants::Mutant& mutant) const {
    return share_.count(std::string(mutant.id())) > 0;
  }
  PolicyKind policy_;
  std::set<std::string> share_;
  mutants::CampaignListener* next_;
  Sink sink_;
  int done_ = 0;
};

/// Writes the rows of a campaign's mutants into a run, in the given order, in
/// one transaction.
Status writeMutantRows(Store& store, std::int64_t run_id, const std::vector<MutantRows>& rows);

/// The run's stored mutant rows in `order` (the campaign's list). One process
/// stores mutants in list order; ranks under mpirun store each as it is
/// decided, so before the run is finished its rows are put again in list
/// order, in one transaction (nothing is written when they are in it). An
/// error names the first mutant of `order` that has no row.
Expected<std::vector<MutantRows>> putMutantRowsInOrder(
    Store& store, std::int64_t run_id, const std::vector<const mutants::Mutant*>& order);

/// What one process of a campaign did: the baseline as it saw it and the
/// rows of the mutants it decided (under mpirun: one message per decided
/// mutant, then one with the baseline alone).
struct CampaignShardRows {
  std::int64_t cases = 0;
  std::int64_t baseline_refused = 0;
  bool baseline_holds = true;
  std::vector<MutantRows> mutants;
};
std::string encodeCampaignShard(const CampaignShardRows& shard);
Expected<CampaignShardRows> decodeCampaignShard(const std::string& bytes);

}  // namespace seam::reports
