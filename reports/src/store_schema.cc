// The store's schema: the CREATE TABLE text of version 1 and its migrations
// to versions 2 to 5, the marks that identify a seam store (application id,
// seam_meta rows, user_version), the creation of the schema in a new file,
// the check of an existing one and the migration of an older file.
#include <cstdio>
#include <string>

#include "seam/sim/base/status.h"
#include "store_impl.h"
#include "store_typed.h"

namespace seam::reports {

namespace {

using detail::kSeamApplicationId;

// The schema of version 1. REFERENCES clauses document the links; PRAGMA
// foreign_keys stays off (writers insert a run before its cases, a case
// before its verdicts, in one transaction).
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE seam_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO seam_meta(key, value) VALUES ('application', 'seam'), ('schema_version', '1');
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  command TEXT NOT NULL,
  args TEXT NOT NULL,
  version TEXT NOT NULL,
  host TEXT NOT NULL,
  gpu TEXT NOT NULL,
  cuda TEXT NOT NULL,
  nccl TEXT NOT NULL,
  started_ms INTEGER NOT NULL,
  finished_ms INTEGER NOT NULL);
CREATE INDEX runs_by_command ON runs(command, args, finished_ms);
CREATE TABLE cases(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  idx INTEGER NOT NULL,
  model TEXT NOT NULL,
  pattern TEXT NOT NULL,
  config TEXT NOT NULL,
  flags TEXT NOT NULL,
  batch TEXT NOT NULL,
  policy TEXT NOT NULL,
  group_key TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('holds', 'violated', 'refused')),
  refusal TEXT NOT NULL,
  reproduce TEXT NOT NULL,
  plan_hash INTEGER NOT NULL,
  PRIMARY KEY (run_id, idx));
CREATE TABLE verdicts(
  run_id INTEGER NOT NULL,
  case_idx INTEGER NOT NULL,
  property INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  holds INTEGER NOT NULL,
  violation_class TEXT NOT NULL,
  text TEXT NOT NULL,
  PRIMARY KEY (run_id, case_idx, property),
  FOREIGN KEY (run_id, case_idx) REFERENCES cases(run_id, idx));
CREATE TABLE mutants(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  id TEXT NOT NULL,
  kind TEXT NOT NULL,
  description TEXT NOT NULL,
  status TEXT NOT NULL,
  argument TEXT NOT NULL,
  cases_run INTEGER NOT NULL,
  PRIMARY KEY (run_id, id));
CREATE TABLE kills(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  mutant_id TEXT NOT NULL,
  case_idx INTEGER NOT NULL,
  property INTEGER NOT NULL,
  violation_class TEXT NOT NULL,
  text TEXT NOT NULL,
  reproduce TEXT NOT NULL,
  PRIMARY KEY (run_id, mutant_id));
CREATE TABLE equivalence(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  case_idx INTEGER NOT NULL,
  plan_a TEXT NOT NULL,
  plan_a_hash INTEGER NOT NULL,
  plan_b TEXT NOT NULL,
  plan_b_hash INTEGER NOT NULL,
  predicted_identical INTEGER NOT NULL,
  observed_identical INTEGER NOT NULL,
  max_difference REAL NOT NULL,
  PRIMARY KEY (run_id, case_idx, plan_a, plan_b));
CREATE TABLE timings(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  case_idx INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  op_index INTEGER NOT NULL,
  op_kind TEXT NOT NULL,
  group_key TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  median_us REAL NOT NULL,
  p10_us REAL NOT NULL,
  p90_us REAL NOT NULL,
  algbw_gbps REAL NOT NULL,
  busbw_gbps REAL NOT NULL,
  PRIMARY KEY (run_id, case_idx, rank, op_index));
PRAGMA application_id = 1397047629;
PRAGMA user_version = 1;
)sql";
static_assert(kSeamApplicationId == 1397047629, "kSchemaV1 spells the application id out");

// Version 1 -> 2: a campaign's mutants say how many cases reached their
// site, differed and failed to plan, and the time spent; a kill names the
// site it mutated. Columns added with defaults, so a version 1 row reads as
// it was (its site 0, no counts). A new store is created as version 1 and
// migrated in the same transaction: one path for both.
constexpr const char* kMigrateV1ToV2 = R"sql(
ALTER TABLE mutants ADD COLUMN applied INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mutants ADD COLUMN differed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mutants ADD COLUMN planner_errors INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mutants ADD COLUMN seconds REAL NOT NULL DEFAULT 0;
ALTER TABLE kills ADD COLUMN site INTEGER NOT NULL DEFAULT 0;
UPDATE seam_meta SET value = '2' WHERE key = 'schema_version';
PRAGMA user_version = 2;
)sql";

// Version 2 -> 3: a case's configuration and flags as typed columns
// (store_typed.h; the packed `config` and `flags` texts stay, so a version 2
// row reads as it was), an outcome of its own for cases seam does not model
// (before: `refused` with the text "not modelled yet: "), and the seam commit
// a run was built from. SQLite cannot change a CHECK constraint in place:
// `cases` is rebuilt (a copy in the same transaction), its typed columns
// filled by the writer's own parser, called as seam_typed().
const std::string& migrateV2ToV3() {
  static const std::string sql =
      R"sql(CREATE TABLE cases_v3(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  idx INTEGER NOT NULL,
  model TEXT NOT NULL,
  pattern TEXT NOT NULL,
  config TEXT NOT NULL,
  flags TEXT NOT NULL,
  batch TEXT NOT NULL,
  policy TEXT NOT NULL,
  group_key TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('holds', 'violated', 'refused', 'not-modelled')),
  refusal TEXT NOT NULL,
  reproduce TEXT NOT NULL,
  plan_hash INTEGER NOT NULL)sql" +
      detail::typedColumnDeclarations() +
      ",\n  PRIMARY KEY (run_id, idx));\n"
      "INSERT INTO cases_v3(run_id, idx, model, pattern, config, flags, batch, policy, group_key, "
      "outcome, refusal, reproduce, plan_hash" +
      detail::typedColumnNames() +
      ") SELECT run_id, idx, model, pattern, config, flags, batch, policy, group_key, "
      "CASE WHEN outcome = 'refused' AND substr(refusal, 1, " +
      std::to_string(kNotModelledPrefix.size()) + ") = '" + std::string(kNotModelledPrefix) +
      "' THEN 'not-modelled' ELSE outcome END, refusal, reproduce, plan_hash" +
      detail::typedColumnCalls() +
      " FROM cases ORDER BY run_id, idx;\n"
      "DROP TABLE cases;\n"
      "ALTER TABLE cases_v3 RENAME TO cases;\n"
      "ALTER TABLE runs ADD COLUMN seam_commit TEXT NOT NULL DEFAULT '';\n"
      "UPDATE seam_meta SET value = '3' WHERE key = 'schema_version';\n"
      "PRAGMA user_version = 3;\n";
  return sql;
}

// Version 3 -> 4: a campaign's baseline, stored when it holds, so that the
// campaign resumed takes it instead of checking every case again (where the
// space, seam's version and commit are unchanged). A table added: a version
// 3 store's rows read as they were, its campaigns have no baseline row (a
// resumed one checks its baseline again).
constexpr const char* kMigrateV3ToV4 = R"sql(
CREATE TABLE baselines(
  run_id INTEGER PRIMARY KEY REFERENCES runs(id),
  space TEXT NOT NULL,
  version TEXT NOT NULL,
  seam_commit TEXT NOT NULL,
  cases INTEGER NOT NULL,
  kept INTEGER NOT NULL,
  refused INTEGER NOT NULL,
  engine_findings INTEGER NOT NULL,
  kept_cases BLOB NOT NULL,
  checksum INTEGER NOT NULL);
UPDATE seam_meta SET value = '4' WHERE key = 'schema_version';
PRAGMA user_version = 4;
)sql";

// Version 4 -> 5: `seam sweep --engine`'s rows: per case of the space and
// per policy, how the policy's plan compares with what the engine ran (the
// agreement classes of docs/recordings.md), with the engine's own verdict. A
// table added: a version 4 store's rows read as they were.
constexpr const char* kMigrateV4ToV5 = R"sql(
CREATE TABLE engine_cases(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  case_idx INTEGER NOT NULL,
  policy TEXT NOT NULL,
  model TEXT NOT NULL,
  config TEXT NOT NULL,
  flags TEXT NOT NULL,
  batch TEXT NOT NULL,
  family TEXT NOT NULL,
  engine TEXT NOT NULL,
  engine_verdict TEXT NOT NULL,
  agreement TEXT NOT NULL,
  divergence TEXT NOT NULL,
  reproduce TEXT NOT NULL,
  PRIMARY KEY (run_id, case_idx, policy));
UPDATE seam_meta SET value = '5' WHERE key = 'schema_version';
PRAGMA user_version = 5;
)sql";
static_assert(kStoreSchemaVersion == 5, "kMigrateV4ToV5 ends at version 5");

/// Migrates a store of `from` (1 to 4) to version `to`, step by step.
int migrateFrom(sqlite3* db, int from, int to = kStoreSchemaVersion) {
  int rc = detail::registerTypedFunction(db);
  if (rc == SQLITE_OK && from < 2 && to >= 2)
    rc = sqlite3_exec(db, kMigrateV1ToV2, nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK && from < 3 && to >= 3)
    rc = sqlite3_exec(db, migrateV2ToV3().c_str(), nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK && from < 4 && to >= 4)
    rc = sqlite3_exec(db, kMigrateV3ToV4, nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK && from < 5 && to >= 5)
    rc = sqlite3_exec(db, kMigrateV4ToV5, nullptr, nullptr, nullptr);
  return rc;
}

}  // namespace

namespace detail {

Status createSchemaOfVersion(sqlite3* db, int version) {
  if (version < 1 || version > kStoreSchemaVersion) {
    return Status::internal("no schema of version " + std::to_string(version));
  }
  // As a store of that version has it: created as version 1, then migrated.
  int rc = sqlite3_exec(db, kSchemaV1, nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) rc = migrateFrom(db, 1, version);
  if (rc != SQLITE_OK) {
    return Status::internal(std::string("the schema did not build: ") + sqlite3_errmsg(db));
  }
  return Status::ok();
}

}  // namespace detail

Status createStoreOfVersion(const std::string& path, int version) {
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    std::fclose(f);
    return Status::invalid(detail::dbName(path) + ": exists; an old store is made only anew");
  }
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  detail::Connection db(raw);
  if (rc != SQLITE_OK) return Status::invalid(detail::dbName(path) + ": cannot create it");
  return detail::createSchemaOfVersion(db.get(), version);
}

namespace detail {

Status checkSchema(sqlite3* db, const std::string& path) {
  auto sqliteContext = [&] { return SqliteContext{db, &path}; };
  // One scalar query; a file SQLite cannot read as a database is refused.
  auto scalar = [&](const char* sql, std::string& out, bool& found) -> Status {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
    Statement statement(raw);
    if (rc == SQLITE_OK) rc = sqlite3_step(raw);
    if (!sqliteSucceeded(rc) && unreadableHeader(rc)) return refuseUnreadable(db, path, rc);
    SEAM_SQLITE_CHECK(rc);
    found = rc == SQLITE_ROW;
    out = found ? columnText(raw, 0) : std::string();
    return Status::ok();
  };
  std::string value;
  bool found = false;
  if (Status s = scalar("PRAGMA application_id", value, found); !s) return s;
  const bool seam_id = found && value == std::to_string(kSeamApplicationId);
  if (Status s = scalar("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'seam_meta'",
                        value, found);
      !s) {
    return s;
  }
  if (!seam_id || !found) return refuse(path, "an SQLite database of another application");
  if (Status s = scalar("SELECT value FROM seam_meta WHERE key = 'application'", value, found);
      !s) {
    return s;
  }
  if (!found || value != "seam") return refuse(path, "an SQLite database of another application");
  if (Status s = scalar("SELECT value FROM seam_meta WHERE key = 'schema_version'", value, found);
      !s) {
    return s;
  }
  if (!found) return refuse(path, "a seam store without a schema version");
  if (value != "1" && value != "2" && value != "3" && value != "4" &&
      value != std::to_string(kStoreSchemaVersion)) {
    return Status::invalid(dbName(path) + ": a seam store of schema version " +
                           value.substr(0, 16) + ", but this seam reads and writes version " +
                           std::to_string(kStoreSchemaVersion) +
                           " (and migrates versions 1 to 4); refusing to write to it");
  }
  return Status::ok();
}

}  // namespace detail

Expected<bool> Store::Impl::createSchema() {
  SEAM_SQLITE_CHECK(sqlite3_exec(db.get(), "BEGIN IMMEDIATE", nullptr, nullptr, nullptr));
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db.get(), "SELECT count(*) FROM sqlite_master", -1, &raw, nullptr);
  detail::Statement count(raw);
  if (rc == SQLITE_OK) rc = sqlite3_step(raw);
  if (rc != SQLITE_ROW) {
    const Status failed = detail::sqliteFailure(sqliteContext(), rc);
    (void)exec("ROLLBACK");
    return failed;
  }
  const bool empty = sqlite3_column_int64(raw, 0) == 0;
  count.reset();
  if (!empty) {
    (void)exec("ROLLBACK");
    return false;
  }
  if (Status s = exec(kSchemaV1); !s) {
    (void)exec("ROLLBACK");
    return s;
  }
  if (const int rc = migrateFrom(db.get(), 1); rc != SQLITE_OK) {
    const Status failed = detail::sqliteFailure(sqliteContext(), rc);
    (void)exec("ROLLBACK");
    return failed;
  }
  if (Status s = exec("COMMIT"); !s) {
    (void)exec("ROLLBACK");
    return s;
  }
  return true;
}

}  // namespace seam::reports

namespace seam::reports {

Status Store::Impl::migrate() {
  SEAM_SQLITE_CHECK(sqlite3_exec(db.get(), "BEGIN IMMEDIATE", nullptr, nullptr, nullptr));
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db.get(), "SELECT value FROM seam_meta WHERE key = 'schema_version'",
                              -1, &raw, nullptr);
  detail::Statement version(raw);
  if (rc == SQLITE_OK) rc = sqlite3_step(raw);
  if (rc != SQLITE_ROW) {
    const Status failed = detail::sqliteFailure(sqliteContext(), rc);
    (void)exec("ROLLBACK");
    return failed;
  }
  // Read inside the write lock: two runs opening one old file migrate it once.
  const std::string stored = detail::columnText(raw, 0);
  version.reset();
  if (stored == "1" || stored == "2" || stored == "3" || stored == "4") {
    if (const int rc = migrateFrom(db.get(), std::stoi(stored)); rc != SQLITE_OK) {
      // A schema SQLite cannot rebuild (an index left over from a damaged
      // table, say) is the file's fault; busy, I/O and the like are this
      // machine's. Either way the transaction leaves the file as it was.
      const Status failed =
          detail::unreadableHeader(rc)
              ? detail::damaged(path, "its migration from schema version " + stored +
                                          " failed: " + sqlite3_errmsg(db.get()))
              : detail::sqliteFailure(sqliteContext(), rc);
      (void)exec("ROLLBACK");
      return failed;
    }
    // A damaged schema can take a migration without an error and without
    // its effect (SQLite adds no column to a table whose stored CREATE text
    // names another table): the migrated store is checked as an opened one.
    if (Status s = detail::checkStoreIntact(db.get(), path); !s) {
      (void)exec("ROLLBACK");
      return s;
    }
  }
  if (Status s = exec("COMMIT"); !s) {
    (void)exec("ROLLBACK");
    return s;
  }
  return Status::ok();
}

}  // namespace seam::reports
