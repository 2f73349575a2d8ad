// `seam plan`: the ops one rank runs for one case (text, JSON or JSON lines).
#include <limits>

#include "case_options.h"
#include "command.h"
#include "seam/reports/plan_view.h"
#include "seam/reports/training_view.h"
#include "seam/sim/base/decimal.h"

namespace seam::tools {

Command registerPlan(CLI::App& app) {
  struct Options {
    CaseOptions c;
    std::string rank = "0";
    std::string format = "text";
    bool lower_dp = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("plan", "Print the plan of one case for one rank");
  addCaseOptions(sub, o->c);
  sub->add_option("--rank", o->rank, "which rank's ops to print, or all (jsonl: the whole trace)")
      ->capture_default_str();
  sub->add_option("--format", o->format, "text|json|jsonl")->capture_default_str();
  sub->add_flag("--lower-dp", o->lower_dp,
                "text: list under each DP op the collectives and copies it lowers to (SGLang's "
                "dp_attention.py)");
  return {
      sub, [o]() {
        auto format = reports::parseFormat(o->format);
        if (!format) return fail(format.status());
        if (o->lower_dp && *format != reports::Format::kText) {
          return fail(Status::invalid(
              "--lower-dp goes with --format text (the JSON views list the plan's ops only)"));
        }
        if (isTraining(o->c)) {
          auto tc = buildTrainingCase(o->c);
          if (!tc) return fail(tc.status());
          auto plan = buildTrainingPlan(*tc);
          if (!plan) return fail(plan.status());
          if (o->rank == "all") {
            for (int r = 0; r < plan->world(); ++r)
              std::cout << reports::renderTrainingPlan(*plan, r, *format);
            return kExitOk;
          }
          const auto rank = parseDecimal(o->rank, 0, plan->world() - 1);
          if (!rank) {
            return fail(Status::invalid("--rank \"" + o->rank.substr(0, 32) + "\" is not in 0.." +
                                        std::to_string(plan->world() - 1) + " or all"));
          }
          std::cout << reports::renderTrainingPlan(*plan, static_cast<int>(*rank), *format);
          return kExitOk;
        }
        auto c = buildCase(o->c);
        if (!c) return fail(c.status());
        auto plan = buildCasePlan(o->c, *c);
        if (!plan) return fail(plan.status());
        if (o->rank == "all") {
          for (int r = 0; r < plan->world(); ++r)
            std::cout << reports::renderPlan(*plan, r, *format, o->lower_dp);
          return kExitOk;
        }
        const auto rank = parseDecimal(o->rank, 0, std::numeric_limits<int>::max());
        if (!rank) {
          return fail(
              Status::invalid("--rank \"" + o->rank.substr(0, 32) + "\" is not a rank or all"));
        }
        if (Status st = reports::checkRank(*plan, static_cast<int>(*rank)); !st) return fail(st);
        std::cout << reports::renderPlan(*plan, static_cast<int>(*rank), *format, o->lower_dp);
        return kExitOk;
      }};
}

}  // namespace seam::tools
