#include <ctime>

#include "report_data.h"
#include "seam/properties/engine_finding.h"
#include "seam/sim/base/status.h"
#include "seam/sim/replay/bit_identity.h"

namespace seam::reports {

void OutcomeCounts::add(const OutcomeCounts& o) {
  holds += o.holds;
  violated += o.violated;
  findings += o.findings;
  not_modelled += o.not_modelled;
  refused += o.refused;
}

std::string when(std::int64_t ms) {
  if (ms == 0) return "unfinished";
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&t));
  return buf;
}

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::kHolds:
      return "holds";
    case Verdict::kFindings:
      return "engine findings";
    case Verdict::kFails:
      return "fails";
    case Verdict::kNoCases:
      return "no verdict";
  }
  return "?";
}

std::string countsLine(const OutcomeCounts& c) {
  std::string s = grouped(c.total()) + (c.total() == 1 ? " case: " : " cases: ") +
                  grouped(c.holds) + " hold, " + grouped(c.violated) + " violated";
  if (c.violated > 0) s += " (" + grouped(c.findings) + " engine findings)";
  return s + ", " + grouped(c.not_modelled) + " not modelled, " + grouped(c.refused) +
         " refused by the engine";
}

namespace {

/// The value of `key=` in a run's arguments, or "".
std::string argument(const std::string& args, const std::string& key) {
  const auto at = args.find(key + "=");
  if (at == std::string::npos || (at > 0 && args[at - 1] != ' ')) return "";
  const auto start = at + key.size() + 1;
  return args.substr(start, args.find(' ', start) - start);
}

void addCase(RunData& r, const CaseRecord& c, const std::string& failure) {
  OutcomeCounts one;
  if (c.outcome == CaseOutcome::kHolds) {
    one.holds = 1;
  } else if (c.outcome == CaseOutcome::kRefused) {
    (isNotModelled(c.refusal) ? one.not_modelled : one.refused) = 1;
  } else {
    one.violated = 1;
    // A diff's violated rows carry their reason in `refusal`, not a verdict.
    const std::string& words = failure.empty() ? c.refusal : failure;
    const auto [violation, call] = properties::splitFailureText(words);
    if (!call.empty()) {
      one.findings = 1;
      FindingGroup& f = r.findings[std::string(call)];
      if (f.cases++ == 0) {
        f.first_violation = std::string(violation);
        f.first_reproduce = c.reproduce;
      }
    } else if (static_cast<int>(r.failures.size()) < kMaxFailures) {
      r.failures.push_back({c.index, std::string(violation), c.reproduce});
    } else {
      ++r.more_failures;
    }
  }
  r.counts.add(one);
  r.by_group[c.group].add(one);
  if (r.run.command == "sweep") r.by_model_config[{c.group, c.config}].add(one);
}

void judge(RunData& r) {
  const std::int64_t plain = r.counts.violated - r.counts.findings;
  std::vector<std::string> why;
  if (plain > 0) why.push_back(grouped(plain) + (plain == 1 ? " violation" : " violations"));
  if (r.statuses.survived > 0) why.push_back(std::to_string(r.statuses.survived) + " survived");
  if (r.refuted > 0) why.push_back(std::to_string(r.refuted) + " predictions refuted");
  if (r.engine.declared_disagreements > 0)
    why.push_back(grouped(r.engine.declared_disagreements) + " of " + grouped(r.engine.cases) +
                  " cases differ from what " + r.engine.engine + " ran");
  if (!why.empty()) {
    r.verdict = Verdict::kFails;
    r.verdict_text = "fails: ";
    for (std::size_t i = 0; i < why.size(); ++i) r.verdict_text += (i ? ", " : "") + why[i];
  } else if (r.counts.findings > 0) {
    r.verdict = Verdict::kFindings;
    r.verdict_text = "engine findings: " + grouped(r.counts.findings) +
                     (r.counts.findings == 1 ? " case" : " cases") +
                     " where SGLang's own plans violate a property";
  } else if (r.counts.total() > 0 || r.statuses.total() > 0 || !r.equivalences.empty() ||
             r.prop_cases > 0 || r.engine.cases > 0) {
    r.verdict = Verdict::kHolds;
    r.verdict_text = "holds";
  } else {
    r.verdict = Verdict::kNoCases;
    r.verdict_text = r.timings.empty() ? "nothing stored" : "timings only";
  }
  if (r.run.finished_ms == 0) r.verdict_text += " (unfinished: still running or interrupted)";
}

}  // namespace

Expected<RunData> readRunData(Store& store, const RunRecord& run) {
  RunData r;
  r.run = run;
  auto cases = store.cases(run.id);
  if (!cases) return cases.status();
  auto failures = store.firstFailures(run.id);
  if (!failures) return failures.status();
  std::map<std::int64_t, std::string> text;
  for (auto& [idx, v] : *failures) text[idx] = std::move(v.text);
  static const std::string kNone;
  for (const CaseRecord& c : *cases) {
    const auto it = text.find(c.index);
    addCase(r, c, it == text.end() ? kNone : it->second);
  }
  if (run.command == "gpu bench") r.bench_cases = std::move(*cases);
  auto mutants = store.mutants(run.id);
  if (!mutants) return mutants.status();
  r.mutants = std::move(*mutants);
  for (const MutantRecord& m : r.mutants) r.statuses.add(m.status);
  auto kills = store.kills(run.id);
  if (!kills) return kills.status();
  for (KillRecord& k : *kills) r.kill_of[k.mutant_id] = std::move(k);
  auto eq = store.equivalences(run.id);
  if (!eq) return eq.status();
  r.equivalences = std::move(*eq);
  for (const EquivalenceRecord& e : r.equivalences) {
    if (judgePrediction(e.predicted_identical, e.observed_identical) == PredictionVerdict::kRefuted)
      ++r.refuted;
  }
  auto t = store.timings(run.id);
  if (!t) return t.status();
  r.timings = std::move(*t);
  auto engine_cases = store.engineCases(run.id);
  if (!engine_cases) return engine_cases.status();
  r.engine = foldEngineCases(*engine_cases);
  // A passing prop run stores no case: its arguments say how many it tried.
  if (run.command == "prop" && r.counts.total() == 0 && run.finished_ms != 0)
    r.prop_cases = std::atoll(argument(run.args, "cases").c_str());
  judge(r);
  return r;
}

void renderRunVerdict(Doc& d, const RunData& r) {
  d.heading(2, "Run " + std::to_string(r.run.id) + ": seam " + r.run.command + ": " +
                   verdictName(r.verdict));
  std::string what;
  if (r.counts.total() > 0) what = countsLine(r.counts) + ". ";
  if (r.prop_cases > 0) what += grouped(r.prop_cases) + " generated cases, every property held. ";
  if (r.statuses.total() > 0) what += scoreLine(r.statuses) + ". ";
  if (r.engine.cases > 0)
    what += grouped(r.engine.cases) + " cases run on " + r.engine.engine + ", " +
            grouped(r.engine.declared_disagreements) + " not bearing out the declared plan, " +
            grouped(r.engine.declared_unjudged) + " not judged. ";
  if (!r.equivalences.empty()) {
    what += std::to_string(r.equivalences.size()) +
            (r.equivalences.size() == 1 ? " GPU comparison, " : " GPU comparisons, ") +
            std::to_string(r.refuted) + " predictions refuted. ";
  }
  d.lead("Verdict: " + r.verdict_text + ".", what);
  d.para("Started " + when(r.run.started_ms) + ", finished " + when(r.run.finished_ms) +
         (r.run.host.empty() ? "" : ", on " + r.run.host) + "; " + r.run.version +
         (r.run.gpu.empty() ? "" : "; " + r.run.gpu) + ". Arguments:");
  d.code(ellipsis(r.run.args, 4000));
  for (const auto& [call, f] : r.findings) {
    d.item(grouped(f.cases) + (f.cases == 1 ? " case" : " cases") + ": SGLang calls " + call +
               ". First: " + f.first_violation,
           f.first_reproduce);
  }
  for (const Failure& f : r.failures) {
    d.item("case #" + std::to_string(f.index) + ": " + ellipsis(f.violation, 600), f.reproduce);
  }
  if (r.more_failures > 0) {
    d.item("and " + grouped(r.more_failures) + " more violated cases (the store has them all)");
  }
  for (const MutantRecord& m : r.mutants) {
    if (m.status == "survived") d.item("survived: " + m.id + ": " + ellipsis(m.argument, 600));
  }
  for (const EquivalenceRecord& e : r.equivalences) {
    if (judgePrediction(e.predicted_identical, e.observed_identical) ==
        PredictionVerdict::kRefuted) {
      d.item("refuted: case #" + std::to_string(e.case_index) + " " + e.plan_a + " vs " + e.plan_b +
             " predicted bit-identical, max |diff| " + std::to_string(e.max_difference));
    }
  }
  d.endList();
}

}  // namespace seam::reports
