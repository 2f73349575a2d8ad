// Fuzzes opening an arbitrary file as a seam store (reports/store.h
// Store::open), then reading every table of an opened store back, rendering
// `seam report` from it and writing a run into it. Contracts: a refused
// file is one line and left byte for byte unchanged, with no -wal, -shm or
// -journal file created beside it; only a file that carries seam's
// application id is ever opened (an empty file becomes a new store); an
// opened store has every table and column of its schema version; reads,
// the report and writes on an opened store end in a value or a one-line
// error, never a crash.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "fuzz_support.h"
#include "seam/reports/report.h"
#include "seam/reports/store.h"

namespace {

using seam::fuzz::require;
using seam::fuzz::requireOneLineError;

constexpr const char* kSideFiles[] = {"-wal", "-shm", "-journal"};
/// SQLite's header keeps the application id at bytes 68..71, big-endian.
constexpr std::size_t kApplicationIdOffset = 68;
constexpr std::string_view kSeamApplicationId = "SEAM";
/// Runs read back per input (a store may claim any number).
constexpr std::size_t kMaxRunsRead = 16;

void removeAll(const std::string& path) {
  std::remove(path.c_str());
  for (const char* s : kSideFiles) std::remove((path + s).c_str());
}

/// A value, or an error that is one line; internal errors are allowed on an
/// opened store (SQLite may find damage that the opening checks cannot see),
/// but not a table or column missing: the schema check opening it compared
/// every table and column with the schema of its version.
bool usable(const seam::Status& s) {
  if (!s) {
    requireOneLineError(s, /*internal_allowed=*/true);
    const std::string& m = s.message();
    require(m.find("no such table") == std::string::npos &&
                m.find("no such column") == std::string::npos &&
                m.find("has no column") == std::string::npos,
            "an opened store lacks a table or column its schema check should have found: " + m);
  }
  return static_cast<bool>(s);
}
template <class T>
bool usable(const seam::Expected<T>& e) {
  return usable(e ? seam::Status::ok() : e.status());
}

void readEverything(seam::reports::Store& store) {
  auto runs = store.runs();
  if (!usable(runs)) return;
  for (std::size_t i = 0; i < std::min(runs->size(), kMaxRunsRead); ++i) {
    const std::int64_t id = (*runs)[i].id;
    (void)usable(store.caseIndices(id));
    (void)usable(store.cases(id));
    (void)usable(store.firstFailures(id));
    (void)usable(store.mutants(id));
    (void)usable(store.kills(id));
    (void)usable(store.equivalences(id));
    (void)usable(store.timings(id));
  }
  (void)usable(seam::reports::renderReport(store, seam::reports::ReportFormat::kMarkdown));
  (void)usable(seam::reports::renderReport(store, seam::reports::ReportFormat::kHtml));
}

void writeARun(seam::reports::Store& store) {
  seam::reports::RunRecord run{.command = "sweep", .args = "--fuzz", .version = "seam fuzz"};
  if (!usable(store.beginRun(run))) return;
  seam::reports::CaseRecord c{
      .index = 0, .model = "pattern", .pattern = "M-", .policy = "declared"};
  if (!usable(store.beginBatch())) return;
  const bool added = usable(store.addCase(run.id, c, {}));
  if (!usable(store.commitBatch()) || !added) return;
  (void)usable(store.finishRun(run.id));
  (void)usable(store.findUnfinished("sweep", "--fuzz"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string kPath = seam::fuzz::scratchPath("store.db");
  removeAll(kPath);
  seam::fuzz::writeFile(kPath, data, size);
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  {
    auto store = seam::reports::Store::open(kPath);
    if (!store) {
      requireOneLineError(store.status());
      require(seam::fuzz::readFile(kPath) == input, "a refused file was changed");
      for (const char* s : kSideFiles) {
        require(!seam::fuzz::fileExists(kPath + s),
                std::string("a refused file got a ") + s + " file");
      }
    } else {
      require(size == 0 || (size >= kApplicationIdOffset + 4 &&
                            input.substr(kApplicationIdOffset, 4) == kSeamApplicationId),
              "a file without seam's application id was opened as a store");
      readEverything(*store);
      writeARun(*store);
    }
  }
  removeAll(kPath);
  return 0;
}
