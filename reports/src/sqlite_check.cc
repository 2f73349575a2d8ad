#include "sqlite_check.h"

#include <string>

namespace seam::reports::detail {

Status sqliteFailure(const SqliteContext& context, int rc) {
  const std::string db = "--db \"" + (context.path ? *context.path : std::string()) + "\"";
  std::string what = context.db ? sqlite3_errmsg(context.db) : sqlite3_errstr(rc);
  // One line, whatever SQLite said.
  for (char& c : what) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  what = what.substr(0, 160);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::internal(db + " is busy: another seam run holds it (waited " +
                              std::to_string(kBusyTimeoutMs) +
                              " ms); try again when that run has finished");
    case SQLITE_FULL:
      return Status::invalid(db + ": the disk is full; the store keeps what was committed");
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_CANTOPEN:
      return Status::invalid(db + ": cannot write it (" + what + ")");
    case SQLITE_IOERR:
      return Status::invalid(db + ": the machine could not read or write it (" + what + ")");
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return Status::invalid(db + ": a damaged seam store (" + what +
                             "); the run stopped, what it committed is kept");
    case SQLITE_NOMEM:
      return Status::internal(db + ": out of memory while using the store");
    default:
      // What is left is seam's own use of SQLite going wrong: still one line,
      // in words, with SQLite's reason.
      return Status::internal(db + ": seam could not use the store (" + what + ")");
  }
}

}  // namespace seam::reports::detail
