// The SQLite store (DESIGN §8): one file, WAL, one transaction per batch of
// cases, resumable. Runs, cases, verdicts, mutants, kills, campaign
// baselines, and the GPU runs' equivalence and timing rows. Only reports/
// links SQLite. Every failure is a Status naming the file. The schema is in
// src/store_schema.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "seam/sim/base/status.h"

namespace seam::reports {

/// The row of one run (one invocation of sweep / prop / mutate).
struct RunRecord {
  std::int64_t id = 0;
  std::string command;           ///< "sweep", "prop", "mutate", "diff", "gpu run", ...
  std::string args;              ///< canonical arguments (what --resume matches on)
  std::string version;           ///< seam version
  std::string host;              ///< hostname
  std::string gpu;               ///< GPU name(s), "" on CPU runs
  std::string cuda;              ///< CUDA runtime/driver, "" on CPU runs
  std::string nccl;              ///< NCCL version, "" on CPU runs
  std::int64_t started_ms = 0;   ///< unix epoch ms
  std::int64_t finished_ms = 0;  ///< 0 while running or interrupted
  std::string seam_commit;       ///< the git commit seam was built from, "" when unknown
};

/// How a case ended. A case seam does not model is kRefused with a refusal
/// starting "not modelled yet: " (sim/base/status.h); the store keeps it as
/// the outcome `not-modelled`.
enum class CaseOutcome : std::uint8_t { kHolds, kViolated, kRefused };

/// One case of a run with its verdicts. `index` is the case's position in the
/// run's case order (what --resume skips); (run, index) is unique.
struct CaseRecord {
  std::int64_t index = 0;
  std::string model;    ///< preset name or "pattern"
  std::string pattern;  ///< canonical pattern text
  std::string config;   ///< ParallelConfig::describe()
  std::string flags;    ///< Flags::describe()
  std::string batch;    ///< Batch::describe()
  std::string policy;   ///< "declared", ...
  std::string group;    ///< a grouping key for summaries (e.g. the model row of a sweep)
  CaseOutcome outcome = CaseOutcome::kHolds;
  std::string refusal;          ///< the engine's reason when refused
  std::string reproduce;        ///< the `seam check` line that reproduces it
  std::uint64_t plan_hash = 0;  ///< hash of the plan (0 when refused)
};

/// The verdict of one property on one case (only failing ones need storing;
/// a case row with outcome kHolds means every property held).
struct VerdictRecord {
  int property = 0;  ///< DESIGN §4 number
  bool holds = true;
  std::string violation_class;  ///< e.g. "counted-k-times"
  std::string text;             ///< the violation in words
};

/// A mutant of a campaign and what became of it.
struct MutantRecord {
  std::string id;           ///< stable operator id, e.g. "plan.drop-completing-collective"
  std::string kind;         ///< "plan" or "decision"
  std::string description;  ///< one line
  /// "killed", "survived", "equivalent", "not-covered", "planner-error"
  /// (a version 1 store's rows say only the first three).
  std::string status;
  std::string argument;  ///< why equivalent / not covered / an error / why it survived
  std::int64_t cases_run = 0;
  std::int64_t applied = 0;         ///< cases where its site was reached
  std::int64_t differed = 0;        ///< cases where its plan differed
  std::int64_t planner_errors = 0;  ///< cases where the mutated planner failed
  double seconds = 0;               ///< wall time spent on it
};

/// The first kill of a mutant.
struct KillRecord {
  std::string mutant_id;
  std::int64_t case_index = 0;
  int property = 0;
  std::string violation_class;
  std::string text;
  std::string reproduce;  ///< `seam check ... --mutant ID [--site N]`
  int site = 0;           ///< the site mutated in the killing case
};

/// The baseline of a campaign that held (schema version 4), stored when it
/// ended so that the campaign, resumed, need not check it again; what it
/// was made by and over, so that only the same space and build reuse it.
struct BaselineRecord {
  std::string space;        ///< the run's arguments that define its cases (baselineSpace)
  std::string version;      ///< the seam version that checked it
  std::string seam_commit;  ///< and its commit
  std::int64_t cases = 0;   ///< cases of the space, refused ones included
  std::int64_t kept = 0;    ///< cases the campaign runs its mutants on
  std::int64_t refused = 0;
  std::int64_t engine_findings = 0;
  /// Which cases were kept: bit i (byte i / 8, from its lowest bit) set when
  /// case i was; ceil(cases / 8) bytes.
  std::string kept_cases;
  std::uint64_t checksum = 0;  ///< over every field above (baseline_rows.h)
};

/// Two plans (or two executors) of one case compared: was bit-identity
/// predicted, was it observed, and by how much they differ.
struct EquivalenceRecord {
  std::int64_t case_index = 0;
  std::string plan_a;             ///< e.g. "gpu:declared"
  std::uint64_t plan_a_hash = 0;  ///< output (or plan) hash of side A
  std::string plan_b;             ///< e.g. "cpu:declared", "reference"
  std::uint64_t plan_b_hash = 0;
  bool predicted_identical = false;
  bool observed_identical = false;
  double max_difference = 0;  ///< max |a - b| over the outputs
};

/// One op's timing on one rank (CUDA events; median, p10, p90 in us).
struct TimingRecord {
  std::int64_t case_index = 0;
  int rank = 0;
  int op_index = 0;
  std::string op_kind;
  std::string group;  ///< "attn_tp/2", or "-" for a local op
  std::int64_t bytes = 0;
  double median_us = 0, p10_us = 0, p90_us = 0;
  double algbw_gbps = 0, busbw_gbps = 0;
};

/// One case of `seam sweep --engine` against one policy (schema version 5):
/// how the policy's plan compares with what the engine ran.
struct EngineCaseRecord {
  std::int64_t case_index = 0;  ///< the case's position in the run's space
  std::string policy;           ///< "declared", "legacy"
  std::string model, config, flags, batch;
  std::string family;          ///< the configuration family ("tp+dp+ep")
  std::string engine;          ///< "sglang 0.5.20 (pypi)", or the checkout's path and commit
  std::string engine_verdict;  ///< ran | refused | raised | mismatch | ... (docs/recordings.md)
  std::string agreement;       ///< agrees | differs | engine-refused | ... (docs/recordings.md)
  std::string divergence;      ///< the first divergence (or the engine's message), in words
  std::string reproduce;       ///< `seam check ... --engine ...`
};

/// A store file. Movable, not copyable; closing commits nothing pending.
class Store {
 public:
  /// Opens or creates `path`. A new file gets the schema (WAL mode). An
  /// existing file must be a seam store of a known schema version; any other
  /// file (not SQLite, another application's database, truncated) is refused
  /// with a one-line message and left byte-for-byte unchanged.
  static Expected<Store> open(const std::string& path);
  /// Opens `path` as open() does, for a command that reads it: a missing or
  /// empty file is refused rather than created, so that a file given as an
  /// input never becomes a store. Every refusal names the file as `label`
  /// (e.g. `--baseline "x.db"`).
  static Expected<Store> openInput(const std::string& path, const std::string& label);
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  const std::string& path() const;

  /// A new run; fills `run.id`.
  Status beginRun(RunRecord& run);
  /// The most recent unfinished run with the same command and args, if any.
  Expected<std::optional<RunRecord>> findUnfinished(const std::string& command,
                                                    const std::string& args);
  /// Marks the run finished (finished_ms = now).
  Status finishRun(std::int64_t run_id);

  /// Writes go into the open batch; commitBatch() makes them durable (one
  /// transaction). A crash loses at most the uncommitted batch.
  Status beginBatch();
  /// beginBatch for a batch of addCase calls alone: SQLite skips the
  /// outcome CHECK of `cases` in it (it builds a temporary index of the four
  /// names to test each row); addCase itself refuses an outcome not among
  /// them. commitBatch or rollbackBatch ends it.
  Status beginCaseBatch();
  Status commitBatch();
  /// Discards the open batch (none of its writes lands) and frees the store
  /// for other writers; a writer that fails inside a batch calls it.
  Status rollbackBatch();

  /// A case index the run already has is refused (StatusCode::kRefused): the
  /// only writer that gets there is a second process writing the same run.
  Status addCase(std::int64_t run_id, const CaseRecord& c,
                 const std::vector<VerdictRecord>& failing);
  /// Indices of the run's cases already stored (what a resumed run skips).
  Expected<std::vector<std::int64_t>> caseIndices(std::int64_t run_id);
  /// All case rows of a run, ordered by index (summaries read them back).
  Expected<std::vector<CaseRecord>> cases(std::int64_t run_id);
  /// Each case row of a run, ordered by index, handed to `take` one at a
  /// time (a world 64 sweep's millions of rows never held at once); stops
  /// at the first error `take` returns.
  Status eachCase(std::int64_t run_id, const std::function<Status(CaseRecord&&)>& take);
  /// The first failing verdict of each violated case of a run, by case index.
  Expected<std::vector<std::pair<std::int64_t, VerdictRecord>>> firstFailures(std::int64_t run_id);

  /// Every stored verdict row of a run, by case index and then in the order
  /// the case stored them (what `seam db merge` copies).
  Expected<std::vector<std::pair<std::int64_t, VerdictRecord>>> verdicts(std::int64_t run_id);

  /// Inserts or replaces the mutant's row for the run.
  Status putMutant(std::int64_t run_id, const MutantRecord& m);
  Status addKill(std::int64_t run_id, const KillRecord& k);
  Expected<std::vector<MutantRecord>> mutants(std::int64_t run_id);
  Expected<std::vector<KillRecord>> kills(std::int64_t run_id);
  /// Deletes the run's mutant and kill rows, so that they can be put again
  /// in another order (mutants() and kills() read them in the order put).
  Status clearMutants(std::int64_t run_id);

  Expected<std::vector<RunRecord>> runs();

  /// Inserts or replaces the run's baseline row.
  Status putBaseline(std::int64_t run_id, const BaselineRecord& b);
  /// The run's baseline row, if it has one.
  Expected<std::optional<BaselineRecord>> baseline(std::int64_t run_id);

  /// `seam sweep --engine`'s rows; engineCaseIndices is what a resumed one skips.
  Status addEngineCase(std::int64_t run_id, const EngineCaseRecord& e);
  Expected<std::vector<EngineCaseRecord>> engineCases(std::int64_t run_id);
  Expected<std::vector<std::int64_t>> engineCaseIndices(std::int64_t run_id);

  /// GPU comparisons and timings (written by `seam db import` from seam-gpu's JSON).
  Status addEquivalence(std::int64_t run_id, const EquivalenceRecord& e);
  Expected<std::vector<EquivalenceRecord>> equivalences(std::int64_t run_id);
  Status addTiming(std::int64_t run_id, const TimingRecord& t);
  Expected<std::vector<TimingRecord>> timings(std::int64_t run_id);

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The schema version this build reads and writes.
/// Version 1 to 4 stores are migrated to it when opened.
inline constexpr int kStoreSchemaVersion = 5;

/// Creates `path` (which must not exist) as an empty store of an older
/// schema `version` (1 .. kStoreSchemaVersion), as that version of seam
/// wrote it: what a test of the migration starts from. seam itself writes
/// only the current version.
Status createStoreOfVersion(const std::string& path, int version);

}  // namespace seam::reports
