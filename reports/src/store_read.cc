// The store's readers: each query's rows turned back into the records the
// writers stored, in the order the public header promises.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "store_impl.h"

namespace seam::reports {

using detail::columnText;
using detail::dbName;
using detail::Sql;

namespace {

using IndexedVerdict = std::pair<std::int64_t, VerdictRecord>;

std::optional<CaseOutcome> parseOutcome(const std::string& name) {
  if (name == "holds") return CaseOutcome::kHolds;
  if (name == "violated") return CaseOutcome::kViolated;
  // Not modelled is a refusal whose text says so (CaseOutcome's comment).
  if (name == "refused" || name == "not-modelled") return CaseOutcome::kRefused;
  return std::nullopt;
}

// One column of the current row into a field, by the field's type: the
// readers' counterpart of bindValue. Hashes are stored as their bits.
void readColumn(sqlite3_stmt* s, int i, std::string& v) { v = columnText(s, i); }
void readColumn(sqlite3_stmt* s, int i, std::int64_t& v) { v = sqlite3_column_int64(s, i); }
void readColumn(sqlite3_stmt* s, int i, std::uint64_t& v) {
  v = static_cast<std::uint64_t>(sqlite3_column_int64(s, i));
}
void readColumn(sqlite3_stmt* s, int i, int& v) { v = sqlite3_column_int(s, i); }
void readColumn(sqlite3_stmt* s, int i, bool& v) { v = sqlite3_column_int(s, i) != 0; }
void readColumn(sqlite3_stmt* s, int i, double& v) { v = sqlite3_column_double(s, i); }

/// Reads columns first, first + 1, ... of the current row into `fields`.
template <class... Fields>
void readColumns(sqlite3_stmt* s, int first, Fields&... fields) {
  int i = first;
  (readColumn(s, i++, fields), ...);
}

RunRecord readRun(sqlite3_stmt* s) {
  RunRecord r;
  readColumns(s, 0, r.id, r.command, r.args, r.version, r.host, r.gpu, r.cuda, r.nccl, r.started_ms,
              r.finished_ms, r.seam_commit);
  return r;
}

/// Columns 1-4 of a verdict query row (column 0 is the case index).
VerdictRecord readVerdict(sqlite3_stmt* s) {
  VerdictRecord v;
  readColumns(s, 1, v.property, v.holds, v.violation_class, v.text);
  return v;
}

MutantRecord readMutant(sqlite3_stmt* s) {
  MutantRecord m;
  readColumns(s, 0, m.id, m.kind, m.description, m.status, m.argument, m.cases_run, m.applied,
              m.differed, m.planner_errors, m.seconds);
  return m;
}

KillRecord readKill(sqlite3_stmt* s) {
  KillRecord k;
  readColumns(s, 0, k.mutant_id, k.case_index, k.property, k.violation_class, k.text, k.reproduce,
              k.site);
  return k;
}

BaselineRecord readBaseline(sqlite3_stmt* s) {
  BaselineRecord b;
  readColumns(s, 0, b.space, b.version, b.seam_commit, b.cases, b.kept, b.refused,
              b.engine_findings);
  // A BLOB, read as its bytes (a TEXT read would convert them).
  const auto* bytes = static_cast<const char*>(sqlite3_column_blob(s, 7));
  b.kept_cases.assign(bytes ? bytes : "", static_cast<std::size_t>(sqlite3_column_bytes(s, 7)));
  readColumns(s, 8, b.checksum);
  return b;
}

EquivalenceRecord readEquivalence(sqlite3_stmt* s) {
  EquivalenceRecord e;
  readColumns(s, 0, e.case_index, e.plan_a, e.plan_a_hash, e.plan_b, e.plan_b_hash,
              e.predicted_identical, e.observed_identical, e.max_difference);
  return e;
}

TimingRecord readTiming(sqlite3_stmt* s) {
  TimingRecord t;
  readColumns(s, 0, t.case_index, t.rank, t.op_index, t.op_kind, t.group, t.bytes, t.median_us,
              t.p10_us, t.p90_us, t.algbw_gbps, t.busbw_gbps);
  return t;
}

EngineCaseRecord readEngineCase(sqlite3_stmt* s) {
  EngineCaseRecord e;
  readColumns(s, 0, e.case_index, e.policy, e.model, e.config, e.flags, e.batch, e.family, e.engine,
              e.engine_verdict, e.agreement, e.divergence, e.reproduce);
  return e;
}

}  // namespace

Expected<std::optional<RunRecord>> Store::findUnfinished(const std::string& command,
                                                         const std::string& args) {
  std::optional<RunRecord> found;  // the query returns the latest one only
  const Status s = impl_->eachRow(
      Sql::kFindUnfinished,
      [&](sqlite3_stmt* row) {
        found = readRun(row);
        return Status::ok();
      },
      command, args);
  if (!s) return s;
  return found;
}

Expected<std::vector<RunRecord>> Store::runs() {
  return impl_->rows<RunRecord>(Sql::kRuns, readRun);
}

Expected<std::vector<std::int64_t>> Store::caseIndices(std::int64_t run_id) {
  return impl_->rows<std::int64_t>(
      Sql::kCaseIndices, [](sqlite3_stmt* row) { return sqlite3_column_int64(row, 0); }, run_id);
}

Expected<std::vector<CaseRecord>> Store::cases(std::int64_t run_id) {
  std::vector<CaseRecord> out;
  const Status s = eachCase(run_id, [&out](CaseRecord&& c) {
    out.push_back(std::move(c));
    return Status::ok();
  });
  if (!s) return s;
  return out;
}

Status Store::eachCase(std::int64_t run_id, const std::function<Status(CaseRecord&&)>& take) {
  return impl_->eachRow(
      Sql::kCases,
      [&](sqlite3_stmt* row) {
        CaseRecord c;
        readColumns(row, 0, c.index, c.model, c.pattern, c.config, c.flags, c.batch, c.policy,
                    c.group);
        const std::string outcome = columnText(row, 8);
        const auto parsed = parseOutcome(outcome);
        if (!parsed) {
          return Status::internal(dbName(impl_->path) + ": case " + std::to_string(c.index) +
                                  " of run " + std::to_string(run_id) +
                                  " has an unknown outcome \"" + outcome.substr(0, 32) + "\"");
        }
        c.outcome = *parsed;
        readColumns(row, 9, c.refusal, c.reproduce, c.plan_hash);
        return take(std::move(c));
      },
      run_id);
}

Expected<std::vector<IndexedVerdict>> Store::firstFailures(std::int64_t run_id) {
  std::vector<IndexedVerdict> out;
  const Status s = impl_->eachRow(
      Sql::kFirstFailures,
      [&](sqlite3_stmt* row) {
        const std::int64_t index = sqlite3_column_int64(row, 0);
        // Rows come by (case, seq): the first of a case is its first failure.
        if (out.empty() || out.back().first != index) out.emplace_back(index, readVerdict(row));
        return Status::ok();
      },
      run_id);
  if (!s) return s;
  return out;
}

Expected<std::vector<IndexedVerdict>> Store::verdicts(std::int64_t run_id) {
  return impl_->rows<IndexedVerdict>(
      Sql::kVerdicts,
      [](sqlite3_stmt* row) {
        return IndexedVerdict(sqlite3_column_int64(row, 0), readVerdict(row));
      },
      run_id);
}

Expected<std::vector<MutantRecord>> Store::mutants(std::int64_t run_id) {
  return impl_->rows<MutantRecord>(Sql::kMutants, readMutant, run_id);
}

Expected<std::vector<KillRecord>> Store::kills(std::int64_t run_id) {
  return impl_->rows<KillRecord>(Sql::kKills, readKill, run_id);
}

Expected<std::optional<BaselineRecord>> Store::baseline(std::int64_t run_id) {
  // run_id is the table's key: one row at most.
  auto rows = impl_->rows<BaselineRecord>(Sql::kBaseline, readBaseline, run_id);
  if (!rows) return rows.status();
  if (rows->empty()) return std::optional<BaselineRecord>();
  return std::optional<BaselineRecord>(std::move(rows->front()));
}

Expected<std::vector<EquivalenceRecord>> Store::equivalences(std::int64_t run_id) {
  return impl_->rows<EquivalenceRecord>(Sql::kEquivalences, readEquivalence, run_id);
}

Expected<std::vector<TimingRecord>> Store::timings(std::int64_t run_id) {
  return impl_->rows<TimingRecord>(Sql::kTimings, readTiming, run_id);
}

Expected<std::vector<EngineCaseRecord>> Store::engineCases(std::int64_t run_id) {
  return impl_->rows<EngineCaseRecord>(Sql::kEngineCases, readEngineCase, run_id);
}

Expected<std::vector<std::int64_t>> Store::engineCaseIndices(std::int64_t run_id) {
  return impl_->rows<std::int64_t>(
      Sql::kEngineCaseIndices, [](sqlite3_stmt* s) { return sqlite3_column_int64(s, 0); }, run_id);
}

}  // namespace seam::reports
