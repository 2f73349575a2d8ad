// The progress line `seam sweep` rewrites in place on a TTY (stderr) while
// it runs; nothing when stderr is not a terminal (its caller hands it over
// only when isatty(2)). Mutate, diff and prop: run_progress.h.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

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

}  // namespace seam::tools
