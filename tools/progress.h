// The progress lines `seam sweep` and `seam mutate` rewrite in place on a
// TTY (stderr) while they run; nothing when stderr is not a terminal.
#pragma once

#include <cstdio>
#include <string>

#include "seam/mutants/campaign.h"
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
