// Listeners that write what sweeps and campaigns produce into the store, and
// the readers that rebuild their summaries from it, so that a resumed run
// reports every case of the run, not only those it ran itself.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "seam/mutants/campaign.h"
#include "seam/properties/diff.h"
#include "seam/properties/prop.h"
#include "seam/properties/sweep.h"
#include "seam/reports/junit.h"
#include "seam/reports/shard_rows.h"
#include "seam/reports/store.h"

namespace seam::reports {

/// A new run of `command` with `args`, or with `resume` the latest unfinished
/// one with the same command and args (an error naming --db when there is none).
Expected<RunRecord> startRun(Store& store, const std::string& command, const std::string& args,
                             const std::string& version, bool resume);

/// An open store and the run being written to it.
struct StoredRun {
  Store store;
  RunRecord run;
};
/// Opens `db` and starts (or, with `resume`, finds) the run. Resuming from a
/// file that does not exist is refused without creating it.
Expected<StoredRun> openRun(const std::string& db, const std::string& command,
                            const std::string& args, const std::string& version, bool resume);

/// openRun for a sweep (its arguments sweepArgs(*spec)); resuming, spec->skip
/// gets the cases the run has stored, sorted.
Expected<StoredRun> openSweepRun(const std::string& db, properties::SweepSpec* spec,
                                 const std::string& version, bool resume);

/// The canonical argument string a run is resumed by.
std::string sweepArgs(const properties::SweepSpec& spec);
std::string campaignArgs(const mutants::CampaignSpec& spec);

/// Writes every finished case of a sweep into the store, one transaction per
/// batch of kBatchCases (a crash loses at most the batch being written; a
/// resumed run redoes it), on a writer thread of its own so that the sweep's
/// workers never wait for the disk while it keeps up (past kMaxQueued batches
/// waiting they do, so memory stays flat); forwards progress to `next` (may
/// be null).
class SweepRecorder : public properties::SweepListener {
 public:
  static constexpr int kBatchCases = 256;
  static constexpr std::size_t kMaxQueued = 16;
  SweepRecorder(Store& store, std::int64_t run_id, const properties::SweepSpec& spec,
                properties::SweepListener* next);
  ~SweepRecorder() override;
  void onProgress(std::int64_t done, std::int64_t total) override;
  void onModel(const std::string& model) override;
  void onCases(const std::vector<properties::CaseResult>& chunk) override;
  /// Commits the open batch (also done on destruction).
  Status flush();
  /// The first store error, if any (the sweep itself cannot be interrupted).
  const Status& status() const { return status_; }

 private:
  void write(std::vector<CaseRows> batch);  // on the writer thread
  void writerLoop();
  Store& store_;
  std::int64_t run_id_;
  SweepBatcher batcher_;                      // full batches go to queue_
  std::vector<std::vector<CaseRows>> queue_;  // batches for the writer
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable room_;  // the writer took a batch
  bool closing_ = false;
  std::thread writer_;
  Status status_;
};

/// The sweep's totals over every case row of the run; `live` supplies what
/// only this process knows (its wall time, the cases it ran, per-model time).
Expected<properties::SweepResult> sweepResultFromStore(Store& store, std::int64_t run_id,
                                                       const properties::SweepSpec& spec,
                                                       const properties::SweepResult& live);

/// Ends a sweep's run: marks it finished, rebuilds the summary from every
/// case row it stored (sweepResultFromStore) and, when `junit` is not empty,
/// writes its JUnit XML there (writeSweepJunit).
Expected<properties::SweepResult> finishSweepRun(StoredRun& run, const properties::SweepSpec& spec,
                                                 const properties::SweepResult& live,
                                                 const std::string& junit);

/// Stores each decided mutant (so a resumed campaign skips it) and recalls
/// stored ones; forwards progress to `next`.
class CampaignRecorder : public mutants::CampaignListener {
 public:
  CampaignRecorder(Store& store, std::int64_t run_id, const mutants::CampaignSpec& spec,
                   mutants::CampaignListener* next);
  void onBaselineProgress(std::int64_t done, std::int64_t total) override {
    if (next_) next_->onBaselineProgress(done, total);
  }
  void onBaseline(std::int64_t cases, bool holds) override;
  void onMutant(const mutants::MutantOutcome& outcome, int done, int total) override;
  std::optional<mutants::MutantOutcome> recalled(const mutants::Mutant& mutant) override;
  const Status& status() const { return status_; }

 private:
  Store& store_;
  std::int64_t run_id_;
  const mutants::CampaignSpec& spec_;
  mutants::CampaignListener* next_;
  std::vector<MutantRecord> stored_;
  std::vector<KillRecord> kills_;
  Status status_;
};

/// Writes every case a `seam diff` of a space compares into the store (its
/// class as the case's group, refusals and differing values as outcomes),
/// one transaction per kBatchCases cases; keeps the first store error and
/// writes nothing after it. Call onCase from DiffSpec::on_case.
class DiffRecorder {
 public:
  static constexpr int kBatchCases = 1024;
  DiffRecorder(Store& store, std::int64_t run_id, const properties::DiffSpec& spec);
  void onCase(std::int64_t index, const Case& c, const properties::CaseDiff& d);
  /// Commits the open batch; the first store error, if any.
  Status finish();

 private:
  Store& store_;
  std::int64_t run_id_;
  PolicyKind a_, b_;
  int in_batch_ = 0;
  Status status_;
};

/// The arguments a `seam diff` of a space is stored with (`worlds` as given).
std::string diffArgs(const properties::DiffSpec& spec, const std::string& worlds);

/// Stores a `seam prop` run: its spec as the run's arguments (with the
/// RC_PARAMS that replays it) and, when it failed, the shrunk case with its
/// violation.
Status recordProp(Store& store, const properties::PropSpec& spec,
                  const properties::PropResult& result, const std::string& version);

}  // namespace seam::reports
