// The rows one process of a run produced, kept in memory and turned into
// bytes, so that another process writes them into the store: under mpirun
// every rank runs its part of a sweep or a campaign and rank 0 writes the
// one store (tools/ moves the bytes over MPI; nothing here knows MPI).
#pragma once

#include <cstdint>
#include <optional>
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
std::vector<CaseRows> caseRows(const std::vector<properties::CaseResult>& chunk, const properties::SweepSpec& spec);

/// What one process of a sweep did: its case rows and its part of the live
/// totals (cases it ran, its wall time, worker time per model).
struct SweepShardRows {
  std::vector<CaseRows> cases;
  std::int64_t run_here = 0;
  double seconds = 0;
  std::vector<double> model_seconds;  ///< per SweepSpec::models entry
};

/// Collects a sweep's rows in memory, forwarding progress to `next`.
class SweepCollector : public properties::SweepListener {
 public:
  SweepCollector(const properties::SweepSpec& spec, properties::SweepListener* next) : spec_(spec), next_(next) {}
  void onProgress(std::int64_t done, std::int64_t total) override;
  void onCases(const std::vector<properties::CaseResult>& chunk) override;
  std::vector<CaseRows>& rows() { return rows_; }

 private:
  const properties::SweepSpec& spec_;
  properties::SweepListener* next_;
  std::vector<CaseRows> rows_;
};

std::string encodeSweepShard(const SweepShardRows& shard);
Expected<SweepShardRows> decodeSweepShard(const std::string& bytes);

/// Writes case rows into a run, kBatchCases per transaction, in index order.
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

/// Collects the rows of each decided mutant in memory, forwarding progress.
class CampaignCollector : public mutants::CampaignListener {
 public:
  CampaignCollector(PolicyKind policy, mutants::CampaignListener* next) : policy_(policy), next_(next) {}
  void onBaseline(std::int64_t cases, bool holds) override;
  void onMutant(const mutants::MutantOutcome& outcome, int done, int total) override;
  std::vector<MutantRows>& rows() { return rows_; }

 private:
  PolicyKind policy_;
  mutants::CampaignListener* next_;
  std::vector<MutantRows> rows_;
};

/// Writes the rows of a campaign's mutants into a run, in the given order, in
/// one transaction.
Status writeMutantRows(Store& store, std::int64_t run_id, const std::vector<MutantRows>& rows);

/// What one process of a campaign did: the baseline as it saw it and the
/// rows of the mutants it decided.
struct CampaignShardRows {
  std::int64_t cases = 0;
  std::int64_t baseline_refused = 0;
  bool baseline_holds = true;
  std::vector<MutantRows> mutants;
};
std::string encodeCampaignShard(const CampaignShardRows& shard);
Expected<CampaignShardRows> decodeCampaignShard(const std::string& bytes);

}  // namespace seam::reports
