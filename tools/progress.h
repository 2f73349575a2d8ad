// The progress line `seam sweep` rewrites in place on a TTY (stderr) while
// it runs; nothing when stderr is not a terminal (mutate, diff and prop:
// run_progress.h).
#pragma once

#include <cstdio>
#include <string>

#include "seam/properties/sweep.h"

namespace seam::tools {

/// "  N/M cases", every hundredth of the way.
class ProgressLine : public properties::SweepListener {
 public:
  void onProgress(std::int64_t done, std::int64_t total) override {
    if (done - last_ < total / 100 && done != total) return;
    last_ = done;
    std::fprintf(stderr, "\r  %lld/%lld cases", static_cast<long long>(done),
                 static_cast<long long>(total));
    if (done == total) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  std::int64_t last_ = 0;
};

}  // namespace seam::tools
