#include "seam/reports/mutate_view.h"

#include <cstdio>
#include <map>

#include "seam/reports/table.h"
#include "seam/reports/verdict_view.h"

namespace seam::reports {

void StatusCounts::add(std::string_view status) {
  const auto s = mutants::parseStatus(status);
  if (!s) return;
  switch (*s) {
    case mutants::MutantStatus::kKilled:
      ++killed;
      break;
    case mutants::MutantStatus::kSurvived:
      ++survived;
      break;
    case mutants::MutantStatus::kEquivalent:
      ++equivalent;
      break;
    case mutants::MutantStatus::kNotCovered:
      ++not_covered;
      break;
    case mutants::MutantStatus::kPlannerError:
      ++planner_errors;
      break;
  }
}

StatusCounts countStatuses(const mutants::CampaignResult& r) {
  StatusCounts c;
  for (const auto& o : r.outcomes) c.add(mutants::statusName(o.status));
  return c;
}

std::string scoreLine(const StatusCounts& c) {
  const int denom = c.killed + c.survived;
  char pct[32];
  if (denom > 0) {
    std::snprintf(pct, sizeof pct, "%.1f%%", 100.0 * c.killed / denom);
  } else {
    std::snprintf(pct, sizeof pct, "no scored mutant");
  }
  const int reached = c.total() - c.not_covered;
  return "mutation score: " + std::to_string(c.killed) + "/" + std::to_string(denom) + " (" + pct +
         "), " + std::to_string(c.survived) + " survived; coverage: " + std::to_string(reached) +
         "/" + std::to_string(c.total()) + " reached (" + std::to_string(c.not_covered) +
         " not covered), " + std::to_string(c.equivalent) + " equivalent, " +
         std::to_string(c.planner_errors) + " planner errors";
}

std::string mutationScoreLine(const mutants::CampaignResult& r) {
  return scoreLine(countStatuses(r));
}

std::string renderCampaign(const mutants::CampaignSpec& spec, const mutants::CampaignResult& r,
                           bool verbose) {
  std::string worlds;
  for (int w : spec.worlds) worlds += (worlds.empty() ? "" : ",") + std::to_string(w);
  std::string out = "campaign: " + std::to_string(spec.models.size()) + " models, worlds " +
                    worlds + ", policy " + std::string(policyName(spec.policy)) + ": " +
                    std::to_string(r.cases) + " cases (" + std::to_string(r.baseline_refused) +
                    " refused by the engine, left out)\n";
  out +=
      "the score: of the planted planner bugs (mutants) whose site some case reached, the share "
      "the properties catch; a survivor is a bug they miss, a not-covered mutant one this space "
      "never reaches (widen --world or --model; docs/mutants.md)\n";
  if (r.baseline_engine_findings > 0) {
    out += std::to_string(r.baseline_engine_findings) +
           " cases left out as engine findings: the engine's own plan violates a property there "
           "(seam sweep lists them)\n";
  }
  if (!r.baseline_holds) {
    out +=
        "BASELINE FAILS: the unmutated policy violates a property, so no kill would mean "
        "anything.\n";
    if (r.baseline_violation) out += "  " + describeViolation(*r.baseline_violation) + "\n";
    if (r.baseline_case)
      out += "  reproduce: " + reproduceCommand(*r.baseline_case, policyName(spec.policy)) + "\n";
    return out;
  }
  out += "baseline: every property holds on all " + std::to_string(r.cases) + " cases\n";
  // Only a resumed run says how it came by its baseline.
  if (r.baseline_reused) {
    out +=
        "resumed: the baseline stored by the interrupted run was reused (the same space, seam "
        "version and commit): its cases were not checked again\n";
  } else if (!r.baseline_not_reused.empty()) {
    out += "resumed: the baseline stored by the interrupted run was not reused (" +
           r.baseline_not_reused + "): checked again\n";
  }
  out += "\n";

  // Per operator kind.
  struct Tally {
    StatusCounts counts;
    std::map<std::string, int> by_property;
  };
  std::map<std::string, Tally> kinds;
  for (const auto& o : r.outcomes) {
    Tally& t = kinds[std::string(mutants::kindName(o.mutant->kind()))];
    t.counts.add(mutants::statusName(o.status));
    if (o.status == mutants::MutantStatus::kKilled && o.kill_violation)
      ++t.by_property[std::string(propertyName(o.kill_violation->property))];
  }
  Table k({"kind", "mutants", "killed", "survived", "equivalent", "not covered", "planner error",
           "killed first by"},
          {false, true, true, true, true, true, true, false});
  for (const auto& [name, t] : kinds) {
    std::string props;
    for (const auto& [p, n] : t.by_property)
      props += (props.empty() ? "" : ", ") + p + " " + std::to_string(n);
    const StatusCounts& c = t.counts;
    k.addRow({name, std::to_string(c.total()), std::to_string(c.killed), std::to_string(c.survived),
              std::to_string(c.equivalent), std::to_string(c.not_covered),
              std::to_string(c.planner_errors), props});
  }
  out += k.render() + "\n";

  Table m({"mutant", "status", "cases tried", "reached", "first kill", "site", "property", "class"},
          {false, false, true, true, true, true, false, false});
  for (const auto& o : r.outcomes) {
    const bool killed = o.status == mutants::MutantStatus::kKilled;
    m.addRow(
        {std::string(o.mutant->id()), std::string(mutants::statusName(o.status)),
         std::to_string(o.cases_run), std::to_string(o.applied),
         killed ? "#" + std::to_string(o.kill_index) : "-",
         killed && o.mutant->kind() == mutants::MutantKind::kPlan ? std::to_string(o.kill_site)
                                                                  : "-",
         killed && o.kill_violation ? std::string(propertyName(o.kill_violation->property)) : "-",
         killed && o.kill_violation ? std::string(violationClassName(o.kill_violation->cls))
                                    : "-"});
  }
  out += m.render();
  for (const auto& o : r.outcomes) {
    const std::string id(o.mutant->id());
    if (o.status == mutants::MutantStatus::kKilled) {
      out += "killed " + id + ": replay: " + o.kill_reproduce + "\n";
    } else if (o.status == mutants::MutantStatus::kSurvived) {
      out += "SURVIVOR " + id + " (" + std::string(o.mutant->description()) + "): " + o.argument +
             "\n";
    } else {
      out += std::string(mutants::statusName(o.status)) + " " + id + ": " + o.argument + "\n";
    }
  }
  // Wall times differ from run to run (and a resumed run recalls its decided
  // mutants with none): each on a line of its own, all starting "took ".
  for (const auto& o : r.outcomes) {
    if (!verbose) break;
    char took[32];
    std::snprintf(took, sizeof took, "%.2f", o.seconds);
    out += "took " + std::string(o.mutant->id()) + ": " + took + " s\n";
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", r.seconds);
  out += "campaign took " + std::string(secs) + " s (site seed " + std::to_string(r.seed) + ")\n";
  out += mutationScoreLine(r) + "\n";
  return out;
}

}  // namespace seam::reports
