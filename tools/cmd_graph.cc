// `seam graph CASE -o FILE.svg|png|dot|mmd [--against POLICY] [--no-fold]`:
// the boundary graph of one case for code review, judged as `seam check`
// judges it (a violated property is marked where it is seen); with
// --against, the diff graph.
#include "case_options.h"
#include "command.h"
#include "seam/properties/check.h"
#include "seam/properties/engine_finding.h"
#include "seam/reports/graph.h"
#include "seam/reports/output_file.h"

namespace seam::tools {

Command registerGraph(CLI::App& app) {
  struct Options {
    CaseOptions c;
    std::string out;
    std::string against;
    bool no_fold = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* sub =
      app.add_subcommand("graph", "Draw the boundary graph of one case (svg, png, dot, mmd)");
  addCaseOptions(sub, o->c);
  sub->add_option("-o,--output", o->out,
                  "output file: .svg, .png or .dot (Graphviz), .mmd (Mermaid, for GitHub)")
      ->required();
  sub->add_flag("--no-fold", o->no_fold,
                "draw every stage (by default runs of 4 or more identical blocks are folded)");
  sub->add_option("--against", o->against,
                  "also plan with this policy and highlight the boundaries that differ");
  return {sub, [o]() {
            if (Status st = reports::checkOutputFile("-o", o->out, {{"--trace", o->c.trace}}); !st)
              return fail(st);
            auto c = buildCase(o->c);
            if (!c) return fail(c.status());
            auto plan = buildCasePlan(o->c, *c);
            if (!plan) return fail(plan.status());
            std::optional<Plan> other;
            if (!o->against.empty()) {
              auto policy = parsePolicy(o->against);
              if (!policy)
                return fail(Status::invalid("--against " + policy.status().message().substr(9)));
              auto p = buildPlan(*c, *policy);
              if (!p) return fail(p.status());
              other = std::move(*p);
            }
            // The verdict `seam check` gives, and for the engine as it runs the
            // SGLang call behind its first violation.
            Ledger ledger;
            const auto verdict = properties::checkPlan(*plan, ledger, properties::Depth::kAll);
            const auto first = verdict.firstViolation();
            const std::string site = first && plansEngineAsRun(o->c)
                                         ? properties::engineFindingSite(*plan, *first)
                                         : std::string();
            if (Status st = reports::writeBoundaryGraph(
                    *plan, other ? &*other : nullptr, o->out,
                    {.fold = !o->no_fold, .verdict = &verdict, .engine_site = site});
                !st)
              return fail(st);
            std::cout << "wrote " << o->out << " (" << plan->stages.size() << " stages, "
                      << plan->boundaries.size() << " boundaries)\n";
            if (first) {
              const bool output = first->stage == plan->stackSize(first->stack);
              std::cout << "marked: " << propertyName(first->property) << " violated at "
                        << (first->stack == 1 ? "MTP " : "")
                        << (output ? std::string("final norm (output)")
                                   : "stage " + std::to_string(first->stage))
                        << (site.empty() ? "" : ", an engine finding")
                        << " (seam check says more)\n";
            }
            return kExitOk;
          }};
}

}  // namespace seam::tools
