// SEAM_SQLITE_CHECK: the one way a failing SQLite call becomes a Status
// (STYLE 7). Private to reports/: nothing outside this folder sees sqlite3.h.
// The enclosing scope provides `sqliteContext()` (the connection and the file
// it belongs to), so every message names the file without repeating it.
#pragma once

#include <sqlite3.h>

#include <string>

#include "seam/sim/base/status.h"

namespace seam::reports::detail {

/// How long a connection waits for another connection's write lock.
inline constexpr int kBusyTimeoutMs = 5000;

/// What a failure message needs: the connection (for sqlite3_errmsg) and the
/// store's path. `db` may be null when the connection could not be opened.
struct SqliteContext {
  sqlite3* db = nullptr;
  const std::string* path = nullptr;
};

/// SQLITE_OK, SQLITE_ROW and SQLITE_DONE are the codes that are not failures.
inline bool sqliteSucceeded(int rc) {
  return rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE;
}

/// The one-line Status for a failed call, in seam's words with SQLite's
/// reason: busy (another seam run holds the write lock past the busy
/// timeout); the machine's fault (disk full, read-only, I/O: bad input, exit
/// 2); a damaged file (exit 2); anything else an internal error.
Status sqliteFailure(const SqliteContext& context, int rc);

}  // namespace seam::reports::detail

/// Evaluates `expr` (an SQLite result code); on failure returns the Status
/// from the enclosing function (which returns Status or Expected<T>).
#define SEAM_SQLITE_CHECK(expr)                                                        \
  do {                                                                                 \
    const int seam_sqlite_rc_ = (expr);                                                \
    if (!::seam::reports::detail::sqliteSucceeded(seam_sqlite_rc_)) {                  \
      return ::seam::reports::detail::sqliteFailure(sqliteContext(), seam_sqlite_rc_); \
    }                                                                                  \
  } while (0)
