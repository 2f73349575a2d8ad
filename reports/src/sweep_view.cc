#include "seam/reports/sweep_view.h"

#include <cstdio>

#include "seam/reports/table.h"
#include "seam/reports/verdict_view.h"

namespace seam::reports {

namespace {
std::string rate(std::int64_t n, double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", seconds > 0 ? static_cast<double>(n) / seconds : 0.0);
  return buf;
}
}  // namespace

std::string sweepSummaryLine(const properties::SweepResult& r) {
  return std::to_string(r.cases) + " cases, " + std::to_string(r.violated) + " violations, " +
         rate(r.cases, r.seconds) + " cases/s";
}

std::string renderSweep(const properties::SweepSpec& spec, const properties::SweepResult& r) {
  std::string out = "sweep: world " + std::to_string(spec.world) + ", policy " +
                    std::string(policyName(spec.policy)) + ", shard " + std::to_string(spec.shard.index) + "/" +
                    std::to_string(spec.shard.count) + ", " + std::to_string(spec.jobs) + " jobs\n";
  Table t({"model", "checked", "refused", "violated", "cases/s", "note"}, {false, true, true, true, true, false});
  for (const auto& m : r.per_model) {
    t.addRow({m.model, std::to_string(m.checked), std::to_string(m.refused), std::to_string(m.violated),
              m.why_not.empty() ? rate(m.checked + m.refused, m.seconds) : "-",
              m.why_not.empty() ? "" : "not modelled: " + m.why_not});
  }
  out += t.render();
  if (!r.refusals.empty()) {
    out += "refused (the engine refuses these combinations; not counted as checked):\n";
    for (const auto& [why, n] : r.refusals) out += "  " + std::to_string(n) + " x " + why + "\n";
  }
  for (const auto& f : r.failures) {
    out += "FAIL case #" + std::to_string(f.index) + ": " + describeViolation(f.violation) + "\n";
    out += "  reproduce: " + reproduceCommand(f.c, policyName(spec.policy)) + "\n";
  }
  if (r.violated > static_cast<std::int64_t>(r.failures.size())) {
    out += "(" + std::to_string(r.violated - static_cast<std::int64_t>(r.failures.size())) +
           " more failing cases not listed)\n";
  }
  out += "checked " + std::to_string(r.checked) + ", refused " + std::to_string(r.refused) + " in " +
         std::to_string(r.seconds).substr(0, std::to_string(r.seconds).find('.') + 3) + " s\n";
  out += sweepSummaryLine(r) + "\n";
  return out;
}

}  // namespace seam::reports
