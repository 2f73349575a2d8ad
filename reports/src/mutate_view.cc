#include "seam/reports/mutate_view.h"

#include <cstdio>
#include <map>

#include "seam/reports/table.h"
#include "seam/reports/verdict_view.h"

namespace seam::reports {

std::string mutationScoreLine(const mutants::CampaignResult& r) {
  const int all = static_cast<int>(r.outcomes.size());
  const int eq = r.equivalent();
  const int denom = all - eq;
  const int killed = r.killed();
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f", denom > 0 ? 100.0 * killed / denom : 100.0);
  return "mutation score: " + std::to_string(killed) + "/" + std::to_string(denom) + " (" + pct +
         "%), " + std::to_string(r.survived()) + " survivors, " + std::to_string(eq) +
         " equivalent";
}

std::string renderCampaign(const mutants::CampaignSpec& spec, const mutants::CampaignResult& r) {
  std::string worlds;
  for (int w : spec.worlds) worlds += (worlds.empty() ? "" : ",") + std::to_string(w);
  std::string out = "campaign: " + std::to_string(spec.models.size()) + " models, worlds " +
                    worlds + ", policy " + std::string(policyName(spec.policy)) + ": " +
                    std::to_string(r.cases) + " cases (" + std::to_string(r.baseline_refused) +
                    " refused by the engine, left out)\n";
  if (!r.baseline_holds) {
    out +=
        "BASELINE FAILS: the unmutated policy violates a property, so no kill would mean "
        "anything.\n";
    if (r.baseline_violation) out += "  " + describeViolation(*r.baseline_violation) + "\n";
    if (r.baseline_case)
      out += "  reproduce: " + reproduceCommand(*r.baseline_case, policyName(spec.policy)) + "\n";
    return out;
  }
  out += "baseline: every property holds on all " + std::to_string(r.cases) + " cases\n\n";

  // Per operator kind.
  struct Tally {
    int mutants = 0, killed = 0, survived = 0, equivalent = 0;
    std::map<std::string, int> by_property;
  };
  std::map<std::string, Tally> kinds;
  for (const auto& o : r.outcomes) {
    Tally& t = kinds[std::string(mutants::kindName(o.mutant->kind()))];
    ++t.mutants;
    if (o.status == mutants::MutantStatus::kKilled) {
      ++t.killed;
      if (o.kill_violation) ++t.by_property[std::string(propertyName(o.kill_violation->property))];
    }
    t.survived += o.status == mutants::MutantStatus::kSurvived;
    t.equivalent += o.status == mutants::MutantStatus::kEquivalent;
  }
  Table k({"kind", "mutants", "killed", "survived", "equivalent", "killed first by"},
          {false, true, true, true, true, false});
  for (const auto& [name, t] : kinds) {
    std::string props;
    for (const auto& [p, n] : t.by_property)
      props += (props.empty() ? "" : ", ") + p + " " + std::to_string(n);
    k.addRow({name, std::to_string(t.mutants), std::to_string(t.killed), std::to_string(t.survived),
              std::to_string(t.equivalent), props});
  }
  out += k.render() + "\n";

  Table m({"mutant", "status", "cases run", "first kill", "property", "class"},
          {false, false, true, true, false, false});
  for (const auto& o : r.outcomes) {
    const bool killed = o.status == mutants::MutantStatus::kKilled;
    m.addRow(
        {std::string(o.mutant->id()), std::string(mutants::statusName(o.status)),
         std::to_string(o.cases_run), killed ? "#" + std::to_string(o.kill_index) : "-",
         killed && o.kill_violation ? std::string(propertyName(o.kill_violation->property)) : "-",
         killed && o.kill_violation ? std::string(violationClassName(o.kill_violation->cls))
                                    : "-"});
  }
  out += m.render();
  for (const auto& o : r.outcomes) {
    if (o.status == mutants::MutantStatus::kSurvived) {
      out += "SURVIVOR " + std::string(o.mutant->id()) + " (" +
             std::string(o.mutant->description()) + "): " + o.argument + "\n";
    } else if (o.status == mutants::MutantStatus::kEquivalent) {
      out += "equivalent " + std::string(o.mutant->id()) + ": " + o.argument + "\n";
    }
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", r.seconds);
  out += "campaign took " + std::string(secs) + " s\n";
  out += mutationScoreLine(r) + "\n";
  return out;
}

}  // namespace seam::reports
