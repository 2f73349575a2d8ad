// `seam check`: one case, the verdict of each property and the first
// violation in words. With --mutant ID [--site N] the case is checked with
// that mutant planted (what a campaign's kill line replays). With
// --recording PATH an engine's recording is judged against the case's plan
// (recording_check.h). Exit 0 all hold, 1 a property failed, 2 bad input or
// a combination the engine refuses.
#include "case_options.h"
#include "command.h"
#include "engine_check.h"
#include "recording_check.h"
#include "seam/mutants/mutant.h"
#include "seam/properties/check.h"
#include "seam/properties/engine_finding.h"
#include "seam/reports/training_view.h"
#include "seam/reports/verdict_view.h"

namespace seam::tools {

namespace {

struct CheckOptions {
  CaseOptions c;
  std::string format = "text";
  std::string mutant;
  int site = 0;
  RecordingOptions recording;
  EngineOptions engine;
};

/// The mutant --mutant names, of the case's family; nullptr when none is asked for.
Expected<const mutants::Mutant*> chosenMutant(const CheckOptions& o, bool training) {
  if (o.mutant.empty()) {
    if (o.site != 0) return Status::invalid("--site " + std::to_string(o.site) + " needs --mutant");
    return nullptr;
  }
  const mutants::Mutant* m = mutants::findMutant(o.mutant);
  const auto family = training ? mutants::MutantFamily::kTraining : mutants::MutantFamily::kServing;
  if (m == nullptr || m->family() != family) {
    return Status::invalid("--mutant \"" + o.mutant.substr(0, 64) + "\" is not a " +
                           (training ? "training " : "") + "mutant id (see seam mutate" +
                           (training ? " --family training" : "") + " --list)");
  }
  if (o.site < 0) return Status::invalid("--site " + std::to_string(o.site) + " must be >= 0");
  if (m->kind() == mutants::MutantKind::kDecision && o.site != 0)
    return Status::invalid("--site: " + o.mutant + " is a decision mutant; it has no sites");
  if (!o.c.trace.empty())
    return Status::invalid("--mutant plants a bug in seam's plan, not a --trace");
  return m;
}

/// The case's plan with `m` planted at --site (m null: the plan as asked).
Expected<Plan> mutatedPlan(const CheckOptions& o, const Case& c, const mutants::Mutant* m) {
  if (m == nullptr) return buildCasePlan(o.c, c);
  if (m->kind() == mutants::MutantKind::kDecision) {
    if (!o.c.decision.empty())
      return Status::invalid("--mutant " + o.mutant + " and --decision: give one");
    auto policy = parsePolicy(o.c.policy);
    if (!policy) return policy.status();
    return buildPlan(c, *policy, m->schema());
  }
  auto plan = buildCasePlan(o.c, c);
  if (!plan) return plan;
  const int sites = m->sites(*plan);
  if (o.site >= sites || !m->applyAt(*plan, o.site)) {
    return Status::invalid(
        "--site " + std::to_string(o.site) + ": " + o.mutant + " has " +
        (sites == 1 ? std::string("at most one site (0)") : std::to_string(sites) + " sites") +
        " in this case's plan" + (sites == 1 ? ", and it is absent here" : ""));
  }
  return plan;
}

int checkTraining(const CheckOptions& o, reports::Format format) {
  auto m = chosenMutant(o, true);
  if (!m) return fail(m.status());
  auto tc = buildTrainingCase(o.c);
  if (!tc) return fail(tc.status());
  const bool decision = *m != nullptr && (*m)->kind() == mutants::MutantKind::kDecision;
  auto plan = buildTrainingPlan(*tc, decision ? (*m)->trainingDecision() : TrainingDecision::kNone);
  if (!plan) return fail(plan.status());
  if (*m != nullptr && !decision && (o.site != 0 || !(*m)->applyTraining(*plan)))
    return fail(
        Status::invalid("--mutant " + o.mutant + ": its site is absent from this case's plan"));
  const LedgerResult r = checkTrainingPlan(*plan);
  std::cout << reports::renderTrainingVerdict(*plan, r, format);
  return r.holds() ? kExitOk : kExitPropertyFailed;
}

}  // namespace

Command registerCheck(CLI::App& app) {
  auto o = std::make_shared<CheckOptions>();
  CLI::App* sub = app.add_subcommand("check", "Check every property on one case");
  addCaseOptions(sub, o->c);
  sub->add_option("--format", o->format, "text|json")->capture_default_str();
  sub->add_option("--mutant", o->mutant, "plant this mutant (an id of seam mutate --list)");
  sub->add_option("--site", o->site, "--mutant of a plan operator: the site to mutate (default 0)");
  addRecordingOptions(sub, o->recording);
  addEngineOptions(sub, o->engine);
  return {
      sub, [o, sub]() {
        auto format = reports::parseFormat(o->format);
        if (!format) return fail(format.status());
        if (Status s = recordingOptionsNeedPath(*sub, o->recording); !s) return fail(s);
        if (o->engine.asked()) {
          if (!o->recording.path.empty())
            return fail(Status::invalid("--engine and --recording: give one"));
          if (!o->mutant.empty())
            return fail(Status::invalid("--mutant plants a bug in seam's plan, not in the engine"));
          if (*format == reports::Format::kJsonl)
            return fail(Status::invalid("--format jsonl: an --engine verdict is text or json"));
          return checkEngine(o->c, o->engine, *format == reports::Format::kJson);
        }
        if (sub->count("--engine-timeout") > 0)
          return fail(Status::invalid("--engine-timeout needs --engine or --engine-src"));
        if (!o->recording.path.empty()) {
          if (!o->mutant.empty())
            return fail(Status::invalid("--mutant plants a bug in seam's plan, not a --recording"));
          if (*format == reports::Format::kJsonl)
            return fail(Status::invalid("--format jsonl: a --recording verdict is text or json"));
          return checkRecording(o->c, o->recording, false, *format == reports::Format::kJson);
        }
        if (isTraining(o->c)) return checkTraining(*o, *format);
        auto m = chosenMutant(*o, false);
        if (!m) return fail(m.status());
        auto c = buildCase(o->c);
        if (!c) return fail(c.status());
        auto plan = mutatedPlan(*o, *c, *m);
        if (!plan) return fail(plan.status());
        Ledger ledger;
        const auto verdict = properties::checkPlan(*plan, ledger, properties::Depth::kAll);
        const auto first = verdict.firstViolation();
        const bool engine_as_run = plansEngineAsRun(o->c) && *m == nullptr;
        const std::string engine_site =
            first && engine_as_run ? properties::engineFindingSite(*plan, *first) : std::string();
        std::cout << reports::renderVerdict(*plan, verdict, *format, engine_site);
        return verdict.holds() ? kExitOk : kExitPropertyFailed;
      }};
}

}  // namespace seam::tools
