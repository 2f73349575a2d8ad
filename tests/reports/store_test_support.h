// What the store tests share: temp paths removed after the run, files read,
// written and digested, SQLite run directly on a file, sample records, and
// the check that a refused file is left as it was.
#pragma once

#include <cstdint>
#include <string>

#include "seam/reports/store.h"

namespace seam::reports::store_test {

/// Strings that break naive quoting: quotes of both kinds, SQL comment and
/// statement separators, newlines, tabs and non-ASCII UTF-8.
extern const std::string kAwkward;

/// A path in the test's temp directory, unique to this process, with no
/// leftovers (main file or side files) from an earlier run; removed with its
/// side files once the tests have run.
std::string tempPath(const std::string& name);

std::string readFile(const std::string& path);
void writeFile(const std::string& path, const std::string& bytes);
/// FNV-1a over the file's bytes: "unchanged" means the same digest and size.
std::uint64_t fileDigest(const std::string& path);
bool exists(const std::string& path);
/// Whether a -wal, -shm or -journal file stands beside `path`.
bool hasSideFiles(const std::string& path);

/// Runs SQL on a file with SQLite directly (to build other applications'
/// databases and to look at what the store wrote). Returns the first column
/// of the last row, or "error: ..." on failure.
std::string rawSql(const std::string& path, const std::string& sql);

RunRecord sampleRun(const std::string& command = "sweep", const std::string& args = "--world 8");
CaseRecord sampleCase(std::int64_t index, CaseOutcome outcome = CaseOutcome::kHolds);

/// Opens `path`, failing the test (and aborting) if it cannot.
Store openOrDie(const std::string& path);

/// Opens `path` expecting a refusal: the message is one line naming the file,
/// and the file is left byte-for-byte as it was, with no side files created.
/// Returns the message.
std::string expectRefusedAndUnchanged(const std::string& path);

/// A child process runs `statements` in one transaction of a rollback
/// journal, then `inserts` times `insert`, with a page cache so small that
/// SQLite writes pages into the file before the commit, and dies before
/// committing: the file is left half written, with a hot journal beside it.
void crashInsideARollbackTransaction(const std::string& path, const std::string& statements,
                                     const std::string& insert, int inserts);

}  // namespace seam::reports::store_test
