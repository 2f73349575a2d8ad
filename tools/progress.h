// The progress lines `seam sweep` and `seam mutate` rewrite in place on a
// TTY (stderr) while they run; nothing when stderr is not a terminal
// (their callers hand them over only when isatty(2)).
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "seam/mutants/campaign.h"
#include "seam/properties/sweep.h"

namespace seam::tools {

/// "  N/M cases  R cases/s  ETA T  model", rewritten at most five times a
/// second (and at the end, when it clears itself).
class ProgressLine : public properties::SweepListener {
 public:
  void onModel(const std::string& model) override { model_ = model; }
  void onProgress(std::int64_t done, std::int64_t total) override {
    const auto now = std::chrono::steady_clock::now();
    if (done != total && now - shown_ < std::chrono::milliseconds(200)) return;
    shown_ = now;
    if (done == total) {
      std::fprintf(stderr, "\r\033[K");
      std::fflush(stderr);
      return;
    }
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
    std::string eta = "?";
    if (rate > 0) {
      const long long left = std::llround(static_cast<double>(total - done) / rate);
      eta = left >= 60 ? std::to_string(left / 60) + "m" + std::to_string(left % 60) + "s"
                       : std::to_string(left) + "s";
    }
    std::fprintf(stderr, "\r\033[K  %lld/%lld cases  %.0f cases/s  ETA %s  %s",
                 static_cast<long long>(done), static_cast<long long>(total), rate, eta.c_str(),
                 model_.c_str());
    std::fflush(stderr);
  }

 private:
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point shown_{};
  std::string model_;
};

/// The baseline, then "  N/M mutants (ID STATUS)" per decided mutant.
class CampaignProgress : public mutants::CampaignListener {
 public:
  explicit CampaignProgress(bool tty) : tty_(tty) {}
  void onBaseline(std::int64_t cases, bool holds) override {
    if (tty_)
      std::fprintf(stderr, "\r\033[K  baseline: %lld cases, %s", static_cast<long long>(cases),
                   holds ? "ok" : "FAILS");
  }
  void onMutant(const mutants::MutantOutcome& o, int done, int total) override {
    if (tty_) {
      std::fprintf(stderr, "\r\033[K  %d/%d mutants (%s %s)", done, total,
                   std::string(o.mutant->id()).c_str(),
                   std::string(mutants::statusName(o.status)).c_str());
      if (done == total) std::fprintf(stderr, "\r\033[K");
    }
  }

 private:
  bool tty_;
};

}  // namespace seam::tools
