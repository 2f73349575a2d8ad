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
#include "seam/reports/baseline_rows.h"
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

/// openRun for a run of cases; resuming, `skip` gets the indices of the
/// cases the run has stored, sorted (what it need not run again).
Expected<StoredRun> openCaseRun(const std::string& db, const std::string& command,
                                const std::string& args, const std::string& version, bool resume,
                                std::vector<std::int64_t>* skip);

/// openRun for a sweep (its arguments sweepArgs(*spec)); resuming, spec->skip
/// gets the cases the run has stored, sorted.
Expected<StoredRun> openSweepRun(const std::string& db, properties::SweepSpec* spec,
                                 const std::string& version, bool resume);

/// The canonical argument string a run is resumed by.
std::string sweepArgs(const properties::SweepSpec& spec);
std::string campaignArgs(const mutants::CampaignSpec& spec);
/// The arguments that define a campaign's cases (its worlds, policy,
/// decisions, bound cases and models): what its stored baseline is made over.
std::string baselineSpace(const mutants::CampaignSpec& spec);

/// Writes batches of case rows into a run on a thread of its own, one
/// transaction per batch (a crash loses at most the batch being written; a
/// resumed run redoes it), so that the workers that produce them never wait
/// for the disk while it keeps up; past kMaxQueued batches waiting push()
/// does, so memory stays flat. Keeps the first store error: a failed batch
/// is rolled back and the run goes on to its end (holding the write lock
/// until then would stop every other run on this store).
class CaseRowWriter {
 public:
  static constexpr std::size_t kMaxQueued = 16;
  CaseRowWriter(Store& store, std::int64_t run_id);
  ~CaseRowWriter();
  void push(std::vector<CaseRows> batch);
  /// Writes what is queued and stops the thread; the first store error, if any.
  Status close();

 private:
  void writerLoop();
  Store& store_;
  std::int64_t run_id_;
  std::vector<std::vector<CaseRows>> queue_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable room_;  // the writer took a batch
  bool closing_ = false;
  Status status_;
  std::thread thread_;
};

/// Writes every finished case of a sweep into the store in batches of
/// kBatchCases (CaseRowWriter); forwards progress to `next` (may be null).
class SweepRecorder : public properties::SweepListener {
 public:
  static constexpr int kBatchCases = 256;
  SweepRecorder(Store& store, std::int64_t run_id, const properties::SweepSpec& spec,
                properties::SweepListener* next);
  ~SweepRecorder() override;
  void onProgress(std::int64_t done, std::int64_t total) override;
  void onModel(const std::string& model) override;
  void onCases(const std::vector<properties::CaseResult>& chunk) override;
  /// Writes the batch not yet full and waits for the writer (also done on
  /// destruction); the first store error, if any.
  Status flush();

 private:
  CaseRowWriter writer_;
  SweepBatcher batcher_;  // full batches go to writer_
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

/// Stores each decided mutant (so a resumed campaign skips it) and the
/// baseline once it holds (baseline_rows.h), and recalls stored ones: a
/// stored baseline only when `build` made it over this campaign's space and
/// it is intact. Forwards progress to `next`.
class CampaignRecorder : public mutants::CampaignListener {
 public:
  CampaignRecorder(Store& store, std::int64_t run_id, const mutants::CampaignSpec& spec,
                   mutants::CampaignListener* next, SeamBuild build);
  void onBaselineProgress(std::int64_t done, std::int64_t total) override {
    if (next_) next_->onBaselineProgress(done, total);
  }
  void onBaseline(std::int64_t cases, bool holds) override;
  void onMutant(const mutants::MutantOutcome& outcome, int done, int total) override;
  std::optional<mutants::MutantOutcome> recalled(const mutants::Mutant& mutant) override;
  void onBaselineChecked(const mutants::BaselineSummary& baseline) override;
  mutants::BaselineRecall recalledBaseline(std::int64_t space) override;
  const Status& status() const { return status_; }

 private:
  Store& store_;
  std::int64_t run_id_;
  const mutants::CampaignSpec& spec_;
  mutants::CampaignListener* next_;
  SeamBuild build_;
  std::vector<MutantRecord> stored_;
  std::vector<KillRecord> kills_;
  Status status_;
};

/// Writes every case a `seam diff` of a space compares into the store as it
/// is compared (its class as the case's group, refusals and differing values
/// as outcomes), in batches of SweepRecorder::kBatchCases through a
/// CaseRowWriter. Call onCase from DiffSpec::on_case (from any thread).
class DiffRecorder {
 public:
  DiffRecorder(Store& store, std::int64_t run_id, const properties::DiffSpec& spec);
  ~DiffRecorder();
  void onCase(std::int64_t index, const Case& c, const properties::CaseDiff& d);
  /// Writes the batch not yet full and waits for the writer; the first store
  /// error, if any.
  Status finish();

 private:
  PolicyKind a_, b_;
  CaseRowWriter writer_;
  std::mutex mutex_;
  std::vector<CaseRows> pending_;
};

/// The arguments a `seam diff` of a space is stored with and resumed by
/// (`worlds` as given).
std::string diffArgs(const properties::DiffSpec& spec, const std::string& worlds);

/// openRun for a diff of a space; resuming, spec->skip gets the cases the
/// run has stored, sorted.
Expected<StoredRun> openDiffRun(const std::string& db, properties::DiffSpec* spec,
                                const std::string& worlds, const std::string& version, bool resume);

/// The comparison a diff's case row was stored with (DiffRecorder's row read
/// back: its class, bit-identity prediction, detail and rounding); an error
/// when the row is not one DiffRecorder writes.
Expected<properties::CaseDiff> diffFromRow(const CaseRecord& row);

/// A diff's summary over every case row of the run (those a killed run
/// stored included); `live` supplies what only this process knows (its
/// cases compared and wall time).
Expected<properties::DiffResult> diffResultFromStore(Store& store, std::int64_t run_id,
                                                     const properties::DiffSpec& spec,
                                                     const properties::DiffResult& live);

/// Stores a `seam prop` run: its spec as the run's arguments (with the
/// RC_PARAMS that replays it) and, when it failed, the shrunk case with its
/// violation.
Status recordProp(Store& store, const properties::PropSpec& spec,
                  const properties::PropResult& result, const std::string& version);

}  // namespace seam::reports
