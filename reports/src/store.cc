#include "seam/reports/store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "sqlite_check.h"

namespace seam::reports {

namespace detail {

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

}  // namespace detail

namespace {

using detail::SqliteContext;

/// PRAGMA application_id of every seam store: "SEAM" in ASCII.
constexpr std::int32_t kSeamApplicationId = 0x5345414D;
constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
constexpr std::size_t kSqliteHeaderBytes = 100;

// The schema of version 1. Tables the first version does not write yet
// (equivalence, timings) are created now so that the schema does not change
// when `seam diff` and the GPU backend start writing them. REFERENCES clauses
// document the links; PRAGMA foreign_keys stays off (writers insert a run
// before its cases, a case before its verdicts, in one transaction).
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
static_assert(kStoreSchemaVersion == 1, "kSchemaV1 is the schema of version 1");

/// The statements a store runs over and over: prepared once, then reused.
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
  kAddEquivalence,
  kEquivalences,
  kAddTiming,
  kTimings,
  kCount,
};

constexpr std::array<const char*, static_cast<std::size_t>(Sql::kCount)> kSqlText = {
    // kInsertRun
    "INSERT INTO runs(command, args, version, host, gpu, cuda, nccl, started_ms, finished_ms) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    // kFindUnfinished
    "SELECT id, command, args, version, host, gpu, cuda, nccl, started_ms, finished_ms FROM runs "
    "WHERE finished_ms = 0 AND command = ? AND args = ? ORDER BY id DESC LIMIT 1",
    // kFinishRun
    "UPDATE runs SET finished_ms = ? WHERE id = ?",
    // kRuns
    "SELECT id, command, args, version, host, gpu, cuda, nccl, started_ms, finished_ms FROM runs "
    "ORDER BY id",
    // kInsertCase
    "INSERT INTO cases(run_id, idx, model, pattern, config, flags, batch, policy, group_key, "
    "outcome, refusal, reproduce, plan_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
    "INSERT INTO mutants(run_id, id, kind, description, status, argument, cases_run) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(run_id, id) DO UPDATE SET kind = excluded.kind, "
    "description = excluded.description, status = excluded.status, "
    "argument = excluded.argument, cases_run = excluded.cases_run",
    // kMutants
    "SELECT id, kind, description, status, argument, cases_run FROM mutants WHERE run_id = ? "
    "ORDER BY rowid",
    // kAddKill: a mutant's row is its first kill; later kills do not replace it.
    "INSERT INTO kills(run_id, mutant_id, case_idx, property, violation_class, text, reproduce) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(run_id, mutant_id) DO NOTHING",
    // kKills
    "SELECT mutant_id, case_idx, property, violation_class, text, reproduce FROM kills "
    "WHERE run_id = ? ORDER BY rowid",
    // kClearKills
    "DELETE FROM kills WHERE run_id = ?",
    // kClearMutants
    "DELETE FROM mutants WHERE run_id = ?",
    // kAddEquivalence
    "INSERT OR REPLACE INTO equivalence(run_id, case_idx, plan_a, plan_a_hash, plan_b, plan_b_hash, "
    "predicted_identical, observed_identical, max_difference) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    // kEquivalences
    "SELECT case_idx, plan_a, plan_a_hash, plan_b, plan_b_hash, predicted_identical, observed_identical, "
    "max_difference FROM equivalence WHERE run_id = ? ORDER BY case_idx, plan_a, plan_b",
    // kAddTiming
    "INSERT OR REPLACE INTO timings(run_id, case_idx, rank, op_index, op_kind, group_key, bytes, median_us, "
    "p10_us, p90_us, algbw_gbps, busbw_gbps) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    // kTimings
    "SELECT case_idx, rank, op_index, op_kind, group_key, bytes, median_us, p10_us, p90_us, algbw_gbps, "
    "busbw_gbps FROM timings WHERE run_id = ? ORDER BY case_idx, rank, op_index",
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
int bindValue(sqlite3_stmt* s, int i, const std::string& v) {
  return sqlite3_bind_text64(s, i, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
}
int bindValue(sqlite3_stmt* s, int i, std::string&& v) = delete;
int bindValue(sqlite3_stmt* s, int i, std::int64_t v) { return sqlite3_bind_int64(s, i, v); }
int bindValue(sqlite3_stmt* s, int i, int v) { return sqlite3_bind_int(s, i, v); }
int bindValue(sqlite3_stmt* s, int i, double v) { return sqlite3_bind_double(s, i, v); }

/// Binds `values` to parameters 1..n; the first failing code, or SQLITE_OK.
template <class... Values>
int bindAll(sqlite3_stmt* s, Values&&... values) {
  int rc = SQLITE_OK;
  int i = 0;
  ((rc = rc == SQLITE_OK ? bindValue(s, ++i, std::forward<Values>(values)) : rc), ...);
  return rc;
}

std::string columnText(sqlite3_stmt* s, int i) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  const int bytes = sqlite3_column_bytes(s, i);
  return text ? std::string(text, static_cast<std::size_t>(bytes)) : std::string();
}

RunRecord readRun(sqlite3_stmt* s) {
  RunRecord run;
  run.id = sqlite3_column_int64(s, 0);
  run.command = columnText(s, 1);
  run.args = columnText(s, 2);
  run.version = columnText(s, 3);
  run.host = columnText(s, 4);
  run.gpu = columnText(s, 5);
  run.cuda = columnText(s, 6);
  run.nccl = columnText(s, 7);
  run.started_ms = sqlite3_column_int64(s, 8);
  run.finished_ms = sqlite3_column_int64(s, 9);
  return run;
}

const char* outcomeName(CaseOutcome outcome) {
  switch (outcome) {
    case CaseOutcome::kHolds:
      return "holds";
    case CaseOutcome::kViolated:
      return "violated";
    case CaseOutcome::kRefused:
      return "refused";
  }
  assert(false && "a CaseOutcome without a name");
  return "holds";
}

std::optional<CaseOutcome> parseOutcome(const std::string& name) {
  if (name == "holds") return CaseOutcome::kHolds;
  if (name == "violated") return CaseOutcome::kViolated;
  if (name == "refused") return CaseOutcome::kRefused;
  return std::nullopt;
}

std::int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string dbName(const std::string& path) { return "--db \"" + path + "\""; }

Status refuse(const std::string& path, const std::string& why) {
  return Status::invalid(dbName(path) + ": not a seam store (" + why +
                         "); refusing to write to it");
}

bool fileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

/// Reads the first `n` bytes of `path` (fewer when it is shorter) into `out`;
/// nullopt when it cannot be opened. `*read_errno` is the errno of the last
/// failed call.
std::optional<std::size_t> readPrefix(const std::string& path, unsigned char* out, std::size_t n,
                                      int* read_errno) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *read_errno = errno;
    return std::nullopt;
  }
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) *read_errno = errno;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(fd);
  return got;
}

/// Refuses anything that is not a whole SQLite file without asking SQLite,
/// so that nothing (not even a -wal or -shm beside it) is created for it.
Status readHeader(const std::string& path, std::int64_t size) {
  std::array<unsigned char, kSqliteHeaderBytes> header{};
  int read_errno = 0;
  const std::optional<std::size_t> read = readPrefix(path, header.data(), header.size(), &read_errno);
  if (!read) return Status::invalid(dbName(path) + ": cannot read it (" + std::strerror(read_errno) + ")");
  const std::size_t got = *read;
  if (got < header.size() && got < static_cast<std::size_t>(size)) {
    return Status::invalid(dbName(path) + ": cannot read it (" + std::strerror(read_errno) + ")");
  }
  const std::string_view head(reinterpret_cast<const char*>(header.data()), got);
  if (got < header.size()) {
    return refuse(path, head.starts_with(kSqliteMagic) ? "a truncated SQLite database"
                                                       : "not an SQLite database");
  }
  if (!head.starts_with(kSqliteMagic)) return refuse(path, "not an SQLite database");
  // Page size: big-endian at offset 16, 1 meaning 65536; a power of two.
  std::uint32_t page_size = (std::uint32_t{header[16]} << 8) | header[17];
  if (page_size == 1) page_size = 65536;
  if (page_size < 512 || page_size > 65536 || (page_size & (page_size - 1)) != 0) {
    return refuse(path, "a damaged SQLite database");
  }
  // File format write and read versions: 1 (rollback journal) or 2 (WAL).
  // SQLite opens a file with a larger write version read-only (and creates
  // its -wal and -shm if the read version is 2), and cannot read one with a
  // larger read version.
  if (header[18] < 1 || header[18] > 2 || header[19] < 1 || header[19] > 2) {
    return refuse(path, "a damaged SQLite database (file format versions " + std::to_string(header[18]) + "/" +
                            std::to_string(header[19]) + ")");
  }
  // SQLite writes whole pages; a file cut mid-page was truncated. (A file cut
  // at a page boundary is caught by SQLite itself: the in-header page count,
  // bytes 28..31, then exceeds the file.)
  if (size % page_size != 0) return refuse(path, "a truncated SQLite database");
  return Status::ok();
}

/// What the rollback journal beside a file (`path-journal`) says. SQLite
/// writes one for every transaction outside WAL mode (in seam: creating the
/// schema, then switching to WAL) and deletes it at the commit, so one left
/// behind with its magic intact is a crashed writer's ("hot"): the next
/// connection that may write rolls the file back with it.
enum class Journal : std::uint8_t {
  kNone,       ///< no journal, or none SQLite would play back
  kCreation,   ///< hot, and the file had no pages before: its creation never committed
  kHot,        ///< hot, over a file that had pages before
};

Journal readJournal(const std::string& path) {
  // Header: 8 magic bytes, the page record count, the checksum seed, then
  // the file's size in pages before the transaction (big-endian).
  static constexpr unsigned char kMagic[8] = {0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7};
  static constexpr std::size_t kHeaderBytes = 20;
  std::array<unsigned char, kHeaderBytes> header{};
  int ignored = 0;
  const std::optional<std::size_t> got = readPrefix(path + "-journal", header.data(), header.size(), &ignored);
  if (!got || *got < header.size() || !std::equal(std::begin(kMagic), std::end(kMagic), header.begin())) {
    return Journal::kNone;
  }
  const std::uint32_t pages_before = (std::uint32_t{header[16]} << 24) | (std::uint32_t{header[17]} << 16) |
                                     (std::uint32_t{header[18]} << 8) | header[19];
  return pages_before == 0 ? Journal::kCreation : Journal::kHot;
}

/// Whether the file's header carries seam's application id (bytes 68..71).
bool hasSeamApplicationId(const std::string& path) {
  constexpr std::size_t kOffset = 68;
  std::array<unsigned char, kOffset + 4> head{};
  int ignored = 0;
  const std::optional<std::size_t> got = readPrefix(path, head.data(), head.size(), &ignored);
  const std::uint32_t value = (std::uint32_t{head[kOffset]} << 24) | (std::uint32_t{head[kOffset + 1]} << 16) |
                              (std::uint32_t{head[kOffset + 2]} << 8) | head[kOffset + 3];
  return got && *got == head.size() && value == static_cast<std::uint32_t>(kSeamApplicationId);
}

/// A URI for sqlite3_open_v2 with SQLITE_OPEN_URI: the path percent-encoded.
std::string fileUri(const std::string& path, const char* query) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = path.starts_with('/') ? "file://" : "file:";
  for (const unsigned char c : path) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (plain) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 0xf];
    }
  }
  return uri + query;
}

Expected<Connection> openConnection(const std::string& name, int flags, const std::string& path,
                                    const char* doing) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &raw, flags | SQLITE_OPEN_EXRESCODE, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) {
    const std::string why = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    return Status::invalid(dbName(path) + ": cannot " + doing + " it (" + why + ")");
  }
  sqlite3_busy_timeout(db.get(), detail::kBusyTimeoutMs);
  return db;
}

/// Whether a read of an existing file failed because of what the file holds
/// (not a database, damaged, a format or schema SQLite cannot read), rather
/// than because of this machine (busy, out of memory, I/O): such a file is
/// refused as not a seam store.
bool unreadableFile(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOMEM:
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_INTERRUPT:
    case SQLITE_PERM:
      return false;
    default:
      return true;
  }
}

/// Whether the first reads of an existing file (its header and schema) failed
/// because of what it holds: unreadableFile, or SQLITE_NOMEM, which a damaged
/// header or schema record gives (it claims sizes SQLite then cannot
/// allocate; reading a sound store's schema needs little memory).
bool unreadableHeader(int rc) { return unreadableFile(rc) || (rc & 0xff) == SQLITE_NOMEM; }

/// The refusal of a file SQLite failed to read with `rc` (unreadableFile).
Status refuseUnreadable(sqlite3* db, const std::string& path, int rc) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
    return refuse(path, "a damaged or truncated SQLite database");
  }
  std::string what = sqlite3_errmsg(db);
  for (char& c : what) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return refuse(path, "an SQLite database SQLite cannot read: " + what.substr(0, 120));
}

/// Checks, on a connection that cannot write, that the file is a seam store
/// of this schema version.
Status inspect(sqlite3* db, const std::string& path) {
  auto sqliteContext = [&] { return SqliteContext{db, &path}; };
  // One scalar query; a file SQLite cannot read as a database is refused.
  auto scalar = [&](const char* sql, std::string& out, bool& found) -> Status {
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
    Statement statement(raw);
    if (rc == SQLITE_OK) rc = sqlite3_step(raw);
    if (!detail::sqliteSucceeded(rc) && unreadableHeader(rc)) return refuseUnreadable(db, path, rc);
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
  if (value != std::to_string(kStoreSchemaVersion)) {
    return Status::invalid(dbName(path) + ": a seam store of schema version " +
                           value.substr(0, 16) + ", but this seam reads and writes version " +
                           std::to_string(kStoreSchemaVersion) + "; refusing to write to it");
  }
  return Status::ok();
}

/// Inspects an existing non-empty file without writing to it.
Status inspectExisting(const std::string& path, std::int64_t size, Journal journal) {
  if (Status s = readHeader(path, size); !s) return s;
  // A read-only connection creates the -wal and -shm files of a database
  // whose header asks for WAL (either format byte 2, whatever the other
  // says) when they are missing, and cannot play a hot journal back
  // (SQLITE_READONLY_ROLLBACK). immutable=1 reads the main file alone, as it
  // is, and creates nothing. That is enough to identify a seam store: its
  // schema, meta rows and application id are committed before it is
  // switched to WAL, and a seam store whose own writer crashed is rolled
  // back by the connection that then writes to it. Only when both side files
  // exist (a live or crashed WAL writer) and no journal does, an ordinary
  // read-only connection takes the locks and sees the WAL; it creates
  // nothing either.
  const bool both_side_files = fileExists(path + "-wal") && fileExists(path + "-shm");
  const bool immutable = !both_side_files || journal != Journal::kNone;
  auto db = openConnection(fileUri(path, immutable ? "?immutable=1" : ""),
                           SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, path, "read");
  if (!db) return db.status();
  return inspect(db->get(), path);
}

}  // namespace

struct Store::Impl {
  std::string path;
  Connection db;  // declared before the statements: they are finalized first
  std::array<Statement, static_cast<std::size_t>(Sql::kCount)> statements;

  SqliteContext sqliteContext() const { return SqliteContext{db.get(), &path}; }

  Status exec(const char* sql) {
    SEAM_SQLITE_CHECK(sqlite3_exec(db.get(), sql, nullptr, nullptr, nullptr));
    return Status::ok();
  }

  /// The cached statement, prepared on first use.
  Expected<sqlite3_stmt*> statement(Sql which) {
    Statement& slot = statements[static_cast<std::size_t>(which)];
    if (!slot) {
      sqlite3_stmt* raw = nullptr;
      const int rc = sqlite3_prepare_v3(db.get(), kSqlText[static_cast<std::size_t>(which)], -1,
                                        SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
      slot.reset(raw);
      SEAM_SQLITE_CHECK(rc);
    }
    return slot.get();
  }

  /// Creates the schema in a file that is new or empty. False when another
  /// process created something in it first (the caller then inspects it).
  Expected<bool> createSchema() {
    SEAM_SQLITE_CHECK(sqlite3_exec(db.get(), "BEGIN IMMEDIATE", nullptr, nullptr, nullptr));
    sqlite3_stmt* raw = nullptr;
    int rc = sqlite3_prepare_v2(db.get(), "SELECT count(*) FROM sqlite_master", -1, &raw, nullptr);
    Statement count(raw);
    if (rc == SQLITE_OK) rc = sqlite3_step(raw);
    if (rc != SQLITE_ROW) {
      const Status failed = detail::sqliteFailure(sqliteContext(), rc, __FILE__, __LINE__);
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
    if (Status s = exec("COMMIT"); !s) {
      (void)exec("ROLLBACK");
      return s;
    }
    return true;
  }

  /// Per-connection settings of every store connection.
  Status configure() {
    // WAL: readers never block the writer, and a crashed writer loses only
    // its open batch. NORMAL syncs at checkpoints, not at every commit: a
    // process crash loses nothing committed, a power loss at most the last
    // commits, and neither can leave the file inconsistent.
    SEAM_SQLITE_CHECK(
        sqlite3_exec(db.get(), "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr));
    SEAM_SQLITE_CHECK(
        sqlite3_exec(db.get(), "PRAGMA synchronous = NORMAL", nullptr, nullptr, nullptr));
    return Status::ok();
  }

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

  Status beginRun(RunRecord& run) {
    auto s = statement(Sql::kInsertRun);
    if (!s) return s.status();
    StatementUse use(*s);
    if (run.started_ms == 0) run.started_ms = nowMs();
    SEAM_SQLITE_CHECK(bindAll(*s, run.command, run.args, run.version, run.host, run.gpu, run.cuda,
                              run.nccl, run.started_ms, run.finished_ms));
    SEAM_SQLITE_CHECK(sqlite3_step(*s));
    run.id = sqlite3_last_insert_rowid(db.get());
    return Status::ok();
  }

  Expected<std::optional<RunRecord>> findUnfinished(const std::string& command,
                                                    const std::string& args) {
    auto s = statement(Sql::kFindUnfinished);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, command, args));
    const int rc = sqlite3_step(*s);
    SEAM_SQLITE_CHECK(rc);
    if (rc != SQLITE_ROW) return std::optional<RunRecord>();
    return std::optional<RunRecord>(readRun(*s));
  }

  Status finishRun(std::int64_t run_id) {
    auto s = statement(Sql::kFinishRun);
    if (!s) return s.status();
    StatementUse use(*s);
    // finished_ms = 0 means unfinished, so a finished run never records 0.
    SEAM_SQLITE_CHECK(bindAll(*s, std::max<std::int64_t>(nowMs(), 1), run_id));
    SEAM_SQLITE_CHECK(sqlite3_step(*s));
    if (sqlite3_changes(db.get()) == 0) {
      return Status::invalid(dbName(path) + ": no run with id " + std::to_string(run_id));
    }
    return Status::ok();
  }

  Expected<std::vector<RunRecord>> runs() {
    auto s = statement(Sql::kRuns);
    if (!s) return s.status();
    StatementUse use(*s);
    std::vector<RunRecord> out;
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) out.push_back(readRun(*s));
    SEAM_SQLITE_CHECK(rc);
    return out;
  }

  Status insertCase(std::int64_t run_id, const CaseRecord& c,
                    const std::vector<VerdictRecord>& failing) {
    auto s = statement(Sql::kInsertCase);
    if (!s) return s.status();
    {
      StatementUse use(*s);
      const std::string outcome = outcomeName(c.outcome);  // a named string: bound SQLITE_STATIC
      SEAM_SQLITE_CHECK(bindAll(*s, run_id, c.index, c.model, c.pattern, c.config, c.flags, c.batch,
                                c.policy, c.group, outcome, c.refusal, c.reproduce,
                                static_cast<std::int64_t>(c.plan_hash)));
      const int rc = sqlite3_step(*s);
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY) {
        // A run skips the cases it has stored, so this case was stored by
        // another process since: two runs resumed the same run at once.
        return Status::refused(dbName(path) + ": case " + std::to_string(c.index) + " of run " +
                               std::to_string(run_id) +
                               " is already stored: another seam run is writing the same run (two --resume at "
                               "once?); this one stops");
      }
      SEAM_SQLITE_CHECK(rc);
    }
    if (failing.empty()) return Status::ok();
    auto v = statement(Sql::kInsertVerdict);
    if (!v) return v.status();
    for (std::size_t seq = 0; seq < failing.size(); ++seq) {
      const VerdictRecord& verdict = failing[seq];
      StatementUse use(*v);
      SEAM_SQLITE_CHECK(bindAll(*v, run_id, c.index, verdict.property,
                                static_cast<std::int64_t>(seq), verdict.holds ? 1 : 0,
                                verdict.violation_class, verdict.text));
      SEAM_SQLITE_CHECK(sqlite3_step(*v));
    }
    return Status::ok();
  }

  Expected<std::vector<std::int64_t>> caseIndices(std::int64_t run_id) {
    auto s = statement(Sql::kCaseIndices);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id));
    std::vector<std::int64_t> out;
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) out.push_back(sqlite3_column_int64(*s, 0));
    SEAM_SQLITE_CHECK(rc);
    return out;
  }

  Expected<std::vector<CaseRecord>> cases(std::int64_t run_id) {
    auto s = statement(Sql::kCases);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id));
    std::vector<CaseRecord> out;
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
      CaseRecord c;
      c.index = sqlite3_column_int64(*s, 0);
      c.model = columnText(*s, 1);
      c.pattern = columnText(*s, 2);
      c.config = columnText(*s, 3);
      c.flags = columnText(*s, 4);
      c.batch = columnText(*s, 5);
      c.policy = columnText(*s, 6);
      c.group = columnText(*s, 7);
      const std::string outcome = columnText(*s, 8);
      const auto parsed = parseOutcome(outcome);
      if (!parsed) {
        return Status::internal(dbName(path) + ": case " + std::to_string(c.index) + " of run " +
                                std::to_string(run_id) + " has an unknown outcome \"" +
                                outcome.substr(0, 32) + "\"");
      }
      c.outcome = *parsed;
      c.refusal = columnText(*s, 9);
      c.reproduce = columnText(*s, 10);
      c.plan_hash = static_cast<std::uint64_t>(sqlite3_column_int64(*s, 11));
      out.push_back(std::move(c));
    }
    SEAM_SQLITE_CHECK(rc);
    return out;
  }

  /// Columns 1-4 of a verdict query row (column 0 is the case index).
  static VerdictRecord verdictRow(sqlite3_stmt* s) {
    VerdictRecord v;
    v.property = sqlite3_column_int(s, 1);
    v.holds = sqlite3_column_int(s, 2) != 0;
    v.violation_class = columnText(s, 3);
    v.text = columnText(s, 4);
    return v;
  }

  Expected<std::vector<std::pair<std::int64_t, VerdictRecord>>> firstFailures(std::int64_t run_id) {
    auto s = statement(Sql::kFirstFailures);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id));
    std::vector<std::pair<std::int64_t, VerdictRecord>> out;
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
      const std::int64_t index = sqlite3_column_int64(*s, 0);
      if (!out.empty() && out.back().first == index) continue;  // rows come by (case, seq)
      out.emplace_back(index, verdictRow(*s));
    }
    SEAM_SQLITE_CHECK(rc);
    return out;
  }

  Expected<std::vector<std::pair<std::int64_t, VerdictRecord>>> verdicts(std::int64_t run_id) {
    auto s = statement(Sql::kVerdicts);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id));
    std::vector<std::pair<std::int64_t, VerdictRecord>> out;
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
      out.emplace_back(sqlite3_column_int64(*s, 0), verdictRow(*s));
    }
    SEAM_SQLITE_CHECK(rc);
    return out;
  }

  Status putMutant(std::int64_t run_id, const MutantRecord& m) {
    auto s = statement(Sql::kPutMutant);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(
        bindAll(*s, run_id, m.id, m.kind, m.description, m.status, m.argument, m.cases_run));
    SEAM_SQLITE_CHECK(sqlite3_step(*s));
    return Status::ok();
  }

  Expected<std::vector<MutantRecord>> mutants(std::int64_t run_id) {
    auto s = statement(Sql::kMutants);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id));
    std::vector<MutantRecord> out;
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
      MutantRecord m;
      m.id = columnText(*s, 0);
      m.kind = columnText(*s, 1);
      m.description = columnText(*s, 2);
      m.status = columnText(*s, 3);
      m.argument = columnText(*s, 4);
      m.cases_run = sqlite3_column_int64(*s, 5);
      out.push_back(std::move(m));
    }
    SEAM_SQLITE_CHECK(rc);
    return out;
  }

  Status addKill(std::int64_t run_id, const KillRecord& k) {
    auto s = statement(Sql::kAddKill);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id, k.mutant_id, k.case_index, k.property, k.violation_class,
                              k.text, k.reproduce));
    SEAM_SQLITE_CHECK(sqlite3_step(*s));
    return Status::ok();
  }

  Status clearMutants(std::int64_t run_id) {
    for (Sql sql : {Sql::kClearKills, Sql::kClearMutants}) {
      auto s = statement(sql);
      if (!s) return s.status();
      StatementUse use(*s);
      SEAM_SQLITE_CHECK(bindAll(*s, run_id));
      SEAM_SQLITE_CHECK(sqlite3_step(*s));
    }
    return Status::ok();
  }

  Expected<std::vector<KillRecord>> kills(std::int64_t run_id) {
    auto s = statement(Sql::kKills);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id));
    std::vector<KillRecord> out;
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
      KillRecord k;
      k.mutant_id = columnText(*s, 0);
      k.case_index = sqlite3_column_int64(*s, 1);
      k.property = sqlite3_column_int(*s, 2);
      k.violation_class = columnText(*s, 3);
      k.text = columnText(*s, 4);
      k.reproduce = columnText(*s, 5);
      out.push_back(std::move(k));
    }
    SEAM_SQLITE_CHECK(rc);
    return out;
  }

  Status addEquivalence(std::int64_t run_id, const EquivalenceRecord& e) {
    auto s = statement(Sql::kAddEquivalence);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id, e.case_index, e.plan_a, static_cast<std::int64_t>(e.plan_a_hash), e.plan_b,
                              static_cast<std::int64_t>(e.plan_b_hash), static_cast<int>(e.predicted_identical),
                              static_cast<int>(e.observed_identical), e.max_difference));
    SEAM_SQLITE_CHECK(sqlite3_step(*s));
    return Status::ok();
  }

  Expected<std::vector<EquivalenceRecord>> equivalences(std::int64_t run_id) {
    auto s = statement(Sql::kEquivalences);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id));
    std::vector<EquivalenceRecord> out;
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
      EquivalenceRecord e;
      e.case_index = sqlite3_column_int64(*s, 0);
      e.plan_a = columnText(*s, 1);
      e.plan_a_hash = static_cast<std::uint64_t>(sqlite3_column_int64(*s, 2));
      e.plan_b = columnText(*s, 3);
      e.plan_b_hash = static_cast<std::uint64_t>(sqlite3_column_int64(*s, 4));
      e.predicted_identical = sqlite3_column_int(*s, 5) != 0;
      e.observed_identical = sqlite3_column_int(*s, 6) != 0;
      e.max_difference = sqlite3_column_double(*s, 7);
      out.push_back(std::move(e));
    }
    SEAM_SQLITE_CHECK(rc);
    return out;
  }

  Status addTiming(std::int64_t run_id, const TimingRecord& t) {
    auto s = statement(Sql::kAddTiming);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id, t.case_index, t.rank, t.op_index, t.op_kind, t.group, t.bytes,
                              t.median_us, t.p10_us, t.p90_us, t.algbw_gbps, t.busbw_gbps));
    SEAM_SQLITE_CHECK(sqlite3_step(*s));
    return Status::ok();
  }

  Expected<std::vector<TimingRecord>> timings(std::int64_t run_id) {
    auto s = statement(Sql::kTimings);
    if (!s) return s.status();
    StatementUse use(*s);
    SEAM_SQLITE_CHECK(bindAll(*s, run_id));
    std::vector<TimingRecord> out;
    int rc;
    while ((rc = sqlite3_step(*s)) == SQLITE_ROW) {
      TimingRecord t;
      t.case_index = sqlite3_column_int64(*s, 0);
      t.rank = sqlite3_column_int(*s, 1);
      t.op_index = sqlite3_column_int(*s, 2);
      t.op_kind = columnText(*s, 3);
      t.group = columnText(*s, 4);
      t.bytes = sqlite3_column_int64(*s, 5);
      t.median_us = sqlite3_column_double(*s, 6);
      t.p10_us = sqlite3_column_double(*s, 7);
      t.p90_us = sqlite3_column_double(*s, 8);
      t.algbw_gbps = sqlite3_column_double(*s, 9);
      t.busbw_gbps = sqlite3_column_double(*s, 10);
      out.push_back(std::move(t));
    }
    SEAM_SQLITE_CHECK(rc);
    return out;
  }
};

Expected<Store> Store::open(const std::string& path) {
  if (path.empty()) return Status::invalid("--db \"\": the path is empty");
  auto impl = std::make_unique<Impl>();
  impl->path = path;

  // Only a path that does not exist or an empty file becomes a new store;
  // anything else is inspected read-only before a connection that can write
  // is opened, so a file that is not a seam store is never written to.
  struct stat st {};
  bool fresh = false;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return Status::invalid(dbName(path) + ": cannot read it (" + std::strerror(errno) + ")");
    }
    fresh = true;
  } else if (S_ISDIR(st.st_mode)) {
    return Status::invalid(dbName(path) + " is a directory, not a seam store");
  } else if (!S_ISREG(st.st_mode)) {
    return Status::invalid(dbName(path) + " is not a regular file, not a seam store");
  } else {
    fresh = st.st_size == 0;
  }
  // A run killed while it created the store leaves the schema's pages and a
  // hot journal that says the file had none: playing it back (the first
  // write does) leaves an empty file, which becomes a store like any other.
  // Another application's unfinished creation is not taken over: without
  // seam's application id the file is inspected, and refused, as it is.
  const Journal journal = fresh ? Journal::kNone : readJournal(path);
  if (journal == Journal::kCreation && hasSeamApplicationId(path)) fresh = true;

  if (fresh) {
    auto db = openConnection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, path, "create");
    if (!db) return db.status();
    impl->db = std::move(*db);
    // The schema is committed in rollback-journal mode, and only then is the
    // file switched to WAL: the main file alone identifies a seam store.
    auto created = impl->createSchema();
    if (!created) return created.status();
    if (!*created) {
      // Another process created the file's contents first: treat it as an
      // existing file.
      impl->db.reset();
      fresh = false;
      if (::stat(path.c_str(), &st) != 0) {
        return Status::invalid(dbName(path) + ": cannot read it (" + std::strerror(errno) + ")");
      }
    }
  }
  if (!fresh) {
    if (Status s = inspectExisting(path, st.st_size, readJournal(path)); !s) return s;
    auto db = openConnection(path, SQLITE_OPEN_READWRITE, path, "open");
    if (!db) return db.status();
    impl->db = std::move(*db);
    // SQLite quietly falls back to reading a file it may not write.
    if (sqlite3_db_readonly(impl->db.get(), "main") == 1) {
      return Status::invalid(dbName(path) + ": cannot write it (the file is read-only)");
    }
    // A connection that may write reads the whole schema, where a read-only
    // one passes over some damage (an unknown column in a CHECK constraint):
    // a schema it cannot read is the file's fault, and nothing is written yet.
    const int rc = sqlite3_exec(impl->db.get(), "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
    if (!detail::sqliteSucceeded(rc) && unreadableHeader(rc)) return refuseUnreadable(impl->db.get(), path, rc);
  }
  if (Status s = impl->configure(); !s) return s;
  return Store(std::move(impl));
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

const std::string& Store::path() const {
  assert(impl_ && "path() of a moved-from Store");
  return impl_->path;
}

Status Store::beginRun(RunRecord& run) { return impl_->beginRun(run); }

Expected<std::optional<RunRecord>> Store::findUnfinished(const std::string& command,
                                                         const std::string& args) {
  return impl_->findUnfinished(command, args);
}

Status Store::finishRun(std::int64_t run_id) { return impl_->finishRun(run_id); }

Status Store::beginBatch() { return impl_->exec("BEGIN IMMEDIATE"); }
Status Store::commitBatch() { return impl_->exec("COMMIT"); }
Status Store::rollbackBatch() { return impl_->exec("ROLLBACK"); }

Status Store::addCase(std::int64_t run_id, const CaseRecord& c,
                      const std::vector<VerdictRecord>& failing) {
  // A case and its verdicts land together, in a batch or on their own.
  return impl_->atomically([&] { return impl_->insertCase(run_id, c, failing); });
}

Expected<std::vector<std::int64_t>> Store::caseIndices(std::int64_t run_id) {
  return impl_->caseIndices(run_id);
}

Expected<std::vector<CaseRecord>> Store::cases(std::int64_t run_id) { return impl_->cases(run_id); }

Expected<std::vector<std::pair<std::int64_t, VerdictRecord>>> Store::firstFailures(
    std::int64_t run_id) {
  return impl_->firstFailures(run_id);
}

Expected<std::vector<std::pair<std::int64_t, VerdictRecord>>> Store::verdicts(std::int64_t run_id) {
  return impl_->verdicts(run_id);
}

Status Store::putMutant(std::int64_t run_id, const MutantRecord& m) {
  return impl_->putMutant(run_id, m);
}

Status Store::addKill(std::int64_t run_id, const KillRecord& k) {
  return impl_->addKill(run_id, k);
}

Expected<std::vector<MutantRecord>> Store::mutants(std::int64_t run_id) {
  return impl_->mutants(run_id);
}

Expected<std::vector<KillRecord>> Store::kills(std::int64_t run_id) { return impl_->kills(run_id); }

Status Store::clearMutants(std::int64_t run_id) { return impl_->clearMutants(run_id); }

Expected<std::vector<RunRecord>> Store::runs() { return impl_->runs(); }

Status Store::addEquivalence(std::int64_t run_id, const EquivalenceRecord& e) { return impl_->addEquivalence(run_id, e); }

Expected<std::vector<EquivalenceRecord>> Store::equivalences(std::int64_t run_id) {
  return impl_->equivalences(run_id);
}

Status Store::addTiming(std::int64_t run_id, const TimingRecord& t) { return impl_->addTiming(run_id, t); }

Expected<std::vector<TimingRecord>> Store::timings(std::int64_t run_id) { return impl_->timings(run_id); }

}  // namespace seam::reports
