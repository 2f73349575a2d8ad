#include "sqlite_check.h"

#include <string>
#include <string_view>
#include <utility>

namespace seam::reports::detail {

namespace {
// __FILE__ is absolute in CMake builds; the part from the folder on is enough.
std::string_view shortFile(std::string_view file) {
  const auto at = file.rfind("reports/");
  return at == std::string_view::npos ? file : file.substr(at);
}
}  // namespace

Status sqliteFailure(const SqliteContext& context, int rc, const char* file, int line) {
  const std::string db = "--db \"" + (context.path ? *context.path : std::string()) + "\"";
  if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) {
    return Status::internal(db + " is busy: another seam run holds it (waited " +
                            std::to_string(kBusyTimeoutMs) +
                            " ms); try again when that run has finished");
  }
  const char* what = context.db ? sqlite3_errmsg(context.db) : sqlite3_errstr(rc);
  std::string message = db + ": " + what + " (SQLite code " + std::to_string(rc) + " at " +
                        std::string(shortFile(file)) + ":" + std::to_string(line) + ")";
  // One line, whatever SQLite said.
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return Status::internal(std::move(message));
}

}  // namespace seam::reports::detail
