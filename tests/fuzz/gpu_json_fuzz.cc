// Fuzzes the JSON results reader (reports/gpu_import.h readGpuJson, what
// `seam db import` reads through properties/gpu_json.h: the files seam-gpu
// run / compare / bench / bench-allreduce write) and writes every file it
// accepts into a store. seam has no reader for `seam plan --format json`
// (the plan JSON is output only); this is its one reader of JSON documents.
// Contracts: a refused file is one line, never an internal error; an
// accepted file holds no negative rank or size, is written without an error
// and reads back.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "fuzz_support.h"
#include "seam/reports/gpu_import.h"
#include "seam/reports/store.h"

namespace {

using seam::fuzz::require;

// The store is reused across inputs and started afresh now and then, so that
// it stays small.
constexpr int kInputsPerStore = 4096;

void removeStore(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string kJson = seam::fuzz::scratchPath("result.json");
  static const std::string kDb = seam::fuzz::scratchPath("import.db");
  static std::unique_ptr<seam::reports::Store> store;
  static int inputs = 0;

  seam::fuzz::writeFile(kJson, data, size);
  auto file = seam::reports::readGpuJson(kJson, "seam 0.1.0");
  std::remove(kJson.c_str());
  if (!file) {
    seam::fuzz::requireOneLineError(file.status());
    return 0;
  }
  // An accepted file holds only what seam-gpu writes: ranks and sizes of
  // the case, never negative (gpu_import_check.h).
  for (const auto& gc : file->cases) {
    for (const auto& t : gc.timings) {
      require(t.rank >= 0 && t.bytes >= 0 && t.op_index >= 0,
              "an accepted file holds a negative rank, size or op index");
    }
  }
  if (!store || ++inputs % kInputsPerStore == 0) {
    store.reset();
    removeStore(kDb);
    auto opened = seam::reports::Store::open(kDb);
    require(opened.hasValue(), "cannot create the scratch store");
    store = std::make_unique<seam::reports::Store>(std::move(*opened));
  }
  auto written = seam::reports::writeGpuResult(*store, *file);
  require(written.hasValue(), "an accepted file is not written: " +
                                  (written ? std::string() : written.status().message()));
  auto eqs = store->equivalences(written->run_id);
  auto timings = store->timings(written->run_id);
  require(eqs.hasValue() && timings.hasValue(), "an imported run does not read back");
  // Rows with the same key replace each other (INSERT OR REPLACE), so there
  // may be fewer rows than records, never more, and at least one.
  // A bench file holds one case per compared row; the others one case.
  size_t file_eqs = 0, file_timings = 0;
  for (const auto& gc : file->cases) {
    file_eqs += gc.equivalences.size();
    file_timings += gc.timings.size();
  }
  require(eqs->size() <= file_eqs && (file_eqs == 0 || !eqs->empty()),
          "equivalence rows do not match the file");
  require(timings->size() <= file_timings && (file_timings == 0 || !timings->empty()),
          "timing rows do not match the file");
  return 0;
}
