#include "seam/reports/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace seam::reports {
namespace {

namespace fs = std::filesystem;

// Strings that break naive quoting: quotes of both kinds, SQL comment and
// statement separators, newlines, tabs and non-ASCII UTF-8.
const std::string kAwkward =
    "it's \"quoted\"; -- not SQL\nline two\ttab \xC3\xA9\xE2\x86\x92\xF0\x9F\x98\x80";

std::vector<std::string>& tempPaths() {
  static std::vector<std::string> paths;
  return paths;
}

void removeWithSideFiles(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal", ".tmp"}) {
    std::error_code ignored;
    fs::remove_all(path + suffix, ignored);
  }
}

/// Removes the files the tests made once they have run (stores of 20k cases
/// are megabytes).
class RemoveTempFiles : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const std::string& path : tempPaths()) removeWithSideFiles(path);
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveTempFiles =
    ::testing::AddGlobalTestEnvironment(new RemoveTempFiles);

/// A path in the test's temp directory, unique to this process, with no
/// leftovers (main file or side files) from an earlier run.
std::string tempPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "seam_store_" + std::to_string(::getpid()) + "_" + name;
  removeWithSideFiles(path);
  tempPaths().push_back(path);
  return path;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

/// FNV-1a over the file's bytes: "unchanged" means the same digest and size.
std::uint64_t fileDigest(const std::string& path) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : readFile(path)) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

bool exists(const std::string& path) { return fs::exists(path); }

bool hasSideFiles(const std::string& path) {
  return exists(path + "-wal") || exists(path + "-shm") || exists(path + "-journal");
}

/// Runs SQL on a file with SQLite directly (to build other applications'
/// databases and to look at what the store wrote). Returns the first column
/// of the last row, or "error: ..." on failure.
std::string rawSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string result;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    result = "error: open";
  } else {
    char* error = nullptr;
    auto callback = [](void* out, int columns, char** values, char**) {
      *static_cast<std::string*>(out) = columns > 0 && values[0] ? values[0] : "NULL";
      return 0;
    };
    if (sqlite3_exec(db, sql.c_str(), callback, &result, &error) != SQLITE_OK) {
      result = std::string("error: ") + (error ? error : "?");
      sqlite3_free(error);
    }
  }
  sqlite3_close(db);
  return result;
}

RunRecord sampleRun(const std::string& command = "sweep", const std::string& args = "--world 8") {
  RunRecord run;
  run.command = command;
  run.args = args;
  run.version = "0.1.0";
  run.host = "host-" + kAwkward;
  run.gpu = "NVIDIA H200";
  run.cuda = "12.4";
  run.nccl = "2.21.5";
  run.started_ms = 1700000000123;
  return run;
}

CaseRecord sampleCase(std::int64_t index, CaseOutcome outcome = CaseOutcome::kHolds) {
  CaseRecord c;
  c.index = index;
  c.model = "nemotron-h-8b";
  c.pattern = "M*M-M*M-";
  c.config = "world=8 tp=2 pp=1 dp=4";
  c.flags = "dp_attention";
  c.batch = "tokens=4,0,3,1";
  c.policy = "declared";
  c.group = "row " + std::to_string(index % 7);
  c.outcome = outcome;
  c.refusal = outcome == CaseOutcome::kRefused ? "attention CP is not supported" : "";
  c.reproduce = "seam check --model nemotron-h-8b --tp 2 --dp 4 --tokens 4,0,3,1";
  c.plan_hash = 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(index);
  return c;
}

Store openOrDie(const std::string& path) {
  auto store = Store::open(path);
  EXPECT_TRUE(store.hasValue()) << (store ? "" : store.status().message());
  if (!store) std::abort();
  return std::move(*store);
}

/// Opens `path` expecting a refusal: the message is one line naming the file,
/// and the file is left byte-for-byte as it was, with no side files created.
std::string expectRefusedAndUnchanged(const std::string& path) {
  const bool existed = exists(path);
  const std::uint64_t before = existed ? fileDigest(path) : 0;
  const bool side_files_before = hasSideFiles(path);
  auto store = Store::open(path);
  EXPECT_FALSE(store.hasValue());
  if (store) return "";
  const std::string message = store.status().message();
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("--db \"" + path + "\""), std::string::npos) << message;
  EXPECT_EQ(exists(path), existed);
  if (existed && fs::is_regular_file(path)) {
    EXPECT_EQ(fileDigest(path), before) << message;
  }
  if (!side_files_before) {
    EXPECT_FALSE(hasSideFiles(path)) << message;
  }
  return message;
}

// ---------------------------------------------------------------- opening

TEST(StoreOpen, CreatesANewFileWithTheSeamSchemaMarksAndWalMode) {
  const std::string path = tempPath("new.db");
  { Store store = openOrDie(path); }
  EXPECT_EQ(rawSql(path, "PRAGMA application_id"), std::to_string(0x5345414D));
  EXPECT_EQ(rawSql(path, "PRAGMA user_version"), "1");
  EXPECT_EQ(rawSql(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(rawSql(path, "SELECT value FROM seam_meta WHERE key = 'application'"), "seam");
  EXPECT_EQ(rawSql(path, "SELECT value FROM seam_meta WHERE key = 'schema_version'"),
            std::to_string(kStoreSchemaVersion));
  for (const char* table :
       {"runs", "cases", "verdicts", "mutants", "kills", "equivalence", "timings"}) {
    EXPECT_EQ(rawSql(path, std::string("SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                       "AND name = '") +
                               table + "'"),
              "1")
        << table;
  }
  // The tables later work writes already have the columns DESIGN §8 lists.
  EXPECT_EQ(rawSql(path,
                   "SELECT count(*) FROM pragma_table_info('equivalence') WHERE name IN "
                   "('case_idx', 'plan_a', 'plan_b', 'predicted_identical', "
                   "'observed_identical', 'max_difference')"),
            "6");
  EXPECT_EQ(rawSql(path,
                   "SELECT count(*) FROM pragma_table_info('timings') WHERE name IN "
                   "('case_idx', 'op_index', 'op_kind', 'group_key', 'bytes', 'median_us', "
                   "'p10_us', 'p90_us', 'algbw_gbps', 'busbw_gbps')"),
            "10");
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
}

TEST(StoreOpen, TurnsAnEmptyFileIntoAStore) {
  const std::string path = tempPath("empty.db");
  writeFile(path, "");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  EXPECT_EQ(store.runs()->size(), 1u);
}

TEST(StoreOpen, ReopensAnExistingStoreWithItsRows) {
  const std::string path = tempPath("reopen.db");
  RunRecord run = sampleRun();
  {
    Store store = openOrDie(path);
    ASSERT_TRUE(store.beginRun(run));
    ASSERT_TRUE(store.addCase(run.id, sampleCase(0), {}));
  }
  EXPECT_FALSE(hasSideFiles(path));  // the last connection checkpointed and cleaned up
  Store store = openOrDie(path);
  EXPECT_EQ(store.path(), path);
  ASSERT_EQ(store.runs()->size(), 1u);
  EXPECT_EQ(*store.caseIndices(run.id), std::vector<std::int64_t>{0});
}

TEST(StoreOpen, RefusesATextFileAndLeavesItUnchanged) {
  const std::string path = tempPath("notes.txt");
  writeFile(path, "these are my notes, not a database\nsecond line\n");
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_EQ(message, "--db \"" + path +
                         "\": not a seam store (not an SQLite database); refusing to write to it");
  // Long enough for a header, but not SQLite either.
  writeFile(path, std::string(8192, 'x'));
  expectRefusedAndUnchanged(path);
}

TEST(StoreOpen, RefusesATruncatedStoreAndLeavesItUnchanged) {
  const std::string full = tempPath("full.db");
  {
    Store store = openOrDie(full);
    RunRecord run = sampleRun();
    ASSERT_TRUE(store.beginRun(run));
    ASSERT_TRUE(store.beginBatch());
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(store.addCase(run.id, sampleCase(i), {}));
    ASSERT_TRUE(store.commitBatch());
  }
  const std::string bytes = readFile(full);
  ASSERT_GT(bytes.size(), 16u * 4096u);
  const std::string path = tempPath("truncated.db");
  // Inside the header, mid-page, and at a page boundary.
  for (const std::size_t size :
       {std::size_t{50}, std::size_t{4096 * 3 + 1000}, std::size_t{4096 * 4}}) {
    SCOPED_TRACE(size);
    writeFile(path, bytes.substr(0, size));
    const std::string message = expectRefusedAndUnchanged(path);
    EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  }
}

TEST(StoreOpen, RefusesAnotherApplicationsDatabaseAndLeavesItUnchanged) {
  // A rollback-journal database and a WAL one (without side files).
  for (const char* mode : {"DELETE", "WAL"}) {
    SCOPED_TRACE(mode);
    const std::string path = tempPath(std::string("other_") + mode + ".db");
    ASSERT_EQ(rawSql(path, std::string("PRAGMA journal_mode = ") + mode +
                               "; CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('x');"
                               "SELECT 'done'"),
              "done");
    ASSERT_FALSE(hasSideFiles(path));
    const std::string message = expectRefusedAndUnchanged(path);
    EXPECT_EQ(message, "--db \"" + path +
                           "\": not a seam store (an SQLite database of another application); "
                           "refusing to write to it");
  }
  // The seam application id without seam_meta, and seam_meta without the id.
  const std::string id_only = tempPath("id_only.db");
  ASSERT_EQ(rawSql(id_only, "PRAGMA application_id = 1397047629; CREATE TABLE t(x); SELECT 'done'"),
            "done");
  EXPECT_NE(expectRefusedAndUnchanged(id_only).find("another application"), std::string::npos);
  const std::string meta_only = tempPath("meta_only.db");
  ASSERT_EQ(rawSql(meta_only,
                   "CREATE TABLE seam_meta(key TEXT PRIMARY KEY, value TEXT);"
                   "INSERT INTO seam_meta VALUES ('application', 'seam'), ('schema_version', '1');"
                   "SELECT 'done'"),
            "done");
  EXPECT_NE(expectRefusedAndUnchanged(meta_only).find("another application"), std::string::npos);
}

TEST(StoreOpen, RefusesAWalDatabaseWithUncheckpointedCommitsWithoutCheckpointingThem) {
  const std::string path = tempPath("live_wal.db");
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other,
                         "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;"
                         "CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('in the wal');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  ASSERT_TRUE(exists(path + "-wal"));
  const std::uint64_t wal_before = fileDigest(path + "-wal");
  expectRefusedAndUnchanged(path);
  EXPECT_EQ(fileDigest(path + "-wal"), wal_before);
  sqlite3_close(other);
}

TEST(StoreOpen, RefusesACrashedApplicationsWalDatabaseWithoutCheckpointingIt) {
  const std::string path = tempPath("crashed_wal.db");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Another application commits into its WAL and dies without a checkpoint.
    sqlite3* other = nullptr;
    if (sqlite3_open(path.c_str(), &other) != SQLITE_OK) ::_exit(1);
    const int rc = sqlite3_exec(other,
                                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;"
                                "CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('x');",
                                nullptr, nullptr, nullptr);
    ::_exit(rc == SQLITE_OK ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(exists(path + "-wal") && exists(path + "-shm"));
  const std::uint64_t wal_before = fileDigest(path + "-wal");
  EXPECT_NE(expectRefusedAndUnchanged(path).find("another application"), std::string::npos);
  EXPECT_EQ(fileDigest(path + "-wal"), wal_before);
}

TEST(StoreOpen, RefusesASeamStoreOfAnotherSchemaVersion) {
  const std::string path = tempPath("v2.db");
  { Store store = openOrDie(path); }
  ASSERT_EQ(rawSql(path,
                   "UPDATE seam_meta SET value = '2' WHERE key = 'schema_version'; "
                   "SELECT value FROM seam_meta WHERE key = 'schema_version'"),
            "2");
  ASSERT_FALSE(hasSideFiles(path));
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_EQ(message, "--db \"" + path +
                         "\": a seam store of schema version 2, but this seam reads and writes "
                         "version 1; refusing to write to it");
}

TEST(StoreOpen, RefusesAFileInAFormatSqliteCannotReadAsBadInputNotAnInternalError) {
  // Found by tests/fuzz/store_fuzz.cc: a seam store whose header names a
  // schema format SQLite does not know ended as an internal error (exit 3).
  const std::string path = tempPath("format.db");
  { Store store = openOrDie(path); }
  ASSERT_FALSE(hasSideFiles(path));
  std::string bytes = readFile(path);
  bytes[44] = bytes[45] = bytes[46] = 0;  // schema format number, big-endian
  bytes[47] = 99;
  writeFile(path, bytes);
  auto store = Store::open(path);
  ASSERT_FALSE(store.hasValue());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidInput) << store.status().message();
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_EQ(message, "--db \"" + path +
                         "\": not a seam store (an SQLite database SQLite cannot read: unsupported file "
                         "format); refusing to write to it");
}

TEST(StoreOpen, RefusesASeamStoreWhoseSchemaSqliteCannotReadWhenItCouldWriteAsBadInput) {
  // Found by tests/fuzz/store_fuzz.cc: a column name garbled in the schema
  // text passes a read-only connection (it skips CHECK constraints) and used
  // to fail as an internal error on the first statement that may write.
  const std::string path = tempPath("garbled_schema.db");
  { Store store = openOrDie(path); }
  ASSERT_EQ(rawSql(path,
                   "PRAGMA writable_schema = ON; "
                   "UPDATE sqlite_master SET sql = replace(sql, '  outcome TEXT', '  garbled TEXT') "
                   "WHERE name = 'cases'"),
            "");
  ASSERT_FALSE(hasSideFiles(path));
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_EQ(message, "--db \"" + path +
                         "\": not a seam store (a damaged or truncated SQLite database); refusing to write to it");
  EXPECT_EQ(Store::open(path).status().code(), StatusCode::kInvalidInput);
}

TEST(StoreOpen, RefusesAFileWhoseDamagedHeaderMakesSqliteRunOutOfMemoryAsBadInput) {
  // Found by tests/fuzz/store_fuzz.cc (corpus/store/found_header_nomem): a
  // damaged seam store whose first read fails with SQLITE_NOMEM (its header
  // or schema claims sizes SQLite cannot allocate) was an internal error
  // (exit 3), as if this machine had run out of memory.
  const std::string path = tempPath("header_nomem.db");
  writeFile(path, readFile(std::string(SEAM_SOURCE_DIR) + "/tests/fuzz/corpus/store/found_header_nomem"));
  auto store = Store::open(path);
  ASSERT_FALSE(store.hasValue());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidInput) << store.status().message();
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_NE(message.find("not a seam store"), std::string::npos) << message;
}

TEST(StoreOpen, RefusesAFileWhoseFormatVersionsSqliteWouldNotWriteWithoutCreatingSideFiles) {
  // Found by tests/fuzz/store_fuzz.cc: a header with read version 2 (WAL) and
  // write version 44 was taken for a rollback-journal file, and the read-only
  // look at it created its -wal and -shm.
  const std::string foreign = tempPath("versions_foreign.db");
  ASSERT_EQ(rawSql(foreign, "CREATE TABLE notes(text TEXT)"), "");
  const std::string seam = tempPath("versions_seam.db");
  { Store store = openOrDie(seam); }
  for (const std::string& path : {foreign, seam}) {
    for (const auto& [write_version, read_version] : {std::pair{44, 2}, std::pair{2, 44}, std::pair{0, 1}}) {
      std::string bytes = readFile(path);
      bytes[18] = static_cast<char>(write_version);
      bytes[19] = static_cast<char>(read_version);
      writeFile(path, bytes);
      ASSERT_FALSE(hasSideFiles(path));
      const std::string message = expectRefusedAndUnchanged(path);
      EXPECT_NE(message.find("not a seam store (a damaged SQLite database (file format versions " +
                             std::to_string(write_version) + "/" + std::to_string(read_version) + "))"),
                std::string::npos)
          << message;
    }
  }
}

TEST(StoreOpen, RefusesADirectoryAndPathsItCannotReachWithOneLine) {
  const std::string dir = tempPath("dir.db");
  fs::create_directory(dir);
  EXPECT_EQ(expectRefusedAndUnchanged(dir),
            "--db \"" + dir + "\" is a directory, not a seam store");

  const std::string missing_dir = tempPath("no_such_dir") + "/store.db";
  EXPECT_NE(expectRefusedAndUnchanged(missing_dir).find("cannot create it"), std::string::npos);

  const std::string file = tempPath("plain_file");
  writeFile(file, "x");
  EXPECT_NE(expectRefusedAndUnchanged(file + "/store.db").find("cannot read it (Not a directory)"),
            std::string::npos);

  EXPECT_EQ(Store::open("").status().message(), "--db \"\": the path is empty");

  if (::geteuid() != 0) {  // root reads whatever the mode bits say
    const std::string locked = tempPath("locked.db");
    { Store store = openOrDie(locked); }
    ASSERT_EQ(::chmod(locked.c_str(), 0), 0);
    EXPECT_NE(expectRefusedAndUnchanged(locked).find("cannot read it"), std::string::npos);
    ::chmod(locked.c_str(), 0600);
  }
}

// ------------------------------------------------------------ round trips

TEST(Store, ReadsBackEveryFieldOfARunExactly) {
  const std::string path = tempPath("runs.db");
  Store store = openOrDie(path);
  RunRecord first = sampleRun("prop", "--seed 7 " + kAwkward);
  RunRecord second = sampleRun("mutate", "");
  second.gpu = second.cuda = second.nccl = "";
  second.finished_ms = 1700000009999;
  ASSERT_TRUE(store.beginRun(first));
  ASSERT_TRUE(store.beginRun(second));
  EXPECT_GT(first.id, 0);
  EXPECT_GT(second.id, first.id);
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue());
  ASSERT_EQ(runs->size(), 2u);
  for (const auto& [got, want] : {std::pair{(*runs)[0], first}, std::pair{(*runs)[1], second}}) {
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.command, want.command);
    EXPECT_EQ(got.args, want.args);
    EXPECT_EQ(got.version, want.version);
    EXPECT_EQ(got.host, want.host);
    EXPECT_EQ(got.gpu, want.gpu);
    EXPECT_EQ(got.cuda, want.cuda);
    EXPECT_EQ(got.nccl, want.nccl);
    EXPECT_EQ(got.started_ms, want.started_ms);
    EXPECT_EQ(got.finished_ms, want.finished_ms);
  }
}

TEST(Store, ReadsBackEveryFieldOfACaseExactlyInIndexOrder) {
  const std::string path = tempPath("cases.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  std::vector<CaseRecord> written;
  CaseRecord awkward = sampleCase(5, CaseOutcome::kViolated);
  awkward.model = "pattern";
  awkward.pattern = kAwkward;
  awkward.config = kAwkward + "config";
  awkward.flags = "";
  awkward.batch = std::string("embedded\0nul", 12);
  awkward.policy = "declared 'quoted'";
  awkward.group = "\xE6\xA8\xA1\xE5\x9E\x8B";  // non-ASCII
  awkward.reproduce = "seam check --pattern '" + kAwkward + "'";
  awkward.plan_hash = 0xFFFFFFFFFFFFFFFFull;  // above INT64_MAX: stored as its bits
  CaseRecord refused = sampleCase(2, CaseOutcome::kRefused);
  refused.plan_hash = 0;
  // Written out of order; read back by index.
  for (const CaseRecord& c : {awkward, refused, sampleCase(0), sampleCase(9)}) {
    ASSERT_TRUE(store.addCase(run.id, c, {}));
    written.push_back(c);
  }
  auto cases = store.cases(run.id);
  ASSERT_TRUE(cases.hasValue()) << cases.status().message();
  ASSERT_EQ(cases->size(), 4u);
  std::sort(written.begin(), written.end(),
            [](const CaseRecord& a, const CaseRecord& b) { return a.index < b.index; });
  for (std::size_t i = 0; i < written.size(); ++i) {
    const CaseRecord& got = (*cases)[i];
    const CaseRecord& want = written[i];
    SCOPED_TRACE(want.index);
    EXPECT_EQ(got.index, want.index);
    EXPECT_EQ(got.model, want.model);
    EXPECT_EQ(got.pattern, want.pattern);
    EXPECT_EQ(got.config, want.config);
    EXPECT_EQ(got.flags, want.flags);
    EXPECT_EQ(got.batch, want.batch);
    EXPECT_EQ(got.policy, want.policy);
    EXPECT_EQ(got.group, want.group);
    EXPECT_EQ(got.outcome, want.outcome);
    EXPECT_EQ(got.refusal, want.refusal);
    EXPECT_EQ(got.reproduce, want.reproduce);
    EXPECT_EQ(got.plan_hash, want.plan_hash);
  }
  EXPECT_EQ(*store.caseIndices(run.id), (std::vector<std::int64_t>{0, 2, 5, 9}));
  // Another run's cases are its own.
  RunRecord other = sampleRun();
  ASSERT_TRUE(store.beginRun(other));
  EXPECT_TRUE(store.cases(other.id)->empty());
  EXPECT_TRUE(store.caseIndices(other.id)->empty());
}

TEST(Store, GivesTheFirstFailingVerdictOfEachViolatedCaseByIndex) {
  const std::string path = tempPath("verdicts.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  const VerdictRecord counted{.property = 3,
                              .holds = false,
                              .violation_class = "counted-k-times",
                              .text = "row 4 of " + kAwkward + " is summed twice"};
  const VerdictRecord missing{.property = 1,
                              .holds = false,
                              .violation_class = "never-reduced",
                              .text = "sum owed by stage 2 never completes"};
  const VerdictRecord held{.property = 2, .holds = true, .violation_class = "", .text = ""};
  ASSERT_TRUE(
      store.addCase(run.id, sampleCase(7, CaseOutcome::kViolated), {held, counted, missing}));
  ASSERT_TRUE(store.addCase(run.id, sampleCase(1, CaseOutcome::kViolated), {missing}));
  ASSERT_TRUE(store.addCase(run.id, sampleCase(3), {}));
  auto failures = store.firstFailures(run.id);
  ASSERT_TRUE(failures.hasValue()) << failures.status().message();
  ASSERT_EQ(failures->size(), 2u);
  EXPECT_EQ((*failures)[0].first, 1);
  EXPECT_EQ((*failures)[0].second.property, 1);
  EXPECT_EQ((*failures)[1].first, 7);
  // The first failing one in the order given, not the lowest property.
  const VerdictRecord& got = (*failures)[1].second;
  EXPECT_EQ(got.property, counted.property);
  EXPECT_FALSE(got.holds);
  EXPECT_EQ(got.violation_class, counted.violation_class);
  EXPECT_EQ(got.text, counted.text);
}

TEST(Store, PutMutantReplacesTheRowInPlaceAndAddKillKeepsTheFirstKill) {
  const std::string path = tempPath("mutants.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun("mutate", "--budget 100");
  ASSERT_TRUE(store.beginRun(run));
  MutantRecord drop{.id = "plan.drop-completing-collective",
                    .kind = "plan",
                    .description = "drops the all-reduce that completes a sum",
                    .status = "survived",
                    .argument = "",
                    .cases_run = 0};
  MutantRecord swap{.id = "decision.swap-" + kAwkward,
                    .kind = "decision",
                    .description = "swaps \"scatter\" and 'gather'",
                    .status = "equivalent",
                    .argument = "both orders reduce the same rows\nproof: " + kAwkward,
                    .cases_run = 42};
  ASSERT_TRUE(store.putMutant(run.id, drop));
  ASSERT_TRUE(store.putMutant(run.id, swap));
  drop.status = "killed";
  drop.cases_run = 3;
  ASSERT_TRUE(store.putMutant(run.id, drop));

  auto mutants = store.mutants(run.id);
  ASSERT_TRUE(mutants.hasValue()) << mutants.status().message();
  ASSERT_EQ(mutants->size(), 2u);
  for (const auto& [got, want] : {std::pair{(*mutants)[0], drop}, std::pair{(*mutants)[1], swap}}) {
    EXPECT_EQ(got.id, want.id);
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.description, want.description);
    EXPECT_EQ(got.status, want.status);
    EXPECT_EQ(got.argument, want.argument);
    EXPECT_EQ(got.cases_run, want.cases_run);
  }

  const KillRecord first{.mutant_id = drop.id,
                         .case_index = 2,
                         .property = 1,
                         .violation_class = "never-reduced",
                         .text = "stage 2: " + kAwkward,
                         .reproduce = "seam check --tp 2 --mutant '" + drop.id + "'"};
  KillRecord later = first;
  later.case_index = 3;
  ASSERT_TRUE(store.addKill(run.id, first));
  ASSERT_TRUE(store.addKill(run.id, later));
  auto kills = store.kills(run.id);
  ASSERT_TRUE(kills.hasValue()) << kills.status().message();
  ASSERT_EQ(kills->size(), 1u);
  const KillRecord& got = (*kills)[0];
  EXPECT_EQ(got.mutant_id, first.mutant_id);
  EXPECT_EQ(got.case_index, first.case_index);
  EXPECT_EQ(got.property, first.property);
  EXPECT_EQ(got.violation_class, first.violation_class);
  EXPECT_EQ(got.text, first.text);
  EXPECT_EQ(got.reproduce, first.reproduce);
}

TEST(Store, ClearMutantsDeletesTheMutantAndKillRowsOfThatRunOnly) {
  const std::string path = tempPath("clear_mutants.db");
  Store store = openOrDie(path);
  RunRecord a = sampleRun("mutate", "--world 2");
  RunRecord b = sampleRun("mutate", "--world 4");
  ASSERT_TRUE(store.beginRun(a));
  ASSERT_TRUE(store.beginRun(b));
  const MutantRecord m{.id = "plan.drop", .kind = "plan", .description = "d", .status = "killed", .argument = "",
                       .cases_run = 3};
  const KillRecord k{.mutant_id = "plan.drop", .case_index = 2, .property = 1, .violation_class = "c", .text = "t",
                     .reproduce = "r"};
  for (const RunRecord& run : {a, b}) {
    ASSERT_TRUE(store.putMutant(run.id, m));
    ASSERT_TRUE(store.addKill(run.id, k));
  }
  ASSERT_TRUE(store.clearMutants(a.id));
  EXPECT_TRUE(store.mutants(a.id)->empty());
  EXPECT_TRUE(store.kills(a.id)->empty());
  EXPECT_EQ(store.mutants(b.id)->size(), 1u);
  EXPECT_EQ(store.kills(b.id)->size(), 1u);
  // Put again, a row reads back after those put before it.
  const MutantRecord later{.id = "plan.swap", .kind = "plan", .description = "s", .status = "survived",
                           .argument = "", .cases_run = 9};
  ASSERT_TRUE(store.putMutant(a.id, later));
  ASSERT_TRUE(store.putMutant(a.id, m));
  ASSERT_EQ(store.mutants(a.id)->size(), 2u);
  EXPECT_EQ((*store.mutants(a.id))[0].id, "plan.swap");
  EXPECT_EQ((*store.mutants(a.id))[1].id, "plan.drop");
}

TEST(Store, FindsTheLatestUnfinishedRunWithTheSameCommandAndArgs) {
  const std::string path = tempPath("resume.db");
  Store store = openOrDie(path);
  RunRecord older = sampleRun("sweep", "--world 8");
  RunRecord newer = sampleRun("sweep", "--world 8");
  RunRecord other_args = sampleRun("sweep", "--world 16");
  RunRecord other_command = sampleRun("prop", "--world 8");
  for (RunRecord* run : {&older, &newer, &other_args, &other_command}) {
    ASSERT_TRUE(store.beginRun(*run));
  }
  auto found = store.findUnfinished("sweep", "--world 8");
  ASSERT_TRUE(found.hasValue());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->id, newer.id);

  ASSERT_TRUE(store.finishRun(newer.id));
  found = store.findUnfinished("sweep", "--world 8");
  ASSERT_TRUE(found.hasValue() && found->has_value());
  EXPECT_EQ((*found)->id, older.id);

  ASSERT_TRUE(store.finishRun(older.id));
  found = store.findUnfinished("sweep", "--world 8");
  ASSERT_TRUE(found.hasValue());
  EXPECT_FALSE(found->has_value());
  EXPECT_FALSE(store.findUnfinished("sweep", "--world 4")->has_value());
}

TEST(Store, FinishRunRecordsTheTimeAndRefusesAnUnknownRun) {
  const std::string path = tempPath("finish.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  run.started_ms = 0;  // filled with the current time
  ASSERT_TRUE(store.beginRun(run));
  EXPECT_GT(run.started_ms, 1600000000000);
  ASSERT_TRUE(store.finishRun(run.id));
  const RunRecord stored = store.runs()->at(0);
  EXPECT_GE(stored.finished_ms, run.started_ms);
  const Status unknown = store.finishRun(run.id + 100);
  EXPECT_FALSE(unknown);
  EXPECT_EQ(unknown.message(),
            "--db \"" + path + "\": no run with id " + std::to_string(run.id + 100));
}

TEST(Store, RefusesAStoredCaseIndexTwiceSayingAnotherRunWritesTheSameRun) {
  const std::string path = tempPath("duplicate.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  ASSERT_TRUE(store.addCase(run.id, sampleCase(4), {}));
  const Status again = store.addCase(run.id, sampleCase(4), {});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.code(), StatusCode::kRefused);
  EXPECT_EQ(again.message(), "--db \"" + path + "\": case 4 of run " + std::to_string(run.id) +
                                 " is already stored: another seam run is writing the same run (two --resume at "
                                 "once?); this one stops");
  // The failed case left nothing behind, and the store still works.
  EXPECT_EQ(*store.caseIndices(run.id), std::vector<std::int64_t>{4});
  EXPECT_TRUE(store.addCase(run.id, sampleCase(5), {}));
}

TEST(Store, InsertsTwentyThousandCasesInBatchesOfAThousandAndReadsThemBack) {
  const std::string path = tempPath("bulk.db");
  Store store = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  constexpr int kCases = 20000;
  constexpr int kBatch = 1000;
  const VerdictRecord failing{
      .property = 4, .holds = false, .violation_class = "counted-k-times", .text = "summed twice"};
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCases; ++i) {
    if (i % kBatch == 0) {
      ASSERT_TRUE(store.beginBatch());
    }
    const bool violated = i % 97 == 0;
    ASSERT_TRUE(store.addCase(
        run.id, sampleCase(i, violated ? CaseOutcome::kViolated : CaseOutcome::kHolds),
        violated ? std::vector<VerdictRecord>{failing} : std::vector<VerdictRecord>{}));
    if (i % kBatch == kBatch - 1) {
      ASSERT_TRUE(store.commitBatch());
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ::testing::Test::RecordProperty(
      "insert_ms",
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()));
  auto indices = store.caseIndices(run.id);
  ASSERT_TRUE(indices.hasValue());
  ASSERT_EQ(indices->size(), static_cast<std::size_t>(kCases));
  for (int i = 0; i < kCases; ++i) ASSERT_EQ((*indices)[i], i);
  auto cases = store.cases(run.id);
  ASSERT_TRUE(cases.hasValue());
  ASSERT_EQ(cases->size(), static_cast<std::size_t>(kCases));
  EXPECT_EQ(cases->back().plan_hash, sampleCase(kCases - 1).plan_hash);
  EXPECT_EQ(store.firstFailures(run.id)->size(), static_cast<std::size_t>((kCases + 96) / 97));
}

TEST(Store, MovesWithoutLosingTheConnection) {
  const std::string path = tempPath("move.db");
  Store first = openOrDie(path);
  Store second = std::move(first);
  RunRecord run = sampleRun();
  ASSERT_TRUE(second.beginRun(run));
  Store third = openOrDie(tempPath("move_other.db"));
  third = std::move(second);
  EXPECT_EQ(third.path(), path);
  EXPECT_EQ(third.runs()->size(), 1u);
}

// ------------------------------------------------------------ concurrency

TEST(StoreConcurrency, TwoStoresOnOneFileWriteAlternatelyAndSeeEachOthersRows) {
  const std::string path = tempPath("alternate.db");
  Store a = openOrDie(path);
  Store b = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(a.beginRun(run));
  for (int round = 0; round < 10; ++round) {
    Store& writer = round % 2 == 0 ? a : b;
    ASSERT_TRUE(writer.beginBatch());
    for (int i = 0; i < 10; ++i)
      ASSERT_TRUE(writer.addCase(run.id, sampleCase(round * 10 + i), {}));
    ASSERT_TRUE(writer.commitBatch());
    // Outside a batch each write commits on its own.
    ASSERT_TRUE(
        writer.putMutant(run.id, MutantRecord{.id = "m" + std::to_string(round), .kind = "plan"}));
    EXPECT_EQ(a.caseIndices(run.id)->size(), static_cast<std::size_t>(round * 10 + 10));
    EXPECT_EQ(b.caseIndices(run.id)->size(), static_cast<std::size_t>(round * 10 + 10));
    EXPECT_EQ(b.mutants(run.id)->size(), static_cast<std::size_t>(round + 1));
  }
  // A reader does not block a writer: b reads while a's batch is open.
  ASSERT_TRUE(a.beginBatch());
  ASSERT_TRUE(a.addCase(run.id, sampleCase(100), {}));
  EXPECT_EQ(b.caseIndices(run.id)->size(), 100u);  // a's batch is not visible yet
  ASSERT_TRUE(a.commitBatch());
  EXPECT_EQ(b.caseIndices(run.id)->size(), 101u);
}

TEST(StoreConcurrency, AForkedChildAndTheParentWriteOneStoreAtOnce) {
  const std::string path = tempPath("fork.db");
  std::int64_t run_id = 0;
  {
    Store store = openOrDie(path);
    RunRecord run = sampleRun();
    ASSERT_TRUE(store.beginRun(run));
    run_id = run.id;
  }  // no connection crosses the fork (SQLite forbids it)
  constexpr int kPerProcess = 2000;
  constexpr int kBatch = 50;
  auto writeCases = [&](int first) -> bool {
    auto store = Store::open(path);
    if (!store) return false;
    for (int i = 0; i < kPerProcess; ++i) {
      if (i % kBatch == 0 && !store->beginBatch()) return false;
      if (!store->addCase(run_id, sampleCase(first + i), {})) return false;
      if (i % kBatch == kBatch - 1 && !store->commitBatch()) return false;
    }
    return true;
  };
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(writeCases(kPerProcess) ? 0 : 1);
  const bool parent_ok = writeCases(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(parent_ok);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  Store store = openOrDie(path);
  auto indices = store.caseIndices(run_id);
  ASSERT_TRUE(indices.hasValue());
  ASSERT_EQ(indices->size(), 2u * kPerProcess);
  for (int i = 0; i < 2 * kPerProcess; ++i) ASSERT_EQ((*indices)[i], i);
}

TEST(StoreConcurrency, ReportsBusyWhenAnotherRunHoldsTheWriteLockPastTheTimeout) {
  const std::string path = tempPath("busy.db");
  Store holder = openOrDie(path);
  Store waiter = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(holder.beginRun(run));
  ASSERT_TRUE(holder.beginBatch());
  const Status busy = waiter.addCase(run.id, sampleCase(0), {});  // waits the 5 s timeout
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.code(), StatusCode::kInternal);
  EXPECT_EQ(busy.message().find("--db \"" + path + "\" is busy: another seam run holds it"), 0u)
      << busy.message();
  ASSERT_TRUE(holder.commitBatch());
  EXPECT_TRUE(waiter.addCase(run.id, sampleCase(0), {}));  // free again
}

// -------------------------------------------------------------- durability

TEST(StoreDurability, ACrashInsideABatchLosesOnlyThatBatch) {
  const std::string path = tempPath("crash.db");
  std::int64_t run_id = 0;
  {
    Store store = openOrDie(path);
    RunRecord run = sampleRun();
    ASSERT_TRUE(store.beginRun(run));
    run_id = run.id;
    for (int batch = 0; batch < 3; ++batch) {
      ASSERT_TRUE(store.beginBatch());
      for (int i = 0; i < 10; ++i)
        ASSERT_TRUE(store.addCase(run_id, sampleCase(batch * 10 + i), {}));
      ASSERT_TRUE(store.commitBatch());
    }
  }
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Enough uncommitted rows that SQLite spills pages into the WAL before the
    // "crash": they must be ignored on recovery, having no commit frame.
    auto store = Store::open(path);
    if (!store || !store->beginBatch()) ::_exit(1);
    CaseRecord big = sampleCase(0);
    big.pattern = std::string(2000, 'M');
    for (int i = 0; i < 5000; ++i) {
      big.index = 1000 + i;
      if (!store->addCase(run_id, big, {})) ::_exit(1);
    }
    ::_exit(0);  // no commit, no destructors: as if killed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  // The crashed writer left its WAL behind, with the spilled, uncommitted pages.
  ASSERT_TRUE(exists(path + "-wal"));
  EXPECT_GT(fs::file_size(path + "-wal"), std::uintmax_t{1} << 20);
  {
    Store store = openOrDie(path);
    auto indices = store.caseIndices(run_id);
    ASSERT_TRUE(indices.hasValue());
    ASSERT_EQ(indices->size(), 30u);
    EXPECT_EQ(indices->back(), 29);
    // Still a store that takes writes.
    ASSERT_TRUE(store.addCase(run_id, sampleCase(30), {}));
  }
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(rawSql(path, "SELECT count(*) FROM cases"), "31");
}

TEST(StoreConcurrency, AWriterThatRollsBackAFailedBatchFreesTheStoreForTheOthersAtOnce) {
  const std::string path = tempPath("rollback_frees.db");
  Store failing = openOrDie(path);
  Store other = openOrDie(path);
  RunRecord run = sampleRun();
  ASSERT_TRUE(failing.beginRun(run));
  ASSERT_TRUE(failing.addCase(run.id, sampleCase(0), {}));
  ASSERT_TRUE(failing.beginBatch());
  ASSERT_TRUE(failing.addCase(run.id, sampleCase(1), {}));
  ASSERT_FALSE(failing.addCase(run.id, sampleCase(0), {}));  // already stored
  ASSERT_TRUE(failing.rollbackBatch());
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(other.addCase(run.id, sampleCase(2), {}));  // no wait for a busy timeout
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_EQ(*other.caseIndices(run.id), (std::vector<std::int64_t>{0, 2}));  // case 1 rolled back
}

TEST(StoreDurability, ClosingAStoreWithAnOpenBatchCommitsNothingOfIt) {
  const std::string path = tempPath("close_open_batch.db");
  RunRecord run = sampleRun();
  {
    Store store = openOrDie(path);
    ASSERT_TRUE(store.beginRun(run));
    ASSERT_TRUE(store.addCase(run.id, sampleCase(0), {}));
    ASSERT_TRUE(store.beginBatch());
    ASSERT_TRUE(store.addCase(run.id, sampleCase(1), {}));
  }
  Store store = openOrDie(path);
  EXPECT_EQ(*store.caseIndices(run.id), std::vector<std::int64_t>{0});
}

/// A child process runs `statements` in one transaction of a rollback
/// journal, then `inserts` times `insert`, with a page cache so small that
/// SQLite writes pages into the file before the commit, and dies before
/// committing: the file is left half written, with a hot journal beside it.
void crashInsideARollbackTransaction(const std::string& path, const std::string& statements,
                                     const std::string& insert, int inserts) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) ::_exit(1);
    const std::string begin = "PRAGMA cache_size = 1; BEGIN IMMEDIATE; " + statements;
    if (sqlite3_exec(db, begin.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) ::_exit(2);
    for (int i = 0; i < inserts; ++i) {
      if (sqlite3_exec(db, insert.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) ::_exit(3);
    }
    ::_exit(0);  // no commit, no close: as if killed
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(exists(path + "-journal"));
}

TEST(StoreDurability, ARunKilledWhileItCreatedTheStoreLeavesAFileTheNextRunMakesAStore) {
  // What a run killed inside the commit of the schema leaves: every page of
  // the new schema written, and the journal that says the file had no pages
  // (SQLite deletes it to commit). It used to be refused as an internal
  // error ("attempt to write a readonly database") forever after.
  const std::string path = tempPath("killed_creating.db");
  { Store store = openOrDie(path); }
  ASSERT_EQ(rawSql(path, "PRAGMA journal_mode = DELETE"), "delete");  // as before the switch to WAL
  std::string journal(512, '\0');
  const unsigned char header[] = {0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7,  // magic
                                  0, 0, 0, 0,                                      // page records
                                  0x85, 0xc0, 0x44, 0x53,                          // checksum seed
                                  0, 0, 0, 0,                                      // pages before: none
                                  0, 0, 2, 0,                                      // sector size
                                  0, 0, 0x10, 0};                                  // page size
  std::copy(std::begin(header), std::end(header), journal.begin());
  writeFile(path + "-journal", journal);

  Store store = openOrDie(path);
  EXPECT_FALSE(exists(path + "-journal"));
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue()) << runs.status().message();
  EXPECT_TRUE(runs->empty());
  RunRecord run = sampleRun();
  ASSERT_TRUE(store.beginRun(run));
  ASSERT_TRUE(store.addCase(run.id, sampleCase(0), {}));
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(rawSql(path, "PRAGMA journal_mode"), "wal");
}

TEST(StoreDurability, AStoreWhoseWriterDiedOutsideWalModeIsRolledBackToItsLastCommit) {
  const std::string path = tempPath("rollback_crash.db");
  {
    Store store = openOrDie(path);
    RunRecord run = sampleRun();
    ASSERT_TRUE(store.beginRun(run));
  }
  ASSERT_EQ(rawSql(path, "PRAGMA journal_mode = DELETE"), "delete");
  crashInsideARollbackTransaction(path, "",
                                  "INSERT INTO runs(command, args, version, host, gpu, cuda, nccl, started_ms, "
                                  "finished_ms) VALUES ('sweep', printf('%.2000c', 'x'), 'v', 'h', '', '', '', 1, 0)",
                                  400);
  Store store = openOrDie(path);
  EXPECT_FALSE(exists(path + "-journal"));
  auto runs = store.runs();
  ASSERT_TRUE(runs.hasValue()) << runs.status().message();
  EXPECT_EQ(runs->size(), 1u);  // the dead writer's 400 runs are rolled back
  EXPECT_EQ(rawSql(path, "PRAGMA integrity_check"), "ok");
}

TEST(StoreOpen, RefusesAnotherApplicationsDatabaseWhoseWriterDiedAndLeavesItAndItsJournalUnchanged) {
  // One with committed pages under the hot journal, and one whose creation
  // never committed (the journal says the file had no pages).
  const std::string insert = "INSERT INTO notes VALUES (printf('%.2000c', 'x'))";
  for (const bool created_before : {true, false}) {
    const std::string path = tempPath(created_before ? "foreign_hot.db" : "foreign_creating.db");
    if (created_before) {
      ASSERT_EQ(rawSql(path, "CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('keep me')"), "");
      crashInsideARollbackTransaction(path, "", insert, 400);
    } else {
      crashInsideARollbackTransaction(path, "CREATE TABLE notes(text TEXT);", insert, 400);
    }
    const std::uint64_t journal = fileDigest(path + "-journal");
    const std::string message = expectRefusedAndUnchanged(path);
    EXPECT_NE(message.find("not a seam store"), std::string::npos) << message;
    ASSERT_TRUE(exists(path + "-journal"));
    EXPECT_EQ(fileDigest(path + "-journal"), journal);
    auto again = Store::open(path);
    ASSERT_FALSE(again.hasValue());
    EXPECT_EQ(again.status().code(), StatusCode::kInvalidInput) << again.status().message();
  }
}

// ------------------------------------------------------------------ JUnit

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Junit, WritesOneSuiteWithCountsFailuresAndSkips) {
  const std::string path = tempPath("junit.xml");
  const std::vector<JunitCase> cases = {
      {.classname = "nemotron-h", .name = "tp=2 dp=4", .seconds = 0.0125},
      {.classname = "nemotron-h",
       .name = "tp=4 dp=2",
       .seconds = 0.5,
       .failed = true,
       .message = "property 3: row 4 summed twice"},
      {.classname = "nemotron-h",
       .name = "cp=2",
       .seconds = 0,
       .skipped = true,
       .message = "attention CP is not supported"},
  };
  ASSERT_TRUE(writeJunit(path, "seam sweep", cases));
  EXPECT_FALSE(exists(path + ".tmp"));
  const std::string xml = readFile(path);
  EXPECT_EQ(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"seam sweep\" "
                      "tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\" time=\"0.512\">\n",
                      0),
            0u)
      << xml;
  EXPECT_NE(xml.find("  <testsuite name=\"seam sweep\" tests=\"3\" failures=\"1\" errors=\"0\" "
                     "skipped=\"1\" time=\"0.512\">\n"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testcase name=\"tp=2 dp=4\" classname=\"nemotron-h\" time=\"0.013\"/>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<failure message=\"property 3: row 4 summed twice\" type=\"violation\">"
                     "property 3: row 4 summed twice</failure>"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"attention CP is not supported\"/>"), std::string::npos)
      << xml;
  EXPECT_EQ(count(xml, "<testcase "), 3u);
  EXPECT_EQ(count(xml, "<testsuite "), 1u);
  EXPECT_TRUE(xml.ends_with("  </testsuite>\n</testsuites>\n")) << xml;
}

TEST(Junit, GroupsCasesIntoOneSuitePerSuiteInFirstSeenOrder) {
  const std::string path = tempPath("suites.xml");
  const std::vector<JunitCase> cases = {
      {.suite = "sweep b", .name = "1"},
      {.suite = "sweep a", .name = "2", .failed = true, .message = "x"},
      {.suite = "sweep b", .name = "3", .skipped = true},
      {.name = "4"},  // no suite: the run's
  };
  ASSERT_TRUE(writeJunit(path, "run", cases));
  const std::string xml = readFile(path);
  const auto b =
      xml.find("<testsuite name=\"sweep b\" tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"1\"");
  const auto a =
      xml.find("<testsuite name=\"sweep a\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\"");
  const auto run = xml.find("<testsuite name=\"run\" tests=\"1\" failures=\"0\"");
  ASSERT_NE(b, std::string::npos) << xml;
  ASSERT_NE(a, std::string::npos) << xml;
  ASSERT_NE(run, std::string::npos) << xml;
  EXPECT_LT(b, a);
  EXPECT_LT(a, run);
  EXPECT_LT(xml.find("name=\"3\""), a);  // case 3 sits in suite b, before suite a
  EXPECT_NE(
      xml.find("<testsuites name=\"run\" tests=\"4\" failures=\"1\" errors=\"0\" skipped=\"1\""),
      std::string::npos);

  ASSERT_TRUE(writeJunit(path, "empty", {}));  // still one (empty) suite
  EXPECT_NE(readFile(path).find("<testsuite name=\"empty\" tests=\"0\""), std::string::npos);
}

TEST(Junit, EscapesMarkupAndDropsControlCharacters) {
  const std::string path = tempPath("escape.xml");
  const std::string nasty =
      std::string("a&b <c> \"d\" 'e'\x01\x1f\x7f|\tline\nnext\r") + "\xC3\xA9 bad:\xFF\xC3";
  const std::vector<JunitCase> cases = {
      {.classname = nasty, .name = nasty, .failed = true, .message = nasty},
      {.classname = "c", .name = "skip", .skipped = true, .message = nasty},
  };
  ASSERT_TRUE(writeJunit(path, nasty, cases));
  const std::string xml = readFile(path);
  const std::string attribute =
      "a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;\x7f|&#9;line&#10;next&#13;\xC3\xA9 "
      "bad:\xEF\xBF\xBD\xEF\xBF\xBD";
  const std::string text =
      "a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos;\x7f|\tline\nnext&#13;\xC3\xA9 "
      "bad:\xEF\xBF\xBD\xEF\xBF\xBD";
  EXPECT_NE(xml.find("<testsuites name=\"" + attribute + "\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<testcase name=\"" + attribute + "\" classname=\"" + attribute + "\""),
            std::string::npos)
      << xml;
  EXPECT_NE(
      xml.find("<failure message=\"" + attribute + "\" type=\"violation\">" + text + "</failure>"),
      std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<skipped message=\"" + attribute + "\"/>"), std::string::npos) << xml;
  for (const char c : xml) {
    const auto u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 || c == '\n' || c == '\t') << "control character " << int(u);
  }
}

TEST(Junit, ReplacesAnExistingFileAndRefusesAMissingDirectoryNamingThePath) {
  const std::string path = tempPath("replace.xml");
  writeFile(path, "old");
  ASSERT_TRUE(writeJunit(path, "s", {{.name = "n"}}));
  EXPECT_NE(readFile(path).find("<testcase name=\"n\""), std::string::npos);
  EXPECT_FALSE(exists(path + ".tmp"));

  const std::string bad = tempPath("no_such_junit_dir") + "/junit.xml";
  const Status refused = writeJunit(bad, "s", {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(refused.message(),
            "cannot write JUnit XML to \"" + bad + "\" (No such file or directory)");
}

}  // namespace
}  // namespace seam::reports
