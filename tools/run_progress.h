// The progress line of `seam mutate` (baseline included), `seam diff` and
// `seam prop` on a terminal: "  WHAT done/total, R/s, ETA T[, note]" on one
// line of stderr, rewritten in place and cleared at the end; nothing when
// stderr is not a terminal (a CI log gets only the summary).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "seam/mutants/campaign.h"

namespace seam::tools {

/// Thread-safe: workers may report; redrawn at most every 100 ms.
class RateLine {
 public:
  explicit RateLine(bool tty) : tty_(tty) {}
  ~RateLine() { clear(); }

  void update(const std::string& what, std::int64_t done, std::int64_t total,
              const std::string& note = "") {
    if (!tty_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (what != what_) {  // a new phase: its own clock
      what_ = what;
      start_ = now;
    } else if (done < total && now - drawn_ < std::chrono::milliseconds(100)) {
      return;
    }
    drawn_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
    std::string line = "  " + what + " " + std::to_string(done) + "/" + std::to_string(total);
    if (rate > 0) {
      char per_second[32];
      std::snprintf(per_second, sizeof per_second, rate < 10 ? "%.1f" : "%.0f", rate);
      line += std::string(", ") + per_second + "/s, ETA " +
              duration(static_cast<double>(total - done) / rate);
    }
    if (!note.empty()) line += ", " + note;
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    shown_ = true;
  }

  /// Starts `what`'s clock without drawing, so that its first line has a rate.
  void start(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    what_ = what;
    start_ = std::chrono::steady_clock::now();
  }

  void clear() {
    if (!tty_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (shown_) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

  /// "45s", "3m05s", "2h07m".
  static std::string duration(double s) {
    const long long t = s < 0 ? 0 : static_cast<long long>(s + 0.5);
    char buffer[32];
    if (t < 60) {
      std::snprintf(buffer, sizeof buffer, "%llds", t);
    } else if (t < 3600) {
      std::snprintf(buffer, sizeof buffer, "%lldm%02llds", t / 60, t % 60);
    } else {
      std::snprintf(buffer, sizeof buffer, "%lldh%02lldm", t / 3600, t % 3600 / 60);
    }
    return buffer;
  }

 private:
  bool tty_;
  std::mutex mutex_;
  std::string what_;
  std::chrono::steady_clock::time_point start_, drawn_;
  bool shown_ = false;
};

/// The baseline's cases, then the mutants (with the last one's id and status).
class CampaignProgress : public mutants::CampaignListener {
 public:
  explicit CampaignProgress(bool tty) : line_(tty) {}
  void onBaselineProgress(std::int64_t done, std::int64_t total) override {
    line_.update("baseline: cases", done, total);
  }
  void onMutant(const mutants::MutantOutcome& o, int done, int total) override {
    line_.update("mutants", done, total,
                 std::string(o.mutant->id()) + " " + std::string(mutants::statusName(o.status)));
    if (done == total) line_.clear();
  }

 private:
  RateLine line_;
};

}  // namespace seam::tools
