// Shared by the kill/resume tests: how many rows the latest run of a store
// holds, read while another process writes it (0 while there is no store).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "seam/reports/store.h"

namespace seam::testing {

/// Mutant rows of the store's latest run.
inline std::int64_t storedMutants(const std::string& db) {
  if (!std::filesystem::exists(db)) return 0;  // opening would create it
  auto store = reports::Store::open(db);
  if (!store) return 0;
  auto runs = store->runs();
  if (!runs || runs->empty()) return 0;
  auto m = store->mutants(runs->back().id);
  return m ? static_cast<std::int64_t>(m->size()) : 0;
}

/// Case rows of the store's latest run.
inline std::int64_t storedCases(const std::string& db) {
  if (!std::filesystem::exists(db)) return 0;
  auto store = reports::Store::open(db);
  if (!store) return 0;
  auto runs = store->runs();
  if (!runs || runs->empty()) return 0;
  auto c = store->caseIndices(runs->back().id);
  return c ? static_cast<std::int64_t>(c->size()) : 0;
}

}  // namespace seam::testing
