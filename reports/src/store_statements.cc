// The text of the statements a store prepares once and reuses (Sql names
// them), and the connection's two ways to run SQL: a cached statement and a
// one-off exec.
#include <array>
#include <cstddef>

#include "store_impl.h"

namespace seam::reports {

using detail::Sql;

namespace {

constexpr std::array<const char*, static_cast<std::size_t>(Sql::kCount)> kSqlText = {
    // kInsertRun
    "INSERT INTO runs(command, args, version, host, gpu, cuda, nccl, started_ms, finished_ms, "
    "seam_commit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    // kFindUnfinished
    "SELECT id, command, args, version, host, gpu, cuda, nccl, started_ms, finished_ms, "
    "seam_commit FROM runs WHERE finished_ms = 0 AND command = ? AND args = ? ORDER BY id DESC "
    "LIMIT 1",
    // kFinishRun
    "UPDATE runs SET finished_ms = ? WHERE id = ?",
    // kRuns
    "SELECT id, command, args, version, host, gpu, cuda, nccl, started_ms, finished_ms, "
    "seam_commit FROM runs ORDER BY id",
    // kInsertCase
    "INSERT INTO cases(run_id, idx, model, pattern, config, flags, batch, policy, group_key, "
    "outcome, refusal, reproduce, plan_hash, pp, tp, attn_dp, attn_cp, moe_ep, moe_dp, a2a, "
    "fusion, padding, reduction, mode, capture, ln_sp, dense_tp1, input_scattered, dp_gatherv, "
    "tbo) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
    "?, ?, ?, ?)",
    // kInsertVerdict
    "INSERT INTO verdicts(run_id, case_idx, property, seq, holds, violation_class, text) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)",
    // kCaseIndices
    "SELECT idx FROM cases WHERE run_id = ? ORDER BY idx",
    // kCases
    "SELECT idx, model, pattern, config, flags, batch, policy, group_key, outcome, refusal, "
    "reproduce, plan_hash FROM cases WHERE run_id = ? ORDER BY idx",
    // kFirstFailures
    "SELECT v.case_idx, v.property, v.holds, v.violation_class, v.text FROM verdicts v "
    "JOIN cases c ON c.run_id = v.run_id AND c.idx = v.case_idx "
    "WHERE v.run_id = ? AND c.outcome = 'violated' AND v.holds = 0 ORDER BY v.case_idx, v.seq",
    // kVerdicts
    "SELECT case_idx, property, holds, violation_class, text FROM verdicts WHERE run_id = ? "
    "ORDER BY case_idx, seq",
    // kPutMutant: an upsert keeps the row's rowid, so mutants() keeps the
    // order in which the campaign first put them (the registry's order).
    "INSERT INTO mutants(run_id, id, kind, description, status, argument, cases_run, applied, "
    "differed, planner_errors, seconds) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(run_id, id) DO UPDATE SET kind = excluded.kind, "
    "description = excluded.description, status = excluded.status, "
    "argument = excluded.argument, cases_run = excluded.cases_run, applied = excluded.applied, "
    "differed = excluded.differed, planner_errors = excluded.planner_errors, "
    "seconds = excluded.seconds",
    // kMutants
    "SELECT id, kind, description, status, argument, cases_run, applied, differed, "
    "planner_errors, seconds FROM mutants WHERE run_id = ? ORDER BY rowid",
    // kAddKill: a mutant's row is its first kill; later kills do not replace it.
    "INSERT INTO kills(run_id, mutant_id, case_idx, property, violation_class, text, reproduce, "
    "site) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(run_id, mutant_id) DO NOTHING",
    // kKills
    "SELECT mutant_id, case_idx, property, violation_class, text, reproduce, site FROM kills "
    "WHERE run_id = ? ORDER BY rowid",
    // kClearKills
    "DELETE FROM kills WHERE run_id = ?",
    // kClearMutants
    "DELETE FROM mutants WHERE run_id = ?",
    // kPutBaseline
    "INSERT OR REPLACE INTO baselines(run_id, space, version, seam_commit, cases, kept, refused, "
    "engine_findings, kept_cases, checksum) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    // kBaseline
    "SELECT space, version, seam_commit, cases, kept, refused, engine_findings, kept_cases, "
    "checksum FROM baselines WHERE run_id = ?",
    // kAddEquivalence
    "INSERT OR REPLACE INTO equivalence(run_id, case_idx, plan_a, plan_a_hash, plan_b, "
    "plan_b_hash, "
    "predicted_identical, observed_identical, max_difference) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    // kEquivalences
    "SELECT case_idx, plan_a, plan_a_hash, plan_b, plan_b_hash, predicted_identical, "
    "observed_identical, "
    "max_difference FROM equivalence WHERE run_id = ? ORDER BY case_idx, plan_a, plan_b",
    // kAddTiming
    "INSERT OR REPLACE INTO timings(run_id, case_idx, rank, op_index, op_kind, group_key, bytes, "
    "median_us, "
    "p10_us, p90_us, algbw_gbps, busbw_gbps) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    // kTimings
    "SELECT case_idx, rank, op_index, op_kind, group_key, bytes, median_us, p10_us, p90_us, "
    "algbw_gbps, "
    "busbw_gbps FROM timings WHERE run_id = ? ORDER BY case_idx, rank, op_index",
    // kAddEngineCase
    "INSERT OR REPLACE INTO engine_cases(run_id, case_idx, policy, model, config, flags, batch, "
    "family, engine, engine_verdict, agreement, divergence, reproduce) VALUES (?, ?, ?, ?, ?, ?, "
    "?, ?, ?, ?, ?, ?, ?)",
    // kEngineCases
    "SELECT case_idx, policy, model, config, flags, batch, family, engine, engine_verdict, "
    "agreement, divergence, reproduce FROM engine_cases WHERE run_id = ? ORDER BY case_idx, "
    "policy",
    // kEngineCaseIndices
    "SELECT DISTINCT case_idx FROM engine_cases WHERE run_id = ? ORDER BY case_idx",
};

}  // namespace

Status Store::Impl::exec(const char* sql) {
  SEAM_SQLITE_CHECK(sqlite3_exec(db.get(), sql, nullptr, nullptr, nullptr));
  return Status::ok();
}

Expected<sqlite3_stmt*> Store::Impl::statement(Sql which) {
  detail::Statement& slot = statements[static_cast<std::size_t>(which)];
  if (!slot) {
    sqlite3_stmt* raw = nullptr;
    const int rc = sqlite3_prepare_v3(db.get(), kSqlText[static_cast<std::size_t>(which)], -1,
                                      SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    slot.reset(raw);
    SEAM_SQLITE_CHECK(rc);
  }
  return slot.get();
}

}  // namespace seam::reports
