#include "seam/reports/sweep_view.h"

#include <algorithm>
#include <cstdio>

#include "seam/properties/engine_finding.h"
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
  // The rate counts the cases this process ran, not those a resumed run did.
  std::int64_t findings = 0;
  for (const auto& [call, n] : r.engine_findings) findings += n;
  std::string engine;
  if (findings > 0) {
    engine = " (" + std::to_string(findings) + " engine findings)";
  }
  return std::to_string(r.cases) + " cases, " + std::to_string(r.violated) + " violations" +
         engine + ", " + rate(r.run_here, r.seconds) + " cases/s";
}

std::string renderRefusals(const std::vector<std::pair<std::string, std::int64_t>>& refusals,
                           std::size_t most) {
  std::string out;
  const std::size_t shown = std::min(most, refusals.size());
  for (const bool gap : {false, true}) {
    std::string lines;
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& [why, n] = refusals[i];
      if (isNotModelled(why) == gap) lines += "  " + std::to_string(n) + " x " + why + "\n";
    }
    if (lines.empty()) continue;
    out += gap ? "not modelled (the engine runs these; seam does not model them yet; not counted "
                 "as checked):\n"
               : "refused (the engine refuses these combinations; not counted as checked):\n";
    out += lines;
  }
  if (shown < refusals.size()) {
    std::int64_t cases = 0;
    for (std::size_t i = shown; i < refusals.size(); ++i) cases += refusals[i].second;
    out += "(" + std::to_string(refusals.size() - shown) + " more reasons, " +
           std::to_string(cases) + " cases: --verbose lists them; the store has every case's)\n";
  }
  return out;
}

std::string renderSweep(const properties::SweepSpec& spec, const properties::SweepResult& r,
                        std::size_t most_refusals) {
  std::string out = "sweep: world " + std::to_string(spec.world) + ", policy " +
                    std::string(policyName(spec.policy)) + ", shard " +
                    std::to_string(spec.shard.index) + "/" + std::to_string(spec.shard.count) +
                    ", " + std::to_string(spec.jobs) + " jobs\n";
  // "refused": the engine refuses the combination; "not modelled": the
  // engine runs it, seam does not model it yet. Both are counted apart from
  // the checked cases.
  Table t({"model", "checked", "refused", "not modelled", "violated", "cases/s", "note"},
          {false, true, true, true, true, true, false});
  for (const auto& m : r.per_model) {
    t.addRow({m.model, std::to_string(m.checked), std::to_string(m.refused - m.not_modelled),
              std::to_string(m.not_modelled), std::to_string(m.violated),
              m.why_not.empty() ? rate(m.run_here, m.seconds) : "-",
              m.why_not.empty() ? "" : "not modelled: " + m.why_not});
  }
  out += t.render();
  out += renderRefusals(r.refusals, most_refusals);
  for (const auto& f : r.failures) {
    // An engine finding: the declared policy, which models SGLang's code as
    // it runs, violates a property, so the engine does (engine_finding.h).
    const auto [violation, call] = properties::splitFailureText(f.text);
    out += (call.empty() ? "FAIL case #" : "ENGINE FINDING case #") + std::to_string(f.index) +
           ": " + std::string(violation) + "\n";
    if (!call.empty()) out += "  SGLang calls " + std::string(call) + "\n";
    out += "  reproduce: " + f.reproduce + "\n";
  }
  if (!r.engine_findings.empty()) {
    out += "engine findings (the engine's own plan violates a property), by SGLang call:\n";
    for (const auto& [call, n] : r.engine_findings)
      out += "  " + std::to_string(n) + " x " + call + "\n";
  }
  if (r.violated > static_cast<std::int64_t>(r.failures.size())) {
    out += "(" + std::to_string(r.violated - static_cast<std::int64_t>(r.failures.size())) +
           " more failing cases not listed)\n";
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", r.seconds);
  out += "checked " + std::to_string(r.checked) + ", refused " +
         std::to_string(r.refused - r.not_modelled) + ", not modelled " +
         std::to_string(r.not_modelled);
  if (r.run_here != r.cases)
    out += " (" + std::to_string(r.cases - r.run_here) +
           " of them by the interrupted run resumed here)";
  out += "; this process ran " + std::to_string(r.run_here) + " in " + secs + " s\n";
  out += sweepSummaryLine(r) + "\n";
  return out;
}

}  // namespace seam::reports
