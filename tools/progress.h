// The progress line `seam sweep` rewrites in place on a TTY (stderr) while
// it runs: run_progress.h's RateLine, as mutate, diff and prop draw it, with
// the model in hand; nothing when stderr is not a terminal (its caller hands
// it over only when isatty(2)).
#pragma once

#include <string>

#include "run_progress.h"
#include "seam/properties/sweep.h"

namespace seam::tools {

/// "  cases N/M, R/s, ETA T, model", cleared at the end.
class ProgressLine : public properties::SweepListener {
 public:
  ProgressLine() { line_.start("cases"); }
  void onModel(const std::string& model) override { model_ = model; }
  void onProgress(std::int64_t done, std::int64_t total) override {
    if (done == total) {
      line_.clear();
      return;
    }
    line_.update("cases", done, total, model_);
  }

 private:
  RateLine line_{true};
  std::string model_;
};

}  // namespace seam::tools
