#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "seam/reports/store.h"
#include "store_test_support.h"

namespace seam::reports::store_test {
namespace {

namespace fs = std::filesystem;

TEST(StoreOpen, CreatesANewFileWithTheSeamSchemaMarksAndWalMode) {
  const std::string path = tempPath("new.db");
  { Store store = openOrDie(path); }
  EXPECT_EQ(rawSql(path, "PRAGMA application_id"), std::to_string(0x5345414D));
  EXPECT_EQ(rawSql(path, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
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
  const std::string path = tempPath("v6.db");
  { Store store = openOrDie(path); }
  ASSERT_EQ(rawSql(path,
                   "UPDATE seam_meta SET value = '6' WHERE key = 'schema_version'; "
                   "SELECT value FROM seam_meta WHERE key = 'schema_version'"),
            "6");
  ASSERT_FALSE(hasSideFiles(path));
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_EQ(message, "--db \"" + path +
                         "\": a seam store of schema version 6, but this seam reads and writes "
                         "version 5 (and migrates versions 1 to 4); refusing to write to it");
}

TEST(StoreOpen, MigratesAVersionOneStoreKeepingItsRows) {
  // A version 1 store as that seam wrote it.
  const std::string path = tempPath("v1.db");
  ASSERT_TRUE(createStoreOfVersion(path, 1).isOk());
  ASSERT_EQ(
      rawSql(path,
             "INSERT INTO runs VALUES (1, 'mutate', 'a', 'v', '', '', '', '', 1, 2); "
             "INSERT INTO mutants VALUES (1, 'plan.x', 'plan', 'd', 'equivalent', 'never', 9); "
             "INSERT INTO kills VALUES (1, 'plan.y', 3, 2, 'c', 't', 'seam check'); "
             "SELECT count(*) FROM pragma_table_info('mutants')"),
      "7");
  {
    Store store = openOrDie(path);
    auto mutants = store.mutants(1);
    ASSERT_TRUE(mutants.hasValue()) << mutants.status().message();
    ASSERT_EQ(mutants->size(), 1u);
    EXPECT_EQ((*mutants)[0].status, "equivalent");
    EXPECT_EQ((*mutants)[0].cases_run, 9);
    EXPECT_EQ((*mutants)[0].applied, 0);
    auto kills = store.kills(1);
    ASSERT_TRUE(kills.hasValue());
    ASSERT_EQ(kills->size(), 1u);
    EXPECT_EQ((*kills)[0].site, 0);
    EXPECT_EQ((*kills)[0].reproduce, "seam check");
  }
  EXPECT_EQ(rawSql(path, "PRAGMA user_version"), std::to_string(kStoreSchemaVersion));
  EXPECT_EQ(rawSql(path, "SELECT value FROM seam_meta WHERE key = 'schema_version'"),
            std::to_string(kStoreSchemaVersion));
  // Opened again, it is a current store and stays one.
  { Store store = openOrDie(path); }
  EXPECT_EQ(rawSql(path, "SELECT count(*) FROM pragma_table_info('mutants')"), "11");
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
  EXPECT_EQ(message,
            "--db \"" + path +
                "\": not a seam store (an SQLite database SQLite cannot read: unsupported file "
                "format); refusing to write to it");
}

TEST(StoreOpen, RefusesASeamStoreWhoseSchemaSqliteCannotReadWhenItCouldWriteAsBadInput) {
  // Found by tests/fuzz/store_fuzz.cc: a column name garbled in the schema
  // text passes a read-only connection (it skips CHECK constraints) and used
  // to fail as an internal error on the first statement that may write.
  const std::string path = tempPath("garbled_schema.db");
  { Store store = openOrDie(path); }
  ASSERT_EQ(
      rawSql(path,
             "PRAGMA writable_schema = ON; "
             "UPDATE sqlite_master SET sql = replace(sql, '  outcome TEXT', '  garbled TEXT') "
             "WHERE name = 'cases'"),
      "");
  ASSERT_FALSE(hasSideFiles(path));
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_EQ(
      message,
      "--db \"" + path +
          "\": not a seam store (a damaged or truncated SQLite database); refusing to write to it");
  EXPECT_EQ(Store::open(path).status().code(), StatusCode::kInvalidInput);
}

TEST(StoreOpen, RefusesAFileWhoseDamagedHeaderMakesSqliteRunOutOfMemoryAsBadInput) {
  // Found by tests/fuzz/store_fuzz.cc (corpus/store/found_header_nomem): a
  // damaged seam store whose first read fails with SQLITE_NOMEM (its header
  // or schema claims sizes SQLite cannot allocate) was an internal error
  // (exit 3), as if this machine had run out of memory.
  const std::string path = tempPath("header_nomem.db");
  writeFile(path,
            readFile(std::string(SEAM_SOURCE_DIR) + "/tests/fuzz/corpus/store/found_header_nomem"));
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
    for (const auto& [write_version, read_version] :
         {std::pair{44, 2}, std::pair{2, 44}, std::pair{0, 1}}) {
      std::string bytes = readFile(path);
      bytes[18] = static_cast<char>(write_version);
      bytes[19] = static_cast<char>(read_version);
      writeFile(path, bytes);
      ASSERT_FALSE(hasSideFiles(path));
      const std::string message = expectRefusedAndUnchanged(path);
      EXPECT_NE(
          message.find("not a seam store (a damaged SQLite database (file format versions " +
                       std::to_string(write_version) + "/" + std::to_string(read_version) + "))"),
          std::string::npos)
          << message;
    }
  }
}

TEST(StoreOpen, RefusesAStoreWhoseTextEncodingIsNotUtf8AsBadInputWithoutCreatingSideFiles) {
  // Found by tests/fuzz/store_fuzz.cc: a seam store whose header's text
  // encoding field was damaged opened, then failed as an internal error
  // (exit 3, "attached databases must use the same text encoding as main
  // database") when SQLite read its schema a second time. A UTF-16 database
  // with seam's schema and id is not one seam wrote either.
  const std::string seam = tempPath("encoding_seam.db");
  { Store store = openOrDie(seam); }
  for (const std::uint32_t encoding : {2u, 3u, 4u, 5u, 0x01000001u}) {
    std::string bytes = readFile(seam);
    for (int i = 0; i < 4; ++i)
      bytes[56 + i] = static_cast<char>((encoding >> (8 * (3 - i))) & 0xff);
    const std::string path = tempPath("encoding_" + std::to_string(encoding) + ".db");
    writeFile(path, bytes);
    auto store = Store::open(path);
    ASSERT_FALSE(store.hasValue()) << encoding;
    EXPECT_EQ(store.status().code(), StatusCode::kInvalidInput) << store.status().message();
    const std::string why = encoding <= 3 ? "text encoding " + std::to_string(encoding) +
                                                " (UTF-16) where a seam store's is UTF-8"
                                          : "a damaged SQLite database (text encoding " +
                                                std::to_string(encoding) + ")";
    EXPECT_EQ(expectRefusedAndUnchanged(path),
              "--db \"" + path + "\": not a seam store (" + why + "); refusing to write to it");
    EXPECT_FALSE(hasSideFiles(path));
  }
  const std::string utf16 = tempPath("encoding_utf16.db");
  ASSERT_EQ(rawSql(utf16,
                   "PRAGMA encoding = 'UTF-16le'; PRAGMA application_id = 1397047629; "
                   "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)"),
            "");
  EXPECT_NE(expectRefusedAndUnchanged(utf16).find("(text encoding 2 (UTF-16) where"),
            std::string::npos);
}

TEST(StoreOpen, RefusesAnOldStoreWhoseMigrationSqliteCannotRunAsDamagedAndLeavesItUnchanged) {
  // Found by tests/fuzz/store_fuzz.cc (corpus/store/found_orphan_index_migration):
  // a version 1 store whose schema holds an index SQLite cannot carry across
  // the migration's table rename failed as an internal error (exit 3).
  const std::string path = tempPath("orphan_index.db");
  writeFile(path, readFile(std::string(SEAM_SOURCE_DIR) +
                           "/tests/fuzz/corpus/store/found_orphan_index_migration"));
  auto store = Store::open(path);
  ASSERT_FALSE(store.hasValue());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidInput) << store.status().message();
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_EQ(message.rfind("--db \"" + path +
                              "\": a damaged seam store (its migration from schema version 1 "
                              "failed: error in index sqlite_autoindex_cases_1 after rename",
                          0),
            0u)
      << message;
  EXPECT_FALSE(hasSideFiles(path));
}

TEST(StoreOpen, RefusesAnOldStoreWhoseMigrationLeftAColumnOutAsDamagedAndLeavesItUnchanged) {
  // Found by tests/fuzz/store_fuzz.cc (corpus/store/found_migration_without_effect):
  // a version 1 store whose stored CREATE text names "mutanTs" takes the
  // migration's ALTER TABLE mutants ADD COLUMN without an error and without
  // the column; it opened, and reading its mutants failed as an internal
  // error (exit 3, "no such column: applied").
  const std::string path = tempPath("migration_without_effect.db");
  writeFile(path, readFile(std::string(SEAM_SOURCE_DIR) +
                           "/tests/fuzz/corpus/store/found_migration_without_effect"));
  auto store = Store::open(path);
  ASSERT_FALSE(store.hasValue());
  EXPECT_EQ(store.status().code(), StatusCode::kInvalidInput) << store.status().message();
  const std::string message = expectRefusedAndUnchanged(path);
  EXPECT_NE(message.find("a damaged seam store (column \"mutants.applied\" is missing)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(hasSideFiles(path));
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

TEST(StoreOpen,
     RefusesAnotherApplicationsDatabaseWhoseWriterDiedAndLeavesItAndItsJournalUnchanged) {
  // One with committed pages under the hot journal, and one whose creation
  // never committed (the journal says the file had no pages).
  const std::string insert = "INSERT INTO notes VALUES (printf('%.2000c', 'x'))";
  for (const bool created_before : {true, false}) {
    const std::string path = tempPath(created_before ? "foreign_hot.db" : "foreign_creating.db");
    if (created_before) {
      ASSERT_EQ(rawSql(path, "CREATE TABLE notes(text TEXT); INSERT INTO notes VALUES ('keep me')"),
                "");
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
}  // namespace
}  // namespace seam::reports::store_test
