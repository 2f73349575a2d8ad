// `seam plan`: the ops one rank runs for one case (text, JSON or JSON lines).
#include "case_options.h"
#include "command.h"
#include "seam/reports/plan_view.h"

namespace seam::tools {

Command registerPlan(CLI::App& app) {
  struct Options {
    CaseOptions c;
    int rank = 0;
    std::string format = "text";
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand("plan", "Print the plan of one case for one rank");
  addCaseOptions(sub, o->c);
  sub->add_option("--rank", o->rank, "which rank's ops to print")->capture_default_str();
  sub->add_option("--format", o->format, "text|json|jsonl")->capture_default_str();
  return {sub, [o]() {
            auto format = reports::parseFormat(o->format);
            if (!format) return fail(format.status());
            auto c = buildCase(o->c);
            if (!c) return fail(c.status());
            auto policy = parsePolicy(o->c.policy);
            if (!policy) return fail(policy.status());
            auto schema = buildSchema(o->c);
            if (!schema) return fail(schema.status());
            auto plan = buildPlan(*c, *policy, *schema);
            if (!plan) return fail(plan.status());
            if (Status st = reports::checkRank(*plan, o->rank); !st) return fail(st);
            std::cout << reports::renderPlan(*plan, o->rank, *format);
            return kExitOk;
          }};
}

}  // namespace seam::tools
