// Shared by the kill/resume tests: how many rows the latest run of a store
// holds, read while another process writes it (0 while there is no store).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "seam/reports/store.h"

namespace seam::testing {

/// `count(store, run id)` over the store's latest run; 0 while there is none.
template <class Count>
std::int64_t countInLatestRun(const std::string& db, Count count) {
  if (!std::filesystem::exists(db)) return 0;  // opening would create it
  auto store = reports::Store::open(db);
  if (!store) return 0;
  auto runs = store->runs();
  if (!runs || runs->empty()) return 0;
  return count(*store, runs->back().id);
}

/// Mutant rows of the store's latest run.
inline std::int64_t storedMutants(const std::string& db) {
  return countInLatestRun(db, [](reports::Store& store, std::int64_t run) {
    auto m = store.mutants(run);
    return m ? static_cast<std::int64_t>(m->size()) : 0;
  });
}

/// Case rows of the store's latest run.
inline std::int64_t storedCases(const std::string& db) {
  return countInLatestRun(db, [](reports::Store& store, std::int64_t run) {
    auto c = store.caseIndices(run);
    return c ? static_cast<std::int64_t>(c->size()) : 0;
  });
}

}  // namespace seam::testing
