// Private to mutants/: what the serving and the training campaigns share.
// Cases run on several threads and a mutant stops at its first kill in case
// order; one mutant's findings, recorded from the worker threads, become its
// outcome by the same rules in both families.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "seam/mutants/campaign.h"

namespace seam::mutants {

/// No case (an index past every case).
inline constexpr std::int64_t kNoCase = std::numeric_limits<std::int64_t>::max();

/// Runs `body(i, ledger)` over [0, n) on `jobs` threads, `chunk` indices at
/// a time, in index order per thread, with one Ledger per thread (the
/// serving check needs one; training bodies leave it unused). `stop(i)`
/// says whether index i need not run any more.
template <class Body, class Stop>
void parallelFor(std::int64_t n, int jobs, std::int64_t chunk, Body body, Stop stop) {
  std::atomic<std::int64_t> next{0};
  auto worker = [&]() {
    Ledger ledger;
    for (;;) {
      const std::int64_t begin = next.fetch_add(chunk);
      if (begin >= n || stop(begin)) return;
      const std::int64_t end = std::min(n, begin + chunk);
      for (std::int64_t i = begin; i < end && !stop(i); ++i) body(i, ledger);
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
}

/// What one mutant's cases found, recorded from the worker threads: the
/// counts, the first kill in case order, the smallest surviving case.
class MutantFindings {
 public:
  /// Whether case i need not run: a kill at a lower index decides the mutant.
  bool decidedBefore(std::int64_t i) const { return i > first_kill_.load(); }
  /// Case i had the mutant's site (or planned under it).
  void applied() { applied_.fetch_add(1); }
  /// Case i's mutated plan differs from the unmutated one.
  void differed() { differed_.fetch_add(1); }
  /// Case i kills the mutant with `v` (the kill at the lowest index is kept).
  void killed(std::int64_t i, const std::optional<Violation>& v) {
    std::lock_guard<std::mutex> lock(mu_);
    if (i < first_kill_.load()) {
      first_kill_ = i;
      kill_violation_ = v;
    }
  }
  /// Case i's plan differs and every property holds: it replaces the
  /// smallest survivor when `smaller(i, current)`.
  template <class Smaller>
  void survived(std::int64_t i, Smaller smaller) {
    std::lock_guard<std::mutex> lock(mu_);
    if (smallest_ == kNoCase || smaller(i, smallest_)) smallest_ = i;
  }
  /// The smallest surviving case (kNoCase: none).
  std::int64_t smallest() const { return smallest_; }
  /// The outcome of `m` over `n` cases: killed at the first kill in case
  /// order, equivalent when no plan differed, survived otherwise. The
  /// family fills in the cases and the argument.
  MutantOutcome outcome(const Mutant* m, std::int64_t n) const {
    MutantOutcome o;
    o.mutant = m;
    const std::int64_t first = first_kill_.load();
    // Cases up to and including the verdict, in case order (worker threads
    // may look a little further; that is not part of the result).
    o.cases_run = first != kNoCase ? first + 1 : n;
    o.applied = applied_.load();
    o.differed = differed_.load();
    if (first != kNoCase) {
      o.status = MutantStatus::kKilled;
      o.kill_index = first;
      o.kill_violation = kill_violation_;
    } else {
      o.status = o.differed == 0 ? MutantStatus::kEquivalent : MutantStatus::kSurvived;
    }
    return o;
  }

 private:
  std::atomic<std::int64_t> first_kill_{kNoCase};
  std::atomic<std::int64_t> applied_{0}, differed_{0};
  std::mutex mu_;
  std::optional<Violation> kill_violation_;
  std::int64_t smallest_ = kNoCase;
};

}  // namespace seam::mutants
