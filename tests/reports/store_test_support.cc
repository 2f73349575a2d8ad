#include "store_test_support.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace seam::reports::store_test {

namespace fs = std::filesystem;

const std::string kAwkward =
    "it's \"quoted\"; -- not SQL\nline two\ttab \xC3\xA9\xE2\x86\x92\xF0\x9F\x98\x80";

namespace {

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

}  // namespace

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

RunRecord sampleRun(const std::string& command, const std::string& args) {
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

CaseRecord sampleCase(std::int64_t index, CaseOutcome outcome) {
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

}  // namespace seam::reports::store_test
