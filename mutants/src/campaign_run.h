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
#include <string>
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
  explicit MutantFindings(std::int64_t n) : seen_(static_cast<size_t>(n), 0) {}
  /// Case i had the mutant's site (or planned under it). Counted only up to
  /// the verdict: worker threads run a little past a kill, by chance.
  void applied(std::int64_t i) { seen_[i] |= kApplied; }
  /// Case i's mutated plan differs from the unmutated one.
  void differed(std::int64_t i) { seen_[i] |= kDiffered; }
  /// Case i kills the mutant with `v` at `site` (the kill at the lowest
  /// index is kept).
  void killed(std::int64_t i, const std::optional<Violation>& v, int site = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (i < first_kill_.load()) {
      first_kill_ = i;
      kill_violation_ = v;
      kill_site_ = site;
    }
  }
  /// The mutated planner failed on case i with `detail` (the lowest index's
  /// detail is kept). Not a kill.
  void plannerError(std::int64_t i, std::string detail) {
    seen_[i] |= kError;
    std::lock_guard<std::mutex> lock(mu_);
    if (i < first_error_) {
      first_error_ = i;
      error_detail_ = std::move(detail);
    }
  }
  /// The lowest case index where the planner failed (kNoCase: none), and why.
  std::int64_t firstError() const { return first_error_; }
  const std::string& errorDetail() const { return error_detail_; }
  /// Case i's plan differs and every property holds: it replaces the
  /// smallest survivor when `smaller(i, current)`.
  template <class Smaller>
  void survived(std::int64_t i, Smaller smaller, int site = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (smallest_ == kNoCase || smaller(i, smallest_) ||
        (!smaller(smallest_, i) && i < smallest_)) {
      smallest_ = i;
      smallest_site_ = site;
    }
  }
  /// The smallest surviving case (kNoCase: none) and the site mutated there.
  std::int64_t smallest() const { return smallest_; }
  int smallestSite() const { return smallest_site_; }
  /// The outcome of `m` over `n` cases: killed at the first kill in trial
  /// order; else survived when some plan differed; else a planner error
  /// when the mutated planner failed somewhere; else equivalent when its
  /// site was reached, not covered when it never was. The family fills in
  /// the cases and the argument.
  MutantOutcome outcome(const Mutant* m, std::int64_t n) const {
    MutantOutcome o;
    o.mutant = m;
    const std::int64_t first = first_kill_.load();
    // Cases up to and including the verdict, in case order (worker threads
    // may look a little further; that is not part of the result).
    o.cases_run = first != kNoCase ? first + 1 : n;
    for (std::int64_t i = 0; i < o.cases_run; ++i) {
      o.applied += (seen_[i] & kApplied) != 0;
      o.differed += (seen_[i] & kDiffered) != 0;
      o.planner_errors += (seen_[i] & kError) != 0;
    }
    if (first != kNoCase) {
      o.status = MutantStatus::kKilled;
      o.kill_index = first;
      o.kill_violation = kill_violation_;
      o.kill_site = kill_site_;
    } else {
      o.status = statusFrom(false, o.differed, o.planner_errors, o.applied);
    }
    return o;
  }

 private:
  std::atomic<std::int64_t> first_kill_{kNoCase};
  static constexpr char kApplied = 1, kDiffered = 2, kError = 4;
  std::vector<char> seen_;  ///< per case: kApplied | kDiffered | kError (one writer per case)
  std::mutex mu_;
  std::optional<Violation> kill_violation_;
  int kill_site_ = 0;
  std::int64_t smallest_ = kNoCase;
  int smallest_site_ = 0;
  std::int64_t first_error_ = kNoCase;
  std::string error_detail_;
};

}  // namespace seam::mutants
