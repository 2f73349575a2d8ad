// The store's writers: runs begun and finished, batches, case rows with their
// failing verdicts, mutants and kills, and the GPU runs' equivalence and
// timing rows. Each binds a record's fields to one cached statement.
#include <algorithm>
#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "seam/properties/provenance.h"
#include "seam/sim/base/status.h"
#include "store_impl.h"
#include "store_typed.h"

namespace seam::reports {

using detail::dbName;
using detail::Sql;

namespace {

const char* outcomeName(const CaseRecord& c) {
  switch (c.outcome) {
    case CaseOutcome::kHolds:
      return "holds";
    case CaseOutcome::kViolated:
      return "violated";
    case CaseOutcome::kRefused:
      return isNotModelled(c.refusal) ? "not-modelled" : "refused";
  }
  assert(false && "a CaseOutcome without a name");
  return "holds";
}

/// The schema's CHECK on cases.outcome (store_schema.cc).
bool knownOutcome(std::string_view outcome) {
  return outcome == "holds" || outcome == "violated" || outcome == "refused" ||
         outcome == "not-modelled";
}

}  // namespace

Status Store::beginRun(RunRecord& run) {
  // A run that starts now runs here, on this build; a copied (merge) or
  // imported (GPU) run keeps what its record says.
  if (run.started_ms == 0) {
    run.started_ms = properties::epochMs();
    if (run.host.empty()) run.host = properties::thisHost();
    if (run.seam_commit.empty()) run.seam_commit = properties::seamCommit();
  }
  if (Status s =
          impl_->write(Sql::kInsertRun, run.command, run.args, run.version, run.host, run.gpu,
                       run.cuda, run.nccl, run.started_ms, run.finished_ms, run.seam_commit);
      !s) {
    return s;
  }
  run.id = sqlite3_last_insert_rowid(impl_->db.get());
  return Status::ok();
}

Status Store::finishRun(std::int64_t run_id) {
  // finished_ms = 0 means unfinished, so a finished run never records 0.
  const std::int64_t finished_ms = std::max<std::int64_t>(properties::epochMs(), 1);
  if (Status s = impl_->write(Sql::kFinishRun, finished_ms, run_id); !s) return s;
  if (sqlite3_changes(impl_->db.get()) == 0) {
    return Status::invalid(dbName(impl_->path) + ": no run with id " + std::to_string(run_id));
  }
  return Status::ok();
}

Status Store::beginBatch() { return impl_->exec("BEGIN IMMEDIATE"); }

Status Store::beginCaseBatch() {
  if (Status s = impl_->exec("BEGIN IMMEDIATE"); !s) return s;
  // A flag pragma: SQLite prepares the cached statements again, without the
  // CHECK, at their next step (and again with it once restored).
  impl_->checks_skipped = true;
  Status s = impl_->exec("PRAGMA ignore_check_constraints = ON");
  if (!s) (void)rollbackBatch();
  return s;
}

Status Store::commitBatch() {
  Status s = impl_->exec("COMMIT");
  if (Status r = impl_->restoreChecks(); s && !r) return r;
  return s;
}

Status Store::rollbackBatch() {
  Status s = impl_->exec("ROLLBACK");
  if (Status r = impl_->restoreChecks(); s && !r) return r;
  return s;
}

Status Store::Impl::restoreChecks() {
  if (!checks_skipped) return Status::ok();
  checks_skipped = false;
  return exec("PRAGMA ignore_check_constraints = OFF");
}

Status Store::addCase(std::int64_t run_id, const CaseRecord& c,
                      const std::vector<VerdictRecord>& failing) {
  // A case and its verdicts land together, in a batch or on their own.
  return impl_->atomically([&] { return impl_->insertCase(run_id, c, failing); });
}

Status Store::Impl::insertCase(std::int64_t run_id, const CaseRecord& c,
                               const std::vector<VerdictRecord>& failing) {
  auto s = statement(Sql::kInsertCase);
  if (!s) return s.status();
  {
    detail::StatementUse use(*s);
    const std::string outcome = outcomeName(c);  // a named string: bound SQLITE_STATIC
    if (checks_skipped && !knownOutcome(outcome)) {
      // The schema's CHECK, which a case batch has SQLite skip.
      return Status::internal("case " + std::to_string(c.index) + ": outcome \"" + outcome +
                              "\" is none of the four the cases table allows");
    }
    SEAM_SQLITE_CHECK(detail::bindAll(*s, run_id, c.index, c.model, c.pattern, c.config, c.flags,
                                      c.batch, c.policy, c.group, outcome, c.refusal, c.reproduce,
                                      static_cast<std::int64_t>(c.plan_hash)));
    SEAM_SQLITE_CHECK(typed_columns.bind(*s, 14, c.config, c.flags));
    const int rc = sqlite3_step(*s);
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
      // A run skips the cases it has stored, so this case was stored by
      // another process since: two runs resumed the same run at once.
      return Status::refused(
          dbName(path) + ": case " + std::to_string(c.index) + " of run " + std::to_string(run_id) +
          " is already stored: another seam run is writing the same run (two --resume at "
          "once?); this one stops");
    }
    SEAM_SQLITE_CHECK(rc);
  }
  for (std::size_t seq = 0; seq < failing.size(); ++seq) {
    const VerdictRecord& verdict = failing[seq];
    if (Status v = write(Sql::kInsertVerdict, run_id, c.index, verdict.property,
                         static_cast<std::int64_t>(seq), verdict.holds ? 1 : 0,
                         verdict.violation_class, verdict.text);
        !v) {
      return v;
    }
  }
  return Status::ok();
}

Status Store::putMutant(std::int64_t run_id, const MutantRecord& m) {
  return impl_->write(Sql::kPutMutant, run_id, m.id, m.kind, m.description, m.status, m.argument,
                      m.cases_run, m.applied, m.differed, m.planner_errors, m.seconds);
}

Status Store::addKill(std::int64_t run_id, const KillRecord& k) {
  return impl_->write(Sql::kAddKill, run_id, k.mutant_id, k.case_index, k.property,
                      k.violation_class, k.text, k.reproduce, k.site);
}

Status Store::clearMutants(std::int64_t run_id) {
  if (Status s = impl_->write(Sql::kClearKills, run_id); !s) return s;
  return impl_->write(Sql::kClearMutants, run_id);
}

Status Store::putBaseline(std::int64_t run_id, const BaselineRecord& b) {
  return impl_->write(Sql::kPutBaseline, run_id, b.space, b.version, b.seam_commit, b.cases, b.kept,
                      b.refused, b.engine_findings, detail::Blob{b.kept_cases},
                      static_cast<std::int64_t>(b.checksum));
}

Status Store::addEquivalence(std::int64_t run_id, const EquivalenceRecord& e) {
  return impl_->write(Sql::kAddEquivalence, run_id, e.case_index, e.plan_a,
                      static_cast<std::int64_t>(e.plan_a_hash), e.plan_b,
                      static_cast<std::int64_t>(e.plan_b_hash),
                      static_cast<int>(e.predicted_identical),
                      static_cast<int>(e.observed_identical), e.max_difference);
}

Status Store::addTiming(std::int64_t run_id, const TimingRecord& t) {
  return impl_->write(Sql::kAddTiming, run_id, t.case_index, t.rank, t.op_index, t.op_kind, t.group,
                      t.bytes, t.median_us, t.p10_us, t.p90_us, t.algbw_gbps, t.busbw_gbps);
}

Status Store::addEngineCase(std::int64_t run_id, const EngineCaseRecord& e) {
  return impl_->write(Sql::kAddEngineCase, run_id, e.case_index, e.policy, e.model, e.config,
                      e.flags, e.batch, e.family, e.engine, e.engine_verdict, e.agreement,
                      e.divergence, e.reproduce);
}

}  // namespace seam::reports
