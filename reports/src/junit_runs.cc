// What a sweep, a prop run and a campaign write as JUnit (junit.h): grouped
// so that a CI's reporter shows a few hundred stable testcases, not one per
// case, with refusals as counts.
#include <algorithm>
#include <map>

#include "seam/properties/engine_finding.h"
#include "seam/reports/junit.h"
#include "seam/sim/replay/ledger.h"

namespace seam::reports {

namespace {

/// Reproduce lines a failing testcase lists; the rest are in the store.
constexpr std::size_t kLinesPerFailure = 10;
/// Refusal reasons a model's suite counts one by one; the rest are summed.
constexpr std::size_t kReasonsPerSuite = 10;

std::string headline(int property, const std::string& violation_class) {
  return std::string(propertyName(static_cast<Property>(property))) + " violated (" +
         violation_class + ")";
}

/// The cases of one model x parallel configuration.
struct Group {
  std::string model, config;
  std::int64_t cases = 0, refused = 0, not_modelled = 0, violated = 0;
  std::vector<std::string> properties;  ///< distinct failure headlines, first seen first
  std::vector<std::string> lines;       ///< the first kLinesPerFailure reproduce lines
  std::string first_failure;            ///< the first violation in words
};

/// A model's counts over its groups, for its suite's properties.
struct ModelCounts {
  std::int64_t cases = 0, refused = 0, not_modelled = 0, violated = 0, configs_refused = 0;
  std::map<std::string, std::int64_t> reasons;
};

std::string caseCounts(const Group& g) {
  return std::to_string(g.cases) + " cases: " + std::to_string(g.cases - g.refused) + " checked, " +
         std::to_string(g.refused) + " refused by the engine (" + std::to_string(g.not_modelled) +
         " of them not modelled by seam), " + std::to_string(g.violated) + " violated";
}

std::vector<std::pair<std::string, std::string>> modelProperties(const ModelCounts& m) {
  std::vector<std::pair<std::string, std::string>> out = {
      {"cases", std::to_string(m.cases)},
      {"checked", std::to_string(m.cases - m.refused)},
      {"refused", std::to_string(m.refused)},
      {"not_modelled", std::to_string(m.not_modelled)},
      {"violated", std::to_string(m.violated)},
      {"configurations_refused", std::to_string(m.configs_refused)}};
  std::vector<std::pair<std::string, std::int64_t>> reasons(m.reasons.begin(), m.reasons.end());
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::int64_t rest = 0;
  for (std::size_t i = 0; i < reasons.size(); ++i) {
    if (i < kReasonsPerSuite) {
      out.emplace_back("refused: " + reasons[i].first, std::to_string(reasons[i].second));
    } else {
      rest += reasons[i].second;
    }
  }
  if (rest > 0) out.emplace_back("refused: other reasons", std::to_string(rest));
  return out;
}

/// Worker seconds per case of each model this process ran (0 when it ran none).
std::map<std::string, double> secondsPerCase(const properties::SweepResult& live) {
  std::map<std::string, double> out;
  for (const properties::ModelTally& m : live.per_model) {
    out[m.model] = m.run_here > 0 ? m.seconds / static_cast<double>(m.run_here) : 0.0;
  }
  return out;
}

}  // namespace

Status writeSweepJunit(Store& store, const RunRecord& run, const properties::SweepResult& live,
                       const std::string& path) {
  auto failures = store.firstFailures(run.id);
  if (!failures) return failures.status();
  std::map<std::int64_t, VerdictRecord> failure_of(failures->begin(), failures->end());

  std::vector<Group> groups;
  std::map<std::pair<std::string, std::string>, std::size_t> group_of;
  std::vector<std::string> models;
  std::map<std::string, ModelCounts> counts;
  // Row by row: a sweep of millions of cases holds one Group per model x
  // configuration. Its consecutive rows share one, so the last is looked up
  // first; the map keeps any order of rows right.
  std::size_t last = 0;
  const Status read = store.eachCase(run.id, [&](CaseRecord&& c) {
    if (groups.empty() || groups[last].model != c.group || groups[last].config != c.config) {
      auto [it, added] = group_of.try_emplace({c.group, c.config}, groups.size());
      if (added) groups.push_back(Group{c.group, c.config});
      last = it->second;
    }
    Group& g = groups[last];
    ModelCounts& m = counts[c.group];
    if (m.cases == 0) models.push_back(c.group);
    ++g.cases;
    ++m.cases;
    if (c.outcome == CaseOutcome::kRefused) {
      ++g.refused;
      ++m.refused;
      ++m.reasons[c.refusal];
      if (isNotModelled(c.refusal)) {
        ++g.not_modelled;
        ++m.not_modelled;
      }
    } else if (c.outcome == CaseOutcome::kViolated) {
      ++g.violated;
      ++m.violated;
      const VerdictRecord& v = failure_of[c.index];
      // An engine finding is the engine's own plan violating a property: said so.
      const bool engine = !properties::splitFailureText(v.text).second.empty();
      const std::string h =
          headline(v.property, v.violation_class) + (engine ? ", an engine finding" : "");
      if (std::find(g.properties.begin(), g.properties.end(), h) == g.properties.end())
        g.properties.push_back(h);
      if (g.first_failure.empty()) g.first_failure = v.text;
      if (g.lines.size() < kLinesPerFailure) g.lines.push_back(std::move(c.reproduce));
    }
    return Status::ok();
  });
  if (!read) return read;

  JunitDoc doc;
  doc.name = "sweep";
  doc.started_ms = run.started_ms;
  doc.hostname = run.host;
  const std::map<std::string, double> rate = secondsPerCase(live);
  for (const Group& g : groups) {
    // A configuration the engine refuses outright tests nothing: a count, not a testcase.
    if (g.refused == g.cases) {
      ++counts[g.model].configs_refused;
      continue;
    }
    JunitCase j;
    j.suite = "sweep." + g.model;
    j.classname = "sweep." + g.model;
    j.name = g.config;
    const auto r = rate.find(g.model);
    j.seconds = r == rate.end() ? 0.0 : r->second * static_cast<double>(g.cases);
    j.output = caseCounts(g);
    if (g.violated > 0) {
      j.failed = true;
      for (const std::string& p : g.properties) j.message += (j.message.empty() ? "" : "; ") + p;
      for (const std::string& line : g.lines) j.body += line + "\n";
      if (g.violated > static_cast<std::int64_t>(g.lines.size())) {
        j.body += "(" + std::to_string(g.violated - static_cast<std::int64_t>(g.lines.size())) +
                  " more violating cases: the store's run " + std::to_string(run.id) + ")\n";
      }
      j.output += "\nfirst violation: " + g.first_failure;
    }
    doc.cases.push_back(std::move(j));
  }
  for (const std::string& m : models) {
    doc.suites.push_back({"sweep." + m, modelProperties(counts[m])});
  }
  return writeJunit(path, doc);
}

Status writePropJunit(const properties::PropSpec& spec, const properties::PropResult& result,
                      const std::string& path) {
  JunitDoc doc;
  doc.name = "prop";
  const std::string decision = properties::decisionList(spec.schema);
  doc.suites.push_back({"prop",
                        {{"rc_params", result.rc_params},
                         {"seed", std::to_string(spec.seed)},
                         {"cases", std::to_string(spec.cases)},
                         {"world", spec.world == 0 ? "generated" : std::to_string(spec.world)},
                         {"max_layers", std::to_string(spec.max_layers)},
                         {"decision", decision},
                         {"cases_run", std::to_string(result.cases_run)},
                         {"refused", std::to_string(result.refused)}}});
  JunitCase j;
  j.classname = "prop";
  // The name is the property tested: no seed or count, which change between runs.
  j.name = "every generated case satisfies properties 1-6, 8 and 9" +
           (decision == "none" ? std::string() : " with --decision " + decision);
  j.seconds = result.seconds;
  j.output = std::to_string(result.cases_run) + " cases (" + std::to_string(result.refused) +
             " refused by the engine), RC_PARAMS=\"" + result.rc_params + "\"";
  if (!result.passed) {
    j.failed = true;
    j.message = result.violation ? headline(static_cast<int>(result.violation->property),
                                            std::string(violationClassName(result.violation->cls)))
                                 : result.failure;
    j.body = result.reproduce.empty() ? result.failure : result.reproduce;
    j.output += "\n" + result.failure;
  }
  doc.cases.push_back(std::move(j));
  return writeJunit(path, doc);
}

Status writeCampaignJunit(const mutants::CampaignResult& result, const std::string& path) {
  JunitDoc doc;
  doc.name = "mutate";
  doc.suites.push_back(
      {"mutate",
       {{"cases", std::to_string(result.cases)},
        {"baseline_refused", std::to_string(result.baseline_refused)},
        {"baseline_engine_findings", std::to_string(result.baseline_engine_findings)},
        {"killed", std::to_string(result.killed())},
        {"survived", std::to_string(result.survived())},
        {"seed", std::to_string(result.seed)}}});
  // The baseline first: the campaign's time not spent on a mutant.
  JunitCase base;
  base.classname = "mutate.baseline";
  base.name = "every case of the space holds with no mutant";
  double mutant_seconds = 0;
  for (const auto& o : result.outcomes) mutant_seconds += o.seconds;
  base.seconds = std::max(0.0, result.seconds - mutant_seconds);
  base.output = std::to_string(result.cases) + " cases checked";
  if (!result.baseline_holds) {
    base.failed = true;
    base.message = result.baseline_violation
                       ? headline(static_cast<int>(result.baseline_violation->property),
                                  std::string(violationClassName(result.baseline_violation->cls)))
                       : "the baseline fails";
    base.body = result.baseline_reproduce;
  }
  doc.cases.push_back(std::move(base));
  for (const auto& o : result.outcomes) {
    JunitCase j;
    j.classname = "mutate." + std::string(mutants::kindName(o.mutant->kind()));
    j.name = std::string(o.mutant->id());
    j.seconds = o.seconds;
    // Survivors fail; mutants left out of the score (equivalent, not
    // covered, planner error) are skipped with their status; a kill passes
    // and names the case that killed it and the line that replays it.
    j.failed = o.status == mutants::MutantStatus::kSurvived;
    j.skipped = !j.failed && o.status != mutants::MutantStatus::kKilled;
    if (o.status == mutants::MutantStatus::kKilled) {
      std::string killer = "case #" + std::to_string(o.kill_index);
      if (o.kill_case) {
        killer += " (" + o.kill_case->model.name + "; " + o.kill_case->config.describe() + "; " +
                  o.kill_case->flags.describe() + "; " + o.kill_case->batch.describe() + ")";
      }
      const std::string by = o.kill_violation
                                 ? headline(static_cast<int>(o.kill_violation->property),
                                            std::string(violationClassName(o.kill_violation->cls)))
                                 : std::string("a violation");
      j.output = "killed by " + killer + ": " + by + "\nreplay: " + o.kill_reproduce;
    } else if (j.failed) {
      j.message = "survived: every property holds where its plans differ";
      j.body = o.argument;
    } else {
      j.message = std::string(mutants::statusName(o.status)) + ": " + o.argument;
    }
    doc.cases.push_back(std::move(j));
  }
  return writeJunit(path, doc);
}

}  // namespace seam::reports
