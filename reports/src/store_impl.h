// What the store's sources share: Store::Impl (the connection and its cached
// statements), the binding of values to those statements, and the refusals
// of files that are not seam stores. Private to reports/src/store_*.cc.
#pragma once

#include <sqlite3.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "seam/reports/store.h"
#include "sqlite_check.h"
#include "store_typed.h"

namespace seam::reports {

namespace detail {

/// PRAGMA application_id of every seam store: "SEAM" in ASCII.
inline constexpr std::int32_t kSeamApplicationId = 0x5345414D;

/// The statements a store runs over and over: prepared once, then reused
/// (their text is in store_statements.cc).
enum class Sql : std::size_t {
  kInsertRun,
  kFindUnfinished,
  kFinishRun,
  kRuns,
  kInsertCase,
  kInsertVerdict,
  kCaseIndices,
  kCases,
  kFirstFailures,
  kVerdicts,
  kPutMutant,
  kMutants,
  kAddKill,
  kKills,
  kClearKills,
  kClearMutants,
  kPutBaseline,
  kBaseline,
  kAddEquivalence,
  kEquivalences,
  kAddTiming,
  kTimings,
  kAddEngineCase,
  kEngineCases,
  kEngineCaseIndices,
  kCount,
};

struct ConnectionCloser {
  // close_v2: statements are finalized first anyway (Impl's member order); an
  // open transaction is rolled back, which is what "closing commits nothing
  // pending" means.
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Connection = std::unique_ptr<sqlite3, ConnectionCloser>;

struct StatementFinalizer {
  void operator()(sqlite3_stmt* statement) const { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

/// One use of a cached statement: however the use ends, the statement is
/// reset (so it holds no read snapshot that would pin the WAL) and unbound.
class StatementUse {
 public:
  explicit StatementUse(sqlite3_stmt* statement) : statement_(statement) {}
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;
  ~StatementUse() {
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
  }

 private:
  sqlite3_stmt* statement_;
};

// Strings are bound SQLITE_STATIC (no copy): a bound string must outlive the
// step, so a temporary string does not compile.
inline int bindValue(sqlite3_stmt* s, int i, const std::string& v) {
  return sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
}
int bindValue(sqlite3_stmt* s, int i, std::string&& v) = delete;
/// Bytes bound as a BLOB (a TEXT value is converted when the store's text
/// encoding is not UTF-8; a BLOB never is).
struct Blob {
  const std::string& bytes;
};
inline int bindValue(sqlite3_stmt* s, int i, Blob v) {
  return sqlite3_bind_blob64(s, i, v.bytes.data(), v.bytes.size(), SQLITE_STATIC);
}
inline int bindValue(sqlite3_stmt* s, int i, std::int64_t v) { return sqlite3_bind_int64(s, i, v); }
inline int bindValue(sqlite3_stmt* s, int i, int v) { return sqlite3_bind_int(s, i, v); }
inline int bindValue(sqlite3_stmt* s, int i, double v) { return sqlite3_bind_double(s, i, v); }

/// Binds `values` to parameters 1..n; the first failing code, or SQLITE_OK.
template <class... Values>
int bindAll([[maybe_unused]] sqlite3_stmt* s, Values&&... values) {
  int rc = SQLITE_OK;
  int i = 0;
  ((rc = rc == SQLITE_OK ? bindValue(s, ++i, std::forward<Values>(values)) : rc), ...);
  return rc;
}

/// Column `i` of the current row as a string (embedded NULs kept).
inline std::string columnText(sqlite3_stmt* s, int i) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  const int bytes = sqlite3_column_bytes(s, i);
  return text ? std::string(text, static_cast<std::size_t>(bytes)) : std::string();
}

/// `--db "path"`, the start of every message about a store.
inline std::string dbName(const std::string& path) { return "--db \"" + path + "\""; }

/// The refusal of a file that is not a seam store, saying `why`.
Status refuse(const std::string& path, const std::string& why);

/// Whether the first reads of an existing file (its header and schema) failed
/// because of what it holds rather than because of this machine.
bool unreadableHeader(int rc);

/// The refusal of a file SQLite failed to read with `rc` (unreadableHeader).
Status refuseUnreadable(sqlite3* db, const std::string& path, int rc);

/// The refusal of a seam store whose contents are damaged, saying `why`
/// (one line, cut to 160 characters).
Status damaged(const std::string& path, const std::string& why);

/// Checks, on a connection that cannot write, that the file is a seam store
/// of this schema version (store_schema.cc).
Status checkSchema(sqlite3* db, const std::string& path);

/// Builds the schema of `version` (1..kStoreSchemaVersion) in an empty
/// database, as a store of that version has it (store_schema.cc).
Status createSchemaOfVersion(sqlite3* db, int version);

/// Refuses, untouched, a seam store that SQLite's quick_check finds damaged
/// or whose tables and columns are not those of its schema version (a table
/// dropped, a column renamed); run on the connection that will write, before
/// anything is written (store_check.cc).
Status checkStoreIntact(sqlite3* db, const std::string& path);

}  // namespace detail

struct Store::Impl {
  std::string path;
  detail::Connection db;  // declared before the statements: they are finalized first
  std::array<detail::Statement, static_cast<std::size_t>(detail::Sql::kCount)> statements;

  /// Whether an open case batch (Store::beginCaseBatch) has SQLite skip CHECKs.
  bool checks_skipped = false;
  /// The typed columns of the case rows insertCase binds.
  detail::TypedColumnBinder typed_columns;

  detail::SqliteContext sqliteContext() const { return detail::SqliteContext{db.get(), &path}; }

  /// Ends what beginCaseBatch set on the connection, whatever ended the batch.
  Status restoreChecks();

  Status exec(const char* sql);

  /// The cached statement, prepared on first use.
  Expected<sqlite3_stmt*> statement(detail::Sql which);

  /// Creates the schema in a file that is new or empty. False when another
  /// process created something in it first (the caller then inspects it).
  Expected<bool> createSchema();
  /// Migrates a store of an older version to the current one (nothing otherwise).
  Status migrate();

  /// Per-connection settings of every store connection.
  Status configure();

  /// Inserts a case row and its failing verdicts (inside a transaction).
  Status insertCase(std::int64_t run_id, const CaseRecord& c,
                    const std::vector<VerdictRecord>& failing);

  /// Runs `body` in a transaction of its own unless a batch is open.
  template <class Body>
  Status atomically(Body&& body) {
    const bool own = sqlite3_get_autocommit(db.get()) != 0;
    if (own) {
      if (Status s = exec("BEGIN IMMEDIATE"); !s) return s;
    }
    Status s = body();
    if (own) {
      if (s) s = exec("COMMIT");
      if (!s) (void)exec("ROLLBACK");
    }
    return s;
  }

  /// Runs a statement that returns no rows with `values` bound.
  template <class... Values>
  Status write(detail::Sql which, Values&&... values) {
    auto s = statement(which);
    if (!s) return s.status();
    detail::StatementUse use(*s);
    SEAM_SQLITE_CHECK(detail::bindAll(*s, std::forward<Values>(values)...));
    SEAM_SQLITE_CHECK(sqlite3_step(*s));
    return Status::ok();
  }

  /// Runs a query with `keys` bound and calls `onRow(statement)` on each row
  /// it returns; the first failing Status that onRow returns ends the query.
  template <class OnRow, class... Keys>
  Status eachRow(detail::Sql which, OnRow&& onRow, Keys&&... keys) {
    auto s = statement(which);
    if (!s) return s.status();
    detail::StatementUse use(*s);
    SEAM_SQLITE_CHECK(detail::bindAll(*s, std::forward<Keys>(keys)...));
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
      if (Status row = onRow(*s); !row) return row;
    }
    SEAM_SQLITE_CHECK(rc);
    return Status::ok();
  }

  /// Every row of a query, each made by `readRow(statement)`.
  template <class Row, class ReadRow, class... Keys>
  Expected<std::vector<Row>> rows(detail::Sql which, ReadRow&& readRow, Keys&&... keys) {
    std::vector<Row> out;
    const Status s = eachRow(
        which,
        [&](sqlite3_stmt* row) {
          out.push_back(readRow(row));
          return Status::ok();
        },
        std::forward<Keys>(keys)...);
    if (!s) return s;
    return out;
  }
};

}  // namespace seam::reports
