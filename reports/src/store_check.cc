// The check of an existing seam store before anything is written to it: the
// pages (SQLite's quick_check) and the tables and columns, compared with the
// schema of the store's version built in memory, so that a damaged store is
// refused as it is rather than appended to or failed on half-way.
#include <algorithm>
#include <string>
#include <vector>

#include "store_impl.h"

namespace seam::reports::detail {

Status damaged(const std::string& path, const std::string& why) {
  std::string text = why.substr(0, 160);
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return Status::invalid(dbName(path) + ": a damaged seam store (" + text +
                         "); refusing to write to it");
}

namespace {

/// One column as PRAGMA table_xinfo gives it: name, declared type, NOT NULL,
/// position in the primary key, hidden (2 or 3: generated).
struct Column {
  std::string name, type;
  int not_null = 0, primary_key = 0, hidden = 0;
  friend bool operator==(const Column&, const Column&) = default;
};

/// Runs `sql` and hands each row to `onRow`; the SQLite code of the end.
template <class OnRow>
int eachRow(sqlite3* db, const std::string& sql, OnRow&& onRow) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &raw, nullptr);
  Statement statement(raw);
  if (rc != SQLITE_OK) return rc;
  while ((rc = sqlite3_step(raw)) == SQLITE_ROW) onRow(raw);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

std::vector<std::string> tableNames(sqlite3* db, int* rc) {
  std::vector<std::string> out;
  *rc = eachRow(db,
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                "'sqlite_%' ORDER BY name",
                [&](sqlite3_stmt* s) { out.push_back(columnText(s, 0)); });
  return out;
}

std::vector<Column> columnsOf(sqlite3* db, const std::string& table, int* rc) {
  std::vector<Column> out;
  // table_xinfo, not table_info: it lists generated columns too (hidden 2 or 3).
  *rc = eachRow(db, "PRAGMA table_xinfo(\"" + table + "\")", [&](sqlite3_stmt* s) {
    out.push_back({columnText(s, 1), columnText(s, 2), sqlite3_column_int(s, 3),
                   sqlite3_column_int(s, 5), sqlite3_column_int(s, 6)});
  });
  return out;
}

/// The failure of a read of the store while it is checked: its contents'
/// fault (refused as damaged) or this machine's (busy, I/O: sqliteFailure).
Status readFailed(sqlite3* db, const std::string& path, int rc) {
  if (unreadableHeader(rc)) return damaged(path, sqlite3_errmsg(db));
  return sqliteFailure(SqliteContext{db, &path}, rc);
}

/// The schema version the store says it has (checkSchema accepted it).
int storedVersion(sqlite3* db, int* rc) {
  int version = 0;
  *rc = eachRow(db, "SELECT value FROM seam_meta WHERE key = 'schema_version'",
                [&](sqlite3_stmt* s) { version = sqlite3_column_int(s, 0); });
  return version;
}

Status compareTables(sqlite3* db, sqlite3* expected, const std::string& path) {
  int rc = SQLITE_OK;
  const std::vector<std::string> want = tableNames(expected, &rc);
  if (rc != SQLITE_OK) return Status::internal("the expected schema cannot be read");
  const std::vector<std::string> have = tableNames(db, &rc);
  if (rc != SQLITE_OK) return readFailed(db, path, rc);
  for (const std::string& table : want) {
    if (std::find(have.begin(), have.end(), table) == have.end()) {
      return damaged(path, "table \"" + table + "\" is missing");
    }
    const std::vector<Column> want_columns = columnsOf(expected, table, &rc);
    const std::vector<Column> have_columns = columnsOf(db, table, &rc);
    if (rc != SQLITE_OK) return readFailed(db, path, rc);
    for (const Column& c : want_columns) {
      const auto found = std::find_if(have_columns.begin(), have_columns.end(),
                                      [&](const Column& h) { return h.name == c.name; });
      if (found == have_columns.end()) {
        return damaged(path, "column \"" + table + "." + c.name + "\" is missing");
      }
      if (!(*found == c)) {
        return damaged(
            path, "column \"" + table + "." + c.name + "\" is not declared as seam declares it");
      }
    }
    if (have_columns.size() != want_columns.size()) {
      return damaged(path, "table \"" + table + "\" has columns seam does not know");
    }
  }
  return Status::ok();
}

}  // namespace

Status checkStoreIntact(sqlite3* db, const std::string& path) {
  // quick_check: every page and record readable, the indexes' sizes right
  // (integrity_check also compares every index entry, which costs a sort).
  std::string verdict;
  int rc =
      eachRow(db, "PRAGMA quick_check(1)", [&](sqlite3_stmt* s) { verdict = columnText(s, 0); });
  if (rc != SQLITE_OK) return readFailed(db, path, rc);
  if (verdict != "ok") return damaged(path, "SQLite's quick_check: " + verdict);
  const int version = storedVersion(db, &rc);
  if (rc != SQLITE_OK) return readFailed(db, path, rc);
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close_v2(raw);
    return Status::internal("an in-memory SQLite database could not be opened");
  }
  Connection expected(raw);
  if (Status s = createSchemaOfVersion(expected.get(), version); !s) {
    return damaged(path, "schema version " + std::to_string(version) + " is not one seam wrote");
  }
  return compareTables(db, expected.get(), path);
}

}  // namespace seam::reports::detail
