// `seam check`: one case, the verdict of each property and the first
// violation in words. Exit 0 all hold, 1 a property failed, 2 bad input or
// a combination the engine refuses.
#include "case_options.h"
#include "command.h"
#include "seam/properties/check.h"
#include "seam/properties/engine_finding.h"
#include "seam/reports/training_view.h"
#include "seam/reports/verdict_view.h"

namespace seam::tools {

Command registerCheck(CLI::App& app) {
  struct Options {
    CaseOptions c;
    std::string format = "text";
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("check", "Check every property on one case");
  addCaseOptions(sub, o->c);
  sub->add_option("--format", o->format, "text|json")->capture_default_str();
  return {sub, [o]() {
            auto format = reports::parseFormat(o->format);
            if (!format) return fail(format.status());
            if (isTraining(o->c)) {
              auto tc = buildTrainingCase(o->c);
              if (!tc) return fail(tc.status());
              auto plan = buildTrainingPlan(*tc);
              if (!plan) return fail(plan.status());
              const LedgerResult r = checkTrainingPlan(*plan);
              std::cout << reports::renderTrainingVerdict(*plan, r, *format);
              return r.holds() ? kExitOk : kExitPropertyFailed;
            }
            auto c = buildCase(o->c);
            if (!c) return fail(c.status());
            auto plan = buildCasePlan(o->c, *c);
            if (!plan) return fail(plan.status());
            Ledger ledger;
            const auto verdict = properties::checkPlan(*plan, ledger, properties::Depth::kAll);
            const auto first = verdict.firstViolation();
            const std::string engine_site = first && plansEngineAsRun(o->c)
                                                ? properties::engineFindingSite(*plan, *first)
                                                : std::string();
            std::cout << reports::renderVerdict(*plan, verdict, *format, engine_site);
            return verdict.holds() ? kExitOk : kExitPropertyFailed;
          }};
}

}  // namespace seam::tools
